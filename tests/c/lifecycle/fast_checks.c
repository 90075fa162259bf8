/* Test (our library only): the C entry points that answer in C (their fast
 * paths: the queue mirror, the done events, the allocation index and its
 * pool, the info snapshot) refuse every bad input the Go entry layer refuses, with the
 * same code and Details, and never read the caller's memory first.
 *
 * Each case below passes one bad argument (a NULL handle, a NULL pointer, a
 * PropSize of 0, an array whose NumEvents x 8 bytes run past the end of the
 * address space) to a call whose other arguments are live objects of the
 * host device, on an idle queue, so that the fast path would answer it.
 * The expected code is the one docs/api.md lists for that check. Then the
 * same table runs again in a child process with tracing on
 * (OFFLOAD_TRACE), where every call takes the Go path; each case must give
 * the same code and the same Details in both.
 */
#include "oldevices.h"

#include <inttypes.h>
#include <limits.h>
#include <unistd.h>

static ol_device_handle_t dev;
static ol_platform_handle_t plat;
static ol_queue_handle_t q;
static ol_event_handle_t ev;
static void *mem;
static uint64_t scratch[8];

/* an address that no 16 bytes fit after, and one no process maps */
#define TOP ((void *)(UINTPTR_MAX - 7))
#define LOW ((void *)(uintptr_t)0x1000)

static bool count_cb(ol_device_handle_t d, void *user) {
  (void)d;
  ++*(int *)user;
  return true;
}

struct fcase {
  const char *name;
  unsigned code; /* docs/api.md's code for the failed check */
  ol_result_t (*call)(void);
};

#define EV_ARRAY ((ol_event_handle_t *)scratch)

/* X(name, docs/api.md's code for the failed check, the call) */
#define FAST_CASES(X) \
  X(wait_null_queue, OL_ERRC_INVALID_NULL_HANDLE, olWaitEvents(NULL, EV_ARRAY, 1)) \
  X(wait_null_events, OL_ERRC_INVALID_NULL_POINTER, olWaitEvents(q, NULL, 1)) \
  X(wait_count_huge, OL_ERRC_INVALID_SIZE, olWaitEvents(q, (ol_event_handle_t *)LOW, (size_t)1 << 60)) \
  X(wait_past_end, OL_ERRC_INVALID_SIZE, olWaitEvents(q, (ol_event_handle_t *)TOP, 2)) \
  X(sync_null_queue, OL_ERRC_INVALID_NULL_HANDLE, olSyncQueue(NULL)) \
  X(event_null_queue, OL_ERRC_INVALID_NULL_HANDLE, olCreateEvent(NULL, EV_ARRAY)) \
  X(event_null_out, OL_ERRC_INVALID_NULL_POINTER, olCreateEvent(q, NULL)) \
  X(sync_event_null, OL_ERRC_INVALID_NULL_HANDLE, olSyncEvent(NULL)) \
  X(destroy_event_null, OL_ERRC_INVALID_NULL_HANDLE, olDestroyEvent(NULL)) \
  X(event_info_size0, OL_ERRC_INVALID_SIZE, olGetEventInfo(ev, OL_EVENT_INFO_QUEUE, 0, scratch)) \
  X(event_info_null_event, OL_ERRC_INVALID_NULL_HANDLE, olGetEventInfo(NULL, OL_EVENT_INFO_QUEUE, 8, scratch)) \
  X(event_info_null_value, OL_ERRC_INVALID_NULL_POINTER, olGetEventInfo(ev, OL_EVENT_INFO_QUEUE, 8, NULL)) \
  X(event_info_size_null_event, OL_ERRC_INVALID_NULL_HANDLE, olGetEventInfoSize(NULL, OL_EVENT_INFO_QUEUE, (size_t *)scratch)) \
  X(event_info_size_null_ret, OL_ERRC_INVALID_NULL_POINTER, olGetEventInfoSize(ev, OL_EVENT_INFO_QUEUE, NULL)) \
  X(alloc_size0, OL_ERRC_INVALID_SIZE, olMemAlloc(dev, OL_ALLOC_TYPE_HOST, 0, (void **)scratch)) \
  X(alloc_null_dev, OL_ERRC_INVALID_NULL_HANDLE, olMemAlloc(NULL, OL_ALLOC_TYPE_HOST, 64, (void **)scratch)) \
  X(alloc_null_out, OL_ERRC_INVALID_NULL_POINTER, olMemAlloc(dev, OL_ALLOC_TYPE_HOST, 64, NULL)) \
  X(free_null, OL_ERRC_INVALID_NULL_POINTER, olMemFree(NULL)) \
  X(free_interior, OL_ERRC_INVALID_ARGUMENT, olMemFree((char *)mem + 16)) \
  X(free_unknown, OL_ERRC_INVALID_ARGUMENT, olMemFree(scratch)) \
  X(mem_info_size0, OL_ERRC_INVALID_SIZE, olGetMemInfo(mem, OL_MEM_INFO_BASE, 0, scratch)) \
  X(mem_info_null_ptr, OL_ERRC_INVALID_NULL_POINTER, olGetMemInfo(NULL, OL_MEM_INFO_BASE, 8, scratch)) \
  X(mem_info_null_value, OL_ERRC_INVALID_NULL_POINTER, olGetMemInfo(mem, OL_MEM_INFO_BASE, 8, NULL)) \
  X(mem_info_size_null_ptr, OL_ERRC_INVALID_NULL_POINTER, olGetMemInfoSize(NULL, OL_MEM_INFO_BASE, (size_t *)scratch)) \
  X(mem_info_size_null_ret, OL_ERRC_INVALID_NULL_POINTER, olGetMemInfoSize(mem, OL_MEM_INFO_BASE, NULL)) \
  X(memcpy_null_dst_dev, OL_ERRC_INVALID_NULL_HANDLE, olMemcpy(q, mem, NULL, scratch, dev, 8)) \
  X(memcpy_null_src_dev, OL_ERRC_INVALID_NULL_HANDLE, olMemcpy(NULL, mem, dev, scratch, NULL, 8)) \
  X(memcpy_null_dst, OL_ERRC_INVALID_NULL_POINTER, olMemcpy(q, NULL, dev, scratch, dev, 8)) \
  X(memcpy_null_src, OL_ERRC_INVALID_NULL_POINTER, olMemcpy(NULL, mem, dev, NULL, dev, 8)) \
  X(memcpy_past_end, OL_ERRC_INVALID_SIZE, olMemcpy(NULL, mem, dev, TOP, dev, 64)) \
  X(launch_null_device, OL_ERRC_INVALID_NULL_HANDLE, olLaunchKernel(q, NULL, (ol_symbol_handle_t)scratch, scratch, 8, (ol_kernel_launch_size_args_t *)scratch)) \
  X(launch_null_kernel, OL_ERRC_INVALID_NULL_HANDLE, olLaunchKernel(q, dev, NULL, scratch, 8, (ol_kernel_launch_size_args_t *)scratch)) \
  X(launch_null_sizes, OL_ERRC_INVALID_NULL_POINTER, olLaunchKernel(q, dev, (ol_symbol_handle_t)scratch, scratch, 8, NULL)) \
  X(dev_info_size0, OL_ERRC_INVALID_SIZE, olGetDeviceInfo(dev, OL_DEVICE_INFO_TYPE, 0, scratch)) \
  X(dev_info_null_dev, OL_ERRC_INVALID_NULL_HANDLE, olGetDeviceInfo(NULL, OL_DEVICE_INFO_TYPE, 4, scratch)) \
  X(dev_info_null_value, OL_ERRC_INVALID_NULL_POINTER, olGetDeviceInfo(dev, OL_DEVICE_INFO_TYPE, 4, NULL)) \
  X(dev_info_size_null_dev, OL_ERRC_INVALID_NULL_HANDLE, olGetDeviceInfoSize(NULL, OL_DEVICE_INFO_NAME, (size_t *)scratch)) \
  X(dev_info_size_null_ret, OL_ERRC_INVALID_NULL_POINTER, olGetDeviceInfoSize(dev, OL_DEVICE_INFO_NAME, NULL)) \
  X(plat_info_size0, OL_ERRC_INVALID_SIZE, olGetPlatformInfo(plat, OL_PLATFORM_INFO_NAME, 0, scratch)) \
  X(plat_info_null_plat, OL_ERRC_INVALID_NULL_HANDLE, olGetPlatformInfo(NULL, OL_PLATFORM_INFO_NAME, 8, scratch)) \
  X(plat_info_null_value, OL_ERRC_INVALID_NULL_POINTER, olGetPlatformInfo(plat, OL_PLATFORM_INFO_NAME, 8, NULL)) \
  X(plat_info_size_null_ret, OL_ERRC_INVALID_NULL_POINTER, olGetPlatformInfoSize(plat, OL_PLATFORM_INFO_NAME, NULL)) \
  X(iterate_null_cb, OL_ERRC_INVALID_NULL_POINTER, olIterateDevices(NULL, scratch))
#if OLC_RELEASE == 23
#define FAST_CASES_23(X) \
  X(event23_null_out, OL_ERRC_INVALID_NULL_POINTER, (olCreateEvent)(q, OL_EVENT_FLAGS_NONE, NULL)) \
  X(launch23_ptrs_without_sizes, OL_ERRC_INVALID_ARGUMENT, (olLaunchKernel)(q, dev, (ol_symbol_handle_t)scratch, (ol_kernel_launch_size_args_t *)scratch, NULL, 1, (void **)scratch, NULL)) \
  X(launch23_null_sizes, OL_ERRC_INVALID_NULL_POINTER, (olLaunchKernel)(q, dev, (ol_symbol_handle_t)scratch, NULL, NULL, 0, NULL, NULL))
#else
#define FAST_CASES_23(X)
#endif

#define CASE(n, c, expr)                                                       \
  static ol_result_t n(void) { return expr; }
FAST_CASES(CASE)
FAST_CASES_23(CASE)

#define ENTRY(n, c, expr) {#n, c, n},
static const struct fcase cases[] = {FAST_CASES(ENTRY) FAST_CASES_23(ENTRY)};
#define NCASES (sizeof cases / sizeof cases[0])

/* set up: live objects of the host device, the queue idle, ev a done event */
static bool set_up(void) {
  if (!OLC_OK(olInit()))
    return false;
  olc_devlist l;
  ol_result_t r = olc_list_devices(&l);
  dev = olc_host_in(&l);
  if (!OLC_CHECK(r == NULL && dev != NULL, "no host device (%u %s)", olc_code(r), olc_details(r)))
    return false;
  return OLC_OK(olGetDeviceInfo(dev, OL_DEVICE_INFO_PLATFORM, sizeof plat, &plat)) &&
         OLC_OK(olCreateQueue(dev, &q)) && OLC_OK(olCreateEvent(q, &ev)) &&
         OLC_OK(olMemAlloc(dev, OL_ALLOC_TYPE_HOST, 64, &mem));
}

static void tear_down(void) {
  OLC_OK(olDestroyEvent(ev));
  OLC_OK(olMemFree(mem));
  OLC_OK(olDestroyQueue(q));
  OLC_OK(olShutDown());
}

/* --go: print each case's result, one line each, for the parent */
static int go_path(void) {
  if (!set_up())
    return 1;
  for (size_t i = 0; i < NCASES; i++) {
    ol_result_t r = cases[i].call();
    printf("%s\t%u\t%s\n", cases[i].name, olc_code(r), olc_details(r));
  }
  fflush(stdout);
  tear_down();
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--go") == 0)
    return go_path();
  olc_check_library((void *)olInit);
  if (!OLC_ON(OLC_OURS, "LLVM's library has no C fast paths and no such checks"))
    return olc_summary(NULL);
  if (!set_up())
    return olc_summary(NULL);
  int n = 0;
  OLC_OK(olIterateDevices(count_cb, &n)); /* publishes the info snapshot */
  char got[NCASES][512];
  for (size_t i = 0; i < NCASES; i++) {
    ol_result_t r = cases[i].call();
    OLC_CHECK(olc_code(r) == cases[i].code, "%s: code %u (%s), want %u", cases[i].name, olc_code(r),
              olc_details(r), cases[i].code);
    snprintf(got[i], sizeof got[i], "%s\t%u\t%s\n", cases[i].name, olc_code(r), olc_details(r));
  }
  tear_down();

  /* the same table on the Go path: tracing turns the C paths off */
  char self[PATH_MAX], cmd[PATH_MAX + 128];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (!OLC_CHECK(len > 0, "readlink /proc/self/exe"))
    return olc_summary(NULL);
  self[len] = 0;
  snprintf(cmd, sizeof cmd, "OFFLOAD_TRACE=1 OFFLOAD_TRACE_FILE=/dev/null '%s' --go", self);
  FILE *p = popen(cmd, "r");
  if (!OLC_CHECK(p != NULL, "popen %s", cmd))
    return olc_summary(NULL);
  char line[512];
  size_t i = 0;
  while (fgets(line, sizeof line, p) != NULL) {
    if (i < NCASES)
      OLC_CHECK(strcmp(line, got[i]) == 0, "C path and Go path differ:\n  C:  %s  Go: %s", got[i], line);
    i++;
  }
  int st = pclose(p);
  OLC_CHECK(st == 0 && i == NCASES, "the Go-path child exited with %d after %zu of %zu cases", st, i,
            (size_t)NCASES);
  return olc_summary(NULL);
}
