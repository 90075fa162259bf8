// The allocation index and the fast paths over it. See allocmap.h.
#include "allocmap.h"
#include "pool.h"
#include "queuemirror.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define NLEVELS 30u
#define TOP_LEVEL (NLEVELS - 1)
#define NSTRIPES 1024u
#define MIN_BUCKETS 1024u
#define CHUNK_NODES 1024u
// a chain longer than this is walked again with twice the bound, once the
// stripe's counter shows it was not being rewritten
#define FIRST_WALK 4096u

typedef struct node {
  _Atomic(struct node *) next;
  _Atomic uint64_t key, base, size, dev, ext, meta; // meta: kind | aux << 32 | flags << 60
} node;

typedef struct chunk {
  struct chunk *next;
  uint64_t count;
  node n[];
} chunk;

// past this many nodes, chunks (and tables) are huge pages: at millions of
// allocations every random visit otherwise misses the TLB as well
#define HUGE (2u << 20)
#define HUGE_FROM_NODES (64u * 1024u)

// huge_alloc: zeroed memory of size bytes (a multiple of HUGE), asked for
// as huge pages
static void *huge_alloc(size_t size) {
  void *p = aligned_alloc(HUGE, size);
  if (p) {
    madvise(p, size, MADV_HUGEPAGE); // a hint: an error changes nothing
    memset(p, 0, size);
  }
  return p;
}

typedef struct table {
  struct table *retired; // the table this one replaced (freed with the index)
  uint64_t mask;
  _Atomic(node *) b[];
} table;

struct ol_amap {
  _Atomic uint64_t seq[NSTRIPES];
  _Atomic(table *) tab;
  _Atomic uint32_t levels; // bit L: level L has allocations
  // the writer's own, on other cache lines than what readers read
  _Alignas(64) uint64_t count[NLEVELS];
  uint64_t nodes;
  node *free;
  chunk *chunks;
};

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define ST(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)
// A node is linked into a chain with a release store and readers follow
// links with acquire loads, so a reader that finds a node also sees the
// node's fields and link as they were written before it was linked (and
// its chunk's zeroing), not older memory: with relaxed links a weakly
// ordered CPU (or the compiler) could let it follow a stale link into
// memory that is no node. On x86-64 both are plain moves.
#define LINK(x, v) atomic_store_explicit(&(x), (v), memory_order_release)
#define FOLLOW(x) atomic_load_explicit(&(x), memory_order_acquire)

// level l < TOP_LEVEL: granules of 2^(6+2l) bytes (64 B to 2^62 B)
static inline unsigned level_of(uint64_t size) {
  if (size <= 64)
    return 0;
  unsigned bits = 64 - (unsigned)__builtin_clzll(size - 1); // size <= 2^bits
  unsigned l = (bits - 6 + 1) / 2;
  return l > TOP_LEVEL - 1 ? TOP_LEVEL : l;
}

static inline uint64_t granule(uint64_t p, unsigned l) {
  return l == TOP_LEVEL ? 0 : p >> (6 + 2 * l);
}

static inline uint64_t key_of(unsigned l, uint64_t g) { return (uint64_t)l << 58 | g; }

static inline uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ull;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dull;
  x ^= x >> 33;
  return x;
}

static table *new_table(uint64_t buckets) {
  size_t size = sizeof(table) + buckets * sizeof(_Atomic(node *));
  table *t = size >= HUGE ? huge_alloc((size + HUGE - 1) / HUGE * HUGE) : calloc(1, size);
  if (t)
    t->mask = buckets - 1;
  return t;
}

ol_amap *ol_amap_new(void) {
  ol_amap *m = aligned_alloc(64, (sizeof *m + 63) / 64 * 64);
  if (!m)
    return NULL;
  memset(m, 0, sizeof *m);
  table *t = new_table(MIN_BUCKETS);
  if (!t) {
    free(m);
    return NULL;
  }
  atomic_store(&m->tab, t);
  return m;
}

void ol_amap_free(ol_amap *m) {
  if (!m)
    return;
  for (table *t = atomic_load(&m->tab); t;) {
    table *r = t->retired;
    free(t);
    t = r;
  }
  for (chunk *c = m->chunks; c;) {
    chunk *n = c->next;
    free(c);
    c = n;
  }
  free(m);
}

// Writer side. wlock/wunlock bracket a change of one stripe's chains.
static inline void wlock(ol_amap *m, uint64_t h) {
  _Atomic uint64_t *s = &m->seq[h & (NSTRIPES - 1)];
  ST(*s, LD(*s) + 1);
  atomic_thread_fence(memory_order_release);
}

static inline void wunlock(ol_amap *m, uint64_t h) {
  _Atomic uint64_t *s = &m->seq[h & (NSTRIPES - 1)];
  atomic_store_explicit(s, LD(*s) + 1, memory_order_release);
}

static node *take_node(ol_amap *m) {
  if (!m->free) {
    uint64_t count = CHUNK_NODES;
    chunk *c;
    if (m->nodes >= HUGE_FROM_NODES) {
      count = (HUGE - sizeof(chunk)) / sizeof(node);
      c = huge_alloc(HUGE);
    } else {
      c = calloc(1, sizeof(chunk) + count * sizeof(node));
    }
    if (!c)
      return NULL;
    c->count = count;
    c->next = m->chunks;
    m->chunks = c;
    for (uint64_t i = 0; i < count; i++) {
      ST(c->n[i].next, m->free);
      m->free = &c->n[i];
    }
  }
  node *n = m->free;
  m->free = LD(n->next);
  return n;
}

// grow doubles the table when it holds more nodes than buckets. Every
// stripe is odd while the chains are relinked into the new table, so
// every reader that started before waits and reads again; the old table
// stays allocated for readers that still hold it.
static int grow(ol_amap *m) {
  table *old = LD(m->tab);
  if (m->nodes + 2 <= old->mask + 1)
    return 1;
  table *t = new_table(2 * (old->mask + 1));
  if (!t)
    return 1; // keep going, with longer chains
  for (unsigned i = 0; i < NSTRIPES; i++)
    ST(m->seq[i], LD(m->seq[i]) + 1);
  atomic_thread_fence(memory_order_release);
  for (uint64_t i = 0; i <= old->mask; i++) {
    for (node *n = LD(old->b[i]); n;) {
      node *next = LD(n->next);
      uint64_t j = mix(LD(n->key)) & t->mask;
      ST(n->next, LD(t->b[j]));
      ST(t->b[j], n);
      n = next;
    }
  }
  t->retired = old;
  atomic_store_explicit(&m->tab, t, memory_order_release);
  for (unsigned i = 0; i < NSTRIPES; i++)
    atomic_store_explicit(&m->seq[i], LD(m->seq[i]) + 1, memory_order_release);
  return 1;
}

static int link_node(ol_amap *m, uint64_t key, const ol_amap_hit *a) {
  node *n = take_node(m);
  if (!n)
    return 0;
  uint64_t h = mix(key);
  table *t = LD(m->tab);
  wlock(m, h);
  ST(n->key, key);
  ST(n->base, a->base);
  ST(n->size, a->size);
  ST(n->dev, a->dev);
  ST(n->ext, a->ext);
  ST(n->meta, (uint64_t)a->kind | (uint64_t)a->aux << 32 | (uint64_t)(a->flags & 0xf) << 60);
  ST(n->next, LD(t->b[h & t->mask]));
  LINK(t->b[h & t->mask], n);
  wunlock(m, h);
  m->nodes++;
  return 1;
}

static void copy_hit(node *n, ol_amap_hit *out) {
  uint64_t meta = LD(n->meta);
  out->base = LD(n->base);
  out->size = LD(n->size);
  out->dev = LD(n->dev);
  out->ext = LD(n->ext);
  out->kind = (uint32_t)meta;
  out->aux = (uint32_t)(meta >> 32) & 0x0fffffffu;
  out->flags = (uint32_t)(meta >> 60);
}

static int unlink_node(ol_amap *m, uint64_t key, uint64_t base, ol_amap_hit *out) {
  uint64_t h = mix(key);
  table *t = LD(m->tab);
  _Atomic(node *) *at = &t->b[h & t->mask];
  for (node *n = LD(*at); n; at = &n->next, n = LD(n->next)) {
    if (LD(n->key) != key || LD(n->base) != base)
      continue;
    if (out)
      copy_hit(n, out);
    wlock(m, h);
    ST(*at, LD(n->next));
    ST(n->next, m->free);
    wunlock(m, h);
    m->free = n;
    m->nodes--;
    return 1;
  }
  return 0;
}

int ol_amap_insert(ol_amap *m, const ol_amap_hit *a) {
  if (m == NULL || a->size == 0 || !grow(m))
    return 0;
  unsigned l = level_of(a->size);
  uint64_t g0 = granule(a->base, l), g1 = granule(a->base + a->size - 1, l);
  // the level is visible before its first node: a reader that misses the
  // bit runs before the insert
  if (!(LD(m->levels) & (1u << l))) // readers share the line: write it rarely
    atomic_fetch_or_explicit(&m->levels, 1u << l, memory_order_release);
  if (!link_node(m, key_of(l, g0), a))
    goto undo;
  if (g1 != g0 && !link_node(m, key_of(l, g1), a)) {
    unlink_node(m, key_of(l, g0), a->base, NULL);
    goto undo;
  }
  m->count[l]++;
  return 1;
undo:
  if (m->count[l] == 0)
    atomic_fetch_and_explicit(&m->levels, ~(1u << l), memory_order_release);
  return 0;
}

void ol_amap_prefetch(const ol_amap *m, uint64_t base) {
  if (m == NULL)
    return;
  const table *t = LD(*(_Atomic(table *) *)&m->tab);
  uint32_t lv = LD(*(_Atomic uint32_t *)&m->levels);
  // the buckets of the granule at base and the next one, at every level in
  // use (the allocation's nodes are under one or both, at its level), load
  // together; then the first node of each chain. With a million
  // allocations each is a cache miss, now overlapped with the writer's
  // B+tree search and with one another rather than one after another.
  _Atomic(node *) const *at[2 * NLEVELS];
  unsigned k = 0;
  while (lv) {
    unsigned l = (unsigned)__builtin_ctz(lv);
    lv &= lv - 1;
    uint64_t g = granule(base, l);
    at[k++] = &t->b[mix(key_of(l, g)) & t->mask];
    if (l != TOP_LEVEL)
      at[k++] = &t->b[mix(key_of(l, g + 1)) & t->mask];
  }
  for (unsigned i = 0; i < k; i++)
    __builtin_prefetch((const void *)at[i], 0, 3);
  // the allocation's first line and the one before it, where the C
  // allocator keeps its header: the host device's free reads and writes
  // them right after (a prefetch never faults, whatever the address)
  __builtin_prefetch((const void *)(uintptr_t)(base - 16), 1, 3);
  __builtin_prefetch((const void *)(uintptr_t)base, 1, 3);
  for (unsigned i = 0; i < k; i++) {
    node *n = LD(*(_Atomic(node *) *)at[i]);
    if (n)
      __builtin_prefetch(n, 1, 3);
  }
}

int ol_amap_remove(ol_amap *m, uint64_t base, uint64_t size, ol_amap_hit *out) {
  if (m == NULL || size == 0)
    return 0;
  unsigned l = level_of(size);
  uint64_t g0 = granule(base, l), g1 = granule(base + size - 1, l);
  if (!unlink_node(m, key_of(l, g0), base, out))
    return 0;
  if (g1 != g0)
    unlink_node(m, key_of(l, g1), base, NULL);
  if (--m->count[l] == 0)
    atomic_fetch_and_explicit(&m->levels, ~(1u << l), memory_order_release);
  return 1;
}

static inline void relax(unsigned *spins) {
  if (++*spins > 64)
    sched_yield();
#if defined(__x86_64__) || defined(__i386__)
  else
    __builtin_ia32_pause();
#endif
}

// find_level looks for p among the allocations of level l.
static int find_level(const ol_amap *m, unsigned l, uint64_t p, ol_amap_hit *out) {
  uint64_t key = key_of(l, granule(p, l)), h = mix(key);
  _Atomic uint64_t *s = (_Atomic uint64_t *)&m->seq[h & (NSTRIPES - 1)];
  unsigned spins = 0;
  uint64_t bound = FIRST_WALK;
  for (;;) {
    uint64_t s0 = atomic_load_explicit(s, memory_order_acquire);
    if (s0 & 1) {
      relax(&spins);
      continue;
    }
    table *t = atomic_load_explicit((_Atomic(table *) *)&m->tab, memory_order_acquire);
    node *n = FOLLOW(t->b[h & t->mask]);
    int found = 0;
    uint64_t steps = 0;
    for (; n && steps < bound; n = FOLLOW(n->next), steps++) {
      if (LD(n->key) != key)
        continue;
      uint64_t b = LD(n->base), sz = LD(n->size);
      if (p - b < sz) {
        copy_hit(n, out);
        found = 1;
        break;
      }
    }
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(s, memory_order_relaxed) != s0) {
      relax(&spins);
      continue;
    }
    if (!found && n && steps == bound) {
      bound *= 2; // a long chain, not a changing one
      continue;
    }
    return found;
  }
}

// The fast paths below call the inline forms of the lookup, the published
// state's load and the range check: a call each fewer on the hottest
// calls (a copy between host buffers makes two range checks).
static inline int amap_find_raw(const ol_amap *m, uint64_t p, ol_amap_hit *out) {
  if (m == NULL) // released: the initialisation is over
    return 0;
  uint32_t lv = atomic_load_explicit((_Atomic uint32_t *)&m->levels, memory_order_acquire);
  while (lv) {
    unsigned l = (unsigned)__builtin_ctz(lv);
    lv &= lv - 1;
    if (find_level(m, l, p, out))
      return 1;
  }
  return 0;
}

int ol_amap_find_raw(const ol_amap *m, uint64_t p, ol_amap_hit *out) { return amap_find_raw(m, p, out); }

static inline int amap_find(const ol_amap *m, uint64_t p, ol_amap_hit *out) {
  if (!amap_find_raw(m, p, out))
    return 0;
  // allocations do not overlap: no other one contains p
  return (out->flags & OL_AMAP_SLAB) ? ol_pool_resolve(out, p) : 1;
}

int ol_amap_find(const ol_amap *m, uint64_t p, ol_amap_hit *out) { return amap_find(m, p, out); }

// ---- the fast paths ---------------------------------------------------------

// odd: nothing published
static _Atomic uint64_t fast_seq = 1;
static _Atomic uint64_t fast_host;
static _Atomic(ol_amap *) fast_mem, fast_globals;
static _Atomic int fast_multi;
static _Atomic uint64_t fast_pool_dev[OL_FAST_POOLS];
static _Atomic(struct ol_pool *) fast_pool[OL_FAST_POOLS];

void ol_fast_unpublish(void) {
  uint64_t s = LD(fast_seq);
  if ((s & 1) == 0)
    ST(fast_seq, s + 1);
  atomic_thread_fence(memory_order_seq_cst);
}

// ol_fast_clear_pools forgets the pools (after the unpublish, before the
// next initialisation adds its own)
void ol_fast_clear_pools(void) {
  for (unsigned i = 0; i < OL_FAST_POOLS; i++) {
    ST(fast_pool_dev[i], 0);
    ST(fast_pool[i], NULL);
  }
}

void ol_fast_add_pool(uint64_t dev, struct ol_pool *pool) {
  for (unsigned i = 0; i < OL_FAST_POOLS; i++) {
    if (LD(fast_pool_dev[i]) == 0 || LD(fast_pool_dev[i]) == dev) {
      ST(fast_pool[i], pool);
      ST(fast_pool_dev[i], dev);
      return;
    }
  }
}

struct ol_pool *ol_fast_pool(const ol_fast_state *st, uint64_t dev) {
  (void)st;
  for (unsigned i = 0; i < OL_FAST_POOLS; i++) {
    uint64_t d = LD(fast_pool_dev[i]);
    if (d == dev)
      return LD(fast_pool[i]);
    if (d == 0)
      break;
  }
  return NULL;
}

void ol_fast_publish(uint64_t host, ol_amap *mem, ol_amap *globals, int multi) {
  ol_fast_unpublish();
  if (host == 0 || mem == NULL || globals == NULL)
    return;
  ST(fast_host, host);
  ST(fast_mem, mem);
  ST(fast_globals, globals);
  ST(fast_multi, multi);
  atomic_store_explicit(&fast_seq, LD(fast_seq) + 1, memory_order_release);
}

static inline int fast_load(ol_fast_state *st) {
  uint64_t s = atomic_load_explicit(&fast_seq, memory_order_acquire);
  if (s & 1)
    return 0;
  st->host = LD(fast_host);
  st->mem = LD(fast_mem);
  st->globals = LD(fast_globals);
  st->multi = LD(fast_multi);
  atomic_thread_fence(memory_order_acquire);
  return atomic_load_explicit(&fast_seq, memory_order_relaxed) == s;
}

int ol_fast_load(ol_fast_state *st) { return fast_load(st); }

#define ALLOC_TYPE_DEVICE 1u

static inline __attribute__((always_inline)) int host_range_ok(const ol_fast_state *st, uint64_t p, uint64_t size) {
  ol_amap_hit a;
  if (amap_find(st->mem, p, &a)) {
    if (p + size > a.base + a.size)
      return 0;
    return !(st->multi && (a.flags & OL_AMAP_FOREIGN) && a.kind == ALLOC_TYPE_DEVICE);
  }
  return !(st->multi && amap_find(st->globals, p, &a) && (a.flags & OL_AMAP_FOREIGN));
}

// (see allocmap.h)
int ol_fast_host_range_ok(const ol_fast_state *st, uint64_t p, uint64_t size) { return host_range_ok(st, p, size); }

int ol_fast_memcpy(const void *queue, void *dst, const void *dstDev,
                   const void *src, const void *srcDev, size_t size) {
  if (dst == NULL || src == NULL)
    return 0;
  if (queue != NULL) {
    ol_fast_state qs;
    return fast_load(&qs) &&
           ol_qmirror_copy(&qs, (uint64_t)(uintptr_t)queue, (uint64_t)(uintptr_t)dst, (uint64_t)(uintptr_t)dstDev,
                           (uint64_t)(uintptr_t)src, (uint64_t)(uintptr_t)srcDev, size);
  }
  // a state of its own, which no call sees: it stays in registers
  ol_fast_state st;
  if (!fast_load(&st))
    return 0;
  if (size >= OL_FAST_MAX_COPY)
    return 0;
  if ((uint64_t)(uintptr_t)dstDev != st.host || (uint64_t)(uintptr_t)srcDev != st.host)
    return 0;
  if (size == 0)
    return 1;
  uint64_t d = (uint64_t)(uintptr_t)dst, s = (uint64_t)(uintptr_t)src;
  if (d + size < d || s + size < s || !host_range_ok(&st, d, size) || !host_range_ok(&st, s, size))
    return 0;
  memmove(dst, src, size);
  return 1;
}

// the size of each olGetMemInfo property (OL_MEM_INFO_*), 0: not one
static inline size_t meminfo_size(uint32_t prop) {
  switch (prop) {
  case 0: // DEVICE
  case 1: // BASE
  case 2: // SIZE
    return 8;
  case 3: // TYPE
    return 4;
  }
  return 0;
}

int ol_fast_meminfo(const void *ptr, uint32_t prop, size_t propSize, void *value) {
  ol_fast_state st;
  ol_amap_hit a;
  size_t n = meminfo_size(prop);
  if (ptr == NULL || value == NULL || n == 0 || propSize < n || !fast_load(&st) ||
      !amap_find(st.mem, (uint64_t)(uintptr_t)ptr, &a))
    return 0;
  uint64_t v = prop == 0 ? a.dev : prop == 1 ? a.base : a.size;
  if (prop == 3) {
    uint32_t k = a.kind;
    memcpy(value, &k, sizeof k);
  } else {
    memcpy(value, &v, sizeof v);
  }
  return 1;
}

int ol_fast_meminfo_size(const void *ptr, uint32_t prop, size_t *sizeRet) {
  ol_fast_state st;
  ol_amap_hit a;
  size_t n = meminfo_size(prop);
  if (ptr == NULL || sizeRet == NULL || n == 0 || !fast_load(&st) ||
      !amap_find(st.mem, (uint64_t)(uintptr_t)ptr, &a))
    return 0;
  *sizeRet = n;
  return 1;
}
