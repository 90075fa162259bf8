package amdgpu

import (
	"encoding/binary"
	"errors"
	"testing"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/contract"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// sequenceArgs is the argument struct of tests/c/kernels/sequence.c.
func sequenceArgs(out uintptr, idx uint32) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint64(b, uint64(out))
	binary.LittleEndian.PutUint32(b[8:], idx)
	return b
}

// Launches and copies from C keep the queue's order with those from Go,
// events and syncs: a Fibonacci sequence, one step per launch (most from
// C, some from Go), snapshots copied from C and from Go at known steps,
// events recorded between them, the slots growing while operations are in
// flight; every C launch that a check of the Go path would refuse is left
// to Go.
func TestFakeCPathsKeepOrder(t *testing.T) {
	d := newDouble(t, "libhsa-cpath.so")
	g := d.Dev[0]
	q := mustQueue(t, g)
	prog, pk := d.LoadKernel(t, g, "sequence", "sequence")
	k := pk.(*Kernel)
	const n = 3000
	out := contract.MustAlloc(t, g, ol.AllocTypeDevice, 4*n)
	snapC := contract.MustAlloc(t, g, ol.AllocTypeDevice, 4*n)
	snapGo := contract.MustAlloc(t, g, ol.AllocTypeDevice, 4*n)
	host := contract.MustAlloc(t, g, ol.AllocTypeHost, 4*n)
	start := make([]byte, 4*n)
	binary.LittleEndian.PutUint32(start[4:], 1)
	d.Poke(out, start)
	size := contract.Size1D(1, 1, 0)

	if q.cLaunch(k, sequenceArgs(out, 2), size) {
		t.Fatal("C launched a kernel its program has not seen on the queue")
	}
	if err := q.Launch(k, sequenceArgs(out, 2), size); err != nil {
		t.Fatal(err)
	}
	// what the Go path refuses, C leaves to it
	for _, bad := range []struct {
		args []byte
		s    plugin.LaunchSize
	}{
		{sequenceArgs(out, 3)[:8], size},
		{sequenceArgs(out, 3), contract.Size1D(0, 1, 0)},
		{sequenceArgs(out, 3), contract.Size1D(1, 0, 0)},
		{sequenceArgs(out, 3), contract.Size1D(1, 1<<20, 0)},
		{sequenceArgs(out, 3), contract.Size1D(1, 1, 1<<30)},
		{sequenceArgs(out, 3), plugin.LaunchSize{NumGroups: ol.Dimensions{X: 1 << 31, Y: 1 << 20, Z: 1}, GroupSize: ol.Dimensions{X: 1, Y: 1, Z: 1}}},
	} {
		if q.cLaunch(k, bad.args, bad.s) {
			t.Fatalf("C launched %v with %d argument bytes", bad.s, len(bad.args))
		}
	}
	var cLaunches, cCopies int
	var events []plugin.Event
	for i := uint32(3); i < n; i++ {
		switch {
		case i%101 == 0:
			if err := q.Launch(k, sequenceArgs(out, i), size); err != nil {
				t.Fatal(err)
			}
		case q.cLaunch(k, sequenceArgs(out, i), size):
			cLaunches++
			if i%50 == 0 && !q.cLaunch(k, sequenceArgs(out, i), size) { // (the same again: its buffer serves twice)
				t.Fatal("the same launch again was left to Go")
			}
		default:
			if err := q.Launch(k, sequenceArgs(out, i), size); err != nil {
				t.Fatal(err)
			}
		}
		switch {
		case i == 1000:
			if q.cCopy(cOnDevice, snapC, out, 4*n) {
				cCopies++
			} else if err := q.CopyDevice(snapC, g, out, g, 4*n); err != nil {
				t.Fatal(err)
			}
		case i == 2000:
			if err := q.CopyDevice(snapGo, g, out, g, 4*n); err != nil {
				t.Fatal(err)
			}
		case i%97 == 0:
			e, err := q.Record()
			if err != nil {
				t.Fatal(err)
			}
			events = append(events, e)
		case i%499 == 0:
			if err := q.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// the last event covers the launches before it
	last := events[len(events)-1]
	if err := last.Sync(); err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if !e.Done() {
			t.Error("an event before a completed one is not done")
		}
		_ = e.Release()
	}
	if q.cCopy(cFromDevice, host, out, 4*n) {
		cCopies++
	} else if err := q.CopyFromDevice(host, out, g, 4*n); err != nil {
		t.Fatal(err)
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	if b, h := q.f.Submitted(); !h || !fastIdle(q) {
		t.Errorf("after the sync: %d operations, whole %v, idle %v", b, h, fastIdle(q))
	}
	fib := make([]uint32, n)
	fib[1] = 1
	for i := 2; i < n; i++ {
		fib[i] = fib[i-1] + fib[i-2]
	}
	check := func(what string, b []byte, upto int) {
		t.Helper()
		for i := 0; i < n; i++ {
			want := fib[i]
			if i > upto {
				want = 0
			}
			if got := binary.LittleEndian.Uint32(b[4*i:]); got != want {
				t.Fatalf("%s: element %d is %d, want %d", what, i, got, want)
			}
		}
	}
	check("the sequence", d.Peek(out, 4*n), n-1)
	check("the snapshot copied from C", d.Peek(snapC, 4*n), 1000)
	check("the snapshot copied from Go", d.Peek(snapGo, 4*n), 2000)
	check("the copy to host memory", unsafe.Slice((*byte)(fakedriver.PtrOf(host)), 4*n), n-1)
	if cLaunches < n*9/10 || cCopies != 2 {
		t.Errorf("%d launches and %d copies of %d and 2 from C", cLaunches, cCopies, n)
	}
	for _, p := range []uintptr{out, snapC, snapGo} {
		_ = g.Free(p, ol.AllocTypeDevice)
	}
	_ = g.Free(host, ol.AllocTypeHost)
	_ = q.Release()
	if err := prog.Unload(); err != nil {
		t.Fatal(err)
	}
	d.Deinit()
	held(d.Double)
}

// A copy from C that fails is the next sync's error, once; copies after
// it still run.
func TestFakeCCopyFailure(t *testing.T) {
	d := newDouble(t, "libhsa-cfail.so")
	g := d.Dev[0]
	q := mustQueue(t, g)
	a := contract.MustAlloc(t, g, ol.AllocTypeDevice, 64)
	b := contract.MustAlloc(t, g, ol.AllocTypeDevice, 64)
	copyC := func() {
		t.Helper()
		if !q.cCopy(cOnDevice, b, a, 64) {
			t.Fatal("the copy was left to Go")
		}
	}
	// the first finds no slots: Go makes them
	if q.cCopy(cOnDevice, b, a, 64) {
		t.Fatal("C copied without slots")
	}
	if err := q.CopyDevice(b, g, a, g, 64); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		copyC()
	}
	t.Setenv("FAKE_HSA_COPY_ERROR", "1")
	copyC()
	t.Setenv("FAKE_HSA_COPY_ERROR", "")
	var oe *ol.Error
	if err := q.Sync(); !errors.As(err, &oe) || oe.Code != ol.ErrcBackendFailure {
		t.Errorf("Sync after a failed copy from C: %v", err)
	}
	if err := q.Sync(); err != nil {
		t.Errorf("the sync after: %v", err)
	}
	// a failure in the middle of a run of C copies
	for i := 0; i < 5; i++ {
		copyC()
	}
	t.Setenv("FAKE_HSA_COPY_ERROR", "1")
	copyC()
	t.Setenv("FAKE_HSA_COPY_ERROR", "")
	for i := 0; i < 5; i++ {
		copyC()
	}
	if err := q.Sync(); !errors.As(err, &oe) || oe.Code != ol.ErrcBackendFailure {
		t.Errorf("Sync after a failed copy amid others: %v", err)
	}
	if err := q.Sync(); err != nil || !fastIdle(q) {
		t.Errorf("the sync after: %v, idle %v", err, fastIdle(q))
	}
	_ = q.Release()
	_ = g.Free(a, ol.AllocTypeDevice)
	_ = g.Free(b, ol.AllocTypeDevice)
	d.Deinit()
}

// Launches, copies, events and syncs on one queue from several goroutines
// at once, from C and from Go: every launch runs once.
func TestFakeCPathsConcurrent(t *testing.T) {
	d := newDouble(t, "libhsa-cconc.so")
	g := d.Dev[0]
	q := mustQueue(t, g)
	prog, pk := d.LoadKernel(t, g, "single_counter", "single_counter")
	k := pk.(*Kernel)
	counter := contract.MustAlloc(t, g, ol.AllocTypeDevice, 4)
	a := contract.MustAlloc(t, g, ol.AllocTypeDevice, 256)
	b := contract.MustAlloc(t, g, ol.AllocTypeDevice, 256)
	d.Poke(counter, make([]byte, 4))
	args := make([]byte, 8)
	binary.LittleEndian.PutUint64(args, uint64(counter))
	size := contract.Size1D(1, 1, 0)
	const launches = 1500
	errs := make(chan error, 4)
	launcher := func() {
		for i := 0; i < launches; i++ {
			if !q.cLaunch(k, args, size) {
				if err := q.Launch(k, args, size); err != nil {
					errs <- err
					return
				}
			}
		}
		errs <- nil
	}
	go launcher()
	go launcher()
	go func() {
		for i := 0; i < 500; i++ {
			if !q.cCopy(cOnDevice, b, a, 256) {
				if err := q.CopyDevice(b, g, a, g, 256); err != nil {
					errs <- err
					return
				}
			}
		}
		errs <- nil
	}()
	go func() {
		for i := 0; i < 200; i++ {
			e, err := q.Record()
			if err != nil {
				errs <- err
				return
			}
			if i%3 == 0 {
				err = e.Sync()
			}
			_ = e.Release()
			if err == nil && i%7 == 0 {
				err = q.Sync()
			}
			if err != nil {
				errs <- err
				return
			}
			q.Empty()
		}
		errs <- nil
	}()
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint32(d.Peek(counter, 4)); got != 2*launches {
		t.Errorf("the counter is %d after %d launches", got, 2*launches)
	}
	for _, p := range []uintptr{counter, a, b} {
		_ = g.Free(p, ol.AllocTypeDevice)
	}
	_ = q.Release()
	if err := prog.Unload(); err != nil {
		t.Fatal(err)
	}
	d.Deinit()
	held(d.Double)
}
