// The info snapshot: its readers (the C entry points' fast path) and its
// writers (the Go path publishing it, the final olShutDown). See
// snapshot.h.
#include "snapshot.h"

#include <string.h>

// odd: nothing published (the library starts uninitialised)
static _Atomic uint64_t ol_snap_seq = 1;
static _Atomic uint64_t ol_snap_words[OL_SNAP_WORDS];

// ol_snap_unpublish makes every reader that has not yet checked the
// counter fall back to the Go path. Nothing is freed: a reader still
// copying reads words that stay mapped, and its check refuses them.
void ol_snap_unpublish(void) {
  uint64_t s = atomic_load_explicit(&ol_snap_seq, memory_order_relaxed);
  if ((s & 1) == 0)
    atomic_store_explicit(&ol_snap_seq, s + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_seq_cst);
}

// ol_snap_publish copies n words into the snapshot and publishes them; a
// snapshot that does not fit stays unpublished (every query takes Go).
void ol_snap_publish(const uint64_t *words, size_t n) {
  ol_snap_unpublish();
  if (n > OL_SNAP_WORDS)
    return;
  uint64_t s = atomic_load_explicit(&ol_snap_seq, memory_order_relaxed);
  for (size_t i = 0; i < n; i++)
    atomic_store_explicit(&ol_snap_words[i], words[i], memory_order_relaxed);
  atomic_store_explicit(&ol_snap_seq, s + 1, memory_order_release);
}

#define OL_SNAP_LOAD(i) atomic_load_explicit(&ol_snap_words[(i)], memory_order_relaxed)

// ol_snap_find returns the word index of property prop of the object whose
// handle is exactly h (0: not in the snapshot). Every index read from the
// array is checked against its bounds, so a torn read of a snapshot being
// rewritten cannot reach outside it (the sequence check then refuses it).
static uint64_t ol_snap_find(unsigned kind, uint64_t h, uint32_t prop) {
  uint64_t dir = OL_SNAP_LOAD(kind % OL_SNAP_MAX_KINDS);
  uint64_t idx = h & OL_SNAP_INDEX_MASK, slots = dir & OL_SNAP_INDEX_MASK;
  uint64_t props = (dir >> 24) & 0xff, first = dir >> 32;
  if (h == 0 || idx >= slots || prop >= props)
    return 0;
  uint64_t rec = first + idx * (props + 1);
  if (rec + 1 + prop >= OL_SNAP_WORDS || OL_SNAP_LOAD(rec) != h)
    return 0;
  return rec + 1 + prop;
}

int ol_snap_info(unsigned kind, uint64_t h, uint32_t prop, size_t propSize,
                 void *value) {
  uint64_t seq = atomic_load_explicit(&ol_snap_seq, memory_order_acquire);
  if ((seq & 1) || value == NULL)
    return 0;
  uint64_t at = ol_snap_find(kind, h, prop);
  if (at == 0)
    return 0;
  uint64_t pv = OL_SNAP_LOAD(at);
  uint64_t size = pv & 0xffffffff, off = pv >> 32;
  uint64_t n = (size + 7) / 8;
  if (size == 0 || size > OL_SNAP_MAX_VALUE || size > propSize ||
      off + n > OL_SNAP_WORDS)
    return 0;
  uint64_t buf[OL_SNAP_MAX_VALUE / 8];
  for (uint64_t i = 0; i < n; i++)
    buf[i] = OL_SNAP_LOAD(off + i);
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&ol_snap_seq, memory_order_relaxed) != seq)
    return 0;
  memcpy(value, buf, size);
  return 1;
}

int ol_snap_size(unsigned kind, uint64_t h, uint32_t prop, size_t *sizeRet) {
  uint64_t seq = atomic_load_explicit(&ol_snap_seq, memory_order_acquire);
  if ((seq & 1) || sizeRet == NULL)
    return 0;
  uint64_t at = ol_snap_find(kind, h, prop);
  if (at == 0)
    return 0;
  uint64_t size = OL_SNAP_LOAD(at) & 0xffffffff;
  if (size == 0 || size > OL_SNAP_MAX_VALUE)
    return 0;
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&ol_snap_seq, memory_order_relaxed) != seq)
    return 0;
  *sizeRet = size;
  return 1;
}


int ol_snap_list(unsigned kind, uint64_t *out, int cap) {
  uint64_t seq = atomic_load_explicit(&ol_snap_seq, memory_order_acquire);
  if (seq & 1)
    return -1;
  uint64_t l = OL_SNAP_LOAD(OL_SNAP_MAX_KINDS + kind % OL_SNAP_MAX_KINDS);
  uint64_t n = l & 0xffffffff, off = (l >> 32) & 0x7fffffff;
  if ((l >> 63) == 0 || cap < 0 || n > (uint64_t)cap || off + n > OL_SNAP_WORDS)
    return -1;
  for (uint64_t i = 0; i < n; i++)
    out[i] = OL_SNAP_LOAD(off + i);
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&ol_snap_seq, memory_order_relaxed) != seq)
    return -1;
  return (int)n;
}
