package impl

// #include "pool.h"
import "C"

import (
	"fmt"
	"github.com/liboffload-go/liboffload-go/internal/fault"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-multierror"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// Deferred frees. olMemFree takes the allocation out of the map at once
// (olGetMemInfo and a second olMemFree of it fail from then on) and
// returns at once, but the device memory is released only after all the
// work queued before the free, on every queue of every platform, has
// completed: copies, fills, kernels whose arguments point into it, host
// calls of the runtime. Until then no olMemAlloc can be given that memory.
// The same on every backend, whatever its driver's free does (CUDA's waits
// for the device, ROCr's and the C allocator's do not). See RATIONALE.md,
// "Why does olMemFree defer the release instead of waiting?".
//
// How: at the free, every live queue that still has work gets a marker
// (an event recorded on it; frees made while a queue got no new work share
// one), and so do the queues destroyed while they had work (retireQueue
// records theirs before the release). With no marker the
// memory is freed at once (the common path: one Empty query per live
// queue). Otherwise the free joins a FIFO that one runtime goroutine (the
// worker, started at the first deferred free) works through: it waits for
// each marker on its own thread (never on a driver callback thread), then
// frees. The final olShutDown stops the worker after all work has ended
// and frees what is left, before the platforms are de-initialised.

// mark is an event a pending free waits for. A marker of a destroyed queue
// is shared by every free made while it is pending (and by the retired
// list): the last reference releases the event.
type mark struct {
	e    plugin.Event
	refs atomic.Int32
}

func newMark(e plugin.Event) *mark {
	m := &mark{e: e}
	m.refs.Store(1)
	return m
}

// tryRef takes a reference unless the last one is gone (the event released).
func (m *mark) tryRef() bool {
	for {
		n := m.refs.Load()
		if n <= 0 {
			return false
		}
		if m.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (m *mark) unref() error {
	if m.refs.Add(-1) == 0 {
		return m.e.Release()
	}
	return nil
}

// pendingFree is an allocation whose release waits for its markers.
type pendingFree struct {
	c     *Context
	a     alloc
	marks []*mark
}

// maxDeferredErrors bounds the errors of deferred frees kept for the final
// olShutDown to report.
const maxDeferredErrors = 8

// retirePrune is the length of the retired list from which retireQueue
// drops the markers that have passed.
const retirePrune = 32

// deferredFrees is the context's state of pending frees.
type deferredFrees struct {
	// scan excludes olDestroyQueue (write) from the queue scans of
	// olMemFree (read): a queue is either seen live by a scan or has its
	// marker on the retired list when the scan reads it.
	scan sync.RWMutex

	mu      sync.Mutex
	cond    sync.Cond      // broadcast when fifo, busy or closing change
	fifo    []*pendingFree // the worker's, in free order
	busy    map[*Device]int
	retired []*mark // markers of queues destroyed with work left
	// retiring: queues destroyed while calls still used them (retireQueue);
	// nretiring is its length, read without the lock by every free
	retiring  map[*Queue]struct{}
	nretiring atomic.Int32
	// latest is each live queue's newest marker and the queue's position
	// (plugin.WaitGraphQueue) when it was recorded: frees made while the
	// queue got no new work share it (no reference of its own)
	latest  map[*Queue]latestMark
	stuck   []*pendingFree // markers that could not be waited for: freed at shutdown
	errs    []error
	dropped int // errors beyond maxDeferredErrors
	closing bool
	done    chan struct{} // closed when the worker ends; nil: never started
	// released counts the deferred frees made (read without the lock)
	released atomic.Uint64
}

type latestMark struct {
	pos uint64
	m   *mark
}

// lock takes f.mu (and readies f on first use); every caller defers the
// unlock, so that a panic under it leaves no lock held.
func (f *deferredFrees) lock() {
	f.mu.Lock()
	if f.cond.L == nil {
		f.cond.L = &f.mu
		f.busy = map[*Device]int{}
		f.latest = map[*Queue]latestMark{}
	}
}

// queueMark returns a marker of the work submitted to q so far: the one of
// an earlier free when q got no work since, else a new one.
func (f *deferredFrees) queueMark(q *Queue) (*mark, error) {
	wq, ok := q.q.(plugin.WaitGraphQueue)
	var pos uint64
	if ok {
		pos = wq.Position()
		if m := f.reuseLatest(q, pos); m != nil {
			return m, nil
		}
	}
	e, err := q.q.Record()
	if err != nil || e == nil {
		return nil, err
	}
	m := newMark(e)
	if ok {
		f.setLatest(q, latestMark{pos: pos, m: m})
	}
	return m, nil
}

// reuseLatest returns a new reference to the marker of q's work up to
// pos, when there is one.
func (f *deferredFrees) reuseLatest(q *Queue, pos uint64) *mark {
	f.lock()
	defer f.mu.Unlock()
	fault.Point()
	if l := f.latest[q]; l.m != nil && l.pos == pos && l.m.tryRef() {
		return l.m
	}
	return nil
}

func (f *deferredFrees) setLatest(q *Queue, l latestMark) {
	f.lock()
	defer f.mu.Unlock()
	fault.Point()
	f.latest[q] = l
}

// freeAfterQueuedWork releases the memory of a once the work queued so far
// on every queue has completed; the allocation has already left the
// allocation map.
func (c *Context) freeAfterQueuedWork(a *alloc) error {
	f := &c.frees
	marks, recErr := c.markQueuedWork()
	if len(marks) == 0 && recErr == nil {
		return c.releaseAlloc(a)
	}
	p := &pendingFree{c: c, a: *a, marks: marks}
	base, dev := a.base, a.device
	f.lock()
	defer f.mu.Unlock()
	fault.Point()
	if recErr != nil {
		// a queue with work could not be marked: the memory waits for the
		// final olShutDown, when all work has ended (never freed early)
		f.stuck = append(f.stuck, p)
		f.noteLocked(wrapErr(fmt.Sprintf("olMemFree of %#x: its release waited for olShutDown: a queue with pending work could not be marked", base), recErr))
		return nil
	}
	if f.closing {
		// the final olShutDown is under way (a call racing it): it frees
		// the stuck list after the worker
		f.stuck = append(f.stuck, p)
		return nil
	}
	f.fifo = append(f.fifo, p)
	f.busy[dev]++
	if f.done == nil {
		f.done = make(chan struct{})
		go f.work()
	}
	f.cond.Broadcast()
	return nil
}

// markQueuedWork returns a marker of the work queued so far on each live
// queue that still has some and of each destroyed queue whose work has not
// ended. An error means a busy queue could not be marked.
func (c *Context) markQueuedWork() (marks []*mark, err error) {
	f := &c.frees
	f.scan.RLock()
	defer f.scan.RUnlock()
	fault.Point()
	mark := func(_ uintptr, q *Queue) {
		if err != nil || q.q.Empty() {
			return
		}
		m, merr := f.queueMark(q)
		switch {
		case merr != nil:
			err = merr
		case m != nil:
			marks = append(marks, m)
		}
	}
	c.queues.each(mark)
	// destroyed, but a call that decoded the handle before may still
	// queue work there (rare: a destroy racing calls on the same queue)
	for _, q := range f.retiringQueues() {
		mark(0, q)
	}
	f.lock()
	defer f.mu.Unlock()
	fault.Point()
	return append(marks, f.takeRetiredLocked()...), err
}

// takeRetiredLocked returns a new reference to each marker of a destroyed
// queue that has not passed yet, and drops those that have. f.mu is held.
func (f *deferredFrees) takeRetiredLocked() []*mark {
	if len(f.retired) == 0 {
		return nil
	}
	var out []*mark
	kept := f.retired[:0]
	for _, m := range f.retired {
		if m.e.Done() {
			f.noteLocked(m.unref())
			C.ol_pool_gate_add(-1)
			continue
		}
		m.refs.Add(1)
		out = append(out, m)
		kept = append(kept, m)
	}
	clear(f.retired[len(kept):])
	f.retired = kept
	return out
}

// retireQueue removes q from the queue table (and the C paths' mirror) and
// counts it as retiring: the calls that decoded its handle before may
// still submit work (Queue.enter); the frees' scans treat it as a live
// queue until the last of them has left and finishRetire has marked its
// work. It reports false if q was already removed.
func (c *Context) retireQueue(q *Queue) bool {
	f := &c.frees
	f.scan.Lock()
	defer f.scan.Unlock()
	fault.Point()
	// (a second destroy of the same queue finds it gone from the mirror
	// as well: no harm)
	c.unmirrorQueue(q)
	if !c.queues.remove(q.h) {
		return false
	}
	c.uncountQueue(q)
	f.lock()
	defer f.mu.Unlock()
	fault.Point()
	delete(f.latest, q)
	if f.retiring == nil {
		f.retiring = map[*Queue]struct{}{}
	}
	f.retiring[q] = struct{}{}
	f.nretiring.Store(int32(len(f.retiring)))
	return true
}

// finishRetire ends the destroy of q once no call uses it: if its work has
// not ended, it keeps a marker of that work for the frees made until it
// passes; then the plugin's queue is released. Only the first call does
// anything.
func (c *Context) finishRetire(q *Queue) error {
	if !q.finished.CompareAndSwap(false, true) {
		return nil
	}
	c.quiesceQueue(q)
	c.endRetire(q)
	return q.q.Release()
}

// endRetire moves q from the retiring queues to the retired markers.
func (c *Context) endRetire(q *Queue) {
	f := &c.frees
	f.scan.Lock()
	defer f.scan.Unlock()
	fault.Point()
	c.markRetired(q)
	f.lock()
	defer f.mu.Unlock()
	fault.Point()
	if _, ok := f.retiring[q]; ok {
		C.ol_pool_gate_add(-1) // (its marker, if any, counts from now)
	}
	delete(f.retiring, q)
	f.nretiring.Store(int32(len(f.retiring)))
}

// markRetired keeps a marker of q's pending work on the retired list
// (f.scan held for writing).
func (c *Context) markRetired(q *Queue) {
	f := &c.frees
	if q.q.Empty() {
		return
	}
	e, err := q.q.Record()
	f.lock()
	defer f.mu.Unlock()
	fault.Point()
	if err != nil || e == nil {
		if err != nil {
			f.noteLocked(wrapErr("olDestroyQueue: no marker for the queue's pending work", err))
		}
		return
	}
	if len(f.retired) >= retirePrune {
		for _, m := range f.takeRetiredLocked() {
			f.noteLocked(m.unref())
		}
	}
	f.retired = append(f.retired, newMark(e))
	C.ol_pool_gate_add(1)
}

// retiringQueues returns the queues destroyed while calls still used them.
func (f *deferredFrees) retiringQueues() []*Queue {
	if f.nretiring.Load() == 0 { // nearly always: no lock for it
		return nil
	}
	f.lock()
	defer f.mu.Unlock()
	fault.Point()
	if len(f.retiring) == 0 {
		return nil
	}
	out := make([]*Queue, 0, len(f.retiring))
	for q := range f.retiring {
		out = append(out, q)
	}
	return out
}

// note keeps err (if any) for the final olShutDown.
func (f *deferredFrees) note(err error) {
	if err == nil {
		return
	}
	f.lock()
	defer f.mu.Unlock()
	fault.Point()
	f.noteLocked(err)
}

// noteLocked keeps err (if any) for the final olShutDown. f.mu is held.
func (f *deferredFrees) noteLocked(err error) {
	switch {
	case err == nil:
	case len(f.errs) < maxDeferredErrors:
		f.errs = append(f.errs, err)
	default:
		f.dropped++
	}
}

// work is the worker: it completes the pending frees in order until the
// final olShutDown closes the list and it is empty.
func (f *deferredFrees) work() {
	defer close(f.done)
	// (no fault points: a panic here is no entry point's, and complete
	// recovers the plugins')
	f.mu.Lock()
	for {
		for len(f.fifo) == 0 && !f.closing {
			f.cond.Wait()
		}
		if len(f.fifo) == 0 {
			f.mu.Unlock()
			return
		}
		p := f.fifo[0]
		f.fifo[0] = nil
		f.fifo = f.fifo[1:]
		f.mu.Unlock()
		freed, err := complete(p)
		f.released.Add(1)
		f.mu.Lock()
		if !freed {
			f.stuck = append(f.stuck, p)
		}
		f.noteLocked(err)
		if f.busy[p.a.device]--; f.busy[p.a.device] == 0 {
			delete(f.busy, p.a.device)
		}
		f.cond.Broadcast()
	}
}

// complete waits for p's markers and frees p. It reports false, with the
// reason, when a marker could not be waited for (p then waits for the
// final olShutDown). A panic of a plugin becomes an error: it must not end
// the process from a goroutine of the library.
func complete(p *pendingFree) (freed bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			freed, err = true, ol.Errorf(ol.ErrcUnknown, "internal error in the deferred olMemFree of %#x: %v", p.a.base, r)
		}
	}()
	for _, m := range p.marks {
		if m.e.Done() {
			continue
		}
		serr := m.e.Sync()
		if !m.e.Done() {
			if serr == nil {
				serr = ol.NewError(ol.ErrcUnknown, "the event is not complete after its sync")
			}
			return false, wrapErr(fmt.Sprintf("olMemFree of %#x: its release waited for olShutDown: the work queued before it did not end", p.a.base), serr)
		}
	}
	return true, p.release()
}

// release frees p's memory, then drops its markers.
func (p *pendingFree) release() error {
	var errs *multierror.Error
	if err := p.c.releaseAlloc(&p.a); err != nil {
		errs = multierror.Append(errs, wrapErr(fmt.Sprintf("deferred olMemFree of %#x (%d bytes)", p.a.base, p.a.size), err))
	}
	for _, m := range p.marks {
		if err := m.unref(); err != nil {
			errs = multierror.Append(errs, err)
		}
	}
	p.marks = nil
	return errs.ErrorOrNil()
}

// waitFor waits until no free of memory of dev waits in the worker's list.
// It reports whether memory may have been freed since the worker had made
// released frees: then another try may succeed.
func (f *deferredFrees) waitFor(dev *Device, released uint64) bool {
	f.lock()
	defer f.mu.Unlock()
	fault.Point()
	waited := f.busy[dev] > 0
	for f.busy[dev] > 0 {
		f.cond.Wait()
	}
	return waited || f.released.Load() != released
}

// releaseAlloc gives the memory of a, out of the map, back: to its pool
// or to its device.
func (c *Context) releaseAlloc(a *alloc) error {
	if a.slab != nil {
		c.freePooled(a)
		return nil
	}
	return a.device.d.Free(a.deviceBase(), a.kind)
}

// allocDevice is dev.d.Alloc for olMemAlloc. When the device is out of
// memory while frees of its memory wait for queued work (or were made
// meanwhile), it waits for them and tries once more, as a driver whose
// free waits would have freed them already. From a host function it does
// not wait: the work it would wait for may be its own queue's.
func (c *Context) allocDevice(dev *Device, typ ol.AllocType, size uint64) (uintptr, error) {
	released := c.frees.released.Load()
	p, err := dev.d.Alloc(typ, size)
	if err != nil && dev.pool != nil {
		// the pool's free slabs go back to the device first
		c.trimPool(dev, nil)
		p, err = dev.d.Alloc(typ, size)
	}
	if err == nil || c.inHostFunction() || !c.frees.waitFor(dev, released) {
		return p, err
	}
	return dev.d.Alloc(typ, size)
}

// inHostFunction reports whether the calling thread runs a host function.
func (c *Context) inHostFunction() bool {
	if !plugin.HostFunctionsRunning() {
		return false
	}
	for _, p := range c.platformList {
		if cp, ok := p.p.(plugin.CallbackPlatform); ok && cp.InCallback() {
			return true
		}
	}
	return false
}

// shutdown ends the deferred frees at the final olShutDown, after all
// submitted work has ended: the worker completes its list and stops, then
// what waited for olShutDown is freed and the markers of destroyed queues
// are released. It returns the errors of every deferred free.
func (f *deferredFrees) shutdown() error {
	if done := f.close(); done != nil {
		<-done
	}
	f.lock()
	defer f.mu.Unlock()
	fault.Point()
	for _, p := range f.stuck {
		f.noteLocked(p.release())
	}
	f.stuck = nil
	for _, m := range f.retired {
		f.noteLocked(m.unref())
	}
	f.retired = nil
	clear(f.latest)
	if len(f.errs) == 0 {
		return nil
	}
	var errs *multierror.Error
	for _, err := range f.errs {
		errs = multierror.Append(errs, err)
	}
	if f.dropped > 0 {
		errs = multierror.Append(errs, ol.Errorf(ol.ErrcUnknown, "and %d more errors of deferred frees", f.dropped))
	}
	return errs
}

// wrapErr keeps err's code and puts what failed in front of its text.
func wrapErr(what string, err error) error {
	code, details := describe(err)
	return ol.Errorf(code, "%s: %s", what, details)
}

// close tells the worker to stop once its list is empty; it returns the
// channel closed when it has (nil: no worker ever started).
func (f *deferredFrees) close() chan struct{} {
	f.lock()
	defer f.mu.Unlock()
	fault.Point()
	f.closing = true
	f.cond.Broadcast()
	return f.done
}
