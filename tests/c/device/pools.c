/* What pooled allocation must not weaken (issue 30): the GPU backends hand
 * freed allocations of up to 1 MiB out again without the driver, so these
 * allocate, free and allocate the same sizes to get pooled memory, and
 * check that
 *   - memory freed with work of it still queued is not handed out again
 *     before that work has completed (its data would land in the new
 *     allocation): the drivers' quarantine cannot see a pool's reuse, so
 *     this checks the data;
 *   - olGetMemInfo answers for interior pointers with the allocation as
 *     asked for, and one byte past its end is no allocation, although the
 *     block under it is larger (a size class);
 *   - copies are bounded by the allocation, not by the block.
 * On the host device the same checks hold for its allocator.
 * SPDX-License-Identifier: Apache-2.0 */
#include "oldevices.h"

static const ol_alloc_type_t types[] = {OL_ALLOC_TYPE_DEVICE, OL_ALLOC_TYPE_HOST, OL_ALLOC_TYPE_MANAGED};
static const char *const type_names[] = {"DEVICE", "HOST", "MANAGED"};
/* the kinds the device allocates: a remote device offers DEVICE memory
 * only (docs/remote.md; memory.c checks the refusal of the others) */
static size_t ntypes(void) { return olc_remote ? 1 : 3; }
/* sizes that a size class rounds up (512 B, then quarter steps) */
static const size_t sizes[] = {100, 1000, 5000, 70000, 1000000};

enum { TRIES = 8 }; /* allocations made while the freed memory's work waits */

/* Byte i of pattern seed. */
static inline uint8_t pat(unsigned seed, size_t i) { return (uint8_t)(i * 29 + seed * 101 + (i >> 8)); }

static void fill(uint8_t *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    p[i] = pat(seed, i);
}

/* The first offset where p differs from pattern seed, or -1. */
static long bad(const uint8_t *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != pat(seed, i))
      return (long)i;
  return -1;
}

/* Allocates and frees size bytes of type a few times, so that the next
 * allocation of that size is pooled memory where the device pools. */
static void warm(ol_alloc_type_t type, size_t size) {
  for (int i = 0; i < 3; i++) {
    void *p = NULL;
    if (OLC_OK(olMemAlloc(olc_dev, type, size, &p)))
      OLC_OK(olMemFree(p));
  }
}

/* A fill of memory is queued behind a gate, the memory freed, and TRIES
 * allocations of the same size made and written while the fill waits; when
 * the gate opens, each of them must still hold what was written to it,
 * and none may be the freed memory. */
static void test_no_reuse_before_queued_work(void) {
  for (size_t t = 0; t < ntypes(); t++)
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      size_t n = sizes[s];
      warm(types[t], n);
      uint8_t *src = malloc(n), *got = malloc(n);
      ol_queue_handle_t q = olc_queue();
      void *freed = NULL, *fresh[TRIES] = {0};
      if (!OLC_TRUE(src && got && q) || !OLC_OK(olMemAlloc(olc_dev, types[t], n, &freed))) {
        free(src);
        free(got);
        continue;
      }
      olc_gate g;
      bool gated = olc_gate_close(&g, q);
      uint8_t v = 0xee;
      OLC_OK(olMemFill(q, freed, 1, &v, n));
      OLC_OK(olMemFree(freed));
      fill(src, n, 2);
      bool distinct = true;
      for (int i = 0; i < TRIES; i++) {
        if (!OLC_OK(olMemAlloc(olc_dev, types[t], n, &fresh[i])))
          continue;
        distinct &= fresh[i] != freed;
        olc_put(types[t], fresh[i], src, n);
      }
      if (gated)
        olc_gate_open(&g);
      OLC_OK(olSyncQueue(q));
      OLC_CHECK(distinct, "%s %zu bytes: memory freed with a fill of it queued was handed out again before the fill ran",
                type_names[t], n);
      for (int i = 0; i < TRIES; i++) {
        if (!fresh[i])
          continue;
        memset(got, 0, n);
        olc_get(types[t], got, fresh[i], n);
        long at = bad(got, n, 2);
        OLC_CHECK(at < 0, "%s %zu bytes: allocation %d (%p, the freed one was %p) changed at offset %ld after the queued fill of freed memory ran",
                  type_names[t], n, i, fresh[i], freed, at);
        OLC_OK(olMemFree(fresh[i]));
      }
      OLC_OK(olDestroyQueue(q));
      free(src);
      free(got);
    }
}

/* Interior pointers of pooled memory: the allocation as asked for. */
static void test_interior_mem_info(void) {
  for (size_t t = 0; t < ntypes(); t++)
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      size_t n = sizes[s];
      warm(types[t], n);
      char *p = NULL;
      if (!OLC_OK(olMemAlloc(olc_dev, types[t], n, (void **)&p)))
        continue;
      char *where[] = {p, p + 1, p + n / 2, p + n - 1};
      for (size_t w = 0; w < 4; w++) {
        void *base = NULL;
        size_t size = 0;
        ol_alloc_type_t type = (ol_alloc_type_t)99;
        OLC_OK(olGetMemInfo(where[w], OL_MEM_INFO_BASE, sizeof base, &base));
        OLC_OK(olGetMemInfo(where[w], OL_MEM_INFO_SIZE, sizeof size, &size));
        OLC_OK(olGetMemInfo(where[w], OL_MEM_INFO_TYPE, sizeof type, &type));
        OLC_CHECK(base == p && size == n && type == types[t],
                  "%s %zu bytes: olGetMemInfo(base + %td) says base %p size %zu type %u, want %p %zu %u", type_names[t],
                  n, where[w] - p, base, size, (unsigned)type, (void *)p, n, (unsigned)types[t]);
      }
      void *base = NULL;
      OLC_ERR_CODE(olGetMemInfo(p + n, OL_MEM_INFO_BASE, sizeof base, &base), OL_ERRC_NOT_FOUND);
      OLC_OK(olMemFree(p));
    }
}

/* Copies and fills that run one byte past the allocation fail, also where
 * the block under it has room; those within it succeed. */
static void test_copies_bounded_by_allocation(void) {
  for (size_t t = 0; t < ntypes(); t++)
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      size_t n = sizes[s];
      warm(types[t], n);
      uint8_t *buf = calloc(1, n + 64);
      char *p = NULL;
      if (!OLC_TRUE(buf != NULL) || !OLC_OK(olMemAlloc(olc_dev, types[t], n, (void **)&p))) {
        free(buf);
        continue;
      }
      OLC_OK(olMemcpy(NULL, p, olc_dev, buf, olc_host, n));
      OLC_ERR_CODE(olMemcpy(NULL, p, olc_dev, buf, olc_host, n + 1), OL_ERRC_INVALID_SIZE);
      OLC_ERR_CODE(olMemcpy(NULL, buf, olc_host, p + 1, olc_dev, n), OL_ERRC_INVALID_SIZE);
      uint8_t v = 7;
      OLC_ERR_CODE(olMemFill(NULL, p + n - 1, 1, &v, 2), OL_ERRC_INVALID_SIZE);
      OLC_OK(olMemFree(p));
      free(buf);
    }
}

/* Many cycles of mixed pooled sizes keep their data apart. */
static void test_cycles_keep_data(void) {
  enum { LIVE = 16, CYCLES = 400 };
  void *live[LIVE] = {0};
  size_t lsize[LIVE] = {0};
  unsigned seed[LIVE] = {0};
  uint8_t *buf = malloc(1 << 16);
  if (!OLC_TRUE(buf != NULL))
    return;
  bool ok = true;
  for (unsigned c = 0; c < CYCLES && ok; c++) {
    int i = (int)(c * 7 % LIVE);
    if (live[i]) {
      olc_get(OL_ALLOC_TYPE_DEVICE, buf, live[i], lsize[i]);
      long at = bad(buf, lsize[i], seed[i]);
      ok &= OLC_CHECK(at < 0, "cycle %u: %zu-byte allocation %p changed at offset %ld", c, lsize[i], live[i], at);
      ok &= OLC_OK(olMemFree(live[i]));
    }
    lsize[i] = 1 + (c * 2654435761u) % (1 << 16);
    seed[i] = c;
    live[i] = NULL;
    ok &= OLC_OK(olMemAlloc(olc_dev, OL_ALLOC_TYPE_DEVICE, lsize[i], &live[i]));
    if (live[i]) {
      fill(buf, lsize[i], c);
      olc_put(OL_ALLOC_TYPE_DEVICE, live[i], buf, lsize[i]);
    }
  }
  for (int i = 0; i < LIVE; i++)
    if (live[i])
      OLC_OK(olMemFree(live[i]));
  free(buf);
}

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    OLC_RUN(test_no_reuse_before_queued_work);
    OLC_RUN(test_interior_mem_info);
    OLC_RUN(test_copies_bounded_by_allocation);
    OLC_RUN(test_cycles_keep_data);
  }
  return olc_finish("pools");
}
