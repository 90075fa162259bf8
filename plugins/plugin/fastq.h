// The C view of a queue (plugin.FastQueue): counters a plugin keeps for a
// queue in C memory, and the operations it can submit from C, so that the
// runtime's C entry points answer a sync of an idle queue and submit those
// operations without entering Go (RATIONALE.md, "Why do idle-queue syncs,
// events and GPU copies not enter Go?").
//
// For every operation submitted, from Go by the plugin, from C by the
// runtime around the plugin's copy or launch function below:
//   begun  += 1 before the operation is handed to the device (or held back),
//   handed += 1 once it has been (or has failed to be),
// so begun == handed means no submission is in flight (a C submission
// that then finds nothing to do also counts, as one operation that was
// handed; the runtime bumps begun before it checks that the queue is
// still there, so that a destroy, which waits for begun == handed before
// the plugin releases the queue, never misses it). The plugin also sets
//   idle = begun (never lowering it) when a sync or query, begun at a time
//   when begun == handed, found every operation done and no error,
//   stop: OL_FASTQ_HELD while the queue holds work back (a host function,
//   a wait for a held-back event), OL_FASTQ_FAILED while it has an error
//   to report: the C paths leave such a queue to Go.
// All fields are read and written with atomic operations (Go: sync/atomic
// on the same words, plugins/internal/fastq).
#ifndef LIBOFFLOAD_GO_FASTQ_H
#define LIBOFFLOAD_GO_FASTQ_H

#include <stddef.h>
#include <stdint.h>

#define OL_FASTQ_HELD 1u
#define OL_FASTQ_FAILED 2u

// copy directions of ol_fastq.copy
#define OL_FASTQ_TO_DEVICE 0   // host memory to the queue's device
#define OL_FASTQ_FROM_DEVICE 1 // the queue's device to host memory
#define OL_FASTQ_ON_DEVICE 2   // within the queue's device
// or-ed into a direction: the host side lies in an allocation of the
// queue's own device (memory its driver made, which the driver needs not
// look up)
#define OL_FASTQ_HOST_OWN 4

// The layout of ol_kernel_launch_size_args_t (api/offload.json), which the
// runtime passes to ol_fastq.launch as the caller gave it.
typedef struct {
  size_t Dimensions;
  uint32_t NumGroups[3], GroupSize[3];
  size_t DynSharedMemory;
} ol_fastq_launch_size;

typedef struct ol_fastq ol_fastq;
struct ol_fastq {
  uint64_t begun, handed, idle;
  uint32_t stop, pad_;
  // copy submits a copy of n bytes that do not overlap (dir: OL_FASTQ_*,
  // maybe with OL_FASTQ_HOST_OWN; the runtime checked both ranges and the
  // devices, and counts it as above): 1 when it is on the queue, 0 when
  // nothing was submitted (the Go path then makes it, and gives any
  // error). NULL: no copies from C.
  int (*copy)(ol_fastq *q, int dir, uint64_t dst, uint64_t src, uint64_t n);
  // launch submits kernel (the plugin's C view of a kernel of the queue's
  // device: plugin.FastKernel) with size argument bytes at args (not NULL
  // when size > 0) and the caller's launch size (the runtime counts it as
  // above), when every check of the Go path passes: 1 when it is on the queue, 0
  // when nothing was submitted (the Go path then launches, or gives the
  // error). NULL: no launches from C.
  int (*launch)(ol_fastq *q, const void *kernel, const void *args, uint64_t size, const ol_fastq_launch_size *ls);
};

// ol_fastq_idle: 1 when every operation of q is done and the queue has no
// held-back work and no error: a sync would return success at once.
static inline int ol_fastq_idle(ol_fastq *q) {
  uint64_t b = __atomic_load_n(&q->begun, __ATOMIC_ACQUIRE);
  return __atomic_load_n(&q->stop, __ATOMIC_ACQUIRE) == 0 &&
         __atomic_load_n(&q->handed, __ATOMIC_ACQUIRE) == b &&
         __atomic_load_n(&q->idle, __ATOMIC_ACQUIRE) == b;
}

// ol_fastq_begin and ol_fastq_end bracket a submission from C (the
// runtime's, impl/queuemirror.c).
static inline void ol_fastq_begin(ol_fastq *q) { __atomic_fetch_add(&q->begun, 1, __ATOMIC_SEQ_CST); }
static inline void ol_fastq_end(ol_fastq *q) { __atomic_fetch_add(&q->handed, 1, __ATOMIC_SEQ_CST); }

#endif
