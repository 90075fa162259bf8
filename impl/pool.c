// The allocation pool and the C paths of olMemAlloc and olMemFree. See
// pool.h.
#include "pool.h"

#include "../plugins/plugin/fastq.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ARENAS 64u
#define SLAB_MIN (256u << 10)
#define SLAB_BLOCKS 16u
// a block's word: its size (up to 1 MiB: 21 bits) and kind, 0 when free
#define WORD_SIZE 0x0fffffffu
#define WORD_KIND_SHIFT 28

struct ol_slab {
  uint64_t base, bytes, csize;
  uint32_t nblocks, cls, kind, arena; // kind: of the slab's memory
  ol_pool *pool;
  // under the bin's lock
  uint32_t nfree;
  int dying; // taken out by a trim
  ol_slab *next;  // the bin's slabs (or the pool's spare descriptors)
  _Atomic uint32_t word[];
};

typedef struct {
  ol_slab *slab;
  uint64_t base;
} blk;

typedef struct {
  _Alignas(64) _Atomic int lock;
  uint32_t n, cap, total; // total: blocks of the bin's slabs (cap >= total)
  blk *stack;
  ol_slab *slabs;
} bin;

typedef struct {
  _Atomic int64_t idle; // bytes in free blocks of the arena's slabs
  _Atomic int64_t limit; // ol_pool_over's bound: the arena's idle at the last check, plus a share
  bin bins[OL_POOL_KINDS][OL_POOL_CLASSES];
} arena;

struct ol_pool {
  ol_fastalloc *src;
  uint64_t dev, max_size;
  uint32_t kinds, same_kinds; // src's, read by every call from here
  int64_t idle_max;
  int64_t share; // idle_max / (2 narenas)
  uint32_t narenas;
  pthread_mutex_t spare_mu;
  ol_slab *spare[OL_POOL_CLASSES]; // descriptors of released slabs, by class
  arena *arenas;
};

static uint64_t class_size[OL_POOL_CLASSES];
static pthread_once_t classes_once = PTHREAD_ONCE_INIT;

static void init_classes(void) {
  for (unsigned c = 0; c < OL_POOL_CLASSES; c++) {
    if (c < 4) {
      class_size[c] = 64u * (c + 1);
    } else {
      unsigned b = 8 + (c - 4) / 4, k = (c - 4) % 4 + 5;
      class_size[c] = (uint64_t)k << (b - 2);
    }
  }
}

static inline int class_of(uint64_t size) {
  if (size <= 256)
    return (int)((size + 63) / 64) - 1;
  unsigned b = 63 - (unsigned)__builtin_clzll(size - 1); // 2^b <= size-1 < 2^(b+1)
  return (int)(4 + (b - 8) * 4 + ((size - 1) >> (b - 2)) - 4);
}

int ol_pool_class(const ol_pool *p, uint64_t size) {
  return size == 0 || size > p->max_size ? -1 : class_of(size);
}

static inline unsigned kind_index(const ol_pool *p, uint32_t kind) {
  return p->same_kinds ? 0 : kind;
}

int ol_pool_kind_ok(const ol_pool *p, uint32_t kind) {
  return p != NULL && kind < OL_POOL_KINDS && (p->kinds >> kind & 1u);
}

// round64 rounds n up to whole cache lines
static inline size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

static inline void lock(bin *b) {
  unsigned spins = 0;
  for (;;) {
    if (!atomic_exchange_explicit(&b->lock, 1, memory_order_acquire))
      return;
    while (atomic_load_explicit(&b->lock, memory_order_relaxed)) {
      if (++spins > 100)
        sched_yield();
#if defined(__x86_64__) || defined(__i386__)
      else
        __builtin_ia32_pause();
#endif
    }
  }
}

static inline void unlock(bin *b) { atomic_store_explicit(&b->lock, 0, memory_order_release); }

ol_pool *ol_pool_new(uint64_t dev, ol_fastalloc *src, uint64_t idle_max) {
  pthread_once(&classes_once, init_classes);
  // read by every call: on cache lines that nothing else writes
  ol_pool *p = aligned_alloc(64, round64(sizeof *p));
  if (p == NULL)
    return NULL;
  memset(p, 0, sizeof *p);
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  uint32_t n = ncpu < 1 ? 1 : (uint32_t)ncpu * 2;
  if (n > MAX_ARENAS)
    n = MAX_ARENAS;
  p->arenas = aligned_alloc(64, sizeof(arena) * n);
  if (p->arenas == NULL) {
    free(p);
    return NULL;
  }
  memset(p->arenas, 0, sizeof(arena) * n);
  p->src = src;
  p->dev = dev;
  p->kinds = src->kinds;
  p->same_kinds = src->same_kinds;
  p->max_size = src->max_size > OL_POOL_SMALL_SIZE ? OL_POOL_MAX_SIZE : OL_POOL_SMALL_SIZE;
  p->narenas = n;
  // checked every share an arena takes back: idle memory stays under
  // idle_max plus a share per arena (1.5 idle_max)
  p->idle_max = idle_max > INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t)idle_max;
  p->share = p->idle_max / (2 * (int64_t)n);
  for (uint32_t i = 0; i < n; i++)
    atomic_store(&p->arenas[i].limit, p->share);
  pthread_mutex_init(&p->spare_mu, NULL);
  return p;
}

static void release_memory(ol_pool *p, ol_slab *s) {
  p->src->free(p->src, s->base, s->bytes, s->kind);
}

void ol_pool_free(ol_pool *p) {
  if (p == NULL)
    return;
  for (uint32_t a = 0; a < p->narenas; a++) {
    for (unsigned k = 0; k < OL_POOL_KINDS; k++) {
      for (unsigned c = 0; c < OL_POOL_CLASSES; c++) {
        bin *b = &p->arenas[a].bins[k][c];
        for (ol_slab *s = b->slabs; s;) {
          ol_slab *next = s->next;
          release_memory(p, s);
          free(s);
          s = next;
        }
        free(b->stack);
      }
    }
  }
  for (unsigned c = 0; c < OL_POOL_CLASSES; c++) {
    for (ol_slab *s = p->spare[c]; s;) {
      ol_slab *next = s->next;
      free(s);
      s = next;
    }
  }
  pthread_mutex_destroy(&p->spare_mu);
  free(p->arenas);
  free(p);
}

// the calling thread's arena: assigned round robin at its first use
// (initial-exec: read without a call into the dynamic linker; the Go
// runtime of this library takes static TLS already)
static __thread uint32_t my_arena __attribute__((tls_model("initial-exec"))); // 0: none yet, else index + 1
static _Atomic uint32_t next_arena;

static inline arena *arena_of(ol_pool *p, uint32_t *index) {
  uint32_t i = my_arena;
  if (__builtin_expect(i == 0, 0))
    my_arena = i = atomic_fetch_add_explicit(&next_arena, 1, memory_order_relaxed) % MAX_ARENAS + 1;
  *index = (i - 1) % p->narenas;
  return &p->arenas[*index];
}

static inline uint32_t word_of(uint64_t size, uint32_t kind) {
  return (uint32_t)size | kind << WORD_KIND_SHIFT;
}

uint64_t ol_pool_alloc(ol_pool *p, uint64_t size, uint32_t kind) {
  int c = ol_pool_class(p, size);
  if (c < 0 || !ol_pool_kind_ok(p, kind))
    return 0;
  uint32_t ai;
  arena *a = arena_of(p, &ai);
  bin *b = &a->bins[kind_index(p, kind)][c];
  lock(b);
  if (b->n == 0) {
    unlock(b);
    return 0;
  }
  blk k = b->stack[--b->n];
  k.slab->nfree--;
  unlock(b);
  atomic_fetch_sub_explicit(&a->idle, (int64_t)k.slab->csize, memory_order_relaxed);
  // the block is live once its word is: a reader that finds the word
  // finds the block
  atomic_store_explicit(&k.slab->word[(k.base - k.slab->base) / k.slab->csize], word_of(size, kind),
                        memory_order_release);
  return k.base;
}

ol_slab *ol_pool_slab_new(ol_pool *p, uint64_t size, uint32_t kind) {
  int c = ol_pool_class(p, size);
  if (c < 0 || !ol_pool_kind_ok(p, kind))
    return NULL;
  uint64_t cs = class_size[c];
  // up to 64 KiB, many blocks to a slab; larger, a slab is one block (a
  // whole driver allocation: an idle one goes back alone)
  uint64_t bytes = cs > OL_POOL_SMALL_SIZE ? cs : cs * SLAB_BLOCKS > SLAB_MIN ? cs * SLAB_BLOCKS : SLAB_MIN;
  uint32_t n = (uint32_t)(bytes / cs);
  uint32_t mkind = p->same_kinds ? 0 : kind;
  ol_slab *s = NULL;
  pthread_mutex_lock(&p->spare_mu);
  if ((s = p->spare[c]) != NULL)
    p->spare[c] = s->next;
  pthread_mutex_unlock(&p->spare_mu);
  // on cache lines of its own: another arena's slab is written by another
  // thread
  if (s == NULL && (s = aligned_alloc(64, round64(sizeof *s + sizeof(uint32_t) * n))) == NULL)
    return NULL;
  uint64_t base = p->src->alloc(p->src, bytes, mkind);
  if (base == 0) {
    pthread_mutex_lock(&p->spare_mu);
    s->next = p->spare[c];
    p->spare[c] = s;
    pthread_mutex_unlock(&p->spare_mu);
    return NULL;
  }
  s->base = base;
  s->bytes = bytes;
  s->csize = cs;
  s->nblocks = n;
  s->cls = (uint32_t)c;
  s->kind = mkind;
  s->arena = 0;
  s->pool = p;
  s->nfree = n;
  s->dying = 0;
  s->next = NULL;
  for (uint32_t i = 0; i < n; i++)
    atomic_store_explicit(&s->word[i], 0, memory_order_relaxed);
  return s;
}

void ol_pool_slab_hit(const ol_slab *s, ol_amap_hit *h) {
  h->base = s->base;
  h->size = s->bytes;
  h->kind = s->kind;
  h->ext = (uint64_t)(uintptr_t)s;
  h->flags |= OL_AMAP_SLAB;
}

static void spare(ol_pool *p, ol_slab *s) {
  pthread_mutex_lock(&p->spare_mu);
  s->next = p->spare[s->cls];
  p->spare[s->cls] = s;
  pthread_mutex_unlock(&p->spare_mu);
}

void ol_pool_slab_release(ol_pool *p, ol_slab *s) {
  release_memory(p, s);
  // the descriptor is kept for the next slab of its class: a reader that
  // found the slab in the map just before it left may still read it
  spare(p, s);
}

uint64_t ol_pool_slab_add(ol_pool *p, ol_slab *s, uint64_t size, uint32_t kind) {
  uint32_t ai;
  arena *a = arena_of(p, &ai);
  bin *b = &a->bins[kind_index(p, kind)][s->cls];
  lock(b);
  if (b->total + s->nblocks > b->cap) {
    uint32_t cap = b->cap ? b->cap : 64;
    while (cap < b->total + s->nblocks)
      cap *= 2;
    // on cache lines of its own (not realloc: another arena's stack may
    // follow it in the heap)
    blk *st = aligned_alloc(64, round64(sizeof(blk) * cap));
    if (st == NULL) {
      unlock(b);
      return 0;
    }
    if (b->n > 0)
      memcpy(st, b->stack, sizeof(blk) * b->n);
    free(b->stack);
    b->stack = st;
    b->cap = cap;
  }
  s->arena = ai;
  b->total += s->nblocks;
  s->next = b->slabs;
  b->slabs = s;
  // the first block is taken; the others go on the stack last first, so
  // that the next allocations walk up the slab
  for (uint32_t i = s->nblocks; i-- > 1;)
    b->stack[b->n++] = (blk){s, s->base + i * s->csize};
  s->nfree = s->nblocks - 1;
  unlock(b);
  atomic_fetch_add_explicit(&a->idle, (int64_t)(s->csize * (s->nblocks - 1)), memory_order_relaxed);
  atomic_store_explicit(&s->word[0], word_of(size, kind), memory_order_release);
  return s->base;
}

static inline uint32_t block_of(const ol_slab *s, uint64_t base) {
  return (uint32_t)((base - s->base) / s->csize);
}

int ol_pool_resolve(ol_amap_hit *h, uint64_t a) {
  const ol_slab *s = (const ol_slab *)(uintptr_t)h->ext;
  if (s == NULL || a - h->base >= h->size)
    return 0;
  uint64_t off = a - h->base, cs = s->csize;
  if (cs == 0 || off / cs >= s->nblocks)
    return 0;
  uint32_t w = atomic_load_explicit((_Atomic uint32_t *)&s->word[off / cs], memory_order_acquire);
  uint64_t size = w & WORD_SIZE, base = h->base + off / cs * cs;
  if (size == 0 || a - base >= size)
    return 0;
  h->base = base;
  h->size = size;
  h->kind = w >> WORD_KIND_SHIFT;
  h->flags = (h->flags & ~OL_AMAP_SLAB) | OL_AMAP_POOLED;
  return 1;
}

int ol_pool_take(ol_slab *s, uint64_t base) {
  if (base < s->base || base - s->base >= s->bytes || (base - s->base) % s->csize != 0)
    return 0;
  _Atomic uint32_t *w = &s->word[block_of(s, base)];
  uint32_t v = atomic_load_explicit(w, memory_order_relaxed);
  // one of two racing frees of the block wins
  while (v != 0)
    if (atomic_compare_exchange_weak_explicit(w, &v, 0, memory_order_acq_rel, memory_order_relaxed))
      return 1;
  return 0;
}

void ol_pool_put(ol_slab *s, uint64_t base) {
  ol_pool *p = s->pool;
  arena *a = &p->arenas[s->arena];
  bin *b = &a->bins[kind_index(p, s->kind)][s->cls];
  lock(b);
  b->stack[b->n++] = (blk){s, base}; // room for every block of its slabs
  s->nfree++;
  unlock(b);
  atomic_fetch_add_explicit(&a->idle, (int64_t)s->csize, memory_order_relaxed);
}

int ol_pool_over(const ol_slab *s, uint64_t base) {
  (void)base;
  const arena *a = &s->pool->arenas[s->arena];
  return atomic_load_explicit(&a->idle, memory_order_relaxed) + (int64_t)s->csize >
         atomic_load_explicit(&a->limit, memory_order_relaxed);
}

// trim_bin takes out of b its slabs whose blocks are all free, while the
// arena is over target (all: every one), writing them to out
static size_t trim_bin(arena *a, bin *b, int64_t target, int all, ol_slab **out, size_t cap) {
  size_t k = 0;
  lock(b);
  ol_slab **at = &b->slabs;
  for (ol_slab *s = *at; s && k < cap; s = *at) {
    if ((!all && atomic_load_explicit(&a->idle, memory_order_relaxed) <= target) || s->nfree != s->nblocks) {
      at = &s->next;
      continue;
    }
    *at = s->next;
    b->total -= s->nblocks;
    s->dying = 1;
    s->next = NULL;
    out[k++] = s;
    atomic_fetch_sub_explicit(&a->idle, (int64_t)(s->csize * s->nblocks), memory_order_relaxed);
  }
  if (k > 0) {
    uint32_t j = 0;
    for (uint32_t i = 0; i < b->n; i++)
      if (!b->stack[i].slab->dying)
        b->stack[j++] = b->stack[i];
    b->n = j;
  }
  unlock(b);
  return k;
}

size_t ol_pool_trim(ol_pool *p, const ol_slab *from, ol_slab **out, size_t cap) {
  size_t k = 0;
  if (from == NULL) {
    for (uint32_t ai = 0; ai < p->narenas && k < cap; ai++) {
      arena *a = &p->arenas[ai];
      for (unsigned c = OL_POOL_CLASSES; c-- > 0 && k < cap;)
        for (unsigned kd = 0; kd < OL_POOL_KINDS && k < cap; kd++)
          k += trim_bin(a, &a->bins[kd][c], 0, 1, out + k, cap - k);
    }
    return k;
  }
  // the bound is the pool's: an arena over its limit makes the pool give
  // back what it holds past idle_max (all arenas' idle memory together),
  // taken from the arenas holding the most first (an arena whose threads
  // have ended keeps its free blocks until then: trimming only the busy
  // caller's would send it back to the driver for every slab), so one busy
  // thread may keep the whole bound
  (void)from;
  uint64_t tried = 0; // narenas <= MAX_ARENAS = 64
  for (uint32_t round = 0; round < p->narenas && k < cap; round++) {
    int64_t total = 0, most = -1;
    arena *a = NULL;
    for (uint32_t ai = 0; ai < p->narenas; ai++) {
      int64_t idle = atomic_load_explicit(&p->arenas[ai].idle, memory_order_relaxed);
      total += idle;
      if (!(tried >> ai & 1) && idle > most) {
        most = idle;
        a = &p->arenas[ai];
      }
    }
    if (total <= p->idle_max || a == NULL || most <= 0)
      break;
    int64_t target = most - (total - p->idle_max);
    if (target < 0)
      target = 0;
    tried |= 1ull << (a - p->arenas);
    // largest classes first: fewest slabs for the most memory
    for (unsigned c = OL_POOL_CLASSES; c-- > 0 && k < cap;)
      for (unsigned kd = 0; kd < OL_POOL_KINDS && k < cap; kd++)
        k += trim_bin(a, &a->bins[kd][c], target, 0, out + k, cap - k);
    // (what it could not give, free blocks in slabs with live ones, the
    // next arena's round may)
  }
  // every arena may take back another share before the next check (what
  // could not be released, blocks still allocated in every slab, stays)
  for (uint32_t ai = 0; ai < p->narenas; ai++) {
    arena *b = &p->arenas[ai];
    atomic_store_explicit(&b->limit, atomic_load_explicit(&b->idle, memory_order_relaxed) + p->share,
                          memory_order_relaxed);
  }
  return k;
}

int ol_pool_slab_live(const ol_slab *s, uint64_t *i, ol_amap_hit *h) {
  for (; *i < s->nblocks; (*i)++) {
    uint32_t w = atomic_load_explicit((_Atomic uint32_t *)&s->word[*i], memory_order_acquire);
    if (w == 0)
      continue;
    h->base = s->base + *i * s->csize;
    h->size = w & WORD_SIZE;
    h->kind = w >> WORD_KIND_SHIFT;
    h->ext = (uint64_t)(uintptr_t)s;
    h->flags = (h->flags & ~OL_AMAP_SLAB) | OL_AMAP_POOLED;
    (*i)++;
    return 1;
  }
  return 0;
}

void ol_pool_slab_clear(ol_slab *s) {
  for (uint32_t i = 0; i < s->nblocks; i++)
    atomic_store_explicit(&s->word[i], 0, memory_order_relaxed);
}

// ---- the C paths of olMemAlloc and olMemFree ---------------------------------

static _Atomic int64_t gate;

void ol_pool_gate_add(int64_t n) { atomic_fetch_add(&gate, n); }
void ol_pool_gate_reset(void) { atomic_store(&gate, 0); }

// The live mirrored queues the C free path checks (pool.h). A reader
// counts itself in its arena's slot (seq_cst) before it reads the entries;
// a removal clears the entry (seq_cst), then waits until every slot has
// been seen at 0: a reader either sees the entry cleared or is waited for,
// so no ol_fastq is read after its queue's destroy went on.
static _Atomic(ol_fastq *) qreg[OL_POOL_QUEUES];
static _Atomic uint32_t qreg_count;
static struct {
  _Alignas(64) _Atomic uint64_t n;
} qreaders[MAX_ARENAS];
static pthread_mutex_t qreg_mu = PTHREAD_MUTEX_INITIALIZER;

int ol_pool_queue_add(void *fastq) {
  int ok = 0;
  pthread_mutex_lock(&qreg_mu);
  for (unsigned i = 0; i < OL_POOL_QUEUES && !ok; i++) {
    if (atomic_load(&qreg[i]) == NULL) {
      atomic_store(&qreg[i], (ol_fastq *)fastq);
      atomic_fetch_add(&qreg_count, 1);
      ok = 1;
    }
  }
  pthread_mutex_unlock(&qreg_mu);
  return ok;
}

void ol_pool_queue_remove(void *fastq) {
  int found = 0;
  pthread_mutex_lock(&qreg_mu);
  for (unsigned i = 0; i < OL_POOL_QUEUES; i++) {
    if (atomic_load(&qreg[i]) == fastq) {
      atomic_store(&qreg[i], NULL);
      atomic_fetch_sub(&qreg_count, 1);
      found = 1;
    }
  }
  pthread_mutex_unlock(&qreg_mu);
  if (!found)
    return;
  for (unsigned i = 0; i < MAX_ARENAS; i++)
    while (atomic_load(&qreaders[i].n) != 0)
      sched_yield();
}

// queues_idle: every registered queue is idle (ol_fastq_idle: its work has
// ended, as a sync or query found it), so no free has work to wait for
static int queues_idle(void) {
  if (atomic_load_explicit(&qreg_count, memory_order_seq_cst) == 0)
    return 1;
  uint32_t i = my_arena;
  if (i == 0)
    my_arena = i = atomic_fetch_add_explicit(&next_arena, 1, memory_order_relaxed) % MAX_ARENAS + 1;
  _Atomic uint64_t *r = &qreaders[i - 1].n;
  atomic_fetch_add_explicit(r, 1, memory_order_seq_cst);
  int idle = 1;
  for (unsigned k = 0; k < OL_POOL_QUEUES && idle; k++) {
    ol_fastq *q = atomic_load_explicit(&qreg[k], memory_order_seq_cst);
    if (q != NULL && !ol_fastq_idle(q))
      idle = 0;
  }
  atomic_fetch_sub_explicit(r, 1, memory_order_release);
  return idle;
}

int ol_fast_alloc(const void *device, uint32_t type, size_t size, void *out) {
  ol_fast_state st;
  if (out == NULL || size == 0 || size > OL_POOL_MAX_SIZE || !ol_fast_load(&st))
    return 0;
  ol_pool *p = ol_fast_pool(&st, (uint64_t)(uintptr_t)device);
  uint64_t a;
  if (p == NULL || (a = ol_pool_alloc(p, size, type)) == 0)
    return 0;
  memcpy(out, &a, sizeof a);
  return 1;
}

int ol_fast_free(const void *ptr) {
  ol_fast_state st;
  ol_amap_hit h;
  uint64_t a = (uint64_t)(uintptr_t)ptr;
  // with a queue that may have work (or destroyed queues' work) about, the
  // free may have to wait for it: Go decides
  if (ptr == NULL || atomic_load_explicit(&gate, memory_order_acquire) != 0 || !ol_fast_load(&st) ||
      !ol_amap_find(st.mem, a, &h) || !(h.flags & OL_AMAP_POOLED) || h.base != a || !queues_idle())
    return 0;
  ol_slab *s = (ol_slab *)(uintptr_t)h.ext;
  if (ol_pool_over(s, a) || !ol_pool_take(s, a))
    return 0;
  ol_pool_put(s, a);
  return 1;
}
