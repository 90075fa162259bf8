package cuda

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// double is a loaded fake_cuda.c with its test entry points.
type double struct {
	*fakedriver.Hooks
	t   *testing.T
	pl  plugin.Platform
	dev []*Device
}

func newDouble(t *testing.T, name string) *double {
	t.Helper()
	lib := fake.Build(t, name)
	t.Setenv("FAKE_CUDA_DEVICES", "2")
	pl, err := fake.Init(t, lib)
	if err != nil || pl == nil {
		t.Fatalf("Init: %v %v", pl, err)
	}
	d := &double{Hooks: fakedriver.OpenHooks(t, lib), t: t, pl: pl}
	for _, x := range pl.Devices() {
		d.dev = append(d.dev, x.(*Device))
	}
	return d
}

func (d *double) live(kind string) int { return d.Count("fake_cuda_live", kind) }

func (d *double) peek(p uintptr, n int) []byte {
	b := make([]byte, n)
	if d.Call("fake_cuda_peek", uintptr(unsafe.Pointer(&b[0])), p, uintptr(n)) != 0 {
		d.t.Fatalf("peek %#x: not device memory", p)
	}
	return b
}

func (d *double) poke(p uintptr, b []byte) {
	if d.Call("fake_cuda_poke", p, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b))) != 0 {
		d.t.Fatalf("poke %#x: not device memory", p)
	}
}

// deinit shuts the platform down and checks the driver holds nothing.
func (d *double) deinit() {
	d.t.Helper()
	if err := d.pl.Deinit(); err != nil {
		d.t.Fatal(err)
	}
	for _, k := range []string{"ctxref", "stream", "event", "alloc", "host", "register", "peer"} {
		if n := d.live(k); n != 0 {
			d.t.Errorf("after Deinit the driver still holds %d %s", n, k)
		}
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
// between two), and fills of every pattern size, checked in the driver's
// own view of device memory.
func TestFakeMemoryCopiesFills(t *testing.T) {
	d := newDouble(t, "libcuda-mem.so")
	g0, g1 := d.dev[0], d.dev[1]
	if n := d.live("peer"); n != 2 {
		t.Errorf("%d peer links enabled between 2 GPUs, want 2 (each way)", n)
	}
	const n = 5000
	a := mustAlloc(t, g0, ol.AllocTypeDevice, n)
	b := mustAlloc(t, g0, ol.AllocTypeDevice, n)
	c := mustAlloc(t, g1, ol.AllocTypeDevice, n)
	h := mustAlloc(t, g0, ol.AllocTypeHost, n)
	m := mustAlloc(t, g1, ol.AllocTypeManaged, n)
	want := seq(n, 7)
	copy(hostBytes(h, n), want)

	q := mustQueue(t, g0)
	steps := []struct {
		what string
		do   func() error
	}{
		{"host to device", func() error { return q.CopyToDevice(a, g0, h, n) }},
		{"device to device", func() error { return q.CopyDevice(b, g0, a, g0, n) }},
		{"peer", func() error { return q.CopyDevice(c, g1, b, g0, n) }},
		{"device to managed", func() error { return q.CopyFromDevice(m, c, g1, n) }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]byte{"a": d.peek(a, n), "b": d.peek(b, n), "c": d.peek(c, n), "managed": hostBytes(m, n)} {
		if !bytes.Equal(got, want) {
			t.Errorf("%s: wrong bytes", name)
		}
	}

	for _, tc := range []struct {
		pat []byte
		off uintptr
	}{
		{[]byte{0xab}, 0}, {[]byte{1, 2}, 0}, {[]byte{1, 2, 3, 4}, 0}, {[]byte{1, 2, 3, 4}, 2},
		{[]byte{9, 8, 7}, 1}, {seq(17, 1), 0},
	} {
		d.poke(a, make([]byte, n))
		size := uint64(len(tc.pat) * 200)
		if err := q.Fill(a+tc.off, unsafe.Pointer(&tc.pat[0]), uint64(len(tc.pat)), size); err != nil {
			t.Fatalf("fill %v: %v", tc.pat, err)
		}
		tc.pat[0] ^= 0xff // the caller's pattern is theirs again at once
		if err := q.Sync(); err != nil {
			t.Fatal(err)
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
	if err := g0.Free(a, ol.AllocTypeDevice); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_INVALID_VALUE") {
		t.Errorf("double free: %v", err)
	}
	for _, x := range []*Queue{q, q1} {
		if err := x.Release(); err != nil {
			t.Fatal(err)
		}
	}
	d.deinit()
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
			g := d.dev[i%2]
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
	d.deinit()
}

// Host functions run on a library thread (a driver call made there
// succeeds, where the driver's callback thread would refuse it), in
// stream order; a host call's error is the next Sync's.
func TestFakeHostFunctionsAreRelayed(t *testing.T) {
	d := newDouble(t, "libcuda-hostfn.so")
	q := mustQueue(t, d.dev[0])
	fn := ptrOf(d.Sym("fake_cuda_test_hostfn"))
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
	d.deinit()
}

// A queue waits for an event of another queue on another GPU without
// blocking the caller; released busy queues are reclaimed once idle.
func TestFakeEventsWaitsAndQueueReuse(t *testing.T) {
	d := newDouble(t, "libcuda-events.so")
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
	// released with work pending: the stream is outstanding, not reused
	if err := q0.Release(); err != nil {
		t.Fatal(err)
	}
	streams := d.live("stream")
	q2 := mustQueue(t, g0)
	if d.live("stream") != streams+1 {
		t.Error("a busy released stream was handed out again")
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
	// once idle, released streams are reused: no new ones for many queues
	_ = q2.Release()
	before := d.live("stream")
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
	if after := d.live("stream"); after > before {
		t.Errorf("streams grew from %d to %d over 100 queue cycles", before, after)
	}
	_ = g0.Free(src, ol.AllocTypeDevice)
	_ = g1.Free(dst, ol.AllocTypeDevice)
	_ = q1.Release()
	d.deinit()
}

// Registration is reference counted: the driver locks a range once and
// unlocks it with the last user.
func TestFakeRegister(t *testing.T) {
	d := newDouble(t, "libcuda-register.so")
	g := d.dev[0]
	buf := mustAlloc(t, d.dev[1], ol.AllocTypeHost, 8192) // any host memory
	for i := 0; i < 2; i++ {
		if p, err := g.Register(buf, 4096); err != nil || p != buf {
			t.Fatalf("Register: %#x %v", p, err)
		}
	}
	if _, err := g.Register(buf+100, 100); err != nil {
		t.Fatalf("a contained range: %v", err)
	}
	if _, err := g.Register(buf+4000, 200); err == nil || !strings.Contains(err.Error(), "partial overlapping") {
		t.Errorf("partial overlap: %v", err)
	}
	if n := d.live("register"); n != 1 {
		t.Errorf("%d ranges locked in the driver, want 1", n)
	}
	for i := 0; i < 3; i++ {
		if err := g.Unregister(buf); err != nil {
			t.Fatal(err)
		}
	}
	if n := d.live("register"); n != 0 {
		t.Errorf("%d ranges still locked", n)
	}
	if err := g.Unregister(buf); err == nil || !strings.Contains(err.Error(), "cannot find locked buffer") {
		t.Errorf("unregistering again: %v", err)
	}
	_ = d.dev[1].Free(buf, ol.AllocTypeHost)
	d.deinit()
}

// GPUs that cannot reach each other get no peer access; peer copies still
// work (the driver stages them).
func TestFakeNoPeerAccess(t *testing.T) {
	t.Setenv("FAKE_CUDA_NO_PEER", "1")
	d := newDouble(t, "libcuda-nopeer.so")
	if n := d.live("peer"); n != 0 {
		t.Errorf("%d peer links enabled, want 0", n)
	}
	g0, g1 := d.dev[0], d.dev[1]
	a, b := mustAlloc(t, g0, ol.AllocTypeDevice, 64), mustAlloc(t, g1, ol.AllocTypeDevice, 64)
	d.poke(a, seq(64, 5))
	q := mustQueue(t, g0)
	if err := q.CopyDevice(b, g1, a, g0, 64); err != nil {
		t.Fatal(err)
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(d.peek(b, 64), seq(64, 5)) {
		t.Error("peer copy without peer access: wrong bytes")
	}
	_ = q.Release()
	_ = g0.Free(a, ol.AllocTypeDevice)
	_ = g1.Free(b, ol.AllocTypeDevice)
	d.deinit()
}

// Streams that never report idle are never handed out again while busy:
// each queue gets a stream of its own, and shutdown still waits for them
// and destroys every one.
func TestFakeStreamStaysBusy(t *testing.T) {
	d := newDouble(t, "libcuda-busy.so")
	t.Setenv("FAKE_CUDA_STREAM_BUSY", "1")
	g := d.dev[0]
	before := d.live("stream")
	p := mustAlloc(t, g, ol.AllocTypeDevice, 64)
	for i := 0; i < 20; i++ {
		q := mustQueue(t, g)
		if err := q.CopyDevice(p, g, p, g, 64); err != nil {
			t.Fatal(err)
		}
		if q.Empty() {
			t.Fatal("a queue reports empty while its stream says it is busy")
		}
		if err := q.Release(); err != nil {
			t.Fatal(err)
		}
	}
	if n := d.live("stream") - before; n != 20 {
		t.Errorf("%d new streams for 20 queues on busy streams, want 20 (none reused)", n)
	}
	_ = g.Free(p, ol.AllocTypeDevice)
	d.deinit()
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
	g := d.dev[0]
	q := mustQueue(t, g)
	dev := mustAlloc(t, g, ol.AllocTypeDevice, 4096)
	in, out := pageable(t, 4096), pageable(t, 4096)
	src, dst := unsafe.Pointer(&in[0]), unsafe.Pointer(&out[0])
	copy(in, seq(4096, 1))
	d.poke(dev, seq(4096, 9))
	// device -> pageable, then a host call that reads it and refills the
	// source, then pageable -> device: each step sees the one before.
	if err := q.CopyFromDevice(uintptr(dst), dev, g, 4096); err != nil {
		t.Fatal(err)
	}
	var seen []byte
	if err := q.HostCall(func() error {
		time.Sleep(20 * time.Millisecond) // later work must wait, not race
		seen = append([]byte(nil), out...)
		copy(in, seq(4096, 7))
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
	if !bytes.Equal(seen, seq(4096, 9)) {
		t.Error("the host call did not see the device-to-host copy queued before it")
	}
	if !bytes.Equal(d.peek(dev, 4096), seq(4096, 7)) {
		t.Error("the host-to-device copy queued after the host call did not read what it wrote")
	}
	// pinned memory is read when the copy runs, not when it is submitted
	pin := mustAlloc(t, g, ol.AllocTypeHost, 4096)
	copy(hostBytes(pin, 4096), seq(4096, 3))
	if err := q.CopyToDevice(dev, g, pin, 4096); err != nil {
		t.Fatal(err)
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(d.peek(dev, 4096), seq(4096, 3)) {
		t.Error("pinned host-to-device copy: wrong bytes")
	}
	_ = q.Release()
	_ = g.Free(pin, ol.AllocTypeHost)
	_ = g.Free(dev, ol.AllocTypeDevice)
	d.deinit()
}

// pageable maps n bytes of ordinary (not page-locked) memory outside Go's heap.
func pageable(t *testing.T, n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(b) })
	return b
}
