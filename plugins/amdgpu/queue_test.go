package amdgpu

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/contract"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
)

// double is a loaded fake_hsa.c with the plugin's devices.
type double = fakedriver.Typed[*Device]

func newDouble(t *testing.T, name string) *double {
	t.Helper()
	return fakedriver.OpenTyped[*Device](t, &fake, name)
}

// lastError is the runtime's last error message.
func lastError(d *fakedriver.Double) string {
	p := d.Call("fake_hsa_last_error")
	if p == 0 {
		return ""
	}
	var b []byte
	for i := uintptr(0); i < 4096; i++ {
		c := *(*byte)(fakedriver.PtrOf(p + i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

var objectKinds = []string{"alloc", "signal", "queue", "executable", "lock", "handler", "reader", "copy"}

// held checks that the runtime was left holding nothing after Deinit, and
// no asynchronous error.
func held(d *fakedriver.Double) {
	d.T.Helper()
	for _, k := range objectKinds {
		if k == "alloc" {
			continue // the test's own allocations are freed by the test
		}
		if n := d.Count("fake_hsa_leaked", k); n != 0 {
			d.T.Errorf("the final hsa_shut_down found %d %s still alive", n, k)
		}
	}
	if n := d.Call("fake_hsa_unordered"); n != 0 {
		d.T.Errorf("%d packets without the barrier bit", n)
	}
	if n := d.Call("fake_hsa_errors"); n != 0 {
		d.T.Errorf("%d asynchronous errors in the runtime; the last: %s", n, lastError(d))
	}
}

func mustQueue(t *testing.T, d *Device) *Queue {
	t.Helper()
	return contract.MustQueue(t, d).(*Queue)
}

// Memory of every kind, copies in every direction (within a GPU and
// between two, from and to C heap memory the runtime does not know), and
// fills of every pattern size (each behind a copy), checked in the
// runtime's own view of device memory; no locks or staging buffers stay.
func TestFakeMemoryCopiesFills(t *testing.T) {
	d := newDouble(t, "libhsa-mem.so")
	fakedriver.CheckMemoryCopiesFills(t, d.Double, fakedriver.MemoryWant{
		FillStage: fillStage, Unknown: true, FillBehindCopy: true,
		AfterCopies: func() {
			if n := d.Live("lock"); n != 0 {
				t.Errorf("%d locks left after the copies from C heap memory completed", n)
			}
		},
		AfterRelease: func() {
			if n := d.Live("alloc"); n != 0 {
				t.Errorf("%d allocations left: staging buffers are not freed", n)
			}
		},
	})
}

// Device memory is the agent's; HOST memory is the CPU's (fine-grained
// system memory); C heap memory is no one's.
func TestFakeOwnsPointer(t *testing.T) {
	d := newDouble(t, "libhsa-owns.so")
	g0, g1 := d.Dev[0], d.Dev[1]
	a := contract.MustAlloc(t, g0, ol.AllocTypeDevice, 64)
	h := contract.MustAlloc(t, g0, ol.AllocTypeHost, 64)
	heap := make([]byte, 64)
	if !g0.OwnsPointer(a) || !g0.OwnsPointer(a+10) || g1.OwnsPointer(a) {
		t.Error("device memory of GPU 0 is GPU 0's, and only GPU 0's")
	}
	if g0.OwnsPointer(h) || g0.OwnsPointer(uintptr(unsafe.Pointer(&heap[0]))) {
		t.Error("host memory is no GPU's")
	}
	_ = g0.Free(a, ol.AllocTypeDevice)
	_ = g0.Free(h, ol.AllocTypeHost)
	d.Deinit()
}

// Allocation failures carry the runtime's status, its text and the call.
func TestFakeAllocFailure(t *testing.T) {
	d := newDouble(t, "libhsa-allocfail.so")
	t.Setenv("FAKE_HSA_ALLOC_RESULT", "0x1008")
	_, err := d.Dev[0].Alloc(ol.AllocTypeDevice, 64)
	var oe *ol.Error
	if !errors.As(err, &oe) || oe.Code != ol.ErrcOutOfResources ||
		!strings.Contains(oe.Details, "hsa_amd_memory_pool_allocate of 64 bytes of OL_ALLOC_TYPE_DEVICE memory on gfx90a (device 0) failed: 0x1008 HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed") {
		t.Errorf("%v", err)
	}
	d.Deinit()
}

// Host functions run on a library thread, in queue order, holding back
// the work after them until they return; a host call's error is the next
// Sync's.
func TestFakeHostFunctionsAreRelayed(t *testing.T) {
	d := newDouble(t, "libhsa-hostfn.so")
	g := d.Dev[0]
	q := mustQueue(t, g)
	src := contract.MustAlloc(t, g, ol.AllocTypeDevice, 4096)
	dst := contract.MustAlloc(t, g, ol.AllocTypeHost, 4096)
	d.Poke(src, contract.Seq(4096, 3))
	var order []int
	var mu sync.Mutex
	for i := 0; i < 5; i++ {
		// work before each host call, so that it waits for a signal
		if err := q.CopyFromDevice(dst, src, g, 4096); err != nil {
			t.Fatal(err)
		}
		if err := q.HostCall(func() error {
			mu.Lock()
			defer mu.Unlock()
			if !bytes.Equal(fakedriver.HostBytes(dst, 4096), contract.Seq(4096, 3)) {
				order = append(order, -1)
			}
			order = append(order, i)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	gate := make(chan struct{})
	if err := q.HostCall(func() error { <-gate; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := q.Fill(dst, unsafe.Pointer(&[]byte{0, 0, 0, 0}[0]), 4, 4096); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if q.Empty() || !bytes.Equal(fakedriver.HostBytes(dst, 4096), contract.Seq(4096, 3)) {
		t.Error("work after a host call that has not returned ran")
	}
	close(gate)
	fakedriver.CheckHostCallError(t, q)
	if !bytes.Equal(fakedriver.HostBytes(dst, 4096), make([]byte, 4096)) {
		t.Error("the fill after the host call did not run")
	}
	for i, v := range order {
		if v != i {
			t.Fatalf("host calls ran out of order or before the copy before them: %v", order)
		}
	}
	_ = q.Release()
	_ = g.Free(src, ol.AllocTypeDevice)
	_ = g.Free(dst, ol.AllocTypeHost)
	d.Deinit()
}

// A queue waits for an event of another queue on another GPU without
// blocking the caller; released busy queues are reused once idle, and
// signals stay bounded.
func TestFakeEventsWaitsAndQueueReuse(t *testing.T) {
	fakedriver.CheckEventsWaitsAndQueueReuse(t, newDouble(t, "libhsa-events.so").Double, "signal")
}

// Releasing an event a queue waits for (pending) keeps the wait; Drain
// waits for a released queue's work behind a host call.
func TestFakeReleasedEventsAndDrain(t *testing.T) {
	fakedriver.CheckReleasedEventsAndDrain(t, newDouble(t, "libhsa-drain.so").Double)
}

// Registration is reference counted: the runtime locks a range once and
// unlocks it with the last user; registered memory is copied without
// another lock.
func TestFakeRegister(t *testing.T) {
	d := newDouble(t, "libhsa-register.so")
	g := d.Dev[0]
	buf := fakedriver.Pageable(t, 8192)
	p := uintptr(unsafe.Pointer(&buf[0]))
	fakedriver.CheckRegister(t, d.Double, fakedriver.RegisterWant{Buf: p, Locked: "lock", SameAddress: true, Registered: func() {
		dev := contract.MustAlloc(t, g, ol.AllocTypeDevice, 4096)
		copy(buf, contract.Seq(4096, 9))
		q := mustQueue(t, g)
		if err := q.CopyToDevice(dev, g, p, 4096); err != nil {
			t.Fatal(err)
		}
		if n := d.Live("lock"); n != 1 {
			t.Errorf("%d ranges locked during a copy from registered memory, want 1", n)
		}
		d.WantBytes(t, q, dev, contract.Seq(4096, 9), "copy from registered memory")
		_ = q.Release()
		_ = g.Free(dev, ol.AllocTypeDevice)
	}})
	d.Deinit()
}
