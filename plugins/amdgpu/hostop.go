package amdgpu

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/internal/gpu"
)

// Kinds of host operation.
const (
	opFill     = iota + 1 // hsa_amd_memory_fill
	opFunc                // a host function of the API (olLaunchHostFunction)
	opCall                // a host call of the runtime (plugin.Queue.HostCall)
	opFillHost            // a fill of host memory by the CPU
)

// hostOp is work a library thread does in a queue's order: it starts when
// the signal before it is done and completes its gate signal when it
// returns. The objects are pooled and named to C by their id, never by a
// Go pointer.
type hostOp struct {
	id   uintptr
	kind int
	q    *Queue
	hw   *hwQueue
	gate *signal
	mark uint64

	fn        func() error // opCall
	cfn, user uintptr      // opFunc
	ptr       uintptr      // opFill, opFillHost
	value     uint32
	count     uint64 // words (opFill), bytes (opFillHost)
	pattern   []byte // opFillHost (kept across uses of the object)
}

// hostOps is the table of host operations by id (id - 1 is the index).
var hostOps struct {
	mu    sync.Mutex
	slots []*hostOp
	free  []uintptr
}

func newHostOp() *hostOp {
	hostOps.mu.Lock()
	defer hostOps.mu.Unlock()
	if id := gpu.PopLast(&hostOps.free); id != 0 {
		return hostOps.slots[id-1]
	}
	op := &hostOp{id: uintptr(len(hostOps.slots) + 1)}
	hostOps.slots = append(hostOps.slots, op)
	return op
}

func hostOpByID(id uintptr) *hostOp {
	hostOps.mu.Lock()
	defer hostOps.mu.Unlock()
	if id == 0 || id > uintptr(len(hostOps.slots)) {
		return nil
	}
	return hostOps.slots[id-1]
}

func putHostOp(op *hostOp) {
	id, pat := op.id, op.pattern[:0]
	*op = hostOp{id: id, pattern: pat}
	hostOps.mu.Lock()
	defer hostOps.mu.Unlock()
	hostOps.free = append(hostOps.free, id)
}

// lgoHsaSignalReady runs on the runtime's signal handler thread, where no
// blocking wait is allowed and which the runtime shares between all its
// handlers: it hands the host operation to a library thread and returns
// at once.
//
//export lgoHsaSignalReady
func lgoHsaSignalReady(id C.uintptr_t) {
	if op := hostOpByID(uintptr(id)); op != nil && op.hw != nil {
		op.hw.d.p.workers.hand(op)
	}
}

// run does the operation, then completes its gate (the queue's later work
// goes on) and gives the object back. A panic becomes the queue's error.
func (op *hostOp) run() {
	h, gate := op.hw, op.gate
	p := h.d.p
	defer func() {
		if v := recover(); v != nil {
			h.fail(ol.Errorf(ol.ErrcUnknown, "amdgpu: internal error in a host function: %v", v))
		}
		putHostOp(op)
		C.lgo_hsa_signal_store(p.run, C.uint64_t(gate.h), 0)
	}()
	switch op.kind {
	case opFill:
		st := C.lgo_hsa_fill(p.run, C.uintptr_t(op.ptr), C.uint32_t(op.value), C.size_t(op.count))
		if st == statusInvalidAllocation { // not an allocation: see fillWords
			if err := p.fillByCopy(h.d.agent, op.ptr, op.value, op.count); err != nil {
				h.fail(err)
			}
		} else if st != hsaStatusSuccess {
			h.fail(p.drv.failure(fmt.Sprintf("hsa_amd_memory_fill of %d words at %#x", op.count, op.ptr), uint32(st)))
		}
	case opFillHost:
		fillHost(op.ptr, op.pattern, op.count)
	case opFunc:
		runningQueues.Enter(op.q.id, op.q)
		C.lgo_hsa_run_host(C.uintptr_t(op.q.id), C.uint64_t(op.mark), C.uintptr_t(op.cfn), C.uintptr_t(op.user))
		runningQueues.Leave(op.q.id)
	case opCall:
		if err := op.fn(); err != nil {
			h.fail(err)
		}
	}
}

// workers are the platform's library threads for host operations: an idle
// one takes the next operation; when none is idle a new one starts (a host
// function may block, waiting for another queue's host function). They
// stay until Deinit.
type workers struct {
	ch   chan *hostOp
	quit chan struct{}
	wg   sync.WaitGroup
}

func (w *workers) init() {
	w.ch = make(chan *hostOp)
	w.quit = make(chan struct{})
}

func (w *workers) hand(op *hostOp) {
	select {
	case w.ch <- op:
	default:
		w.wg.Add(1)
		go w.serve(op)
	}
}

func (w *workers) serve(op *hostOp) {
	defer w.wg.Done()
	for {
		op.run()
		select {
		case op = <-w.ch:
		case <-w.quit:
			return
		}
	}
}

// stop ends the workers once their operations have returned (Deinit).
func (w *workers) stop() {
	if w.quit == nil {
		return
	}
	close(w.quit)
	w.wg.Wait()
	w.quit = nil
}
