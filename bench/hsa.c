// AMDGPU backend benchmark: the operations of bench/cuda.c through the HSA
// runtime directly ("raw") and through liboffload-go ("ours"), on whatever
// the runtime library is: the real libhsa-runtime64 on an AMD GPU machine,
// or the runtime double of the tests (tests/drivers/fake_hsa.c), where the
// difference is the library's overhead per call.
//
// usage: hsa raw  RUNTIME.so IMAGE [ITERATIONS] [COPY_MIB] [KERNEL]
//        hsa ours -          IMAGE [ITERATIONS] [COPY_MIB] [KERNEL]
// (ours is linked with liboffload-go; OFFLOAD_HSA_LIBRARY picks its runtime)
// IMAGE holds a kernel without arguments, KERNEL (default "empty"). Prints
// the keys of bench/cuda.c. What raw does for each:
//   launch: a kernarg segment from the kernarg pool, one AQL dispatch packet
//           with a completion signal, the doorbell; sync waits for the
//           signal of the last packet
//   copy4k: hsa_amd_memory_async_copy of 4 KiB from a fine-grained host
//           buffer, each after the previous one (its signal as dependency)
//   event:  keeping the queue's last completion signal (an AQL queue has no
//           other event; liboffload-go's event is the same)
//   sync:   a wait on the last completion signal, which has completed
#define BENCH_OFFLOAD
#include "common.h"

#include <dlfcn.h>
#include <sched.h>

typedef struct {
  uint64_t handle;
} h_t; // hsa_agent_t, hsa_signal_t, hsa_amd_memory_pool_t, ... (one 64-bit handle)

static void *lib;
static void *sym(const char *name) {
  void *f = dlsym(lib, name);
  if (!f) {
    fprintf(stderr, "hsa bench: the runtime lacks %s\n", name);
    exit(1);
  }
  return f;
}
#define HSA(call)                                                              \
  do {                                                                         \
    uint32_t r_ = (call);                                                      \
    if (r_ != 0 && r_ != 1 /* HSA_STATUS_INFO_BREAK */) {                      \
      fprintf(stderr, "%s:%d: %s -> %#x\n", __FILE__, __LINE__, #call, r_);    \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

// HSA's enumerators, as the plugin uses them (plugins/amdgpu/driver.go)
enum { AGENT_INFO_DEVICE = 17, DEVICE_CPU = 0, DEVICE_GPU = 1 };
enum { POOL_SEGMENT = 0, POOL_FLAGS = 1, SEGMENT_GLOBAL = 0 };
enum { FLAG_KERNARG = 1, FLAG_FINE = 2, FLAG_COARSE = 4 };
enum { SYM_KERNARG_SIZE = 11, SYM_GROUP_SIZE = 13, SYM_PRIVATE_SIZE = 14, SYM_KERNEL_OBJECT = 22 };

typedef struct {
  uint16_t header, setup, workgroup_size[3], reserved0;
  uint32_t grid_size[3], private_segment_size, group_segment_size;
  uint64_t kernel_object, kernarg_address, reserved2, completion_signal;
} dispatch_packet;
typedef struct {
  uint32_t type, features;
  uint64_t base_address;
  h_t doorbell_signal;
  uint32_t size, reserved1;
  uint64_t id;
} hsa_queue;

static uint32_t (*agent_info)(h_t, uint32_t, void *);
static uint32_t (*pool_info)(h_t, uint32_t, void *);
static h_t cpu, gpu, dev_pool, host_pool, kernarg_pool;

static uint32_t find_agent(h_t a, void *data) {
  (void)data;
  uint32_t type;
  HSA(agent_info(a, AGENT_INFO_DEVICE, &type));
  if (type == DEVICE_CPU && !cpu.handle) cpu = a;
  if (type == DEVICE_GPU && !gpu.handle) gpu = a;
  return 0;
}

static uint32_t find_pool(h_t p, void *data) {
  uint32_t seg, flags;
  HSA(pool_info(p, POOL_SEGMENT, &seg));
  if (seg != SEGMENT_GLOBAL) return 0;
  HSA(pool_info(p, POOL_FLAGS, &flags));
  if (data == &gpu && (flags & FLAG_COARSE) && !dev_pool.handle) dev_pool = p;
  if (data == &cpu && (flags & FLAG_KERNARG) && !kernarg_pool.handle) kernarg_pool = p;
  if (data == &cpu && (flags & FLAG_FINE) && !(flags & FLAG_KERNARG) && !host_pool.handle) host_pool = p;
  return 0;
}

static const char *kernel_name = "empty";
enum { BATCH = BENCH_GPU_BATCH }; // operations per timed run, as bench_offload_ops
volatile uint64_t kept_signals[BATCH]; // the raw "events" (not static: kept by the compiler)

static hsa_queue *queue;
static uint64_t (*add_write_index)(const void *, uint64_t);
static uint64_t (*load_read_index)(const void *);
static void (*signal_store)(h_t, int64_t);
static int64_t (*signal_wait)(h_t, uint32_t, int64_t, uint64_t, uint32_t);
static uint64_t kernel_object;
static uint32_t kernarg_size, group_size, private_size;
static void *kernarg;

// dispatch puts one 1x1x1 dispatch of the kernel on the queue; done (0:
// none) is set to 0 when it has run.
static void dispatch(h_t done) {
  uint64_t idx = add_write_index(queue, 1);
  while (idx - load_read_index(queue) >= queue->size) sched_yield();
  dispatch_packet *p = (dispatch_packet *)(uintptr_t)(queue->base_address + (idx & (queue->size - 1)) * 64);
  p->setup = 1;
  p->workgroup_size[0] = p->workgroup_size[1] = p->workgroup_size[2] = 1;
  p->reserved0 = 0;
  p->grid_size[0] = p->grid_size[1] = p->grid_size[2] = 1;
  p->private_segment_size = private_size;
  p->group_segment_size = group_size;
  p->kernel_object = kernel_object;
  p->kernarg_address = (uint64_t)(uintptr_t)kernarg;
  p->reserved2 = 0;
  p->completion_signal = done.handle;
  // type KERNEL_DISPATCH, barrier bit, system-scope acquire and release
  __atomic_store_n(&p->header, (uint16_t)(2 | 1u << 8 | 2u << 9 | 2u << 11), __ATOMIC_RELEASE);
  signal_store(queue->doorbell_signal, (int64_t)idx);
}

// wait_zero waits until s reaches 0 (a completed packet or copy).
static void wait_zero(h_t s) {
  while (signal_wait(s, 2 /* LT */, 1, UINT64_MAX, 0 /* BLOCKED */) >= 1) {
  }
}

static void raw(const char *image, int iters, size_t bytes) {
  size_t isize;
  void *img = bench_read_file(image, &isize);
  agent_info = (uint32_t(*)(h_t, uint32_t, void *))sym("hsa_agent_get_info");
  pool_info = (uint32_t(*)(h_t, uint32_t, void *))sym("hsa_amd_memory_pool_get_info");
  add_write_index = (uint64_t(*)(const void *, uint64_t))sym("hsa_queue_add_write_index_relaxed");
  load_read_index = (uint64_t(*)(const void *))sym("hsa_queue_load_read_index_scacquire");
  signal_store = (void (*)(h_t, int64_t))sym("hsa_signal_store_screlease");
  signal_wait = (int64_t(*)(h_t, uint32_t, int64_t, uint64_t, uint32_t))sym("hsa_signal_wait_scacquire");
  uint32_t (*signal_create)(int64_t, uint32_t, const h_t *, h_t *) =
      (uint32_t(*)(int64_t, uint32_t, const h_t *, h_t *))sym("hsa_signal_create");
  uint32_t (*pool_alloc)(h_t, size_t, uint32_t, void **) =
      (uint32_t(*)(h_t, size_t, uint32_t, void **))sym("hsa_amd_memory_pool_allocate");
  uint32_t (*allow)(uint32_t, const h_t *, const uint32_t *, const void *) =
      (uint32_t(*)(uint32_t, const h_t *, const uint32_t *, const void *))sym("hsa_amd_agents_allow_access");
  uint32_t (*async_copy)(void *, h_t, const void *, h_t, size_t, uint32_t, const h_t *, h_t) =
      (uint32_t(*)(void *, h_t, const void *, h_t, size_t, uint32_t, const h_t *, h_t))sym("hsa_amd_memory_async_copy");
  void (*signal_store_relaxed)(h_t, int64_t) = (void (*)(h_t, int64_t))sym("hsa_signal_store_relaxed");

  HSA(((uint32_t(*)(void))sym("hsa_init"))());
  HSA(((uint32_t(*)(uint32_t(*)(h_t, void *), void *))sym("hsa_iterate_agents"))(find_agent, NULL));
  if (!gpu.handle || !cpu.handle) {
    fprintf(stderr, "hsa bench: no GPU agent (or no CPU agent)\n");
    exit(1);
  }
  uint32_t (*iterate_pools)(h_t, uint32_t (*)(h_t, void *), void *) =
      (uint32_t(*)(h_t, uint32_t(*)(h_t, void *), void *))sym("hsa_amd_agent_iterate_memory_pools");
  HSA(iterate_pools(gpu, find_pool, &gpu));
  HSA(iterate_pools(cpu, find_pool, &cpu));
  if (!dev_pool.handle || !kernarg_pool.handle || !host_pool.handle) {
    fprintf(stderr, "hsa bench: missing a memory pool (device, kernarg or fine-grained host)\n");
    exit(1);
  }

  // the kernel
  h_t reader, exe, ksym;
  HSA(((uint32_t(*)(const void *, size_t, h_t *))sym("hsa_code_object_reader_create_from_memory"))(img, isize, &reader));
  HSA(((uint32_t(*)(uint32_t, uint32_t, const char *, h_t *))sym("hsa_executable_create_alt"))(
      1 /* FULL */, 0 /* DEFAULT rounding */, NULL, &exe));
  HSA(((uint32_t(*)(h_t, h_t, h_t, const char *, void *))sym("hsa_executable_load_agent_code_object"))(
      exe, gpu, reader, NULL, NULL));
  HSA(((uint32_t(*)(h_t, const char *))sym("hsa_executable_freeze"))(exe, NULL));
  char kd[256];
  snprintf(kd, sizeof kd, "%s.kd", kernel_name);
  HSA(((uint32_t(*)(h_t, const char *, const h_t *, h_t *))sym("hsa_executable_get_symbol_by_name"))(exe, kd, &gpu,
                                                                                                       &ksym));
  uint32_t (*sym_info)(h_t, uint32_t, void *) = (uint32_t(*)(h_t, uint32_t, void *))sym("hsa_executable_symbol_get_info");
  HSA(sym_info(ksym, SYM_KERNEL_OBJECT, &kernel_object));
  HSA(sym_info(ksym, SYM_KERNARG_SIZE, &kernarg_size));
  HSA(sym_info(ksym, SYM_GROUP_SIZE, &group_size));
  HSA(sym_info(ksym, SYM_PRIVATE_SIZE, &private_size));
  HSA(pool_alloc(kernarg_pool, kernarg_size ? kernarg_size : 64, 0, &kernarg));
  memset(kernarg, 0, kernarg_size ? kernarg_size : 64);
  if (kernarg_size >= 256) {
    // code object v5's implicit arguments, the last 256 bytes: a 1x1x1
    // grid of one group (block counts u32 x 3, group sizes u16 x 3, and
    // the grid's dimensions, u16 at +64), as the plugin writes them
    char *h = (char *)kernarg + kernarg_size - 256;
    uint32_t one32 = 1;
    uint16_t one16 = 1;
    for (int d = 0; d < 3; d++) {
      memcpy(h + 4 * d, &one32, 4);
      memcpy(h + 12 + 2 * d, &one16, 2);
    }
    memcpy(h + 64, &one16, 2);
  }
  HSA(allow(1, &gpu, NULL, kernarg));

  // HSA_QUEUE_TYPE_MULTI, no callback, segment sizes left to the runtime
  HSA(((uint32_t(*)(h_t, uint32_t, uint32_t, void *, void *, uint32_t, uint32_t, hsa_queue **))sym("hsa_queue_create"))(
      gpu, 4096, 0, NULL, NULL, UINT32_MAX, UINT32_MAX, &queue));
  h_t done;
  HSA(signal_create(1, 0, NULL, &done));

  double *one = malloc(sizeof(double) * (size_t)iters);
  for (int i = 0; i < iters / 10 + iters; i++) { // the first tenth warms up
    double t = now_ns();
    signal_store_relaxed(done, 1);
    dispatch(done);
    wait_zero(done);
    if (i >= iters / 10) one[i - iters / 10] = now_ns() - t;
  }
  double t = now_ns();
  signal_store_relaxed(done, 1);
  for (int i = 0; i < iters; i++) dispatch(i == iters - 1 ? done : (h_t){0});
  wait_zero(done);
  double batch = now_ns() - t;
  BENCH_MEDIAN("launch_batch_submit_ns", iters, {
    signal_store_relaxed(done, 1);
    for (int i = 0; i < iters; i++) dispatch(i == iters - 1 ? done : (h_t){0});
    BENCH_SKIP(wait_zero(done));
  });

  void *host, *dev;
  HSA(pool_alloc(host_pool, bytes, 0, &host));
  HSA(pool_alloc(dev_pool, bytes, 0, &dev));
  h_t both[2] = {cpu, gpu};
  HSA(allow(2, both, NULL, host));
  memset(host, 1, bytes);
  t = now_ns();
  signal_store_relaxed(done, 1);
  HSA(async_copy(dev, gpu, host, cpu, bytes, 0, NULL, done));
  wait_zero(done);
  double h2d = now_ns() - t;
  t = now_ns();
  signal_store_relaxed(done, 1);
  HSA(async_copy(host, cpu, dev, gpu, bytes, 0, NULL, done));
  wait_zero(done);
  double d2h = now_ns() - t;
  bench_report(one, iters, batch, h2d, d2h, bytes);

  // 4 KiB copies in order: each depends on the signal of the one before
  static h_t sig[BATCH];
  for (int i = 0; i < BATCH; i++) HSA(signal_create(1, 0, NULL, &sig[i]));
  BENCH_MEDIAN("copy4k_ns", BATCH, {
    for (int i = 0; i < BATCH; i++) {
      signal_store_relaxed(sig[i], 1);
      HSA(async_copy(dev, gpu, host, cpu, 4096, i ? 1 : 0, i ? &sig[i - 1] : NULL, sig[i]));
    }
    BENCH_SKIP(wait_zero(sig[BATCH - 1]));
  });
  // an event is the queue's last completion signal, kept: no runtime call
  BENCH_MEDIAN("event_ns", BATCH, for (int i = 0; i < BATCH; i++) kept_signals[i] = done.handle);
  BENCH_MEDIAN("sync_ns", 10 * BATCH, for (int i = 0; i < 10 * BATCH; i++) wait_zero(done));
}

int main(int argc, char **argv) {
  if (argc < 4 || (strcmp(argv[1], "raw") && strcmp(argv[1], "ours"))) {
    fprintf(stderr, "usage: hsa raw|ours LIBRARY IMAGE [ITERATIONS] [COPY_MIB] [KERNEL]\n");
    return 2;
  }
  int iters = argc > 4 ? atoi(argv[4]) : 10000;
  size_t bytes = (size_t)(argc > 5 ? atoi(argv[5]) : 64) << 20;
  if (argc > 6) kernel_name = argv[6];
  if (!strcmp(argv[1], "raw")) {
    lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      fprintf(stderr, "hsa bench: %s\n", dlerror());
      return 1;
    }
    raw(argv[3], iters, bytes);
  } else {
    size_t isize;
    void *img = bench_read_file(argv[3], &isize);
    bench_offload_ops(OL_PLATFORM_BACKEND_AMDGPU, "hsa", img, isize, kernel_name, iters, bytes);
  }
  return 0;
}
