// C side of the HSA trampolines declared in shim.h.
#include "shim.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "_cgo_export.h"

typedef struct {
  uint64_t handle;
} lgo_hsa_handle_t;

typedef uint32_t (*lgo_hsa_init_t)(void);
typedef uint32_t (*lgo_hsa_status_string_t)(uint32_t, const char **);
typedef uint32_t (*lgo_hsa_system_get_info_t)(uint32_t, void *);
typedef uint32_t (*lgo_hsa_handle_get_info_t)(lgo_hsa_handle_t, uint32_t, void *);
typedef uint32_t (*lgo_hsa_handle_cb_t)(lgo_hsa_handle_t, void *);
typedef uint32_t (*lgo_hsa_iterate_agents_t)(lgo_hsa_handle_cb_t, void *);
typedef uint32_t (*lgo_hsa_iterate_handle_t)(lgo_hsa_handle_t, lgo_hsa_handle_cb_t, void *);

// collect is the C callback handed to the driver: it forwards each handle to
// Go. It is a cgo export, not a purego callback (those are limited in number
// and never freed).
static uint32_t collect(lgo_hsa_handle_t h, void *data) { return lgoHsaCollect(h.handle, (uintptr_t)data); }

uint32_t lgo_hsa_init(uintptr_t fn) { return ((lgo_hsa_init_t)fn)(); }

uint32_t lgo_hsa_status_string(uintptr_t fn, uint32_t status, const char **text) {
  *text = NULL;
  return ((lgo_hsa_status_string_t)fn)(status, text);
}

uint32_t lgo_hsa_system_get_info(uintptr_t fn, uint32_t attr, void *value) {
  return ((lgo_hsa_system_get_info_t)fn)(attr, value);
}

uint32_t lgo_hsa_agent_get_info(uintptr_t fn, uint64_t agent, uint32_t attr, void *value) {
  lgo_hsa_handle_t a = {agent};
  return ((lgo_hsa_handle_get_info_t)fn)(a, attr, value);
}

uint32_t lgo_hsa_amd_memory_pool_get_info(uintptr_t fn, uint64_t pool, uint32_t attr, void *value) {
  lgo_hsa_handle_t p = {pool};
  return ((lgo_hsa_handle_get_info_t)fn)(p, attr, value);
}

uint32_t lgo_hsa_iterate_agents(uintptr_t fn, uintptr_t data) {
  return ((lgo_hsa_iterate_agents_t)fn)(collect, (void *)data);
}

uint32_t lgo_hsa_amd_agent_iterate_memory_pools(uintptr_t fn, uint64_t agent, uintptr_t data) {
  lgo_hsa_handle_t a = {agent};
  return ((lgo_hsa_iterate_handle_t)fn)(a, collect, (void *)data);
}

uint32_t lgo_hsa_shut_down(const lgo_hsa_fns *f) { return ((lgo_hsa_init_t)f->shut_down)(); }

uint32_t lgo_hsa_agent_pool_access(const lgo_hsa_fns *f, uint64_t agent, uint64_t pool, uint32_t *access) {
  lgo_hsa_handle_t a = {agent}, p = {pool};
  *access = 0;
  /* HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS */
  return ((uint32_t(*)(lgo_hsa_handle_t, lgo_hsa_handle_t, uint32_t, void *))f->agent_memory_pool_get_info)(
      a, p, 0, access);
}

lgo_hsa_r lgo_hsa_pool_allocate(const lgo_hsa_fns *f, uint64_t pool, size_t size) {
  lgo_hsa_handle_t p = {pool};
  void *ptr = NULL;
  lgo_hsa_r r;
  r.st = ((uint32_t(*)(lgo_hsa_handle_t, size_t, uint32_t, void **))f->pool_allocate)(p, size, 0, &ptr);
  r.v = (uint64_t)(uintptr_t)ptr;
  return r;
}

uint32_t lgo_hsa_pool_free(const lgo_hsa_fns *f, uintptr_t p) {
  return ((uint32_t(*)(void *))f->pool_free)((void *)p);
}

uint32_t lgo_hsa_allow_access(const lgo_hsa_fns *f, const uint64_t *agents, uint32_t n, uintptr_t p) {
  return ((uint32_t(*)(uint32_t, const lgo_hsa_handle_t *, const uint32_t *, const void *))f->allow_access)(
      n, (const lgo_hsa_handle_t *)agents, NULL, (const void *)p);
}

typedef struct {
  ol_fastalloc a;
  const lgo_hsa_fns *f;
  uint64_t pool[3];           // by OL_ALLOC_TYPE_*
  const uint64_t *agents[3];  // who must be allowed to reach it
  uint32_t n[3];
} hsa_fastalloc;

static uint64_t hsa_slab_alloc(ol_fastalloc *a, uint64_t n, uint32_t kind) {
  const hsa_fastalloc *s = a->state;
  if (kind > 2 || s->pool[kind] == 0)
    return 0;
  // any failure reads as out of memory: the runtime then trims its pool,
  // and if that does not help, olMemAlloc takes the plugin's Go path, which
  // reports the runtime's error
  lgo_hsa_r r = lgo_hsa_pool_allocate(s->f, s->pool[kind], (size_t)n);
  if (r.st != 0 || r.v == 0)
    return 0;
  if (s->n[kind] > 0 && lgo_hsa_allow_access(s->f, s->agents[kind], s->n[kind], (uintptr_t)r.v) != 0) {
    (void)lgo_hsa_pool_free(s->f, (uintptr_t)r.v);
    return 0;
  }
  return r.v;
}

static void hsa_slab_free(ol_fastalloc *a, uint64_t p, uint64_t n, uint32_t kind) {
  (void)n, (void)kind;
  const hsa_fastalloc *s = a->state;
  (void)lgo_hsa_pool_free(s->f, (uintptr_t)p);
}

ol_fastalloc *lgo_hsa_fastalloc_new(const lgo_hsa_fns *f, uint64_t dev_pool, const uint64_t *peers,
                                    uint32_t n_peers, uint64_t host_pool, const uint64_t *agents,
                                    uint32_t n_agents) {
  hsa_fastalloc *s = calloc(1, sizeof *s);
  if (s == NULL)
    return NULL;
  s->f = f;
  s->pool[0] = s->pool[2] = host_pool;
  s->agents[0] = s->agents[2] = agents;
  s->n[0] = s->n[2] = n_agents;
  s->pool[1] = dev_pool;
  s->agents[1] = peers;
  s->n[1] = n_peers;
  uint32_t kinds = (host_pool ? 5u : 0u) | (dev_pool ? 2u : 0u);
  // HOST and MANAGED are the same memory, but the runtime files a slab
  // under one kind, so each kind keeps slabs of its own
  s->a = (ol_fastalloc){hsa_slab_alloc, hsa_slab_free, kinds, 0u, 1u << 20, s};
  return &s->a;
}

void lgo_hsa_fastalloc_free(ol_fastalloc *a) { free(a == NULL ? NULL : a->state); }

lgo_hsa_r lgo_hsa_lock(const lgo_hsa_fns *f, uintptr_t p, size_t size, const uint64_t *agents, uint32_t n) {
  void *agent_ptr = NULL;
  lgo_hsa_r r;
  r.st = ((uint32_t(*)(void *, size_t, lgo_hsa_handle_t *, int, void **))f->lock)(
      (void *)p, size, (lgo_hsa_handle_t *)agents, (int)n, &agent_ptr);
  r.v = (uint64_t)(uintptr_t)agent_ptr;
  return r;
}

uint32_t lgo_hsa_unlock(const lgo_hsa_fns *f, uintptr_t p) { return ((uint32_t(*)(void *))f->unlock)((void *)p); }

/* hsa_amd_pointer_info_t up to agentOwner; its size field tells the
 * runtime how much of it the caller knows. */
typedef struct {
  uint32_t size;
  uint32_t type;
  void *agent_base;
  void *host_base;
  size_t size_bytes;
  void *user_data;
  lgo_hsa_handle_t owner;
} lgo_hsa_pointer_info_t;

lgo_hsa_ptr lgo_hsa_pointer_info(const lgo_hsa_fns *f, uintptr_t p) {
  lgo_hsa_pointer_info_t info;
  lgo_hsa_ptr r = {0, 0, p};
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  if (((uint32_t(*)(const void *, lgo_hsa_pointer_info_t *, void *(*)(size_t), uint32_t *, void *))f->pointer_info)(
          (const void *)p, &info, NULL, NULL, NULL) != 0)
    return r;
  r.type = info.type;
  r.owner = info.owner.handle;
  if (info.type == 2 /* HSA_EXT_POINTER_TYPE_LOCKED */ && info.agent_base != NULL && info.host_base != NULL)
    r.agent_addr = (uintptr_t)info.agent_base + (p - (uintptr_t)info.host_base);
  return r;
}

uint32_t lgo_hsa_copy(const lgo_hsa_fns *f, uintptr_t dst, uint64_t dst_agent, uintptr_t src, uint64_t src_agent,
                      size_t size, uint64_t dep, uint64_t done) {
  lgo_hsa_handle_t da = {dst_agent}, sa = {src_agent}, d = {dep}, c = {done};
  return ((uint32_t(*)(void *, lgo_hsa_handle_t, const void *, lgo_hsa_handle_t, size_t, uint32_t,
                       const lgo_hsa_handle_t *, lgo_hsa_handle_t))f->async_copy)(
      (void *)dst, da, (const void *)src, sa, size, dep ? 1 : 0, dep ? &d : NULL, c);
}

uint32_t lgo_hsa_copy_armed(const lgo_hsa_fns *f, uintptr_t dst, uint64_t dst_agent, uintptr_t src,
                            uint64_t src_agent, size_t size, uint64_t dep, uint64_t done) {
  lgo_hsa_handle_t c = {done};
  ((void (*)(lgo_hsa_handle_t, int64_t))f->signal_store_screlease)(c, 1);
  return lgo_hsa_copy(f, dst, dst_agent, src, src_agent, size, dep, done);
}

uint32_t lgo_hsa_copy_host(const lgo_hsa_fns *f, bool to_host, uintptr_t dst, uintptr_t src, uint64_t agent,
                           size_t size, uint64_t dep, uint64_t done) {
  // a temporary lock the lookup finds was held before it (live) or taken
  // during it (taken moved)
  uint64_t taken = __atomic_load_n(&f->tlocks_taken, __ATOMIC_SEQ_CST);
  uint64_t live = __atomic_load_n(&f->tlocks_live, __ATOMIC_SEQ_CST);
  lgo_hsa_ptr r = lgo_hsa_pointer_info(f, to_host ? dst : src);
  if (r.type == 0)
    return LGO_HSA_UNKNOWN_HOST_MEMORY;
  if (r.type == 2 /* HSA_EXT_POINTER_TYPE_LOCKED */ &&
      (live != 0 || __atomic_load_n(&f->tlocks_taken, __ATOMIC_SEQ_CST) != taken))
    return LGO_HSA_UNKNOWN_HOST_MEMORY;
  if (to_host)
    dst = r.agent_addr;
  else
    src = r.agent_addr;
  return lgo_hsa_copy_armed(f, dst, agent, src, agent, size, dep, done);
}

lgo_hsa_scan_r lgo_hsa_scan(const lgo_hsa_fns *f, const uint64_t *ring, uint32_t mask, uint32_t head, uint32_t n) {
  lgo_hsa_scan_r r = {0, 0, 0};
  int64_t (*load)(lgo_hsa_handle_t) = (int64_t(*)(lgo_hsa_handle_t))f->signal_load;
  uint32_t i = 0;
  for (; i < n; i++) {
    lgo_hsa_handle_t h = {ring[(head + i) & mask]};
    int64_t v = load(h);
    if (v > 0)
      break;
    if (v < 0 && r.value == 0) {
      r.bad = i;
      r.value = v;
    }
  }
  r.done = i;
  if (r.value == 0)
    r.bad = i;
  return r;
}

uint32_t lgo_hsa_fill(const lgo_hsa_fns *f, uintptr_t p, uint32_t value, size_t count) {
  return ((uint32_t(*)(void *, uint32_t, size_t))f->fill)((void *)p, value, count);
}

lgo_hsa_r lgo_hsa_signal_create(const lgo_hsa_fns *f, int64_t value) {
  lgo_hsa_handle_t s = {0};
  lgo_hsa_r r;
  r.st = ((uint32_t(*)(int64_t, uint32_t, const lgo_hsa_handle_t *, lgo_hsa_handle_t *))f->signal_create)(
      value, 0, NULL, &s);
  r.v = s.handle;
  return r;
}

uint32_t lgo_hsa_signal_destroy(const lgo_hsa_fns *f, uint64_t s) {
  lgo_hsa_handle_t h = {s};
  return ((uint32_t(*)(lgo_hsa_handle_t))f->signal_destroy)(h);
}

int64_t lgo_hsa_signal_load(const lgo_hsa_fns *f, uint64_t s) {
  lgo_hsa_handle_t h = {s};
  return ((int64_t(*)(lgo_hsa_handle_t))f->signal_load)(h);
}

void lgo_hsa_signal_store(const lgo_hsa_fns *f, uint64_t s, int64_t value) {
  lgo_hsa_handle_t h = {s};
  ((void (*)(lgo_hsa_handle_t, int64_t))f->signal_store_screlease)(h, value);
}

int64_t lgo_hsa_signal_wait(const lgo_hsa_fns *f, uint64_t s, uint64_t timeout_hint) {
  lgo_hsa_handle_t h = {s};
  /* HSA_SIGNAL_CONDITION_LT 1, HSA_WAIT_STATE_BLOCKED */
  return ((int64_t(*)(lgo_hsa_handle_t, uint32_t, int64_t, uint64_t, uint32_t))f->signal_wait)(h, 2, 1,
                                                                                              timeout_hint, 0);
}

/* Runs on the runtime's signal handler thread: hands over to Go, which
 * starts the work on a library thread, and unregisters itself. */
static bool on_ready(int64_t value, void *arg) {
  (void)value;
  lgoHsaSignalReady((uintptr_t)arg);
  return false;
}

uint32_t lgo_hsa_on_ready(const lgo_hsa_fns *f, uint64_t s, uintptr_t id) {
  lgo_hsa_handle_t h = {s};
  return ((uint32_t(*)(lgo_hsa_handle_t, uint32_t, int64_t, bool (*)(int64_t, void *), void *))f->async_handler)(
      h, 2 /* LT */, 1, on_ready, (void *)id);
}

static void on_queue_error(uint32_t status, void *source, void *data) {
  (void)source;
  lgoHsaQueueError(status, (uintptr_t)data);
}

lgo_hsa_r lgo_hsa_queue_create(const lgo_hsa_fns *f, uint64_t agent, uint32_t size, uintptr_t id) {
  lgo_hsa_handle_t a = {agent};
  void *q = NULL;
  lgo_hsa_r r;
  /* HSA_QUEUE_TYPE_MULTI; private and group segment sizes left to the runtime (UINT32_MAX) */
  r.st = ((uint32_t(*)(lgo_hsa_handle_t, uint32_t, uint32_t, void (*)(uint32_t, void *, void *), void *, uint32_t,
                       uint32_t, void **))f->queue_create)(a, size, 0, on_queue_error, (void *)id, UINT32_MAX,
                                                           UINT32_MAX, &q);
  r.v = (uint64_t)(uintptr_t)q;
  return r;
}

uint32_t lgo_hsa_queue_destroy(const lgo_hsa_fns *f, uintptr_t q) {
  return ((uint32_t(*)(void *))f->queue_destroy)((void *)q);
}

/* hsa_queue_t */
typedef struct {
  uint32_t type;
  uint32_t features;
  uint64_t base_address;
  lgo_hsa_handle_t doorbell_signal;
  uint32_t size;
  uint32_t reserved1;
  uint64_t id;
} lgo_hsa_queue_t;

/* hsa_kernel_dispatch_packet_t */
typedef struct {
  uint16_t header;
  uint16_t setup;
  uint16_t workgroup_size[3];
  uint16_t reserved0;
  uint32_t grid_size[3];
  uint32_t private_segment_size;
  uint32_t group_segment_size;
  uint64_t kernel_object;
  uint64_t kernarg_address;
  uint64_t reserved2;
  uint64_t completion_signal;
} lgo_hsa_dispatch_packet_t;

/* hsa_barrier_and_packet_t */
typedef struct {
  uint16_t header;
  uint16_t reserved0;
  uint32_t reserved1;
  uint64_t dep_signal[5];
  uint64_t reserved2;
  uint64_t completion_signal;
} lgo_hsa_barrier_packet_t;

_Static_assert(sizeof(lgo_hsa_dispatch_packet_t) == 64, "AQL packets are 64 bytes");
_Static_assert(sizeof(lgo_hsa_barrier_packet_t) == 64, "AQL packets are 64 bytes");

/* Packet header: type in bits 0-7, barrier bit 8, acquire fence scope bits
 * 9-10, release fence scope bits 11-12 (HSA_FENCE_SCOPE_SYSTEM = 2). */
static uint16_t header(uint16_t type) { return (uint16_t)(type | 1u << 8 | 2u << 9 | 2u << 11); }

/* Reserves the next packet slot of q, waiting while the ring is full. */
static void *reserve(const lgo_hsa_fns *f, lgo_hsa_queue_t *q, uint64_t *index) {
  uint64_t idx = ((uint64_t(*)(const void *, uint64_t))f->queue_add_write_index)(q, 1);
  while (idx - ((uint64_t(*)(const void *))f->queue_load_read_index)(q) >= q->size) sched_yield();
  *index = idx;
  return (char *)(uintptr_t)q->base_address + (idx & (q->size - 1)) * 64;
}

/* Publishes a packet whose body is written: the header last, with release
 * ordering so the packet processor never sees a valid header before the
 * body, then the doorbell. */
static void publish(const lgo_hsa_fns *f, lgo_hsa_queue_t *q, uint16_t *hdr, uint16_t value, uint64_t index) {
  __atomic_store_n(hdr, value, __ATOMIC_RELEASE);
  ((void (*)(lgo_hsa_handle_t, int64_t))f->signal_store_screlease)(q->doorbell_signal, (int64_t)index);
}

void lgo_hsa_dispatch(const lgo_hsa_fns *f, uintptr_t queue, uint16_t dims, uint16_t wx, uint16_t wy, uint16_t wz,
                      uint32_t gx, uint32_t gy, uint32_t gz, uint32_t private_size, uint32_t group_size,
                      uint64_t kernel_object, uintptr_t kernarg, uint64_t tag, uint64_t done, bool arm) {
  lgo_hsa_queue_t *q = (lgo_hsa_queue_t *)queue;
  if (arm && done) {
    lgo_hsa_handle_t c = {done};
    ((void (*)(lgo_hsa_handle_t, int64_t))f->signal_store_screlease)(c, 1);
  }
  uint64_t idx;
  lgo_hsa_dispatch_packet_t *p = reserve(f, q, &idx);
  p->setup = dims;
  p->workgroup_size[0] = wx;
  p->workgroup_size[1] = wy;
  p->workgroup_size[2] = wz;
  p->reserved0 = 0;
  p->grid_size[0] = gx;
  p->grid_size[1] = gy;
  p->grid_size[2] = gz;
  p->private_segment_size = private_size;
  p->group_segment_size = group_size;
  p->kernel_object = kernel_object;
  p->kernarg_address = (uint64_t)kernarg;
  p->reserved2 = tag;
  p->completion_signal = done;
  publish(f, q, &p->header, header(2 /* KERNEL_DISPATCH */), idx);
}

void lgo_hsa_barrier(const lgo_hsa_fns *f, uintptr_t queue, uint64_t dep0, uint64_t dep1, uint64_t done) {
  lgo_hsa_queue_t *q = (lgo_hsa_queue_t *)queue;
  uint64_t idx;
  lgo_hsa_barrier_packet_t *p = reserve(f, q, &idx);
  p->reserved0 = 0;
  p->reserved1 = 0;
  p->dep_signal[0] = dep0;
  p->dep_signal[1] = dep1;
  p->dep_signal[2] = p->dep_signal[3] = p->dep_signal[4] = 0;
  p->reserved2 = 0;
  p->completion_signal = done;
  publish(f, q, &p->header, header(3 /* BARRIER_AND */), idx);
}

lgo_hsa_r lgo_hsa_reader_create(const lgo_hsa_fns *f, const void *image, size_t size) {
  lgo_hsa_handle_t h = {0};
  lgo_hsa_r r;
  r.st = ((uint32_t(*)(const void *, size_t, lgo_hsa_handle_t *))f->reader_create)(image, size, &h);
  r.v = h.handle;
  return r;
}

uint32_t lgo_hsa_reader_destroy(const lgo_hsa_fns *f, uint64_t reader) {
  lgo_hsa_handle_t h = {reader};
  return ((uint32_t(*)(lgo_hsa_handle_t))f->reader_destroy)(h);
}

lgo_hsa_r lgo_hsa_executable_create(const lgo_hsa_fns *f, uint32_t profile) {
  lgo_hsa_handle_t h = {0};
  lgo_hsa_r r;
  /* HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, no options */
  r.st = ((uint32_t(*)(uint32_t, uint32_t, const char *, lgo_hsa_handle_t *))f->executable_create)(profile, 0, "",
                                                                                                  &h);
  r.v = h.handle;
  return r;
}

uint32_t lgo_hsa_executable_load(const lgo_hsa_fns *f, uint64_t exe, uint64_t agent, uint64_t reader) {
  lgo_hsa_handle_t e = {exe}, a = {agent}, r = {reader};
  return ((uint32_t(*)(lgo_hsa_handle_t, lgo_hsa_handle_t, lgo_hsa_handle_t, const char *, void *))
              f->executable_load)(e, a, r, NULL, NULL);
}

uint32_t lgo_hsa_executable_freeze(const lgo_hsa_fns *f, uint64_t exe) {
  lgo_hsa_handle_t e = {exe};
  return ((uint32_t(*)(lgo_hsa_handle_t, const char *))f->executable_freeze)(e, NULL);
}

uint32_t lgo_hsa_executable_destroy(const lgo_hsa_fns *f, uint64_t exe) {
  lgo_hsa_handle_t e = {exe};
  return ((uint32_t(*)(lgo_hsa_handle_t))f->executable_destroy)(e);
}

lgo_hsa_r lgo_hsa_symbol(const lgo_hsa_fns *f, uint64_t exe, const char *name, uint64_t agent) {
  lgo_hsa_handle_t e = {exe}, a = {agent}, s = {0};
  lgo_hsa_r r;
  r.st = ((uint32_t(*)(lgo_hsa_handle_t, const char *, const lgo_hsa_handle_t *, lgo_hsa_handle_t *))
              f->executable_symbol_by_name)(e, name, &a, &s);
  r.v = s.handle;
  return r;
}

uint32_t lgo_hsa_symbol_info(const lgo_hsa_fns *f, uint64_t sym, uint32_t attr, void *value) {
  lgo_hsa_handle_t s = {sym};
  return ((lgo_hsa_handle_get_info_t)f->symbol_get_info)(s, attr, value);
}

static __thread uintptr_t running_queue;
static __thread uint64_t running_mark;
uintptr_t lgo_hsa_running_queue(void) { return running_queue; }
uint64_t lgo_hsa_running_mark(void) { return running_mark; }

/* One call into C (which puts back the state of a host function that the
 * thread was running already): the thread cannot change between setting
 * the state and the call, so the goroutine need not lock itself to its thread (a locked
 * goroutine that is preempted or blocks makes the Go runtime hand its P to
 * another thread, and start one if none is idle). */
void lgo_hsa_run_host(uintptr_t queue, uint64_t mark, uintptr_t fn, uintptr_t user) {
  uintptr_t outer_queue = running_queue;
  uint64_t outer_mark = running_mark;
  running_queue = queue;
  running_mark = mark;
  ((void (*)(void *))fn)((void *)user);
  running_queue = outer_queue;
  running_mark = outer_mark;
}

uint32_t lgo_hsa_profiling_enable(const lgo_hsa_fns *f, uintptr_t q) {
  return ((uint32_t(*)(void *, int))f->profiling_enable)((void *)q, 1);
}

lgo_hsa_r lgo_hsa_dispatch_end(const lgo_hsa_fns *f, uint64_t agent, uint64_t s) {
  lgo_hsa_handle_t a = {agent}, sig = {s};
  struct {
    uint64_t start, end;
  } t = {0, 0};
  lgo_hsa_r r;
  r.st = ((uint32_t(*)(lgo_hsa_handle_t, lgo_hsa_handle_t, void *))f->dispatch_time)(a, sig, &t);
  r.v = t.end;
  return r;
}

uint32_t lgo_hsa_svm_prefetch(const lgo_hsa_fns *f, uintptr_t p, size_t size, uint64_t agent, uint64_t dep,
                              uint64_t done) {
  lgo_hsa_handle_t a = {agent}, d = {dep}, c = {done};
  return ((uint32_t(*)(void *, size_t, lgo_hsa_handle_t, uint32_t, const lgo_hsa_handle_t *, lgo_hsa_handle_t))
              f->svm_prefetch)((void *)p, size, a, dep ? 1 : 0, dep ? &d : NULL, c);
}
