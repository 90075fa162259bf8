// Copies submitted from C (see lgo_hsa_cq in shim.h and RATIONALE.md, "Why
// do idle-queue syncs, events and GPU copies not enter Go?").
#include "shim.h"

#include "../plugin/fastq.h"

static inline int cq_trylock(lgo_hsa_cq *c) {
  uint32_t free = 0;
  return __atomic_compare_exchange_n(&c->lock, &free, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline void cq_unlock(lgo_hsa_cq *c) { __atomic_store_n(&c->lock, 0, __ATOMIC_RELEASE); }

// slot returns the signal of the next C operation, or 0 (then Go is asked
// for more slots): a slot is free again once Go saw its run done.
static inline uint64_t slot(lgo_hsa_cq *c) {
  if (c->broken || c->cap == 0 || c->next - c->freed >= c->cap) {
    c->want = 1;
    return 0;
  }
  return c->sig[c->next & (c->cap - 1)];
}

// What Queue.copy and Queue.copyHost do, after the operation before it;
// anything else (Go holds the queue, a failed HSA queue, no free slot, host
// memory the runtime does not know, a failed submission) is left to Go,
// which submits it or names the error.
static int lgo_hsa_fast_copy(ol_fastq *q, int dir, uint64_t dst, uint64_t src, uint64_t n) {
  lgo_hsa_cq *c = *(lgo_hsa_cq **)(q + 1);
  if (!cq_trylock(c))
    return 0;
  int done = 0;
  uint64_t s = __atomic_load_n(&c->fault, __ATOMIC_ACQUIRE) ? 0 : slot(c);
  if (s != 0) {
    ol_fastq_begin(q);
    uint32_t st = dir == OL_FASTQ_ON_DEVICE
                      ? lgo_hsa_copy_armed(c->f, dst, c->agent, src, c->agent, n, c->last, s)
                      : lgo_hsa_copy_host(c->f, dir == OL_FASTQ_FROM_DEVICE, dst, src, c->agent, n, c->last, s);
    if (st == 0) {
      c->next++;
      c->last = s;
      c->last_in_ring = 0;
      done = 1;
    }
    ol_fastq_end(q);
  }
  cq_unlock(c);
  return done;
}

void *lgo_hsa_fast_copy_fn(void) { return (void *)lgo_hsa_fast_copy; }
