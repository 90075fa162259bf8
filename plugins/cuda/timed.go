package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

var (
	_ plugin.TimedQueue    = (*Queue)(nil)
	_ plugin.TimedEvent    = (*Event)(nil)
	_ plugin.PrefetchQueue = (*Queue)(nil)
	_ plugin.ParamKernel   = (*Kernel)(nil)
)

// more CUresult values
const (
	cudaErrorInvalidDevice = 101
	cudaErrorNotSupported  = 801
)

// RecordTimed implements plugin.TimedQueue: a timing CUevent (the GPU
// writes its timestamp when the stream reaches it). It is recorded even on
// an idle stream: unlike an ordering event, its point is a time.
func (q *Queue) RecordTimed() (plugin.TimedEvent, error) {
	d := q.d
	if d.drv.run.event_elapsed == 0 {
		return nil, plugin.Unsupported(backendName, "a profiling event (the driver has no cuEventElapsedTime)")
	}
	var ev C.uintptr_t
	if err := d.call("cuEventCreate", C.lgo_cu_event_create_timed(d.drv.run, d.ctx, &ev)); err != nil {
		return nil, err
	}
	e := &Event{q: q, ev: ev, mark: q.ops.Load(), timed: true}
	if q.isHeld() && q.hold(deferred{submit: e.record}) {
		return e, nil
	}
	if err := e.record(); err != nil {
		_ = d.handleOp(opEventDestroy, ev)
		return nil, err
	}
	return e, nil
}

// ElapsedSince implements plugin.TimedEvent: cuEventElapsedTime. Both
// events must be profiling events of one device: two GPUs' clocks are not
// comparable.
func (e *Event) ElapsedSince(start plugin.TimedEvent) (float32, error) {
	s, ok := start.(*Event)
	if !ok {
		return 0, ol.NewError(ol.ErrcInvalidArgument, "cuda: the start event is not an event of the CUDA platform")
	}
	if !s.timed || !e.timed {
		return 0, ol.NewError(ol.ErrcInvalidArgument, "cuda: an event was not created for profiling (OL_EVENT_FLAGS_ENABLE_PROFILING)")
	}
	if s.q.d != e.q.d {
		return 0, ol.Errorf(ol.ErrcInvalidArgument, "cuda: the events are of two devices (%s and %s), whose clocks are not comparable", s.q.d.info.Name.V, e.q.d.info.Name.V)
	}
	if !s.isRecorded() || !e.isRecorded() {
		return 0, ol.NewError(ol.ErrcInvalidArgument, "cuda: a profiling event has not completed")
	}
	var ms C.float
	switch r := C.lgo_cu_event_elapsed(e.q.d.drv.run, e.q.d.ctx, &ms, s.ev, e.ev); r {
	case cudaSuccess:
		return float32(ms), nil
	case cudaErrorNotReady:
		return 0, ol.NewError(ol.ErrcInvalidArgument, "cuda: a profiling event has not completed")
	default:
		return 0, e.q.d.call("cuEventElapsedTime", r)
	}
}

// Prefetch implements plugin.PrefetchQueue: cuMemPrefetchAsync in the
// stream's order. Memory that is not managed, a device that cannot take
// migrations and a driver without the call leave the memory where it is.
func (q *Queue) Prefetch(ptr uintptr, dev plugin.Device, size uint64, toDevice bool) error {
	d, ok := dev.(*Device)
	if !ok {
		return plugin.Unsupported(backendName, "prefetching memory of another platform's device")
	}
	run := q.d.drv.run
	if size == 0 || (run.mem_prefetch == 0 && run.mem_prefetch_v2 == 0) {
		return nil
	}
	// the driver refuses anything but managed memory (CUDA_ERROR_INVALID_VALUE)
	if C.lgo_cu_is_managed(run, q.d.ctx, C.uintptr_t(ptr)) == 0 {
		return nil
	}
	target := C.int(-1) // CU_DEVICE_CPU
	if toDevice {
		target = C.int(d.ordinal)
	}
	q.ops.Add(1)
	defer q.subs.Add(1)
	if q.isHeld() && q.hold(deferred{submit: func() error { return q.prefetchNow(ptr, size, target) }}) {
		return nil
	}
	return q.prefetchNow(ptr, size, target)
}

func (q *Queue) prefetchNow(ptr uintptr, size uint64, target C.int) error {
	switch r := C.lgo_cu_prefetch(q.d.drv.run, q.d.ctx, C.uintptr_t(ptr), C.size_t(size), target, q.s); r {
	case cudaSuccess, cudaErrorInvalidDevice, cudaErrorNotSupported:
		// INVALID_DEVICE: no concurrent managed access there; a hint only
		return nil
	default:
		return q.d.call(fmt.Sprintf("cuMemPrefetchAsync of %d bytes at %#x to device %d", size, ptr, int(target)), r)
	}
}

// maxParams bounds the parameters read from cuFuncGetParamInfo (a PTX
// entry has at most 32764 bytes of them, each at least one byte; far fewer
// in practice).
const maxParams = 4096

// readParams asks the driver for each parameter of fn until it answers
// CUDA_ERROR_INVALID_VALUE (past the last one). ok is false when the driver
// cannot say (no cuFuncGetParamInfo, or another error).
func (d *Device) readParams(fn C.uintptr_t) (params []plugin.Param, ok bool) {
	if d.drv.run.func_get_param_info == 0 {
		return nil, false
	}
	for i := 0; i < maxParams; i++ {
		var off, size C.size_t
		switch C.lgo_cu_param_info(d.drv.run, d.ctx, fn, C.size_t(i), &off, &size) {
		case cudaSuccess:
			params = append(params, plugin.Param{Offset: uint64(off), Size: uint64(size)})
		case cudaErrorInvalidValue:
			return params, true
		default:
			return nil, false
		}
	}
	return nil, false
}

// Params implements plugin.ParamKernel.
func (k *Kernel) Params() ([]plugin.Param, bool) { return k.params, k.paramsKnown }
