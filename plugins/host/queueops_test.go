package host

import "testing"

// TestQueueFedFasterThanItRunsStaysSmall: a queue that never goes idle,
// its executor always some way behind the pushes, keeps its list of ops
// near the number pending (slots the executor took are reused) and runs
// them in order. Without the reuse it held every op since it was last
// idle: 10,000 here, each larger list cleared when it grew.
func TestQueueFedFasterThanItRunsStaysSmall(t *testing.T) {
	d := newTestDevice(t)
	pq, err := d.NewQueue()
	if err != nil {
		t.Fatal(err)
	}
	q := pq.(*queue)
	defer func() { _ = q.Sync(); _ = q.Release() }()
	const chunks, perChunk = 100, 100
	var ran []int // appended by the ops, which run one at a time, in order
	push := func(i int) error { return q.HostCall(func() error { ran = append(ran, i); return nil }) }
	// gate k holds the executor until the chunk after k is queued, so the
	// queue is never empty
	gates := make([]chan struct{}, chunks+1)
	reached := make([]chan struct{}, chunks+1)
	gate := func(k int) error {
		gates[k], reached[k] = make(chan struct{}), make(chan struct{})
		return q.HostCall(func() error { close(reached[k]); <-gates[k]; return nil })
	}
	if err := gate(0); err != nil {
		t.Fatal(err)
	}
	maxCap := 0
	for k := 0; k < chunks; k++ {
		for i := range perChunk {
			if err := push(k*perChunk + i); err != nil {
				t.Fatal(err)
			}
		}
		if err := gate(k + 1); err != nil {
			t.Fatal(err)
		}
		<-reached[k]
		close(gates[k])
		q.mu.Lock()
		maxCap = max(maxCap, cap(q.ops))
		q.mu.Unlock()
	}
	<-reached[chunks]
	close(gates[chunks])
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	if len(ran) != chunks*perChunk {
		t.Fatalf("%d ops ran, want %d", len(ran), chunks*perChunk)
	}
	for i, v := range ran {
		if v != i {
			t.Fatalf("op %d ran as the %dth", v, i)
		}
	}
	if maxCap > 8*perChunk {
		t.Errorf("the queue's list of ops grew to %d slots with at most %d ops pending", maxCap, 2*perChunk+2)
	}
}
