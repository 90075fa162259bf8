package impl

import (
	"testing"

	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// graphQueue is a queue whose waits within its platform are given.
type graphQueue struct {
	plugin.Queue // not called
	name         string
	waits        []waitPoint // what it waits for
	waitAt       []uint64    // after which of its operations
}

func (q *graphQueue) Position() uint64 { return 100 }

func (q *graphQueue) Waits(at uint64, visit func(plugin.Queue, uint64)) {
	for i, w := range q.waits {
		if q.waitAt[i] <= at {
			visit(w.q, w.at)
		}
	}
}

func (q *graphQueue) wait(at uint64, on *graphQueue, mark uint64) {
	q.waits = append(q.waits, waitPoint{q: on, at: mark})
	q.waitAt = append(q.waitAt, at)
}

// A runs a host function at its operation 3. B waits across platforms,
// after its operation 2, for A's operation 4; B2 (B's platform) waits
// after its 1 for B's 5; C waits across platforms after its 6 for B2's 2.
func TestWaitGraphReaches(t *testing.T) {
	a, b, b2, c := &graphQueue{name: "A"}, &graphQueue{name: "B"}, &graphQueue{name: "B2"}, &graphQueue{name: "C"}
	var g waitGraph
	eb := &crossEdge{q: b, at: ^uint64(0), on: a, mark: 4}
	g.add(eb)
	if found, _ := g.reaches(waitPoint{q: b, at: 10}, waitPoint{q: a, at: 3}); found {
		t.Error("an edge not yet placed was followed")
	}
	g.place(eb, 2)
	b2.wait(1, b, 5)
	ec := &crossEdge{q: c, at: 6, on: b2, mark: 2}
	g.add(ec)
	if g.pending.Load() != 2 {
		t.Fatalf("pending = %d, want 2", g.pending.Load())
	}
	run := waitPoint{q: a, at: 3}
	for _, tc := range []struct {
		q            *graphQueue
		at           uint64
		found, cross bool
	}{
		{a, 3, true, false},  // the host function's own queue
		{a, 2, false, false}, // work before it
		{b, 2, true, true},   // B → A across platforms
		{b, 1, false, false}, // B's wait comes after its operation 1
		{b2, 1, true, true},  // B2 → B within, B → A across
		{c, 6, true, true},   // C → B2 → B → A
		{c, 5, false, false},
	} {
		found, path := g.reaches(waitPoint{q: tc.q, at: tc.at}, run)
		if cross := path.cross; found != tc.found || cross != tc.cross {
			t.Errorf("reaches(%s at %d) = %v, %v; want %v, %v", tc.q.name, tc.at, found, path.cross, tc.found, tc.cross)
		}
	}
	// A's host function at 5 is past what B waits for
	if found, _ := g.reaches(waitPoint{q: c, at: 10}, waitPoint{q: a, at: 5}); found {
		t.Error("a wait for work before the host function was refused")
	}
	// a cycle that does not reach the host function ends
	b.wait(3, c, 7)
	if found, _ := g.reaches(waitPoint{q: c, at: 10}, waitPoint{q: a, at: 9}); found {
		t.Error("a cycle without the host function's queue reaches it")
	}
	g.remove(eb)
	g.place(eb, 2) // placed after its wait ended: stays gone
	if found, _ := g.reaches(waitPoint{q: c, at: 10}, run); found {
		t.Error("a removed edge was followed")
	}
	// a host function of B at 5 waits for A at 9: A's work from 9 on
	// waits for B's host function
	hf := &crossEdge{q: b, at: 5, on: a, mark: 9, hostFunc: true}
	g.add(hf)
	if found, _ := g.reaches(waitPoint{q: a, at: 9}, waitPoint{q: b, at: 5}); found {
		t.Error("A's own work waits for nothing of B's")
	}
	if found, path := g.reaches(waitPoint{q: c, at: 10}, waitPoint{q: a, at: 9}); !found || !path.hostFunc {
		t.Errorf("C → B2 → B, whose host function waits for A: %v, %+v", found, path)
	}
	g.remove(hf)
	g.remove(ec)
	if g.pending.Load() != 0 || len(g.edges) != 0 {
		t.Errorf("pending = %d, edges = %d after removing all", g.pending.Load(), len(g.edges))
	}
}

// A sync pays nothing for the wait graph: without a pending wait between
// platforms, and with one but outside a host function.
func TestSyncWithWaitGraphAllocatesNothing(t *testing.T) {
	e := newRouteEnv(t)
	qh := e.queue(e.host)
	sync := func() {
		if err := e.c.callOlSyncQueue(qh); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(100, sync); n != 0 {
		t.Errorf("olSyncQueue allocates %v times without pending waits", n)
	}
	edge := &crossEdge{q: e.c.mustQueue(t, qh).q, at: 1, on: e.c.mustQueue(t, qh).q, mark: 1}
	e.c.waits.add(edge)
	defer e.c.waits.remove(edge)
	if n := testing.AllocsPerRun(100, sync); n != 0 {
		t.Errorf("olSyncQueue allocates %v times with a pending wait, outside a host function", n)
	}
}
