package host

/*
#include "exec.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/fault"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// MaxHostFunctionThreads is how many host functions run at once: later ones
// wait (in order on their own queues) until one returns, so host functions
// that block cost at most this many threads, however many queues hold them.
// A host function that waits for the library (olSyncQueue, olSyncEvent)
// gives its place to another while it waits.
func MaxHostFunctionThreads() int { return max(16, 2*runtime.NumCPU()) }

// hostFuncs runs host functions and knows, on any thread, which host
// function that thread is running (through a token in C thread-local
// storage), so that a wait that could never end is refused.
type hostFuncs struct {
	running atomic.Int32 // host functions running now: 0 skips the lookup

	mu     sync.Mutex
	turn   sync.Cond // signalled when active drops
	limit  int
	active int       // host functions running user code (not waiting for the library)
	runs   []hostRun // by token-1
	free   []int
}

// hostRun is a running host function: it is op number mark of queue q, and
// may itself be waiting for queue waitQ to reach waitMark.
type hostRun struct {
	q        *queue
	mark     uint64
	waitQ    *queue
	waitMark uint64
}

func newHostFuncs() *hostFuncs {
	h := &hostFuncs{limit: MaxHostFunctionThreads()}
	h.turn.L = &h.mu
	return h
}

// call runs host function o of queue q on this goroutine's thread once
// fewer than limit host functions are running (a goroutine that waits for
// its turn holds no thread).
func (h *hostFuncs) call(q *queue, o *op) {
	// (on a runner's goroutine: no fault point)
	h.mu.Lock()
	for h.active >= h.limit {
		h.turn.Wait()
	}
	h.active++
	var tok int
	if n := len(h.free); n > 0 {
		tok = h.free[n-1]
		h.free = h.free[:n-1]
	} else {
		h.runs = append(h.runs, hostRun{})
		tok = len(h.runs)
	}
	h.runs[tok-1] = hostRun{q: q, mark: o.mark}
	h.mu.Unlock()
	h.running.Add(1)
	plugin.EnterHostFunction()
	// deferred: a panic (recovered by the queue's runner as the queue's
	// error) still gives the turn and the token back
	defer h.done(tok)
	hook("host function")

	C.ol_host_call(o.fn, o.user, C.uintptr_t(tok))
}

// done ends host function tok: its turn goes to the next one.
func (h *hostFuncs) done(tok int) {
	plugin.LeaveHostFunction()
	h.running.Add(-1)
	h.mu.Lock()
	defer h.mu.Unlock()
	fault.Point()
	h.runs[tok-1] = hostRun{}
	h.free = append(h.free, tok)
	h.active--
	h.turn.Signal()
}

// current returns the token of the host function the calling thread runs,
// or 0.
func (h *hostFuncs) current() int {
	if h.running.Load() == 0 {
		return 0
	}
	tok := int(C.ol_host_current())
	h.mu.Lock()
	defer h.mu.Unlock()
	fault.Point()
	if tok <= 0 || tok > len(h.runs) || h.runs[tok-1].q == nil {
		return 0 // a host function of another initialisation
	}
	return tok
}

// wait blocks until q has completed mark. Called from host function tok,
// it first refuses a wait that depends on that host function returning,
// and gives the host function's place to another while it waits.
func (h *hostFuncs) wait(tok int, q *queue, mark uint64, what string) error {
	if tok == 0 {
		q.waitFor(mark)
		return nil
	}
	self := h.locked(func() hostRun { return h.runs[tok-1] })
	if h.dependsOn(q, mark, self, 0) {
		if q == self.q {
			return ol.Errorf(ol.ErrcInvalidArgument, "%s called from a host function would wait forever: it waits for work queued after that host function on the same queue, which cannot run until the host function returns", what)
		}
		return ol.Errorf(ol.ErrcInvalidArgument, "%s called from a host function would wait forever: the work it waits for depends (through olWaitEvents) on work queued after that host function, which cannot run until the host function returns", what)
	}
	// Another host function may run meanwhile. Coming back does not wait
	// for a turn (that could wait for host functions that wait for this
	// one): for a while more than limit may run.
	h.locked(func() hostRun {
		h.runs[tok-1].waitQ, h.runs[tok-1].waitMark = q, mark
		h.active--
		h.turn.Signal()
		return hostRun{}
	})
	q.waitFor(mark)
	h.locked(func() hostRun {
		h.runs[tok-1].waitQ = nil
		h.active++
		return hostRun{}
	})
	return nil
}

// locked runs f under h.mu, released by defer.
func (h *hostFuncs) locked(f func() hostRun) hostRun {
	h.mu.Lock()
	defer h.mu.Unlock()
	fault.Point()
	return f()
}

// dependsOn reports whether queue q reaching mark needs host function self
// to return: q is self's queue at or past it, or q first waits (an
// olWaitEvents, or a running host function's own wait) for something that
// does.
func (h *hostFuncs) dependsOn(q *queue, mark uint64, self hostRun, depth int) bool {
	if q == self.q && mark >= self.mark {
		return true
	}
	if depth > 256 || q.completed.Load() >= mark {
		return false
	}
	for _, t := range h.waitsOf(q, mark) {
		if h.dependsOn(t.q, t.mark, self, depth+1) {
			return true
		}
	}
	return false
}

// waitTarget is a queue reaching an operation.
type waitTarget struct {
	q    *queue
	mark uint64
}

// waitsOf lists what q's pending work up to mark waits for on this
// device: its olWaitEvents, and the waits its running host functions make.
func (h *hostFuncs) waitsOf(q *queue, mark uint64) []waitTarget {
	next := q.waitsLocked(mark)
	h.locked(func() hostRun {
		for _, r := range h.runs {
			if r.q == q && r.waitQ != nil && r.mark <= mark {
				next = append(next, waitTarget{r.waitQ, r.waitMark})
			}
		}
		return hostRun{}
	})
	return next
}

// waitsLocked lists the olWaitEvents of q's pending work up to mark.
func (q *queue) waitsLocked(mark uint64) []waitTarget {
	q.mu.Lock()
	defer q.mu.Unlock()
	fault.Point()
	var next []waitTarget
	if q.waitingOn != nil {
		next = append(next, waitTarget{q.waitingOn, q.waitingMark})
	}
	q.ops.each(func(o *op) bool {
		if o.mark > mark {
			return false
		}
		if o.kind == opWait {
			next = append(next, waitTarget{o.waitQueue, o.waitMark})
		}
		return true
	})
	return next
}

// runOf returns the queue and operation of host function tok.
func (h *hostFuncs) runOf(tok int) (*queue, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fault.Point()
	r := h.runs[tok-1]
	return r.q, r.mark
}
