// GPU memory pools (issue 30): allocation + free of device memory of at
// most 1 MiB, CYCLES times, through the driver directly ("raw": the
// baseline, what every olMemAlloc/olMemFree cost before pools) and through
// liboffload-go ("ours"). On the driver doubles, FAKE_CUDA_ALLOC_US /
// FAKE_HSA_ALLOC_US make each driver allocation and free sleep that long
// (bench/run.sh sets 20, a real driver's order).
//
// usage: gpupool raw cuda   DRIVER.so  CYCLES
//        gpupool raw amdgpu RUNTIME.so CYCLES
//        gpupool ours cuda|amdgpu -    CYCLES
// Prints "alloc_free_ns <mean ns per allocation + free over all cycles>",
// and "alloc_free_cpu_ns" the same in the thread's CPU time (on a shared
// machine the wall time also counts the time other jobs had the core; the
// CPU time leaves out the doubles' sleeps, so it is no baseline's measure).
// The sizes rotate through sizes[] (all at most 1 MiB).
#define BENCH_OFFLOAD
#include "common.h"

#include <dlfcn.h>

static const size_t sizes[] = {64, 1000, 4096, 65536, 262144, 1 << 20};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };

static void *lib;
typedef int (*fn_t)();
static double cpu_ns; // the thread's CPU time of the cycles

static fn_t sym(const char *name) {
  fn_t f = (fn_t)dlsym(lib, name);
  if (!f) {
    fprintf(stderr, "gpupool bench: the driver lacks %s\n", name);
    exit(1);
  }
  return f;
}
#define DRV(call)                                                              \
  do {                                                                         \
    int r_ = (call);                                                           \
    if (r_ != 0 && r_ != 1 /* HSA_STATUS_INFO_BREAK */) {                      \
      fprintf(stderr, "%s:%d: %s -> %#x\n", __FILE__, __LINE__, #call, r_);    \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static double raw_cuda(long cycles) {
  void *ctx;
  int d;
  DRV(sym("cuInit")(0));
  DRV(sym("cuDeviceGet")(&d, 0));
  DRV(sym("cuDevicePrimaryCtxRetain")(&ctx, d));
  DRV(sym("cuCtxSetCurrent")(ctx));
  fn_t alloc = sym("cuMemAlloc_v2"), release = sym("cuMemFree_v2");
  double t = now_ns(), u = thread_cpu_ns();
  for (long i = 0; i < cycles; i++) {
    uintptr_t p;
    DRV(alloc(&p, sizes[i % NSIZES]));
    DRV(release(p));
  }
  t = now_ns() - t;
  cpu_ns = thread_cpu_ns() - u;
  DRV(sym("cuDevicePrimaryCtxRelease_v2")(d));
  return t;
}

// HSA: the first GPU agent's coarse-grained global pool, as the plugin
// allocates device memory from (enumerators as in bench/hsa.c)
typedef struct {
  uint64_t handle;
} h_t;
static uint32_t (*agent_info)(h_t, uint32_t, void *);
static uint32_t (*pool_info)(h_t, uint32_t, void *);
static h_t gpu, dev_pool;

static uint32_t find_gpu(h_t a, void *data) {
  (void)data;
  uint32_t type;
  DRV(agent_info(a, 17 /* AGENT_INFO_DEVICE */, &type));
  if (type == 1 /* GPU */ && !gpu.handle) gpu = a;
  return 0;
}

static uint32_t find_pool(h_t p, void *data) {
  (void)data;
  uint32_t seg, flags;
  DRV(pool_info(p, 0 /* SEGMENT */, &seg));
  if (seg != 0 /* GLOBAL */) return 0;
  DRV(pool_info(p, 1 /* GLOBAL_FLAGS */, &flags));
  if ((flags & 4 /* COARSE_GRAINED */) && !dev_pool.handle) dev_pool = p;
  return 0;
}

static double raw_hsa(long cycles) {
  DRV(sym("hsa_init")());
  agent_info = (uint32_t(*)(h_t, uint32_t, void *))sym("hsa_agent_get_info");
  pool_info = (uint32_t(*)(h_t, uint32_t, void *))sym("hsa_amd_memory_pool_get_info");
  DRV(sym("hsa_iterate_agents")(find_gpu, NULL));
  if (!gpu.handle) {
    fprintf(stderr, "gpupool bench: no GPU agent\n");
    exit(1);
  }
  DRV(sym("hsa_amd_agent_iterate_memory_pools")(gpu, find_pool, NULL));
  uint32_t (*alloc)(h_t, size_t, uint32_t, void **) =
      (uint32_t(*)(h_t, size_t, uint32_t, void **))sym("hsa_amd_memory_pool_allocate");
  fn_t release = sym("hsa_amd_memory_pool_free");
  double t = now_ns(), u = thread_cpu_ns();
  for (long i = 0; i < cycles; i++) {
    void *p;
    DRV(alloc(dev_pool, sizes[i % NSIZES], 0, &p));
    DRV(release(p));
  }
  t = now_ns() - t;
  cpu_ns = thread_cpu_ns() - u;
  DRV(sym("hsa_shut_down")());
  return t;
}

static double ours(ol_platform_backend_t backend, long cycles) {
  ol_device_handle_t dev = bench_device(backend);
  if (!dev) {
    fprintf(stderr, "gpupool bench: no device of that backend\n");
    exit(1);
  }
  double t = now_ns(), u = thread_cpu_ns();
  for (long i = 0; i < cycles; i++) {
    void *p;
    CK(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, sizes[i % NSIZES], &p));
    CK(olMemFree(p));
  }
  t = now_ns() - t;
  cpu_ns = thread_cpu_ns() - u;
  CK(olShutDown());
  return t;
}

int main(int argc, char **argv) {
  if (argc != 5 || (strcmp(argv[1], "raw") && strcmp(argv[1], "ours")) ||
      (strcmp(argv[2], "cuda") && strcmp(argv[2], "amdgpu"))) {
    fprintf(stderr, "usage: gpupool raw|ours cuda|amdgpu LIBRARY CYCLES\n");
    return 2;
  }
  long cycles = atol(argv[4]);
  bool cuda = !strcmp(argv[2], "cuda");
  double t;
  if (!strcmp(argv[1], "raw")) {
    lib = dlopen(argv[3], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      fprintf(stderr, "gpupool bench: %s\n", dlerror());
      return 1;
    }
    t = cuda ? raw_cuda(cycles) : raw_hsa(cycles);
  } else {
    t = ours(cuda ? OL_PLATFORM_BACKEND_CUDA : OL_PLATFORM_BACKEND_AMDGPU, cycles);
  }
  printf("alloc_free_ns %.1f\nalloc_free_cpu_ns %.1f\n", t / (double)cycles, cpu_ns / (double)cycles);
  return 0;
}
