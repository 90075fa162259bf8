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
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// double is a loaded fake_hsa.c with its test entry points.
type double struct {
	*fakedriver.Hooks
	t   *testing.T
	lib string
	pl  plugin.Platform
	dev []*Device
}

func newDouble(t *testing.T, name string) *double {
	t.Helper()
	lib := fake.Build(t, name)
	t.Setenv("FAKE_HSA_GPUS", "2")
	pl, err := fake.Init(t, lib)
	if err != nil || pl == nil {
		t.Fatalf("Init: %v %v", pl, err)
	}
	d := &double{Hooks: fakedriver.OpenHooks(t, lib), t: t, lib: lib, pl: pl}
	for _, x := range pl.Devices() {
		d.dev = append(d.dev, x.(*Device))
	}
	return d
}

func (d *double) live(kind string) int { return d.Count("fake_hsa_live", kind) }

func (d *double) lastError() string {
	p := d.Call("fake_hsa_last_error")
	if p == 0 {
		return ""
	}
	var b []byte
	for i := uintptr(0); i < 4096; i++ {
		c := *(*byte)(ptrOf(p + i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

func (d *double) peek(p uintptr, n int) []byte {
	b := make([]byte, n)
	if d.Call("fake_hsa_peek", p, uintptr(unsafe.Pointer(&b[0])), uintptr(n)) != 0 {
		d.t.Fatalf("peek %#x: not memory of the runtime", p)
	}
	return b
}

func (d *double) poke(p uintptr, b []byte) {
	if d.Call("fake_hsa_poke", p, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b))) != 0 {
		d.t.Fatalf("poke %#x: not memory of the runtime", p)
	}
}

var objectKinds = []string{"alloc", "signal", "queue", "executable", "lock", "handler", "reader", "copy"}

// deinit shuts the platform down and checks the runtime was left holding
// nothing, and no asynchronous error.
func (d *double) deinit() {
	d.t.Helper()
	if err := d.pl.Deinit(); err != nil {
		d.t.Fatal(err)
	}
	for _, k := range objectKinds {
		if k == "alloc" {
			continue // the test's own allocations are freed by the test
		}
		if n := d.Count("fake_hsa_leaked", k); n != 0 {
			d.t.Errorf("the final hsa_shut_down found %d %s still alive", n, k)
		}
	}
	if n := d.Call("fake_hsa_unordered"); n != 0 {
		d.t.Errorf("%d packets without the barrier bit", n)
	}
	if n := d.Call("fake_hsa_errors"); n != 0 {
		d.t.Errorf("%d asynchronous errors in the runtime; the last: %s", n, d.lastError())
	}
}

func hostBytes(p uintptr, n int) []byte { return fakedriver.HostBytes(p, n) }

func ptrOf(a uintptr) unsafe.Pointer { return fakedriver.PtrOf(a) }

func seq(n int, seed byte) []byte { return fakedriver.Seq(n, seed) }

func mustAlloc(t *testing.T, d *Device, kind ol.AllocType, n uint64) uintptr {
	t.Helper()
	return fakedriver.MustAlloc(t, d, kind, n)
}

func mustQueue(t *testing.T, d *Device) *Queue {
	t.Helper()
	return fakedriver.MustQueue(t, d).(*Queue)
}

// Memory of every kind, copies in every direction (within a GPU and
// between two, from and to C heap memory the runtime does not know), and
// fills of every pattern size, checked in the runtime's own view of
// device memory.
func TestFakeMemoryCopiesFills(t *testing.T) {
	d := newDouble(t, "libhsa-mem.so")
	g0, g1 := d.dev[0], d.dev[1]
	const n = 5000
	a := mustAlloc(t, g0, ol.AllocTypeDevice, n)
	b := mustAlloc(t, g0, ol.AllocTypeDevice, n)
	c := mustAlloc(t, g1, ol.AllocTypeDevice, n)
	h := mustAlloc(t, g0, ol.AllocTypeHost, n)
	m := mustAlloc(t, g1, ol.AllocTypeManaged, n)
	heap := make([]byte, n) // not the runtime's: locked for the copy
	want := seq(n, 7)
	copy(hostBytes(h, n), want)

	q := mustQueue(t, g0)
	steps := []struct {
		what string
		do   func() error
	}{
		{"host to device", func() error { return q.CopyToDevice(a, g0, h, n) }},
		{"device to device", func() error { return q.CopyDevice(b, g0, a, g0, n) }},
		{"across GPUs", func() error { return q.CopyDevice(c, g1, b, g0, n) }},
		{"device to managed", func() error { return q.CopyFromDevice(m, c, g1, n) }},
		{"device to C heap", func() error { return q.CopyFromDevice(uintptr(unsafe.Pointer(&heap[0])), c, g1, n) }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v (runtime: %s)", s.what, err, d.lastError())
		}
	}
	if err := q.Sync(); err != nil {
		t.Fatalf("%v (runtime: %s)", err, d.lastError())
	}
	for name, got := range map[string][]byte{"a": d.peek(a, n), "b": d.peek(b, n), "c": d.peek(c, n), "managed": hostBytes(m, n), "heap": heap} {
		if !bytes.Equal(got, want) {
			t.Errorf("%s: wrong bytes", name)
		}
	}
	if n := d.live("lock"); n != 0 {
		t.Errorf("%d locks left after the copies from C heap memory completed", n)
	}

	for _, tc := range []struct {
		pat []byte
		off uintptr
	}{
		{[]byte{0xab}, 0}, {[]byte{1, 2}, 0}, {[]byte{1, 2, 3, 4}, 0}, {[]byte{1, 2, 3, 4}, 2},
		{[]byte{9, 8, 7}, 1}, {seq(17, 1), 0}, {[]byte{0xcd}, 3},
	} {
		d.poke(a, make([]byte, n))
		size := uint64(len(tc.pat) * 200)
		// behind a copy, so that the fill waits for it in order
		if err := q.CopyDevice(b, g0, a, g0, 64); err != nil {
			t.Fatal(err)
		}
		if err := q.Fill(a+tc.off, unsafe.Pointer(&tc.pat[0]), uint64(len(tc.pat)), size); err != nil {
			t.Fatalf("fill %v: %v", tc.pat, err)
		}
		tc.pat[0] ^= 0xff // the caller's pattern is theirs again at once
		if err := q.Sync(); err != nil {
			t.Fatalf("%v (runtime: %s)", err, d.lastError())
		}
		tc.pat[0] ^= 0xff
		got := d.peek(a, n)
		exp := make([]byte, n)
		for i := uint64(0); i < size; i++ {
			exp[uint64(tc.off)+i] = tc.pat[i%uint64(len(tc.pat))]
		}
		if !bytes.Equal(got, exp) {
			t.Errorf("fill with %d-byte pattern at +%d: wrong bytes", len(tc.pat), tc.off)
		}
	}
	// a large fill with an odd pattern goes through several staged chunks
	big := mustAlloc(t, g1, ol.AllocTypeDevice, 3*fillStage+6)
	pat := []byte{5, 6, 7}
	q1 := mustQueue(t, g1)
	if err := q1.Fill(big, unsafe.Pointer(&pat[0]), 3, 3*fillStage+6); err != nil {
		t.Fatal(err)
	}
	if err := q1.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := d.peek(big, 3*fillStage+6); !bytes.Equal(got, bytes.Repeat(pat, fillStage+2)) {
		t.Error("large staged fill: wrong bytes")
	}

	for _, x := range []struct {
		d    *Device
		p    uintptr
		kind ol.AllocType
	}{{g0, a, ol.AllocTypeDevice}, {g0, b, ol.AllocTypeDevice}, {g1, c, ol.AllocTypeDevice}, {g0, h, ol.AllocTypeHost}, {g1, m, ol.AllocTypeManaged}, {g1, big, ol.AllocTypeDevice}} {
		if err := x.d.Free(x.p, x.kind); err != nil {
			t.Errorf("free %#x: %v", x.p, err)
		}
	}
	for _, x := range []*Queue{q, q1} {
		if err := x.Release(); err != nil {
			t.Fatal(err)
		}
	}
	if n := d.live("alloc"); n != 0 {
		t.Errorf("%d allocations left: staging buffers are not freed", n)
	}
	d.deinit()
}

// Device memory is the agent's; HOST memory is the CPU's (fine-grained
// system memory); C heap memory is no one's.
func TestFakeOwnsPointer(t *testing.T) {
	d := newDouble(t, "libhsa-owns.so")
	g0, g1 := d.dev[0], d.dev[1]
	a := mustAlloc(t, g0, ol.AllocTypeDevice, 64)
	h := mustAlloc(t, g0, ol.AllocTypeHost, 64)
	heap := make([]byte, 64)
	if !g0.OwnsPointer(a) || !g0.OwnsPointer(a+10) || g1.OwnsPointer(a) {
		t.Error("device memory of GPU 0 is GPU 0's, and only GPU 0's")
	}
	if g0.OwnsPointer(h) || g0.OwnsPointer(uintptr(unsafe.Pointer(&heap[0]))) {
		t.Error("host memory is no GPU's")
	}
	_ = g0.Free(a, ol.AllocTypeDevice)
	_ = g0.Free(h, ol.AllocTypeHost)
	d.deinit()
}

// Allocation failures carry the runtime's status, its text and the call.
func TestFakeAllocFailure(t *testing.T) {
	d := newDouble(t, "libhsa-allocfail.so")
	t.Setenv("FAKE_HSA_ALLOC_RESULT", "0x1008")
	_, err := d.dev[0].Alloc(ol.AllocTypeDevice, 64)
	var oe *ol.Error
	if !errors.As(err, &oe) || oe.Code != ol.ErrcOutOfResources ||
		!strings.Contains(oe.Details, "hsa_amd_memory_pool_allocate of 64 bytes of OL_ALLOC_TYPE_DEVICE memory on gfx90a (device 0) failed: 0x1008 HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed") {
		t.Errorf("%v", err)
	}
	d.deinit()
}

// Host functions run on a library thread, in queue order, holding back
// the work after them until they return; a host call's error is the next
// Sync's.
func TestFakeHostFunctionsAreRelayed(t *testing.T) {
	d := newDouble(t, "libhsa-hostfn.so")
	g := d.dev[0]
	q := mustQueue(t, g)
	src := mustAlloc(t, g, ol.AllocTypeDevice, 4096)
	dst := mustAlloc(t, g, ol.AllocTypeHost, 4096)
	d.poke(src, seq(4096, 3))
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
			if !bytes.Equal(hostBytes(dst, 4096), seq(4096, 3)) {
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
	if q.Empty() || !bytes.Equal(hostBytes(dst, 4096), seq(4096, 3)) {
		t.Error("work after a host call that has not returned ran")
	}
	close(gate)
	boom := ol.NewError(ol.ErrcBackendFailure, "boom")
	if err := q.HostCall(func() error { return boom }); err != nil {
		t.Fatal(err)
	}
	if err := q.Sync(); !errors.Is(err, boom) && (err == nil || !strings.Contains(err.Error(), "boom")) {
		t.Errorf("Sync after a failing host call: %v", err)
	}
	if err := q.Sync(); err != nil {
		t.Errorf("the error is reported once: %v", err)
	}
	if !bytes.Equal(hostBytes(dst, 4096), make([]byte, 4096)) {
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
	d.deinit()
}

// A queue waits for an event of another queue on another GPU without
// blocking the caller; released busy queues are reused once idle.
func TestFakeEventsWaitsAndQueueReuse(t *testing.T) {
	d := newDouble(t, "libhsa-events.so")
	g0, g1 := d.dev[0], d.dev[1]
	q0, q1 := mustQueue(t, g0), mustQueue(t, g1)
	gate := make(chan struct{})
	if err := q0.HostCall(func() error { <-gate; return nil }); err != nil {
		t.Fatal(err)
	}
	src := mustAlloc(t, g0, ol.AllocTypeDevice, 256)
	dst := mustAlloc(t, g1, ol.AllocTypeDevice, 256)
	d.poke(src, seq(256, 1))
	e0, err := q0.Record()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := q1.Wait(e0); err != nil {
		t.Fatal(err)
	}
	if err := q1.CopyDevice(dst, g1, src, g0, 256); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > time.Second {
		t.Error("Wait blocked the caller")
	}
	time.Sleep(10 * time.Millisecond)
	if e0.Done() || q1.Empty() || !bytes.Equal(d.peek(dst, 256), make([]byte, 256)) {
		t.Fatal("the waiting queue ran past the event")
	}
	// released with work pending: its HSA queue is not handed out again
	if err := q0.Release(); err != nil {
		t.Fatal(err)
	}
	queues := d.live("queue")
	q2 := mustQueue(t, g0)
	if d.live("queue") != queues+1 {
		t.Error("a busy released queue was handed out again")
	}
	close(gate)
	if err := q1.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := e0.Sync(); err != nil || !e0.Done() {
		t.Fatalf("event: %v", err)
	}
	if !bytes.Equal(d.peek(dst, 256), seq(256, 1)) {
		t.Error("wrong bytes after the wait")
	}
	_ = e0.Release()
	_ = q2.Release()
	before := d.live("queue")
	signals := d.live("signal")
	for i := 0; i < 100; i++ {
		q := mustQueue(t, g0)
		if err := q.CopyDevice(src, g0, src, g0, 16); err != nil {
			t.Fatal(err)
		}
		ev, err := q.Record()
		if err != nil {
			t.Fatal(err)
		}
		if err := ev.Sync(); err != nil {
			t.Fatal(err)
		}
		_ = ev.Release()
		_ = q.Sync()
		_ = q.Release()
	}
	if after := d.live("queue"); after > before {
		t.Errorf("HSA queues grew from %d to %d over 100 queue cycles", before, after)
	}
	if after := d.live("signal"); after > signals+2 {
		t.Errorf("signals grew from %d to %d over 100 queue cycles", signals, after)
	}
	_ = g0.Free(src, ol.AllocTypeDevice)
	_ = g1.Free(dst, ol.AllocTypeDevice)
	_ = q1.Release()
	d.deinit()
}

// Registration is reference counted: the runtime locks a range once and
// unlocks it with the last user.
func TestFakeRegister(t *testing.T) {
	d := newDouble(t, "libhsa-register.so")
	g := d.dev[0]
	buf := make([]byte, 8192)
	p := uintptr(unsafe.Pointer(&buf[0]))
	for i := 0; i < 2; i++ {
		if got, err := g.Register(p, 4096); err != nil || got != p {
			t.Fatalf("Register: %#x %v", got, err)
		}
	}
	if got, err := g.Register(p+100, 100); err != nil || got != p+100 {
		t.Fatalf("a contained range: %#x %v", got, err)
	}
	if _, err := g.Register(p+4000, 200); err == nil || !strings.Contains(err.Error(), "partial overlapping") {
		t.Errorf("partial overlap: %v", err)
	}
	if n := d.live("lock"); n != 1 {
		t.Errorf("%d ranges locked in the runtime, want 1", n)
	}
	// registered memory is copied without another lock
	dev := mustAlloc(t, g, ol.AllocTypeDevice, 4096)
	copy(buf, seq(4096, 9))
	q := mustQueue(t, g)
	if err := q.CopyToDevice(dev, g, p, 4096); err != nil {
		t.Fatal(err)
	}
	if n := d.live("lock"); n != 1 {
		t.Errorf("%d ranges locked during a copy from registered memory, want 1", n)
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(d.peek(dev, 4096), seq(4096, 9)) {
		t.Error("copy from registered memory: wrong bytes")
	}
	for i := 0; i < 3; i++ {
		if err := g.Unregister(p); err != nil {
			t.Fatal(err)
		}
	}
	if n := d.live("lock"); n != 0 {
		t.Errorf("%d ranges still locked", n)
	}
	if err := g.Unregister(p); err == nil || !strings.Contains(err.Error(), "cannot find locked buffer") {
		t.Errorf("unregistering again: %v", err)
	}
	_ = q.Release()
	_ = g.Free(dev, ol.AllocTypeDevice)
	d.deinit()
}
