package gpu

import (
	"sync"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/fault"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// The waits of GPU queues for each other's events, kept so that a host
// function that synchronises with work that waits, directly or through
// other queues' events, for that same host function is refused instead of
// waiting forever.

// MaxWaitEdges bounds the waits a queue remembers; older ones have long
// completed in any program that is not stuck.
const MaxWaitEdges = 64

// WaitEdge records that a queue's work after its operation At waits for
// queue On to reach operation Mark.
type WaitEdge[Q any] struct {
	At   uint64
	On   Q
	Mark uint64
}

// Waits is a queue's latest waits, oldest first. The queue guards it with
// its own mutex; a zero Waits is empty.
type Waits[Q any] struct {
	edges []WaitEdge[Q]
}

// Add records a wait, forgetting the oldest one when MaxWaitEdges are kept.
func (w *Waits[Q]) Add(at uint64, on Q, mark uint64) {
	if len(w.edges) == MaxWaitEdges {
		copy(w.edges, w.edges[1:])
		w.edges = w.edges[:MaxWaitEdges-1]
	}
	w.edges = append(w.edges, WaitEdge[Q]{At: at, On: on, Mark: mark})
}

// Before copies into buf the waits of operations up to mark.
func (w *Waits[Q]) Before(mark uint64, buf *[MaxWaitEdges]WaitEdge[Q]) []WaitEdge[Q] {
	n := 0
	for _, e := range w.edges {
		if e.At <= mark {
			buf[n] = e
			n++
		}
	}
	return buf[:n]
}

// WaitNode is a queue of a GPU plugin as the wait graph sees it.
type WaitNode[Q any] interface {
	// WaitID tells queues apart (what the driver callback reports as the
	// queue whose host function the calling thread runs).
	WaitID() uintptr
	// WaitList is the queue's waits and the mutex that guards them.
	WaitList() (*sync.Mutex, *Waits[Q])
}

// DependsOn reports whether q's work up to mark waits for operation
// runMark of the queue whose WaitID is running: that operation itself, or
// through the events other queues wait for (followed 32 queues deep).
// It allocates nothing.
func DependsOn[Q WaitNode[Q]](q Q, mark uint64, running uintptr, runMark uint64) bool {
	return dependsOn(q, mark, running, runMark, 0)
}

func dependsOn[Q WaitNode[Q]](q Q, mark uint64, running uintptr, runMark uint64, depth int) bool {
	if q.WaitID() == running && runMark <= mark {
		return true
	}
	if depth > 32 {
		return false
	}
	var buf [MaxWaitEdges]WaitEdge[Q]
	edges := edgesBefore(q, mark, &buf)
	for _, e := range edges {
		if dependsOn(e.On, e.Mark, running, runMark, depth+1) {
			return true
		}
	}
	return false
}

// edgesBefore lists q's waits before mark into buf, under q's wait lock.
func edgesBefore[Q WaitNode[Q]](q Q, mark uint64, buf *[MaxWaitEdges]WaitEdge[Q]) []WaitEdge[Q] {
	mu, w := q.WaitList()
	mu.Lock()
	defer mu.Unlock()
	fault.Point()
	return w.Before(mark, buf)
}

// SyncKind is what a host function waits for: a queue or an event.
type SyncKind bool

const (
	SyncQueue SyncKind = false // olSyncQueue
	SyncEvent SyncKind = true  // olSyncEvent
)

// CheckWait refuses a wait for q to reach mark that would wait forever
// because it waits for the host function the calling thread runs: one of
// q's before mark, or one that q's work before mark waits for through
// events. running reports the WaitID of the queue whose host function the
// thread runs (0: none) and that host function's operation. It allocates
// nothing when the wait may go on.
func CheckWait[Q WaitNode[Q]](kind SyncKind, q Q, mark uint64, running func() (uintptr, uint64)) error {
	queue, runMark := running()
	if queue == 0 || !DependsOn(q, mark, queue, runMark) {
		return nil
	}
	if kind == SyncEvent {
		return ol.NewError(ol.ErrcInvalidArgument, "olSyncEvent called from a host function would wait forever: the event's work waits for that host function")
	}
	return ol.NewError(ol.ErrcInvalidArgument, "olSyncQueue called from a host function would wait forever: the queue's work waits for that host function")
}

// VisitWaits calls visit for each wait of q's work up to mark, for the
// runtime's wait graph (plugin.WaitGraphQueue); no lock is held meanwhile.
func VisitWaits[Q WaitNode[Q]](q Q, mark uint64, visit func(Q, uint64)) {
	var buf [MaxWaitEdges]WaitEdge[Q]
	edges := edgesBefore(q, mark, &buf)
	for _, e := range edges {
		visit(e.On, e.Mark)
	}
}

// Running knows the queues whose host function runs now, by WaitID (what
// the driver callback's thread-local state records), so that a plugin can
// name the queue to the runtime (plugin.HostFunctionPlatform).
type Running[Q any] struct {
	mu sync.Mutex
	m  map[uintptr]Q
}

// Enter records that a host function of q (with WaitID id) starts.
func (r *Running[Q]) Enter(id uintptr, q Q) {
	plugin.EnterHostFunction()
	r.mu.Lock()
	defer r.mu.Unlock()
	fault.Point()
	if r.m == nil {
		r.m = map[uintptr]Q{}
	}
	r.m[id] = q
}

// Leave records that it returned.
func (r *Running[Q]) Leave(id uintptr) {
	defer plugin.LeaveHostFunction()
	r.mu.Lock()
	defer r.mu.Unlock()
	fault.Point()
	delete(r.m, id)
}

// Queue returns the queue with WaitID id whose host function runs.
func (r *Running[Q]) Queue(id uintptr) (Q, bool) {
	var none Q
	if !plugin.HostFunctionsRunning() {
		return none, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fault.Point()
	q, ok := r.m[id]
	return q, ok
}

// HostFunction answers plugin.HostFunctionPlatform for a GPU plugin:
// running reports the WaitID and operation of the host function the
// calling thread runs (the driver thread-local the plugin's C shim keeps).
func (r *Running[Q]) HostFunction(running func() (uintptr, uint64)) (plugin.Queue, uint64, bool) {
	if !plugin.HostFunctionsRunning() {
		return nil, 0, false
	}
	id, mark := running()
	if id == 0 {
		return nil, 0, false
	}
	q, ok := r.Queue(id)
	if !ok {
		return nil, 0, false
	}
	pq, ok := any(q).(plugin.Queue)
	return pq, mark, ok
}
