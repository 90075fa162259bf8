package amdgpu

import (
	"errors"
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/contract"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fastq"
)

// fastIdle is what the runtime's C sync path (ol_fastq_idle) decides: true
// lets an olSyncQueue return success without calling Sync.
func fastIdle(q *Queue) bool {
	o, whole := q.f.Submitted()
	return whole && q.f.IdleAt(o) && !q.f.Stopped(fastq.Held|fastq.Failed)
}

// The queue's counters in C memory (plugin.FastQueue): every operation is
// counted begun and handed, a sync or query that finds the work done
// without a failure marks the queue idle, and a failure, also one recorded
// by a query that found the work done, keeps the next sync in Go until
// Sync has reported it.
func TestFakeFastCounters(t *testing.T) {
	d := newDouble(t, "libhsa-fastq.so")
	g := d.Dev[0]
	a := contract.MustAlloc(t, g, ol.AllocTypeDevice, 64)
	b := contract.MustAlloc(t, g, ol.AllocTypeDevice, 64)
	q := mustQueue(t, g)
	q2 := mustQueue(t, g)
	whole := func(what string) {
		t.Helper()
		if _, ok := q.f.Submitted(); !ok {
			t.Errorf("%s: an operation is still counted as being submitted", what)
		}
	}
	if !fastIdle(q) {
		t.Error("a new queue is not idle")
	}
	if err := q.CopyDevice(b, g, a, g, 64); err != nil {
		t.Fatal(err)
	}
	whole("copy")
	if fastIdle(q) {
		t.Error("idle with a copy not synced")
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	if !fastIdle(q) {
		t.Error("not idle after a sync")
	}
	if err := q.Sync(); err != nil { // the known-idle shortcut
		t.Fatal(err)
	}

	// a host call that waits: not idle, not empty, until it has returned
	gate := make(chan struct{})
	if err := q.HostCall(func() error { <-gate; return nil }); err != nil {
		t.Fatal(err)
	}
	whole("host call")
	if fastIdle(q) || q.Empty() {
		t.Error("idle or empty while a host call runs")
	}
	// a wait for another queue's work that is held back
	gate2 := make(chan struct{})
	if err := q2.HostCall(func() error { <-gate2; return nil }); err != nil {
		t.Fatal(err)
	}
	e, err := q2.Record()
	if err != nil {
		t.Fatal(err)
	}
	close(gate)
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	if !fastIdle(q) {
		t.Error("not idle after a sync")
	}
	if err := q.Wait(e); err != nil {
		t.Fatal(err)
	}
	whole("wait")
	if fastIdle(q) {
		t.Error("idle while waiting for another queue")
	}
	close(gate2)
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	_ = e.Release()
	if !fastIdle(q) {
		t.Error("not idle after a sync")
	}

	// a failure found by a query (Empty) is still the next sync's
	t.Setenv("FAKE_HSA_COPY_ERROR", "1")
	if err := q.CopyDevice(b, g, a, g, 64); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_HSA_COPY_ERROR", "")
	contract.WaitEmpty(t, q, "the failed copy")
	if fastIdle(q) {
		t.Error("idle with a failure to report")
	}
	var oe *ol.Error
	if err := q.Sync(); !errors.As(err, &oe) || oe.Code != ol.ErrcBackendFailure {
		t.Errorf("Sync after a failed copy: %v", err)
	}
	if err := q.Sync(); err != nil {
		t.Errorf("the sync after: %v", err)
	}
	if !fastIdle(q) {
		t.Error("not idle once the failure was reported")
	}

	// a failing host call: the same
	contract.CheckQueriedHostCallError(t, q, func() bool { return fastIdle(q) })
	_ = q.Release()
	_ = q2.Release()
	_ = g.Free(a, ol.AllocTypeDevice)
	_ = g.Free(b, ol.AllocTypeDevice)
	d.Deinit()
}
