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
//   launch_batch_submit_ns, launch_batch_submit_ns_cpu
//                    per launch of such a batch, the submissions alone
//                    (the sync untimed): wall time and the calling
//                    thread's CPU time, medians of 7 batches
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

static const char *kernel_name = "empty";

enum { BATCH = BENCH_GPU_BATCH }; // operations per timed run, as bench_offload_ops

static void raw(const char *image, int iters, size_t bytes) {
  size_t isize;
  void *img = bench_read_file(image, &isize);
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
  BENCH_MEDIAN("launch_batch_submit_ns", iters, {
    for (int i = 0; i < iters; i++)
      CU(launch(fn, 1u, 1u, 1u, 1u, 1u, 1u, 0u, stream, NULL, NULL));
    BENCH_SKIP(CU(sync(stream)));
  });
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
  bench_report(one, iters, batch, h2d, d2h, bytes);
  fn_t h2d_async = sym("cuMemcpyHtoDAsync_v2");
  BENCH_MEDIAN("copy4k_ns", BATCH, {
    for (int i = 0; i < BATCH; i++) CU(h2d_async(dev, host, (size_t)4096, stream));
    BENCH_SKIP(CU(sync(stream)));
  });
  fn_t ev_create = sym("cuEventCreate"), ev_record = sym("cuEventRecord"), ev_destroy = sym("cuEventDestroy_v2");
  static void *evs[BATCH];
  BENCH_MEDIAN("event_ns", BATCH, {
    for (int i = 0; i < BATCH; i++) {
      CU(ev_create(&evs[i], 2u /* CU_EVENT_DISABLE_TIMING */));
      CU(ev_record(evs[i], stream));
    }
    BENCH_SKIP(for (int i = 0; i < BATCH; i++) CU(ev_destroy(evs[i])));
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
    size_t isize;
    void *img = bench_read_file(argv[3], &isize);
    bench_offload_ops(OL_PLATFORM_BACKEND_CUDA, "cuda", img, isize, kernel_name, iters, bytes);
  }
  return 0;
}
