package host

/*
#cgo CFLAGS: -I${SRCDIR}/../../include -O2 -Wall
#include <string.h>
#include "exec.h"
*/
import "C"

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

type opKind uint8

const (
	opCopy opKind = iota
	opFill
	opLaunch
	opHostFunc
	opWait
)

// op is one piece of queued work.
type op struct {
	kind      opKind
	dst, src  uintptr
	size      uint64
	pattern   []byte
	kernel    *kernel
	args      []byte
	launch    plugin.LaunchSize
	fn, user  unsafe.Pointer
	waitQueue *queue
	waitMark  uint64
}

// queue runs its work in order on one goroutine, which exists only while
// there is work: an idle queue costs no goroutine. Counters never reset, so
// an event of an earlier user of a recycled queue stays correct.
type queue struct {
	dev  *Device
	mu   sync.Mutex
	cond sync.Cond
	ops  []op
	head int

	running  bool
	released bool
	err      error // first failure since the last Sync

	submitted atomic.Uint64 // written under mu
	completed atomic.Uint64 // written under mu
}

func newQueue(d *Device) *queue {
	q := &queue{dev: d}
	q.cond.L = &q.mu
	return q
}

func (q *queue) push(o op) {
	q.mu.Lock()
	q.ops = append(q.ops, o)
	q.submitted.Add(1)
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start {
		q.dev.runners.Add(1)
		go q.run()
	}
}

func (q *queue) run() {
	defer q.dev.runners.Done()
	for {
		q.mu.Lock()
		if q.head == len(q.ops) {
			if cap(q.ops) > 256 {
				q.ops = nil
			} else {
				q.ops = q.ops[:0]
			}
			q.head = 0
			q.running = false
			released := q.released
			q.cond.Broadcast()
			q.mu.Unlock()
			if released {
				q.dev.recycle(q)
			}
			return
		}
		o := q.ops[q.head]
		q.ops[q.head] = op{}
		q.head++
		q.mu.Unlock()

		err := q.dev.execute(&o)

		q.mu.Lock()
		if err != nil && q.err == nil {
			q.err = err
		}
		q.completed.Add(1)
		q.cond.Broadcast()
		q.mu.Unlock()
	}
}

// waitFor blocks until the work counted up to mark has completed.
func (q *queue) waitFor(mark uint64) {
	if q.completed.Load() >= mark {
		return
	}
	q.mu.Lock()
	for q.completed.Load() < mark {
		q.cond.Wait()
	}
	q.mu.Unlock()
}

// Memcpy implements plugin.Queue. Every device of this plugin shares the
// host's address space, so any pair is a plain copy.
func (q *queue) Memcpy(dst uintptr, dstDev plugin.Device, src uintptr, srcDev plugin.Device, size uint64) error {
	if !dstDev.IsHost() || !srcDev.IsHost() {
		return plugin.Unsupported("host", "a copy with memory of another platform's device")
	}
	if size == 0 {
		return nil
	}
	q.push(op{kind: opCopy, dst: dst, src: src, size: size})
	return nil
}

// Fill implements plugin.Queue.
func (q *queue) Fill(ptr uintptr, pattern []byte, size uint64) error {
	q.push(op{kind: opFill, dst: ptr, pattern: pattern, size: size})
	return nil
}

// Launch implements plugin.Queue. Sizes are checked now, so a bad launch
// fails at the call rather than at the next sync.
func (q *queue) Launch(k plugin.Kernel, args []byte, size plugin.LaunchSize) error {
	hk, ok := k.(*kernel)
	if !ok {
		return plugin.Unsupported("host", "a kernel of another device")
	}
	if err := q.dev.checkLaunch(hk, args, size); err != nil {
		return err
	}
	q.push(op{kind: opLaunch, kernel: hk, args: args, launch: size})
	return nil
}

// HostFunc implements plugin.Queue.
func (q *queue) HostFunc(fn, user unsafe.Pointer) error {
	q.push(op{kind: opHostFunc, fn: fn, user: user})
	return nil
}

// Record implements plugin.Queue.
func (q *queue) Record() (plugin.Event, error) {
	return &event{q: q, mark: q.submitted.Load()}, nil
}

// Wait implements plugin.Queue: later work waits; the caller does not.
func (q *queue) Wait(e plugin.Event) error {
	ev, ok := e.(*event)
	if !ok {
		return plugin.Unsupported("host", "waiting for an event of another platform")
	}
	if ev.q == q || ev.Done() {
		return nil
	}
	q.push(op{kind: opWait, waitQueue: ev.q, waitMark: ev.mark})
	return nil
}

// Sync implements plugin.Queue.
func (q *queue) Sync() error {
	q.waitFor(q.submitted.Load())
	q.mu.Lock()
	err := q.err
	q.err = nil
	q.mu.Unlock()
	return err
}

// Empty implements plugin.Queue.
func (q *queue) Empty() bool { return q.completed.Load() == q.submitted.Load() }

// Release implements plugin.Queue: the queue goes back to the device when
// its work has ended.
func (q *queue) Release() error {
	q.mu.Lock()
	q.released = true
	idle := !q.running
	q.mu.Unlock()
	if idle {
		q.dev.recycle(q)
	}
	return nil
}

// event is a point in a queue's work.
type event struct {
	q    *queue
	mark uint64
}

func (e *event) Sync() error    { e.q.waitFor(e.mark); return nil }
func (e *event) Done() bool     { return e.q.completed.Load() >= e.mark }
func (e *event) Release() error { return nil }

// execute runs one op on the queue's goroutine.
func (d *Device) execute(o *op) error {
	switch o.kind {
	case opCopy:
		C.memmove(ptr(o.dst), ptr(o.src), C.size_t(o.size))
	case opFill:
		C.ol_host_fill(ptr(o.dst), unsafe.Pointer(&o.pattern[0]), C.size_t(len(o.pattern)), C.size_t(o.size))
	case opLaunch:
		return d.runKernel(o.kernel, o.args, o.launch)
	case opHostFunc:
		C.ol_host_call(o.fn, o.user)
	case opWait:
		o.waitQueue.waitFor(o.waitMark)
	}
	return nil
}

// ptr turns an address of C memory into a pointer for a C call.
func ptr(a uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }
