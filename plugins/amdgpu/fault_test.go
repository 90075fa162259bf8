package amdgpu

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/contract"
)

// A copy the runtime fails (its completion signal set to -1) is an error
// of the next Sync, and the queue goes on working.
func TestFakeCopyErrorIsReported(t *testing.T) {
	d := newDouble(t, "libhsa-copyerr.so")
	g := d.Dev[0]
	a := contract.MustAlloc(t, g, ol.AllocTypeDevice, 64)
	b := contract.MustAlloc(t, g, ol.AllocTypeDevice, 64)
	q := mustQueue(t, g)
	t.Setenv("FAKE_HSA_COPY_ERROR", "1")
	if err := q.CopyDevice(b, g, a, g, 64); err != nil {
		t.Fatal(err)
	}
	err := q.Sync()
	var oe *ol.Error
	if !errors.As(err, &oe) || oe.Code != ol.ErrcBackendFailure || !strings.Contains(oe.Details, "completion signal") {
		t.Errorf("Sync after a failed copy: %v", err)
	}
	t.Setenv("FAKE_HSA_COPY_ERROR", "")
	if err := q.CopyDevice(b, g, a, g, 64); err != nil {
		t.Fatal(err)
	}
	if err := q.Sync(); err != nil {
		t.Errorf("the next copy: %v", err)
	}
	_ = q.Release()
	_ = g.Free(a, ol.AllocTypeDevice)
	_ = g.Free(b, ol.AllocTypeDevice)
	d.Deinit()
}

// A queue the runtime never drains: olDestroyQueue does not block, the
// queue is not handed out again, and Deinit gives up after drainTimeout
// with an error instead of hanging, releasing everything.
func TestFakeStuckQueueDoesNotHang(t *testing.T) {
	old := drainTimeout
	drainTimeout = 300 * time.Millisecond
	defer func() { drainTimeout = old }()
	d := newDouble(t, "libhsa-stuck.so")
	g := d.Dev[0]
	prog, k := d.LoadKernel(t, g, "noargs", "noargs")
	t.Setenv("FAKE_HSA_QUEUE_STUCK", "1")
	q := mustQueue(t, g)
	if err := q.Launch(k, nil, contract.Size1D(1, 1, 0)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := q.Release(); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > time.Second {
		t.Error("Release blocked")
	}
	q2 := mustQueue(t, g)
	if q2.hw == q.hw {
		t.Error("a stuck queue was handed out again")
	}
	_ = q2.Release()
	if err := prog.Unload(); err != nil {
		t.Fatal(err)
	}
	err := d.Platform.Deinit()
	if err == nil || !strings.Contains(err.Error(), "did not finish within") {
		t.Errorf("Deinit with a stuck queue: %v", err)
	}
	for _, k := range []string{"queue", "signal", "executable"} {
		if n := d.Count("fake_hsa_leaked", k); n != 0 {
			t.Errorf("%d %s leaked", n, k)
		}
	}
}

// A failing final hsa_shut_down is Deinit's error; the next Init works.
func TestFakeShutdownFailure(t *testing.T) {
	d := newDouble(t, "libhsa-shutfail.so")
	t.Setenv("FAKE_HSA_SHUTDOWN_RESULT", "0x1000")
	err := d.Platform.Deinit()
	var oe *ol.Error
	if !errors.As(err, &oe) || !strings.Contains(oe.Details, "hsa_shut_down failed: 0x1000 HSA_STATUS_ERROR") {
		t.Errorf("Deinit: %v", err)
	}
	t.Setenv("FAKE_HSA_SHUTDOWN_RESULT", "")
	p, err := fake.Init(t, d.Lib)
	if err != nil || p == nil {
		t.Fatalf("Init after a failed shutdown: %v %v", p, err)
	}
	if err := p.Deinit(); err != nil {
		t.Fatal(err)
	}
}

// A packet the runtime refuses breaks the queue: its error callback makes
// Sync fail with the runtime's status (no hang), the broken HSA queue is
// never handed out again, and shutdown is clean.
func TestFakeQueueErrorIsReported(t *testing.T) {
	d := newDouble(t, "libhsa-queueerr.so")
	g := d.Dev[0]
	prog, pk := d.LoadKernel(t, g, "noargs", "noargs")
	bogus := *pk.(*Kernel)
	bogus.object ^= 0x5a5a0000 // a kernel object the runtime does not know
	q := mustQueue(t, g)
	// launches from C first (the first makes the slots)
	k := pk.(*Kernel)
	if err := q.Launch(k, nil, contract.Size1D(1, 1, 0)); err != nil {
		t.Fatal(err)
	}
	q.cLaunch(k, nil, contract.Size1D(1, 1, 0))
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	if !q.cLaunch(k, nil, contract.Size1D(1, 1, 0)) {
		t.Fatal("the launch was left to Go")
	}
	if err := q.Launch(&bogus, nil, contract.Size1D(1, 1, 0)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- q.Sync() }()
	select {
	case err := <-done:
		var oe *ol.Error
		if !errors.As(err, &oe) || oe.Code != ol.ErrcBackendFailure || !strings.Contains(oe.Details, "the HSA queue of gfx90a (device 0) failed: 0x") {
			t.Errorf("Sync after a refused packet: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sync hangs on a broken queue")
	}
	if err := q.Launch(pk, nil, contract.Size1D(1, 1, 0)); err == nil {
		t.Error("a broken queue took more work")
	}
	if q.cLaunch(k, nil, contract.Size1D(1, 1, 0)) {
		t.Error("a broken queue took a launch from C")
	}
	_ = q.Release()
	q2 := mustQueue(t, g)
	if q2.hw == q.hw {
		t.Error("a broken HSA queue was handed out again")
	}
	if err := q2.Launch(pk, nil, contract.Size1D(1, 1, 0)); err != nil {
		t.Fatal(err)
	}
	if err := q2.Sync(); err != nil {
		t.Errorf("another queue: %v", err)
	}
	_ = q2.Release()
	_ = prog.Unload()
	if err := d.Platform.Deinit(); err != nil {
		t.Errorf("Deinit: %v", err)
	}
	for _, k := range []string{"queue", "signal", "executable", "alloc"} {
		if n := d.Count("fake_hsa_leaked", k); n != 0 {
			t.Errorf("%d %s leaked", n, k)
		}
	}
}
