// The C view of a device's allocator (plugin.FastAllocDevice): where the
// runtime's allocation pool (impl/pool.h) gets the large blocks, "slabs",
// that it cuts into the blocks olMemAlloc hands out, so that olMemAlloc
// and olMemFree of up to max_size bytes are answered in C from the pool
// without entering Go or the driver (RATIONALE.md, "Why is small memory pooled,
// and the pool in C?").
//
// The runtime calls alloc and free from Go (a slab is made when the pool
// has no free block of a size, released when the pool trims its idle
// memory, when an allocation fails, and at the final olShutDown), on any
// thread, never two at once for one device, never from a driver callback.
// The pool never reads or writes the memory itself (its bookkeeping is
// beside it), so device memory the CPU cannot touch may be pooled too.
#ifndef LIBOFFLOAD_GO_FASTALLOC_H
#define LIBOFFLOAD_GO_FASTALLOC_H

#include <stdint.h>

typedef struct ol_fastalloc ol_fastalloc;
struct ol_fastalloc {
  // alloc returns the address of n bytes of memory of the allocation kind
  // (OL_ALLOC_TYPE_*), aligned to at least 64 bytes, or 0 when the device
  // has no memory left (nothing else may fail).
  uint64_t (*alloc)(ol_fastalloc *a, uint64_t n, uint32_t kind);
  // free returns what alloc gave (the same n and kind).
  void (*free)(ol_fastalloc *a, uint64_t p, uint64_t n, uint32_t kind);
  // kinds: bit k set when memory of kind k may be pooled; the pool keeps
  // separate slabs per kind unless same_kinds is set (every kind is the
  // same memory, as on the host device)
  uint32_t kinds, same_kinds;
  // max_size: the largest allocation the pool serves (up to
  // OL_POOL_MAX_SIZE, 1 MiB; less is 64 KiB): 64 KiB where the device's own
  // allocation is cheap (the host: malloc), 1 MiB where it is a driver call
  uint64_t max_size;
  void *state; // the plugin's own
};

#endif
