package impl

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/fakegpu"
	"github.com/liboffload-go/liboffload-go/plugins/host"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// routeEnv is a context with the host device and two fake platforms whose
// device memory the CPU cannot touch: A with two devices, B with one.
type routeEnv struct {
	t          *testing.T
	c          *Context
	a, b       *fakegpu.Plugin
	host       *Device
	a0, a1, b0 *Device
}

func newRouteEnv(t *testing.T, opts ...func(*fakegpu.Options)) *routeEnv {
	t.Helper()
	oa := fakegpu.Options{Name: "fakea", Devices: 2}
	ob := fakegpu.Options{Name: "fakeb"}
	for _, o := range opts {
		o(&oa)
		o(&ob)
	}
	e := &routeEnv{t: t, a: fakegpu.New(oa), b: fakegpu.New(ob)}
	c, err := newContext(generations{}, []plugin.Plugin{e.a, e.b, host.New()})
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	for _, d := range c.deviceList {
		switch {
		case d.d.IsHost():
			e.host = d
		case d.platform.name == "fakea" && e.a0 == nil:
			e.a0 = d
		case d.platform.name == "fakea":
			e.a1 = d
		default:
			e.b0 = d
		}
	}
	t.Cleanup(func() {
		if err := c.teardown(); err != nil {
			t.Errorf("teardown: %v", err)
		}
		for _, p := range []*fakegpu.Plugin{e.a, e.b} {
			for _, v := range p.Platform.Violations() {
				t.Errorf("plugin contract broken: %s", v)
			}
		}
	})
	return e
}

func (e *routeEnv) alloc(d *Device, size uint64) uintptr {
	e.t.Helper()
	var p uintptr
	if err := e.c.callOlMemAlloc(d.h, uint32(ol.AllocTypeDevice), size, unsafe.Pointer(&p)); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *routeEnv) queue(d *Device) uintptr {
	e.t.Helper()
	var q uintptr
	if err := e.c.callOlCreateQueue(d.h, unsafe.Pointer(&q)); err != nil {
		e.t.Fatal(err)
	}
	return q
}

func (e *routeEnv) fake(d *Device) *fakegpu.Device {
	switch x := d.d.(type) {
	case *fakegpu.Device:
		return x
	}
	e.t.Fatalf("device %#x is not a fake", d.h)
	return nil
}

// read and write memory of d without the runtime (the reference).
func (e *routeEnv) read(d *Device, p uintptr, n uint64) []byte {
	if d.d.IsHost() {
		return append([]byte(nil), unsafe.Slice((*byte)(ptr(p)), n)...)
	}
	return e.fake(d).Peek(p, n)
}

func (e *routeEnv) write(d *Device, p uintptr, v []byte) {
	if d.d.IsHost() {
		copy(unsafe.Slice((*byte)(ptr(p)), len(v)), v)
		return
	}
	e.fake(d).Poke(p, v)
}

func ptr(a uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return b
}

func devName(d *Device) string {
	if d == nil {
		return "none"
	}
	if d.d.IsHost() {
		return "host"
	}
	return d.d.Info().Name.V
}

// Every pair of devices copies on every queue (and without one), and the
// plugins only see their own memory: the CPU never touches a fake
// device's memory (it would fault) and no plugin gets a foreign device.
func TestCopyRoutingEveryPair(t *testing.T) {
	e := newRouteEnv(t)
	devs := []*Device{e.host, e.a0, e.a1, e.b0}
	queues := []*Device{nil, e.host, e.a0, e.a1, e.b0}
	const n = 3000
	seed := byte(1)
	for _, src := range devs {
		for _, dst := range devs {
			for _, qd := range queues {
				name := fmt.Sprintf("%s->%s/queue:%s", devName(src), devName(dst), devName(qd))
				s, d := e.alloc(src, n), e.alloc(dst, n)
				want := pattern(n, seed)
				seed++
				e.write(src, s, want)
				e.write(dst, d, make([]byte, n))
				var q uintptr
				if qd != nil {
					q = e.queue(qd)
				}
				if err := e.c.callOlMemcpy(q, ptr(d+5), dst.h, ptr(s+5), src.h, n-10); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if q != 0 {
					if err := e.c.callOlSyncQueue(q); err != nil {
						t.Fatalf("%s: sync: %v", name, err)
					}
					if err := e.c.callOlDestroyQueue(q); err != nil {
						t.Fatal(err)
					}
				}
				got := e.read(dst, d, n)
				if !bytes.Equal(got[5:n-5], want[5:n-5]) || !bytes.Equal(got[:5], make([]byte, 5)) || !bytes.Equal(got[n-5:], make([]byte, 5)) {
					t.Errorf("%s: wrong bytes", name)
				}
				for _, p := range []uintptr{s, d} {
					if err := e.c.callOlMemFree(ptr(p)); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
}

// A copy between two platforms goes through host memory in chunks, and
// the destination's writes overlap the source's reads.
func TestCopyBetweenPlatformsIsStagedAndOverlapped(t *testing.T) {
	e := newRouteEnv(t, func(o *fakegpu.Options) { o.OpDelay = 2 * time.Millisecond })
	const n = 8*stageChunk + 12345
	for _, qd := range []*Device{nil, e.host, e.b0} {
		s, d := e.alloc(e.a0, n), e.alloc(e.b0, n)
		want := pattern(n, 9)
		e.write(e.a0, s, want)
		copiesA, copiesB := e.a.Platform.Copies.Load(), e.b.Platform.Copies.Load()
		var q uintptr
		if qd != nil {
			q = e.queue(qd)
		}
		if err := e.c.callOlMemcpy(q, ptr(d), e.b0.h, ptr(s), e.a0.h, n); err != nil {
			t.Fatal(err)
		}
		if q != 0 {
			if err := e.c.callOlSyncQueue(q); err != nil {
				t.Fatal(err)
			}
			_ = e.c.callOlDestroyQueue(q)
		}
		if !bytes.Equal(e.read(e.b0, d, n), want) {
			t.Fatalf("queue %s: wrong bytes", devName(qd))
		}
		chunks := int64((n + stageChunk - 1) / stageChunk)
		if got := e.a.Platform.Copies.Load() - copiesA; got != chunks {
			t.Errorf("queue %s: %d reads from the source, want %d chunks", devName(qd), got, chunks)
		}
		if got := e.b.Platform.Copies.Load() - copiesB; got != chunks {
			t.Errorf("queue %s: %d writes to the destination, want %d chunks", devName(qd), got, chunks)
		}
		_ = e.c.callOlMemFree(ptr(s))
		_ = e.c.callOlMemFree(ptr(d))
	}
	if !e.b.Platform.Overlapped(e.a.Platform) {
		t.Error("no write to the destination ran while the source was read: the staging is not overlapped")
	}
}

// Naming the wrong platform's device for known device memory is an
// error, not a CPU access to GPU memory.
func TestCopyWithWrongDeviceIsRefused(t *testing.T) {
	e := newRouteEnv(t)
	s, h := e.alloc(e.a0, 64), e.alloc(e.host, 64)
	for _, q := range []uintptr{0, e.queue(e.host)} {
		err := e.c.callOlMemcpy(q, ptr(h), e.host.h, ptr(s), e.host.h, 64)
		code, details := describe(err)
		if code != ol.ErrcInvalidArgument || !strings.Contains(details, fmt.Sprintf("SrcPtr %#x is in the 64-byte OL_ALLOC_TYPE_DEVICE allocation at %#x of device %#x (fakea), but SrcDevice is %#x (Host)", s, s, e.a0.h, e.host.h)) {
			t.Errorf("%s %q", code, details)
		}
		err = e.c.callOlMemcpy(q, ptr(s), e.b0.h, ptr(h), e.host.h, 64)
		if code, details = describe(err); code != ol.ErrcInvalidArgument || !strings.Contains(details, "DstPtr") {
			t.Errorf("%s %q", code, details)
		}
	}
	// another device of the same platform may name it (peer access)
	d1 := e.alloc(e.a1, 64)
	if err := e.c.callOlMemcpy(0, ptr(d1), e.a1.h, ptr(s), e.a1.h, 64); err != nil {
		t.Errorf("same-platform device: %v", err)
	}
}

// For every ordered pair of devices, memory of one (an allocation, or a
// global of a loaded program) named with the other, as source and as
// destination, with no queue and on a queue of either: refused before
// anything is queued, naming the pointer, its device and the device named,
// unless both are GPUs of one platform (then copied through the memory's
// own device). The queue runs later work. The host device's memory is
// plain host memory that a GPU driver need not reach: refused too.
func TestCopyNamedWithAnotherDevice(t *testing.T) {
	e := newRouteEnv(t)
	devs := []*Device{e.host, e.a0, e.a1, e.b0}
	const n = 256
	seed := byte(1)
	for _, own := range devs {
		for _, named := range devs {
			if own == named {
				continue
			}
			copied := !own.d.IsHost() && !named.d.IsHost() && own.platform == named.platform
			for _, qd := range []*Device{nil, own, named} {
				for _, srcSide := range []bool{true, false} {
					name := fmt.Sprintf("memory of %s named %s, source %v, queue %s", devName(own), devName(named), srcSide, devName(qd))
					p, o := e.alloc(own, n), e.alloc(named, n)
					pin, oin := pattern(n, seed), pattern(n, seed+1)
					seed += 2
					e.write(own, p, pin)
					e.write(named, o, oin)
					var q uintptr
					if qd != nil {
						q = e.queue(qd)
					}
					var err error
					if srcSide {
						err = e.c.callOlMemcpy(q, ptr(o+8), named.h, ptr(p+8), named.h, n-16)
					} else {
						err = e.c.callOlMemcpy(q, ptr(p+8), named.h, ptr(o+8), named.h, n-16)
					}
					pwant, owant := pin, oin
					if copied && srcSide {
						owant = append(append(append([]byte(nil), oin[:8]...), pin[8:n-8]...), oin[n-8:]...)
					} else if copied {
						pwant = append(append(append([]byte(nil), pin[:8]...), oin[8:n-8]...), pin[n-8:]...)
					}
					if copied && err != nil {
						t.Errorf("%s: %v", name, err)
					}
					if !copied {
						side := "Dst"
						if srcSide {
							side = "Src"
						}
						want := fmt.Sprintf("%sPtr %#x is in the %d-byte OL_ALLOC_TYPE_DEVICE allocation at %#x of device %#x (%s), but %sDevice is %#x (%s)",
							side, p+8, n, p, own.h, own.platform.name, side, named.h, named.platform.name)
						if err == nil {
							t.Errorf("%s: success, want INVALID_ARGUMENT with %q", name, want)
						} else if code, details := describe(err); code != ol.ErrcInvalidArgument || !strings.Contains(details, want) {
							t.Errorf("%s: got %s %q, want INVALID_ARGUMENT with %q", name, code, details, want)
						}
					}
					if q != 0 {
						var empty bool
						if !copied {
							if err := e.c.callOlGetQueueInfo(q, uint32(ol.QueueInfoEmpty), 1, unsafe.Pointer(&empty)); err != nil || !empty {
								t.Errorf("%s: the refused copy left work on the queue (%v)", name, err)
							}
						}
						// later work on the queue runs
						back := e.alloc(e.host, n)
						if err := e.c.callOlMemcpy(q, ptr(back), e.host.h, ptr(p), own.h, n); err != nil {
							t.Errorf("%s: later copy: %v", name, err)
						}
						if err := e.c.callOlSyncQueue(q); err != nil {
							t.Errorf("%s: sync: %v", name, err)
						}
						if !bytes.Equal(e.read(e.host, back, n), pwant) {
							t.Errorf("%s: the later copy read wrong bytes", name)
						}
						if err := e.c.callOlDestroyQueue(q); err != nil {
							t.Fatal(err)
						}
						_ = e.c.callOlMemFree(ptr(back))
					}
					if !bytes.Equal(e.read(own, p, n), pwant) || !bytes.Equal(e.read(named, o, n), owant) {
						t.Errorf("%s: wrong bytes after the call (copied %v)", name, copied)
					}
					_ = e.c.callOlMemFree(ptr(p))
					_ = e.c.callOlMemFree(ptr(o))
				}
			}
		}
	}
	// a global of a program of a0: named with a1 it is read through a0,
	// named with b0 or the host device it is refused
	img := []byte("FAKE\x10")
	var prog, sym uintptr
	if err := e.c.callOlCreateProgram(e.a0.h, unsafe.Pointer(&img[0]), uint64(len(img)), unsafe.Pointer(&prog)); err != nil {
		t.Fatal(err)
	}
	gname := []byte("g0\x00")
	if err := e.c.callOlGetSymbol(prog, unsafe.Pointer(&gname[0]), uint32(ol.SymbolKindGlobalVariable), unsafe.Pointer(&sym)); err != nil {
		t.Fatal(err)
	}
	g := e.c.mustSymbol(t, sym).addr
	e.write(e.a0, g, pattern(16, 77))
	out := e.alloc(e.host, 16)
	if err := e.c.callOlMemcpy(0, ptr(out), e.host.h, ptr(g), e.a1.h, 16); err != nil || !bytes.Equal(e.read(e.host, out, 16), pattern(16, 77)) {
		t.Errorf("global named with another device of its platform: %v", err)
	}
	for _, d := range []*Device{e.b0, e.host} {
		err := e.c.callOlMemcpy(0, ptr(out), e.host.h, ptr(g), d.h, 16)
		if err == nil {
			t.Errorf("global named with %s: success, want INVALID_ARGUMENT", devName(d))
			continue
		}
		code, details := describe(err)
		if want := fmt.Sprintf("SrcPtr %#x is a global of a program of device %#x (fakea), but SrcDevice is %#x", g, e.a0.h, d.h); code != ol.ErrcInvalidArgument || !strings.Contains(details, want) {
			t.Errorf("global named with %s: %s %q", devName(d), code, details)
		}
	}
	if err := e.c.callOlDestroyProgram(prog); err != nil {
		t.Fatal(err)
	}
}

// olMemFill is done by the device that owns the memory: with no queue,
// and on a queue of another platform (in that queue's order).
func TestFillByOwner(t *testing.T) {
	e := newRouteEnv(t)
	p := e.alloc(e.a1, 1024)
	pat := []byte{1, 2, 3}
	fills := e.a.Platform.Fills.Load()
	if err := e.c.callOlMemFill(0, ptr(p+2), 3, unsafe.Pointer(&pat[0]), 999); err != nil {
		t.Fatal(err)
	}
	got := e.read(e.a1, p, 1024)
	for i := 0; i < 999; i++ {
		if got[2+i] != pat[i%3] {
			t.Fatalf("byte %d: %d", i, got[2+i])
		}
	}
	if e.a.Platform.Fills.Load() != fills+1 {
		t.Error("the fill was not done by the owning platform")
	}
	// on a host queue: held behind a blocked B queue's event, so it must
	// run in the host queue's order
	qb := e.queue(e.b0)
	release := e.c.mustQueue(t, qb).q.(*fakegpu.Queue).Block()
	defer release() // before teardown, should the test fail early
	var ev uintptr
	if err := e.c.callOlCreateEvent(qb, unsafe.Pointer(&ev)); err != nil {
		t.Fatal(err)
	}
	qh := e.queue(e.host)
	if err := e.c.callOlWaitEvents(qh, unsafe.Pointer(&ev), 1); err != nil {
		t.Fatal(err)
	}
	pat2 := []byte{7, 7, 7, 7}
	if err := e.c.callOlMemFill(qh, ptr(p), 4, unsafe.Pointer(&pat2[0]), 1024); err != nil {
		t.Fatal(err)
	}
	pat2[0] = 9 // the caller's pattern is theirs again once the call returns
	time.Sleep(20 * time.Millisecond)
	if e.read(e.a1, p, 1)[0] == 7 {
		t.Fatal("the fill ran before the event it waits for")
	}
	release()
	if err := e.c.callOlSyncQueue(qh); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(e.read(e.a1, p, 1024), bytes.Repeat([]byte{7}, 1024)) {
		t.Error("the queued fill of another platform's memory is wrong")
	}
	// a global of a loaded program is known device memory too
	img := []byte("FAKE\x10\x08")
	var prog, sym uintptr
	if err := e.c.callOlCreateProgram(e.b0.h, unsafe.Pointer(&img[0]), uint64(len(img)), unsafe.Pointer(&prog)); err != nil {
		t.Fatal(err)
	}
	name := []byte("g1\x00")
	if err := e.c.callOlGetSymbol(prog, unsafe.Pointer(&name[0]), uint32(ol.SymbolKindGlobalVariable), unsafe.Pointer(&sym)); err != nil {
		t.Fatal(err)
	}
	g := e.c.mustSymbol(t, sym).addr
	one := []byte{0x5a}
	if err := e.c.callOlMemFill(0, ptr(g), 1, unsafe.Pointer(&one[0]), 8); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(e.read(e.b0, g, 8), bytes.Repeat(one, 8)) {
		t.Error("global not filled")
	}
	if err := e.c.callOlDestroyProgram(prog); err != nil {
		t.Fatal(err)
	}
}

// A pointer the runtime cannot place is never written by the CPU while a
// device that cannot tell whether it is its memory is present; devices
// that can tell get it, else it is host memory.
func TestFillOfUnplacedPointer(t *testing.T) {
	e := newRouteEnv(t)
	// device memory the runtime does not know about (not from olMemAlloc)
	raw := e.fake(e.b0).Base() + arenaOffsetForTest
	pat := []byte{1}
	code, details := describe(e.c.callOlMemFill(0, ptr(raw), 1, unsafe.Pointer(&pat[0]), 16))
	if code != ol.ErrcInvalidArgument || !strings.Contains(details, "cannot tell whether it is its memory") {
		t.Fatalf("%s %q", code, details)
	}

	e2 := newRouteEnv(t, func(o *fakegpu.Options) { o.OwnsPointers = true })
	raw = e2.b.Platform.Devices()[0].(interface{ Base() uintptr }).Base() + arenaOffsetForTest
	if err := e2.c.callOlMemFill(0, ptr(raw), 1, unsafe.Pointer(&pat[0]), 16); err != nil {
		t.Fatal(err)
	}
	if e2.b.Platform.Fills.Load() != 1 {
		t.Error("the device that owns the pointer did not fill it")
	}
	h := make([]byte, 16) // Go memory stands for any host memory here
	if err := e2.c.callOlMemFill(0, unsafe.Pointer(&h[0]), 1, unsafe.Pointer(&pat[0]), 16); err != nil || !bytes.Equal(h, bytes.Repeat(pat, 16)) {
		t.Fatalf("host memory: %v %v", err, h)
	}
}

const arenaOffsetForTest = 32 << 20

// A queue waits for an event of another platform without blocking the
// caller, and the event may be destroyed before the wait ends.
func TestWaitEventsAcrossPlatforms(t *testing.T) {
	e := newRouteEnv(t)
	qa := e.queue(e.a0)
	release := e.c.mustQueue(t, qa).q.(*fakegpu.Queue).Block()
	defer release() // before teardown, should the test fail early
	src := e.alloc(e.host, 256)
	dst := e.alloc(e.a0, 256)
	want := pattern(256, 3)
	e.write(e.host, src, want)
	if err := e.c.callOlMemcpy(qa, ptr(dst), e.a0.h, ptr(src), e.host.h, 256); err != nil {
		t.Fatal(err)
	}
	var ev uintptr
	if err := e.c.callOlCreateEvent(qa, unsafe.Pointer(&ev)); err != nil {
		t.Fatal(err)
	}
	qs := map[*Device]uintptr{}
	outs := map[*Device]uintptr{}
	order := []*Device{e.host, e.b0, e.a1}
	start := time.Now()
	for _, qd := range order {
		q, out := e.queue(qd), e.alloc(e.host, 256)
		qs[qd], outs[qd] = q, out
		if err := e.c.callOlWaitEvents(q, unsafe.Pointer(&ev), 1); err != nil {
			t.Fatal(err)
		}
		if err := e.c.callOlMemcpy(q, ptr(out), e.host.h, ptr(dst), e.a0.h, 256); err != nil {
			t.Fatal(err)
		}
	}
	if time.Since(start) > time.Second {
		t.Error("the caller was blocked")
	}
	// the event goes away while the waits hold it
	if err := e.c.callOlDestroyEvent(ev); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	for _, qd := range order {
		var empty bool
		if err := e.c.callOlGetQueueInfo(qs[qd], uint32(ol.QueueInfoEmpty), 1, unsafe.Pointer(&empty)); err != nil || empty {
			t.Fatalf("queue on %s ran past the wait (empty %v, %v)", devName(qd), empty, err)
		}
	}
	release()
	for _, qd := range order {
		if err := e.c.callOlSyncQueue(qs[qd]); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(e.read(e.host, outs[qd], 256), want) {
			t.Errorf("queue on %s: read before the event's copy", devName(qd))
		}
	}
	if e.a.Platform.Waits.Load() != 1 {
		t.Errorf("%d same-platform waits through the plugin, want 1 (a1 waiting on a0)", e.a.Platform.Waits.Load())
	}
}

func (c *Context) mustQueue(t *testing.T, h uintptr) *Queue {
	q, err := c.queues.get(h, "Queue")
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func (c *Context) mustSymbol(t *testing.T, h uintptr) *Symbol {
	s, err := c.symbols.get(h, "Symbol")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A GPU-like queue waits for an event of a host queue, in its own order.
func TestWaitForHostEventOnFakeQueue(t *testing.T) {
	e := newRouteEnv(t)
	qh := e.queue(e.host)
	gate := make(chan struct{})
	released := false
	release := func() {
		if !released {
			released = true
			close(gate)
		}
	}
	defer release()
	if err := e.c.mustQueue(t, qh).q.HostCall(func() error { <-gate; return nil }); err != nil {
		t.Fatal(err)
	}
	src, dst := e.alloc(e.host, 64), e.alloc(e.b0, 64)
	e.write(e.host, src, bytes.Repeat([]byte{1}, 64))
	var ev uintptr
	if err := e.c.callOlCreateEvent(qh, unsafe.Pointer(&ev)); err != nil {
		t.Fatal(err)
	}
	qb := e.queue(e.b0)
	if err := e.c.callOlWaitEvents(qb, unsafe.Pointer(&ev), 1); err != nil {
		t.Fatal(err)
	}
	if err := e.c.callOlMemcpy(qb, ptr(dst), e.b0.h, ptr(src), e.host.h, 64); err != nil {
		t.Fatal(err)
	}
	// the copy reads the source when it runs, after the gate opens
	e.write(e.host, src, bytes.Repeat([]byte{2}, 64))
	time.Sleep(20 * time.Millisecond)
	if e.read(e.b0, dst, 1)[0] != 0 {
		t.Fatal("the copy ran before the host event completed")
	}
	release()
	if err := e.c.callOlSyncQueue(qb); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(e.read(e.b0, dst, 64), bytes.Repeat([]byte{2}, 64)) {
		t.Error("wrong bytes after the wait")
	}
	_ = e.c.callOlDestroyEvent(ev)
}
