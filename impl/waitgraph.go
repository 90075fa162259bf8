package impl

import (
	"sync"
	"sync/atomic"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/fault"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// The runtime's edges of the wait graph: a queue waiting for an event of
// another platform through a HostCall (waitOther), and a host function
// waiting in olSyncQueue/olSyncEvent (its queue's work waits for what it
// waits for). No plugin sees them, so a host function that syncs a queue
// which waits through such an edge for work queued after that host
// function would wait forever. The runtime keeps its edges while they
// last and, before a sync from a host function, follows them together
// with each plugin's own edges (plugin.WaitGraphQueue). A sync made while
// no host function runs (one atomic load, plugin.HostFunctionsRunning)
// checks nothing: nothing can wait for its caller.

// crossEdge says that queue q's work, from its operation at onwards,
// waits for queue on to reach operation mark.
type crossEdge struct {
	q        plugin.Queue
	at       uint64 // ^0 until the HostCall is placed
	on       plugin.Queue
	mark     uint64
	hostFunc bool // a host function's own wait (else an olWaitEvents)
}

// waitGraph is the context's edges.
type waitGraph struct {
	pending atomic.Int32 // len(edges): 0 skips the search
	mu      sync.Mutex
	edges   []*crossEdge
	// check makes a host function's check and the edge of its wait one
	// step, so that two host functions syncing each other's queues cannot
	// both pass and then wait for each other.
	check sync.Mutex
}

// add records an edge (an olWaitEvents's before its HostCall is placed).
func (g *waitGraph) add(e *crossEdge) {
	g.mu.Lock()
	defer g.mu.Unlock()
	fault.Point()
	g.edges = append(g.edges, e)
	g.pending.Store(int32(len(g.edges)))
}

// place sets the edge's position, unless it is already gone.
func (g *waitGraph) place(e *crossEdge, at uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	fault.Point()
	for _, x := range g.edges {
		if x == e {
			e.at = at
		}
	}
}

// remove forgets an edge once its wait is over (or was never made).
func (g *waitGraph) remove(e *crossEdge) {
	g.mu.Lock()
	defer g.mu.Unlock()
	fault.Point()
	for i, x := range g.edges {
		if x == e {
			last := len(g.edges) - 1
			g.edges[i] = g.edges[last]
			g.edges[last] = nil
			g.edges = g.edges[:last]
			break
		}
	}
	g.pending.Store(int32(len(g.edges)))
}

// from appends to out the targets of the edges of p's queue's work up to
// p.at.
func (g *waitGraph) from(p waitPoint, out []waitPoint) []waitPoint {
	g.mu.Lock()
	defer g.mu.Unlock()
	fault.Point()
	for _, e := range g.edges {
		if e.q == p.q && e.at <= p.at {
			out = append(out, waitPoint{q: e.on, at: e.mark, cross: true, hostFunc: p.hostFunc || e.hostFunc})
		}
	}
	return out
}

// waitPoint is a queue of some platform reaching an operation; cross and
// hostFunc: the search got there through an edge of the runtime's, and
// through a host function's wait.
type waitPoint struct {
	q               plugin.Queue
	at              uint64
	cross, hostFunc bool
}

// maxWaitVisits bounds the search: a graph that large is not one a
// program waits through, and an unfinished search refuses nothing.
const maxWaitVisits = 4096

// runningHostFunction finds the host function the calling thread runs:
// its queue and operation, and its platform (nil: none).
func (c *Context) runningHostFunction() (waitPoint, *Platform) {
	for _, p := range c.platformList {
		if hp, ok := p.p.(plugin.HostFunctionPlatform); ok {
			if rq, rat, ok := hp.RunningHostFunction(); ok {
				return waitPoint{q: rq, at: rat}, p
			}
		}
	}
	return waitPoint{}, nil
}

// syncFromHostFunction makes a sync (for queue q to reach operation at)
// that may come from a host function: one that would wait for that host
// function is refused; otherwise the wait is an edge of the graph while
// it lasts. what is the API call, for the message.
func (c *Context) syncFromHostFunction(what string, q plugin.Queue, at uint64, sync func() error) error {
	run, runPlatform := c.runningHostFunction()
	if runPlatform == nil {
		return sync()
	}
	edge := &crossEdge{q: run.q, at: run.at, on: q, mark: at, hostFunc: true}
	g := &c.waits
	if err := g.addUnlessCycle(edge, waitPoint{q: q, at: at}, run, func(path waitPoint) error {
		return waitForeverError(what, q == run.q, path, runPlatform)
	}); err != nil {
		return err
	}
	defer g.remove(edge)
	return sync()
}

func waitForeverError(what string, sameQueue bool, path waitPoint, p *Platform) error {
	if sameQueue {
		return ol.Errorf(ol.ErrcInvalidArgument,
			"%s called from a host function would wait forever: it waits for work queued after that host function on the same queue, which cannot run until the host function returns", what)
	}
	how := "through olWaitEvents or other host functions' own waits"
	if path.cross && !path.hostFunc {
		how = "through olWaitEvents across platforms"
	}
	return ol.Errorf(ol.ErrcInvalidArgument,
		"%s called from a host function would wait forever: the work it waits for depends (%s) on work queued after that host function on a queue of platform %s, which cannot run until the host function returns",
		what, how, p.name)
}

// reaches reports whether from's work waits, within platforms or across
// them, for run: run's queue at or past its operation; path tells how it
// got there. It follows each queue once at the latest operation reached.
func (g *waitGraph) reaches(from, run waitPoint) (found bool, path waitPoint) {
	seen := map[plugin.Queue]uint64{}
	stack := []waitPoint{from}
	for visits := 0; len(stack) > 0 && visits < maxWaitVisits; visits++ {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if p.q == run.q && p.at >= run.at {
			return true, p
		}
		if done, ok := seen[p.q]; ok && done >= p.at {
			continue // its work up to a later operation was followed already
		}
		seen[p.q] = p.at
		stack = g.from(p, stack)
		if wq, ok := p.q.(plugin.WaitGraphQueue); ok {
			wq.Waits(p.at, func(q plugin.Queue, at uint64) {
				stack = append(stack, waitPoint{q: q, at: at, cross: p.cross, hostFunc: p.hostFunc})
			})
		}
	}
	return false, waitPoint{}
}

// queuePoint is where an olSyncQueue of q waits to: its last operation.
func queuePoint(q plugin.Queue) uint64 {
	if wq, ok := q.(plugin.WaitGraphQueue); ok {
		return wq.Position()
	}
	return 0
}

// addUnlessCycle adds edge, unless from reaches run through the edges:
// then it returns cycle's error for the path found.
func (g *waitGraph) addUnlessCycle(edge *crossEdge, from, run waitPoint, cycle func(waitPoint) error) error {
	g.check.Lock()
	defer g.check.Unlock()
	fault.Point()
	if g.pending.Load() != 0 {
		// without edges of the runtime's every cycle lies within one
		// platform, which its plugin refuses itself
		if found, path := g.reaches(from, run); found {
			return cycle(path)
		}
	}
	g.add(edge)
	return nil
}
