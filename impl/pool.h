// The allocation pool: olMemAlloc and olMemFree of up to the device's
// max_size bytes (64 KiB on the host device, 1 MiB on the GPUs), on a
// device that gives the runtime its allocator in C (plugin.FastAllocDevice,
// plugins/plugin/fastalloc.h), are blocks cut out of larger slabs of that
// device's memory (RATIONALE.md, "Why is small memory pooled, and the pool
// in C?").
//
// Size classes: multiples of 64 bytes (every block is 64-byte aligned, as
// the host device's own allocations), 64 to 256 B, then four classes per
// doubling up to 1 MiB (a block wastes under 25%): 52 classes, of which a
// device uses those up to its max_size. A slab of a class up to 64 KiB
// holds at least 16 blocks (256 KiB at least); one of a larger class is a
// single block, a whole driver allocation, so that each idle block can go
// back to the driver on its own.
//
// A slab is one allocation in the allocation map (allocmap.h, flag
// OL_AMAP_SLAB) whose node points at its descriptor, which keeps a word per
// block: the block's size and kind while it is allocated, 0 while it is
// free. So finding the allocation that contains an address (olGetMemInfo,
// copies' range checks, olMemFree) resolves a slab to its live block, or
// to nothing (a freed block stays detectable as freed), and allocating or
// freeing a block changes one word, not the map.
//
// Free blocks are kept by arenas: each thread takes one (round robin at its
// first use), a slab belongs to the arena that made it, and a freed block
// goes back to its slab's arena, each (kind, class) bin of an arena under
// its own spin lock. Two threads thus use different locks and cache lines:
// every descriptor, bin and stack of free blocks lies on cache lines of its
// own. A bin's stack of free blocks has room for every block of its slabs,
// so returning a block never allocates.
//
// What only Go can do (slabs enter and leave the allocation map under its
// writers' lock) Go does: the C paths answer when a free block is at hand
// and the idle memory stays under its bound, and otherwise send the call
// to Go, which makes a slab (ol_pool_slab_new, then ol_pool_slab_add) or
// frees the block and trims (ol_pool_trim, ol_pool_slab_release).
#ifndef LIBOFFLOAD_GO_POOL_H
#define LIBOFFLOAD_GO_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "../plugins/plugin/fastalloc.h"
#include "allocmap.h"

#define OL_POOL_HIDDEN __attribute__((visibility("hidden")))

#define OL_POOL_MAX_SIZE (1u << 20)
#define OL_POOL_SMALL_SIZE (64u << 10) // the largest class cut many to a slab
#define OL_POOL_CLASSES 52u
#define OL_POOL_KINDS 3u

typedef struct ol_pool ol_pool;
typedef struct ol_slab ol_slab;

// ol_pool_new makes the pool of the device with handle dev over src, with
// at most idle_max bytes of free blocks kept (beyond those in slabs that
// still have allocated blocks); NULL when out of memory.
ol_pool *ol_pool_new(uint64_t dev, ol_fastalloc *src, uint64_t idle_max) OL_POOL_HIDDEN;
// ol_pool_free releases every slab's memory and the pool (the final
// olShutDown, after the allocation map has let go of every slab).
void ol_pool_free(ol_pool *p) OL_POOL_HIDDEN;

// ol_pool_class is the class of size bytes, -1 when pool p does not serve
// that size (0 or over its device's max_size); ol_pool_kind_ok: 1 when the
// pool serves allocations of kind.
int ol_pool_class(const ol_pool *p, uint64_t size) OL_POOL_HIDDEN;
int ol_pool_kind_ok(const ol_pool *p, uint32_t kind) OL_POOL_HIDDEN;

// ol_pool_alloc takes a free block of the calling thread's arena for size
// bytes of kind and returns its address (never 0); 0 when the bin is
// empty. (A return value, not an out-parameter: Go's call keeps no pointer
// to its stack, so the Go path allocates nothing.)
uint64_t ol_pool_alloc(ol_pool *p, uint64_t size, uint32_t kind) OL_POOL_HIDDEN;

// ol_pool_slab_new makes a slab for size bytes of kind (its memory from the
// device, not yet in any bin): NULL when the device has no memory left.
// Go files it in the allocation map (ol_pool_slab_hit), then
// ol_pool_slab_add hands its blocks to the calling thread's arena and takes
// one for size bytes of kind (its address, or 0 when out of memory for the
// bin's stack: the slab then stays empty in the arena).
ol_slab *ol_pool_slab_new(ol_pool *p, uint64_t size, uint32_t kind) OL_POOL_HIDDEN;
void ol_pool_slab_hit(const ol_slab *s, ol_amap_hit *h) OL_POOL_HIDDEN;
uint64_t ol_pool_slab_add(ol_pool *p, ol_slab *s, uint64_t size, uint32_t kind) OL_POOL_HIDDEN;
// ol_pool_slab_release returns a slab's memory to the device (a slab from
// ol_pool_slab_new that never entered a bin, or one from ol_pool_trim that
// has left the allocation map).
void ol_pool_slab_release(ol_pool *p, ol_slab *s) OL_POOL_HIDDEN;

// ol_pool_resolve turns h, a slab found by the allocation map for address
// a, into the live block that contains a (flags OL_AMAP_POOLED, ext still
// the slab): 1, or 0 when a is in a free block or past its size.
int ol_pool_resolve(ol_amap_hit *h, uint64_t a) OL_POOL_HIDDEN;

// ol_hit_slab is the slab of a hit from the map (flag OL_AMAP_SLAB or
// OL_AMAP_POOLED; by value, so that Go passes C no pointer).
static inline ol_slab *ol_hit_slab(ol_amap_hit h) { return (ol_slab *)(uintptr_t)h.ext; }

// ol_pool_take marks the live block at base of slab s free in the map (its
// memory not yet back in a bin: olMemFree's memory may wait for queued
// work): 1, or 0 when base is not a live block's start.
int ol_pool_take(ol_slab *s, uint64_t base) OL_POOL_HIDDEN;
// ol_pool_put returns the block at base of s, taken, to its arena's bin.
void ol_pool_put(ol_slab *s, uint64_t base) OL_POOL_HIDDEN;
// ol_pool_over reports whether returning the block at base of s would take
// its arena's idle memory past the arena's limit (another share of the
// bound since the last check: then Go frees it and trims).
int ol_pool_over(const ol_slab *s, uint64_t base) OL_POOL_HIDDEN;

// ol_pool_trim takes out of the bins slabs whose blocks are all free, of
// the arena of slab s while the pool's idle memory (every arena's) is over
// the bound, and sets every arena's next limit (s NULL: every free slab of
// every arena: an allocation failed, or olShutDown); it writes up to cap of
// them to out and returns their number. Go takes them out of the map, then
// calls ol_pool_slab_release.
size_t ol_pool_trim(ol_pool *p, const ol_slab *s, ol_slab **out, size_t cap) OL_POOL_HIDDEN;

// ol_pool_slab_live copies the live block of s from block index *i on
// into h (as ol_pool_resolve) and advances *i past it: 1, or 0 when none
// is left (the leak report and the final olShutDown's drain).
int ol_pool_slab_live(const ol_slab *s, uint64_t *i, ol_amap_hit *h) OL_POOL_HIDDEN;
// ol_pool_slab_clear marks every block of s free (the final drain).
void ol_pool_slab_clear(ol_slab *s) OL_POOL_HIDDEN;

// What may make a free wait for queued work. The live queues of the queue
// mirror (up to OL_POOL_QUEUES of them) are registered by their ol_fastq
// (plugins/plugin/fastq.h): the C free path answers only when each is idle
// (ol_fastq_idle), else Go decides, as it would (impl/deferfree.go);
// ol_pool_queue_remove returns once no C path reads the ol_fastq any more
// (called when the queue is destroyed, before it is released).
// ol_pool_gate counts the rest: live queues not registered, queues being
// destroyed, and markers of destroyed queues' work (Go keeps it); the C
// free path answers only while it is 0.
#define OL_POOL_QUEUES 64u
int ol_pool_queue_add(void *fastq) OL_POOL_HIDDEN;
void ol_pool_queue_remove(void *fastq) OL_POOL_HIDDEN;
void ol_pool_gate_add(int64_t n) OL_POOL_HIDDEN;
void ol_pool_gate_reset(void) OL_POOL_HIDDEN;

// The C entry points' fast paths of olMemAlloc and olMemFree (the shims,
// cmd/liboffload/shim.h): 1 when answered, else 0 having done nothing.
int ol_fast_alloc(const void *device, uint32_t type, size_t size, void *out) OL_POOL_HIDDEN;
int ol_fast_free(const void *ptr) OL_POOL_HIDDEN;

#endif
