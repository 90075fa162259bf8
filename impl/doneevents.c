// The done events' store. See doneevents.h.
#include "doneevents.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "allocmap.h"

#define INDEX_MASK 0xffffffu
#define GEN_SHIFT 24
#define CHUNK_BITS 10u
#define CHUNK_SLOTS (1u << CHUNK_BITS)
#define NCHUNKS (OL_DONE_INDEX_BIT >> CHUNK_BITS)
#define RING 256u

typedef struct {
  _Atomic uint64_t h; // the live handle, or 0
  _Atomic uint64_t queue, dev;
  uint32_t gen; // the last generation minted (under lk)
  uint32_t pad_;
} dslot;

static _Atomic(dslot *) chunks[NCHUNKS];

// under lk: slots ever minted, the first generation of this
// initialisation, the highest minted, and the FIFO of free slots
static _Atomic int lk;
static uint32_t used, top;
static _Atomic uint32_t base = 1;
static uint32_t *fifo, fcap, fhead, fcount;

// minted handles not yet given out: ring[rhead..rtail) (mod RING); makers
// take at rhead with a CAS, mint adds at rtail under lk
static _Atomic uint64_t ring[RING];
static _Atomic uint64_t rhead, rtail;

static void lock(void) {
  while (atomic_exchange_explicit(&lk, 1, memory_order_acquire))
    while (atomic_load_explicit(&lk, memory_order_relaxed))
      sched_yield();
}

static void unlock(void) { atomic_store_explicit(&lk, 0, memory_order_release); }

// slot_at: the slot of index i (without OL_DONE_INDEX_BIT), or NULL when
// its chunk was never made (make: make it).
static dslot *slot_at(uint32_t i, int make) {
  _Atomic(dslot *) *cp = &chunks[i >> CHUNK_BITS];
  dslot *c = atomic_load_explicit(cp, memory_order_acquire);
  if (c == NULL && make) {
    void *m = mmap(NULL, sizeof(dslot) * CHUNK_SLOTS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
      return NULL;
    c = m;
    atomic_store_explicit(cp, c, memory_order_release);
  }
  return c == NULL ? NULL : &c[i & (CHUNK_SLOTS - 1)];
}

static inline uint32_t gen_of(uint64_t e) { return (uint32_t)(e >> GEN_SHIFT); }

// slot_of: the slot a handle of this store names, or NULL
static inline dslot *slot_of(uint64_t e) {
  if ((e >> 56) != OL_DONE_EVENT_TAG || !(e & OL_DONE_INDEX_BIT))
    return NULL;
  return slot_at((uint32_t)(e & INDEX_MASK & ~OL_DONE_INDEX_BIT), 0);
}

static inline int this_init(uint64_t e) {
  return (int32_t)(gen_of(e) - atomic_load_explicit(&base, memory_order_acquire)) >= 0;
}

// (lk held) free_slot queues slot index i for reuse.
static int free_slot(uint32_t i) {
  if (fcount == fcap) {
    uint32_t ncap = fcap ? 2 * fcap : 1024;
    uint32_t *n = malloc(sizeof *n * ncap);
    if (n == NULL)
      return 0; // the slot is lost to reuse; its generation stays
    for (uint32_t k = 0; k < fcount; k++)
      n[k] = fifo[(fhead + k) % fcap];
    free(fifo);
    fifo = n, fcap = ncap, fhead = 0;
  }
  fifo[(fhead + fcount) % fcap] = i;
  fcount++;
  return 1;
}

// (lk held) mint a handle of a free slot, not yet live: 1, or 0 when full.
static int mint(uint64_t *out) {
  uint32_t i;
  // (once every index has been used, freed slots are taken sooner)
  if (fcount > OL_DONE_REUSE_DELAY || (used >= OL_DONE_INDEX_BIT && fcount > 0)) {
    i = fifo[fhead];
    fhead = (fhead + 1) % fcap;
    fcount--;
  } else {
    if (used >= OL_DONE_INDEX_BIT)
      return 0;
    i = used;
  }
  dslot *s = slot_at(i, 1);
  if (s == NULL)
    return 0;
  if (i == used)
    used++;
  uint32_t b = atomic_load_explicit(&base, memory_order_relaxed), g = s->gen + 1;
  if ((int32_t)(g - b) < 0)
    g = b;
  s->gen = g;
  if ((int32_t)(g - top) > 0)
    top = g;
  *out = (uint64_t)OL_DONE_EVENT_TAG << 56 | (uint64_t)g << GEN_SHIFT | OL_DONE_INDEX_BIT | i;
  return 1;
}

// refill fills the ring; 0 when nothing could be minted.
static int refill(void) {
  lock();
  uint64_t tail = atomic_load_explicit(&rtail, memory_order_relaxed);
  uint64_t head = atomic_load_explicit(&rhead, memory_order_acquire), e;
  int n = 0;
  for (; tail - head < RING && mint(&e); tail++, n++)
    atomic_store_explicit(&ring[tail % RING], e, memory_order_relaxed);
  atomic_store_explicit(&rtail, tail, memory_order_release);
  unlock();
  return n > 0 || tail != head;
}

// take moves a minted handle out of the ring to *out: 1, or 0 when empty.
static int take(uint64_t *out) {
  uint64_t head = atomic_load_explicit(&rhead, memory_order_acquire);
  for (;;) {
    if (head == atomic_load_explicit(&rtail, memory_order_acquire))
      return 0;
    uint64_t e = atomic_load_explicit(&ring[head % RING], memory_order_relaxed);
    if (atomic_compare_exchange_weak(&rhead, &head, head + 1)) {
      *out = e;
      return 1;
    }
  }
}

// (lk held) drain gives the ring's minted handles back to the FIFO.
static void drain(void) {
  uint64_t e;
  while (take(&e))
    free_slot((uint32_t)(e & INDEX_MASK & ~OL_DONE_INDEX_BIT));
}

// (lk held) sweep destroys every live done event.
static void sweep(void) {
  for (uint32_t i = 0; i < used; i++) {
    dslot *s = slot_at(i, 0);
    uint64_t e = s ? atomic_load(&s->h) : 0;
    if (e != 0 && atomic_compare_exchange_strong(&s->h, &e, 0))
      free_slot(i);
  }
}

void ol_done_begin(void) {
  lock();
  drain();
  sweep();
  atomic_store(&base, top + 1);
  unlock();
}

void ol_done_end(void) {
  lock();
  drain();
  sweep();
  unlock();
}

int ol_done_make(uint64_t queue, uint64_t dev, uint64_t *out) {
  uint64_t e;
  while (!take(&e))
    if (!refill())
      return 0;
  dslot *s = slot_of(e);
  atomic_store_explicit(&s->queue, queue, memory_order_relaxed);
  atomic_store_explicit(&s->dev, dev, memory_order_relaxed);
  atomic_store_explicit(&s->h, e, memory_order_release);
  *out = e;
  return 1;
}

int ol_done_get(uint64_t e, uint64_t *queue, uint64_t *dev) {
  dslot *s = slot_of(e);
  if (s == NULL || !this_init(e) || atomic_load_explicit(&s->h, memory_order_acquire) != e)
    return 0;
  uint64_t q = atomic_load_explicit(&s->queue, memory_order_relaxed);
  uint64_t d = atomic_load_explicit(&s->dev, memory_order_relaxed);
  // still e: the fields read were e's, not a later event's of the slot
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&s->h, memory_order_relaxed) != e)
    return 0;
  if (queue)
    *queue = q;
  if (dev)
    *dev = d;
  return 1;
}

int ol_done_destroy(uint64_t e) {
  dslot *s = slot_of(e);
  uint64_t want = e;
  if (s == NULL || e == 0 || !this_init(e) || !atomic_compare_exchange_strong(&s->h, &want, 0))
    return 0;
  lock();
  free_slot((uint32_t)(e & INDEX_MASK & ~OL_DONE_INDEX_BIT));
  unlock();
  return 1;
}

int ol_done_state(uint64_t e) {
  if (!this_init(e))
    return OL_DONE_EARLIER;
  dslot *s = slot_of(e);
  if (s == NULL)
    return OL_DONE_NEVER;
  lock();
  int minted = (int32_t)(s->gen - gen_of(e)) >= 0;
  unlock();
  return minted ? OL_DONE_DESTROYED : OL_DONE_NEVER;
}

int ol_done_list(uint64_t *events, uint64_t *queues, int cap) {
  int n = 0;
  lock();
  for (uint32_t i = 0; i < used; i++) {
    dslot *s = slot_at(i, 0);
    uint64_t e = s ? atomic_load(&s->h) : 0;
    if (e == 0 || !this_init(e)) // (one left by a call that raced the last shutdown)
      continue;
    if (n < cap) {
      events[n] = e;
      queues[n] = atomic_load(&s->queue);
    }
    n++;
  }
  unlock();
  return n;
}

// the size of each olGetEventInfo property (OL_EVENT_INFO_*), 0: not one
static inline size_t info_size(uint32_t prop) { return prop == 0 ? 8 : prop == 1 ? 1 : 0; }

int ol_fast_event_info(const void *event, uint32_t prop, size_t propSize, void *value) {
  ol_fast_state st;
  uint64_t q;
  size_t n = info_size(prop);
  if (value == NULL || n == 0 || propSize < n || !ol_fast_load(&st) ||
      !ol_done_get((uint64_t)(uintptr_t)event, &q, NULL))
    return 0;
  if (prop == 0)
    memcpy(value, &q, sizeof q); // QUEUE
  else
    *(unsigned char *)value = 1; // IS_COMPLETE: a done event is
  return 1;
}

int ol_fast_event_info_size(const void *event, uint32_t prop, size_t *sizeRet) {
  ol_fast_state st;
  size_t n = info_size(prop);
  if (sizeRet == NULL || n == 0 || !ol_fast_load(&st) || !ol_done_get((uint64_t)(uintptr_t)event, NULL, NULL))
    return 0;
  *sizeRet = n;
  return 1;
}

int ol_fast_sync_event(const void *event) {
  ol_fast_state st;
  return ol_fast_load(&st) && ol_done_get((uint64_t)(uintptr_t)event, NULL, NULL);
}

int ol_fast_destroy_event(const void *event) {
  ol_fast_state st;
  return ol_fast_load(&st) && ol_done_destroy((uint64_t)(uintptr_t)event);
}
