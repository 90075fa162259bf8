/*
 * fake_cuda_selftest.c - drives the CUDA driver double (fake_cuda.c)
 * through the entry points a runtime other than ours resolves (LLVM 22.1's
 * CUDA plugin: contexts' device and limits, primary-context state and
 * flags, synchronous copies, 2D fills, stream-ordered allocation, stream
 * callbacks, the unversioned cuEventDestroy), and checks what they do
 * against values computed here; and that freed device memory is
 * quarantined (tests/drivers/quarantine.h): work queued before the free
 * that touches it faults, in a process of its own ("selftest quarantine").
 *
 * Build and run (plugins/cuda/fake_cuda_selftest_test.go does this):
 *   cc -shared -fPIC -Wall -Wextra -Werror -I include tests/drivers/fake_cuda.c \
 *      -o DIR/libcuda.so -ldl -lpthread
 *   cc -Wall -Wextra -Werror tests/drivers/fake_cuda_selftest.c -o DIR/selftest \
 *      DIR/libcuda.so -Wl,-rpath,DIR -lpthread
 *   FAKE_CUDA_DEVICES=2 DIR/selftest
 * It prints one line per check and "PASS (0 failures)" at the end; it exits
 * 1 on any failure.
 *
 * The declarations below are the driver's (cuda.h), written here so that
 * the test does not depend on CUDA's headers.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <signal.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUevent;
typedef uintptr_t CUdeviceptr;

CUresult cuInit(unsigned);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, CUdevice);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice);
CUresult cuDevicePrimaryCtxGetState(CUdevice, unsigned *, int *);
CUresult cuDevicePrimaryCtxSetFlags(CUdevice, unsigned);
CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice, unsigned);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuCtxGetDevice(CUdevice *);
CUresult cuCtxGetLimit(size_t *, int);
CUresult cuCtxSetLimit(int, size_t);
CUresult cuDeviceGetAttribute(int *, int, CUdevice);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
CUresult cuMemcpyDtoHAsync_v2(void *, CUdeviceptr, size_t, CUstream);
CUresult cuMemAllocHost_v2(void **, size_t);
CUresult cuMemsetD2D8Async(CUdeviceptr, size_t, unsigned char, size_t, size_t, CUstream);
CUresult cuMemsetD2D16Async(CUdeviceptr, size_t, unsigned short, size_t, size_t, CUstream);
CUresult cuMemsetD2D32Async(CUdeviceptr, size_t, unsigned, size_t, size_t, CUstream);
CUresult cuMemAllocAsync(CUdeviceptr *, size_t, CUstream);
CUresult cuMemFreeAsync(CUdeviceptr, CUstream);
CUresult cuStreamCreate(CUstream *, unsigned);
CUresult cuStreamSynchronize(CUstream);
CUresult cuStreamDestroy_v2(CUstream);
CUresult cuStreamAddCallback(CUstream, void (*)(CUstream, CUresult, void *), void *, unsigned);
CUresult cuEventCreate(CUevent *, unsigned);
CUresult cuEventRecord(CUevent, CUstream);
CUresult cuEventDestroy(CUevent);
CUresult cuGetErrorName(CUresult, const char **);
CUresult cuEventElapsedTime(float *, CUevent, CUevent);
CUresult cuEventSynchronize(CUevent);
CUresult cuMemAllocManaged(CUdeviceptr *, size_t, unsigned);
CUresult cuPointerGetAttribute(void *, int, CUdeviceptr);
CUresult cuMemPrefetchAsync(CUdeviceptr, size_t, CUdevice, CUstream);
typedef struct {
  int type, id;
} CUmemLocation;
CUresult cuMemPrefetchAsync_v2(CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream);
long fake_cuda_live(const char *);
int fake_cuda_prefetches(void);
int fake_cuda_prefetch_last_device(void);

static int failures;
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (cond) {                                                                \
      printf("ok   - ");                                                       \
    } else {                                                                   \
      printf("FAIL - ");                                                       \
      failures++;                                                              \
    }                                                                          \
    printf(__VA_ARGS__);                                                       \
    printf("\n");                                                              \
  } while (0)
#define EQ(call, want) CHECK((call) == (want), "%s == %s", #call, #want)

struct cb_state {
  CUstream stream;
  CUresult status, from_callback;
  int calls;
};

static void callback(CUstream s, CUresult status, void *user) {
  struct cb_state *c = user;
  CUdevice d;
  c->stream = s;
  c->status = status;
  c->from_callback = cuCtxGetDevice(&d); /* no driver calls from a callback */
  c->calls++;
}

/* holds its stream until the main thread opens the gate */
static volatile int gate_open;
static void gated(CUstream s, CUresult status, void *user) {
  (void)s, (void)status, (void)user;
  while (!__atomic_load_n(&gate_open, __ATOMIC_ACQUIRE))
    usleep(1000);
}

/* takes 20 ms of stream time */
static void nap(CUstream s, CUresult status, void *user) {
  (void)s, (void)status, (void)user;
  usleep(20000);
}

/* the quarantine check's process: a device-to-host copy held behind a
 * closed gate, the device memory freed, the gate opened; exits 0 only if
 * the copy did not fault */
static int quarantine_child(void) {
  CUcontext c;
  CUstream cs;
  CUdeviceptr freed;
  void *host;
  if (cuInit(0) || cuDevicePrimaryCtxRetain(&c, 0) || cuCtxSetCurrent(c) || cuStreamCreate(&cs, 0) ||
      cuMemAlloc_v2(&freed, 1 << 16) || cuMemAllocHost_v2(&host, 1 << 16) || cuStreamAddCallback(cs, gated, NULL, 0) ||
      cuMemcpyDtoHAsync_v2(host, freed, 1 << 16, cs) || cuMemFree_v2(freed))
    return 2;
  __atomic_store_n(&gate_open, 1, __ATOMIC_RELEASE);
  cuStreamSynchronize(cs);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "quarantine"))
    return quarantine_child();
  EQ(cuInit(0), 0);
  CUcontext c0, c1;
  unsigned flags = 99;
  int active = 9;

  /* primary context flags and state: inactive before the first retain */
  EQ(cuDevicePrimaryCtxGetState(0, &flags, &active), 0);
  CHECK(flags == 0 && active == 0, "device 0 starts inactive with flags 0 (flags %u, active %d)", flags, active);
  EQ(cuDevicePrimaryCtxSetFlags(0, 4 /* BLOCKING_SYNC */), 0);
  EQ(cuDevicePrimaryCtxSetFlags(0, 3 /* not a scheduling policy */), 1 /* INVALID_VALUE */);
  EQ(cuDevicePrimaryCtxSetFlags(7, 4), 101 /* INVALID_DEVICE */);
  EQ(cuDevicePrimaryCtxRetain(&c0, 0), 0);
  EQ(cuDevicePrimaryCtxGetState(0, &flags, &active), 0);
  CHECK(flags == 4 && active == 1, "after retain: flags 4, active (flags %u, active %d)", flags, active);
  EQ(cuDevicePrimaryCtxSetFlags(0, 1), 708 /* PRIMARY_CONTEXT_ACTIVE */);
  EQ(cuDevicePrimaryCtxSetFlags_v2(0, 1), 0);
  EQ(cuDevicePrimaryCtxGetState(0, &flags, &active), 0);
  EQ(flags, 1u);
  const char *name = NULL;
  EQ(cuGetErrorName(708, &name), 0);
  CHECK(name && !strcmp(name, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE"), "708 is named (%s)", name ? name : "NULL");

  /* the current context's device, per thread */
  CUdevice d = -1;
  EQ(cuCtxGetDevice(&d), 201 /* INVALID_CONTEXT: none current */);
  EQ(cuDevicePrimaryCtxRetain(&c1, 1), 0);
  EQ(cuCtxSetCurrent(c1), 0);
  EQ(cuCtxGetDevice(&d), 0);
  EQ(d, 1);
  EQ(cuCtxSetCurrent(c0), 0);
  EQ(cuCtxGetDevice(&d), 0);
  EQ(d, 0);

  /* limits: the driver's defaults, set per context */
  size_t v = 0;
  EQ(cuCtxGetLimit(&v, 0 /* STACK_SIZE */), 0);
  EQ(v, (size_t)1024);
  EQ(cuCtxGetLimit(&v, 2 /* MALLOC_HEAP_SIZE */), 0);
  EQ(v, (size_t)8 << 20);
  EQ(cuCtxSetLimit(0, 4096), 0);
  EQ(cuCtxGetLimit(&v, 0), 0);
  EQ(v, (size_t)4096);
  EQ(cuCtxSetCurrent(c1), 0);
  EQ(cuCtxGetLimit(&v, 0), 0);
  CHECK(v == 1024, "another context keeps its own stack size (%zu)", v);
  EQ(cuCtxGetLimit(&v, 42), 1);
  EQ(cuCtxSetCurrent(c0), 0);

  /* attributes a runtime reads at device initialisation */
  int a = 0;
  EQ(cuDeviceGetAttribute(&a, 10 /* WARP_SIZE */, 0), 0);
  EQ(a, 32);
  EQ(cuDeviceGetAttribute(&a, 39 /* MAX_THREADS_PER_MULTIPROCESSOR */, 0), 0);
  EQ(a, 2048);

  /* synchronous copies */
  enum { N = 1024 };
  static unsigned char in[N], out[N];
  for (int i = 0; i < N; i++)
    in[i] = (unsigned char)(i * 13 + 1);
  CUdeviceptr p = 0;
  EQ(cuMemAlloc_v2(&p, N), 0);
  EQ(cuMemcpyHtoD_v2(p, in, N), 0);
  EQ(cuMemcpyDtoH_v2(out, p, N), 0);
  CHECK(!memcmp(in, out, N), "a synchronous round trip keeps the bytes");
  EQ(cuMemcpyHtoD_v2(p, in, N + 1), 1 /* past the allocation */);
  EQ(cuMemcpyDtoH_v2(out, p + N, 1), 1);

  /* 2D fills: rows of width elements, pitch bytes apart */
  CUstream s;
  EQ(cuStreamCreate(&s, 1), 0);
  EQ(cuMemcpyHtoD_v2(p, in, N), 0);
  EQ(cuMemsetD2D8Async(p, 64, 0xab, 16, 4, s), 0);
  EQ(cuMemsetD2D32Async(p + 512, 64, 0x01020304u, 4, 2, s), 0);
  EQ(cuMemsetD2D16Async(p + 768, 8, 0xbeef, 2, 3, s), 0);
  EQ(cuStreamSynchronize(s), 0);
  EQ(cuMemcpyDtoH_v2(out, p, N), 0);
  int ok = 1;
  for (int i = 0; i < N; i++) {
    unsigned char want = in[i];
    if (i < 256 && i % 64 < 16) want = 0xab;
    if (i >= 512 && i < 640 && (i - 512) % 64 < 16) want = (unsigned char)(0x01020304u >> (8 * ((i - 512) % 4)));
    if (i >= 768 && i < 792 && (i - 768) % 8 < 4) want = (i - 768) % 2 ? 0xbe : 0xef;
    ok = ok && out[i] == want;
  }
  CHECK(ok, "2D fills write their rows and nothing between them");
  EQ(cuMemsetD2D8Async(p, 8, 0, 16, 2, s), 1 /* pitch below the width */);
  EQ(cuMemsetD2D8Async(p, 512, 0, 16, 3, s), 1 /* the last row is past the allocation */);

  /* stream-ordered allocation: freed when the stream reaches the free */
  long live = fake_cuda_live("alloc");
  CUdeviceptr q = 0;
  EQ(cuMemAllocAsync(&q, 256, s), 0);
  EQ(fake_cuda_live("alloc"), live + 1);
  EQ(cuMemsetD2D8Async(q, 256, 7, 256, 1, s), 0);
  EQ(cuMemFreeAsync(q, s), 0);
  EQ(cuStreamSynchronize(s), 0);
  EQ(fake_cuda_live("alloc"), live);
  EQ(cuMemFreeAsync(q, s), 1 /* not live any more */);
  EQ(cuMemAllocAsync(&q, 256, NULL), 400 /* the double has no legacy stream */);

  /* FAKE_CUDA_MEMORY_BYTES bounds a device's live bytes ("bytes" counts
   * those of all devices); FAKE_CUDA_ALLOC_US makes an allocation and a
   * free sleep */
  {
    long bytes = fake_cuda_live("bytes");
    char cap[32];
    snprintf(cap, sizeof cap, "%ld", bytes + (1 << 20));
    setenv("FAKE_CUDA_MEMORY_BYTES", cap, 1);
    CUdeviceptr m = 0, m2 = 0;
    EQ(cuMemAlloc_v2(&m, 1 << 20), 0);
    EQ(fake_cuda_live("bytes"), bytes + (1 << 20));
    EQ(cuMemAlloc_v2(&m2, (size_t)bytes + (1 << 20)), 2 /* OUT_OF_MEMORY: past the device's memory */);
    EQ(cuMemFree_v2(m), 0);
    EQ(fake_cuda_live("bytes"), bytes);
    unsetenv("FAKE_CUDA_MEMORY_BYTES");
    setenv("FAKE_CUDA_ALLOC_US", "20000", 1);
    struct timespec t0, t1, t2;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    EQ(cuMemAlloc_v2(&m, 4096), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    EQ(cuMemFree_v2(m), 0);
    clock_gettime(CLOCK_MONOTONIC, &t2);
    unsetenv("FAKE_CUDA_ALLOC_US");
    double ms_alloc = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    double ms_free = (t2.tv_sec - t1.tv_sec) * 1e3 + (t2.tv_nsec - t1.tv_nsec) / 1e6;
    CHECK(ms_alloc >= 20 && ms_free >= 20, "FAKE_CUDA_ALLOC_US=20000: allocation %.1f ms, free %.1f ms, want 20 each",
          ms_alloc, ms_free);
  }

  /* stream callbacks run after the stream's earlier work, with the stream
   * and a status, where driver calls are refused */
  struct cb_state cb = {0};
  EQ(cuStreamAddCallback(s, callback, &cb, 1), 1 /* flags must be 0 */);
  EQ(cuStreamAddCallback(s, callback, &cb, 0), 0);
  EQ(cuStreamSynchronize(s), 0);
  CHECK(cb.calls == 1 && cb.stream == s && cb.status == 0, "the callback ran once with its stream and CUDA_SUCCESS");
  EQ(cb.from_callback, 800 /* NOT_PERMITTED */);

  /* the unversioned cuEventDestroy */
  long events = fake_cuda_live("event");
  CUevent e;
  EQ(cuEventCreate(&e, 0), 0);
  EQ(cuEventRecord(e, s), 0);
  EQ(fake_cuda_live("event"), events + 1);
  EQ(cuEventDestroy(e), 0);
  EQ(fake_cuda_live("event"), events);

  /* timing events: the time is taken when the stream gets there; events
   * without timing, or never recorded, are INVALID_HANDLE; one the stream
   * has not reached NOT_READY */
  CUevent t0, t1, untimed;
  float ms = -1;
  EQ(cuEventCreate(&t0, 0), 0);
  EQ(cuEventCreate(&t1, 0), 0);
  EQ(cuEventCreate(&untimed, 2 /* DISABLE_TIMING */), 0);
  EQ(cuEventElapsedTime(&ms, t0, t1), 400 /* never recorded */);
  EQ(cuEventRecord(t0, s), 0);
  EQ(cuStreamAddCallback(s, gated, NULL, 0), 0);
  EQ(cuEventRecord(t1, s), 0);
  EQ(cuEventElapsedTime(&ms, t0, t1), 600 /* t1 not reached */);
  __atomic_store_n(&gate_open, 1, __ATOMIC_RELEASE);
  EQ(cuEventSynchronize(t1), 0);
  EQ(cuEventElapsedTime(&ms, t0, t1), 0);
  CHECK(ms >= 0, "elapsed time is not negative (%g ms)", ms);
  EQ(cuEventRecord(t0, s), 0);
  EQ(cuStreamAddCallback(s, nap, NULL, 0), 0);
  EQ(cuEventRecord(t1, s), 0);
  EQ(cuEventSynchronize(t1), 0);
  EQ(cuEventElapsedTime(&ms, t0, t1), 0);
  CHECK(ms >= 19.5 && ms < 5000, "20 ms of stream work between two records (%g ms)", ms);
  EQ(cuEventElapsedTime(&ms, t1, t0), 0);
  CHECK(ms <= -19.5, "the reverse order is negative (%g ms)", ms);
  EQ(cuEventRecord(untimed, s), 0);
  EQ(cuStreamSynchronize(s), 0);
  EQ(cuEventElapsedTime(&ms, t0, untimed), 400 /* DISABLE_TIMING */);
  EQ(cuEventElapsedTime(NULL, t0, t1), 1);
  EQ(cuEventDestroy(t0), 0);
  EQ(cuEventDestroy(t1), 0);
  EQ(cuEventDestroy(untimed), 0);
  EQ(fake_cuda_live("event"), events);

  /* prefetch: managed memory only, a valid device or CU_DEVICE_CPU, in
   * stream order */
  CUdeviceptr m = 0;
  unsigned managed = 9;
  EQ(cuMemAllocManaged(&m, 8192, 1), 0);
  EQ(cuPointerGetAttribute(&managed, 8, m + 100), 0);
  EQ(managed, 1);
  EQ(cuPointerGetAttribute(&managed, 8, p), 0);
  EQ(managed, 0);
  int before = fake_cuda_prefetches();
  EQ(cuMemPrefetchAsync(p, 64, 0, s), 1 /* device memory */);
  EQ(cuMemPrefetchAsync(m, 0, 0, s), 1);
  EQ(cuMemPrefetchAsync(m, 8193, 0, s), 1 /* past the allocation */);
  EQ(cuMemPrefetchAsync(m, 8192, 7, s), 101 /* no such device */);
  __atomic_store_n(&gate_open, 0, __ATOMIC_RELEASE);
  EQ(cuStreamAddCallback(s, gated, NULL, 0), 0);
  EQ(cuMemPrefetchAsync(m, 8192, 1, s), 0);
  EQ(cuMemPrefetchAsync(m + 4096, 4096, -1, s), 0);
  usleep(5000);
  CHECK(fake_cuda_prefetches() == before, "prefetches wait for the stream's earlier work");
  __atomic_store_n(&gate_open, 1, __ATOMIC_RELEASE);
  EQ(cuStreamSynchronize(s), 0);
  EQ(fake_cuda_prefetches(), before + 2);
  EQ(fake_cuda_prefetch_last_device(), -1);
  EQ(cuMemPrefetchAsync_v2(m, 8192, (CUmemLocation){1, 1}, 0, s), 0);
  EQ(cuMemPrefetchAsync_v2(m, 8192, (CUmemLocation){1, 0}, 1, s), 1 /* flags must be 0 */);
  EQ(cuStreamSynchronize(s), 0);
  EQ(fake_cuda_prefetch_last_device(), 1);
  EQ(cuMemFree_v2(m), 0);

  /* freed device memory is quarantined: a copy queued before the free
   * that runs after it faults (in a process of its own: it ends it) */
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    execl("/proc/self/exe", "selftest", "quarantine", (char *)NULL);
    _exit(3);
  }
  int st = 0;
  CHECK(child > 0 && waitpid(child, &st, 0) == child && WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV,
        "a copy that runs after its memory was freed faults (child status %#x)", st);

  EQ(cuStreamDestroy_v2(s), 0);
  EQ(cuMemFree_v2(p), 0);
  EQ(cuDevicePrimaryCtxRelease_v2(1), 0);
  EQ(cuDevicePrimaryCtxRelease_v2(0), 0);
  EQ(cuDevicePrimaryCtxGetState(0, &flags, &active), 0);
  CHECK(active == 0 && flags == 1, "released: inactive, flags kept (flags %u, active %d)", flags, active);
  printf("%s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
  return failures != 0;
}
