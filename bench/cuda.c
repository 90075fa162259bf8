// CUDA backend benchmark: the same operations through the CUDA driver API
// directly ("raw") and through liboffload-go ("ours"), on whatever the
// driver library is: the real libcuda on a GPU machine, or the driver
// double of the tests (tests/drivers/fake_cuda.c), where the numbers are
// the library's overhead per call.
//
// usage: cuda raw  DRIVER.so IMAGE [ITERATIONS] [COPY_MIB] [KERNEL]
//        cuda ours -         IMAGE [ITERATIONS] [COPY_MIB] [KERNEL]
//        cuda llvm -         IMAGE [ITERATIONS] [COPY_MIB] [KERNEL]
// (ours and llvm run the same code through the Offload API, in whichever
// libLLVMOffload.so.22.1 the program was linked with: bench/run.sh builds
// it twice, with liboffload-go, where OFFLOAD_CUDA_LIBRARY picks the
// driver, and with LLVM 22.1's library, which loads "libcuda.so" from the
// library path: LD_LIBRARY_PATH picks the driver there)
// IMAGE holds a kernel without arguments, KERNEL (default "empty") (PTX on a GPU, the
// double's dressed cubin on the double); for ours, OFFLOAD_CUDA_LIBRARY
// picks the driver. Prints "key value" lines:
//   launch_sync_ns   median of one empty launch + stream sync
//   launch_batch_ns  per launch when ITERATIONS are queued before one sync
//   h2d_gbs, d2h_gbs pinned host <-> device copies of COPY_MIB MiB
//   copy4k_ns        per 4 KiB pinned host -> device copy, 1,000 queued
//                    before one (untimed) sync
//   event_ns         per event recorded on the stream: cuEventCreate +
//                    cuEventRecord / olCreateEvent (destruction untimed)
//   sync_ns          per sync of a stream / queue with no work
//   record_ns (raw)  per cuEventRecord of an existing event on the stream
//                    with no work (what a library with a pool of events pays)
//   query_ns (raw)   per cuStreamQuery of the stream with no work
//   probe_ns (ours)  olGetDeviceInfoSize(device, TYPE, NULL): enters Go and
//                    fails validation at once, the cost of the C -> Go crossing
//                    (in LLVM's library: its validation failing at once)
// (the last four are medians of 7 runs of 1,000 operations or more)
#define BENCH_OFFLOAD
#include "common.h"

#include <dlfcn.h>

typedef int (*fn_t)();
static void *lib;
static fn_t sym(const char *name) {
  fn_t f = (fn_t)dlsym(lib, name);
  if (!f) {
    fprintf(stderr, "cuda bench: the driver lacks %s\n", name);
    exit(1);
  }
  return f;
}
#define CU(call)                                                               \
  do {                                                                         \
    int r_ = (call);                                                           \
    if (r_) {                                                                  \
      fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, r_);    \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static void *read_all(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (fread(b, 1, (size_t)n, f) != (size_t)n) exit(1);
  b[n] = 0;
  fclose(f);
  *size = (size_t)n;
  return b;
}

static void report(double *one, int iters, double batch_ns, double h2d_ns, double d2h_ns, size_t bytes) {
  printf("launch_sync_ns %.0f\n", quantile(one, (size_t)iters, 0.5));
  printf("launch_batch_ns %.0f\n", batch_ns / iters);
  printf("h2d_gbs %.2f\n", bytes / h2d_ns);
  printf("d2h_gbs %.2f\n", bytes / d2h_ns);
}

static const char *kernel_name = "empty";

enum { BATCH = 1000 };

static void raw(const char *image, int iters, size_t bytes) {
  size_t isize;
  void *img = read_all(image, &isize);
  void *ctx, *stream, *mod, *fn, *host;
  uintptr_t dev;
  int d;
  CU(sym("cuInit")(0));
  CU(sym("cuDeviceGet")(&d, 0));
  CU(sym("cuDevicePrimaryCtxRetain")(&ctx, d));
  CU(sym("cuCtxSetCurrent")(ctx));
  CU(sym("cuStreamCreate")(&stream, 1u));
  CU(sym("cuModuleLoadDataEx")(&mod, img, 0u, NULL, NULL));
  CU(sym("cuModuleGetFunction")(&fn, mod, kernel_name));
  fn_t launch = sym("cuLaunchKernel"), sync = sym("cuStreamSynchronize");
  double *one = malloc(sizeof(double) * (size_t)iters);
  for (int i = 0; i < iters / 10; i++) { // warm-up
    CU(launch(fn, 1u, 1u, 1u, 1u, 1u, 1u, 0u, stream, NULL, NULL));
    CU(sync(stream));
  }
  for (int i = 0; i < iters; i++) {
    double t = now_ns();
    CU(launch(fn, 1u, 1u, 1u, 1u, 1u, 1u, 0u, stream, NULL, NULL));
    CU(sync(stream));
    one[i] = now_ns() - t;
  }
  double t = now_ns();
  for (int i = 0; i < iters; i++)
    CU(launch(fn, 1u, 1u, 1u, 1u, 1u, 1u, 0u, stream, NULL, NULL));
  CU(sync(stream));
  double batch = now_ns() - t;
  CU(sym("cuMemAllocHost_v2")(&host, bytes));
  CU(sym("cuMemAlloc_v2")(&dev, bytes));
  memset(host, 1, bytes);
  t = now_ns();
  CU(sym("cuMemcpyHtoDAsync_v2")(dev, host, bytes, stream));
  CU(sync(stream));
  double h2d = now_ns() - t;
  t = now_ns();
  CU(sym("cuMemcpyDtoHAsync_v2")(host, dev, bytes, stream));
  CU(sync(stream));
  double d2h = now_ns() - t;
  report(one, iters, batch, h2d, d2h, bytes);
  fn_t h2d_async = sym("cuMemcpyHtoDAsync_v2");
  BENCH_MEDIAN("copy4k_ns", BATCH, {
    for (int i = 0; i < BATCH; i++) CU(h2d_async(dev, host, (size_t)4096, stream));
    double s_ = now_ns();
    CU(sync(stream));
    skip_ += now_ns() - s_;
  });
  fn_t ev_create = sym("cuEventCreate"), ev_record = sym("cuEventRecord"), ev_destroy = sym("cuEventDestroy_v2");
  static void *evs[BATCH];
  BENCH_MEDIAN("event_ns", BATCH, {
    for (int i = 0; i < BATCH; i++) {
      CU(ev_create(&evs[i], 2u /* CU_EVENT_DISABLE_TIMING */));
      CU(ev_record(evs[i], stream));
    }
    double s_ = now_ns();
    for (int i = 0; i < BATCH; i++) CU(ev_destroy(evs[i]));
    skip_ += now_ns() - s_;
  });
  BENCH_MEDIAN("sync_ns", 10 * BATCH, for (int i = 0; i < 10 * BATCH; i++) CU(sync(stream)));
  for (int i = 0; i < BATCH; i++) CU(ev_create(&evs[i], 2u));
  BENCH_MEDIAN("record_ns", BATCH, for (int i = 0; i < BATCH; i++) CU(ev_record(evs[i], stream)));
  for (int i = 0; i < BATCH; i++) CU(ev_destroy(evs[i]));
  fn_t query = sym("cuStreamQuery");
  BENCH_MEDIAN("query_ns", 10 * BATCH, for (int i = 0; i < 10 * BATCH; i++) CU(query(stream)));
  CU(sym("cuMemFree_v2")(dev));
  CU(sym("cuMemFreeHost")(host));
  CU(sym("cuModuleUnload")(mod));
  CU(sym("cuStreamDestroy_v2")(stream));
  CU(sym("cuDevicePrimaryCtxRelease_v2")(d));
}

static void api(const char *image, int iters, size_t bytes) {
  size_t isize;
  void *img = read_all(image, &isize);
  ol_device_handle_t dev = bench_device(OL_PLATFORM_BACKEND_CUDA);
  if (!dev) {
    fprintf(stderr, "cuda bench: no CUDA device through the Offload API\n");
    exit(1);
  }
  ol_program_handle_t prog;
  ol_symbol_handle_t k;
  ol_queue_handle_t q;
  CK(olCreateProgram(dev, img, isize, &prog));
  CK(olGetSymbol(prog, kernel_name, OL_SYMBOL_KIND_KERNEL, &k));
  CK(olCreateQueue(dev, &q));
  ol_kernel_launch_size_args_t ls = {1, {1, 1, 1}, {1, 1, 1}, 0};
  double *one = malloc(sizeof(double) * (size_t)iters);
  for (int i = 0; i < iters / 10; i++) {
    CK(olLaunchKernel(q, dev, k, NULL, 0, &ls));
    CK(olSyncQueue(q));
  }
  for (int i = 0; i < iters; i++) {
    double t = now_ns();
    CK(olLaunchKernel(q, dev, k, NULL, 0, &ls));
    CK(olSyncQueue(q));
    one[i] = now_ns() - t;
  }
  double t = now_ns();
  for (int i = 0; i < iters; i++)
    CK(olLaunchKernel(q, dev, k, NULL, 0, &ls));
  CK(olSyncQueue(q));
  double batch = now_ns() - t;
  void *host, *dmem;
  CK(olMemAlloc(dev, OL_ALLOC_TYPE_HOST, bytes, &host));
  CK(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, bytes, &dmem));
  memset(host, 1, bytes);
  t = now_ns();
  CK(olMemcpy(q, dmem, dev, host, dev, bytes));
  CK(olSyncQueue(q));
  double h2d = now_ns() - t;
  t = now_ns();
  CK(olMemcpy(q, host, dev, dmem, dev, bytes));
  CK(olSyncQueue(q));
  double d2h = now_ns() - t;
  report(one, iters, batch, h2d, d2h, bytes);
  BENCH_MEDIAN("copy4k_ns", BATCH, {
    for (int i = 0; i < BATCH; i++) CK(olMemcpy(q, dmem, dev, host, dev, 4096));
    double s_ = now_ns();
    CK(olSyncQueue(q));
    skip_ += now_ns() - s_;
  });
  static ol_event_handle_t evs[BATCH];
  BENCH_MEDIAN("event_ns", BATCH, {
    for (int i = 0; i < BATCH; i++) CK(olCreateEvent(q, &evs[i]));
    double s_ = now_ns();
    for (int i = 0; i < BATCH; i++) CK(olDestroyEvent(evs[i]));
    skip_ += now_ns() - s_;
  });
  BENCH_MEDIAN("sync_ns", 10 * BATCH, for (int i = 0; i < 10 * BATCH; i++) CK(olSyncQueue(q)));
  BENCH_MEDIAN("probe_ns", 10 * BATCH, for (int i = 0; i < 10 * BATCH; i++) olGetDeviceInfoSize(dev, OL_DEVICE_INFO_TYPE, NULL));
  CK(olMemFree(dmem));
  CK(olMemFree(host));
  CK(olDestroyQueue(q));
  CK(olDestroyProgram(prog));
  CK(olShutDown());
}

int main(int argc, char **argv) {
  if (argc < 4 || (strcmp(argv[1], "raw") && strcmp(argv[1], "ours") && strcmp(argv[1], "llvm"))) {
    fprintf(stderr, "usage: cuda raw|ours|llvm LIBRARY IMAGE [ITERATIONS] [COPY_MIB] [KERNEL]\n");
    return 2;
  }
  int iters = argc > 4 ? atoi(argv[4]) : 10000;
  size_t bytes = (size_t)(argc > 5 ? atoi(argv[5]) : 64) << 20;
  if (argc > 6) kernel_name = argv[6];
  if (!strcmp(argv[1], "raw")) {
    lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      fprintf(stderr, "cuda bench: %s\n", dlerror());
      return 1;
    }
    raw(argv[3], iters, bytes);
  } else {
    api(argv[3], iters, bytes);
  }
  return 0;
}
