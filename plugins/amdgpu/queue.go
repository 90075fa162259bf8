package amdgpu

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/cmem"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fastq"
	"github.com/liboffload-go/liboffload-go/plugins/internal/gpu"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

const (
	// defaultQueueSize is the packets of an HSA queue (a power of two;
	// smaller when the agent's maximum is): a submitter that finds the
	// queue full spins until the GPU takes a packet, so a deep queue keeps
	// a burst of launches from costing the caller the GPU's time (256 KiB
	// of packets).
	defaultQueueSize = 4096
	// maxIdleQueues bounds the idle HSA queues a device keeps for reuse.
	maxIdleQueues = 32
	// maxHWQueues bounds the HSA queues of a device that released queues
	// keep: beyond it NewQueue waits for the work of the queue released
	// first and reuses its HSA queue (queues in use are never shared).
	maxHWQueues   = 32
	maxIdleEvents = 256
)

// reuseWait bounds how long NewQueue waits for a released queue's work
// before it makes a new HSA queue instead.
const reuseWait = time.Second

// drainTimeout bounds how long Deinit waits for the work of a queue (a
// queue the runtime never drains must not hang olShutDown).
var drainTimeout = 30 * time.Second

// How it works. A Queue is an HSA queue (hwQueue, pooled per device) and a
// chain of signals: every operation gets a completion signal and starts
// only after the previous operation's signal (the queue's "last") is done.
// Kernels go on the HSA queue as dispatch packets with the barrier bit
// (in order after the packets before them) and, after work done outside
// the HSA queue (a copy, a host function), behind a barrier-AND packet on
// that work's signal. Copies are hsa_amd_memory_async_copy with the last
// signal as their dependency. Host functions, host calls and fills
// (hsa_amd_memory_fill is synchronous) run on library threads once the
// last signal is done (hsa_amd_signal_async_handler hands them over) and
// complete their signal when they return, which holds back the work after
// them. Events are references to a signal; waiting for an event of another
// queue is a barrier-AND packet on its signal.
//
// Each operation is an entry of its hwQueue's ring until its signal is
// done: then its references (the previous signal, a waited signal), its
// kernel-argument buffer, staging buffer or temporary lock are given back
// (reclaim, at the next operation or Sync).

// entry is an operation whose completion the queue has not seen yet.
type entry struct {
	sig, prev, extra *signal
	karg             uintptr
	kclass           int8
	stage            uintptr // host staging buffer of a fill
	tlock            *tempLock
	// cend: the entry is the operations C submitted before sequence number
	// cend-cq.shift (absorb); 0: not
	cend uint64
}

// entryRing holds the pending entries, oldest first; hs holds
// their completion signals at the same indices, for lgo_hsa_scan.
type entryRing struct {
	buf     []entry
	hs      []uint64
	head, n int
}

func (r *entryRing) push(e entry) {
	if r.n == len(r.buf) {
		m := max(16, 2*len(r.buf))
		nb := make([]entry, m)
		// Go memory like nb: growing happens after the operation was
		// submitted, where failing is no longer possible (lgo_hsa_scan
		// reads it only during the call it is passed to)
		nh := make([]uint64, m)
		for i := 0; i < r.n; i++ {
			j := (r.head + i) & (len(r.buf) - 1)
			nb[i], nh[i] = r.buf[j], r.hs[j]
		}
		r.buf, r.hs, r.head = nb, nh, 0
	}
	i := (r.head + r.n) & (len(r.buf) - 1)
	r.buf[i], r.hs[i] = e, e.sig.h
	r.n++
}

// free empties the ring (its HSA queue is destroyed).
func (r *entryRing) free() {
	*r = entryRing{}
}

func (r *entryRing) front() *entry { return &r.buf[r.head] }

func (r *entryRing) pop() {
	r.buf[r.head] = entry{}
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
}

// reclaimBatch is how many operations begin lets pile up before it looks
// for completed ones again: one call to C then loads all their signals.
const reclaimBatch = 32

// hwQueue is an HSA queue and the chain of work submitted to it.
type hwQueue struct {
	d  *Device
	q  uintptr // hsa_queue_t *
	id uintptr // how the runtime's error callback names it

	mu         sync.Mutex
	last       *signal // the latest operation (the queue's reference)
	lastInRing bool    // last is a packet of this HSA queue
	// profiling: hsa_amd_profiling_set_profiler_enabled was called for the
	// HSA queue (it stays on for the queue's later users)
	profiling atomic.Bool
	ring      entryRing
	// begin reclaims once ring.n reaches scanAt, or at once while heavy
	// (entries holding a temporary lock or a staging buffer) is not 0
	scanAt, heavy int
	// err is the first failure of asynchronous work since the last Sync,
	// under errMu (a host operation records its failure without waiting
	// for a submitter that holds mu while the ring is full); owner is the
	// counters of the Queue that has the HSA queue now (also under errMu),
	// whose fastq.Failed mirrors err != nil: a failure recorded once the
	// queue was seen idle (Empty) must send its next sync to Go.
	errMu sync.Mutex
	err   error
	owner *fastq.State
	fault atomic.Pointer[ol.Error]
	// cq is the queue's state shared with the C submissions (shim.h,
	// lgo_hsa_cq; C memory, freed with h); csig the signals of its slots
	// (one reference each), under lock.
	cq   *C.lgo_hsa_cq
	csig []*signal
}

// lock takes the queue for Go: mu (among Go callers), then cq.lock (C
// submissions hold it briefly and never wait for Go), and makes the
// operations C submitted since the last time ring entries.
func (h *hwQueue) lock() {
	h.mu.Lock()
	w := (*uint32)(unsafe.Pointer(&h.cq.lock))
	for !atomic.CompareAndSwapUint32(w, 0, 1) {
		runtime.Gosched()
	}
	h.absorb()
}

func (h *hwQueue) unlock() {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&h.cq.lock)), 0)
	h.mu.Unlock()
}

// absorb makes the operations C submitted since the last call one ring
// entry (they are chained: the last one's signal completes after all of
// them), as commit would have done; the last one's signal moves to the
// entry (events and later operations may refer to it as long as they
// like), and a new one takes its slot. A failure C found is recorded.
func (h *hwQueue) absorb() {
	c := h.cq
	if c.failed != 0 {
		h.fail(ol.Errorf(ol.ErrcBackendFailure, "amdgpu: an asynchronous operation on %s failed (the runtime set its completion signal to %d)", h.d.name(), int64(c.failed)))
		c.failed = 0
	}
	if c.next == c.absorbed {
		return
	}
	j := uint64(c.next-1) & uint64(c.cap-1)
	if c.last_nosig != 0 {
		C.lgo_hsa_cq_seal(c, C.uint32_t(j))
	}
	s := h.csig[j]
	if fresh, err := h.d.p.signals.getUnarmed(); err == nil {
		h.csig[j], c.sig[j] = fresh, C.uint64_t(fresh.h)
	} else {
		h.csig[j], c.broken = nil, 1 // (no more C submissions)
	}
	c.sigd[j] = 0
	c.absorbed = c.next
	e := entry{sig: s, prev: h.last, cend: uint64(c.next + c.shift)}
	s.refs.Add(1)
	h.last, h.lastInRing = s, c.last_in_ring != 0
	h.ring.push(e)
}

// cslots0 and maxCSlots bound the slots of C submissions: a queue gets the
// first ones when C first finds none, and twice as many each time C runs
// out of them again.
const (
	cslots0   = 64
	maxCSlots = C.LGO_HSA_CSLOTS
)

// growC gives C what it found missing (lock held): more slots when it
// ran out of them, kernel-argument buffers for every slot when it first
// launched. The operations in flight keep their slots: their sequence
// numbers are moved so that freed falls in the first cap slots, and those
// that then lie past the old cap take their signal and buffer along to the
// same index in the larger ring.
func (h *hwQueue) growC() {
	c := h.cq
	if c.want == 0 {
		return
	}
	if c.want&C.LGO_HSA_WANT_SLOTS != 0 {
		h.growSlots()
	}
	if c.want&C.LGO_HSA_WANT_KARGS != 0 && c.cap > 0 {
		if c.kargs == 0 && !h.fillKargs(0, uint64(c.cap)) {
			return // (asked again when C next launches)
		}
		c.kargs = 1
		c.want &^= C.LGO_HSA_WANT_KARGS
	}
}

// cKargClass is the kernargPool class of the slots' buffers.
const cKargClass = 1

func init() {
	if kernargMinClass<<cKargClass != C.LGO_HSA_CKARG {
		panic("amdgpu: LGO_HSA_CKARG is not kernarg class cKargClass")
	}
}

// fillKargs gives the slots [from, to) without a buffer one (false: the
// pool had none left, and some may have none).
func (h *hwQueue) fillKargs(from, to uint64) bool {
	for i := from; i < to; i++ {
		if h.cq.karg[i] != 0 {
			continue
		}
		b, _, err := h.d.p.kernargs.get(C.LGO_HSA_CKARG)
		if err != nil {
			return false
		}
		h.cq.karg[i] = C.uintptr_t(b)
	}
	return true
}

func (h *hwQueue) growSlots() {
	c := h.cq
	m := uint64(c.cap)
	if uint64(c.next-c.freed) < m || m >= maxCSlots || c.broken != 0 {
		c.want &^= C.LGO_HSA_WANT_SLOTS // slots came free meanwhile, or no more to give
		return
	}
	n := max(cslots0, 2*m)
	fresh := make([]*signal, 0, n-m)
	for range n - m {
		s, err := h.d.p.signals.getUnarmed()
		if err != nil {
			for _, s := range fresh {
				s.release()
			}
			return // (asked again when C next runs out)
		}
		fresh = append(fresh, s)
	}
	base := uint64(c.freed) & (max(m, 1) - 1)
	delta := uint64(c.freed) - base
	c.freed, c.seen, c.absorbed, c.next = C.uint64_t(base), c.seen-C.uint64_t(delta), c.absorbed-C.uint64_t(delta), c.next-C.uint64_t(delta)
	c.shift += C.uint64_t(delta)
	h.csig = append(h.csig, make([]*signal, n-m)...)
	for i := m; i < uint64(c.next); i++ { // in flight past the old ring's end
		h.csig[i], h.csig[i-m] = h.csig[i-m], nil
		c.sig[i] = c.sig[i-m]
		c.karg[i], c.karg[i-m] = c.karg[i-m], 0
		c.sigd[i], c.sigd[i-m] = c.sigd[i-m], 0
	}
	for i := range n {
		if h.csig[i] == nil {
			s := fresh[len(fresh)-1]
			fresh = fresh[:len(fresh)-1]
			h.csig[i], c.sig[i] = s, C.uint64_t(s.h)
		}
	}
	c.cap = C.uint32_t(n)
	c.want &^= C.LGO_HSA_WANT_SLOTS
	if c.kargs != 0 && !h.fillKargs(0, n) {
		c.kargs = 0 // (C asks again)
	}
}

// freeC gives back the signals of the slots (the HSA queue is destroyed).
func (h *hwQueue) freeC() {
	c := h.cq
	for _, s := range h.csig {
		s.release()
	}
	for i, b := range c.karg {
		h.d.p.kernargs.put(uintptr(b), cKargClass)
		c.karg[i], c.sigd[i] = 0, 0
	}
	h.csig = nil
	c.cap, c.kargs, c.want, c.next, c.absorbed, c.freed, c.seen = 0, 0, 0, 0, 0, 0, 0
}

// hwByID finds an HSA queue from the runtime's error callback.
var (
	hwByID  sync.Map // uintptr → *hwQueue
	hwIDs   atomic.Uintptr
	queueID atomic.Uintptr
)

// lgoHsaQueueError is the runtime's callback for an error of an HSA queue
// (on a runtime thread): the queue is broken; its waits and Sync report it.
//
//export lgoHsaQueueError
func lgoHsaQueueError(st C.uint32_t, id C.uintptr_t) {
	v, ok := hwByID.Load(uintptr(id))
	if !ok {
		return
	}
	h := v.(*hwQueue)
	// an asynchronous failure of the queue's work: the runtime's, whatever
	// the status says
	e := ol.Errorf(ol.ErrcBackendFailure, "amdgpu: the HSA queue of %s failed: %s", h.d.name(), h.d.p.drv.describe(uint32(st)))
	h.fault.CompareAndSwap(nil, e)
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&h.cq.fault)), 1)
}

func (h *hwQueue) fail(err error) {
	h.errMu.Lock()
	defer h.errMu.Unlock()
	if h.err == nil {
		h.err = err
	}
	if h.owner != nil {
		h.owner.Stop(fastq.Failed)
	}
}

// takeErr returns the recorded failure and forgets it.
func (h *hwQueue) takeErr() error {
	h.errMu.Lock()
	defer h.errMu.Unlock()
	err := h.err
	h.err = nil
	if h.owner != nil {
		h.owner.Go(fastq.Failed)
	}
	return err
}

// own makes f the counters of the HSA queue's new user; a failure still
// recorded (of the work of a user that released the queue) is the new
// user's to report, as before.
func (h *hwQueue) own(f *fastq.State) {
	h.errMu.Lock()
	defer h.errMu.Unlock()
	h.owner = f
	if h.err != nil {
		f.Stop(fastq.Failed)
	}
}

// reclaim gives back what completed operations held (h.mu held).
func (h *hwQueue) reclaim() {
	if n := h.ring.n; n > 0 {
		r := &h.ring
		res := C.lgo_hsa_scan(h.d.p.run, (*C.uint64_t)(unsafe.Pointer(&r.hs[0])), C.uint32_t(len(r.buf)-1), C.uint32_t(r.head), C.uint32_t(n))
		if res.bad < res.done {
			h.fail(ol.Errorf(ol.ErrcBackendFailure, "amdgpu: an asynchronous operation on %s failed (the runtime set its completion signal to %d)", h.d.name(), int64(res.value)))
		}
		for i := 0; i < int(res.done); i++ {
			h.finish(r.front())
			r.pop()
		}
	}
	h.scanAt = h.ring.n + reclaimBatch
	if c := h.cq; c.next != c.freed {
		C.lgo_hsa_cq_reclaim(c)
		if c.failed != 0 {
			h.fail(ol.Errorf(ol.ErrcBackendFailure, "amdgpu: an asynchronous operation on %s failed (the runtime set its completion signal to %d)", h.d.name(), int64(c.failed)))
			c.failed = 0
		}
	}
	if h.ring.n == 0 && h.last != nil {
		h.last.release()
		h.last, h.lastInRing = nil, false
		h.cq.last, h.cq.last_in_ring = 0, 0
	}
	h.growC()
}

func (h *hwQueue) finish(e *entry) {
	p := h.d.p
	if e.cend != 0 {
		// its operations and those before them are done: their slots are
		// free (the last one's signal is the entry's)
		c := h.cq
		if end := C.uint64_t(e.cend) - c.shift; int64(end-c.freed) > 0 {
			c.freed = end
			if int64(end-c.seen) > 0 {
				c.seen = end
			}
		}
	}
	e.prev.release()
	e.extra.release()
	if e.karg != 0 {
		p.kernargs.put(e.karg, e.kclass)
	}
	if e.stage != 0 || e.tlock != nil {
		h.heavy--
	}
	if e.stage != 0 {
		_ = C.lgo_hsa_pool_free(p.run, C.uintptr_t(e.stage))
	}
	if e.tlock != nil {
		_ = p.unlockTemp(e.tlock)
	}
	e.sig.release()
}

// begin locks the queue for a new operation and returns its signal, set
// to 1 unless arm is false (then the caller's submission sets it). What
// completed operations held is given back every reclaimBatch operations
// (at once while some hold host memory).
func (h *hwQueue) begin(arm bool) (*signal, error) {
	if f := h.fault.Load(); f != nil {
		return nil, f
	}
	h.lock()
	if h.ring.n >= h.scanAt || h.heavy > 0 || h.cq.want != 0 {
		h.reclaim()
	}
	sp := &h.d.p.signals
	var s *signal
	var err error
	if arm {
		s, err = sp.get()
	} else {
		s, err = sp.getUnarmed()
	}
	if err != nil {
		h.unlock()
		return nil, err
	}
	return s, nil
}

// dep is the signal new work waits for (0: none).
func (h *hwQueue) dep() C.uint64_t {
	if h.last == nil {
		return 0
	}
	return C.uint64_t(h.last.h)
}

// commit records the operation begun with e.sig as the queue's latest and
// unlocks the queue.
func (h *hwQueue) commit(e entry, inRing bool) {
	e.prev = h.last // the queue's reference moves to the entry
	e.sig.refs.Add(1)
	h.last, h.lastInRing = e.sig, inRing
	h.cq.last, h.cq.last_in_ring = C.uint64_t(e.sig.h), 0
	if inRing {
		h.cq.last_in_ring = 1
	}
	if e.stage != 0 || e.tlock != nil {
		h.heavy++
	}
	h.ring.push(e)
	h.unlock()
}

// abort gives back the signal of an operation that was not submitted.
func (h *hwQueue) abort(s *signal) {
	s.release()
	h.unlock()
}

// wait waits until s is done, reporting a queue error or a failed
// operation instead of waiting forever.
func (h *hwQueue) wait(s *signal, limit time.Duration) error {
	p := h.d.p
	hint := C.uint64_t(p.freq / 20) // 50 ms
	var start time.Time
	if limit > 0 {
		start = time.Now()
	}
	for {
		v := int64(C.lgo_hsa_signal_wait(p.run, C.uint64_t(s.h), hint))
		if v == 0 {
			return nil
		}
		if v < 0 {
			return ol.Errorf(ol.ErrcBackendFailure, "amdgpu: an asynchronous operation on %s failed (the runtime set its completion signal to %d)", h.d.name(), v)
		}
		if f := h.fault.Load(); f != nil {
			return f
		}
		if limit > 0 && time.Since(start) > limit {
			return ol.Errorf(ol.ErrcBackendFailure, "amdgpu: the work of a queue of %s did not finish within %v", h.d.name(), limit)
		}
	}
}

// idle reports whether the queue has no pending work.
func (h *hwQueue) idle() bool {
	h.lock()
	defer h.unlock()
	h.reclaim()
	return h.ring.n == 0
}

// hwQueues hands out a device's HSA queues.
type hwQueues struct {
	mu          sync.Mutex
	idle        gpu.Pool[*hwQueue]
	outstanding []*hwQueue       // released with work pending
	count       int              // HSA queues created and not destroyed
	events      gpu.Pool[*Event] // released Event objects, reused by Record
}

func (d *Device) getHW() (*hwQueue, error) {
	qs := &d.queues
	qs.mu.Lock()
	keep := qs.outstanding[:0]
	for _, h := range qs.outstanding {
		if h.fault.Load() == nil && h.idle() {
			qs.idle.Push(h)
		} else {
			keep = append(keep, h)
		}
	}
	clear(qs.outstanding[len(keep):])
	qs.outstanding = keep
	h := qs.idle.Get()
	var oldest *hwQueue
	// (never from a host function: the queue released first may be the
	// one waiting for it)
	if h == nil && qs.count >= maxHWQueues && C.lgo_hsa_running_queue() == 0 {
		for i, o := range qs.outstanding {
			if o.fault.Load() == nil {
				oldest = o
				qs.outstanding = append(qs.outstanding[:i], qs.outstanding[i+1:]...)
				break
			}
		}
	}
	if h == nil && oldest == nil {
		qs.count++
	}
	qs.mu.Unlock()
	if h != nil {
		return h, nil
	}
	if oldest != nil {
		// every queue the device may have is busy: reuse the one released
		// first once its work is done, or make another if it is not done
		// soon (a queue stuck, or waiting for much later work)
		oldest.lock()
		s := oldest.last
		if s != nil {
			s.refs.Add(1)
		}
		oldest.unlock()
		var err error
		if s != nil {
			err = oldest.wait(s, reuseWait)
			s.release()
		}
		if err == nil && oldest.idle() {
			return oldest, nil
		}
		qs.mu.Lock()
		qs.outstanding = append(qs.outstanding, oldest)
		qs.count++
		qs.mu.Unlock()
	}
	h = &hwQueue{d: d, id: hwIDs.Add(1)}
	cq, err := cmem.Calloc(C.sizeof_lgo_hsa_cq, "amdgpu: the submission state of a queue")
	if err != nil {
		qs.mu.Lock()
		qs.count--
		qs.mu.Unlock()
		return nil, err
	}
	h.cq = (*C.lgo_hsa_cq)(cq)
	// (the error callback may still write it after the HSA queue is gone)
	runtime.AddCleanup(h, cmem.Free, unsafe.Pointer(h.cq))
	h.cq.f, h.cq.agent, h.cq.id = d.p.run, C.uint64_t(d.agent), C.uint64_t(h.id)
	hwByID.Store(h.id, h)
	r := C.lgo_hsa_queue_create(d.p.run, C.uint64_t(d.agent), C.uint32_t(d.queueSize), C.uintptr_t(h.id))
	if r.st != hsaStatusSuccess {
		hwByID.Delete(h.id)
		qs.mu.Lock()
		qs.count--
		qs.mu.Unlock()
		return nil, d.p.drv.failure(fmt.Sprintf("hsa_queue_create of %d packets on %s", d.queueSize, d.name()), uint32(r.st))
	}
	h.q = uintptr(r.v)
	h.cq.hq = C.uintptr_t(h.q)
	return h, nil
}

// putHW takes a released queue back: idle for reuse, or outstanding until
// its work is done; never waited for here.
func (d *Device) putHW(h *hwQueue) {
	idle := h.fault.Load() == nil && h.idle()
	qs := &d.queues
	qs.mu.Lock()
	if idle && qs.idle.Len() < maxIdleQueues {
		_ = h.takeErr()
		qs.idle.Push(h)
		idle = false
	} else if !idle {
		qs.outstanding = append(qs.outstanding, h)
	} else {
		qs.count--
	}
	qs.mu.Unlock()
	if idle { // too many idle queues: this one goes
		_ = d.destroyHW(h)
	}
}

func (d *Device) destroyHW(h *hwQueue) error {
	hwByID.Delete(h.id)
	h.lock()
	h.ring.free()
	h.freeC()
	h.unlock()
	return d.call(fmt.Sprintf("hsa_queue_destroy on %s", d.name()), C.lgo_hsa_queue_destroy(d.p.run, C.uintptr_t(h.q)))
}

// drain waits (up to drainTimeout each) for the work of the queues
// released with work pending (Drain); they stay outstanding.
func (d *Device) drain() error {
	qs := &d.queues
	busy := func() []*hwQueue {
		qs.mu.Lock()
		defer qs.mu.Unlock()
		return append([]*hwQueue(nil), qs.outstanding...)
	}()
	var first error
	for _, h := range busy {
		if err := h.drain(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// drain waits (up to drainTimeout) for the queue's last operation, and so
// for all its work (the operations are chained).
func (h *hwQueue) drain() error {
	h.lock()
	s := h.last
	if s != nil {
		s.refs.Add(1)
	}
	h.unlock()
	if s == nil {
		return nil
	}
	defer s.release()
	// a broken queue's error was Sync's to report; its work never ends
	if err := h.wait(s, drainTimeout); err != nil && h.fault.Load() == nil {
		return err
	}
	return nil
}

// releaseQueues waits (up to drainTimeout each, in case Drain was not
// called) for the work of every queue of the device and destroys them
// (Deinit).
func (d *Device) releaseQueues() error {
	qs := &d.queues
	all := func() []*hwQueue {
		qs.mu.Lock()
		defer qs.mu.Unlock()
		all := append(qs.outstanding, qs.idle.Take()...)
		qs.events.Take()
		qs.outstanding, qs.count = nil, 0
		return all
	}()
	var first error
	for _, h := range all {
		if err := h.drain(); err != nil && first == nil {
			first = err
		}
		h.idle()
		if err := d.destroyHW(h); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// NewQueue implements plugin.Device.
func (d *Device) NewQueue() (plugin.Queue, error) {
	h, err := d.getHW()
	if err != nil {
		return nil, err
	}
	f := fastq.New(unsafe.Sizeof(uintptr(0)), C.lgo_hsa_fast_copy_fn(), C.lgo_hsa_fast_launch_fn())
	q := &Queue{d: d, hw: h, id: queueID.Add(1), f: f}
	*(**C.lgo_hsa_cq)(q.f.Extra) = h.cq
	q.ops, q.handed = q.f.Begun, q.f.Handed
	h.own(q.f)
	return q, nil
}

// Queue is an in-order queue of a device (see "How it works" above).
type Queue struct {
	d  *Device
	hw *hwQueue
	id uintptr // tells the queue's host functions apart (lgo_hsa_running_queue)
	// f holds the queue's counters in C memory (plugins/plugin/fastq.h),
	// where the runtime's C entry point of olSyncQueue reads them: a sync
	// of a queue seen idle with nothing submitted since does not enter
	// Go. ops (f.Begun) counts operations, bumped before each is
	// submitted (also one that then fails, or that needs no packet): host
	// functions and events are placed by it, to tell a wait that could
	// never end. handed (f.Handed) is bumped once the operation is on the
	// HSA queue's chain (or failed to get there), so handed == ops means
	// none is being submitted. Sync and Empty set f's idle mark when they
	// find the queue's work done without an error; f's fastq.Failed
	// mirrors hw.err != nil (hwQueue.fail, takeErr). There is no held-back
	// work in Go (a host operation holds the work after it back with its
	// signal), so fastq.Held is never set.
	f           *fastq.State
	ops, handed *atomic.Uint64

	mu    sync.Mutex
	waits gpu.Waits[*Queue] // the latest waits for events of other queues
}

var _ plugin.Queue = (*Queue)(nil)

// copy submits an asynchronous copy; tl is a temporary lock the copy holds.
func (q *Queue) copy(what string, dst uintptr, dstAgent uint64, src uintptr, srcAgent uint64, size uint64, tl *tempLock, stage uintptr) error {
	if gpu.Overlap(dst, src, size) {
		return q.memmove(what, dst, dstAgent, src, srcAgent, size, tl, stage)
	}
	q.ops.Add(1)
	defer q.handed.Add(1)
	h := q.hw
	p := q.d.p
	s, err := h.begin(false)
	if err != nil {
		if tl != nil {
			_ = p.unlockTemp(tl)
		}
		return err
	}
	if st := C.lgo_hsa_copy_armed(p.run, C.uintptr_t(dst), C.uint64_t(dstAgent), C.uintptr_t(src), C.uint64_t(srcAgent),
		C.size_t(size), h.dep(), C.uint64_t(s.h)); st != hsaStatusSuccess {
		h.abort(s)
		if tl != nil {
			_ = p.unlockTemp(tl)
		}
		return p.drv.failure(fmt.Sprintf("hsa_amd_memory_async_copy (%s) of %d bytes to %#x from %#x", what, size, dst, src), uint32(st))
	}
	h.commit(entry{sig: s, tlock: tl, stage: stage}, false)
	return nil
}

// An overlapping copy is split into at most maxMemmovePieces copies; when
// that is too few (ranges closer than 1/64 of the size) it goes through a
// host buffer of up to memmoveStage bytes.
const (
	maxMemmovePieces = 64
	memmoveStage     = 16 << 20
)

// memmove makes a copy whose ranges overlap (inside one allocation), which
// hsa_amd_memory_async_copy does not order byte by byte as memmove does,
// as copies that do not overlap (gpu.Memmove); the last one holds tl and
// frees stage, and the buffer when there is one.
func (q *Queue) memmove(what string, dst uintptr, dstAgent uint64, src uintptr, srcAgent uint64, size uint64, tl *tempLock, stage uintptr) error {
	p := q.d.p
	type piece struct {
		dst, src uintptr
		da, sa   uint64 // the agents
		n        uint64
	}
	var pieces []piece
	var tmp uintptr
	if gpu.MemmovePieces(dst, src, size) <= maxMemmovePieces {
		_ = gpu.Memmove(dst, src, size, 0, 0, func(d, s uintptr, n uint64) error {
			pieces = append(pieces, piece{d, s, dstAgent, srcAgent, n})
			return nil
		})
	} else {
		n := min(size, memmoveStage)
		r := C.lgo_hsa_pool_allocate(p.run, C.uint64_t(p.hostPool), C.size_t(n))
		if r.st != hsaStatusSuccess {
			if tl != nil {
				_ = p.unlockTemp(tl)
			}
			return ol.Errorf(ol.ErrcOutOfResources, "amdgpu: no host memory for the %d-byte buffer of an overlapping copy: %s", n, p.drv.describe(uint32(r.st)))
		}
		tmp = uintptr(r.v)
		if err := p.allowAccess(p.agentsC, len(p.gpus), tmp); err != nil {
			_ = C.lgo_hsa_pool_free(p.run, C.uintptr_t(tmp))
			if tl != nil {
				_ = p.unlockTemp(tl)
			}
			return err
		}
		_ = gpu.Memmove(dst, src, size, tmp, n, func(d, s uintptr, n uint64) error {
			if d == tmp {
				pieces = append(pieces, piece{d, s, srcAgent, srcAgent, n})
			} else {
				pieces = append(pieces, piece{d, s, dstAgent, dstAgent, n})
			}
			return nil
		})
	}
	for i, x := range pieces {
		var ptl *tempLock
		var pstage uintptr
		last := i == len(pieces)-1
		if last {
			ptl, pstage = tl, stage
		}
		if err := q.copy(what, x.dst, x.da, x.src, x.sa, x.n, ptl, pstage); err != nil {
			if i > 0 {
				_ = q.Sync()
			}
			if tl != nil && !last { // (a failed copy releases its own lock)
				_ = p.unlockTemp(tl)
			}
			if stage != 0 {
				_ = C.lgo_hsa_pool_free(p.run, C.uintptr_t(stage))
			}
			if tmp != 0 {
				_ = C.lgo_hsa_pool_free(p.run, C.uintptr_t(tmp))
			}
			return err
		}
	}
	if tmp != 0 {
		// after the copies, in the queue's order
		if err := q.HostCall(func() error {
			_ = C.lgo_hsa_pool_free(p.run, C.uintptr_t(tmp))
			return nil
		}); err != nil {
			_ = q.Sync()
			_ = C.lgo_hsa_pool_free(p.run, C.uintptr_t(tmp))
			return err
		}
	}
	return nil
}

func asDevice(dev plugin.Device) (*Device, error) {
	d, ok := dev.(*Device)
	if !ok {
		return nil, plugin.Unsupported(backendName, "a copy with memory of another platform's device")
	}
	return d, nil
}

// CopyToDevice implements plugin.Queue. Host memory the runtime does not
// know is locked for the copy's duration.
func (q *Queue) CopyToDevice(dst uintptr, dev plugin.Device, src uintptr, size uint64) error {
	dd, err := asDevice(dev)
	if err != nil || size == 0 {
		return err
	}
	return q.copyHost("host to device", false, dst, src, dd.agent, size)
}

// CopyFromDevice implements plugin.Queue.
func (q *Queue) CopyFromDevice(dst, src uintptr, dev plugin.Device, size uint64) error {
	sd, err := asDevice(dev)
	if err != nil || size == 0 {
		return err
	}
	return q.copyHost("device to host", true, dst, src, sd.agent, size)
}

// copyHost is copy between host memory and memory of agent: the host
// address is looked up in the same call to C that submits the copy; host
// memory the runtime does not know is locked for the copy's duration.
func (q *Queue) copyHost(what string, toHost bool, dst, src uintptr, agent uint64, size uint64) error {
	p := q.d.p
	host := src
	if toHost {
		host = dst
	}
	if gpu.Overlap(dst, src, size) {
		a, tl, err := p.hostAddr(host, size)
		if err != nil {
			return err
		}
		if toHost {
			return q.copy(what, a, agent, src, agent, size, tl, 0)
		}
		return q.copy(what, dst, agent, a, agent, size, tl, 0)
	}
	q.ops.Add(1)
	defer q.handed.Add(1)
	h := q.hw
	s, err := h.begin(false)
	if err != nil {
		return err
	}
	var tl *tempLock
	st := C.lgo_hsa_copy_host(p.run, C.bool(toHost), C.uintptr_t(dst), C.uintptr_t(src), C.uint64_t(agent),
		C.size_t(size), h.dep(), C.uint64_t(s.h))
	if st == C.LGO_HSA_UNKNOWN_HOST_MEMORY {
		// (h.mu held: the temporary locks' mutex is taken under it as
		// in reclaim)
		a, l, err := p.hostAddr(host, size)
		if err != nil {
			h.abort(s)
			return err
		}
		tl = l
		d, sr := dst, a
		if toHost {
			d, sr = a, src
		}
		st = C.lgo_hsa_copy_armed(p.run, C.uintptr_t(d), C.uint64_t(agent), C.uintptr_t(sr), C.uint64_t(agent),
			C.size_t(size), h.dep(), C.uint64_t(s.h))
	}
	if st != hsaStatusSuccess {
		h.abort(s)
		if tl != nil {
			_ = p.unlockTemp(tl)
		}
		return p.drv.failure(fmt.Sprintf("hsa_amd_memory_async_copy (%s) of %d bytes to %#x from %#x", what, size, dst, src), uint32(st))
	}
	h.commit(entry{sig: s, tlock: tl}, false)
	return nil
}

// CopyDevice implements plugin.Queue: within one agent or between two.
func (q *Queue) CopyDevice(dst uintptr, dstDev plugin.Device, src uintptr, srcDev plugin.Device, size uint64) error {
	dd, err := asDevice(dstDev)
	if err != nil {
		return err
	}
	sd, err := asDevice(srcDev)
	if err != nil || size == 0 {
		return err
	}
	return q.copy("device to device", dst, dd.agent, src, sd.agent, size, nil, 0)
}

// HSA_STATUS_ERROR_INVALID_ALLOCATION: hsa_amd_memory_fill of memory that
// is not an allocation of the runtime.
const statusInvalidAllocation = 0x1003

// fillByCopy fills count words at ptr with v by copying them from a host
// buffer and waiting for the copy (on a library thread, where blocking is
// allowed).
func (p *Platform) fillByCopy(agent uint64, ptr uintptr, v uint32, count uint64) error {
	size := 4 * count
	r := C.lgo_hsa_pool_allocate(p.run, C.uint64_t(p.hostPool), C.size_t(size))
	if r.st != hsaStatusSuccess {
		return ol.Errorf(ol.ErrcOutOfResources, "amdgpu: no host memory to stage a fill of %d bytes: %s", size, p.drv.describe(uint32(r.st)))
	}
	buf := uintptr(r.v)
	defer C.lgo_hsa_pool_free(p.run, C.uintptr_t(buf))
	if err := p.allowAccess(p.agentsC, len(p.gpus), buf); err != nil {
		return err
	}
	var w [4]byte
	binary.LittleEndian.PutUint32(w[:], v)
	fillHost(buf, w[:], size)
	s, err := p.signals.get()
	if err != nil {
		return err
	}
	defer s.release()
	if st := C.lgo_hsa_copy(p.run, C.uintptr_t(ptr), C.uint64_t(agent), C.uintptr_t(buf), C.uint64_t(agent),
		C.size_t(size), 0, C.uint64_t(s.h)); st != hsaStatusSuccess {
		return p.drv.failure(fmt.Sprintf("hsa_amd_memory_async_copy (fill) of %d bytes to %#x", size, ptr), uint32(st))
	}
	for {
		if v := int64(C.lgo_hsa_signal_wait(p.run, C.uint64_t(s.h), C.uint64_t(p.freq/20))); v <= 0 {
			if v < 0 {
				return ol.Errorf(ol.ErrcBackendFailure, "amdgpu: the copy of a fill of %d bytes to %#x failed (its completion signal is %d)", size, ptr, v)
			}
			return nil
		}
	}
}

// fillStage bounds the host buffer of a fill that hsa_amd_memory_fill
// cannot do.
const fillStage = 1 << 20

// Fill implements plugin.Queue. Host memory (the runtime's system memory,
// locked or unknown memory) is filled by the CPU in the queue's order. On
// GPU memory, 1-, 2- and 4-byte patterns on 4-byte aligned memory in whole
// 4-byte words are hsa_amd_memory_fill, run in the queue's order (at once
// on an idle queue, else on a library thread when the work before it is
// done: the runtime's fill is synchronous); any other fill is copied from a
// host buffer holding repeats of the pattern, freed once the copies are
// done.
func (q *Queue) Fill(ptr uintptr, pattern unsafe.Pointer, patternSize, size uint64) error {
	if size == 0 {
		return nil
	}
	if !q.d.p.isGPUMemory(ptr) {
		op := newHostOp()
		op.kind, op.ptr, op.count = opFillHost, ptr, size
		op.pattern = append(op.pattern[:0], unsafe.Slice((*byte)(pattern), patternSize)...)
		return q.submitHost(op)
	}
	var v uint32
	word := ptr%4 == 0 && size%4 == 0
	switch patternSize {
	case 1:
		b := uint32(*(*uint8)(pattern))
		v = b * 0x01010101
	case 2:
		v = uint32(*(*uint16)(pattern)) * 0x00010001
	case 4:
		v = *(*uint32)(pattern)
	default:
		word = false
	}
	if word {
		return q.fillWords(ptr, v, size/4)
	}
	return q.fillStaged(ptr, pattern, patternSize, size)
}

// isGPUMemory reports whether the runtime knows p as memory of a GPU agent.
func (p *Platform) isGPUMemory(ptr uintptr) bool {
	r := C.lgo_hsa_pointer_info(p.run, C.uintptr_t(ptr))
	switch r._type {
	case pointerHSA:
		for _, a := range p.gpus {
			if uint64(r.owner) == a {
				return true
			}
		}
	case pointerGraphics, pointerIPC:
		return true
	}
	return false
}

// fillHost writes size bytes at p with repeats of pattern (CPU memory).
func fillHost(p uintptr, pattern []byte, size uint64) {
	b := bytesAt(p, size)
	n := copy(b, pattern)
	for n < len(b) {
		n += copy(b[n:], b[:n])
	}
}

func (q *Queue) fillWords(ptr uintptr, v uint32, count uint64) error {
	// (counted here for the synchronous fill; the other ways count their
	// own operations too)
	q.ops.Add(1)
	defer q.handed.Add(1)
	h := q.hw
	p := q.d.p
	if f := h.fault.Load(); f != nil {
		return f
	}
	h.lock()
	h.reclaim()
	if h.last == nil {
		// nothing before it: the runtime's (synchronous) fill, now
		st := C.lgo_hsa_fill(p.run, C.uintptr_t(ptr), C.uint32_t(v), C.size_t(count))
		h.unlock()
		if st == statusInvalidAllocation {
			// GPU memory that is no allocation of the runtime's (a
			// global of a code object): copied from a host buffer
			w := v
			return q.fillStaged(ptr, unsafe.Pointer(&w), 4, 4*count)
		}
		if st != hsaStatusSuccess {
			return p.drv.failure(fmt.Sprintf("hsa_amd_memory_fill of %d words at %#x", count, ptr), uint32(st))
		}
		return nil
	}
	h.unlock()
	op := newHostOp()
	op.kind, op.ptr, op.value, op.count = opFill, ptr, v, count
	return q.submitHost(op)
}

func (q *Queue) fillStaged(ptr uintptr, pattern unsafe.Pointer, patternSize, size uint64) error {
	p := q.d.p
	chunk := size
	if chunk > fillStage {
		chunk = max(patternSize, fillStage/patternSize*patternSize)
	}
	r := C.lgo_hsa_pool_allocate(p.run, C.uint64_t(p.hostPool), C.size_t(chunk))
	if r.st != hsaStatusSuccess {
		return ol.Errorf(ol.ErrcOutOfResources, "amdgpu: no host memory to stage a fill with a %d-byte pattern: %s", patternSize, p.drv.describe(uint32(r.st)))
	}
	buf := uintptr(r.v)
	if err := p.allowAccess(p.agentsC, len(p.gpus), buf); err != nil {
		_ = C.lgo_hsa_pool_free(p.run, C.uintptr_t(buf))
		return err
	}
	b := bytesAt(buf, chunk)
	pat := unsafe.Slice((*byte)(pattern), patternSize)
	for i := uint64(0); i < chunk; i += patternSize {
		copy(b[i:], pat)
	}
	for off := uint64(0); off < size; off += chunk {
		stage := uintptr(0)
		if off+chunk >= size {
			stage = buf // the last copy frees the buffer
		}
		if err := q.copy("fill", ptr+uintptr(off), q.d.agent, buf, q.d.agent, min(chunk, size-off), nil, stage); err != nil {
			if off > 0 {
				_ = q.Sync()
			}
			_ = C.lgo_hsa_pool_free(p.run, C.uintptr_t(buf))
			return err
		}
	}
	return nil
}

// HostFunc implements plugin.Queue: fn(user) runs on a library thread
// once the work before it is done; the queue's later work waits until it
// returns. So fn may call the API, and host functions of different queues
// may wait for each other.
func (q *Queue) HostFunc(fn, user unsafe.Pointer) error {
	op := newHostOp()
	op.kind, op.cfn, op.user = opFunc, uintptr(fn), uintptr(user)
	return q.submitHost(op)
}

// HostCall implements plugin.Queue, as HostFunc.
func (q *Queue) HostCall(fn func() error) error {
	op := newHostOp()
	op.kind, op.fn = opCall, fn
	return q.submitHost(op)
}

// submitHost puts a host operation in the queue's order.
func (q *Queue) submitHost(op *hostOp) error {
	mark := q.ops.Add(1)
	defer q.handed.Add(1)
	h := q.hw
	p := q.d.p
	s, err := h.begin(true)
	if err != nil {
		putHostOp(op)
		return err
	}
	// written under the table's lock: the runtime's handler thread finds
	// the operation there (a handover through C is invisible to Go)
	func() {
		hostOps.mu.Lock()
		defer hostOps.mu.Unlock()
		op.q, op.hw, op.gate, op.mark = q, h, s, mark
	}()
	after := h.last
	if after != nil {
		if st := C.lgo_hsa_on_ready(p.run, C.uint64_t(after.h), C.uintptr_t(op.id)); st != hsaStatusSuccess {
			h.abort(s)
			putHostOp(op)
			return p.drv.failure("hsa_amd_signal_async_handler", uint32(st))
		}
	}
	h.commit(entry{sig: s}, false)
	if after == nil {
		p.workers.hand(op)
	}
	return nil
}

// Record implements plugin.Queue: the event is the queue's last signal.
func (q *Queue) Record() (plugin.Event, error) {
	h := q.hw
	h.lock()
	h.reclaim()
	s := h.last
	if s != nil {
		s.refs.Add(1)
	}
	h.unlock()
	d := q.d
	e := func() *Event {
		d.queues.mu.Lock()
		defer d.queues.mu.Unlock()
		return d.queues.events.Get()
	}()
	if e == nil {
		e = new(Event)
	}
	*e = Event{q: q, hw: h, sig: s, mark: q.ops.Load()}
	return e, nil
}

// Wait implements plugin.Queue: later work waits for e (a barrier-AND
// packet on its signal), without blocking the caller.
func (q *Queue) Wait(pe plugin.Event) error {
	e, ok := pe.(*Event)
	if !ok {
		return plugin.Unsupported(backendName, "waiting for an event of another platform")
	}
	at := q.ops.Add(1)
	defer q.handed.Add(1)
	func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		q.waits.Add(at, e.q, e.mark)
	}()
	if e.sig == nil || e.hw == q.hw || e.sig.value() <= 0 {
		return nil // done, or in order anyway
	}
	h := q.hw
	s, err := h.begin(true)
	if err != nil {
		return err
	}
	C.lgo_hsa_barrier(q.d.p.run, C.uintptr_t(h.q), C.uint64_t(e.sig.h), h.dep(), C.uint64_t(s.h))
	e.sig.refs.Add(1)
	h.commit(entry{sig: s, extra: e.sig}, true)
	return nil
}

// Sync implements plugin.Queue: waits for the queue's last signal and
// reports the first failure since the last Sync.
func (q *Queue) Sync() error {
	if err := gpu.CheckWait(gpu.SyncQueue, q, q.ops.Load(), runningHostFunction); err != nil {
		return err
	}
	// read before the queue's last signal: when every operation counted
	// in o was on the chain then, the wait covers them all
	o, whole := q.f.Submitted()
	if whole && q.f.IdleAt(o) && !q.f.Stopped(fastq.Failed) {
		// seen idle after these very operations, and no failure since:
		// nothing to wait for (what they held was reclaimed then)
		return nil
	}
	h := q.hw
	h.lock()
	s := h.last
	if s != nil {
		s.refs.Add(1)
	}
	h.unlock()
	var err error
	if s != nil {
		err = h.wait(s, 0)
		s.release()
	}
	h.lock()
	h.reclaim()
	h.unlock()
	if recorded := h.takeErr(); err == nil {
		err = recorded
	}
	if err == nil && whole {
		q.f.SawIdle(o)
	}
	return err
}

// Empty implements plugin.Queue. Finding the work done, it sets the idle
// mark too unless a failure waits to be reported (the reclaim records
// every failure of the work it finds done, setting fastq.Failed).
func (q *Queue) Empty() bool {
	o, whole := q.f.Submitted()
	if whole && q.f.IdleAt(o) {
		return true
	}
	if !q.hw.idle() {
		return false
	}
	if whole && !q.f.Stopped(fastq.Failed) {
		q.f.SawIdle(o)
	}
	return true
}

// Release implements plugin.Queue: the HSA queue goes back to the device,
// idle or outstanding; it is never waited for here.
func (q *Queue) Release() error {
	q.d.putHW(q.hw)
	return nil
}

// runningHostFunction is the WaitID of the queue whose host function the
// calling thread runs (0: none) and that host function's operation, for
// gpu.CheckWait.
func runningHostFunction() (uintptr, uint64) {
	running := uintptr(C.lgo_hsa_running_queue())
	if running == 0 {
		return 0, 0
	}
	return running, uint64(C.lgo_hsa_running_mark())
}

// Fast implements plugin.FastQueue: copies and launches from C (cpath.c).
func (q *Queue) Fast() unsafe.Pointer { return q.f.Ptr() }

var (
	_ plugin.FastQueue      = (*Queue)(nil)
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

// Point implements plugin.PointEvent (0: complete when recorded).
func (e *Event) Point() (plugin.Queue, uint64) {
	if e.sig == nil {
		return e.q, 0
	}
	return e.q, e.mark
}

// RunningHostFunction implements plugin.HostFunctionPlatform.
func (p *Platform) RunningHostFunction() (plugin.Queue, uint64, bool) {
	return runningQueues.HostFunction(runningHostFunction)
}

// WaitList implements gpu.WaitNode.
func (q *Queue) WaitList() (*sync.Mutex, *gpu.Waits[*Queue]) { return &q.mu, &q.waits }

// Event is a point in a queue: a reference to the signal of the queue's
// last operation when it was recorded (nil: nothing was pending).
type Event struct {
	q    *Queue
	hw   *hwQueue
	sig  *signal
	mark uint64
	// timed: sig completes a barrier packet of a profiling queue
	// (RecordTimed), which holds when the GPU passed it
	timed bool
}

// Sync implements plugin.Event.
func (e *Event) Sync() error {
	if e.sig == nil {
		return nil
	}
	if err := gpu.CheckWait(gpu.SyncEvent, e.q, e.mark, runningHostFunction); err != nil {
		return err
	}
	return e.hw.wait(e.sig, 0)
}

// Done implements plugin.Event.
func (e *Event) Done() bool { return e.sig == nil || e.sig.value() <= 0 }

// Release implements plugin.Event: the signal reference is dropped and the
// object reused.
func (e *Event) Release() error {
	e.sig.release()
	d := e.q.d
	*e = Event{}
	d.queues.mu.Lock()
	defer d.queues.mu.Unlock()
	d.queues.events.Put(e, maxIdleEvents)
	return nil
}
