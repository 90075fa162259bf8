package cuda

import (
	"bytes"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/contract"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// double is a loaded fake_cuda.c with the plugin's devices.
type double = fakedriver.Typed[*Device]

func newDouble(t *testing.T, name string) *double {
	t.Helper()
	return fakedriver.OpenTyped[*Device](t, &fake, name)
}

// held checks that the driver holds nothing after Deinit.
func held(d *fakedriver.Double) {
	d.T.Helper()
	for _, k := range []string{"ctxref", "stream", "event", "alloc", "host", "register", "peer"} {
		if n := d.Live(k); n != 0 {
			d.T.Errorf("after Deinit the driver still holds %d %s", n, k)
		}
	}
}

// Memory of every kind, copies in every direction (within a GPU and
// between two), and fills of every pattern size, checked in the driver's
// own view of device memory; peer links are enabled each way.
func TestFakeMemoryCopiesFills(t *testing.T) {
	d := newDouble(t, "libcuda-mem.so")
	if n := d.Live("peer"); n != 2 {
		t.Errorf("%d peer links enabled between 2 GPUs, want 2 (each way)", n)
	}
	fakedriver.CheckMemoryCopiesFills(t, d.Double, fakedriver.MemoryWant{FillStage: fillStage, DoubleFree: "CUDA_ERROR_INVALID_VALUE"})
}

// The double refuses driver calls on a thread without a current context;
// the plugin's calls work on any thread, whatever context it has (none,
// or another GPU's), because each binds its own.
func TestFakeContextIsBoundOnEveryThread(t *testing.T) {
	d := newDouble(t, "libcuda-ctx.so")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			d.Call("cuCtxSetCurrent", 0) // as a thread the plugin never used
			var out uintptr
			if r := d.Call("cuMemAlloc_v2", uintptr(unsafe.Pointer(&out)), 64); r != 201 {
				errs <- errors.New("the double allocated without a current context")
				return
			}
			g := d.Dev[i%2]
			p, err := g.Alloc(ol.AllocTypeDevice, 64)
			if err == nil {
				err = g.Free(p, ol.AllocTypeDevice)
			}
			if err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	d.Deinit()
}

// Host functions run on a library thread (a driver call made there
// succeeds, where the driver's callback thread would refuse it), in
// stream order; a host call's error is the next Sync's.
func TestFakeHostFunctionsAreRelayed(t *testing.T) {
	d := newDouble(t, "libcuda-hostfn.so")
	q := contract.MustQueue(t, d.Dev[0])
	fn := fakedriver.PtrOf(d.Sym("fake_cuda_test_hostfn"))
	var order []int
	var mu sync.Mutex
	for i := 0; i < 5; i++ {
		if err := q.HostFunc(fn, nil); err != nil {
			t.Fatal(err)
		}
		if err := q.HostCall(func() error { mu.Lock(); order = append(order, i); mu.Unlock(); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	fakedriver.CheckHostCallError(t, q)
	if n := d.Call("fake_cuda_test_hostfn_calls"); n != 5 {
		t.Errorf("%d host functions ran, want 5", n)
	}
	if r := int32(d.Call("fake_cuda_test_hostfn_last")); r != 0 {
		t.Errorf("a driver call from the host function returned %d: it ran on the driver's callback thread", r)
	}
	for i, v := range order {
		if v != i {
			t.Fatalf("host calls ran out of order: %v", order)
		}
	}
	_ = q.Release()
	d.Deinit()
}

// A queue waits for an event of another queue on another GPU without
// blocking the caller; released busy streams are reclaimed once idle.
func TestFakeEventsWaitsAndQueueReuse(t *testing.T) {
	fakedriver.CheckEventsWaitsAndQueueReuse(t, newDouble(t, "libcuda-events.so").Double, "")
}

// Releasing an event a queue waits for (held back, then pending) keeps the
// wait; Drain waits for a released queue's held-back work.
func TestFakeReleasedEventsAndDrain(t *testing.T) {
	fakedriver.CheckReleasedEventsAndDrain(t, newDouble(t, "libcuda-drain.so").Double)
}

// Registration is reference counted: the driver locks a range of pageable
// memory once and unlocks it with the last user. Pinned memory (olMemAlloc's
// HOST) is page-locked already, and the driver refuses to register it
// (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED): it is registered without the
// driver, and unregistered without it.
func TestFakeRegister(t *testing.T) {
	d := newDouble(t, "libcuda-register.so")
	fakedriver.CheckRegister(t, d.Double, fakedriver.RegisterWant{Locked: "register"})
	for _, g := range d.Dev {
		buf := contract.MustAlloc(t, d.Dev[1], ol.AllocTypeHost, 8192)
		for i := 0; i < 2; i++ {
			if got, err := g.Register(buf+64, 4096); err != nil || got != buf+64 {
				t.Fatalf("registering pinned memory: %#x %v", got, err)
			}
		}
		if n := d.Live("register"); n != 0 {
			t.Errorf("%d ranges locked in the driver for pinned memory, want 0", n)
		}
		for i := 0; i < 2; i++ {
			if err := g.Unregister(buf + 64); err != nil {
				t.Fatalf("unregistering pinned memory: %v", err)
			}
		}
		if err := g.Unregister(buf + 64); err == nil {
			t.Error("unregistering pinned memory once more than registered succeeded")
		}
		_ = d.Dev[1].Free(buf, ol.AllocTypeHost)
	}
	d.Deinit()
}

// GPUs that cannot reach each other get no peer access; peer copies still
// work (the driver stages them).
func TestFakeNoPeerAccess(t *testing.T) {
	t.Setenv("FAKE_CUDA_NO_PEER", "1")
	d := newDouble(t, "libcuda-nopeer.so")
	if n := d.Live("peer"); n != 0 {
		t.Errorf("%d peer links enabled, want 0", n)
	}
	g0, g1 := d.Dev[0], d.Dev[1]
	a, b := contract.MustAlloc(t, g0, ol.AllocTypeDevice, 64), contract.MustAlloc(t, g1, ol.AllocTypeDevice, 64)
	d.Poke(a, contract.Seq(64, 5))
	q := contract.MustQueue(t, g0)
	if err := q.CopyDevice(b, g1, a, g0, 64); err != nil {
		t.Fatal(err)
	}
	d.WantBytes(t, q, b, contract.Seq(64, 5), "peer copy without peer access")
	_ = q.Release()
	_ = g0.Free(a, ol.AllocTypeDevice)
	_ = g1.Free(b, ol.AllocTypeDevice)
	d.Deinit()
}

// Streams that never report idle are never handed out again while busy:
// each queue gets a stream of its own, and shutdown still waits for them
// and destroys every one.
func TestFakeStreamStaysBusy(t *testing.T) {
	d := newDouble(t, "libcuda-busy.so")
	t.Setenv("FAKE_CUDA_STREAM_BUSY", "1")
	g := d.Dev[0]
	before := d.Live("stream")
	p := contract.MustAlloc(t, g, ol.AllocTypeDevice, 64)
	var copies []plugin.Event // the copies use p until these pass
	for i := 0; i < 20; i++ {
		q := contract.MustQueue(t, g)
		if err := q.CopyDevice(p, g, p, g, 64); err != nil {
			t.Fatal(err)
		}
		if q.Empty() {
			t.Fatal("a queue reports empty while its stream says it is busy")
		}
		e, err := q.Record()
		if err != nil {
			t.Fatal(err)
		}
		copies = append(copies, e)
		if err := q.Release(); err != nil {
			t.Fatal(err)
		}
	}
	if n := d.Live("stream") - before; n != 20 {
		t.Errorf("%d new streams for 20 queues on busy streams, want 20 (none reused)", n)
	}
	// Free does not wait for queued work (the runtime does, impl/deferfree.go),
	// and the double faults on freed memory
	for _, e := range copies {
		if err := e.Sync(); err != nil {
			t.Error(err)
		}
		_ = e.Release()
	}
	_ = g.Free(p, ol.AllocTypeDevice)
	d.Deinit()
}

// Pageable host memory (neither pinned, managed nor registered): the double
// stages it as the driver may (a host-to-device copy reads the source when
// it is submitted, after the stream's earlier work; a device-to-host copy
// returns when the data has arrived). Work queued behind a host function
// is held back and submitted after it, so a copy from memory the host
// function writes still reads what it wrote, and a copy into memory it
// reads has arrived before it runs.
func TestFakePageableHostMemoryKeepsQueueOrder(t *testing.T) {
	d := newDouble(t, "libcuda-pageable.so")
	g := d.Dev[0]
	q := contract.MustQueue(t, g)
	dev := contract.MustAlloc(t, g, ol.AllocTypeDevice, 4096)
	in, out := fakedriver.Pageable(t, 4096), fakedriver.Pageable(t, 4096)
	src, dst := unsafe.Pointer(&in[0]), unsafe.Pointer(&out[0])
	copy(in, contract.Seq(4096, 1))
	d.Poke(dev, contract.Seq(4096, 9))
	// device -> pageable, then a host call that reads it and refills the
	// source, then pageable -> device: each step sees the one before.
	if err := q.CopyFromDevice(uintptr(dst), dev, g, 4096); err != nil {
		t.Fatal(err)
	}
	var seen []byte
	if err := q.HostCall(func() error {
		time.Sleep(20 * time.Millisecond) // later work must wait, not race
		seen = append([]byte(nil), out...)
		copy(in, contract.Seq(4096, 7))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := q.CopyToDevice(dev, g, uintptr(src), 4096); err != nil {
		t.Fatal(err)
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(seen, contract.Seq(4096, 9)) {
		t.Error("the host call did not see the device-to-host copy queued before it")
	}
	if !bytes.Equal(d.Peek(dev, 4096), contract.Seq(4096, 7)) {
		t.Error("the host-to-device copy queued after the host call did not read what it wrote")
	}
	// pinned memory is read when the copy runs, not when it is submitted
	pin := contract.MustAlloc(t, g, ol.AllocTypeHost, 4096)
	copy(fakedriver.HostBytes(pin, 4096), contract.Seq(4096, 3))
	if err := q.CopyToDevice(dev, g, pin, 4096); err != nil {
		t.Fatal(err)
	}
	d.WantBytes(t, q, dev, contract.Seq(4096, 3), "pinned host-to-device copy")
	_ = q.Release()
	_ = g.Free(pin, ol.AllocTypeHost)
	_ = g.Free(dev, ol.AllocTypeDevice)
	d.Deinit()
}
