package cuda

/*
#include <stdlib.h>
#include <string.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
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
	idle        []C.uintptr_t
	outstanding []C.uintptr_t
	events      []C.uintptr_t // idle events
}

func (d *Device) handleOp(op C.int, h C.uintptr_t) C.int {
	return C.lgo_cu_handle_op(d.drv.run, d.ctx, op, h)
}

// NewQueue implements plugin.Device.
func (d *Device) NewQueue() (plugin.Queue, error) {
	d.streams.mu.Lock()
	// reclaim outstanding streams whose work has ended
	keep := d.streams.outstanding[:0]
	for _, s := range d.streams.outstanding {
		if d.handleOp(opStreamQuery, s) == cudaSuccess && len(d.streams.idle) < maxIdleStreams {
			d.streams.idle = append(d.streams.idle, s)
		} else {
			keep = append(keep, s)
		}
	}
	d.streams.outstanding = keep
	var s C.uintptr_t
	if n := len(d.streams.idle); n > 0 {
		s = d.streams.idle[n-1]
		d.streams.idle = d.streams.idle[:n-1]
	}
	d.streams.mu.Unlock()
	if s == 0 {
		if err := d.call("cuStreamCreate", C.lgo_cu_stream_create(d.drv.run, d.ctx, &s)); err != nil {
			return nil, err
		}
	}
	return &Queue{d: d, s: s, id: queueIDs.Add(1)}, nil
}

var queueIDs atomic.Uintptr

// releaseStreams synchronises and destroys every stream and event the
// device holds (Deinit).
func (d *Device) releaseStreams() error {
	d.streams.mu.Lock()
	defer d.streams.mu.Unlock()
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	for _, s := range append(d.streams.outstanding, d.streams.idle...) {
		keep(d.call("cuStreamSynchronize", d.handleOp(opStreamSync, s)))
		keep(d.call("cuStreamDestroy", d.handleOp(opStreamDestroy, s)))
	}
	for _, e := range d.streams.events {
		keep(d.call("cuEventDestroy", d.handleOp(opEventDestroy, e)))
	}
	d.streams.idle, d.streams.outstanding, d.streams.events = nil, nil, nil
	return first
}

// Queue is a CUDA stream of a device.
type Queue struct {
	d  *Device
	s  C.uintptr_t
	id uintptr // tells the queue's host functions apart (lgo_cu_running_queue)
	// ops counts submitted operations: host functions and events are
	// placed by it, to tell a wait that could never end.
	ops atomic.Uint64

	mu    sync.Mutex
	err   error      // the first failure of asynchronous work since the last Sync
	waits []waitEdge // the latest waits for events of other queues (Wait)
}

// waitEdge records that the queue's work after operation at waits for
// queue on to reach mark: what tells a wait that could never end.
type waitEdge struct {
	at   uint64
	on   *Queue
	mark uint64
}

// maxWaitEdges bounds the waits a queue remembers; older ones have long
// completed in any program that is not stuck.
const maxWaitEdges = 64

var _ plugin.Queue = (*Queue)(nil)

func (q *Queue) fail(err error) {
	q.mu.Lock()
	if q.err == nil {
		q.err = err
	}
	q.mu.Unlock()
}

func (q *Queue) copy(what string, dir C.int, dst, src uintptr, size uint64) error {
	if size == 0 {
		return nil
	}
	q.ops.Add(1)
	r := C.lgo_cu_copy(q.d.drv.run, q.d.ctx, dir, C.uintptr_t(dst), C.uintptr_t(src), C.size_t(size), q.s)
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
	r := C.lgo_cu_copy_peer(q.d.drv.run, q.d.ctx, C.uintptr_t(dst), dd.ctx, C.uintptr_t(src), sd.ctx, C.size_t(size), q.s)
	return q.d.call(fmt.Sprintf("cuMemcpyPeerAsync of %d bytes to %#x (%s) from %#x (%s)", size, dst, dd.info.Name.V, src, sd.info.Name.V), r)
}

// fillStage bounds the host buffer of a fill whose pattern the driver's
// memsets cannot write.
const fillStage = 1 << 20

// Fill implements plugin.Queue: 1-, 2- and 4-byte patterns at aligned
// addresses are the driver's memsets; any other pattern is copied from a
// host buffer holding repeats of it, freed once the copies have run.
func (q *Queue) Fill(p uintptr, pattern unsafe.Pointer, patternSize, size uint64) error {
	if size == 0 {
		return nil
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
		r := C.lgo_cu_memset(q.d.drv.run, q.d.ctx, C.int(patternSize), C.uintptr_t(p), C.uint32_t(v), C.size_t(size/patternSize), q.s)
		return q.d.call(fmt.Sprintf("cuMemsetD%dAsync of %d bytes at %#x", 8*patternSize, size, p), r)
	}
	chunk := size
	if chunk > fillStage {
		chunk = max(patternSize, fillStage/patternSize*patternSize)
	}
	buf := C.malloc(C.size_t(chunk))
	if buf == nil {
		return ol.Errorf(ol.ErrcOutOfResources, "cuda: no host memory to stage a fill with a %d-byte pattern", patternSize)
	}
	b := unsafe.Slice((*byte)(buf), chunk)
	pat := unsafe.Slice((*byte)(pattern), patternSize)
	for i := uint64(0); i < chunk; i += patternSize {
		copy(b[i:], pat)
	}
	for off := uint64(0); off < size; off += chunk {
		if err := q.copy("cuMemcpyHtoDAsync", 0, p+uintptr(off), uintptr(buf), min(chunk, size-off)); err != nil {
			_ = q.Sync()
			C.free(buf)
			return err
		}
	}
	return q.HostCall(func() error { C.free(buf); return nil })
}

// HostFunc implements plugin.Queue: the driver's callback hands fn(user)
// to a library thread and holds the stream until it returns, so fn may
// call the API.
func (q *Queue) HostFunc(fn, user unsafe.Pointer) error {
	mark := q.ops.Add(1)
	return q.relay(func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		C.lgo_cu_set_running(C.uintptr_t(q.id), C.uint64_t(mark))
		defer C.lgo_cu_set_running(0, 0)
		C.lgo_cu_call(C.uintptr_t(uintptr(fn)), C.uintptr_t(uintptr(user)))
	})
}

// HostCall implements plugin.Queue.
func (q *Queue) HostCall(fn func() error) error {
	q.ops.Add(1)
	return q.relay(func() {
		if err := fn(); err != nil {
			q.fail(err)
		}
	})
}

// relay queues run on the stream through cuLaunchHostFunc.
func (q *Queue) relay(run func()) error {
	id := relays.add(q, run)
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
// is allowed: it runs the relayed work on another goroutine (a library
// thread) and returns when that is done, which holds the stream meanwhile.
// A panic there becomes the queue's error.
//
//export lgoCudaRelay
func lgoCudaRelay(id C.uintptr_t) {
	x, ok := relays.take(uintptr(id))
	if !ok {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if v := recover(); v != nil {
				x.q.fail(ol.Errorf(ol.ErrcUnknown, "cuda: internal error in a host function relay: %v", v))
			}
		}()
		x.run()
	}()
	<-done
}

// wouldWaitForever reports whether waiting for q to reach mark would wait
// for the host function the calling thread runs: one of q submitted before
// mark, or one that q's work before mark waits for through events.
func wouldWaitForever(q *Queue, mark uint64) bool {
	running := uintptr(C.lgo_cu_running_queue())
	if running == 0 {
		return false
	}
	return dependsOn(q, mark, running, uint64(C.lgo_cu_running_mark()), 0)
}

func dependsOn(q *Queue, mark uint64, running uintptr, runMark uint64, depth int) bool {
	if q.id == running && runMark <= mark {
		return true
	}
	if depth > 32 {
		return false
	}
	q.mu.Lock()
	var edges [maxWaitEdges]waitEdge
	n := 0
	for _, e := range q.waits {
		if e.at <= mark {
			edges[n] = e
			n++
		}
	}
	q.mu.Unlock()
	for _, e := range edges[:n] {
		if dependsOn(e.on, e.mark, running, runMark, depth+1) {
			return true
		}
	}
	return false
}

// Record implements plugin.Queue.
func (q *Queue) Record() (plugin.Event, error) {
	d := q.d
	var ev C.uintptr_t
	d.streams.mu.Lock()
	if n := len(d.streams.events); n > 0 {
		ev = d.streams.events[n-1]
		d.streams.events = d.streams.events[:n-1]
	}
	d.streams.mu.Unlock()
	if ev == 0 {
		if err := d.call("cuEventCreate", C.lgo_cu_event_create(d.drv.run, d.ctx, &ev)); err != nil {
			return nil, err
		}
	}
	mark := q.ops.Load()
	if err := d.call("cuEventRecord", C.lgo_cu_event_record(d.drv.run, d.ctx, ev, q.s)); err != nil {
		d.releaseEvent(ev)
		return nil, err
	}
	return &Event{q: q, ev: ev, mark: mark}, nil
}

// Wait implements plugin.Queue: later work on the stream waits for e.
func (q *Queue) Wait(e plugin.Event) error {
	ce, ok := e.(*Event)
	if !ok {
		return plugin.Unsupported(backendName, "waiting for an event of another platform")
	}
	at := q.ops.Add(1)
	q.mu.Lock()
	if len(q.waits) == maxWaitEdges {
		copy(q.waits, q.waits[1:])
		q.waits = q.waits[:maxWaitEdges-1]
	}
	q.waits = append(q.waits, waitEdge{at: at, on: ce.q, mark: ce.mark})
	q.mu.Unlock()
	return q.d.call("cuStreamWaitEvent", C.lgo_cu_stream_wait(q.d.drv.run, q.d.ctx, q.s, ce.ev))
}

// Sync implements plugin.Queue: waits for the stream and reports the first
// failure since the last Sync.
func (q *Queue) Sync() error {
	if wouldWaitForever(q, q.ops.Load()) {
		return ol.NewError(ol.ErrcInvalidArgument, "olSyncQueue called from a host function would wait forever: the queue's work waits for that host function")
	}
	err := q.d.call("cuStreamSynchronize", q.d.handleOp(opStreamSync, q.s))
	q.mu.Lock()
	if err == nil {
		err = q.err
	}
	q.err = nil
	q.mu.Unlock()
	return err
}

// Empty implements plugin.Queue.
func (q *Queue) Empty() bool { return q.d.handleOp(opStreamQuery, q.s) == cudaSuccess }

// Release implements plugin.Queue: the stream goes back to the device,
// idle or outstanding; it is never synchronised here.
func (q *Queue) Release() error {
	d := q.d
	idle := d.handleOp(opStreamQuery, q.s) == cudaSuccess
	d.streams.mu.Lock()
	defer d.streams.mu.Unlock()
	if idle && len(d.streams.idle) < maxIdleStreams {
		d.streams.idle = append(d.streams.idle, q.s)
	} else {
		d.streams.outstanding = append(d.streams.outstanding, q.s)
	}
	return nil
}

// Event is a CUDA event recorded on a queue's stream.
type Event struct {
	q    *Queue
	ev   C.uintptr_t
	mark uint64
}

// Sync implements plugin.Event.
func (e *Event) Sync() error {
	if wouldWaitForever(e.q, e.mark) {
		return ol.NewError(ol.ErrcInvalidArgument, "olSyncEvent called from a host function would wait forever: the event's work waits for that host function")
	}
	return e.q.d.call("cuEventSynchronize", e.q.d.handleOp(opEventSync, e.ev))
}

// Done implements plugin.Event.
func (e *Event) Done() bool { return e.q.d.handleOp(opEventQuery, e.ev) == cudaSuccess }

// Release implements plugin.Event: the event goes back to the device.
func (e *Event) Release() error {
	e.q.d.releaseEvent(e.ev)
	return nil
}

func (d *Device) releaseEvent(ev C.uintptr_t) {
	d.streams.mu.Lock()
	if len(d.streams.events) < maxIdleEvents {
		d.streams.events = append(d.streams.events, ev)
		ev = 0
	}
	d.streams.mu.Unlock()
	if ev != 0 {
		_ = d.handleOp(opEventDestroy, ev)
	}
}
