package gpu

import (
	"errors"
	"sync"
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
)

type node struct {
	id    uintptr
	mu    sync.Mutex
	waits Waits[*node]
}

func (n *node) WaitID() uintptr                        { return n.id }
func (n *node) WaitList() (*sync.Mutex, *Waits[*node]) { return &n.mu, &n.waits }

// a's work after its operation 3 waits for b's operation 7; b's after its
// 5 waits for c's 2. c runs a host function at its operation 2.
func TestDependsOn(t *testing.T) {
	a, b, c := &node{id: 1}, &node{id: 2}, &node{id: 3}
	a.waits.Add(3, b, 7)
	b.waits.Add(5, c, 2)
	for _, tc := range []struct {
		q       *node
		mark    uint64
		runMark uint64
		want    bool
	}{
		{a, 10, 2, true},  // a → b (7 ≥ 5) → c (2 ≥ 2)
		{a, 2, 2, false},  // a's work up to 2 waits for nothing
		{b, 4, 2, false},  // b's wait comes after its operation 4
		{a, 10, 3, false}, // c's work up to 2 does not include operation 3
		{c, 2, 2, true},   // c itself
		{c, 1, 2, false},
	} {
		if got := DependsOn(tc.q, tc.mark, 3, tc.runMark); got != tc.want {
			t.Errorf("DependsOn(queue %d, %d, running 3 at %d) = %v, want %v", tc.q.id, tc.mark, tc.runMark, got, tc.want)
		}
	}
	// a cycle that does not reach the running queue ends
	a.waits.Add(11, a, 11)
	if DependsOn(a, 20, 9, 1) {
		t.Error("a cycle without the running queue depends on it")
	}
	if n := testing.AllocsPerRun(100, func() { DependsOn(a, 10, 3, 2) }); n != 0 {
		t.Errorf("DependsOn allocates %v times", n)
	}
}

// Only the latest MaxWaitEdges waits are kept, oldest first out.
func TestWaitsKeepsTheLatest(t *testing.T) {
	var w Waits[int]
	for i := 1; i <= MaxWaitEdges+5; i++ {
		w.Add(uint64(i), i, 0)
	}
	var buf [MaxWaitEdges]WaitEdge[int]
	got := w.Before(1<<62, &buf)
	if len(got) != MaxWaitEdges || got[0].At != 6 || got[len(got)-1].At != MaxWaitEdges+5 {
		t.Fatalf("kept %d waits from %d to %d", len(got), got[0].At, got[len(got)-1].At)
	}
	if got := w.Before(10, &buf); len(got) != 5 {
		t.Errorf("%d waits up to operation 10, want 5 (6..10)", len(got))
	}
}

// CheckWait refuses, with the call named, only a wait from a host function
// that the waited-for work depends on.
func TestCheckWait(t *testing.T) {
	a, c := &node{id: 1}, &node{id: 3}
	a.waits.Add(3, c, 2)
	outside := func() (uintptr, uint64) { return 0, 0 }
	inC := func() (uintptr, uint64) { return 3, 2 }
	if err := CheckWait(SyncQueue, a, 10, outside); err != nil {
		t.Errorf("outside a host function: %v", err)
	}
	if err := CheckWait(SyncQueue, a, 2, inC); err != nil {
		t.Errorf("work that does not wait for the host function: %v", err)
	}
	for kind, want := range map[SyncKind]string{
		SyncQueue: "olSyncQueue called from a host function would wait forever: the queue's work waits for that host function",
		SyncEvent: "olSyncEvent called from a host function would wait forever: the event's work waits for that host function",
	} {
		var e *ol.Error
		if err := CheckWait(kind, a, 10, inC); !errors.As(err, &e) || e.Code != ol.ErrcInvalidArgument || e.Details != want {
			t.Errorf("CheckWait(%v) = %v, want %q", kind, err, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = CheckWait(SyncQueue, a, 2, inC) }); n != 0 {
		t.Errorf("CheckWait allocates %v times", n)
	}
}

func TestPopLast(t *testing.T) {
	pool := []*node{{id: 1}, {id: 2}}
	if n := PopLast(&pool); n == nil || n.id != 2 || len(pool) != 1 || pool[:2][1] != nil {
		t.Errorf("PopLast = %v, pool %v (cap %v)", n, pool, pool[:2])
	}
	PopLast(&pool)
	if n := PopLast(&pool); n != nil || len(pool) != 0 {
		t.Errorf("PopLast of an empty pool = %v", n)
	}
}

func TestVisitWaitsAndRunning(t *testing.T) {
	a, b, c := &node{id: 1}, &node{id: 2}, &node{id: 3}
	a.waits.Add(3, b, 7)
	a.waits.Add(5, c, 2)
	var got []uintptr
	VisitWaits(a, 4, func(n *node, mark uint64) { got = append(got, n.id*100+uintptr(mark)) })
	if len(got) != 1 || got[0] != 207 {
		t.Errorf("waits of a up to 4: %v, want [207]", got)
	}
	var r Running[*node]
	if _, ok := r.Queue(1); ok {
		t.Error("an empty table names a queue")
	}
	r.Enter(1, a)
	if q, ok := r.Queue(1); !ok || q != a {
		t.Errorf("Queue(1) = %v, %v", q, ok)
	}
	r.Leave(1)
	if _, ok := r.Queue(1); ok {
		t.Error("a queue whose host function returned is still named")
	}
}
