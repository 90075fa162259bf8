// See shim.h.
#include "shim.h"

#include <stdlib.h>

#include "_cgo_export.h"

typedef int (*set_t)(uintptr_t);
#define BIND(f, ctx)                                                          \
  do {                                                                        \
    int r_ = ((set_t)(f)->set_current)(ctx);                                 \
    if (r_ != 0) return r_;                                                   \
  } while (0)

int lgo_cu_primary_ctx_retain(uintptr_t fn, uintptr_t *ctx, int dev) {
  return ((int (*)(uintptr_t *, int))fn)(ctx, dev);
}
int lgo_cu_primary_ctx_release(uintptr_t fn, int dev) { return ((int (*)(int))fn)(dev); }

int lgo_cu_alloc(const lgo_cu_fns *f, uintptr_t ctx, int kind, uintptr_t *out, size_t size) {
  BIND(f, ctx);
  switch (kind) {
  case 0: /* host (pinned) */
    return ((int (*)(uintptr_t *, size_t))f->mem_alloc_host)(out, size);
  case 1: /* device */
    return ((int (*)(uintptr_t *, size_t))f->mem_alloc)(out, size);
  default: /* managed, attached globally (CU_MEM_ATTACH_GLOBAL) */
    return ((int (*)(uintptr_t *, size_t, unsigned))f->mem_alloc_managed)(out, size, 1);
  }
}

int lgo_cu_free(const lgo_cu_fns *f, uintptr_t ctx, int host, uintptr_t p) {
  BIND(f, ctx);
  return ((int (*)(uintptr_t))(host ? f->mem_free_host : f->mem_free))(p);
}

typedef struct {
  ol_fastalloc a;
  const lgo_cu_fns *f;
  uintptr_t ctx;
} cu_fastalloc;

static uint64_t cu_slab_alloc(ol_fastalloc *a, uint64_t n, uint32_t kind) {
  const cu_fastalloc *s = a->state;
  uintptr_t p = 0;
  // any failure reads as out of memory: the runtime then trims its pool,
  // and if that does not help, olMemAlloc takes the plugin's Go path, which
  // reports the driver's error
  if (lgo_cu_alloc(s->f, s->ctx, (int)kind, &p, (size_t)n) != 0)
    return 0;
  return p;
}

static void cu_slab_free(ol_fastalloc *a, uint64_t p, uint64_t n, uint32_t kind) {
  (void)n;
  const cu_fastalloc *s = a->state;
  (void)lgo_cu_free(s->f, s->ctx, kind == 0, (uintptr_t)p);
}

ol_fastalloc *lgo_cu_fastalloc_new(const lgo_cu_fns *f, uintptr_t ctx) {
  cu_fastalloc *s = calloc(1, sizeof *s);
  if (s == NULL)
    return NULL;
  s->f = f;
  s->ctx = ctx;
  // every kind, each in slabs of its own
  s->a = (ol_fastalloc){cu_slab_alloc, cu_slab_free, 7u, 0u, 1u << 20, s};
  return &s->a;
}

void lgo_cu_fastalloc_free(ol_fastalloc *a) { free(a == NULL ? NULL : a->state); }

int lgo_cu_register(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t p, size_t size) {
  BIND(f, ctx);
  /* CU_MEMHOSTREGISTER_PORTABLE: usable from every context */
  return ((int (*)(uintptr_t, size_t, unsigned))f->host_register)(p, size, 1);
}

int lgo_cu_unregister(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t p) {
  BIND(f, ctx);
  return ((int (*)(uintptr_t))f->host_unregister)(p);
}

int lgo_cu_stream_create(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t *out) {
  BIND(f, ctx);
  /* CU_STREAM_NON_BLOCKING: no implicit ordering with the legacy stream */
  return ((int (*)(uintptr_t *, unsigned))f->stream_create)(out, 1);
}

int lgo_cu_event_create(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t *out) {
  BIND(f, ctx);
  /* CU_EVENT_DISABLE_TIMING: ordering only, the cheapest kind */
  return ((int (*)(uintptr_t *, unsigned))f->event_create)(out, 2);
}

int lgo_cu_handle_op(const lgo_cu_fns *f, uintptr_t ctx, int op, uintptr_t h) {
  uintptr_t fns[] = {f->stream_destroy, f->stream_sync, f->stream_query,
                     f->event_destroy, f->event_query, f->event_sync};
  BIND(f, ctx);
  return ((int (*)(uintptr_t))fns[op])(h);
}

int lgo_cu_event_record(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t ev, uintptr_t stream) {
  BIND(f, ctx);
  return ((int (*)(uintptr_t, uintptr_t))f->event_record)(ev, stream);
}

int lgo_cu_stream_wait(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t stream, uintptr_t ev) {
  BIND(f, ctx);
  return ((int (*)(uintptr_t, uintptr_t, unsigned))f->stream_wait_event)(stream, ev, 0);
}

int lgo_cu_copy(const lgo_cu_fns *f, uintptr_t ctx, int dir, uintptr_t dst, uintptr_t src, size_t n,
                uintptr_t stream) {
  uintptr_t fns[] = {f->copy_htod, f->copy_dtoh, f->copy_dtod};
  BIND(f, ctx);
  return ((int (*)(uintptr_t, uintptr_t, size_t, uintptr_t))fns[dir])(dst, src, n, stream);
}

void lgo_cu_fast_init(lgo_cu_fastq *x, const lgo_cu_fns *f, uintptr_t ctx, uintptr_t stream) {
  x->f = f;
  x->ctx = ctx;
  x->stream = stream;
}

// A held queue keeps its later work back in Go (Queue.hold): left to Go.
static int lgo_cu_fast_copy(ol_fastq *q, int dir, uint64_t dst, uint64_t src, uint64_t n) {
  const lgo_cu_fastq *x = (const lgo_cu_fastq *)(q + 1);
  if (__atomic_load_n(&q->stop, __ATOMIC_ACQUIRE) & OL_FASTQ_HELD)
    return 0;
  return lgo_cu_copy(x->f, x->ctx, dir & 3, (uintptr_t)dst, (uintptr_t)src, (size_t)n, x->stream) == 0;
}

void *lgo_cu_fast_copy_fn(void) { return (void *)lgo_cu_fast_copy; }

#define LGO_CU_MAX_PARAM_BYTES 32764 /* maxParamBytes (program.go) */

// The checks of Queue.launch (checkLaunch, the parameter bytes) for a
// launch that needs no attribute call, on a queue the kernel's program
// knows; anything else is left to Go, which launches or names the error.
static int lgo_cu_fast_launch(ol_fastq *q, const void *kernel, const void *args, uint64_t size,
                              const ol_fastq_launch_size *ls) {
  const lgo_cu_fastq *x = (const lgo_cu_fastq *)(q + 1);
  const lgo_cu_fastk *k = kernel;
  if ((__atomic_load_n(&q->stop, __ATOMIC_ACQUIRE) & OL_FASTQ_HELD) ||
      __atomic_load_n(&k->last_q, __ATOMIC_ACQUIRE) != (uintptr_t)q)
    return 0;
  uint64_t threads = 1;
  for (int i = 0; i < 3; i++) {
    uint32_t g = ls->NumGroups[i], b = ls->GroupSize[i];
    if (g == 0 || b == 0 || b > k->block_max[i] || g > k->grid_max[i])
      return 0;
    threads *= b;
  }
  if (threads > k->max_threads || ls->DynSharedMemory > k->shared_limit)
    return 0;
  uint64_t n = size;
  if (k->params_known) {
    if (size < k->param_bytes)
      return 0;
    n = k->param_bytes;
  } else if (n > LGO_CU_MAX_PARAM_BYTES) {
    n = LGO_CU_MAX_PARAM_BYTES;
  }
  return lgo_cu_launch(x->f, x->ctx, k->fn, ls->NumGroups[0], ls->NumGroups[1], ls->NumGroups[2], ls->GroupSize[0],
                       ls->GroupSize[1], ls->GroupSize[2], (uint32_t)ls->DynSharedMemory, x->stream,
                       n ? args : NULL, (size_t)n) == 0;
}

void *lgo_cu_fast_launch_fn(void) { return (void *)lgo_cu_fast_launch; }

int lgo_cu_copy_peer(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t dst, uintptr_t dctx, uintptr_t src,
                     uintptr_t sctx, size_t n, uintptr_t stream) {
  BIND(f, ctx);
  return ((int (*)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, size_t, uintptr_t))f->copy_peer)(
      dst, dctx, src, sctx, n, stream);
}

int lgo_cu_memset(const lgo_cu_fns *f, uintptr_t ctx, int width, uintptr_t dst, uint32_t value, size_t n,
                  uintptr_t stream) {
  BIND(f, ctx);
  switch (width) {
  case 1:
    return ((int (*)(uintptr_t, unsigned char, size_t, uintptr_t))f->memset8)(dst, (unsigned char)value, n, stream);
  case 2:
    return ((int (*)(uintptr_t, unsigned short, size_t, uintptr_t))f->memset16)(dst, (unsigned short)value, n,
                                                                              stream);
  default:
    return ((int (*)(uintptr_t, unsigned, size_t, uintptr_t))f->memset32)(dst, value, n, stream);
  }
}

/* Runs on the driver's callback thread: hands the host function to a
 * library thread and returns when it has run (lgoCudaRelay, queue.go). */
static void lgo_cu_host_trampoline(void *id) { lgoCudaRelay((uintptr_t)id); }

int lgo_cu_host_func(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t stream, uintptr_t id) {
  BIND(f, ctx);
  return ((int (*)(uintptr_t, void (*)(void *), void *))f->launch_host_func)(stream, lgo_cu_host_trampoline,
                                                                          (void *)id);
}

static __thread uintptr_t running_queue;
static __thread uint64_t running_mark;
uintptr_t lgo_cu_running_queue(void) { return running_queue; }
uint64_t lgo_cu_running_mark(void) { return running_mark; }

/* One call into C (which puts back the state of a host function that the
 * thread was running already): the thread cannot change between setting
 * the state and the call, so the goroutine need not lock itself to its thread (a locked
 * goroutine that is preempted or blocks makes the Go runtime hand its P to
 * another thread, and start one if none is idle). */
void lgo_cu_run_host(uintptr_t queue, uint64_t mark, uintptr_t fn, uintptr_t user) {
  uintptr_t outer_queue = running_queue;
  uint64_t outer_mark = running_mark;
  running_queue = queue;
  running_mark = mark;
  ((void (*)(void *))fn)((void *)user);
  running_queue = outer_queue;
  running_mark = outer_mark;
}

int lgo_cu_module_load(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t *mod, const void *image, char *err_log,
                       size_t err_size, char *info_log, size_t info_size) {
  /* CU_JIT_INFO_LOG_BUFFER(_SIZE_BYTES) = 3, 4; CU_JIT_ERROR_LOG_BUFFER(_SIZE_BYTES) = 5, 6 */
  int opts[4] = {3, 4, 5, 6};
  void *vals[4] = {info_log, (void *)(uintptr_t)info_size, err_log, (void *)(uintptr_t)err_size};
  BIND(f, ctx);
  return ((int (*)(uintptr_t *, const void *, unsigned, int *, void **))f->module_load)(mod, image, 4, opts, vals);
}

int lgo_cu_module_unload(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t mod) {
  BIND(f, ctx);
  return ((int (*)(uintptr_t))f->module_unload)(mod);
}

int lgo_cu_module_get_function(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t *fn, uintptr_t mod, const char *name) {
  BIND(f, ctx);
  return ((int (*)(uintptr_t *, uintptr_t, const char *))f->module_get_function)(fn, mod, name);
}

int lgo_cu_module_get_global(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t *ptr, size_t *size, uintptr_t mod,
                             const char *name) {
  BIND(f, ctx);
  return ((int (*)(uintptr_t *, size_t *, uintptr_t, const char *))f->module_get_global)(ptr, size, mod, name);
}

int lgo_cu_func_attribute(const lgo_cu_fns *f, uintptr_t ctx, int *value, int attr, uintptr_t fn) {
  BIND(f, ctx);
  return ((int (*)(int *, int, uintptr_t))f->func_get_attribute)(value, attr, fn);
}

int lgo_cu_func_set_attribute(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t fn, int attr, int value) {
  BIND(f, ctx);
  return ((int (*)(uintptr_t, int, int))f->func_set_attribute)(fn, attr, value);
}

int lgo_cu_occupancy(const lgo_cu_fns *f, uintptr_t ctx, int *min_grid, int *block, uintptr_t fn, size_t dyn_shared) {
  BIND(f, ctx);
  return ((int (*)(int *, int *, uintptr_t, void *, size_t, int))f->occupancy_max_block)(min_grid, block, fn, NULL,
                                                                                     dyn_shared, 0);
}

int lgo_cu_launch(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t fn, uint32_t gx, uint32_t gy, uint32_t gz,
                  uint32_t bx, uint32_t by, uint32_t bz, uint32_t shared, uintptr_t stream, const void *args,
                  size_t args_size) {
  /* CU_LAUNCH_PARAM_BUFFER_POINTER (1), CU_LAUNCH_PARAM_BUFFER_SIZE (2), CU_LAUNCH_PARAM_END (0) */
  size_t size = args_size;
  void *extra[5] = {(void *)1, (void *)args, (void *)2, &size, (void *)0};
  BIND(f, ctx);
  return ((int (*)(uintptr_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, uintptr_t,
                   void **, void **))f->launch_kernel)(fn, gx, gy, gz, bx, by, bz,
                                                       shared, stream, NULL, args_size ? extra : NULL);
}

int lgo_cu_launch_coop(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t fn, uint32_t gx, uint32_t gy, uint32_t gz,
                       uint32_t bx, uint32_t by, uint32_t bz, uint32_t shared, uintptr_t stream, const void *args,
                       size_t args_size, const uint64_t *params, int nparams) {
  /* a pointer into args per parameter: params holds (offset, size) pairs;
   * nparams -1: the parameters are unknown and args is the one */
  enum { most = 4096 };
  void *ptrs[most];
  int n = nparams < 0 ? 1 : nparams;
  if (n > most) return 1; /* CUDA_ERROR_INVALID_VALUE */
  for (int i = 0; i < n; i++) {
    uint64_t off = nparams < 0 ? 0 : params[2 * i];
    if (off > args_size) return 1;
    ptrs[i] = (char *)args + off;
  }
  BIND(f, ctx);
  return ((int (*)(uintptr_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, uintptr_t,
                   void **))f->launch_coop)(fn, gx, gy, gz, bx, by, bz, shared, stream, n ? ptrs : NULL);
}

int lgo_cu_active_blocks(const lgo_cu_fns *f, uintptr_t ctx, int *blocks, uintptr_t fn, int block_size,
                         size_t dyn_shared) {
  BIND(f, ctx);
  return ((int (*)(int *, uintptr_t, int, size_t))f->occupancy_active_blocks)(blocks, fn, block_size, dyn_shared);
}

int lgo_cu_pointer_info(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t p, unsigned *type, int *ordinal) {
  BIND(f, ctx);
  int r = ((int (*)(void *, int, uintptr_t))f->pointer_get_attribute)(type, 2, p);
  if (r != 0) return r;
  return ((int (*)(void *, int, uintptr_t))f->pointer_get_attribute)(ordinal, 9, p);
}

unsigned lgo_cu_pointer_type(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t p) {
  unsigned type = 0;
  if (((set_t)f->set_current)(ctx) != 0 ||
      ((int (*)(void *, int, uintptr_t))f->pointer_get_attribute)(&type, 2, p) != 0)
    return 0;
  return type;
}

int lgo_cu_peer(const lgo_cu_fns *f, uintptr_t can_access, uintptr_t change, uintptr_t ctx, int dev,
                uintptr_t peer_ctx, int peer_dev, int enable, int *done) {
  *done = 0;
  if (enable) {
    int can = 0;
    int r = ((int (*)(int *, int, int))can_access)(&can, dev, peer_dev);
    if (r != 0 || !can) return r;
  }
  BIND(f, ctx);
  int r = enable ? ((int (*)(uintptr_t, unsigned))change)(peer_ctx, 0) : ((int (*)(uintptr_t))change)(peer_ctx);
  if (r == 704 || r == 705) return 0; /* PEER_ACCESS_ALREADY_ENABLED / _NOT_ENABLED */
  *done = r == 0;
  return r;
}

int lgo_cu_param_info(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t fn, size_t i, size_t *off, size_t *size) {
  if (f->func_get_param_info == 0) return 801; /* CUDA_ERROR_NOT_SUPPORTED */
  BIND(f, ctx);
  return ((int (*)(uintptr_t, size_t, size_t *, size_t *))f->func_get_param_info)(fn, i, off, size);
}

int lgo_cu_event_create_timed(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t *out) {
  BIND(f, ctx);
  return ((int (*)(uintptr_t *, unsigned))f->event_create)(out, 0);
}

int lgo_cu_event_elapsed(const lgo_cu_fns *f, uintptr_t ctx, float *ms, uintptr_t start, uintptr_t end) {
  BIND(f, ctx);
  return ((int (*)(float *, uintptr_t, uintptr_t))f->event_elapsed)(ms, start, end);
}

unsigned lgo_cu_is_managed(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t p) {
  unsigned managed = 0;
  /* CU_POINTER_ATTRIBUTE_IS_MANAGED = 8 */
  if (((set_t)f->set_current)(ctx) != 0 ||
      ((int (*)(void *, int, uintptr_t))f->pointer_get_attribute)(&managed, 8, p) != 0)
    return 0;
  return managed;
}

/* CUDA 13's headers name the CUmemLocation form cuMemPrefetchAsync; the
 * driver still exports the original ABI under the plain name, which is
 * preferred (every driver since CUDA 8 has it); _v2 (12.2+) only when the
 * plain one is missing. */
typedef struct {
  int type, id; /* CU_MEM_LOCATION_TYPE_DEVICE 1, _HOST 2 */
} lgo_cu_mem_location;

int lgo_cu_prefetch(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t p, size_t n, int dev, uintptr_t stream) {
  BIND(f, ctx);
  if (f->mem_prefetch != 0)
    return ((int (*)(uintptr_t, size_t, int, uintptr_t))f->mem_prefetch)(p, n, dev, stream);
  lgo_cu_mem_location loc = {dev < 0 ? 2 : 1, dev < 0 ? 0 : dev};
  return ((int (*)(uintptr_t, size_t, lgo_cu_mem_location, unsigned, uintptr_t))f->mem_prefetch_v2)(p, n, loc, 0,
                                                                                               stream);
}
