package impl

import (
	"sync"
	"sync/atomic"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// The waits between platforms are the runtime's own: a queue waits for an
// event of another platform through a HostCall (waitOther). No plugin
// sees them, so a host function that syncs a queue which waits, through
// such an edge, for work queued after that host function would wait
// forever. The runtime keeps its edges while they are pending and, only
// then, follows them together with each plugin's own edges (see
// plugin.WaitGraphQueue) before a sync: without pending edges every cycle
// lies within one platform, which the plugin refuses itself, so syncs pay
// one atomic load.

// crossEdge is a pending wait of queue q's work after operation at for
// queue on (another platform's) to reach operation mark.
type crossEdge struct {
	q    plugin.Queue
	at   uint64 // ^0 until the HostCall is placed
	on   plugin.Queue
	mark uint64
}

// waitGraph is the context's pending cross-platform waits.
type waitGraph struct {
	pending atomic.Int32 // len(edges): 0 skips every check
	mu      sync.Mutex
	edges   []*crossEdge
}

// add records an edge whose position on its queue is not known yet.
func (g *waitGraph) add(e *crossEdge) {
	g.mu.Lock()
	g.edges = append(g.edges, e)
	g.pending.Store(int32(len(g.edges)))
	g.mu.Unlock()
}

// place sets the edge's position, unless it is already gone.
func (g *waitGraph) place(e *crossEdge, at uint64) {
	g.mu.Lock()
	for _, x := range g.edges {
		if x == e {
			e.at = at
		}
	}
	g.mu.Unlock()
}

// remove forgets an edge once its wait is over (or was never made).
func (g *waitGraph) remove(e *crossEdge) {
	g.mu.Lock()
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
	g.mu.Unlock()
}

// from lists the targets of the edges of queue q's work up to at.
func (g *waitGraph) from(q plugin.Queue, at uint64, out []waitPoint) []waitPoint {
	g.mu.Lock()
	for _, e := range g.edges {
		if e.q == q && e.at <= at {
			out = append(out, waitPoint{q: e.on, at: e.mark})
		}
	}
	g.mu.Unlock()
	return out
}

// waitPoint is a queue of some platform reaching an operation; cross:
// the search got there through an edge between platforms.
type waitPoint struct {
	q     plugin.Queue
	at    uint64
	cross bool
}

// maxWaitVisits bounds the search: a graph that large is not one a
// program waits through, and an unfinished search refuses nothing.
const maxWaitVisits = 4096

// checkWait refuses a wait, from a host function, for queue q to reach
// operation at when that needs the host function to return first. what
// is the API call, for the message.
func (c *Context) checkWait(what string, q plugin.Queue, at uint64) error {
	var run waitPoint
	var runPlatform *Platform
	for _, p := range c.platformList {
		if hp, ok := p.p.(plugin.HostFunctionPlatform); ok {
			if rq, rat, ok := hp.RunningHostFunction(); ok {
				run, runPlatform = waitPoint{q: rq, at: rat}, p
				break
			}
		}
	}
	if runPlatform == nil {
		return nil // not called from a host function
	}
	found, cross := c.waits.reaches(waitPoint{q: q, at: at}, run)
	switch {
	case !found:
		return nil
	case q == run.q:
		return ol.Errorf(ol.ErrcInvalidArgument,
			"%s called from a host function would wait forever: it waits for work queued after that host function on the same queue, which cannot run until the host function returns", what)
	}
	how := "through olWaitEvents"
	if cross {
		how = "through olWaitEvents across platforms"
	}
	return ol.Errorf(ol.ErrcInvalidArgument,
		"%s called from a host function would wait forever: the work it waits for depends (%s) on work queued after that host function on a queue of platform %s, which cannot run until the host function returns",
		what, how, runPlatform.name)
}

// reaches reports whether from's work waits, within platforms or across
// them, for run: run's queue at or past its operation; cross tells
// whether the path found crosses platforms. It follows each queue once at
// the latest operation reached.
func (g *waitGraph) reaches(from, run waitPoint) (found, cross bool) {
	seen := map[plugin.Queue]uint64{}
	stack := []waitPoint{from}
	for visits := 0; len(stack) > 0 && visits < maxWaitVisits; visits++ {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if p.q == run.q && p.at >= run.at {
			return true, p.cross
		}
		if done, ok := seen[p.q]; ok && done >= p.at {
			continue // its work up to a later operation was followed already
		}
		seen[p.q] = p.at
		n := len(stack)
		stack = g.from(p.q, p.at, stack)
		for i := n; i < len(stack); i++ {
			stack[i].cross = true
		}
		if wq, ok := p.q.(plugin.WaitGraphQueue); ok {
			wq.Waits(p.at, func(q plugin.Queue, at uint64) {
				stack = append(stack, waitPoint{q: q, at: at, cross: p.cross})
			})
		}
	}
	return false, false
}

// queuePoint is where an olSyncQueue of q waits to: its last operation.
func queuePoint(q plugin.Queue) uint64 {
	if wq, ok := q.(plugin.WaitGraphQueue); ok {
		return wq.Position()
	}
	return 0
}
