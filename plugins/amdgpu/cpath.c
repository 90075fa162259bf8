// Copies and launches submitted from C (see lgo_hsa_cq in shim.h and
// RATIONALE.md, "Why do idle-queue syncs, events and GPU copies not enter
// Go?").
#include "shim.h"

#include <string.h>

#include "../plugin/fastq.h"

static inline int cq_trylock(lgo_hsa_cq *c) {
  uint32_t free = 0;
  return __atomic_compare_exchange_n(&c->lock, &free, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline void cq_unlock(lgo_hsa_cq *c) { __atomic_store_n(&c->lock, 0, __ATOMIC_RELEASE); }

// A done signal means that its operation and those before it are done;
// the slots before it are free, not its own: the operation after it may
// not have seen it done yet, and must not see it set again.
void lgo_hsa_cq_reclaim(lgo_hsa_cq *c) {
  for (uint64_t i = c->seen; i != c->next; i++) {
    uint32_t j = (uint32_t)(i & (c->cap - 1));
    if (!c->sigd[j])
      continue;
    int64_t v = lgo_hsa_signal_load(c->f, c->sig[j]);
    if (v > 0)
      break;
    if (v < 0 && c->failed == 0)
      c->failed = v;
    c->seen = i + 1;
    c->freed = i;
  }
}

// slot returns the index of the next C operation's slot, or -1 (then Go is
// asked for more slots).
static inline int64_t slot(lgo_hsa_cq *c) {
  if (c->broken || __atomic_load_n(&c->fault, __ATOMIC_ACQUIRE))
    return -1;
  if (c->next - c->freed >= c->cap) { // (also when cap is 0)
    lgo_hsa_cq_reclaim(c);
    if (c->next - c->freed >= c->cap) {
      c->want |= LGO_HSA_WANT_SLOTS;
      return -1;
    }
  }
  return (int64_t)(c->next & (c->cap - 1));
}

// What Queue.copy and Queue.copyHost do, after the operation before it;
// anything else (Go holds the queue, a failed HSA queue, no free slot, host
// memory the runtime does not know, a failed submission) is left to Go,
// which submits it or names the error.
static int lgo_hsa_fast_copy(ol_fastq *q, int dir, uint64_t dst, uint64_t src, uint64_t n) {
  lgo_hsa_cq *c = *(lgo_hsa_cq **)(q + 1);
  // host memory of a pool of this agent is at the same address for it: no
  // lookup (other host memory is looked up, as copyHost does)
  int own = (dir & OL_FASTQ_HOST_OWN) != 0;
  dir &= 3;
  if (!cq_trylock(c))
    return 0;
  int done = 0;
  int64_t j = slot(c);
  if (j >= 0 && c->last_nosig) // the launch before it completes a signal to wait for
    lgo_hsa_cq_seal(c, (uint32_t)((c->next - 1) & (c->cap - 1)));
  if (j >= 0) {
    uint64_t s = c->sig[j];
    uint32_t st = dir == OL_FASTQ_ON_DEVICE || own
                      ? lgo_hsa_copy_armed(c->f, dst, c->agent, src, c->agent, n, c->last, s)
                      : lgo_hsa_copy_host(c->f, dir == OL_FASTQ_FROM_DEVICE, dst, src, c->agent, n, c->last, s);
    if (st == 0) {
      c->sigd[j] = 1;
      c->next++;
      c->last = s;
      c->last_in_ring = 0;
      done = 1;
    }
  }
  cq_unlock(c);
  return done;
}

void *lgo_hsa_fast_copy_fn(void) { return (void *)lgo_hsa_fast_copy; }

// again: the kernel-argument buffer of the latest C operation (a launch
// without a signal, not absorbed) holds what this launch would write
// there (the same code object, layout, grid and argument bytes).
static inline int again(const lgo_hsa_cq *c, const lgo_hsa_fastk *k, const uint32_t *g, const uint32_t *b,
                        const void *args, uint64_t n) {
  if (c->next == c->absorbed || c->cap == 0)
    return 0;
  uint32_t p = (uint32_t)((c->next - 1) & (c->cap - 1));
  return !c->sigd[p] && c->karg[p] == c->kbuf && c->kbuf != 0 && c->kobj == k->object && c->kseg == k->seg &&
         c->koff == k->implicit_off && c->kn == n && memcmp(c->kgeo, g, 12) == 0 && memcmp(c->kgeo + 3, b, 12) == 0 &&
         (n == 0 || memcmp((const void *)c->kbuf, args, n) == 0);
}

// What Queue.launch checks (checkLaunch, the argument bytes) and writes
// (writeKernarg, a barrier-AND packet after work not on the HSA queue, the
// dispatch packet), on an HSA queue the kernel's program knows; anything
// else is left to Go, which launches or names the error.
static int lgo_hsa_fast_launch(ol_fastq *q, const void *kernel, const void *args, uint64_t size,
                               const ol_fastq_launch_size *ls) {
  lgo_hsa_cq *c = *(lgo_hsa_cq **)(q + 1);
  const lgo_hsa_fastk *k = kernel;
  if (__atomic_load_n(&k->last_hw, __ATOMIC_ACQUIRE) != c->id)
    return 0;
  const uint32_t *g = ls->NumGroups, *b = ls->GroupSize;
  uint64_t items[3], threads = 1;
  for (int i = 0; i < 3; i++) {
    items[i] = (uint64_t)g[i] * b[i];
    if (g[i] == 0 || b[i] == 0 || b[i] > k->group_max[i] || b[i] > 0xffff || items[i] > k->grid_max[i])
      return 0;
    threads *= b[i];
  }
  uint64_t xy, total;
  if (k->total_max > 0 && (__builtin_mul_overflow(items[0], items[1], &xy) ||
                           __builtin_mul_overflow(xy, items[2], &total) || total > k->total_max))
    return 0;
  uint64_t lds = (uint64_t)k->group_size + ls->DynSharedMemory;
  if (threads > k->max_group || ls->DynSharedMemory > k->lds_limit || lds > k->lds_limit || lds > 0xffffffffu ||
      (k->args_size >= 0 && size < (uint64_t)k->args_size) || k->seg > LGO_HSA_CKARG)
    return 0;
  if (!cq_trylock(c))
    return 0;
  uint64_t seg = k->seg, explicit = k->implicit_off >= 0 ? (uint64_t)k->implicit_off : seg;
  uint64_t n = size < explicit ? size : explicit;
  uint16_t dims = items[2] > 1 ? 3 : items[1] > 1 ? 2 : 1;
  uint8_t *buf = NULL;
  int64_t j = -1;
  if (again(c, k, g, b, args, n)) {
    // the same kernel arguments as the launch just before it, whose slot
    // is not absorbed and has no signal: its buffer serves again, and the
    // slot stands for both (what frees or seals it comes after both)
    if (__atomic_load_n(&c->fault, __ATOMIC_ACQUIRE) == 0)
      buf = (uint8_t *)c->kbuf;
  } else {
    j = slot(c);
    if (!c->kargs) {
      c->want |= LGO_HSA_WANT_KARGS;
      j = -1;
    }
    if (j >= 0)
      buf = (uint8_t *)c->karg[j];
  }
  if (buf == NULL) {
    cq_unlock(c);
    return 0;
  }
  if (j >= 0) {
    if (n)
      memcpy(buf, args, n);
    memset(buf + n, 0, seg - n);
    if (k->implicit_off >= 0) {
      uint64_t off = (uint64_t)k->implicit_off, hl = off + 256 <= seg ? 256 : seg > off ? seg - off : 0;
      uint8_t *h = buf + off;
      if (hl >= 12)
        memcpy(h, g, 12); // (little-endian, as the GPU)
      if (hl >= 18)
        for (int i = 0; i < 3; i++) {
          uint16_t v = (uint16_t)b[i];
          memcpy(h + 12 + 2 * i, &v, 2);
        }
      if (hl >= 66)
        memcpy(h + 64, &dims, 2);
    }
    c->kbuf = (uintptr_t)buf;
    c->kobj = k->object;
    c->kseg = k->seg;
    c->koff = k->implicit_off;
    c->kn = n;
    memcpy(c->kgeo, g, 12);
    memcpy(c->kgeo + 3, b, 12);
  }
  if (c->last != 0 && !c->last_in_ring)
    lgo_hsa_barrier(c->f, c->hq, c->last, 0, 0);
  // a signal every cap/4 slots frees the slots before it
  int sig = j >= 0 && ((c->next + 1) & (c->cap / 4 - 1)) == 0;
  lgo_hsa_dispatch(c->f, c->hq, dims, (uint16_t)b[0], (uint16_t)b[1], (uint16_t)b[2], (uint32_t)items[0],
                   (uint32_t)items[1], (uint32_t)items[2], k->private_size, (uint32_t)lds, k->object, (uintptr_t)buf,
                   0, sig ? c->sig[j] : 0, sig);
  if (j >= 0) {
    c->sigd[j] = (uint8_t)sig;
    c->next++;
  }
  c->last_in_ring = 1;
  c->last_nosig = !sig;
  if (sig)
    c->last = c->sig[j];
  cq_unlock(c);
  return 1;
}

void *lgo_hsa_fast_launch_fn(void) { return (void *)lgo_hsa_fast_launch; }

void lgo_hsa_cq_seal(lgo_hsa_cq *c, uint32_t i) {
  lgo_hsa_signal_store(c->f, c->sig[i], 1);
  lgo_hsa_barrier(c->f, c->hq, 0, 0, c->sig[i]);
  c->sigd[i] = 1;
  c->last = c->sig[i];
  c->last_in_ring = 1;
  c->last_nosig = 0;
}

// (for the tests: what the runtime does, counting included)
int lgo_hsa_fastq_copy(void *q, int dir, uint64_t dst, uint64_t src, uint64_t n) {
  ol_fastq *f = q;
  ol_fastq_begin(f);
  int done = f->copy(f, dir, dst, src, n);
  ol_fastq_end(f);
  return done;
}

int lgo_hsa_fastq_launch(void *q, const void *k, const void *args, uint64_t size, uint32_t gx, uint32_t gy,
                         uint32_t gz, uint32_t bx, uint32_t by, uint32_t bz, uint64_t dyn) {
  ol_fastq *f = q;
  ol_fastq_launch_size ls = {3, {gx, gy, gz}, {bx, by, bz}, dyn};
  ol_fastq_begin(f);
  int done = f->launch(f, k, args, size, &ls);
  ol_fastq_end(f);
  return done;
}
