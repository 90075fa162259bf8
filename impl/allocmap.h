// The allocation index: where the allocation map (impl/memory.go) keeps its
// allocations so that C, without entering Go, finds the one that contains
// any address, and the fast paths of olMemcpy and olGetMemInfo that the C
// entry points try first (RATIONALE.md, "Why does the allocation map live
// in C, and copies between host buffers never enter Go?").
//
// Granules. An allocation of size s is filed at one level L, the smallest
// whose granule (2^(6+2L) bytes, 64 B to 2^62 B; level 29: the whole
// address space) holds s bytes, under the one or two granules of that
// level it touches: one node per granule, in a hash table keyed by (level,
// granule index). A granule of level L holds at most six allocations of
// that level (they are longer than 1/4 of it, except at level 0, and do
// not overlap),
// so finding the allocation that contains p costs one hash probe per
// level that has allocations (ol_amap levels), whatever the number of
// allocations, and an allocation of any size is filed in at most two
// nodes.
//
// Readers take no lock. The table is guarded by striped sequence counters
// (a seqlock per stripe of hash values): a writer makes its stripe's
// counter odd, changes the chains, and makes it even again; a reader reads
// a chain and checks that its stripe's counter did not move, else reads it
// again. Nodes are never returned to the system while the index lives
// (they are recycled on a free list) and every link is a whole node
// pointer written atomically, so a reader that races a writer walks valid
// nodes, for a bounded number of steps, and its check refuses what it saw.
// Writers are one at a time (the Go side holds allocMap.mu).
#ifndef LIBOFFLOAD_GO_ALLOCMAP_H
#define LIBOFFLOAD_GO_ALLOCMAP_H

#include <stddef.h>
#include <stdint.h>

#define OL_AMAP_HIDDEN __attribute__((visibility("hidden")))

typedef struct ol_amap ol_amap;

// ol_amap_hit is one allocation as the index keeps it. flags: bit 0 set
// when the allocation is not the host device's (see ol_fast_memcpy);
// OL_AMAP_SLAB: a slab of the allocation pool (pool.h), ext its
// descriptor: ol_amap_find answers with the slab's live block that
// contains the address, flagged OL_AMAP_POOLED (ext still the slab).
typedef struct {
  uint64_t base, size, dev, ext;
  uint32_t kind, aux, flags;
} ol_amap_hit;

#define OL_AMAP_FOREIGN 1u
#define OL_AMAP_SLAB 2u
#define OL_AMAP_POOLED 4u

ol_amap *ol_amap_new(void) OL_AMAP_HIDDEN;
void ol_amap_free(ol_amap *m) OL_AMAP_HIDDEN;
// ol_amap_insert files an allocation (the caller checked that it overlaps
// none); 0 when out of memory. ol_amap_remove takes out the allocation
// filed with exactly this base and size and copies it into out; 0 when
// there is none.
int ol_amap_insert(ol_amap *m, const ol_amap_hit *a) OL_AMAP_HIDDEN;
int ol_amap_remove(ol_amap *m, uint64_t base, uint64_t size,
                   ol_amap_hit *out) OL_AMAP_HIDDEN;
// ol_amap_prefetch starts loading, without waiting, what taking out the
// allocation at base will read next: ol_amap_remove's chains (of the
// granules at base and after it, at each level in use) and the memory at
// base and just below it (the host device's free: the C allocator's
// header). The writer calls it first and searches its own order meanwhile.
void ol_amap_prefetch(const ol_amap *m, uint64_t base) OL_AMAP_HIDDEN;
// ol_amap_find copies the allocation that contains p into out: 1, or 0
// when there is none.
int ol_amap_find(const ol_amap *m, uint64_t p, ol_amap_hit *out) OL_AMAP_HIDDEN;
// ol_amap_find_raw is ol_amap_find that answers with a slab itself.
int ol_amap_find_raw(const ol_amap *m, uint64_t p, ol_amap_hit *out) OL_AMAP_HIDDEN;

// The fast paths' view of the live initialisation, published by olInit
// (lifecycle.go) when tracing is off and withdrawn by the final olShutDown
// before anything is torn down: the host device's handle, the allocation
// map and the map of program globals, whether other platforms exist, and
// the allocation pools (pool.h) of up to OL_FAST_POOLS devices
// (ol_fast_add_pool, before the publish).
#define OL_FAST_POOLS 8
struct ol_pool;
void ol_fast_add_pool(uint64_t dev, struct ol_pool *pool) OL_AMAP_HIDDEN;
void ol_fast_publish(uint64_t host, ol_amap *mem, ol_amap *globals,
                     int multi) OL_AMAP_HIDDEN;
void ol_fast_unpublish(void) OL_AMAP_HIDDEN;
void ol_fast_clear_pools(void) OL_AMAP_HIDDEN;

// ol_fast_load copies what is published into st: 0 when nothing is (the
// Go path answers).
typedef struct {
  uint64_t host;
  ol_amap *mem, *globals;
  int multi;
} ol_fast_state;
int ol_fast_load(ol_fast_state *st) OL_AMAP_HIDDEN;
// ol_fast_pool is the published pool of device dev (a handle), or NULL.
struct ol_pool *ol_fast_pool(const ol_fast_state *st, uint64_t dev) OL_AMAP_HIDDEN;
// ol_fast_host_range_ok: the Go path's checkRange and sideDevice
// (impl/route.go) for a range of size bytes at p named with the host
// device, which does not wrap: it does not start in an allocation and run
// past its end, and it is not a GPU's DEVICE memory nor a GPU program's
// global (which Go refuses). What it lets through Go copies as named too:
// memory of the host device, a GPU's HOST or MANAGED memory (the CPU
// reaches it), memory the library does not know.
int ol_fast_host_range_ok(const ol_fast_state *st, uint64_t p, uint64_t size) OL_AMAP_HIDDEN;

// ol_fast_memcpy makes the copy and returns 1 when olMemcpy would succeed
// with a plain memmove (NULL queue, both devices the host device, checks
// passed, fewer than OL_FAST_MAX_COPY bytes), or submits it on a queue
// whose plugin takes copies from C (ol_qmirror_copy); else 0, having done
// nothing, and the Go path answers. ol_fast_meminfo and ol_fast_meminfo_size do the
// same for olGetMemInfo and olGetMemInfoSize. The shims in cmd/liboffload
// declare these themselves (shim.h).
int ol_fast_memcpy(const void *queue, void *dst, const void *dstDev,
                   const void *src, const void *srcDev, size_t size) OL_AMAP_HIDDEN;
int ol_fast_meminfo(const void *ptr, uint32_t prop, size_t propSize,
                    void *value) OL_AMAP_HIDDEN;
int ol_fast_meminfo_size(const void *ptr, uint32_t prop,
                         size_t *sizeRet) OL_AMAP_HIDDEN;

// copies from this size on go to the host device's threads (Go path):
// plugin.ParallelHostCopy
#define OL_FAST_MAX_COPY (8u << 20)

#endif
