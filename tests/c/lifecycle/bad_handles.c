/* Test d (our library only): stale and garbage handles.
 *
 * - A device/platform handle obtained before a full olShutDown and used after
 *   the next olInit is rejected (OL_ERRC_INVALID_DEVICE / _PLATFORM, Details
 *   mention the earlier initialisation).
 * - Garbage handle values (small integers, all-ones, a stack address, a
 *   handle of another kind) given to every function taking a platform,
 *   device, queue, event, program or symbol handle produce the error code
 *   for that kind and the Details text the library documents (README, impl/handles.go), and never
 *   crash.
 * - 4 threads do the same concurrently.
 *
 * LLVM's library dereferences such handles and crashes, so with
 * OFFLOAD_TEST_IMPL=llvm this test only prints a note.
 */
#include "oldevices.h"

#include <inttypes.h>
#include <pthread.h>

static ol_device_handle_t host_dev;
static ol_platform_handle_t host_plat;
static const char uninit_text[] =
    "liboffload has not been initialized - please call olInit before using "
    "this API";

/* ---- wrappers: each passes `h` as one handle parameter ---------------- */

typedef ol_result_t (*call_fn)(void *h);

struct call {
  const char *func;  /* for messages */
  const char *param; /* parameter name as it appears in Details */
  call_fn fn;
};

static char scratch_src[64], scratch_dst[64];
static const unsigned char fake_image[16] = {0x7f, 'E', 'L', 'F'};
static void host_cb(void *user) { (void)user; }

static ol_result_t c_dev_info(void *h) {
  ol_device_type_t t;
  return olGetDeviceInfo(h, OL_DEVICE_INFO_TYPE, sizeof t, &t);
}
static ol_result_t c_dev_info_size(void *h) {
  size_t s;
  return olGetDeviceInfoSize(h, OL_DEVICE_INFO_NAME, &s);
}
static ol_result_t c_mem_alloc(void *h) {
  void *p = NULL;
  ol_result_t r = olMemAlloc(h, OL_ALLOC_TYPE_HOST, 64, &p);
  if (r == NULL && p != NULL)
    olMemFree(p);
  return r;
}
static ol_result_t c_mem_register(void *h) {
  void *pinned = NULL;
  return olMemRegister(h, scratch_src, sizeof scratch_src, 0, &pinned);
}
static ol_result_t c_mem_unregister(void *h) {
  return olMemUnregister(h, scratch_src);
}
static ol_result_t c_create_queue(void *h) {
  ol_queue_handle_t q = NULL;
  return olCreateQueue(h, &q);
}
static ol_result_t c_create_program(void *h) {
  ol_program_handle_t p = NULL;
  return olCreateProgram(h, fake_image, sizeof fake_image, &p);
}
static ol_result_t c_is_valid_binary(void *h) {
  bool valid = false;
  return olIsValidBinary(h, fake_image, sizeof fake_image, &valid);
}
static ol_result_t c_memcpy_dst(void *h) {
  return olMemcpy(NULL, scratch_dst, h, scratch_src, host_dev, 8);
}
static ol_result_t c_memcpy_src(void *h) {
  return olMemcpy(NULL, scratch_dst, host_dev, scratch_src, h, 8);
}

static ol_result_t c_plat_info(void *h) {
  char name[64];
  return olGetPlatformInfo(h, OL_PLATFORM_INFO_NAME, sizeof name, name);
}
static ol_result_t c_plat_info_size(void *h) {
  size_t s;
  return olGetPlatformInfoSize(h, OL_PLATFORM_INFO_NAME, &s);
}

static ol_result_t c_destroy_queue(void *h) { return olDestroyQueue(h); }
static ol_result_t c_sync_queue(void *h) { return olSyncQueue(h); }
static ol_result_t c_wait_events(void *h) {
  ol_event_handle_t none[1] = {NULL};
  return olWaitEvents(h, none, 0);
}
static ol_result_t c_queue_info(void *h) {
  ol_device_handle_t d;
  return olGetQueueInfo(h, OL_QUEUE_INFO_DEVICE, sizeof d, &d);
}
static ol_result_t c_queue_info_size(void *h) {
  size_t s;
  return olGetQueueInfoSize(h, OL_QUEUE_INFO_EMPTY, &s);
}
static ol_result_t c_launch_host_fn(void *h) {
  return olLaunchHostFunction(h, host_cb, NULL);
}
static ol_result_t c_create_event(void *h) {
  ol_event_handle_t e = NULL;
  return olCreateEvent(h, &e);
}
static ol_result_t c_memcpy_queue(void *h) {
  return olMemcpy(h, scratch_dst, host_dev, scratch_src, host_dev, 8);
}
static ol_result_t c_memfill_queue(void *h) {
  uint32_t pattern = 0xabcdef01u;
  return olMemFill(h, scratch_dst, sizeof pattern, &pattern, 16);
}

static ol_result_t c_destroy_event(void *h) { return olDestroyEvent(h); }
static ol_result_t c_sync_event(void *h) { return olSyncEvent(h); }
static ol_result_t c_event_info(void *h) {
  bool done;
  return olGetEventInfo(h, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done);
}
static ol_result_t c_event_info_size(void *h) {
  size_t s;
  return olGetEventInfoSize(h, OL_EVENT_INFO_QUEUE, &s);
}

static ol_result_t c_destroy_program(void *h) { return olDestroyProgram(h); }
static ol_result_t c_get_symbol(void *h) {
  ol_symbol_handle_t s = NULL;
  return olGetSymbol(h, "kernel", OL_SYMBOL_KIND_KERNEL, &s);
}

static ol_result_t c_symbol_info(void *h) {
  ol_symbol_kind_t k;
  return olGetSymbolInfo(h, OL_SYMBOL_INFO_KIND, sizeof k, &k);
}
static ol_result_t c_symbol_info_size(void *h) {
  size_t s;
  return olGetSymbolInfoSize(h, OL_SYMBOL_INFO_KIND, &s);
}
static ol_result_t c_launch_kernel(void *h) {
  ol_kernel_launch_size_args_t args = {
      .Dimensions = 1, .NumGroups = {1, 1, 1}, .GroupSize = {1, 1, 1}};
  return olLaunchKernel(NULL, host_dev, h, NULL, 0, &args);
}
static ol_result_t c_occupancy(void *h) {
  size_t gs = 0;
  return olCalculateOptimalOccupancy(host_dev, h, 0, &gs);
}

#if OLC_RELEASE >= 23
/* the calls 23.1 added: every handle parameter, called with the real 23.1
 * prototypes (the names in brackets are not olrelease.h's 22.1 spellings) */
static ol_kernel_launch_size_args_t one_item = {
    .Dimensions = 1, .NumGroups = {1, 1, 1}, .GroupSize = {1, 1, 1}};
static ol_result_t c_mem_alloc_aligned(void *h) {
  void *p = NULL;
  ol_result_t r = olMemAllocAligned(h, OL_ALLOC_TYPE_HOST, 64, 64, &p);
  if (r == NULL && p != NULL)
    olMemFree(p);
  return r;
}
static ol_result_t c_max_coop_device(void *h) {
  uint32_t n;
  return olGetKernelMaxCooperativeGroupCount(h, (ol_symbol_handle_t)(uintptr_t)0x1234, &one_item, &n);
}
static ol_result_t c_max_coop_kernel(void *h) {
  uint32_t n;
  return olGetKernelMaxCooperativeGroupCount(host_dev, h, &one_item, &n);
}
static ol_result_t c_query_queue(void *h) {
  bool done;
  return olQueryQueue(h, &done);
}
static ol_result_t c_create_event23(void *h) {
  ol_event_handle_t e = NULL;
  return (olCreateEvent)(h, OL_EVENT_FLAGS_ENABLE_PROFILING, &e);
}
static ol_result_t c_prefetch(void *h) {
  const void *mems[1] = {scratch_src};
  size_t sizes[1] = {8};
  return olMemPrefetch(h, 1, mems, sizes, OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE);
}
static ol_result_t c_launch23_queue(void *h) {
  return (olLaunchKernel)(h, host_dev, (ol_symbol_handle_t)(uintptr_t)0x1234, &one_item, NULL, 0, NULL, NULL);
}
static ol_result_t c_launch23_kernel(void *h) {
  return (olLaunchKernel)(NULL, host_dev, h, &one_item, NULL, 0, NULL, NULL);
}
static ol_result_t c_elapsed_start(void *h) {
  float ms;
  return olGetEventElapsedTime(h, (ol_event_handle_t)(uintptr_t)0x1234, &ms);
}
#endif

struct kind {
  const char *word; /* "device", ... as used in Details */
  unsigned code;    /* expected ol_errc_t */
  const struct call *calls;
  size_t ncalls;
};

static const struct call device_calls[] = {
    {"olGetDeviceInfo", "Device", c_dev_info},
    {"olGetDeviceInfoSize", "Device", c_dev_info_size},
    {"olMemAlloc", "Device", c_mem_alloc},
    {"olMemRegister", "Device", c_mem_register},
    {"olMemUnregister", "Device", c_mem_unregister},
    {"olCreateQueue", "Device", c_create_queue},
    {"olCreateProgram", "Device", c_create_program},
    {"olIsValidBinary", "Device", c_is_valid_binary},
    {"olMemcpy", "DstDevice", c_memcpy_dst},
    {"olMemcpy", "SrcDevice", c_memcpy_src},
#if OLC_RELEASE >= 23
    {"olMemAllocAligned", "Device", c_mem_alloc_aligned},
    {"olGetKernelMaxCooperativeGroupCount", "Device", c_max_coop_device},
#endif
};
static const struct call platform_calls[] = {
    {"olGetPlatformInfo", "Platform", c_plat_info},
    {"olGetPlatformInfoSize", "Platform", c_plat_info_size},
};
static const struct call queue_calls[] = {
    {"olDestroyQueue", "Queue", c_destroy_queue},
    {"olSyncQueue", "Queue", c_sync_queue},
    {"olWaitEvents", "Queue", c_wait_events},
    {"olGetQueueInfo", "Queue", c_queue_info},
    {"olGetQueueInfoSize", "Queue", c_queue_info_size},
    {"olLaunchHostFunction", "Queue", c_launch_host_fn},
    {"olCreateEvent", "Queue", c_create_event},
    {"olMemcpy", "Queue", c_memcpy_queue},
    {"olMemFill", "Queue", c_memfill_queue},
#if OLC_RELEASE >= 23
    {"olQueryQueue", "Queue", c_query_queue},
    {"olCreateEvent (profiling)", "Queue", c_create_event23},
    {"olMemPrefetch", "Queue", c_prefetch},
    {"olLaunchKernel", "Queue", c_launch23_queue},
#endif
};
static const struct call event_calls[] = {
    {"olDestroyEvent", "Event", c_destroy_event},
    {"olSyncEvent", "Event", c_sync_event},
    {"olGetEventInfo", "Event", c_event_info},
    {"olGetEventInfoSize", "Event", c_event_info_size},
#if OLC_RELEASE >= 23
    {"olGetEventElapsedTime", "StartEvent", c_elapsed_start},
#endif
};
static const struct call program_calls[] = {
    {"olDestroyProgram", "Program", c_destroy_program},
    {"olGetSymbol", "Program", c_get_symbol},
};
static const struct call symbol_calls[] = {
    {"olGetSymbolInfo", "Symbol", c_symbol_info},
    {"olGetSymbolInfoSize", "Symbol", c_symbol_info_size},
    {"olLaunchKernel", "Kernel", c_launch_kernel},
    {"olCalculateOptimalOccupancy", "Kernel", c_occupancy},
#if OLC_RELEASE >= 23
    {"olGetKernelMaxCooperativeGroupCount", "Kernel", c_max_coop_kernel},
    {"olLaunchKernel", "Kernel", c_launch23_kernel},
#endif
};

#define NCALLS(a) (sizeof(a) / sizeof((a)[0]))
static const struct kind kinds[] = {
    {"device", OL_ERRC_INVALID_DEVICE, device_calls, NCALLS(device_calls)},
    {"platform", OL_ERRC_INVALID_PLATFORM, platform_calls,
     NCALLS(platform_calls)},
    {"queue", OL_ERRC_INVALID_QUEUE, queue_calls, NCALLS(queue_calls)},
    {"event", OL_ERRC_INVALID_EVENT, event_calls, NCALLS(event_calls)},
    {"program", OL_ERRC_INVALID_ARGUMENT, program_calls, NCALLS(program_calls)},
    {"symbol", OL_ERRC_INVALID_ARGUMENT, symbol_calls, NCALLS(symbol_calls)},
};
#define NKINDS NCALLS(kinds)

/* ---- one garbage/foreign value through every function of one kind ----- */

/* English indefinite article for a kind word ("an event", "a queue"). */
static const char *article(const char *word) {
  return strchr("aeiou", word[0]) != NULL ? "an" : "a";
}

/* other_kind: NULL for a value that is no handle at all, else the kind word
 * of the (valid) handle passed. */
static void expect_rejected(const struct kind *k, void *value,
                            const char *other_kind, bool quiet) {
  for (size_t i = 0; i < k->ncalls; i++) {
    const struct call *c = &k->calls[i];
    ol_result_t r = c->fn(value);
    char want[256];
    if (other_kind)
      snprintf(want, sizeof want,
               "%s (0x%" PRIxPTR ") is %s %s handle, not %s %s handle",
               c->param, (uintptr_t)value, article(other_kind), other_kind,
               article(k->word), k->word);
    else
      snprintf(want, sizeof want, "%s (0x%" PRIxPTR ") is not a valid %s handle",
               c->param, (uintptr_t)value, k->word);
    bool ok = olc_code(r) == k->code && r->Details != NULL &&
              strcmp(r->Details, want) == 0;
    if (quiet) {
      OLC_QUIET_CHECK(ok, "[thread] %s(%s=%p): expected %u \"%s\", got %u \"%s\"",
                      c->func, c->param, value, k->code, want, olc_code(r),
                      olc_details(r));
    } else {
      OLC_CHECK(ok, "%s(%s=%p): expected %u \"%s\", got %u \"%s\"", c->func,
                c->param, value, k->code, want, olc_code(r), olc_details(r));
    }
  }
}

/* every call on event e fails with INVALID_EVENT, Details "Event (e) <what>" */
static void expect_event_gone(void *e, const char *what) {
  char want[200];
  snprintf(want, sizeof want, "Event (0x%" PRIxPTR ") %s", (uintptr_t)e, what);
  for (size_t i = 0; i < NCALLS(event_calls); i++) {
    const struct call *c = &event_calls[i];
    if (strcmp(c->param, "Event") != 0)
      continue;
    ol_result_t r = c->fn(e);
    OLC_CHECK(olc_code(r) == OL_ERRC_INVALID_EVENT && strcmp(olc_details(r), want) == 0,
              "%s(%p): expected %d \"%s\", got %u \"%s\"", c->func, e, (int)OL_ERRC_INVALID_EVENT, want,
              olc_code(r), olc_details(r));
  }
}

static int stack_anchor_dummy;

static void garbage_round(bool quiet) {
  int on_stack = 0;
  void *garbage[] = {(void *)(uintptr_t)0x1, (void *)(uintptr_t)0x1234,
                     (void *)(uintptr_t)-1, (void *)&on_stack,
                     (void *)&stack_anchor_dummy};
  for (size_t k = 0; k < NKINDS; k++) {
    for (size_t g = 0; g < NCALLS(garbage); g++)
      expect_rejected(&kinds[k], garbage[g], NULL, quiet);
    /* valid handles of another kind */
    if (strcmp(kinds[k].word, "device") != 0)
      expect_rejected(&kinds[k], host_dev, "device", quiet);
    if (strcmp(kinds[k].word, "platform") != 0)
      expect_rejected(&kinds[k], host_plat, "platform", quiet);
  }
  (void)on_stack;
}

/* ---- helpers ------------------------------------------------------------ */

static bool lookup_host(ol_device_handle_t *dev, ol_platform_handle_t *plat) {
  olc_devlist l;
  ol_result_t r = olc_list_devices(&l);
  ol_device_handle_t host = olc_host_in(&l);
  OLC_CHECK(r == NULL && host != NULL, "finding the host device: %u %s, %d devices",
            olc_code(r), olc_details(r), l.n);
  if (host == NULL)
    return false;
  *dev = host;
  r = olGetDeviceInfo(host, OL_DEVICE_INFO_PLATFORM, sizeof *plat, plat);
  OLC_CHECK(r == NULL && *plat != NULL, "host PLATFORM -> %u %s", olc_code(r),
            olc_details(r));
  return r == NULL;
}

static void *hammer(void *arg) {
  long iterations = *(long *)arg;
  for (long i = 0; i < iterations; i++)
    garbage_round(true);
  return NULL;
}

int main(int argc, char **argv) {
  long thread_iterations = argc > 1 ? strtol(argv[1], NULL, 10) : 500;
  olc_check_library((void *)olInit);
  if (!OLC_ON(OLC_OURS, "LLVM's library dereferences garbage handles and crashes"))
    return olc_summary(NULL);

  ol_result_t r = olInit();
  OLC_CHECK(r == NULL, "olInit -> %u %s", olc_code(r), olc_details(r));
  if (!lookup_host(&host_dev, &host_plat))
    return olc_summary(NULL);

  /* 1. garbage and foreign handles, single thread */
  garbage_round(false);

  /* same (code, Details) -> same result pointer */
  ol_result_t a = c_dev_info((void *)(uintptr_t)0x1234);
  ol_result_t b = c_dev_info((void *)(uintptr_t)0x1234);
  OLC_CHECK(a != NULL && a == b, "same error twice gave %p and %p", (void *)a,
            (void *)b);

  /* 2. a destroyed queue, if the host device can make one */
  ol_queue_handle_t q = NULL;
  r = olCreateQueue(host_dev, &q);
  if (r == NULL && q != NULL) {
    r = olDestroyQueue(q);
    OLC_CHECK(r == NULL, "olDestroyQueue -> %u %s", olc_code(r), olc_details(r));
    char want[160];
    snprintf(want, sizeof want,
             "Queue (0x%" PRIxPTR ") refers to a queue that was already destroyed",
             (uintptr_t)q);
    r = olSyncQueue(q);
    OLC_CHECK(olc_code(r) == OL_ERRC_INVALID_QUEUE && strcmp(olc_details(r), want) == 0,
              "olSyncQueue(destroyed): expected %d \"%s\", got %u \"%s\"",
              (int)OL_ERRC_INVALID_QUEUE, want, olc_code(r), olc_details(r));
    r = olDestroyQueue(q);
    OLC_CHECK(olc_code(r) == OL_ERRC_INVALID_QUEUE && strcmp(olc_details(r), want) == 0,
              "olDestroyQueue twice: expected %d \"%s\", got %u \"%s\"",
              (int)OL_ERRC_INVALID_QUEUE, want, olc_code(r), olc_details(r));
  } else {
    printf("note: olCreateQueue(host device) -> %u %s; destroyed-queue check "
           "skipped\n", olc_code(r), olc_details(r));
  }

  /* 2b. events of an idle queue (made in C, impl/doneevents.h): one
   * destroyed, one left alive across the shutdown below, and a value of
   * their handle space that was never handed out */
  ol_queue_handle_t eq = NULL;
  ol_event_handle_t gone_ev = NULL, kept_ev = NULL;
  r = olCreateQueue(host_dev, &eq);
  OLC_CHECK(r == NULL, "olCreateQueue -> %u %s", olc_code(r), olc_details(r));
  if (r == NULL && OLC_OK(olCreateEvent(eq, &gone_ev)) && OLC_OK(olCreateEvent(eq, &kept_ev))) {
    OLC_OK(olDestroyEvent(gone_ev));
    expect_event_gone(gone_ev, "refers to an event that was already destroyed");
  }
  expect_event_gone((void *)(uintptr_t)(0xB4ull << 56 | 0x7fffffffull << 24 | 0xffffffu),
                    "is not a valid event handle");

  /* 3. four threads hammering garbage handles at once */
  pthread_t tids[4];
  for (int t = 0; t < 4; t++) {
    int rc = pthread_create(&tids[t], NULL, hammer, &thread_iterations);
    OLC_CHECK(rc == 0, "pthread_create: %s", strerror(rc));
  }
  for (int t = 0; t < 4; t++)
    pthread_join(tids[t], NULL);
  OLC_CHECK(true, "threads finished");

  /* 4. stale handles across a full shutdown */
  ol_device_handle_t old_dev = host_dev;
  ol_platform_handle_t old_plat = host_plat;
  r = olShutDown();
  OLC_CHECK(r == NULL, "olShutDown -> %u %s", olc_code(r), olc_details(r));

  ol_device_type_t t;
  ol_result_t u1 = olGetDeviceInfo(old_dev, OL_DEVICE_INFO_TYPE, sizeof t, &t);
  ol_result_t u2 = olGetDeviceInfo((void *)(uintptr_t)0x1234,
                                   OL_DEVICE_INFO_TYPE, sizeof t, &t);
  OLC_CHECK(olc_code(u1) == OL_ERRC_UNINITIALIZED &&
               strcmp(olc_details(u1), uninit_text) == 0,
            "call while uninitialised: expected %d \"%s\", got %u \"%s\"",
            (int)OL_ERRC_UNINITIALIZED, uninit_text, olc_code(u1), olc_details(u1));
  OLC_CHECK(u1 == u2, "UNINITIALIZED results differ: %p vs %p", (void *)u1,
            (void *)u2);

  r = olInit();
  OLC_CHECK(r == NULL, "second olInit -> %u %s", olc_code(r), olc_details(r));
  ol_device_handle_t new_dev = NULL;
  ol_platform_handle_t new_plat = NULL;
  lookup_host(&new_dev, &new_plat);

  if (kept_ev)
    expect_event_gone(kept_ev, "is an event handle from an earlier initialisation of the library");

  char want[200];
  snprintf(want, sizeof want,
           "Device (0x%" PRIxPTR ") is a device handle from an earlier "
           "initialisation of the library", (uintptr_t)old_dev);
  r = olGetDeviceInfo(old_dev, OL_DEVICE_INFO_TYPE, sizeof t, &t);
  OLC_CHECK(olc_code(r) == OL_ERRC_INVALID_DEVICE &&
               olc_details_has(r, "earlier initialisation"),
            "stale device: expected %d with \"earlier initialisation\", got %u \"%s\"",
            (int)OL_ERRC_INVALID_DEVICE, olc_code(r), olc_details(r));
  OLC_CHECK(r != NULL && strcmp(olc_details(r), want) == 0,
            "stale device Details: expected \"%s\", got \"%s\"", want,
            olc_details(r));
  size_t sz = 0;
  r = olGetDeviceInfoSize(old_dev, OL_DEVICE_INFO_NAME, &sz);
  OLC_CHECK(olc_code(r) == OL_ERRC_INVALID_DEVICE &&
               olc_details_has(r, "earlier initialisation"),
            "stale device (InfoSize): got %u \"%s\"", olc_code(r), olc_details(r));
  r = olMemcpy(NULL, scratch_dst, new_dev, scratch_src, old_dev, 8);
  OLC_CHECK(olc_code(r) == OL_ERRC_INVALID_DEVICE &&
               olc_details_has(r, "SrcDevice") &&
               olc_details_has(r, "earlier initialisation"),
            "stale SrcDevice in olMemcpy: got %u \"%s\"", olc_code(r),
            olc_details(r));

  char name[64];
  r = olGetPlatformInfo(old_plat, OL_PLATFORM_INFO_NAME, sizeof name, name);
  OLC_CHECK(olc_code(r) == OL_ERRC_INVALID_PLATFORM &&
               olc_details_has(r, "earlier initialisation"),
            "stale platform: expected %d with \"earlier initialisation\", got %u \"%s\"",
            (int)OL_ERRC_INVALID_PLATFORM, olc_code(r), olc_details(r));

  /* the new handles work */
  r = olGetDeviceInfo(new_dev, OL_DEVICE_INFO_TYPE, sizeof t, &t);
  OLC_CHECK(r == NULL && t == OL_DEVICE_TYPE_HOST, "new host device: %u %s",
            olc_code(r), olc_details(r));
  r = olGetPlatformInfo(new_plat, OL_PLATFORM_INFO_NAME, sizeof name, name);
  OLC_CHECK(r == NULL && strcmp(name, "Host") == 0,
            "new host platform NAME: %u %s", olc_code(r), olc_details(r));

  r = olShutDown();
  OLC_CHECK(r == NULL, "final olShutDown -> %u %s", olc_code(r), olc_details(r));
  r = olShutDown();
  OLC_CHECK(olc_code(r) == OL_ERRC_UNINITIALIZED,
            "extra olShutDown: expected %d, got %u %s", (int)OL_ERRC_UNINITIALIZED,
            olc_code(r), olc_details(r));
  return olc_summary(NULL);
}
