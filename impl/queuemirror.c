// The queue mirror and the fast paths over it. See queuemirror.h.
#include "queuemirror.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../plugins/plugin/fastq.h"
#include "doneevents.h"

#define INDEX_MASK 0xffffffu // a handle's slot index (impl/handles.go)
#define CHUNK_BITS 10u
#define ALLOC_TYPE_DEVICE 1u // OL_ALLOC_TYPE_DEVICE
#define CHUNK_SLOTS (1u << CHUNK_BITS)
#define NCHUNKS ((INDEX_MASK + 1u) >> CHUNK_BITS)
// the longest buffer a caller may hand in (impl/zentry.go maxUserRange)
#define OL_QMIRROR_MAX_USER_RANGE (1ull << 47)

// one cache line per queue: threads using different queues do not share
// lines
typedef struct {
  _Alignas(64) _Atomic uint64_t h;
  _Atomic uint64_t dev;
  _Atomic(ol_fastq *) q;
  _Atomic uint64_t users; // (kernels only)
  // a kernel's parameters, for 23.1's argument arrays: known or not
  // (OL_KMIRROR_KNOWN) and their count; when known, each one's offset and
  // size (kparam[2i], kparam[2i+1]; malloc'd, freed by the clear)
  _Atomic uint64_t kparams;
  uint64_t *kparam;
} qslot;

// a table of slots by handle index: the queues', and the kernels' (q is
// then the plugin's kernel)
typedef struct {
  _Atomic(qslot *) chunks[NCHUNKS];
} mtable;

static mtable queues, kernels;
static pthread_mutex_t grow = PTHREAD_MUTEX_INITIALIZER;

static qslot *slot_in(mtable *t, uint64_t h, int make) {
  uint32_t i = (uint32_t)(h & INDEX_MASK);
  _Atomic(qslot *) *cp = &t->chunks[i >> CHUNK_BITS];
  qslot *c = atomic_load_explicit(cp, memory_order_acquire);
  if (c == NULL && make) {
    pthread_mutex_lock(&grow);
    c = atomic_load_explicit(cp, memory_order_relaxed);
    if (c == NULL) {
      // zeroed pages (a zero slot is an empty one), touched only as
      // queues use their slots
      void *m = mmap(NULL, sizeof(qslot) * CHUNK_SLOTS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m != MAP_FAILED) {
        c = m;
        atomic_store_explicit(cp, c, memory_order_release);
      }
    }
    pthread_mutex_unlock(&grow);
  }
  return c == NULL ? NULL : &c[i & (CHUNK_SLOTS - 1)];
}

static inline qslot *slot_of(uint64_t h, int make) { return slot_in(&queues, h, make); }

static int set_in(mtable *t, uint64_t h, uint64_t dev, void *obj) {
  qslot *s = slot_in(t, h, 1);
  if (s == NULL)
    return 0;
  atomic_store(&s->dev, dev);
  atomic_store(&s->q, (ol_fastq *)obj);
  atomic_store(&s->h, h);
  return 1;
}

// clear_in takes h out of t; users: then waits until no C path uses it,
// and frees a kernel's parameter list
static void clear_in(mtable *t, uint64_t h, int users) {
  qslot *s = slot_in(t, h, 0);
  if (s == NULL || atomic_load(&s->h) != h)
    return;
  atomic_store(&s->h, 0);
  while (users && atomic_load(&s->users) != 0)
    sched_yield();
  atomic_store(&s->q, NULL);
  if (users) {
    free(s->kparam);
    s->kparam = NULL;
  }
}

int ol_qmirror_set(uint64_t h, uint64_t dev, void *fastq) { return set_in(&queues, h, dev, fastq); }
void ol_qmirror_clear(uint64_t h) { clear_in(&queues, h, 0); }

void ol_qmirror_quiesce(void *fastq) {
  ol_fastq *q = fastq;
  while (atomic_load((_Atomic uint64_t *)&q->handed) != atomic_load((_Atomic uint64_t *)&q->begun))
    sched_yield();
}

int ol_kmirror_set(uint64_t h, uint64_t dev, void *kernel, int known, uint64_t nparams, const uint64_t *params) {
  qslot *s = slot_in(&kernels, h, 1);
  if (s == NULL || nparams > OL_KMIRROR_COUNT)
    return 0;
  uint64_t *list = NULL;
  if (known && nparams > 0) {
    if ((list = malloc(sizeof *list * 2 * nparams)) == NULL)
      return 0;
    memcpy(list, params, sizeof *list * 2 * nparams);
  }
  s->kparam = list; // (the slot is not live: no reader)
  atomic_store(&s->kparams, (known ? OL_KMIRROR_KNOWN : 0) | nparams);
  return set_in(&kernels, h, dev, kernel);
}
void ol_kmirror_clear(uint64_t h) { clear_in(&kernels, h, 1); }

// enter_kernel returns the slot of kernel h with the caller counted as a
// user, or NULL (not live); leave ends the use.
static inline qslot *enter_kernel(uint64_t h) {
  if ((h >> 56) != OL_QMIRROR_SYMBOL_TAG)
    return NULL;
  qslot *s = slot_in(&kernels, h, 0);
  if (s == NULL || atomic_load_explicit(&s->h, memory_order_relaxed) != h)
    return NULL;
  atomic_fetch_add(&s->users, 1);
  if (atomic_load(&s->h) != h) {
    atomic_fetch_sub_explicit(&s->users, 1, memory_order_release);
    return NULL;
  }
  return s;
}

static inline void leave(qslot *s) { atomic_fetch_sub_explicit(&s->users, 1, memory_order_release); }

// peek returns the slot of live queue h and its ol_fastq. ol_fastq memory
// is recycled, never freed (plugins/internal/fastq): a path that only
// reads the counters and the slot (and makes a done event of the queue)
// checks that the slot still holds h after reading (still); one that
// submits brackets the submission with submit_begin and ol_fastq_end.
static inline qslot *peek(uint64_t h, ol_fastq **q) {
  if ((h >> 56) != OL_QMIRROR_QUEUE_TAG)
    return NULL;
  qslot *s = slot_of(h, 0);
  if (s == NULL || atomic_load_explicit(&s->h, memory_order_acquire) != h)
    return NULL;
  *q = atomic_load_explicit(&s->q, memory_order_acquire);
  return *q == NULL ? NULL : s;
}

static inline int still(qslot *s, uint64_t h) {
  atomic_thread_fence(memory_order_acquire);
  return atomic_load_explicit(&s->h, memory_order_relaxed) == h;
}

// submit_begin counts a submission on q (the ol_fastq of queue h, from
// peek) as begun, then checks that the slot still holds h: 1, and the
// caller submits and calls ol_fastq_end; 0 (ended already) when h is
// gone. A destroy takes h out of the slot and, before the plugin releases
// the queue, waits until begun == handed (ol_qmirror_quiesce): both are
// sequentially consistent, so either this sees the slot cleared or the
// destroy sees the count. A caller that loaded q long ago may bump a
// block recycled for a later queue: a pair that block takes (fastq).
static inline int submit_begin(qslot *s, uint64_t h, ol_fastq *q) {
  ol_fastq_begin(q);
  if (atomic_load(&s->h) == h)
    return 1;
  ol_fastq_end(q);
  return 0;
}

int ol_fast_sync(const void *queue) {
  ol_fast_state st;
  ol_fastq *q;
  uint64_t h = (uint64_t)(uintptr_t)queue;
  if (!ol_fast_load(&st))
    return 0;
  qslot *s = peek(h, &q);
  return s != NULL && ol_fastq_idle(q) && still(s, h);
}

// on_device: size bytes at p lie inside one allocation of device dev.
static inline int on_device(const ol_fast_state *st, uint64_t p, uint64_t size, uint64_t dev) {
  ol_amap_hit a;
  return ol_amap_find(st->mem, p, &a) && a.dev == dev && p + size <= a.base + a.size;
}

// on_gpu_host: size bytes at p lie inside one host-visible allocation
// of a GPU (pinned or managed): memory the device reaches without the
// driver staging it, so the copy returns at once. A copy from or to other
// host memory may wait in the driver for the queue's earlier work, while
// it holds the queue's slot (which olDestroyQueue from a host function of
// that queue waits for): those take the Go path. *own: the allocation is
// the queue's device's.
static inline int on_gpu_host(const ol_fast_state *st, uint64_t p, uint64_t size, uint64_t qdev, int *own) {
  ol_amap_hit a;
  if (!ol_amap_find(st->mem, p, &a) || !(a.flags & OL_AMAP_FOREIGN) || a.kind == ALLOC_TYPE_DEVICE ||
      p + size > a.base + a.size)
    return 0;
  *own = a.dev == qdev;
  return 1;
}

// side_ok: one side of the copy, named with the queue's device qdev or
// with the host device, passes the Go path's checks (as the stricter
// tests above imply).
static inline int side_ok(const ol_fast_state *st, uint64_t p, uint64_t size, uint64_t named, uint64_t qdev,
                          int *own) {
  return named == qdev ? on_device(st, p, size, qdev) : on_gpu_host(st, p, size, qdev, own);
}

int ol_qmirror_copy(const ol_fast_state *st, uint64_t queue, uint64_t dst, uint64_t dstDev, uint64_t src,
                    uint64_t srcDev, size_t size) {
  if (size == 0 || dst + size < dst || src + size < src || (dst < src + size && src < dst + size))
    return 0;
  ol_fastq *q;
  qslot *s = peek(queue, &q);
  if (s == NULL)
    return 0;
  uint64_t qdev = atomic_load_explicit(&s->dev, memory_order_relaxed);
  int dir = -1, done = 0;
  if (dstDev == qdev && srcDev == qdev)
    dir = OL_FASTQ_ON_DEVICE;
  else if (dstDev == qdev && srcDev == st->host)
    dir = OL_FASTQ_TO_DEVICE;
  else if (srcDev == qdev && dstDev == st->host)
    dir = OL_FASTQ_FROM_DEVICE;
  int own = 0;
  // (qdev and the checks are the queue's when submit_begin finds it still
  // there: a slot's device changes only with its handle)
  if (dir >= 0 && q->copy != NULL && qdev != st->host && side_ok(st, dst, size, dstDev, qdev, &own) &&
      side_ok(st, src, size, srcDev, qdev, &own) && submit_begin(s, queue, q)) {
    done = q->copy(q, own && dir != OL_FASTQ_ON_DEVICE ? dir | OL_FASTQ_HOST_OWN : dir, dst, src, size);
    ol_fastq_end(q);
  }
  return done;
}

int ol_fast_event23(const void *queue, uint32_t flags, void *event) {
  ol_fast_state st;
  ol_fastq *q;
  uint64_t h = (uint64_t)(uintptr_t)queue, e;
  if (flags != 0 || event == NULL || !ol_fast_load(&st))
    return 0;
  qslot *s = peek(h, &q);
  if (s == NULL || !ol_fastq_idle(q))
    return 0;
  uint64_t dev = atomic_load_explicit(&s->dev, memory_order_relaxed);
  if (!still(s, h) || !ol_done_make(h, dev, &e))
    return 0;
  memcpy(event, &e, sizeof e);
  return 1;
}

int ol_fast_event(const void *queue, void *event) { return ol_fast_event23(queue, 0, event); }

int ol_fast_wait_events(const void *queue, const void *events, size_t n) {
  ol_fast_state st;
  ol_fastq *q;
  uint64_t h = (uint64_t)(uintptr_t)queue;
  // more events than the address space holds (the Go path's INVALID_SIZE,
  // impl/zentry.go userHandles): read none of them
  if (events == NULL || n == 0 || n > OL_QMIRROR_MAX_USER_RANGE / 8 ||
      (uintptr_t)events + n * 8 < (uintptr_t)events || !ol_fast_load(&st))
    return 0;
  qslot *s = peek(h, &q);
  if (s == NULL || !still(s, h))
    return 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t e;
    memcpy(&e, (const char *)events + i * sizeof e, sizeof e);
    if (!ol_done_get(e, NULL, NULL))
      return 0;
  }
  return 1;
}

// ol_qmirror_lay_out puts 23.1's nargs arguments where a kernel takes them, as
// impl/release23.go layOutArgs does: at the known parameters' offsets
// (their count and sizes must match); of a kernel whose parameters are
// unknown, one argument is the whole block, in place, and several have no
// layout (Go refuses them). One argument at offset 0 stays in place too.
// *args, *size: what to launch with. 0: Go lays it out (or names the
// error).
int ol_qmirror_lay_out(uint64_t kparams, const uint64_t *p, size_t nargs, void *const *ptrs, const size_t *sizes,
                       unsigned char *buf, const void **args, size_t *size) {
  int known = (kparams & OL_KMIRROR_KNOWN) != 0;
  if ((known && (kparams & OL_KMIRROR_COUNT) != nargs) || (!known && nargs > 1))
    return 0;
  uint64_t end = 0;
  for (size_t i = 0; i < nargs; i++) {
    if ((ptrs[i] == NULL && sizes[i] > 0) || sizes[i] > OL_QMIRROR_MAX_ARGS ||
        (uintptr_t)ptrs[i] + sizes[i] < (uintptr_t)ptrs[i] || (known && p[2 * i + 1] != sizes[i]))
      return 0;
    if (known && p[2 * i] + sizes[i] > end)
      end = p[2 * i] + sizes[i];
  }
  if (nargs == 0) {
    *args = NULL, *size = 0;
    return 1;
  }
  if (nargs == 1 && (!known || p[0] == 0)) {
    *args = sizes[0] ? ptrs[0] : NULL, *size = sizes[0];
    return 1;
  }
  if (end > OL_QMIRROR_LAYOUT_MAX)
    return 0;
  memset(buf, 0, end); // padding is zero, as the Go path leaves it
  for (size_t i = 0; i < nargs; i++)
    if (sizes[i])
      memcpy(buf + p[2 * i], ptrs[i], sizes[i]);
  *args = buf, *size = end;
  return 1;
}

// launch submits through the queue's plugin: the queue and the kernel
// mirrored, both of the named device. 22.1: the argument buffer args of
// size bytes; 23.1 (ptrs != NULL or nargs == 0 with for23): the arguments
// one by one, laid out by ol_qmirror_lay_out.
static int launch(const void *queue, const void *device, const void *kernel, const void *args, size_t size,
                  const void *launchSize, int for23, size_t nargs, void *const *ptrs, const size_t *sizes) {
  ol_fast_state st;
  if (queue == NULL || launchSize == NULL || (size > 0 && args == NULL) || size > OL_QMIRROR_MAX_ARGS ||
      (uintptr_t)args + size < (uintptr_t)args || !ol_fast_load(&st))
    return 0;
  uint64_t h = (uint64_t)(uintptr_t)queue;
  ol_fastq *q;
  qslot *s = peek(h, &q);
  if (s == NULL)
    return 0;
  int done = 0;
  uint64_t qdev = atomic_load_explicit(&s->dev, memory_order_relaxed);
  qslot *k = qdev == (uint64_t)(uintptr_t)device ? enter_kernel((uint64_t)(uintptr_t)kernel) : NULL;
  if (k != NULL) {
    _Alignas(16) unsigned char buf[OL_QMIRROR_LAYOUT_MAX];
    int args_ok = !for23 || ol_qmirror_lay_out(atomic_load_explicit(&k->kparams, memory_order_relaxed), k->kparam,
                                               nargs, ptrs, sizes, buf, &args, &size);
    if (args_ok && atomic_load_explicit(&k->dev, memory_order_relaxed) == qdev && q->launch != NULL &&
        submit_begin(s, h, q)) {
      done = q->launch(q, atomic_load_explicit(&k->q, memory_order_relaxed), args, size,
                       (const ol_fastq_launch_size *)launchSize);
      ol_fastq_end(q);
    }
    leave(k);
  }
  return done;
}

int ol_fast_launch(const void *queue, const void *device, const void *kernel, const void *args, size_t size,
                   const void *launchSize) {
  return launch(queue, device, kernel, args, size, launchSize, 0, 0, NULL, NULL);
}

// (the layout of ol_kernel_launch_prop_t: a 32-bit type, then a pointer)
typedef struct {
  uint32_t type;
  const void *data;
} launch_prop;

int ol_fast_launch23(const void *queue, const void *device, const void *kernel, const void *launchSize,
                     const void *properties, size_t numArgs, void *const *argPtrs, const size_t *argSizes) {
  if ((properties != NULL && ((const launch_prop *)properties)->type != 0) || (argPtrs == NULL) != (argSizes == NULL) ||
      (numArgs > 0 && argPtrs == NULL) || numArgs > OL_KMIRROR_COUNT)
    return 0;
  return launch(queue, device, kernel, NULL, 0, launchSize, 1, numArgs, argPtrs, argSizes);
}
