/*
 * fake_hsa_selftest.c - drives the ROCr double (fake_hsa.c) the way a
 * runtime user does, and checks what it does against values computed here.
 *
 * Build and run (plugins/amdgpu/fake_hsa_selftest_test.go does this):
 *   cc -shared -fPIC -Wall -Wextra -Werror -I include tests/drivers/fake_hsa.c \
 *      -o DIR/libfakehsa.so -ldl -lpthread
 *   for k in multiargs localmem_reduction global; do
 *     cc -O2 -fPIC -shared -I include tests/c/kernels/$k.c -o DIR/$k.so; done
 *   cc -Wall -Wextra -Werror -I include tests/drivers/fake_hsa_selftest.c \
 *      -o DIR/selftest DIR/libfakehsa.so -Wl,-rpath,DIR -lpthread
 *   DIR/selftest DIR
 * It prints one line per check and "PASS" at the end; it exits 1 on any
 * failure.
 *
 * The declarations below are the runtime's (hsa.h / hsa_ext_amd.h), written
 * here so that the test does not depend on ROCm headers.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int hsa_status_t;
typedef struct { uint64_t handle; } hsa_agent_t;
typedef struct { uint64_t handle; } hsa_amd_memory_pool_t;
typedef struct { uint64_t handle; } hsa_signal_t;
typedef struct { uint64_t handle; } hsa_isa_t;
typedef struct { uint64_t handle; } hsa_executable_t;
typedef struct { uint64_t handle; } hsa_code_object_reader_t;
typedef struct { uint64_t handle; } hsa_loaded_code_object_t;
typedef struct { uint64_t handle; } hsa_executable_symbol_t;
typedef int64_t hsa_signal_value_t;
typedef struct {
  uint32_t type, features;
  void *base_address;
  hsa_signal_t doorbell_signal;
  uint32_t size, reserved1;
  uint64_t id;
} hsa_queue_t;
typedef struct {
  uint16_t header, setup, workgroup_size_x, workgroup_size_y, workgroup_size_z, reserved0;
  uint32_t grid_size_x, grid_size_y, grid_size_z, private_segment_size, group_segment_size;
  uint64_t kernel_object;
  void *kernarg_address;
  uint64_t reserved2;
  hsa_signal_t completion_signal;
} hsa_kernel_dispatch_packet_t;
typedef struct {
  uint16_t header, reserved0;
  uint32_t reserved1;
  hsa_signal_t dep_signal[5];
  uint64_t reserved2;
  hsa_signal_t completion_signal;
} hsa_barrier_and_packet_t;
typedef struct {
  uint32_t size, type;
  void *agentBaseAddress, *hostBaseAddress;
  size_t sizeInBytes;
  void *userData;
  hsa_agent_t agentOwner;
  uint32_t global_flags;
} hsa_amd_pointer_info_t;

hsa_status_t hsa_init(void);
hsa_status_t hsa_shut_down(void);
hsa_status_t hsa_status_string(hsa_status_t, const char **);
hsa_status_t hsa_system_get_info(int, void *);
hsa_status_t hsa_iterate_agents(hsa_status_t (*)(hsa_agent_t, void *), void *);
hsa_status_t hsa_agent_get_info(hsa_agent_t, int, void *);
hsa_status_t hsa_agent_iterate_isas(hsa_agent_t, hsa_status_t (*)(hsa_isa_t, void *), void *);
hsa_status_t hsa_isa_get_info_alt(hsa_isa_t, int, void *);
hsa_status_t hsa_amd_agent_iterate_memory_pools(hsa_agent_t, hsa_status_t (*)(hsa_amd_memory_pool_t, void *), void *);
hsa_status_t hsa_amd_memory_pool_get_info(hsa_amd_memory_pool_t, int, void *);
hsa_status_t hsa_amd_agent_memory_pool_get_info(hsa_agent_t, hsa_amd_memory_pool_t, int, void *);
hsa_status_t hsa_amd_memory_pool_allocate(hsa_amd_memory_pool_t, size_t, uint32_t, void **);
hsa_status_t hsa_amd_memory_pool_free(void *);
hsa_status_t hsa_amd_agents_allow_access(uint32_t, const hsa_agent_t *, const uint32_t *, const void *);
hsa_status_t hsa_amd_memory_async_copy(void *, hsa_agent_t, const void *, hsa_agent_t, size_t, uint32_t,
                                       const hsa_signal_t *, hsa_signal_t);
hsa_status_t hsa_amd_memory_fill(void *, uint32_t, size_t);
hsa_status_t hsa_amd_memory_lock(void *, size_t, hsa_agent_t *, int, void **);
hsa_status_t hsa_amd_memory_unlock(void *);
hsa_status_t hsa_amd_pointer_info(const void *, hsa_amd_pointer_info_t *, void *(*)(size_t), uint32_t *,
                                  hsa_agent_t **);
hsa_status_t hsa_signal_create(hsa_signal_value_t, uint32_t, const hsa_agent_t *, hsa_signal_t *);
hsa_status_t hsa_signal_destroy(hsa_signal_t);
hsa_signal_value_t hsa_signal_load_scacquire(hsa_signal_t);
void hsa_signal_store_screlease(hsa_signal_t, hsa_signal_value_t);
void hsa_signal_store_relaxed(hsa_signal_t, hsa_signal_value_t);
hsa_signal_value_t hsa_signal_wait_scacquire(hsa_signal_t, int, hsa_signal_value_t, uint64_t, int);
hsa_status_t hsa_amd_signal_async_handler(hsa_signal_t, int, hsa_signal_value_t, bool (*)(hsa_signal_value_t, void *),
                                          void *);
hsa_status_t hsa_queue_create(hsa_agent_t, uint32_t, uint32_t, void (*)(hsa_status_t, hsa_queue_t *, void *), void *,
                              uint32_t, uint32_t, hsa_queue_t **);
hsa_status_t hsa_queue_destroy(hsa_queue_t *);
uint64_t hsa_queue_load_read_index_scacquire(const hsa_queue_t *);
uint64_t hsa_queue_add_write_index_screlease(const hsa_queue_t *, uint64_t);
uint64_t hsa_queue_load_write_index_relaxed(const hsa_queue_t *);
hsa_status_t hsa_code_object_reader_create_from_memory(const void *, size_t, hsa_code_object_reader_t *);
hsa_status_t hsa_code_object_reader_destroy(hsa_code_object_reader_t);
hsa_status_t hsa_executable_create_alt(int, int, const char *, hsa_executable_t *);
hsa_status_t hsa_executable_load_agent_code_object(hsa_executable_t, hsa_agent_t, hsa_code_object_reader_t,
                                                   const char *, hsa_loaded_code_object_t *);
hsa_status_t hsa_executable_freeze(hsa_executable_t, const char *);
hsa_status_t hsa_executable_get_symbol_by_name(hsa_executable_t, const char *, const hsa_agent_t *,
                                               hsa_executable_symbol_t *);
hsa_status_t hsa_executable_symbol_get_info(hsa_executable_symbol_t, int, void *);
hsa_status_t hsa_executable_destroy(hsa_executable_t);

int fake_hsa_init_calls(void);
long fake_hsa_live(const char *);
long fake_hsa_leaked(const char *);
int fake_hsa_peek(const void *, void *, size_t);
int fake_hsa_poke(void *, const void *, size_t);
int fake_hsa_errors(void);
const char *fake_hsa_last_error(void);
long fake_hsa_dispatches(void);
long fake_hsa_copies(void);
long fake_hsa_unordered(void);
typedef struct {
  uint64_t start, end;
} hsa_amd_profiling_dispatch_time_t;
hsa_status_t hsa_amd_profiling_set_profiler_enabled(hsa_queue_t *, int);
hsa_status_t hsa_amd_profiling_get_dispatch_time(hsa_agent_t, hsa_signal_t, hsa_amd_profiling_dispatch_time_t *);
hsa_status_t hsa_amd_svm_prefetch_async(void *, size_t, hsa_agent_t, uint32_t, const hsa_signal_t *, hsa_signal_t);
hsa_status_t hsa_system_get_info(int, void *);
long fake_hsa_prefetches(void);
int fake_hsa_prefetch_last(void);

/* values from hsa.h / hsa_ext_amd.h, independent of the double's */
enum {
  ST_OK = 0, ST_ERROR = 0x1000, ST_INVALID_ARGUMENT = 0x1001, ST_INVALID_QUEUE_CREATION = 0x1002,
  ST_INVALID_ALLOCATION = 0x1003, ST_INVALID_AGENT = 0x1004, ST_INVALID_SIGNAL = 0x1006,
  ST_OUT_OF_RESOURCES = 0x1008, ST_INVALID_PACKET_FORMAT = 0x1009, ST_NOT_INITIALIZED = 0x100B,
  ST_INVALID_ISA = 0x100F, ST_INVALID_CODE_OBJECT = 0x1010, ST_FROZEN_EXECUTABLE = 0x1012,
  ST_INVALID_SYMBOL_NAME = 0x1013,
};
enum { COND_EQ = 0, COND_NE = 1, COND_LT = 2, COND_GTE = 3 };
enum { PKT_INVALID = 1, PKT_DISPATCH = 2, PKT_BARRIER_AND = 3, PKT_BARRIER_OR = 5 };
#define HDR(type, barrier) ((uint16_t)((type) | ((barrier) << 8) | (2u << 9) | (2u << 11))) /* system scopes */

static int failures;
#define CHECK(cond, ...)                                                                                  \
  do {                                                                                                    \
    if (cond) {                                                                                           \
      printf("ok   - " __VA_ARGS__);                                                                     \
      printf("\n");                                                                                       \
    } else {                                                                                              \
      printf("FAIL - " __VA_ARGS__);                                                                     \
      printf("  [%s:%d: %s; double says: %s]\n", __FILE__, __LINE__, #cond, fake_hsa_last_error());     \
      failures++;                                                                                         \
    }                                                                                                     \
  } while (0)

/* Waits until COND holds, polling every millisecond for at most a second
 * (what follows checks whether it came true). */
#define WAIT_UNTIL(cond)                                                                                  \
  do {                                                                                                    \
    for (int w_ = 0; w_ < 1000 && !(cond); w_++)                                                          \
      usleep(1000);                                                                                       \
  } while (0)

static const char *kdir;
static hsa_agent_t cpu, gpu[2];
static hsa_amd_memory_pool_t kernarg_pool, coarse_pool[2], fine_pool[2], group_pool[2];
static int ngpu;

static hsa_status_t collect_agent(hsa_agent_t a, void *data) {
  (void)data;
  int type;
  hsa_agent_get_info(a, 17, &type);
  if (type == 0)
    cpu = a;
  else if (ngpu < 2)
    gpu[ngpu++] = a;
  return ST_OK;
}

static int pool_owner;
static hsa_status_t collect_pool(hsa_amd_memory_pool_t p, void *data) {
  (void)data;
  int segment;
  uint32_t flags = 0;
  hsa_amd_memory_pool_get_info(p, 0, &segment);
  if (segment == 0)
    hsa_amd_memory_pool_get_info(p, 1, &flags);
  if (pool_owner < 0) {
    if (segment == 0 && (flags & 1))
      kernarg_pool = p;
  } else if (segment == 3) {
    group_pool[pool_owner] = p;
  } else if (flags & 4) {
    coarse_pool[pool_owner] = p;
  } else if (flags & 2) {
    fine_pool[pool_owner] = p;
  }
  return ST_OK;
}

static hsa_status_t isa_name(hsa_isa_t isa, void *data) {
  uint32_t len = 0;
  if (hsa_isa_get_info_alt(isa, 0, &len) != ST_OK || len >= 128)
    return ST_ERROR;
  memset(data, 0, 128);
  return hsa_isa_get_info_alt(isa, 1, data);
}

static void discover(void) {
  ngpu = 0;
  memset(gpu, 0, sizeof gpu);
  hsa_iterate_agents(collect_agent, NULL);
  pool_owner = -1;
  hsa_amd_agent_iterate_memory_pools(cpu, collect_pool, NULL);
  for (int i = 0; i < ngpu; i++) {
    pool_owner = i;
    hsa_amd_agent_iterate_memory_pools(gpu[i], collect_pool, NULL);
  }
}

static void *xalloc(hsa_amd_memory_pool_t pool, size_t n) {
  void *p = NULL;
  hsa_status_t st = hsa_amd_memory_pool_allocate(pool, n, 0, &p);
  if (st != ST_OK) {
    printf("FAIL - allocate %zu bytes from pool %#lx: %#x\n", n, (unsigned long)pool.handle, st);
    failures++;
    exit(1);
  }
  return p;
}

static hsa_signal_t xsignal(int64_t v) {
  hsa_signal_t s = {0};
  if (hsa_signal_create(v, 0, NULL, &s) != ST_OK) {
    printf("FAIL - hsa_signal_create\n");
    exit(1);
  }
  return s;
}

/* waits up to ms milliseconds for the signal to leave `value` */
static int64_t settle(hsa_signal_t s, int64_t from, int ms) {
  return hsa_signal_wait_scacquire(s, COND_NE, from, (uint64_t)ms * 1000000u, 0);
}

/* ---- CPU access to device memory must fault ---- */
static sigjmp_buf fault_jmp;
static void on_fault(int sig) {
  (void)sig;
  siglongjmp(fault_jmp, 1);
}
static int cpu_faults(volatile uint32_t *p) {
  struct sigaction sa, old_segv, old_bus;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_fault;
  sigaction(SIGSEGV, &sa, &old_segv);
  sigaction(SIGBUS, &sa, &old_bus);
  int faulted = 1;
  if (sigsetjmp(fault_jmp, 1) == 0) {
    (void)*p;
    faulted = 0;
  }
  sigaction(SIGSEGV, &old_segv, NULL);
  sigaction(SIGBUS, &old_bus, NULL);
  return faulted;
}

/* ---- code objects: host shared objects dressed as AMDGPU ones ---- */
static void *read_kernel(const char *name, uint16_t machine, uint32_t flags, size_t *size) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.so", kdir, name);
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    printf("FAIL - cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n);
  if (fread(buf, 1, (size_t)n, f) != (size_t)n)
    exit(1);
  fclose(f);
  Elf64_Ehdr *e = (Elf64_Ehdr *)buf;
  e->e_machine = machine;
  e->e_flags = flags;
  e->e_ident[EI_OSABI] = 64;     /* ELFOSABI_AMDGPU_HSA */
  e->e_ident[EI_ABIVERSION] = 4; /* what clang-22 writes (code object v6) */
  *size = (size_t)n;
  return buf;
}

struct program {
  void *image;
  hsa_code_object_reader_t reader;
  hsa_executable_t exec;
};

static hsa_status_t load(struct program *p, const char *name, uint32_t flags, hsa_agent_t agent) {
  size_t size;
  p->image = read_kernel(name, 224, flags, &size);
  hsa_status_t st = hsa_code_object_reader_create_from_memory(p->image, size, &p->reader);
  if (st == ST_OK)
    st = hsa_executable_create_alt(1, 0, "", &p->exec);
  if (st == ST_OK)
    st = hsa_executable_load_agent_code_object(p->exec, agent, p->reader, "", NULL);
  if (st == ST_OK)
    st = hsa_executable_freeze(p->exec, "");
  return st;
}

static void unload(struct program *p) {
  hsa_executable_destroy(p->exec);
  hsa_code_object_reader_destroy(p->reader);
  free(p->image);
}

struct kernel {
  uint64_t object;
  uint32_t kernarg_size, align, group, private_size;
};

static hsa_status_t kernel(struct program *p, const char *name, hsa_agent_t agent, struct kernel *k) {
  hsa_executable_symbol_t s;
  hsa_status_t st = hsa_executable_get_symbol_by_name(p->exec, name, &agent, &s);
  if (st != ST_OK)
    return st;
  int type = -1;
  hsa_executable_symbol_get_info(s, 0, &type);
  if (type != 1)
    return ST_ERROR;
  hsa_executable_symbol_get_info(s, 22, &k->object);
  hsa_executable_symbol_get_info(s, 11, &k->kernarg_size);
  hsa_executable_symbol_get_info(s, 12, &k->align);
  hsa_executable_symbol_get_info(s, 13, &k->group);
  hsa_executable_symbol_get_info(s, 14, &k->private_size);
  return ST_OK;
}

/* a kernarg segment: explicit bytes, then the COv5 implicit arguments for
 * a 1-D grid */
static void *kernarg(const struct kernel *k, const void *args, size_t n, uint32_t grid, uint16_t wg, hsa_agent_t agent) {
  uint8_t *ka = xalloc(kernarg_pool, k->kernarg_size);
  hsa_amd_agents_allow_access(1, &agent, NULL, ka);
  memset(ka, 0, k->kernarg_size);
  memcpy(ka, args, n);
  uint8_t *impl = ka + k->kernarg_size - 256;
  uint32_t counts[3] = {grid / wg, 1, 1};
  uint16_t groups[3] = {wg, 1, 1}, dims = 1;
  memcpy(impl, counts, 12);
  memcpy(impl + 12, groups, 6);
  memcpy(impl + 64, &dims, 2);
  return ka;
}

/* writes a packet's body, then its header (the producer's protocol), then
 * rings the doorbell */
static uint64_t submit(hsa_queue_t *q, const void *packet, uint16_t header) {
  uint64_t idx = hsa_queue_add_write_index_screlease(q, 1);
  uint8_t *slot = (uint8_t *)q->base_address + (idx % q->size) * 64;
  memcpy(slot + 2, (const uint8_t *)packet + 2, 62);
  __atomic_store_n((uint16_t *)slot, header, __ATOMIC_RELEASE);
  hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)idx);
  return idx;
}

static uint64_t dispatch(hsa_queue_t *q, const struct kernel *k, void *ka, uint32_t grid, uint16_t wg, uint32_t dyn,
                         hsa_signal_t done) {
  hsa_kernel_dispatch_packet_t p;
  memset(&p, 0, sizeof p);
  p.setup = 1;
  p.workgroup_size_x = wg;
  p.workgroup_size_y = p.workgroup_size_z = 1;
  p.grid_size_x = grid;
  p.grid_size_y = p.grid_size_z = 1;
  p.group_segment_size = k->group + dyn;
  p.private_segment_size = k->private_size;
  p.kernel_object = k->object;
  p.kernarg_address = ka;
  p.completion_signal = done;
  return submit(q, &p, HDR(PKT_DISPATCH, 1));
}

static int queue_error_status, queue_error_calls, queue_error_on_caller_thread;
/* the error callback's count (it runs on another thread) */
#define ERROR_CALLS() __atomic_load_n(&queue_error_calls, __ATOMIC_SEQ_CST)
static pthread_t main_thread;
static void on_queue_error(hsa_status_t st, hsa_queue_t *q, void *data) {
  if (data != NULL) /* asked to destroy the queue from its own callback */
    *(hsa_status_t *)data = hsa_queue_destroy(q);
  queue_error_status = st;
  queue_error_on_caller_thread = pthread_equal(pthread_self(), main_thread);
  __atomic_fetch_add(&queue_error_calls, 1, __ATOMIC_SEQ_CST);
}

/* ---- async handler ---- */
struct handler_seen {
  int calls;
  int64_t value;
  int64_t loaded;        /* what an hsa call from the handler saw */
  int errors_before, errors_after;
  int on_main;
};
static hsa_signal_t handler_signal;
static bool on_signal(hsa_signal_value_t v, void *arg) {
  struct handler_seen *h = arg;
  h->calls++;
  h->value = v;
  h->on_main = pthread_equal(pthread_self(), main_thread);
  h->loaded = hsa_signal_load_scacquire(handler_signal);
  h->errors_before = fake_hsa_errors();
  /* a wait that would block is refused on the handler thread */
  hsa_signal_wait_scacquire(handler_signal, COND_EQ, 12345, UINT64_MAX, 0);
  h->errors_after = fake_hsa_errors();
  return false;
}

static void test_discovery(void) {
  CHECK(hsa_iterate_agents(collect_agent, NULL) == ST_NOT_INITIALIZED, "hsa_iterate_agents before hsa_init: NOT_INITIALIZED");
  void *p;
  CHECK(hsa_amd_memory_pool_allocate((hsa_amd_memory_pool_t){0x800}, 64, 0, &p) == ST_NOT_INITIALIZED,
        "allocate before hsa_init: NOT_INITIALIZED");
  CHECK(hsa_shut_down() == ST_NOT_INITIALIZED, "hsa_shut_down before hsa_init: NOT_INITIALIZED");
  int calls = fake_hsa_init_calls();
  CHECK(hsa_init() == ST_OK && hsa_init() == ST_OK, "hsa_init twice");
  CHECK(fake_hsa_init_calls() == calls + 2, "fake_hsa_init_calls counts both");
  CHECK(hsa_shut_down() == ST_OK, "hsa_shut_down (one reference left)");
  uint16_t major = 0;
  CHECK(hsa_system_get_info(0, &major) == ST_OK && major == 1, "still initialized after one of two shut downs");
  discover();
  CHECK(ngpu == 2 && cpu.handle == 0x100, "one CPU agent and two GPU agents (FAKE_HSA_GPUS=2)");
  char name[64], isa[128];
  hsa_agent_get_info(gpu[1], 0, name);
  CHECK(!strcmp(name, "gfx942"), "GPU 1 is gfx942 (FAKE_HSA_GFX=gfx90a,gfx942): %s", name);
  CHECK(hsa_agent_iterate_isas(gpu[0], isa_name, isa) == ST_OK && !strcmp(isa, "amdgcn-amd-amdhsa--gfx90a"),
        "GPU 0 ISA name: %s", isa);
  hsa_agent_iterate_isas(gpu[1], isa_name, isa);
  CHECK(!strcmp(isa, "amdgcn-amd-amdhsa--gfx942"), "GPU 1 ISA name: %s", isa);
  CHECK(kernarg_pool.handle && coarse_pool[0].handle && fine_pool[0].handle && group_pool[0].handle,
        "pools: CPU kernarg, GPU coarse, fine, group");
  int access = -1;
  hsa_amd_agent_memory_pool_get_info(gpu[0], kernarg_pool, 0, &access);
  CHECK(access == 2, "CPU kernarg pool for a GPU: DISALLOWED_BY_DEFAULT (%d)", access);
  hsa_amd_agent_memory_pool_get_info(cpu, coarse_pool[0], 0, &access);
  CHECK(access == 0, "device memory for the CPU: NEVER_ALLOWED (%d)", access);
  hsa_amd_agent_memory_pool_get_info(gpu[0], coarse_pool[0], 0, &access);
  CHECK(access == 1, "own device memory: ALLOWED_BY_DEFAULT (%d)", access);
  size_t size = 0;
  hsa_amd_memory_pool_get_info(coarse_pool[1], 2, &size);
  CHECK(size == (size_t)2 << 36, "GPU 1 coarse pool: 128 GiB");
}

static void test_memory(void) {
  uint32_t *dev = xalloc(coarse_pool[0], 4096);
  CHECK(cpu_faults(dev), "a CPU read of device memory faults");
  CHECK(hsa_amd_memory_fill(dev, 0xdeadbeef, 1024) == ST_OK, "fill 1024 words of device memory");
  uint32_t words[1024];
  fake_hsa_peek(dev, words, sizeof words);
  int ok = 1;
  for (int i = 0; i < 1024; i++)
    ok &= words[i] == 0xdeadbeef;
  CHECK(ok, "fill wrote the pattern");
  CHECK(hsa_amd_memory_fill((char *)dev + 2, 0, 1) == ST_INVALID_ARGUMENT, "fill of an unaligned pointer");
  CHECK(hsa_amd_memory_fill(dev, 0, 1025) == ST_INVALID_ALLOCATION, "fill past the end");
  uint32_t local[4];
  CHECK(hsa_amd_memory_fill(local, 0, 4) == ST_INVALID_ALLOCATION, "fill of memory the runtime does not know");

  hsa_amd_pointer_info_t info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  uint32_t n = 0;
  hsa_agent_t *list = NULL;
  CHECK(hsa_amd_pointer_info((char *)dev + 100, &info, malloc, &n, &list) == ST_OK && info.type == 1 &&
            info.agentBaseAddress == dev && info.sizeInBytes == 4096 && info.agentOwner.handle == gpu[0].handle &&
            info.global_flags == 4 && n == 1 && list[0].handle == gpu[0].handle,
        "pointer info of device memory: HSA, base, size, owner, coarse, GPU 0 only");
  free(list);
  uint32_t host[256];
  void *agent_ptr = NULL;
  CHECK(hsa_amd_memory_lock(host, sizeof host, &gpu[0], 1, &agent_ptr) == ST_OK && agent_ptr == host, "lock host memory");
  info.size = sizeof info;
  hsa_amd_pointer_info(host, &info, NULL, NULL, NULL);
  CHECK(info.type == 2 && info.sizeInBytes == sizeof host, "pointer info of locked memory: LOCKED");
  CHECK(fake_hsa_live("lock") == 1, "one lock alive");
  CHECK(hsa_amd_memory_unlock(host) == ST_OK && fake_hsa_live("lock") == 0, "unlock");
  CHECK(hsa_amd_memory_unlock(host) == ST_INVALID_ARGUMENT, "unlock of memory not locked");
  info.size = sizeof info;
  hsa_amd_pointer_info(host, &info, NULL, NULL, NULL);
  CHECK(info.type == 0, "pointer info of unknown memory: UNKNOWN");

  uint8_t *ka = xalloc(kernarg_pool, 256);
  CHECK(ka[0] == 0xcd && ka[255] == 0xcd, "fresh kernarg memory is not zeroed (0xCD)");
  ka[0] = 1; /* the CPU can touch it */
  uint32_t *fine = xalloc(fine_pool[0], 64);
  fine[0] = 7;
  CHECK(fine[0] == 7, "the CPU touches GPU fine-grained memory");
  CHECK(hsa_amd_agents_allow_access(1, &cpu, NULL, dev) == ST_INVALID_ARGUMENT,
        "allow_access of device memory to the CPU: refused");
  CHECK(hsa_amd_memory_pool_allocate(group_pool[0], 64, 0, (void **)&ka) == ST_INVALID_ALLOCATION,
        "no allocation from the group pool");
  long before = fake_hsa_live("alloc");
  CHECK(hsa_amd_memory_pool_free(fine) == ST_OK && hsa_amd_memory_pool_free(dev) == ST_OK &&
            hsa_amd_memory_pool_free(ka) == ST_OK && fake_hsa_live("alloc") == before - 3,
        "free");
  CHECK(hsa_amd_memory_pool_free(dev) == ST_INVALID_ARGUMENT, "double free refused");

  /* FAKE_HSA_MEMORY_BYTES bounds a GPU's live bytes ("bytes" counts the
   * pool allocations' pages); FAKE_HSA_ALLOC_US makes an allocation and a
   * free sleep */
  long bytes = fake_hsa_live("bytes");
  char cap[32];
  snprintf(cap, sizeof cap, "%ld", bytes + (1 << 20));
  setenv("FAKE_HSA_MEMORY_BYTES", cap, 1);
  void *m = NULL, *m2 = NULL;
  CHECK(hsa_amd_memory_pool_allocate(coarse_pool[0], 1 << 20, 0, &m) == ST_OK && fake_hsa_live("bytes") == bytes + (1 << 20),
        "1 MiB within the bound, counted");
  CHECK(hsa_amd_memory_pool_allocate(coarse_pool[0], (size_t)bytes + (1 << 20), 0, &m2) == 0x1008,
        "past the GPU's memory: HSA_STATUS_ERROR_OUT_OF_RESOURCES");
  CHECK(hsa_amd_memory_pool_free(m) == ST_OK && fake_hsa_live("bytes") == bytes, "freed, uncounted");
  unsetenv("FAKE_HSA_MEMORY_BYTES");
  setenv("FAKE_HSA_ALLOC_US", "20000", 1);
  struct timespec t0, t1, t2;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CHECK(hsa_amd_memory_pool_allocate(coarse_pool[0], 4096, 0, &m) == ST_OK, "allocate");
  clock_gettime(CLOCK_MONOTONIC, &t1);
  CHECK(hsa_amd_memory_pool_free(m) == ST_OK, "free");
  clock_gettime(CLOCK_MONOTONIC, &t2);
  unsetenv("FAKE_HSA_ALLOC_US");
  double ms_alloc = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
  double ms_free = (t2.tv_sec - t1.tv_sec) * 1e3 + (t2.tv_nsec - t1.tv_nsec) / 1e6;
  CHECK(ms_alloc >= 20 && ms_free >= 20, "FAKE_HSA_ALLOC_US=20000: allocation %.1f ms, free %.1f ms, want 20 each",
        ms_alloc, ms_free);
}

static void test_copies(void) {
  enum { N = 1000 };
  uint32_t *src = malloc(N * 4), *back = malloc(N * 4);
  for (int i = 0; i < N; i++)
    src[i] = (uint32_t)i * 2654435761u;
  memset(back, 0, N * 4);
  uint32_t *dev = xalloc(coarse_pool[0], N * 4);
  hsa_signal_t dep = xsignal(1), done = xsignal(1);
  long copies = fake_hsa_copies();
  /* host memory unknown to the runtime cannot be copied by a GPU */
  CHECK(hsa_amd_memory_async_copy(dev, gpu[0], src, cpu, N * 4, 0, NULL, done) == ST_INVALID_ARGUMENT,
        "H2D copy from unlocked host memory: INVALID_ARGUMENT");
  void *locked_src, *locked_back;
  hsa_amd_memory_lock(src, N * 4, &gpu[0], 1, &locked_src);
  hsa_amd_memory_lock(back, N * 4, NULL, 0, &locked_back);
  CHECK(hsa_amd_memory_async_copy(dev, gpu[0], locked_src, cpu, N * 4, 1, &dep, done) == ST_OK,
        "H2D copy with a dependency");
  CHECK(settle(done, 1, 50) == 1, "the copy waits for its dependency");
  CHECK(hsa_signal_destroy(done) == ST_INVALID_SIGNAL, "a signal a pending copy uses cannot be destroyed");
  hsa_signal_store_screlease(dep, 0);
  CHECK(hsa_signal_wait_scacquire(done, COND_EQ, 0, UINT64_MAX, 0) == 0, "completion signal decremented to 0");
  hsa_signal_store_relaxed(done, 1);
  CHECK(hsa_amd_memory_async_copy(locked_back, cpu, dev, gpu[0], N * 4, 0, NULL, done) == ST_OK, "D2H copy");
  hsa_signal_wait_scacquire(done, COND_LT, 1, UINT64_MAX, 0);
  CHECK(!memcmp(src, back, N * 4), "host -> device -> host round trip");

  /* a CPU-pool allocation needs allow_access before a GPU copies it */
  uint32_t *staging = xalloc(kernarg_pool, 4096);
  hsa_signal_store_relaxed(done, 1);
  CHECK(hsa_amd_memory_async_copy(dev, gpu[0], staging, cpu, 64, 0, NULL, done) == ST_INVALID_AGENT,
        "copy from a CPU-pool allocation not allowed to the GPU: INVALID_AGENT");
  CHECK(hsa_amd_agents_allow_access(1, &gpu[0], NULL, staging) == ST_OK, "allow_access");
  CHECK(hsa_amd_memory_async_copy(dev, gpu[0], staging, cpu, 64, 0, NULL, done) == ST_OK,
        "the same copy after allow_access");
  hsa_signal_wait_scacquire(done, COND_EQ, 0, UINT64_MAX, 0);
  /* GPU 1 cannot reach GPU 0's memory until allowed (peer) */
  uint32_t *dev1 = xalloc(coarse_pool[1], 64);
  hsa_signal_store_relaxed(done, 1);
  CHECK(hsa_amd_memory_async_copy(dev1, gpu[1], dev, gpu[0], 64, 0, NULL, done) == ST_INVALID_AGENT,
        "peer copy without access: INVALID_AGENT");
  hsa_amd_agents_allow_access(1, &gpu[0], NULL, dev1);
  CHECK(hsa_amd_memory_async_copy(dev1, gpu[1], dev, gpu[0], 64, 0, NULL, done) == ST_OK, "peer copy after access");
  hsa_signal_wait_scacquire(done, COND_EQ, 0, UINT64_MAX, 0);
  uint32_t peer[16];
  fake_hsa_peek(dev1, peer, 64);
  CHECK(!memcmp(peer, staging, 64), "peer copy moved the bytes");
  CHECK(fake_hsa_copies() == copies + 4, "four copies done (the refused ones not counted)");

  /* a negative dependency fails the copy */
  hsa_signal_store_relaxed(done, 1);
  hsa_signal_store_relaxed(dep, -1);
  hsa_amd_memory_async_copy(dev, gpu[0], locked_src, cpu, 4, 1, &dep, done);
  CHECK(hsa_signal_wait_scacquire(done, COND_LT, 1, UINT64_MAX, 0) < 0, "a negative dependency: completion < 0");
  /* memory freed before the copy ran: the copy fails (a GPU would fault) */
  uint32_t *gone = xalloc(kernarg_pool, 4096);
  hsa_amd_agents_allow_access(1, &gpu[0], NULL, gone);
  hsa_signal_store_relaxed(done, 1);
  hsa_signal_store_relaxed(dep, 1);
  int errors = fake_hsa_errors();
  CHECK(hsa_amd_memory_async_copy(dev, gpu[0], gone, gpu[0], 64, 1, &dep, done) == ST_OK, "copy from memory about to be freed");
  hsa_amd_memory_pool_free(gone);
  hsa_signal_store_relaxed(dep, 0);
  CHECK(hsa_signal_wait_scacquire(done, COND_LT, 1, UINT64_MAX, 0) == -1 && fake_hsa_errors() == errors + 1,
        "its source was freed before it ran: completion -1, error counted");
  /* FAKE_HSA_COPY_ERROR */
  setenv("FAKE_HSA_COPY_ERROR", "1", 1);
  hsa_signal_store_relaxed(done, 1);
  hsa_amd_memory_async_copy(dev, gpu[0], locked_src, cpu, 4, 0, NULL, done);
  unsetenv("FAKE_HSA_COPY_ERROR");
  CHECK(hsa_signal_wait_scacquire(done, COND_LT, 1, UINT64_MAX, 0) == -1, "FAKE_HSA_COPY_ERROR=1: completion -1");
  CHECK(fake_hsa_copies() == copies + 4, "failed copies are not counted as done");

  hsa_amd_memory_unlock(src);
  hsa_amd_memory_unlock(back);
  hsa_signal_destroy(dep);
  hsa_signal_destroy(done);
  hsa_amd_memory_pool_free(dev);
  hsa_amd_memory_pool_free(dev1);
  hsa_amd_memory_pool_free(staging);
  free(src);
  free(back);
  CHECK(fake_hsa_live("copy") == 0, "no copy pending");
}

static void test_signals(void) {
  hsa_signal_t s = xsignal(5);
  CHECK(hsa_signal_load_scacquire(s) == 5, "initial value");
  CHECK(hsa_signal_wait_scacquire(s, COND_EQ, 0, 20 * 1000000u, 0) == 5, "a wait with a timeout returns");
  struct handler_seen seen;
  memset(&seen, 0, sizeof seen);
  handler_signal = s;
  CHECK(hsa_amd_signal_async_handler(s, COND_LT, 1, on_signal, &seen) == ST_OK, "register an async handler");
  CHECK(fake_hsa_live("handler") == 1, "one handler alive");
  CHECK(hsa_signal_destroy(s) == ST_INVALID_SIGNAL, "a signal with a registered handler cannot be destroyed");
  usleep(20000);
  CHECK(seen.calls == 0, "the handler waits for its condition");
  hsa_signal_store_screlease(s, 0);
  WAIT_UNTIL(fake_hsa_live("handler") == 0);
  CHECK(seen.calls == 1 && seen.value == 0 && !seen.on_main, "the handler ran once on another thread with value 0");
  CHECK(seen.loaded == 0, "an hsa call from the handler works");
  CHECK(seen.errors_after == seen.errors_before + 1, "a blocking wait on the handler thread is refused and counted");
  CHECK(fake_hsa_live("handler") == 0, "returning false unregistered it");
  CHECK(hsa_signal_destroy(s) == ST_OK && hsa_signal_destroy(s) == ST_INVALID_SIGNAL, "destroy, then a stale handle");
}

static int kept_calls;
#define KEPT_CALLS() __atomic_load_n(&kept_calls, __ATOMIC_SEQ_CST)
static bool keep_until_zero(hsa_signal_value_t v, void *arg) {
  (void)arg;
  __atomic_fetch_add(&kept_calls, 1, __ATOMIC_SEQ_CST);
  return v != 0;
}

static void test_queues(void) {
  hsa_queue_t *q = NULL;
  CHECK(hsa_queue_create(gpu[0], 100, 0, NULL, NULL, UINT32_MAX, UINT32_MAX, &q) == ST_INVALID_ARGUMENT,
        "a queue size that is not a power of 2");
  CHECK(hsa_queue_create(cpu, 64, 0, NULL, NULL, UINT32_MAX, UINT32_MAX, &q) == ST_INVALID_QUEUE_CREATION,
        "no queue on the CPU agent");
  main_thread = pthread_self();
  CHECK(hsa_queue_create(gpu[0], 64, 0, on_queue_error, NULL, UINT32_MAX, UINT32_MAX, &q) == ST_OK && q->size == 64 &&
            q->features == 1 && q->base_address != NULL,
        "create a queue of 64 packets");
  CHECK(((uint16_t *)q->base_address)[0] == PKT_INVALID && ((uint16_t *)q->base_address)[63 * 32] == PKT_INVALID,
        "the ring's headers start INVALID");
  hsa_signal_t dep = xsignal(1), done = xsignal(1);
  hsa_barrier_and_packet_t b;
  memset(&b, 0, sizeof b);
  b.dep_signal[2] = dep;
  b.completion_signal = done;
  uint64_t idx = submit(q, &b, HDR(PKT_BARRIER_AND, 1));
  CHECK(idx == 0, "first packet at index 0");
  CHECK(settle(done, 1, 50) == 1 && hsa_queue_load_read_index_scacquire(q) == 0, "the barrier waits for its dependency");
  hsa_signal_store_screlease(dep, 0);
  CHECK(hsa_signal_wait_scacquire(done, COND_EQ, 0, UINT64_MAX, 0) == 0, "barrier-AND completed");
  CHECK(hsa_queue_load_read_index_scacquire(q) == 1 && ((uint16_t *)q->base_address)[0] == PKT_INVALID,
        "read index advanced, header back to INVALID");

  /* a packet whose header is not written yet is not processed, even when
   * the doorbell is rung */
  hsa_signal_store_relaxed(done, 1);
  uint64_t i2 = hsa_queue_add_write_index_screlease(q, 1);
  uint8_t *slot = (uint8_t *)q->base_address + (i2 % q->size) * 64;
  memcpy(slot + 2, (uint8_t *)&b + 2, 62);
  hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)i2);
  CHECK(settle(done, 1, 30) == 1, "an INVALID header is not processed");
  long unordered = fake_hsa_unordered();
  __atomic_store_n((uint16_t *)slot, HDR(PKT_BARRIER_AND, 0), __ATOMIC_RELEASE);
  CHECK(hsa_signal_wait_scacquire(done, COND_EQ, 0, 2000 * 1000000u, 0) == 0, "processed once the header is written");
  CHECK(fake_hsa_unordered() == unordered + 1, "a packet without the barrier bit is counted");

  /* FAKE_HSA_QUEUE_STUCK */
  setenv("FAKE_HSA_QUEUE_STUCK", "1", 1);
  hsa_signal_store_relaxed(done, 1);
  submit(q, &b, HDR(PKT_BARRIER_AND, 1));
  unsetenv("FAKE_HSA_QUEUE_STUCK");
  CHECK(settle(done, 1, 50) == 1, "FAKE_HSA_QUEUE_STUCK=1: the queue does not drain");
  CHECK(hsa_queue_destroy(q) == ST_OK, "destroy a stuck queue");

  /* an unsupported packet type fails the queue */
  CHECK(hsa_queue_create(gpu[0], 64, 0, on_queue_error, NULL, UINT32_MAX, UINT32_MAX, &q) == ST_OK, "a new queue");
  int errors = fake_hsa_errors();
  hsa_signal_store_relaxed(done, 1);
  submit(q, &b, HDR(PKT_BARRIER_OR, 1));
  WAIT_UNTIL(ERROR_CALLS() != 0);
  CHECK(ERROR_CALLS() == 1 && queue_error_status == ST_INVALID_PACKET_FORMAT && !queue_error_on_caller_thread,
        "a barrier-OR packet: the callback hears INVALID_PACKET_FORMAT on the runtime's thread");
  CHECK(fake_hsa_errors() == errors + 1, "the queue error is counted");
  hsa_queue_destroy(q);

  /* a callback may destroy its queue */
  hsa_status_t destroyed = -1;
  __atomic_store_n(&queue_error_calls, 0, __ATOMIC_SEQ_CST);
  CHECK(hsa_queue_create(gpu[0], 64, 0, on_queue_error, &destroyed, UINT32_MAX, UINT32_MAX, &q) == ST_OK, "a new queue");
  submit(q, &b, HDR(0, 1)); /* vendor-specific: unsupported */
  WAIT_UNTIL(ERROR_CALLS() != 0);
  CHECK(ERROR_CALLS() == 1 && destroyed == ST_OK && fake_hsa_live("queue") == 0,
        "the error callback destroyed its own queue");

  /* a handler returning true stays registered */
  hsa_signal_store_relaxed(done, 3);
  CHECK(hsa_amd_signal_async_handler(done, COND_LT, 3, keep_until_zero, NULL) == ST_OK, "a handler that keeps itself");
  for (int v = 2; v >= 0; v--) {
    hsa_signal_store_screlease(done, v);
    WAIT_UNTIL(KEPT_CALLS() >= 3 - v);
  }
  WAIT_UNTIL(fake_hsa_live("handler") == 0);
  CHECK(KEPT_CALLS() >= 3 && fake_hsa_live("handler") == 0, "it ran for values 2, 1, 0 (%d calls) and left at 0",
        KEPT_CALLS());
  hsa_signal_destroy(dep);
  hsa_signal_destroy(done);
  CHECK(fake_hsa_live("queue") == 0, "no queue alive");
}

struct multiargs_args {
  uint8_t small;
  int16_t neg;
  uint32_t *out;
  double scale;
  uint64_t big;
  float frac;
  int32_t *out2;
  uint32_t count;
};

static void test_kernels(void) {
  struct program p, wrong;
  size_t size;
  /* code object checks */
  CHECK(load(&wrong, "multiargs", 0x53f, gpu[1]) == ST_INVALID_ISA, "a gfx90a code object on a gfx942 agent: INVALID_ISA");
  unload(&wrong);
  CHECK(load(&wrong, "multiargs", 0x73f, gpu[0]) == ST_OK, "xnack on (0x73f) on an agent with no xnack setting");
  unload(&wrong);
  void *junk = calloc(1, 4096);
  hsa_code_object_reader_t r;
  hsa_executable_t e;
  hsa_code_object_reader_create_from_memory(junk, 4096, &r);
  hsa_executable_create_alt(1, 0, "", &e);
  CHECK(hsa_executable_load_agent_code_object(e, gpu[0], r, "", NULL) == ST_INVALID_CODE_OBJECT,
        "bytes that are not an ELF: INVALID_CODE_OBJECT");
  void *host = read_kernel("multiargs", EM_X86_64, 0, &size);
  hsa_code_object_reader_destroy(r);
  hsa_code_object_reader_create_from_memory(host, size, &r);
  CHECK(hsa_executable_load_agent_code_object(e, gpu[0], r, "", NULL) == ST_INVALID_CODE_OBJECT,
        "a host ELF: INVALID_CODE_OBJECT");
  setenv("FAKE_HSA_LOAD_RESULT", "0x1010", 1);
  free(host);
  host = read_kernel("multiargs", 224, 0x53f, &size);
  hsa_code_object_reader_destroy(r);
  hsa_code_object_reader_create_from_memory(host, size, &r);
  CHECK(hsa_executable_load_agent_code_object(e, gpu[0], r, "", NULL) == 0x1010, "FAKE_HSA_LOAD_RESULT=0x1010");
  unsetenv("FAKE_HSA_LOAD_RESULT");
  hsa_executable_destroy(e);
  hsa_code_object_reader_destroy(r);
  free(host);
  free(junk);

  CHECK(load(&p, "multiargs", 0x53f, gpu[0]) == ST_OK, "load multiargs dressed for gfx90a and freeze");
  CHECK(hsa_executable_load_agent_code_object(p.exec, gpu[0], p.reader, "", NULL) == ST_FROZEN_EXECUTABLE,
        "loading into a frozen executable");
  struct kernel k;
  CHECK(kernel(&p, "multiargs.kd", gpu[0], &k) == ST_OK && k.object != 0, "symbol multiargs.kd is a kernel");
  CHECK(k.kernarg_size == 312 && k.align == 8 && k.group == 0 && k.private_size == 0,
        "kernarg segment 312 (56 explicit + 256), alignment 8, no static group or private memory (%u %u %u %u)",
        k.kernarg_size, k.align, k.group, k.private_size);
  hsa_executable_symbol_t s;
  CHECK(hsa_executable_get_symbol_by_name(p.exec, "multiargs", &gpu[0], &s) == ST_INVALID_SYMBOL_NAME,
        "the kernel's function is not a symbol (only multiargs.kd)");
  CHECK(hsa_executable_get_symbol_by_name(p.exec, "multiargs.kd", &gpu[1], &s) == ST_INVALID_SYMBOL_NAME,
        "no symbol for an agent the code object was not loaded for");

  enum { GRID = 256, WG = 64 };
  uint32_t *out = xalloc(coarse_pool[0], GRID * 4);
  int32_t *out2 = xalloc(coarse_pool[0], GRID * 4);
  struct multiargs_args a = {.small = 3, .neg = -7, .out = out, .scale = 2.5, .big = (uint64_t)9 << 32,
                             .frac = 0.75f, .out2 = out2, .count = GRID - 6};
  hsa_amd_memory_fill(out, 0xffffffffu, GRID);
  hsa_amd_memory_fill(out2, 0xffffffffu, GRID);
  hsa_queue_t *q;
  hsa_queue_create(gpu[0], 64, 0, on_queue_error, NULL, UINT32_MAX, UINT32_MAX, &q);
  void *ka = kernarg(&k, &a, sizeof a, GRID, WG, gpu[0]);
  hsa_signal_t done = xsignal(1);
  long before = fake_hsa_dispatches();
  dispatch(q, &k, ka, GRID, WG, 0, done);
  CHECK(hsa_signal_wait_scacquire(done, COND_EQ, 0, UINT64_MAX, 0) == 0, "multiargs dispatch completed");
  CHECK(fake_hsa_dispatches() == before + 1, "one kernel ran");
  uint32_t got[GRID];
  int32_t got2[GRID];
  fake_hsa_peek(out, got, sizeof got);
  fake_hsa_peek(out2, got2, sizeof got2);
  int ok = 1;
  for (uint32_t i = 0; i < GRID; i++) {
    /* 3 - 7 + 2.5 i + 9 + 3 */
    uint32_t want = i < GRID - 6 ? (uint32_t)(8.0 + 2.5 * i) : 0xffffffffu;
    int32_t want2 = i < GRID - 6 ? -7 * (int32_t)(i + 1) : -1;
    ok &= got[i] == want && got2[i] == want2;
  }
  CHECK(ok, "multiargs wrote every work-item's values over the whole grid (%u %d ... %u)", got[0], got2[0], got[249]);

  /* a wrong implicit argument fails the queue */
  int errors = fake_hsa_errors();
  __atomic_store_n(&queue_error_calls, 0, __ATOMIC_SEQ_CST);
  uint8_t *impl = (uint8_t *)ka + k.kernarg_size - 256;
  uint16_t wrong_wg = 32;
  memcpy(impl + 12, &wrong_wg, 2);
  hsa_signal_store_relaxed(done, 1);
  dispatch(q, &k, ka, GRID, WG, 0, done);
  WAIT_UNTIL(ERROR_CALLS() != 0);
  CHECK(ERROR_CALLS() == 1 && queue_error_status == ST_INVALID_ARGUMENT && fake_hsa_errors() == errors + 1 &&
            strstr(fake_hsa_last_error(), "hidden_group_size_x"),
        "a wrong hidden_group_size_x fails the queue: %s", fake_hsa_last_error());
  CHECK(hsa_signal_load_scacquire(done) == 1, "the failed dispatch's signal is untouched");
  hsa_queue_destroy(q);
  hsa_amd_memory_pool_free(ka);

  /* kernarg memory not allowed to the agent */
  hsa_queue_create(gpu[0], 64, 0, on_queue_error, NULL, UINT32_MAX, UINT32_MAX, &q);
  uint8_t *ka2 = xalloc(kernarg_pool, 312); /* not allowed to GPU 0 */
  __atomic_store_n(&queue_error_calls, 0, __ATOMIC_SEQ_CST);
  hsa_signal_store_relaxed(done, 1);
  dispatch(q, &k, ka2, GRID, WG, 0, done);
  WAIT_UNTIL(ERROR_CALLS() != 0);
  CHECK(ERROR_CALLS() == 1 && queue_error_status == 41, "kernarg memory not allowed to the GPU: MEMORY_APERTURE_VIOLATION");
  hsa_queue_destroy(q);
  hsa_amd_memory_pool_free(ka2);
  hsa_amd_memory_pool_free(out);
  hsa_amd_memory_pool_free(out2);
  unload(&p);

  /* barriers and dynamic group memory: a reduction per group */
  CHECK(load(&p, "localmem_reduction", 0x53f, gpu[0]) == ST_OK, "load localmem_reduction");
  kernel(&p, "localmem_reduction.kd", gpu[0], &k);
  enum { RG = 512, RW = 128 };
  uint32_t in[RG], sums[RG / RW], want[RG / RW] = {0};
  for (uint32_t i = 0; i < RG; i++) {
    in[i] = i * 7u + 1u;
    want[i / RW] += in[i];
  }
  uint32_t *din = xalloc(coarse_pool[0], sizeof in), *dout = xalloc(coarse_pool[0], sizeof sums);
  fake_hsa_poke(din, in, sizeof in);
  struct { const uint32_t *in; uint32_t *out; } ra = {din, dout};
  hsa_queue_create(gpu[0], 64, 0, on_queue_error, NULL, UINT32_MAX, UINT32_MAX, &q);
  ka = kernarg(&k, &ra, sizeof ra, RG, RW, gpu[0]);
  hsa_signal_store_relaxed(done, 1);
  dispatch(q, &k, ka, RG, RW, RW * 4, done);
  CHECK(hsa_signal_wait_scacquire(done, COND_EQ, 0, UINT64_MAX, 0) == 0, "reduction dispatch completed");
  fake_hsa_peek(dout, sums, sizeof sums);
  CHECK(!memcmp(sums, want, sizeof sums), "each group's sum (barriers and %u bytes of dynamic group memory): %u %u %u %u",
        RW * 4, sums[0], sums[1], sums[2], sums[3]);
  hsa_amd_memory_pool_free(ka);
  hsa_amd_memory_pool_free(din);
  hsa_amd_memory_pool_free(dout);
  unload(&p);

  /* a global variable: a symbol, copied to and from by the GPU */
  CHECK(load(&p, "global", 0x53f, gpu[0]) == ST_OK, "load global");
  CHECK(hsa_executable_get_symbol_by_name(p.exec, "global", &gpu[0], &s) == ST_OK, "symbol global");
  int type = -1;
  uint64_t addr = 0;
  uint32_t vsize = 0;
  hsa_executable_symbol_get_info(s, 0, &type);
  hsa_executable_symbol_get_info(s, 21, &addr);
  hsa_executable_symbol_get_info(s, 9, &vsize);
  CHECK(type == 0 && addr != 0 && vsize == 256, "a VARIABLE of 256 bytes");
  uint32_t values[64], readback[64];
  for (int i = 0; i < 64; i++)
    values[i] = 1000u + (uint32_t)i;
  void *lv, *lr;
  hsa_amd_memory_lock(values, sizeof values, &gpu[0], 1, &lv);
  hsa_amd_memory_lock(readback, sizeof readback, &gpu[0], 1, &lr);
  hsa_signal_store_relaxed(done, 1);
  CHECK(hsa_amd_memory_async_copy((void *)(uintptr_t)addr, gpu[0], lv, cpu, sizeof values, 0, NULL, done) == ST_OK,
        "copy into the global");
  hsa_signal_wait_scacquire(done, COND_EQ, 0, UINT64_MAX, 0);
  struct kernel kr;
  kernel(&p, "read.kd", gpu[0], &kr);
  uint32_t *dres = xalloc(coarse_pool[0], sizeof readback);
  struct { uint32_t *out; } rda = {dres};
  ka = kernarg(&kr, &rda, sizeof rda, 64, 64, gpu[0]);
  hsa_signal_store_relaxed(done, 1);
  dispatch(q, &kr, ka, 64, 64, 0, done);
  hsa_signal_wait_scacquire(done, COND_EQ, 0, UINT64_MAX, 0);
  hsa_signal_store_relaxed(done, 1);
  hsa_amd_memory_async_copy(lr, cpu, dres, gpu[0], sizeof readback, 0, NULL, done);
  hsa_signal_wait_scacquire(done, COND_EQ, 0, UINT64_MAX, 0);
  CHECK(!memcmp(values, readback, sizeof values), "the kernel read what was copied into the global");
  hsa_amd_memory_unlock(values);
  hsa_amd_memory_unlock(readback);
  hsa_amd_memory_pool_free(ka);
  hsa_amd_memory_pool_free(dres);
  hsa_queue_destroy(q);
  hsa_signal_destroy(done);
  unload(&p);
  CHECK(fake_hsa_live("executable") == 0 && fake_hsa_live("reader") == 0, "no executable or reader alive");
}

static void test_faults_and_leaks(void) {
  /* leave one of each alive: the final shut down counts them */
  void *leak = xalloc(coarse_pool[0], 64);
  (void)leak;
  hsa_signal_t s = xsignal(1);
  hsa_queue_t *q;
  hsa_queue_create(gpu[0], 64, 0, NULL, NULL, UINT32_MAX, UINT32_MAX, &q);
  struct handler_seen seen;
  hsa_amd_signal_async_handler(s, COND_EQ, 42, on_signal, &seen);
  setenv("FAKE_HSA_ALLOC_RESULT", "0x1008", 1);
  void *p;
  CHECK(hsa_amd_memory_pool_allocate(coarse_pool[0], 64, 0, &p) == ST_OUT_OF_RESOURCES, "FAKE_HSA_ALLOC_RESULT=0x1008");
  unsetenv("FAKE_HSA_ALLOC_RESULT");
  setenv("FAKE_HSA_SHUTDOWN_RESULT", "0x1000", 1);
  CHECK(hsa_shut_down() == ST_ERROR, "FAKE_HSA_SHUTDOWN_RESULT=0x1000 on the final shut down");
  unsetenv("FAKE_HSA_SHUTDOWN_RESULT");
  CHECK(hsa_signal_create(0, 0, NULL, &s) == ST_NOT_INITIALIZED, "after the final shut down: NOT_INITIALIZED");
  CHECK(fake_hsa_leaked("alloc") == 1 && fake_hsa_leaked("signal") == 1 && fake_hsa_leaked("queue") == 1 &&
            fake_hsa_leaked("handler") == 1 && fake_hsa_leaked("executable") == 0,
        "leaks counted at the final shut down: alloc %ld signal %ld queue %ld handler %ld",
        fake_hsa_leaked("alloc"), fake_hsa_leaked("signal"), fake_hsa_leaked("queue"), fake_hsa_leaked("handler"));
  CHECK(fake_hsa_live("alloc") == 1, "fake_hsa_live includes the leaked");

  setenv("FAKE_HSA_INIT_RESULT", "0x1008", 1);
  CHECK(hsa_init() == ST_OUT_OF_RESOURCES, "FAKE_HSA_INIT_RESULT=0x1008");
  unsetenv("FAKE_HSA_INIT_RESULT");
  uint16_t major;
  CHECK(hsa_system_get_info(0, &major) == ST_NOT_INITIALIZED, "a failed hsa_init takes no reference");

  setenv("FAKE_HSA_GPUS", "0", 1);
  CHECK(hsa_init() == ST_OK, "hsa_init with FAKE_HSA_GPUS=0");
  discover();
  CHECK(ngpu == 0 && cpu.handle == 0x100, "FAKE_HSA_GPUS=0: the CPU agent only");
  setenv("FAKE_HSA_ITERATE_RESULT", "0x1000", 1);
  CHECK(hsa_iterate_agents(collect_agent, NULL) == ST_ERROR, "FAKE_HSA_ITERATE_RESULT=0x1000");
  unsetenv("FAKE_HSA_ITERATE_RESULT");
  CHECK(hsa_shut_down() == ST_OK, "final shut down");

  /* an agent with a definite xnack setting refuses images with the other */
  setenv("FAKE_HSA_GPUS", "1", 1);
  setenv("FAKE_HSA_GFX", "gfx90a:sramecc+:xnack-", 1);
  hsa_init();
  discover();
  char isa[128];
  hsa_agent_iterate_isas(gpu[0], isa_name, isa);
  CHECK(!strcmp(isa, "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"), "ISA name with features: %s", isa);
  struct program prog;
  CHECK(load(&prog, "multiargs", 0x73f, gpu[0]) == ST_INVALID_ISA, "xnack on (0x73f) on an xnack- agent: INVALID_ISA");
  unload(&prog);
  CHECK(load(&prog, "multiargs", 0x63f, gpu[0]) == ST_OK, "xnack off (0x63f) on an xnack- agent");
  unload(&prog);
  CHECK(load(&prog, "multiargs", 0x93f, gpu[0]) == ST_INVALID_ISA, "sramecc off (0x800) on a sramecc+ agent: INVALID_ISA");
  unload(&prog);
  CHECK(hsa_shut_down() == ST_OK, "final shut down");
  CHECK(fake_hsa_leaked("alloc") == 1 && fake_hsa_leaked("signal") == 1, "a clean cycle leaks nothing more");
}

/* A profiling queue stamps each packet's completion signal with when the
 * packet started and ended (system timestamps); another queue leaves it
 * alone. SVM prefetches wait for their dependency, then count. */
static void test_profiling_and_prefetch(void) {
  hsa_queue_t *q = NULL, *plain = NULL;
  CHECK(hsa_amd_profiling_set_profiler_enabled(NULL, 1) == 0x1007, "profiling on no queue: INVALID_QUEUE");
  CHECK(hsa_queue_create(gpu[0], 64, 0, NULL, NULL, UINT32_MAX, UINT32_MAX, &q) == ST_OK &&
            hsa_queue_create(gpu[0], 64, 0, NULL, NULL, UINT32_MAX, UINT32_MAX, &plain) == ST_OK,
        "two queues");
  CHECK(hsa_amd_profiling_set_profiler_enabled(q, 1) == ST_OK, "profiling on one of them");
  hsa_signal_t dep = xsignal(1), done = xsignal(1), other = xsignal(1);
  hsa_barrier_and_packet_t b;
  memset(&b, 0, sizeof b);
  b.dep_signal[0] = dep;
  b.completion_signal = done;
  submit(q, &b, HDR(PKT_BARRIER_AND, 1));
  memset(&b, 0, sizeof b);
  b.completion_signal = other;
  submit(plain, &b, HDR(PKT_BARRIER_AND, 1));
  CHECK(hsa_signal_wait_scacquire(other, COND_EQ, 0, UINT64_MAX, 0) == 0, "the plain queue's barrier completed");
  usleep(10000);
  uint64_t released = 0;
  hsa_system_get_info(2 /* TIMESTAMP */, &released);
  hsa_signal_store_screlease(dep, 0);
  CHECK(hsa_signal_wait_scacquire(done, COND_EQ, 0, UINT64_MAX, 0) == 0, "the profiled barrier completed");
  hsa_amd_profiling_dispatch_time_t t = {1, 1};
  CHECK(hsa_amd_profiling_get_dispatch_time(gpu[0], done, &t) == ST_OK && t.start > 0 && t.end >= released &&
            t.end >= t.start,
        "its end is after its dependency was released (start %llu, end %llu, released %llu)",
        (unsigned long long)t.start, (unsigned long long)t.end, (unsigned long long)released);
  CHECK(hsa_amd_profiling_get_dispatch_time(gpu[0], other, &t) == ST_OK && t.start == 0 && t.end == 0,
        "a packet of a queue without profiling leaves no times");
  CHECK(hsa_amd_profiling_get_dispatch_time(cpu, done, &t) == ST_INVALID_AGENT, "dispatch times of the CPU agent");
  CHECK(hsa_amd_profiling_get_dispatch_time(gpu[0], (hsa_signal_t){12345}, &t) == ST_INVALID_SIGNAL, "of no signal");
  CHECK(hsa_amd_profiling_get_dispatch_time(gpu[0], done, NULL) == ST_INVALID_ARGUMENT, "into NULL");
  hsa_queue_destroy(q);
  hsa_queue_destroy(plain);

  static char range[8192];
  long before = fake_hsa_prefetches();
  hsa_signal_store_relaxed(dep, 1);
  hsa_signal_store_relaxed(done, 1);
  CHECK(hsa_amd_svm_prefetch_async(range, sizeof range, (hsa_agent_t){0x999}, 0, NULL, done) == ST_INVALID_AGENT,
        "a prefetch to no agent");
  CHECK(hsa_amd_svm_prefetch_async(range, sizeof range, gpu[1], 1, &(hsa_signal_t){12345}, done) == ST_INVALID_SIGNAL,
        "a prefetch after no signal");
  CHECK(hsa_amd_svm_prefetch_async(range, sizeof range, gpu[1], 1, &dep, done) == ST_OK, "a prefetch to GPU 1");
  CHECK(settle(done, 1, 30) == 1 && fake_hsa_prefetches() == before, "it waits for its dependency");
  hsa_signal_store_screlease(dep, 0);
  CHECK(hsa_signal_wait_scacquire(done, COND_EQ, 0, UINT64_MAX, 0) == 0 && fake_hsa_prefetches() == before + 1 &&
            fake_hsa_prefetch_last() == 1,
        "then it runs, toward GPU 1");
  hsa_signal_store_relaxed(done, 1);
  CHECK(hsa_amd_svm_prefetch_async(range, sizeof range, cpu, 0, NULL, done) == ST_OK &&
            hsa_signal_wait_scacquire(done, COND_EQ, 0, UINT64_MAX, 0) == 0 && fake_hsa_prefetch_last() == -1,
        "a prefetch to the CPU");
  hsa_signal_destroy(dep);
  hsa_signal_destroy(done);
  hsa_signal_destroy(other);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc != 2) {
    fprintf(stderr, "usage: %s KERNEL_DIR (with multiargs.so, localmem_reduction.so, global.so)\n", argv[0]);
    return 2;
  }
  kdir = argv[1];
  setenv("FAKE_HSA_GPUS", "2", 1);
  setenv("FAKE_HSA_GFX", "gfx90a,gfx942", 1);
  test_discovery();
  test_memory();
  test_copies();
  test_signals();
  test_queues();
  test_kernels();
  test_profiling_and_prefetch();
  test_faults_and_leaks();
  printf("%s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
