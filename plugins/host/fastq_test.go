package host

import (
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/contract"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fastq"
)

// fastIdle is what the runtime's C sync path (ol_fastq_idle) decides.
func fastIdle(q *queue) bool {
	o, whole := q.f.Submitted()
	return whole && q.f.IdleAt(o) && !q.f.Stopped(fastq.Held|fastq.Failed)
}

// The queue's counters in C memory (plugin.FastQueue): a sync that finds
// the work done marks the queue idle, new work clears that, and a failure
// keeps the next sync in Go until Sync has reported it (also one of a
// recycled queue's earlier user, which the next user does not see).
func TestFastCounters(t *testing.T) {
	p, err := New().Init(noEnv{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Deinit()
	d := p.Devices()[0].(*Device)
	pq, err := d.NewQueue()
	if err != nil {
		t.Fatal(err)
	}
	q := pq.(*queue)
	if !fastIdle(q) {
		t.Error("a new queue is not idle")
	}
	gate := make(chan struct{})
	if err := q.HostCall(func() error { <-gate; return nil }); err != nil {
		t.Fatal(err)
	}
	if fastIdle(q) || q.Empty() {
		t.Error("idle or empty while a host call runs")
	}
	close(gate)
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	if !fastIdle(q) {
		t.Error("not idle after a sync")
	}
	// a failure found by a query is still the next sync's
	contract.CheckQueriedHostCallError(t, q, func() bool { return fastIdle(q) })
	// released with a failure not reported: the next user starts clean
	if err := q.HostCall(func() error { return ol.NewError(ol.ErrcUnknown, "boom") }); err != nil {
		t.Fatal(err)
	}
	contract.WaitEmpty(t, q, "the failing host call")
	if err := q.Release(); err != nil {
		t.Fatal(err)
	}
	pq2, err := d.NewQueue()
	if err != nil {
		t.Fatal(err)
	}
	q2 := pq2.(*queue)
	if q2 == q && (q2.f.Stopped(fastq.Failed) || q2.Sync() != nil) {
		t.Error("a recycled queue reports its earlier user's failure")
	}
	_ = q2.Release()
}
