// Package fastq gives Go the counters of a queue that live in C memory
// (plugins/plugin/fastq.h), which the runtime's C entry points read and
// the plugin's C submissions bump.
package fastq

/*
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "../../plugin/fastq.h"

// Blocks are recycled, never given back to the C allocator: the runtime's
// C paths may read a queue's counters a moment after the queue is gone
// (impl/queuemirror.c), and must find counters there, not freed memory.
// The free list's link is the block's last word, past every field.
#define FASTQ_BLOCK 128
static pthread_mutex_t fastq_mu = PTHREAD_MUTEX_INITIALIZER;
static void *fastq_free;

static void *fastq_get(void) {
  pthread_mutex_lock(&fastq_mu);
  void *p = fastq_free;
  if (p != NULL)
    fastq_free = *(void **)((char *)p + FASTQ_BLOCK - sizeof(void *));
  pthread_mutex_unlock(&fastq_mu);
  if (p == NULL && (p = aligned_alloc(64, FASTQ_BLOCK)) == NULL)
    return NULL;
  memset(p, 0, FASTQ_BLOCK);
  return p;
}

static void fastq_put(void *p) {
  pthread_mutex_lock(&fastq_mu);
  *(void **)((char *)p + FASTQ_BLOCK - sizeof(void *)) = fastq_free;
  fastq_free = p;
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

// New returns the zeroed state of a new queue with extra bytes of the
// plugin's after it.
func New(extra uintptr) *State {
	if Size+extra > C.FASTQ_BLOCK-unsafe.Sizeof(uintptr(0)) {
		panic("fastq: a plugin's part is too large")
	}
	p := C.fastq_get()
	if p == nil {
		panic("fastq: out of memory")
	}
	c := (*C.ol_fastq)(p)
	s := &State{
		c:      c,
		Begun:  (*atomic.Uint64)(unsafe.Pointer(&c.begun)),
		Handed: (*atomic.Uint64)(unsafe.Pointer(&c.handed)),
		idle:   (*atomic.Uint64)(unsafe.Pointer(&c.idle)),
		stop:   (*atomic.Uint32)(unsafe.Pointer(&c.stop)),
		Extra:  unsafe.Add(p, Size),
	}
	runtime.AddCleanup(s, func(p unsafe.Pointer) { C.fastq_put(p) }, p)
	return s
}

// Ptr is the ol_fastq for the runtime (plugin.FastQueue).
func (s *State) Ptr() unsafe.Pointer { return unsafe.Pointer(s.c) }

// SetCopy installs the plugin's C copy function (an ol_fastq.copy).
func (s *State) SetCopy(fn unsafe.Pointer) {
	s.c.copy = (*[0]byte)(fn)
}

// SetLaunch installs the plugin's C launch function (an ol_fastq.launch).
func (s *State) SetLaunch(fn unsafe.Pointer) {
	s.c.launch = (*[0]byte)(fn)
}

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
