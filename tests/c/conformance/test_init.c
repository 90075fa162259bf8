/* olInit / olShutDown: reference counting, re-initialisation, the
 * UNINITIALIZED result and interning of error results. */
#include "oldevices.h"

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#define UNINIT_TEXT                                                            \
  "liboffload has not been initialized - please call olInit before using "    \
  "this API"

static bool count_cb(ol_device_handle_t d, void *ud) {
  (void)d;
  (*(int *)ud)++;
  return true;
}

static ol_result_t any_call(void) {
  int n = 0;
  return olIterateDevices(count_cb, &n);
}

static void nop_host_fn(void *p) { (void)p; }

/* Every entry point but olInit must answer with the one static
 * UNINITIALIZED result while the library is not initialised.  The checks
 * happen before validation, so NULL arguments are fine. */
static void check_all_uninitialized(ol_result_t expect) {
  ol_code_location_t loc = {"fn", "file.c", 1, 2};
  char buf[16];
  size_t sz = 0;
  bool valid = false;
  void *p = NULL;
  ol_dimensions_t dims = {1, 1, 1};
  ol_kernel_launch_size_args_t ls = {1, dims, dims, 0};
  ol_event_handle_t ev = NULL;
  (void)loc;
#define U(call) OLC_PTR_EQ((call), expect)
  U(olShutDown());
  U(olShutDownWithCodeLoc(&loc));
  U(olIterateDevices(count_cb, &sz));
  U(olIterateDevices(NULL, NULL));
  U(olIterateDevicesWithCodeLoc(count_cb, &sz, &loc));
  U(olGetPlatformInfo(NULL, OL_PLATFORM_INFO_NAME, 0, NULL));
  U(olGetPlatformInfoSize(NULL, OL_PLATFORM_INFO_NAME, NULL));
  U(olGetDeviceInfo(NULL, OL_DEVICE_INFO_TYPE, sizeof buf, buf));
  U(olGetDeviceInfoWithCodeLoc(NULL, OL_DEVICE_INFO_TYPE, 4, buf, &loc));
  U(olGetDeviceInfoSize(NULL, OL_DEVICE_INFO_NAME, &sz));
  U(olMemAlloc(NULL, OL_ALLOC_TYPE_HOST, 0, &p));
  U(olMemFree(NULL));
  U(olMemFree(buf));
  U(olGetMemInfo(buf, OL_MEM_INFO_SIZE, sizeof sz, &sz));
  U(olGetMemInfoSize(buf, OL_MEM_INFO_SIZE, &sz));
  U(olMemcpy(NULL, buf, NULL, buf + 8, NULL, 4));
  U(olMemFill(NULL, buf, 0, NULL, 4)); /* PatternSize 0: no SIGFPE either */
  U(olMemRegister(NULL, buf, 0, 0, &p));
  U(olMemUnregister(NULL, buf));
  U(olCreateQueue(NULL, NULL));
  U(olDestroyQueue(NULL));
  U(olSyncQueue(NULL));
  U(olWaitEvents(NULL, &ev, 1));
  U(olGetQueueInfo(NULL, OL_QUEUE_INFO_DEVICE, 0, NULL));
  U(olGetQueueInfoSize(NULL, OL_QUEUE_INFO_DEVICE, NULL));
  U(olLaunchHostFunction(NULL, nop_host_fn, NULL));
  U(olCreateEvent(NULL, NULL));
  U(olDestroyEvent(NULL));
  U(olSyncEvent(NULL));
  U(olGetEventInfo(NULL, OL_EVENT_INFO_QUEUE, 0, NULL));
  U(olGetEventInfoSize(NULL, OL_EVENT_INFO_QUEUE, NULL));
  U(olCreateProgram(NULL, NULL, 0, NULL));
  U(olIsValidBinary(NULL, buf, 0, &valid));
  U(olDestroyProgram(NULL));
  U(olGetSymbol(NULL, NULL, OL_SYMBOL_KIND_KERNEL, NULL));
  U(olGetSymbolInfo(NULL, OL_SYMBOL_INFO_KIND, 0, NULL));
  U(olGetSymbolInfoSize(NULL, OL_SYMBOL_INFO_KIND, NULL));
  U(olLaunchKernel(NULL, NULL, NULL, NULL, 8, &ls));
  U(olLaunchKernelWithCodeLoc(NULL, NULL, NULL, NULL, 8, &ls, &loc));
  U(olCalculateOptimalOccupancy(NULL, NULL, 0, NULL));
#undef U
}

static void test_before_init(void) {
  ol_result_t r = olShutDown();
  OLC_ERR(r, OL_ERRC_UNINITIALIZED, UNINIT_TEXT);
  ol_result_t r2 = any_call();
  OLC_ERR(r2, OL_ERRC_UNINITIALIZED, UNINIT_TEXT);
  OLC_PTR_EQ(r2, r);
  if (r)
    check_all_uninitialized(r);
}

static void test_init_shutdown(void) {
  OLC_OK(olInit());
  int n = 0;
  OLC_OK(olIterateDevices(count_cb, &n));
  OLC_TRUE(n >= 1);
  OLC_OK(olShutDown());
  OLC_ERR(any_call(), OL_ERRC_UNINITIALIZED, UNINIT_TEXT);
}

static void test_refcount(void) {
  ol_result_t uninit = olShutDown(); /* not initialised here */
  OLC_ERR(uninit, OL_ERRC_UNINITIALIZED, UNINIT_TEXT);

  OLC_OK(olInit());
  OLC_OK(olInit());
  OLC_OK(olInit());
  OLC_OK(olShutDown());
  OLC_OK(any_call()); /* still two references */
  OLC_TRUE(olc_host_device() != NULL);
  OLC_OK(olShutDown());
  OLC_OK(any_call()); /* still one reference */
  OLC_OK(olShutDown());
  /* refcount is 0 now */
  OLC_PTR_EQ(any_call(), uninit);
  /* extra shutdowns never drive the count negative */
  OLC_PTR_EQ(olShutDown(), uninit);
  OLC_PTR_EQ(olShutDown(), uninit);
  OLC_OK(olInit());
  OLC_OK(any_call());
  OLC_OK(olShutDown());
  OLC_PTR_EQ(any_call(), uninit);
  check_all_uninitialized(uninit);
}

static void test_reinit_cycles(void) {
  ol_result_t uninit = any_call();
  OLC_ERR(uninit, OL_ERRC_UNINITIALIZED, UNINIT_TEXT);
  for (int i = 0; i < 10; i++) {
    OLC_OK(olInit());
    ol_device_handle_t d = olc_host_device();
    OLC_TRUE(d != NULL);
    ol_device_type_t t = OL_DEVICE_TYPE_FORCE_UINT32;
    OLC_OK(olGetDeviceInfo(d, OL_DEVICE_INFO_TYPE, sizeof t, &t));
    OLC_EQ(t, OL_DEVICE_TYPE_HOST);
    OLC_OK(olShutDown());
    OLC_PTR_EQ(any_call(), uninit);
  }
}

static void test_with_code_loc_init(void) {
  ol_code_location_t loc = {"test_with_code_loc_init", __FILE__, __LINE__, 1};
  OLC_OK(olInitWithCodeLoc(&loc));
  OLC_OK(any_call());
  OLC_OK(olShutDownWithCodeLoc(&loc));
  OLC_ERR(any_call(), OL_ERRC_UNINITIALIZED, UNINIT_TEXT);
  OLC_OK(olInitWithCodeLoc(NULL));
  OLC_OK(olShutDownWithCodeLoc(NULL));
  OLC_ERR(olShutDownWithCodeLoc(NULL), OL_ERRC_UNINITIALIZED, UNINIT_TEXT);
}

/* Same (Code, Details) gives the same pointer, from any function, and
 * across olShutDown/olInit; results stay readable after shutdown. */
static void test_interning(void) {
  OLC_OK(olInit());
  ol_device_type_t t;
  size_t sz;
  ol_result_t a = olGetDeviceInfo(NULL, OL_DEVICE_INFO_TYPE, sizeof t, &t);
  ol_result_t b = olGetDeviceInfo(NULL, OL_DEVICE_INFO_NAME, 99, &t);
  ol_result_t c = olGetDeviceInfoSize(NULL, OL_DEVICE_INFO_TYPE, &sz);
  ol_result_t d = olMemAlloc(NULL, OL_ALLOC_TYPE_DEVICE, 16, (void **)&sz);
  OLC_ERR(a, OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Device"));
  OLC_PTR_EQ(b, a);
  OLC_PTR_EQ(c, a);
  OLC_PTR_EQ(d, a);

  /* different code/text -> a different result */
  ol_result_t e = olGetDeviceInfo(olc_host_device(), OL_DEVICE_INFO_TYPE, 0, &t);
  OLC_ERR(e, OL_ERRC_INVALID_SIZE, OLC_VF("PropSize == 0"));
  OLC_TRUE(e != a);
  ol_result_t f = olMemAlloc(NULL, OL_ALLOC_TYPE_DEVICE, 0, NULL);
  OLC_ERR(f, OL_ERRC_INVALID_SIZE, OLC_VF("Size == 0"));
  OLC_TRUE(f != e);

  /* implementation errors are interned as well */
  int x = 0;
  ol_result_t g = olMemFree(&x);
  OLC_ERR(g, OL_ERRC_INVALID_ARGUMENT, "address is not a known allocation");
  OLC_PTR_EQ(olMemFree(&t), g);
  OLC_OK(olShutDown());

  /* still readable after the last shutdown */
  OLC_EQ(a->Code, OL_ERRC_INVALID_NULL_HANDLE);
  OLC_STREQ(a->Details, OLC_VF("NULL == Device"));
  OLC_STREQ(g->Details, "address is not a known allocation");

  /* and identical after re-initialisation */
  OLC_OK(olInit());
  OLC_PTR_EQ(olGetDeviceInfo(NULL, OL_DEVICE_INFO_TYPE, sizeof t, &t), a);
  OLC_PTR_EQ(olGetDeviceInfo(olc_host_device(), OL_DEVICE_INFO_VENDOR, 0, &t), e);
  OLC_PTR_EQ(olMemFree(&x), g);
  OLC_OK(olShutDown());
  OLC_OK(olInit());
  OLC_PTR_EQ(olMemAlloc(NULL, OL_ALLOC_TYPE_HOST, 0, NULL), f);
  OLC_OK(olShutDown());
}

/* Several threads initialise, use and shut down the library concurrently;
 * the reference count must end at exactly zero. */
#define THREADS 6
#define CYCLES 300
static void *thread_cycles(void *arg) {
  long failures = 0;
  (void)arg;
  for (int i = 0; i < CYCLES; i++) {
    if (olInit() != NULL)
      failures++;
    ol_device_handle_t d = olc_host_device();
    ol_device_type_t t = OL_DEVICE_TYPE_FORCE_UINT32;
    if (!d || olGetDeviceInfo(d, OL_DEVICE_INFO_TYPE, sizeof t, &t) != NULL ||
        t != OL_DEVICE_TYPE_HOST)
      failures++;
    ol_result_t r = olGetDeviceInfo(NULL, OL_DEVICE_INFO_TYPE, sizeof t, &t);
    if (!r || r->Code != OL_ERRC_INVALID_NULL_HANDLE ||
        strcmp(r->Details, OLC_VF("NULL == Device")) != 0)
      failures++;
    if (olShutDown() != NULL)
      failures++;
  }
  return (void *)failures;
}

static void test_threads(void) {
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++)
    OLC_EQ(pthread_create(&th[i], NULL, thread_cycles, NULL), 0);
  for (int i = 0; i < THREADS; i++) {
    void *ret = (void *)1;
    OLC_EQ(pthread_join(th[i], &ret), 0);
    OLC_EQ((long)ret, 0);
  }
  OLC_ERR(olShutDown(), OL_ERRC_UNINITIALIZED, UNINIT_TEXT);
  OLC_ERR(any_call(), OL_ERRC_UNINITIALIZED, UNINIT_TEXT);
}

/* ---------------- only our library (LLVM crashes or differs) ------------ */

/* A device handle from before the last full shutdown is rejected. */
static void ours_stale_handle_after_reinit(void) {
  OLC_OK(olInit());
  ol_device_handle_t old = olc_host_device();
  ol_platform_handle_t oldp = olc_platform_of(old);
  OLC_TRUE(old != NULL);
  OLC_OK(olShutDown());
  OLC_OK(olInit());
  ol_device_type_t t = OL_DEVICE_TYPE_FORCE_UINT32;
  char want[160];
  snprintf(want, sizeof want,
           "Device (0x%" PRIxPTR ") is a device handle from an earlier "
           "initialisation of the library",
           (uintptr_t)old);
  OLC_ERR(olGetDeviceInfo(old, OL_DEVICE_INFO_TYPE, sizeof t, &t),
          OL_ERRC_INVALID_DEVICE, want);
  OLC_EQ(t, OL_DEVICE_TYPE_FORCE_UINT32);
  size_t sz = 0;
  OLC_ERR(olGetDeviceInfoSize(old, OL_DEVICE_INFO_NAME, &sz),
          OL_ERRC_INVALID_DEVICE, want);
  snprintf(want, sizeof want,
           "Platform (0x%" PRIxPTR ") is a platform handle from an earlier "
           "initialisation of the library",
           (uintptr_t)oldp);
  char name[64];
  OLC_ERR(olGetPlatformInfo(oldp, OL_PLATFORM_INFO_NAME, sizeof name, name),
          OL_ERRC_INVALID_PLATFORM, want);
  /* the new handle works */
  ol_device_handle_t now = olc_host_device();
  OLC_OK(olGetDeviceInfo(now, OL_DEVICE_INFO_TYPE, sizeof t, &t));
  OLC_EQ(t, OL_DEVICE_TYPE_HOST);
  OLC_OK(olShutDown());
}

/* After fork() the child gets OL_ERRC_UNSUPPORTED (fork/spawn advice) and
 * must not hang. */
static void ours_fork_child(void) {
  OLC_OK(olInit());
  ol_device_handle_t d = olc_host_device();
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(20);
    ol_device_type_t t;
    ol_result_t r = olGetDeviceInfo(d, OL_DEVICE_INFO_TYPE, sizeof t, &t);
    int st = 0;
    if (!r || r->Code != OL_ERRC_UNSUPPORTED)
      st |= 1;
    if (!r || !r->Details || !strstr(r->Details, "fork") ||
        !strstr(r->Details, "spawn"))
      st |= 2;
    ol_result_t r2 = olInit();
    if (!r2 || r2->Code != OL_ERRC_UNSUPPORTED)
      st |= 4;
    if (st)
      printf("  child: got %s \"%s\" / olInit %s\n",
             olc_code_name(olc_code(r)), olc_details(r),
             olc_code_name(olc_code(r2)));
    fflush(stdout);
    _exit(st);
  }
  OLC_TRUE(pid > 0);
  int status = 0;
  if (pid > 0) {
    OLC_TRUE(waitpid(pid, &status, 0) == pid);
    OLC_TRUE(WIFEXITED(status));
    if (WIFSIGNALED(status))
      printf("  child died with signal %d\n", WTERMSIG(status));
    OLC_EQ(WIFEXITED(status) ? (WEXITSTATUS(status) & 1) : 1, 0);
    OLC_EQ(WIFEXITED(status) ? (WEXITSTATUS(status) & 2) : 2, 0);
    OLC_EQ(WIFEXITED(status) ? (WEXITSTATUS(status) & 4) : 4, 0);
  }
  /* the parent is unaffected */
  ol_device_type_t t = OL_DEVICE_TYPE_FORCE_UINT32;
  OLC_OK(olGetDeviceInfo(d, OL_DEVICE_INFO_TYPE, sizeof t, &t));
  OLC_EQ(t, OL_DEVICE_TYPE_HOST);
  OLC_OK(olShutDown());
}

int main(void) {
  OLC_RUN(test_before_init);
  OLC_RUN(test_init_shutdown);
  OLC_RUN(test_refcount);
  OLC_RUN(test_reinit_cycles);
  OLC_RUN(test_with_code_loc_init);
  OLC_RUN(test_interning);
  OLC_RUN(test_threads);
  OLC_RUN_ON(ours_stale_handle_after_reinit, OLC_OURS, "LLVM 22.1 crashes on a handle from before a full shutdown");
  OLC_RUN_ON(ours_fork_child, OLC_OURS, "the fork guard is our library's");
  return olc_summary("init");
}
