// Package fastq gives Go the counters of a queue that live in C memory
// (plugins/plugin/fastq.h), which the runtime's C entry points read, and
// bump around the submissions they make through the plugin's C functions.
package fastq

/*
#include <pthread.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include "../../plugin/fastq.h"

// Blocks are recycled, never given back to the C allocator: the runtime's
// C paths may read a queue's counters a moment after the queue is gone
// (impl/queuemirror.c), and must find counters there, not freed memory.
// The free lists' link is the block's last word, past every field.
//
// A runtime C path that submits bumps begun before it checks that the
// queue is still there, and handed after (fastq.h); one that loaded a
// queue's block long before may so bump a recycled block, and then
// handed, at once. Such a pair must not disturb the block's next queue:
// blocks of queues that take C submissions (submits) are recycled only
// for such queues and keep their counters (a plugin of those counts
// positions only relatively), and the new queue starts seen idle after
// them; the others, read by C but never bumped, start from zero.
#define FASTQ_BLOCK 128
static pthread_mutex_t fastq_mu = PTHREAD_MUTEX_INITIALIZER;
static void *fastq_free[2];

static void *fastq_get(int submits) {
  pthread_mutex_lock(&fastq_mu);
  void *p = fastq_free[submits];
  if (p != NULL)
    fastq_free[submits] = *(void **)((char *)p + FASTQ_BLOCK - sizeof(void *));
  pthread_mutex_unlock(&fastq_mu);
  if (p == NULL) {
    if ((p = aligned_alloc(64, FASTQ_BLOCK)) == NULL)
      return NULL;
    memset(p, 0, FASTQ_BLOCK);
    return p;
  }
  if (!submits) {
    memset(p, 0, FASTQ_BLOCK);
    return p;
  }
  ol_fastq *q = p;
  memset((char *)p + offsetof(ol_fastq, idle), 0, FASTQ_BLOCK - offsetof(ol_fastq, idle));
  __atomic_store_n(&q->idle, __atomic_load_n(&q->begun, __ATOMIC_SEQ_CST), __ATOMIC_SEQ_CST);
  return p;
}

static void fastq_put(void *p, int submits) {
  pthread_mutex_lock(&fastq_mu);
  *(void **)((char *)p + FASTQ_BLOCK - sizeof(void *)) = fastq_free[submits];
  fastq_free[submits] = p;
  pthread_mutex_unlock(&fastq_mu);
}
*/
import "C"

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// State is a queue's ol_fastq, followed by extra bytes of the plugin's
// own (its C copy function reads them). The C memory is the queue's as
// long as the State is reachable (the plugin's queue object keeps it, and
// events or released queues that still read the counters keep the
// queue); then it is recycled for a later queue.
type State struct {
	c                   *C.ol_fastq
	Begun, Handed, idle *atomic.Uint64
	stop                *atomic.Uint32
	// Extra is the plugin's part, right after the ol_fastq.
	Extra unsafe.Pointer
}

// Size is the size of the shared part (sizeof(ol_fastq)).
const Size = C.sizeof_ol_fastq

// New returns the state of a new queue, seen idle, with extra bytes of
// the plugin's after it (zeroed), and the plugin's C copy and launch
// functions (an ol_fastq.copy and .launch; nil: none).
func New(extra uintptr, copyFn, launchFn unsafe.Pointer) *State {
	if Size+extra > C.FASTQ_BLOCK-unsafe.Sizeof(uintptr(0)) {
		panic("fastq: a plugin's part is too large")
	}
	submits := C.int(0)
	if copyFn != nil || launchFn != nil {
		submits = 1
	}
	p := C.fastq_get(submits)
	if p == nil {
		panic("fastq: out of memory")
	}
	c := (*C.ol_fastq)(p)
	c.copy, c.launch = (*[0]byte)(copyFn), (*[0]byte)(launchFn)
	s := &State{
		c:      c,
		Begun:  (*atomic.Uint64)(unsafe.Pointer(&c.begun)),
		Handed: (*atomic.Uint64)(unsafe.Pointer(&c.handed)),
		idle:   (*atomic.Uint64)(unsafe.Pointer(&c.idle)),
		stop:   (*atomic.Uint32)(unsafe.Pointer(&c.stop)),
		Extra:  unsafe.Add(p, Size),
	}
	runtime.AddCleanup(s, func(p unsafe.Pointer) { C.fastq_put(p, submits) }, p)
	return s
}

// Ptr is the ol_fastq for the runtime (plugin.FastQueue).
func (s *State) Ptr() unsafe.Pointer { return unsafe.Pointer(s.c) }

// Submitted returns the operations begun so far and whether every one of
// them has been handed over (none is being submitted now).
func (s *State) Submitted() (uint64, bool) {
	b := s.Begun.Load()
	return b, s.Handed.Load() == b
}

// IdleAt reports whether the queue was seen idle after its first b
// operations.
func (s *State) IdleAt(b uint64) bool { return s.idle.Load() == b }

// SawIdle records that every one of the first b operations was done.
func (s *State) SawIdle(b uint64) {
	for {
		cur := s.idle.Load()
		if cur >= b || s.idle.CompareAndSwap(cur, b) {
			return
		}
	}
}

// Held and Failed are the two stop reasons.
const (
	Held   = uint32(C.OL_FASTQ_HELD)
	Failed = uint32(C.OL_FASTQ_FAILED)
)

// Stopped reports whether reason is set.
func (s *State) Stopped(reason uint32) bool { return s.stop.Load()&reason != 0 }

// Stop sets reason; Go on clears it.
func (s *State) Stop(reason uint32) { s.stop.Or(reason) }

// Go clears reason.
func (s *State) Go(reason uint32) { s.stop.And(^reason) }
