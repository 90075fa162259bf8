package cuda

/*
#include <stdlib.h>
#include <string.h>
#include "shim.h"

// Fills size bytes at dst with repeats of the psize-byte pattern (the CPU
// side of a fill of pageable memory).
static void lgo_cu_host_fill(uintptr_t dst, const void *pat, size_t psize, size_t size) {
  char *d = (char *)dst;
  size_t done = psize < size ? psize : size;
  memcpy(d, pat, done);
  while (done < size) {
    size_t n = done < size - done ? done : size - done;
    memcpy(d + done, d, n);
    done += n;
  }
}
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/cmem"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fastq"
	"github.com/liboffload-go/liboffload-go/plugins/internal/gpu"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// handle operations of lgo_cu_handle_op
const (
	opStreamDestroy = iota
	opStreamSync
	opStreamQuery
	opEventDestroy
	opEventQuery
	opEventSync
)

const (
	maxIdleStreams = 64
	maxIdleEvents  = 256
)

// streams hands out the device's streams: released streams whose work has
// ended are reused; a released stream with work goes to the outstanding
// list until a later NewQueue finds it idle, or Deinit waits for it.
type streams struct {
	mu          sync.Mutex
	idle        gpu.Pool[C.uintptr_t]
	outstanding []*Queue              // released with work pending (on the stream or held back)
	events      gpu.Pool[C.uintptr_t] // idle events
	eventObjs   gpu.Pool[*Event]      // released Event objects, reused by Record
}

func (d *Device) handleOp(op C.int, h C.uintptr_t) C.int {
	return C.lgo_cu_handle_op(d.drv.run, d.ctx, op, h)
}

// NewQueue implements plugin.Device.
func (d *Device) NewQueue() (plugin.Queue, error) {
	s := d.reuseStream()
	if s == 0 {
		if err := d.call("cuStreamCreate", C.lgo_cu_stream_create(d.drv.run, d.ctx, &s)); err != nil {
			return nil, err
		}
	}
	f := fastq.New(C.sizeof_lgo_cu_fastq, C.lgo_cu_fast_copy_fn(), C.lgo_cu_fast_launch_fn())
	q := &Queue{d: d, s: s, id: queueIDs.Add(1), f: f}
	q.ops, q.subs = q.f.Begun, q.f.Handed
	C.lgo_cu_fast_init((*C.lgo_cu_fastq)(q.f.Extra), d.drv.run, d.ctx, s)
	q.cond.L = &q.mu
	return q, nil
}

var queueIDs atomic.Uintptr

// reuseStream reclaims the outstanding streams whose work has ended and
// returns an idle one (0: none).
func (d *Device) reuseStream() C.uintptr_t {
	d.streams.mu.Lock()
	defer d.streams.mu.Unlock()
	keep := d.streams.outstanding[:0]
	for _, q := range d.streams.outstanding {
		if !q.isHeld() && d.handleOp(opStreamQuery, q.s) == cudaSuccess && d.streams.idle.Len() < maxIdleStreams {
			d.streams.idle.Push(q.s)
		} else {
			keep = append(keep, q)
		}
	}
	d.streams.outstanding = keep
	return d.streams.idle.Get()
}

// drain waits for the work of released queues, held-back work included
// (Drain): each queue's backlog reaches its stream (a queue held by a wait
// for another queue's held-back event is let go once that event is
// recorded), then the stream is synchronised. The queues stay outstanding
// for releaseStreams.
func (d *Device) drain() error {
	outstanding := func() []*Queue {
		d.streams.mu.Lock()
		defer d.streams.mu.Unlock()
		return append([]*Queue(nil), d.streams.outstanding...)
	}()
	var first error
	for _, q := range outstanding {
		q.waitUnheld()
		if err := d.call("cuStreamSynchronize", d.handleOp(opStreamSync, q.s)); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// releaseStreams synchronises and destroys every stream and event the
// device holds (Deinit, after Drain: released queues hold no work back).
func (d *Device) releaseStreams() error {
	outstanding := func() []*Queue {
		d.streams.mu.Lock()
		defer d.streams.mu.Unlock()
		o := d.streams.outstanding
		d.streams.outstanding = nil
		return o
	}()
	streams := make([]C.uintptr_t, 0, len(outstanding))
	for _, q := range outstanding {
		q.waitUnheld()
		streams = append(streams, q.s)
	}
	d.streams.mu.Lock()
	defer d.streams.mu.Unlock()
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	for _, s := range append(streams, d.streams.idle.Take()...) {
		keep(d.call("cuStreamSynchronize", d.handleOp(opStreamSync, s)))
		keep(d.call("cuStreamDestroy", d.handleOp(opStreamDestroy, s)))
	}
	for _, e := range d.streams.events.Take() {
		keep(d.call("cuEventDestroy", d.handleOp(opEventDestroy, e)))
	}
	return first
}

// Queue is a CUDA stream of a device.
type Queue struct {
	d  *Device
	s  C.uintptr_t
	id uintptr // tells the queue's host functions apart (lgo_cu_running_queue)
	// f holds the queue's counters in C memory (plugins/plugin/fastq.h),
	// where the runtime's C entry points read them and submit copies
	// (lgo_cu_fast_copy) without entering Go. ops (f.Begun) counts
	// submitted operations: host functions and events are placed by it,
	// to tell a wait that could never end. subs (f.Handed) counts the
	// operations that reached the stream (or the backlog): bumped after
	// each submission, so subs == ops means none is in flight. f's idle
	// mark is the count at which the stream was last seen idle (a sync or
	// query that succeeded): while ops is still there, Sync and Empty need
	// no driver call, which costs a round trip to the kernel driver on a
	// real GPU (about 1.5 us on an H200; docs/benchmarks.md).
	f         *fastq.State
	ops, subs *atomic.Uint64

	mu    sync.Mutex
	cond  sync.Cond         // broadcast when held drops and when a held-back event is recorded
	err   error             // the first failure of asynchronous work since the last Sync
	waits gpu.Waits[*Queue] // the latest waits for events of other queues (Wait)
	// held: the queue's later work is held back in backlog, not yet on the
	// stream, while a host function runs (or waits for its turn) or while
	// the queue waits for an event that is itself held back. The driver's
	// callback thread only starts a host function; it never waits for one.
	held    bool
	backlog []deferred
	// f's stop reasons (fastq.Held, fastq.Failed) mirror held and
	// err != nil (written under mu with them), so that the calls of a
	// queue that is not held and has not failed (every call but after
	// host functions, waits for held-back events and asynchronous
	// failures) take no lock to find that out.
}

// deferred is held-back work: an operation to put on the stream, or a gate
// (a host function, a wait for a held-back event) that holds the queue
// again until it calls flush.
type deferred struct {
	submit func() error
	gate   func()
}

// hold queues d if the queue is held and reports whether it did; the
// caller submits the work itself otherwise. Callers check isHeld first, so
// that the closure is made only when it is needed (the hot path allocates
// nothing).
func (q *Queue) hold(d deferred) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.held {
		return false
	}
	q.backlog = append(q.backlog, d)
	return true
}

func (q *Queue) isHeld() bool { return q.f.Stopped(fastq.Held) }

// waitUnheld waits until the held-back work is on the stream.
func (q *Queue) waitUnheld() {
	if !q.isHeld() {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.held {
		q.cond.Wait()
	}
}

// flush puts held-back work on the stream in order, up to the next gate,
// which takes the hold over; with nothing left the queue is no longer held.
func (q *Queue) flush() {
	q.mu.Lock()
	for len(q.backlog) > 0 {
		x := q.backlog[0]
		q.backlog[0] = deferred{}
		q.backlog = q.backlog[1:]
		q.mu.Unlock()
		if x.gate != nil {
			x.gate()
			return
		}
		if err := x.submit(); err != nil {
			q.fail(err)
		}
		q.mu.Lock()
	}
	q.backlog = nil
	q.held = false
	q.f.Go(fastq.Held)
	q.cond.Broadcast()
	q.mu.Unlock()
}

var _ plugin.Queue = (*Queue)(nil)

func (q *Queue) fail(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err == nil {
		q.err = err
		q.f.Stop(fastq.Failed)
	}
}

func (q *Queue) copy(what string, dir C.int, dst, src uintptr, size uint64) error {
	if size == 0 {
		return nil
	}
	if gpu.Overlap(dst, src, size) {
		return q.memmove(what, dir, dst, src, size)
	}
	q.ops.Add(1)
	defer q.subs.Add(1)
	if q.isHeld() && q.hold(deferred{submit: func() error { return q.copyNow(what, dir, dst, src, size) }}) {
		return nil
	}
	return q.copyNow(what, dir, dst, src, size)
}

// An overlapping copy is split into at most maxMemmovePieces copies; when
// that is too few (ranges closer than 1/64 of the size) it goes through a
// device buffer of up to memmoveStage bytes.
const (
	maxMemmovePieces = 64
	memmoveStage     = 16 << 20
)

// memmove makes a copy whose ranges overlap (inside one allocation: the
// two sides are the same kind of memory), which the driver's copies do not
// order byte by byte as memmove does, as copies that do not overlap
// (gpu.Memmove).
func (q *Queue) memmove(what string, dir C.int, dst, src uintptr, size uint64) error {
	if gpu.MemmovePieces(dst, src, size) <= maxMemmovePieces {
		return gpu.Memmove(dst, src, size, 0, 0, func(d, s uintptr, n uint64) error { return q.copy(what, dir, d, s, n) })
	}
	n := min(size, memmoveStage)
	tmp, err := q.d.Alloc(ol.AllocTypeDevice, n)
	if err != nil {
		return err
	}
	// under unified addressing a device copy reaches both sides, host
	// memory the driver knows included
	err = gpu.Memmove(dst, src, size, tmp, n, func(d, s uintptr, n uint64) error { return q.copy("cuMemcpyDtoDAsync", 2, d, s, n) })
	if herr := q.HostCall(func() error { return q.d.Free(tmp, ol.AllocTypeDevice) }); herr != nil {
		_ = q.Sync()
		_ = q.d.Free(tmp, ol.AllocTypeDevice)
		if err == nil {
			err = herr
		}
	}
	return err
}

func (q *Queue) copyNow(what string, dir C.int, dst, src uintptr, size uint64) error {
	r := C.lgo_cu_copy(q.d.drv.run, q.d.ctx, dir, C.uintptr_t(dst), C.uintptr_t(src), C.size_t(size), q.s)
	if r == cudaSuccess { // the message is made only for a failure
		return nil
	}
	return q.d.call(fmt.Sprintf("%s of %d bytes to %#x from %#x", what, size, dst, src), r)
}

// CopyToDevice implements plugin.Queue.
func (q *Queue) CopyToDevice(dst uintptr, dev plugin.Device, src uintptr, size uint64) error {
	return q.copy("cuMemcpyHtoDAsync", 0, dst, src, size)
}

// CopyFromDevice implements plugin.Queue.
func (q *Queue) CopyFromDevice(dst, src uintptr, dev plugin.Device, size uint64) error {
	return q.copy("cuMemcpyDtoHAsync", 1, dst, src, size)
}

// CopyDevice implements plugin.Queue: within one GPU a device copy,
// between two a peer copy (the driver stages it when the GPUs cannot
// reach each other).
func (q *Queue) CopyDevice(dst uintptr, dstDev plugin.Device, src uintptr, srcDev plugin.Device, size uint64) error {
	dd, ok1 := dstDev.(*Device)
	sd, ok2 := srcDev.(*Device)
	if !ok1 || !ok2 {
		return plugin.Unsupported(backendName, "a copy with memory of another platform's device")
	}
	if dd == sd || size == 0 {
		return q.copy("cuMemcpyDtoDAsync", 2, dst, src, size)
	}
	q.ops.Add(1)
	defer q.subs.Add(1)
	peer := func() error {
		r := C.lgo_cu_copy_peer(q.d.drv.run, q.d.ctx, C.uintptr_t(dst), dd.ctx, C.uintptr_t(src), sd.ctx, C.size_t(size), q.s)
		if r == cudaSuccess {
			return nil
		}
		return q.d.call(fmt.Sprintf("cuMemcpyPeerAsync of %d bytes to %#x (%s) from %#x (%s)", size, dst, dd.info.Name.V, src, sd.info.Name.V), r)
	}
	if q.hold(deferred{submit: peer}) {
		return nil
	}
	return peer()
}

// fillStage bounds the host buffer of a fill whose pattern the driver's
// memsets cannot write.
const fillStage = 1 << 20

// Fill implements plugin.Queue: 1-, 2- and 4-byte patterns at aligned
// addresses are the driver's memsets; any other pattern is copied from a
// host buffer holding repeats of it, freed once the copies have run.
// Pageable host memory (memory the driver does not know) the driver can
// neither memset nor copy into (CUDA_ERROR_INVALID_VALUE): the CPU fills
// it, in the queue's order.
func (q *Queue) Fill(p uintptr, pattern unsafe.Pointer, patternSize, size uint64) error {
	if size == 0 {
		return nil
	}
	if C.lgo_cu_pointer_type(q.d.drv.run, q.d.ctx, C.uintptr_t(p)) == 0 {
		pat, err := cmem.Copy(pattern, patternSize, "cuda: the copy of a fill pattern")
		if err != nil {
			return err
		}
		err = q.HostCall(func() error {
			C.lgo_cu_host_fill(C.uintptr_t(p), pat, C.size_t(patternSize), C.size_t(size))
			cmem.Free(pat)
			return nil
		})
		if err != nil {
			cmem.Free(pat)
		}
		return err
	}
	if (patternSize == 1 || patternSize == 2 || patternSize == 4) && uint64(p)%patternSize == 0 {
		var v uint32
		switch patternSize {
		case 1:
			v = uint32(*(*uint8)(pattern))
		case 2:
			v = uint32(*(*uint16)(pattern))
		default:
			v = *(*uint32)(pattern)
		}
		q.ops.Add(1)
		defer q.subs.Add(1)
		if q.isHeld() && q.hold(deferred{submit: func() error { return q.memsetNow(p, patternSize, v, size) }}) {
			return nil
		}
		return q.memsetNow(p, patternSize, v, size)
	}
	chunk := size
	if chunk > fillStage {
		chunk = max(patternSize, fillStage/patternSize*patternSize)
	}
	buf, err := cmem.Malloc(chunk, "cuda: the staging buffer of a fill")
	if err != nil {
		return err
	}
	b := unsafe.Slice((*byte)(buf), chunk)
	pat := unsafe.Slice((*byte)(pattern), patternSize)
	for i := uint64(0); i < chunk; i += patternSize {
		copy(b[i:], pat)
	}
	for off := uint64(0); off < size; off += chunk {
		if err := q.copy("cuMemcpyHtoDAsync", 0, p+uintptr(off), uintptr(buf), min(chunk, size-off)); err != nil {
			_ = q.Sync()
			cmem.Free(buf)
			return err
		}
	}
	return q.HostCall(func() error { cmem.Free(buf); return nil })
}

func (q *Queue) memsetNow(p uintptr, width uint64, v uint32, size uint64) error {
	r := C.lgo_cu_memset(q.d.drv.run, q.d.ctx, C.int(width), C.uintptr_t(p), C.uint32_t(v), C.size_t(size/width), q.s)
	if r == cudaSuccess {
		return nil
	}
	return q.d.call(fmt.Sprintf("cuMemsetD%dAsync of %d bytes at %#x", 8*width, size, p), r)
}

// HostFunc implements plugin.Queue. The driver's callback (cuLaunchHostFunc)
// only starts fn(user) on a library thread, when the work before it is
// done; the queue's later work is held back until fn returns. So fn may
// call the API, and host functions of different queues may wait for each
// other, although the driver runs its callbacks one at a time.
func (q *Queue) HostFunc(fn, user unsafe.Pointer) error {
	mark := q.ops.Add(1)
	defer q.subs.Add(1)
	return q.gate(func() {
		runningQueues.Enter(q.id, q)
		defer runningQueues.Leave(q.id)
		C.lgo_cu_run_host(C.uintptr_t(q.id), C.uint64_t(mark), C.uintptr_t(uintptr(fn)), C.uintptr_t(uintptr(user)))
	})
}

// HostCall implements plugin.Queue, as HostFunc.
func (q *Queue) HostCall(fn func() error) error {
	q.ops.Add(1)
	defer q.subs.Add(1)
	return q.gate(func() {
		if err := fn(); err != nil {
			q.fail(err)
		}
	})
}

// gate holds the queue for run: at once when the queue is free, else after
// the held-back work before it.
func (q *Queue) gate(run func()) error {
	q.mu.Lock()
	if q.held {
		q.backlog = append(q.backlog, deferred{gate: func() {
			if err := q.trigger(run); err != nil {
				// too late to refuse: run it in order without the
				// driver's callback (it is taken, so it runs once)
				q.fail(err)
				go q.runAfterStream(run)
			}
		}})
		q.mu.Unlock()
		return nil
	}
	q.held = true
	q.f.Stop(fastq.Held)
	q.mu.Unlock()
	if err := q.trigger(run); err != nil {
		q.flush()
		return err
	}
	return nil
}

// runAfterStream runs run once the work already on the stream is done,
// then lets the held-back work go: the fallback when the driver refuses
// the callback of a host function it had already been given.
func (q *Queue) runAfterStream(run func()) {
	defer q.flush()
	_ = q.d.handleOp(opStreamSync, q.s)
	run()
}

// trigger puts on the stream the callback that starts run on a library
// thread; when run returns, the held-back work goes on the stream.
func (q *Queue) trigger(run func()) error {
	id := relays.add(q, func() {
		defer q.flush()
		run()
	})
	if err := q.d.call("cuLaunchHostFunc", C.lgo_cu_host_func(q.d.drv.run, q.d.ctx, q.s, C.uintptr_t(id))); err != nil {
		relays.take(id)
		return err
	}
	return nil
}

// relayTable holds the host functions and host calls queued on streams,
// by the id the driver's callback gets (never a Go pointer).
type relayTable struct {
	mu   sync.Mutex
	next uintptr
	m    map[uintptr]relayed
}

type relayed struct {
	q   *Queue
	run func()
}

var relays = relayTable{m: map[uintptr]relayed{}}

func (r *relayTable) add(q *Queue, run func()) uintptr {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	r.m[r.next] = relayed{q, run}
	return r.next
}

func (r *relayTable) take(id uintptr) (relayed, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	x, ok := r.m[id]
	delete(r.m, id)
	return x, ok
}

// lgoCudaRelay runs on the driver's callback thread, where no driver call
// is allowed and which the driver may share between all its callbacks: it
// starts the relayed work on a goroutine (a library thread) and returns at
// once. A panic there becomes the queue's error.
//
//export lgoCudaRelay
func lgoCudaRelay(id C.uintptr_t) {
	x, ok := relays.take(uintptr(id))
	if !ok {
		return
	}
	go func() {
		defer func() {
			if v := recover(); v != nil {
				x.q.fail(ol.Errorf(ol.ErrcUnknown, "cuda: internal error in a host function: %v", v))
			}
		}()
		x.run()
	}()
}

// runningHostFunction is the WaitID of the queue whose host function the
// calling thread runs (0: none) and that host function's operation, for
// gpu.CheckWait. While no host function runs anywhere (one atomic load:
// every one of this plugin's is between runningQueues.Enter and Leave), it
// answers without the call into C for the thread-local state, which would
// otherwise be a second cgo call in every olSyncQueue and olSyncEvent.
func runningHostFunction() (uintptr, uint64) {
	if !plugin.HostFunctionsRunning() {
		return 0, 0
	}
	running := uintptr(C.lgo_cu_running_queue())
	if running == 0 {
		return 0, 0
	}
	return running, uint64(C.lgo_cu_running_mark())
}

var (
	_ plugin.WaitGraphQueue = (*Queue)(nil)
	_ plugin.PointEvent     = (*Event)(nil)
)

// runningQueues names the queues whose host function runs now, for
// RunningHostFunction.
var runningQueues gpu.Running[*Queue]

// WaitID implements gpu.WaitNode.
func (q *Queue) WaitID() uintptr { return q.id }

// Position implements plugin.WaitGraphQueue.
func (q *Queue) Position() uint64 { return q.ops.Load() }

// Waits implements plugin.WaitGraphQueue: the queue's olWaitEvents.
func (q *Queue) Waits(at uint64, visit func(plugin.Queue, uint64)) {
	gpu.VisitWaits(q, at, func(o *Queue, mark uint64) { visit(o, mark) })
}

// Point implements plugin.PointEvent.
func (e *Event) Point() (plugin.Queue, uint64) { return e.q, e.mark }

// RunningHostFunction implements plugin.HostFunctionPlatform.
func (p *Platform) RunningHostFunction() (plugin.Queue, uint64, bool) {
	return runningQueues.HostFunction(runningHostFunction)
}

// WaitList implements gpu.WaitNode.
func (q *Queue) WaitList() (*sync.Mutex, *gpu.Waits[*Queue]) { return &q.mu, &q.waits }

// Record implements plugin.Queue. On a held queue the event is recorded
// when the work before it goes on the stream.
func (q *Queue) Record() (plugin.Event, error) {
	d := q.d
	ev := d.pooledEvent()
	if ev == 0 {
		// (a variable of its own: one whose address goes to C lives on
		// the heap, which the pooled path must not pay for)
		var fresh C.uintptr_t
		if err := d.call("cuEventCreate", C.lgo_cu_event_create(d.drv.run, d.ctx, &fresh)); err != nil {
			return nil, err
		}
		ev = fresh
	}
	e := d.pooledEventObj()
	if e == nil {
		e = new(Event)
	}
	*e = Event{q: q, ev: ev, mark: q.ops.Load()}
	if q.isHeld() && q.hold(deferred{submit: e.record}) {
		return e, nil
	}
	if err := e.record(); err != nil {
		d.releaseEvent(ev)
		return nil, err
	}
	return e, nil
}

// pooledEvent returns a released CUevent to record again (0: none).
func (d *Device) pooledEvent() C.uintptr_t {
	d.streams.mu.Lock()
	defer d.streams.mu.Unlock()
	return d.streams.events.Get()
}

// pooledEventObj returns a released Event to reuse (nil: none).
func (d *Device) pooledEventObj() *Event {
	d.streams.mu.Lock()
	defer d.streams.mu.Unlock()
	return d.streams.eventObjs.Get()
}

// Wait implements plugin.Queue: later work on the stream waits for e. An
// event that is itself held back holds this queue until it is recorded.
func (q *Queue) Wait(e plugin.Event) error {
	ce, ok := e.(*Event)
	if !ok {
		return plugin.Unsupported(backendName, "waiting for an event of another platform")
	}
	at := q.ops.Add(1)
	defer q.subs.Add(1)
	func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		q.waits.Add(at, ce.q, ce.mark)
	}()
	if ce.q == q {
		return nil // in order anyway
	}
	// The wait keeps the event (its CUevent and this object) until
	// cuStreamWaitEvent has captured it: the runtime may release the event
	// at once, and a released one is recorded again by a later Record.
	recorded := ce.addWaiter()
	if recorded && !q.isHeld() {
		// (no closure: the common path allocates nothing)
		err := q.waitNow(ce)
		ce.dropWaiter()
		return err
	}
	wait := func() error {
		defer ce.dropWaiter()
		return q.waitNow(ce)
	}
	if recorded {
		if q.hold(deferred{submit: wait}) {
			return nil
		}
		return wait()
	}
	// a gate: once the event is recorded, wait for it on the stream and
	// let the work after it go
	gate := func() {
		go func() {
			ce.waitRecorded()
			if err := wait(); err != nil {
				q.fail(err)
			}
			q.flush()
		}()
	}
	q.mu.Lock()
	if q.held {
		q.backlog = append(q.backlog, deferred{gate: gate})
		q.mu.Unlock()
		return nil
	}
	q.held = true
	q.f.Stop(fastq.Held)
	q.mu.Unlock()
	gate()
	return nil
}

func (q *Queue) waitNow(e *Event) error {
	return q.d.call("cuStreamWaitEvent", C.lgo_cu_stream_wait(q.d.drv.run, q.d.ctx, q.s, e.ev))
}

// Sync implements plugin.Queue: waits for the held-back work and the
// stream, and reports the first failure since the last Sync.
func (q *Queue) Sync() error {
	if err := gpu.CheckWait(gpu.SyncQueue, q, q.ops.Load(), runningHostFunction); err != nil {
		return err
	}
	q.waitUnheld()
	var err error
	if o, whole := q.f.Submitted(); !whole || !q.f.IdleAt(o) {
		err = q.d.call("cuStreamSynchronize", q.d.handleOp(opStreamSync, q.s))
		if err == nil && whole {
			q.f.SawIdle(o)
		}
	}
	if !q.f.Stopped(fastq.Failed) {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err == nil {
		err = q.err
	}
	q.err = nil
	q.f.Go(fastq.Failed)
	return err
}

// Empty implements plugin.Queue.
func (q *Queue) Empty() bool {
	if q.isHeld() {
		return false
	}
	o, whole := q.f.Submitted()
	if whole && q.f.IdleAt(o) {
		return true
	}
	if q.d.handleOp(opStreamQuery, q.s) != cudaSuccess {
		return false
	}
	if whole {
		q.f.SawIdle(o)
	}
	return true
}

// Release implements plugin.Queue: the stream goes back to the device,
// idle or outstanding; it is never synchronised here.
func (q *Queue) Release() error {
	d := q.d
	idle := q.Empty()
	d.streams.mu.Lock()
	defer d.streams.mu.Unlock()
	if !idle || !d.streams.idle.Put(q.s, maxIdleStreams) {
		d.streams.outstanding = append(d.streams.outstanding, q)
	}
	return nil
}

// Event is a CUDA event recorded on a queue's stream (or to be recorded,
// when the queue's work before it is held back). Its CUevent and the
// object go back to the device once the runtime has released it, it is
// recorded, and no wait of another queue still has to capture it.
type Event struct {
	q    *Queue
	ev   C.uintptr_t
	mark uint64
	// timed: a timing event (RecordTimed): its CUevent is destroyed, not
	// pooled with the DISABLE_TIMING ones
	timed bool
	// under q.mu:
	recorded bool
	released bool // the runtime let go of it
	waiters  int  // waits of other queues not yet on their stream
}

// record puts the event on the stream (at once, or when flushed). One
// that was released with no wait for it is given back unrecorded: nothing
// can observe it.
func (e *Event) record() error {
	q := e.q
	unseen := func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return e.released && e.waiters == 0
	}()
	if unseen {
		e.giveBack()
		return nil
	}
	err := q.d.call("cuEventRecord", C.lgo_cu_event_record(q.d.drv.run, q.d.ctx, e.ev, q.s))
	last := func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		e.recorded = true
		q.cond.Broadcast()
		// released meanwhile, with no wait for it: Release left it to us
		return e.released && e.waiters == 0
	}()
	if last {
		e.giveBack()
	}
	return err
}

// addWaiter keeps the event for a wait until dropWaiter, and reports
// whether it is recorded already.
func (e *Event) addWaiter() bool {
	e.q.mu.Lock()
	defer e.q.mu.Unlock()
	e.waiters++
	return e.recorded
}

// dropWaiter ends a wait's hold (its cuStreamWaitEvent was made, or
// failed); the last one gives a released event back.
func (e *Event) dropWaiter() {
	last := func() bool {
		e.q.mu.Lock()
		defer e.q.mu.Unlock()
		e.waiters--
		return e.waiters == 0 && e.released && e.recorded
	}()
	if last {
		e.giveBack()
	}
}

func (e *Event) isRecorded() bool {
	e.q.mu.Lock()
	defer e.q.mu.Unlock()
	return e.recorded
}

func (e *Event) waitRecorded() {
	e.q.mu.Lock()
	defer e.q.mu.Unlock()
	for !e.recorded {
		e.q.cond.Wait()
	}
}

// Sync implements plugin.Event.
func (e *Event) Sync() error {
	if err := gpu.CheckWait(gpu.SyncEvent, e.q, e.mark, runningHostFunction); err != nil {
		return err
	}
	e.waitRecorded()
	return e.q.d.call("cuEventSynchronize", e.q.d.handleOp(opEventSync, e.ev))
}

// Done implements plugin.Event.
func (e *Event) Done() bool {
	return e.isRecorded() && e.q.d.handleOp(opEventQuery, e.ev) == cudaSuccess
}

// Release implements plugin.Event: the event goes back to the device now,
// or once it is recorded and the waits for it are on their streams.
func (e *Event) Release() error {
	now := func() bool {
		e.q.mu.Lock()
		defer e.q.mu.Unlock()
		e.released = true
		return e.recorded && e.waiters == 0
	}()
	if now {
		e.giveBack()
	}
	return nil
}

// giveBack returns the CUevent and the object to the device for reuse;
// nothing refers to either any more.
func (e *Event) giveBack() {
	d := e.q.d
	if e.timed {
		_ = d.handleOp(opEventDestroy, e.ev)
	} else {
		d.releaseEvent(e.ev)
	}
	*e = Event{}
	d.streams.mu.Lock()
	defer d.streams.mu.Unlock()
	d.streams.eventObjs.Put(e, maxIdleEvents)
}

func (d *Device) releaseEvent(ev C.uintptr_t) {
	pooled := func() bool {
		d.streams.mu.Lock()
		defer d.streams.mu.Unlock()
		return d.streams.events.Put(ev, maxIdleEvents)
	}()
	if !pooled {
		_ = d.handleOp(opEventDestroy, ev)
	}
}

// Fast implements plugin.FastQueue.
func (q *Queue) Fast() unsafe.Pointer { return q.f.Ptr() }

var _ plugin.FastQueue = (*Queue)(nil)
