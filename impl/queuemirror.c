// The queue mirror and the fast paths over it. See queuemirror.h.
#include "queuemirror.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "../plugins/plugin/fastq.h"

#define INDEX_MASK 0xffffffu // a handle's slot index (impl/handles.go)
#define CHUNK_BITS 10u
#define CHUNK_SLOTS (1u << CHUNK_BITS)
#define NCHUNKS ((INDEX_MASK + 1u) >> CHUNK_BITS)

// one cache line per queue: threads using different queues do not share
// lines
typedef struct {
  _Alignas(64) _Atomic uint64_t h;
  _Atomic uint64_t dev;
  _Atomic(ol_fastq *) q;
  _Atomic uint64_t users;
} qslot;

static _Atomic(qslot *) chunks[NCHUNKS];
static pthread_mutex_t grow = PTHREAD_MUTEX_INITIALIZER;

static qslot *slot_of(uint64_t h, int make) {
  uint32_t i = (uint32_t)(h & INDEX_MASK);
  _Atomic(qslot *) *cp = &chunks[i >> CHUNK_BITS];
  qslot *c = atomic_load_explicit(cp, memory_order_acquire);
  if (c == NULL && make) {
    pthread_mutex_lock(&grow);
    c = atomic_load_explicit(cp, memory_order_relaxed);
    if (c == NULL) {
      c = aligned_alloc(64, sizeof(qslot) * CHUNK_SLOTS);
      if (c != NULL) {
        for (uint32_t k = 0; k < CHUNK_SLOTS; k++) {
          atomic_init(&c[k].h, 0);
          atomic_init(&c[k].dev, 0);
          atomic_init(&c[k].q, NULL);
          atomic_init(&c[k].users, 0);
        }
        atomic_store_explicit(cp, c, memory_order_release);
      }
    }
    pthread_mutex_unlock(&grow);
  }
  return c == NULL ? NULL : &c[i & (CHUNK_SLOTS - 1)];
}

int ol_qmirror_set(uint64_t h, uint64_t dev, void *fastq) {
  qslot *s = slot_of(h, 1);
  if (s == NULL)
    return 0;
  atomic_store(&s->dev, dev);
  atomic_store(&s->q, (ol_fastq *)fastq);
  atomic_store(&s->h, h);
  return 1;
}

void ol_qmirror_clear(uint64_t h) {
  qslot *s = slot_of(h, 0);
  if (s == NULL || atomic_load(&s->h) != h)
    return;
  atomic_store(&s->h, 0);
  while (atomic_load(&s->users) != 0)
    sched_yield();
  atomic_store(&s->q, NULL);
}

// enter returns the slot of queue h with the caller counted as a user, or
// NULL (not a live mirrored queue); leave ends the use.
static inline qslot *enter(uint64_t h) {
  if ((h >> 56) != OL_QMIRROR_QUEUE_TAG)
    return NULL;
  qslot *s = slot_of(h, 0);
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

int ol_fast_sync(const void *queue) {
  ol_fast_state st;
  if (!ol_fast_load(&st))
    return 0;
  qslot *s = enter((uint64_t)(uintptr_t)queue);
  if (s == NULL)
    return 0;
  int idle = ol_fastq_idle(atomic_load_explicit(&s->q, memory_order_relaxed));
  leave(s);
  return idle;
}

// on_device: size bytes at p lie inside one allocation of device dev.
static inline int on_device(const ol_fast_state *st, uint64_t p, uint64_t size, uint64_t dev) {
  ol_amap_hit a;
  return ol_amap_find(st->mem, p, &a) && a.dev == dev && p + size <= a.base + a.size;
}

// side_ok: the checks of the Go path for one side of the copy, named with
// device named (the queue's device qdev or the host device).
static inline int side_ok(const ol_fast_state *st, uint64_t p, uint64_t size, uint64_t named, uint64_t qdev) {
  return named == qdev ? on_device(st, p, size, qdev) : ol_fast_host_range_ok(st, p, size);
}

int ol_qmirror_copy(const ol_fast_state *st, uint64_t queue, uint64_t dst, uint64_t dstDev, uint64_t src,
                    uint64_t srcDev, size_t size) {
  if (size == 0 || dst + size < dst || src + size < src || (dst < src + size && src < dst + size))
    return 0;
  qslot *s = enter(queue);
  if (s == NULL)
    return 0;
  ol_fastq *q = atomic_load_explicit(&s->q, memory_order_relaxed);
  uint64_t qdev = atomic_load_explicit(&s->dev, memory_order_relaxed);
  int dir = -1, done = 0;
  if (dstDev == qdev && srcDev == qdev)
    dir = OL_FASTQ_ON_DEVICE;
  else if (dstDev == qdev && srcDev == st->host)
    dir = OL_FASTQ_TO_DEVICE;
  else if (srcDev == qdev && dstDev == st->host)
    dir = OL_FASTQ_FROM_DEVICE;
  if (dir >= 0 && q->copy != NULL && qdev != st->host && side_ok(st, dst, size, dstDev, qdev) &&
      side_ok(st, src, size, srcDev, qdev))
    done = q->copy(q, dir, dst, src, size);
  leave(s);
  return done;
}
