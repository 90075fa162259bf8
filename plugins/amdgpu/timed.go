package amdgpu

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

// RecordTimed implements plugin.TimedQueue: a barrier-AND packet after the
// queue's work, on an HSA queue with profiling enabled, whose completion
// signal then holds when the GPU passed it (hsa_amd_profiling_get_dispatch_time).
// Unlike Record it always submits a packet, also on an idle queue: the
// event's point is a time.
func (q *Queue) RecordTimed() (plugin.TimedEvent, error) {
	p := q.d.p
	if p.run.profiling_enable == 0 || p.run.dispatch_time == 0 {
		return nil, plugin.Unsupported(backendName, "a profiling event (the runtime has no hsa_amd_profiling_get_dispatch_time)")
	}
	h := q.hw
	if !h.profiling.Load() {
		if err := p.drv.check(fmt.Sprintf("hsa_amd_profiling_set_profiler_enabled on %s", q.d.name()), C.lgo_hsa_profiling_enable(p.run, C.uintptr_t(h.q))); err != nil {
			return nil, err
		}
		h.profiling.Store(true)
	}
	mark := q.ops.Add(1)
	defer q.handed.Add(1)
	s, err := h.begin(true)
	if err != nil {
		return nil, err
	}
	C.lgo_hsa_barrier(p.run, C.uintptr_t(h.q), h.dep(), 0, C.uint64_t(s.h))
	s.refs.Add(1) // the event's
	h.commit(entry{sig: s}, true)
	return &Event{q: q, hw: h, sig: s, mark: mark, timed: true}, nil
}

// ElapsedSince implements plugin.TimedEvent. The runtime gives the times
// in the system timestamp domain, so events of two GPUs compare too.
func (e *Event) ElapsedSince(start plugin.TimedEvent) (float32, error) {
	s, ok := start.(*Event)
	if !ok {
		return 0, ol.NewError(ol.ErrcInvalidArgument, "amdgpu: the start event is not an event of the AMDGPU platform")
	}
	if !s.timed || !e.timed {
		return 0, ol.NewError(ol.ErrcInvalidArgument, "amdgpu: an event was not created for profiling (OL_EVENT_FLAGS_ENABLE_PROFILING)")
	}
	t0, err := s.endTime()
	if err != nil {
		return 0, err
	}
	t1, err := e.endTime()
	if err != nil {
		return 0, err
	}
	freq := e.q.d.p.freq
	if freq == 0 {
		return 0, ol.NewError(ol.ErrcBackendFailure, "amdgpu: the runtime gives no timestamp frequency")
	}
	return float32(float64(int64(t1-t0)) * 1e3 / float64(freq)), nil
}

// endTime is when the GPU passed a completed timed event.
func (e *Event) endTime() (uint64, error) {
	switch v := e.sig.value(); {
	case v > 0:
		return 0, ol.NewError(ol.ErrcInvalidArgument, "amdgpu: a profiling event has not completed")
	case v < 0:
		return 0, ol.Errorf(ol.ErrcBackendFailure, "amdgpu: the work before a profiling event on %s failed", e.q.d.name())
	}
	p := e.q.d.p
	r := C.lgo_hsa_dispatch_end(p.run, C.uint64_t(e.q.d.agent), C.uint64_t(e.sig.h))
	if r.st != hsaStatusSuccess {
		return 0, p.drv.failure(fmt.Sprintf("hsa_amd_profiling_get_dispatch_time on %s", e.q.d.name()), uint32(r.st))
	}
	if r.v == 0 {
		return 0, ol.Errorf(ol.ErrcBackendFailure, "amdgpu: %s recorded no timestamp for a profiling event", e.q.d.name())
	}
	return uint64(r.v), nil
}

// Prefetch implements plugin.PrefetchQueue. The runtime's allocations
// (MANAGED memory is fine-grained system memory here, DEVICE memory a
// GPU's) do not migrate: they are left where they are. Memory the runtime
// does not know (system memory, shared virtual memory under the kernel
// driver) is hsa_amd_svm_prefetch_async after the queue's earlier work,
// and later work waits for it, where the runtime has that call.
func (q *Queue) Prefetch(ptr uintptr, dev plugin.Device, size uint64, toDevice bool) error {
	d, ok := dev.(*Device)
	if !ok {
		return plugin.Unsupported(backendName, "prefetching memory of another platform's device")
	}
	p := q.d.p
	if size == 0 || p.run.svm_prefetch == 0 {
		return nil
	}
	if C.lgo_hsa_pointer_info(p.run, C.uintptr_t(ptr))._type != pointerUnknown {
		return nil
	}
	agent := d.agent
	if !toDevice {
		if p.cpu == 0 {
			return nil
		}
		agent = p.cpu
	}
	h := q.hw
	q.ops.Add(1)
	defer q.handed.Add(1)
	s, err := h.begin(true)
	if err != nil {
		return err
	}
	if st := C.lgo_hsa_svm_prefetch(p.run, C.uintptr_t(ptr), C.size_t(size), C.uint64_t(agent), h.dep(), C.uint64_t(s.h)); st != hsaStatusSuccess {
		h.abort(s)
		return p.drv.failure(fmt.Sprintf("hsa_amd_svm_prefetch_async of %d bytes at %#x", size, ptr), uint32(st))
	}
	h.commit(entry{sig: s}, false)
	return nil
}

// Params implements plugin.ParamKernel: the explicit arguments of the code
// object's metadata (hidden_* ones are the runtime's); a code object
// without metadata cannot say.
func (k *Kernel) Params() ([]plugin.Param, bool) {
	m, ok := k.p.meta[k.name]
	if !ok || !m.paramsOK {
		return nil, false
	}
	return m.params, true
}
