package host

/*
#cgo CFLAGS: -I${SRCDIR}/../../include -O2 -Wall
#include <stdlib.h>
#include <string.h>
#include "exec.h"
*/
import "C"

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/cmem"
	"github.com/liboffload-go/liboffload-go/internal/fault"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fastq"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

type opKind uint8

const (
	opCopy opKind = iota
	opFill
	opLaunch
	opHostFunc
	opWait
	opCall
)

// op is one piece of queued work.
type op struct {
	kind        opKind
	dst, src    uintptr
	size        uint64
	patternSize uint64 // a fill's pattern is in args, or in C memory at src (src != 0)
	kernel      *kernel
	args        []byte // a launch's argument bytes or a fill's pattern, in the queue's arena
	launch      plugin.LaunchSize
	coop        bool // a cooperative launch: every group at once
	fn, user    unsafe.Pointer
	call        func() error // opCall
	waitQueue   *queue
	waitMark    uint64
	mark        uint64 // the queue's completed count once this op has run
}

// queue runs its work in order. Whoever holds the executor role runs the
// ops: a runner of the device's pool, handed the queue when work arrives on
// an idle queue, or a thread that waits for the queue and finds the work
// not yet started (it runs it itself instead of sleeping through two thread
// wake-ups). An idle queue holds no goroutine. Counters never reset, so an
// event of an earlier user of a recycled queue stays correct.
type queue struct {
	dev  *Device
	mu   sync.Mutex
	cond sync.Cond
	ops  opList
	// args holds the argument bytes of queued launches (ops slice it),
	// 16-byte aligned; reused once the queue is idle.
	args []byte
	job  kernelJob // the launch being run

	scheduled bool // handed to a runner that has not looked yet
	executing bool // someone holds the executor role
	released  bool
	pooled    bool // handed back to the device (exactly once per release)
	// direct: work runs when someone waits, on the waiting thread (a call
	// made without a queue); only host functions still get a runner.
	direct bool
	err    error // first failure since the last Sync (f's fastq.Failed mirrors err != nil)
	// waitingOn: the op being executed is a wait for that queue to reach
	// waitingMark (read when telling a wait that could never end)
	waitingOn   *queue
	waitingMark uint64

	// f holds the queue's counters in C memory (plugins/plugin/fastq.h),
	// where the runtime's C entry point of olSyncQueue reads them: a sync
	// of a queue seen idle with nothing queued since does not enter Go.
	// submitted (f.Begun) and f.Handed are both bumped under mu in push,
	// around putting the op on ops; Sync and Empty set f's idle mark when
	// they find the ops counted done and no failure. Work held back by a
	// host function is ops not yet completed, so fastq.Held is not used.
	f         *fastq.State
	submitted *atomic.Uint64 // written under mu
	completed atomic.Uint64  // written under mu
}

func newQueue(d *Device) *queue {
	q := &queue{dev: d, f: fastq.New(0, nil, nil)}
	q.submitted = q.f.Begun
	q.cond.L = &q.mu
	q.job.left.L = &d.pool.mu
	return q
}

// push queues o; a launch's argument bytes are copied into the queue's
// argument arena.
func (q *queue) push(o op, args []byte) {
	if q.pushLocked(o, args) {
		q.schedule()
	}
}

// pushLocked appends o under q's lock; true: q needs a runner.
func (q *queue) pushLocked(o op, args []byte) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	fault.Point()
	if len(args) > 0 {
		off := (len(q.args) + 15) &^ 15
		if off+len(args) > cap(q.args) {
			grown := make([]byte, off, max(256, 2*cap(q.args), off+len(args)))
			copy(grown, q.args)
			q.args = grown
		}
		q.args = append(q.args[:off], args...)
		o.args = q.args[off:len(q.args):len(q.args)]
	}
	o.mark = q.submitted.Add(1)
	q.ops.push(o)
	q.f.Handed.Add(1)
	start := !q.executing && !q.scheduled && (!q.direct || o.kind == opHostFunc)
	q.scheduled = q.scheduled || start
	return start
}

// schedule hands the queue to a runner of the device's pool.
func (q *queue) schedule() {
	q.dev.runners.Add(1)
	placed := false
	defer func() {
		if !placed {
			// a panic in the pool's bookkeeping (the entry layer
			// recovers it): q still gets a runner of its own, or its
			// work, a host function's included, would never run
			q.dev.pool.wg.Add(1)
			go q.dev.pool.runner(&runner{next: make(chan *queue, 1)}, q)
		}
	}()
	q.dev.pool.runQueue(q)
	placed = true
}

// runGuarded runs q on a pool runner. A panic in the queue's own
// bookkeeping (a panic in an op is already q's error) is recovered too:
// when the queue's lock is free it becomes q's error and waiters are
// woken; the runner goes on with other queues either way.
func (q *queue) runGuarded(r *runner) {
	defer func() {
		if v := recover(); v != nil && q.mu.TryLock() {
			if q.err == nil {
				q.err = internalError("queue runner", v)
				q.f.Stop(fastq.Failed)
			}
			q.cond.Broadcast()
			q.mu.Unlock()
		}
	}()
	q.run(r)
}

// run is runner r's turn with q: it takes the executor role unless a
// waiting thread already has it. Whenever r lets go of q, it tells the
// pool first (before q's lock is released), so that work arriving on q
// right after goes to r instead of a new runner.
func (q *queue) run(r *runner) {
	defer q.dev.runners.Done()
	// (a runner's goroutine, and the lock goes to execute: no fault point)
	q.mu.Lock()
	q.scheduled = false
	if q.executing {
		q.dev.pool.leaving(r)
		q.mu.Unlock() // the executor sees scheduled == false when it ends
		return
	}
	if q.ops.len() == 0 {
		recycle := q.recyclableLocked()
		q.dev.pool.leaving(r)
		q.mu.Unlock()
		if recycle {
			q.dev.recycle(q)
		}
		return
	}
	q.executing = true
	q.execute(^uint64(0), r)
}

// recyclableLocked reports, once, that a released queue has no work and
// nobody running it, so it can go back to the device.
func (q *queue) recyclableLocked() bool {
	if q.released && !q.pooled && !q.executing && !q.scheduled && q.ops.len() == 0 {
		q.pooled = true
		return true
	}
	return false
}

// execute runs ops until the queue is empty or mark ops have completed,
// on runner r or (r == nil) a waiting thread, which stops before a host
// function: those must run on a library thread. It is called with q.mu held
// and the executor role taken; it returns with the lock released and the
// role given up.
func (q *queue) execute(mark uint64, r *runner) {
	inline := r == nil
	for q.ops.len() > 0 && q.completed.Load() < mark && !(inline && q.ops.front().kind == opHostFunc) {
		o := q.ops.pop()
		if o.kind == opWait {
			q.waitingOn, q.waitingMark = o.waitQueue, o.waitMark
		}
		q.mu.Unlock()

		err := q.runOp(&o, inline)

		q.mu.Lock()
		q.waitingOn = nil
		if err != nil && q.err == nil {
			q.err = err
			q.f.Stop(fastq.Failed)
		}
		q.completed.Add(1)
		q.cond.Broadcast()
	}
	q.executing = false
	idle := q.ops.len() == 0
	if idle {
		if cap(q.args) > 64<<10 {
			q.args = nil
		} else {
			q.args = q.args[:0]
		}
	}
	restart := !idle && !q.scheduled && !q.direct
	q.scheduled = q.scheduled || restart
	recycle := q.recyclableLocked()
	q.cond.Broadcast()
	if r != nil {
		q.dev.pool.leaving(r)
	}
	q.mu.Unlock()
	if restart {
		// the caller stopped at its mark: the rest goes on in the background
		q.schedule()
	}
	if recycle {
		q.dev.recycle(q)
	}
}

// runOp runs one op outside q's lock. A panic (an internal inconsistency)
// becomes the op's error, so it is q's error at the next sync and the queue
// goes on with its later work.
func (q *queue) runOp(o *op, inline bool) (err error) {
	defer func() {
		if v := recover(); v != nil {
			where := "queue runner"
			if inline {
				where = "thread waiting for its queue"
			}
			err = internalError(where, v)
		}
	}()
	if !inline {
		hook("queue runner")
	}
	return q.dev.execute(q, o)
}

// waitFor blocks until the work counted up to mark has completed, running
// that work itself when nobody has started it.
func (q *queue) waitFor(mark uint64) {
	if q.completed.Load() >= mark {
		return
	}
	// (execute releases the lock and this takes it again: no deferred
	// unlock, and nothing here panics while it is held)
	q.mu.Lock()
	for q.completed.Load() < mark {
		if !q.executing && q.ops.len() > 0 && q.ops.front().kind != opHostFunc {
			q.executing = true
			q.execute(mark, nil)
			q.mu.Lock()
			continue
		}
		q.cond.Wait()
	}
	q.mu.Unlock()
}

// CopyToDevice implements plugin.Queue. The host device's memory is host
// memory, so every direction is a plain copy.
func (q *queue) CopyToDevice(dst uintptr, dev plugin.Device, src uintptr, size uint64) error {
	return q.copy(dst, dev, src, dev, size)
}

// CopyFromDevice implements plugin.Queue.
func (q *queue) CopyFromDevice(dst, src uintptr, dev plugin.Device, size uint64) error {
	return q.copy(dst, dev, src, dev, size)
}

// CopyDevice implements plugin.Queue.
func (q *queue) CopyDevice(dst uintptr, dstDev plugin.Device, src uintptr, srcDev plugin.Device, size uint64) error {
	return q.copy(dst, dstDev, src, srcDev, size)
}

func (q *queue) copy(dst uintptr, dstDev plugin.Device, src uintptr, srcDev plugin.Device, size uint64) error {
	if _, ok := dstDev.(*Device); !ok {
		return plugin.Unsupported("host", "a copy with memory of another platform's device")
	}
	if _, ok := srcDev.(*Device); !ok {
		return plugin.Unsupported("host", "a copy with memory of another platform's device")
	}
	if size == 0 {
		return nil
	}
	q.push(op{kind: opCopy, dst: dst, src: src, size: size}, nil)
	return nil
}

// maxGoPattern is the largest fill pattern kept in the queue's argument
// arena (Go memory, reused: the hot path allocates nothing); longer ones
// are copied to the C heap, where an allocation that cannot be made is an
// error instead of the end of the process.
const maxGoPattern = 4096

// Fill implements plugin.Queue: the pattern is copied now.
func (q *queue) Fill(ptr uintptr, pattern unsafe.Pointer, patternSize, size uint64) error {
	o := op{kind: opFill, dst: ptr, size: size, patternSize: patternSize}
	if patternSize <= maxGoPattern {
		q.push(o, unsafe.Slice((*byte)(pattern), patternSize))
		return nil
	}
	p, err := cmem.Copy(pattern, patternSize, "host: the copy of a fill pattern")
	if err != nil {
		return err
	}
	o.src = uintptr(p)
	q.push(o, nil)
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
	if !hk.prog.acquire() {
		return ol.Errorf(ol.ErrcInvalidArgument, "the program of kernel %q was destroyed", hk.name)
	}
	// only the bytes of the kernel's argument struct are kept (and read)
	q.push(op{kind: opLaunch, kernel: hk, launch: size}, args[:int(hk.desc.args_size)])
	return nil
}

// LaunchCooperative implements plugin.CooperativeQueue: Launch with every
// group on a thread of its own, so that ol_grid_barrier() works.
func (q *queue) LaunchCooperative(k plugin.Kernel, args []byte, size plugin.LaunchSize) error {
	hk, ok := k.(*kernel)
	if !ok {
		return plugin.Unsupported("host", "a kernel of another device")
	}
	if err := q.dev.checkLaunch(hk, args, size); err != nil {
		return err
	}
	max := MaxCooperativeGroups()
	if n := uint64(size.NumGroups.X) * uint64(size.NumGroups.Y) * uint64(size.NumGroups.Z); n > uint64(max) {
		return ol.Errorf(ol.ErrcInvalidArgument, "a cooperative launch of kernel %q has %d groups, more than the %d the host device runs at once",
			hk.name, n, max)
	}
	if !hk.prog.acquire() {
		return ol.Errorf(ol.ErrcInvalidArgument, "the program of kernel %q was destroyed", hk.name)
	}
	q.push(op{kind: opLaunch, kernel: hk, launch: size, coop: true}, args[:int(hk.desc.args_size)])
	return nil
}

// HostFunc implements plugin.Queue.
func (q *queue) HostFunc(fn, user unsafe.Pointer) error {
	q.push(op{kind: opHostFunc, fn: fn, user: user}, nil)
	return nil
}

// HostCall implements plugin.Queue: fn runs in the queue's order, on a
// runner or on a thread that waits for the queue.
func (q *queue) HostCall(fn func() error) error {
	q.push(op{kind: opCall, call: fn}, nil)
	return nil
}

// Record implements plugin.Queue.
func (q *queue) Record() (plugin.Event, error) {
	d := q.dev
	e := d.reuseEvent()
	if e == nil {
		e = new(event)
	}
	*e = event{q: q, mark: q.submitted.Load()}
	return e, nil
}

// Wait implements plugin.Queue: later work waits; the caller does not.
func (q *queue) Wait(e plugin.Event) error {
	var ev *event
	switch e := e.(type) {
	case *event:
		ev = e
	case *timedEvent:
		ev = &e.event
	default:
		return plugin.Unsupported("host", "waiting for an event of another platform")
	}
	if ev.q == q || ev.Done() {
		return nil
	}
	q.push(op{kind: opWait, waitQueue: ev.q, waitMark: ev.mark}, nil)
	return nil
}

// Sync implements plugin.Queue. From a host function of this queue (or one
// it waits for) it fails at once instead of waiting forever.
func (q *queue) Sync() error {
	o, whole := q.f.Submitted()
	if err := q.dev.hf.wait(q.dev.hf.current(), q, o, "olSyncQueue"); err != nil {
		return err
	}
	// the first o ops have completed, each having recorded its failure
	// first: err holds any of theirs not yet reported
	err := q.takeErr()
	if err == nil && whole {
		q.f.SawIdle(o)
	}
	return err
}

// Empty implements plugin.Queue. Finding the work done without a failure
// to report, it sets the idle mark too.
func (q *queue) Empty() bool {
	o, whole := q.f.Submitted()
	if q.completed.Load() < o {
		return false
	}
	if whole && !q.f.Stopped(fastq.Failed) {
		q.f.SawIdle(o)
	}
	return true
}

// Fast implements plugin.FastQueue (no copies from C: ol_fastq.copy is
// NULL).
func (q *queue) Fast() unsafe.Pointer { return q.f.Ptr() }

var _ plugin.FastQueue = (*queue)(nil)

// Release implements plugin.Queue: the queue goes back to the device when
// its work has ended.
func (q *queue) Release() error {
	q.dev.trackReleased(q)
	if q.markReleased() {
		q.dev.recycle(q)
	}
	return nil
}

// Position implements plugin.WaitGraphQueue.
func (q *queue) Position() uint64 { return q.submitted.Load() }

// Waits implements plugin.WaitGraphQueue.
func (q *queue) Waits(at uint64, visit func(plugin.Queue, uint64)) {
	if q.completed.Load() >= at {
		return
	}
	for _, t := range q.dev.hf.waitsOf(q, at) {
		visit(t.q, t.mark)
	}
}

// event is a point in a queue's work.
type event struct {
	q    *queue
	mark uint64
}

func (e *event) Sync() error {
	if e.q.completed.Load() >= e.mark {
		return nil
	}
	return e.q.dev.hf.wait(e.q.dev.hf.current(), e.q, e.mark, "olSyncEvent")
}
func (e *event) Done() bool { return e.q.completed.Load() >= e.mark }

// Release implements plugin.Event: the runtime calls it once, after its
// last use of the event, which then serves a later Record.
func (e *event) Release() error {
	d := e.q.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	fault.Point()
	d.events.Put(e, maxIdleEvents)
	return nil
}

// reuseEvent returns a released event to record into (nil: none).
func (d *Device) reuseEvent() *event {
	d.mu.Lock()
	defer d.mu.Unlock()
	fault.Point()
	return d.events.Get()
}

// takeErr returns the failure of q's completed work not yet reported,
// and lets the C paths use q again.
func (q *queue) takeErr() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	fault.Point()
	err := q.err
	q.err = nil
	q.f.Go(fastq.Failed)
	return err
}

// markReleased notes the queue's release; true: it can go back to the
// device now.
func (q *queue) markReleased() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	fault.Point()
	q.released = true
	return q.recyclableLocked()
}

// Point implements plugin.PointEvent.
func (e *event) Point() (plugin.Queue, uint64) { return e.q, e.mark }

// execute runs one op of q.
func (d *Device) execute(q *queue, o *op) error {
	switch o.kind {
	case opCopy:
		return d.copy(q, o.dst, o.src, o.size)
	case opFill:
		if o.src == 0 {
			C.ol_host_fill(ptr(o.dst), unsafe.Pointer(&o.args[0]), C.size_t(o.patternSize), C.size_t(o.size))
		} else {
			C.ol_host_fill(ptr(o.dst), ptr(o.src), C.size_t(o.patternSize), C.size_t(o.size))
			cmem.Free(ptr(o.src))
		}
	case opLaunch:
		return d.launch(q, o)
	case opHostFunc:
		d.hf.call(q, o)
	case opWait:
		o.waitQueue.waitFor(o.waitMark)
	case opCall:
		return o.call()
	}
	return nil
}

// launch runs a launch op; the program's reference is dropped even if the
// launch panics.
func (d *Device) launch(q *queue, o *op) (err error) {
	defer func() {
		if rerr := o.kernel.prog.release(); err == nil {
			err = rerr
		}
	}()
	if o.coop {
		return d.runCooperative(o.kernel, o.args, o.launch)
	}
	return d.runKernel(q, o.kernel, o.args, o.launch)
}

// ptr turns an address of C memory into a pointer for a C call.
func ptr(a uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }
