// Package contract is the plugin contract suite: scenarios written against
// plugin.Platform, Device, Queue and Event only, run over every backend
// (the host device, fakegpu, the CUDA double and the HSA double). What
// differs between backends — how to open the platform, how to read device
// memory, how to check the driver's leftovers — comes in through a Fixture.
package contract

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// Group names a group of scenarios; a backend's Fixture may skip a group,
// with a reason.
type Group string

const (
	// Programs: kernels run over the whole grid with their arguments,
	// within the launch limits; globals; unloading waits for launches.
	Programs Group = "programs"
	// Register: registration of host memory is reference counted.
	Register Group = "register"
	// HotPath: a round of launch, copies, fill, record, wait and sync
	// makes no Go allocation.
	HotPath Group = "hotpath"
	// HostCalls: a host call's error is the next Sync's, reported once.
	HostCalls Group = "hostcalls"
	// Memory: memory of every kind, copies in every direction, fills of
	// every pattern size.
	Memory Group = "memory"
	// Events: a queue waits for another's event without blocking the
	// caller; released queues are reused once idle.
	Events Group = "events"
	// Drain: waits for released events end; Drain waits for the work
	// of released queues.
	Drain Group = "drain"
	// Timed: profiling events (plugin.TimedQueue) measure the queue's
	// work between them, are events other queues wait for, and refuse
	// another platform's event.
	Timed Group = "timed"
)

// Groups are all the scenario groups, in the order Run runs them.
var Groups = []Group{Memory, Register, Programs, HotPath, HostCalls, Events, Drain, Timed}

// Fixture is what the suite needs of one backend.
type Fixture struct {
	// Open initialises the backend's platform (fresh for each scenario).
	Open func(t *testing.T) plugin.Platform
	// Peek and Poke read and write device memory as the backend's driver
	// sees it; nil means through a queue copy to and from Go memory.
	Peek func(t *testing.T, p uintptr, n int) []byte
	Poke func(t *testing.T, p uintptr, b []byte)
	// Held checks, after Deinit, that the driver holds nothing (optional).
	Held func(t *testing.T)
	// Live counts the driver's objects of a kind (optional); QueueKind is
	// the kind of its queues and Bounded another kind that queue cycles
	// must not grow ("" for none).
	Live               func(kind string) int
	QueueKind, Bounded string
	// Memory is what the memory group wants of the backend; nil skips
	// the group.
	Memory func() MemoryWant
	// Image builds a kernel source of tests/c/kernels as an image the
	// backend runs, and Programs is what the programs group wants of it;
	// nil skips the group.
	Image    func(t *testing.T, kernel string) []byte
	Programs func() ProgramsWant
	// Register is what the register group wants of the backend; nil
	// skips the group.
	Register func() RegisterWant
	// Why is the driver's last error, for messages (optional).
	Why func() string
	// Skip gives the reason a backend does not support a group.
	Skip map[Group]string
}

// Env is an open platform of a Fixture.
type Env struct {
	T        *testing.T
	F        *Fixture
	Platform plugin.Platform
	Devices  []plugin.Device
}

// Open opens f's platform.
func (f *Fixture) open(t *testing.T) *Env {
	t.Helper()
	pl := f.Open(t)
	if pl == nil {
		t.Fatal("Open: no platform")
	}
	devs := pl.Devices()
	if len(devs) == 0 {
		t.Fatal("Open: no devices")
	}
	return &Env{T: t, F: f, Platform: pl, Devices: devs}
}

// Run runs every group over f, each in a subtest; a group f does not
// support is skipped with f's reason.
func Run(t *testing.T, f *Fixture) {
	for _, g := range Groups {
		t.Run(string(g), func(t *testing.T) { RunGroup(t, f, g) })
	}
}

// RunGroup runs the scenarios of group g over f.
func RunGroup(t *testing.T, f *Fixture, g Group) {
	t.Helper()
	if why, ok := f.Skip[g]; ok {
		t.Skipf("%s: skipped for this backend: %s", g, why)
	}
	if g == Register && f.Register == nil {
		t.Skipf("%s: the fixture gives no RegisterWant", g)
	}
	if g == Memory && f.Memory == nil {
		t.Skipf("%s: the fixture gives no MemoryWant", g)
	}
	if g == Programs && (f.Programs == nil || f.Image == nil) || g == HotPath && f.Image == nil {
		t.Skipf("%s: the fixture gives no kernel images", g)
	}
	e := f.open(t)
	switch g {
	case Programs:
		CheckProgramsAndLaunches(t, e, f.Programs())
	case Register:
		CheckRegister(t, e, f.Register())
		e.Deinit()
	case HotPath:
		CheckHotPathAllocatesNothing(t, e)
	case Memory:
		CheckMemoryCopiesFills(t, e, f.Memory())
	case HostCalls:
		q := MustQueue(t, e.Devices[0])
		CheckHostCallError(t, q)
		if err := q.Release(); err != nil {
			t.Fatal(err)
		}
		e.Deinit()
	case Events:
		CheckEventsWaitsAndQueueReuse(t, e)
	case Drain:
		CheckReleasedEventsAndDrain(t, e)
	case Timed:
		CheckTimedEvents(t, e)
	default:
		t.Fatalf("unknown group %q", g)
	}
}

// Deinit shuts the platform down and checks that the driver holds nothing.
func (e *Env) Deinit() {
	e.T.Helper()
	if err := e.Platform.Deinit(); err != nil {
		e.T.Fatal(err)
	}
	if e.F.Held != nil {
		e.F.Held(e.T)
	}
}

// Peek reads n bytes of device memory at p.
func (e *Env) Peek(p uintptr, n int) []byte {
	e.T.Helper()
	if e.F.Peek != nil {
		return e.F.Peek(e.T, p, n)
	}
	b := make([]byte, n)
	q := MustQueue(e.T, e.Devices[0])
	defer q.Release()
	if err := q.CopyFromDevice(uintptr(unsafe.Pointer(&b[0])), p, e.owner(p), uint64(n)); err != nil {
		e.T.Fatalf("peek %#x: %v", p, err)
	}
	if err := q.Sync(); err != nil {
		e.T.Fatalf("peek %#x: %v", p, err)
	}
	return b
}

// Poke writes b to device memory at p.
func (e *Env) Poke(p uintptr, b []byte) {
	e.T.Helper()
	if e.F.Poke != nil {
		e.F.Poke(e.T, p, b)
		return
	}
	q := MustQueue(e.T, e.Devices[0])
	defer q.Release()
	if err := q.CopyToDevice(p, e.owner(p), uintptr(unsafe.Pointer(&b[0])), uint64(len(b))); err != nil {
		e.T.Fatalf("poke %#x: %v", p, err)
	}
	if err := q.Sync(); err != nil {
		e.T.Fatalf("poke %#x: %v", p, err)
	}
}

// owner is the device whose memory p is, when the backend says; else the first.
func (e *Env) owner(p uintptr) plugin.Device {
	for _, d := range e.Devices {
		if o, ok := d.(plugin.PointerDevice); ok && o.OwnsPointer(p) {
			return d
		}
	}
	return e.Devices[0]
}

// Seq is n bytes that differ from those of another seed.
func Seq(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*13) + seed
	}
	return b
}

// MustAlloc allocates n bytes of kind on d or fails the test.
func MustAlloc(t *testing.T, d plugin.Device, kind ol.AllocType, n uint64) uintptr {
	t.Helper()
	p, err := d.Alloc(kind, n)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// MustQueue makes a queue on d or fails the test.
func MustQueue(t *testing.T, d plugin.Device) plugin.Queue {
	t.Helper()
	q, err := d.NewQueue()
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// ForeignTimed is a profiling event of another platform (around any
// event), which a backend's ElapsedSince must refuse.
type ForeignTimed struct{ plugin.Event }

// ElapsedSince implements plugin.TimedEvent.
func (ForeignTimed) ElapsedSince(plugin.TimedEvent) (float32, error) { return 0, nil }

// RecordTimed records a profiling event on q (a plugin.TimedQueue).
func RecordTimed(t *testing.T, q plugin.Queue) plugin.TimedEvent {
	t.Helper()
	tq, ok := q.(plugin.TimedQueue)
	if !ok {
		t.Fatalf("%T records no profiling events (plugin.TimedQueue)", q)
	}
	ev, err := tq.RecordTimed()
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// CheckTimedEvents checks a backend's profiling events: a pair on an idle
// queue still carries times; a pair around a copy and a 20 ms host call
// measures at least the 20 ms, and the pair the other way round the same
// time negated (the stamp is taken when the queue reaches the event, not
// when it is recorded); a profiling event is an event another queue can
// wait for; an event of another platform is refused.
func CheckTimedEvents(t *testing.T, e *Env) {
	t.Helper()
	d := e.Devices[0]
	q := MustQueue(t, d)
	record := func() plugin.TimedEvent { t.Helper(); return RecordTimed(t, q) }
	a, b := record(), record()
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if ms, err := b.ElapsedSince(a); err != nil || ms < 0 || ms > 1000 {
		t.Errorf("two profiling events on an idle queue: %v ms, %v", ms, err)
	}

	start := record()
	time.Sleep(5 * time.Millisecond) // before the copy: not between the stamps if taken at record
	buf := MustAlloc(t, d, ol.AllocTypeDevice, 1<<20)
	src := Seq(1<<20, 3)
	if err := q.CopyToDevice(buf, d, uintptr(unsafe.Pointer(&src[0])), 1<<20); err != nil {
		t.Fatal(err)
	}
	const nap = 20 * time.Millisecond
	if err := q.HostCall(func() error { time.Sleep(nap); return nil }); err != nil {
		t.Fatal(err)
	}
	end := record()
	if err := end.Sync(); err != nil || !start.Done() || !end.Done() {
		t.Fatalf("Sync: %v, done %v %v", err, start.Done(), end.Done())
	}
	ms, err := end.ElapsedSince(start)
	if err != nil || ms < float32(nap/time.Millisecond)-1 || ms > 5000 {
		t.Errorf("elapsed %v ms (%v) around a copy and a %v host call", ms, err, nap)
	}
	if back, err := start.ElapsedSince(end); err != nil || back != -ms {
		t.Errorf("the pair the other way round: %v ms, %v; want %v", back, err, -ms)
	}
	q2 := MustQueue(t, d)
	if err := q2.Wait(end); err != nil {
		t.Fatal(err)
	}
	if err := q2.Sync(); err != nil {
		t.Fatal(err)
	}
	var oe *ol.Error
	if _, err := end.ElapsedSince(ForeignTimed{Event: start}); !errors.As(err, &oe) || oe.Code != ol.ErrcInvalidArgument {
		t.Errorf("another platform's event: %v, want INVALID_ARGUMENT", err)
	}
	for _, ev := range []plugin.Event{a, b, start, end} {
		if err := ev.Release(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Free(buf, ol.AllocTypeDevice); err != nil {
		t.Fatal(err)
	}
	for _, x := range []plugin.Queue{q, q2} {
		if err := x.Release(); err != nil {
			t.Fatal(err)
		}
	}
	e.Deinit()
}

// CheckHostCallError checks that a host call's error is the next Sync's,
// and is reported once.
func CheckHostCallError(t *testing.T, q plugin.Queue) {
	t.Helper()
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
}

// WaitEmpty waits until q reports no work (Empty), failing the test after
// 5 s; what names the work in the failure.
func WaitEmpty(t *testing.T, q plugin.Queue, what string) {
	t.Helper()
	for start := time.Now(); !q.Empty(); {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("%s never completed", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// CheckQueriedHostCallError checks that a failing host call found ended by
// a query (Empty) is still the next Sync's, once, and that the queue does
// not count as idle (idle: the backend's C view of it) until then.
func CheckQueriedHostCallError(t *testing.T, q plugin.Queue, idle func() bool) {
	t.Helper()
	if err := q.HostCall(func() error { return ol.NewError(ol.ErrcUnknown, "boom") }); err != nil {
		t.Fatal(err)
	}
	WaitEmpty(t, q, "the failing host call")
	if idle() {
		t.Error("idle with a failed host call to report")
	}
	if err := q.Sync(); err == nil {
		t.Error("Sync after a failed host call: no error")
	}
	if err := q.Sync(); err != nil || !idle() {
		t.Errorf("the sync after: %v, idle %v", err, idle())
	}
}

// within fails the test if fn has not returned after 10 s (it then leaks
// fn's goroutine: the test has failed anyway).
func within(t *testing.T, what string, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s has not returned after 10 s: it waits forever", what)
	}
}

// CheckReleasedEventsAndDrain checks that work in flight survives releases:
// a wait for an event that is released while still held back (then
// pending) still ends once the event's point is reached, on the same
// device and across devices (skipped where the backend has one device);
// and Drain waits for the held-back work of a released queue. Then it
// deinitialises.
func CheckReleasedEventsAndDrain(t *testing.T, e *Env) {
	t.Helper()
	g0 := e.Devices[0]
	src := MustAlloc(t, g0, ol.AllocTypeDevice, 256)
	pattern := uint32(0x5a5a5a5a)
	want := bytes.Repeat([]byte{0x5a}, 256)
	pair := e.Devices
	if len(pair) > 2 {
		pair = pair[:2]
	}
	if len(pair) < 2 {
		t.Run("across devices", func(t *testing.T) { t.Skip("the backend has one device") })
	}
	for _, g1 := range pair {
		q0, q1 := MustQueue(t, g0), MustQueue(t, g1)
		dst := MustAlloc(t, g1, ol.AllocTypeDevice, 256)
		e.Poke(src, make([]byte, 256))
		gate := make(chan struct{})
		if err := q0.HostCall(func() error { <-gate; return nil }); err != nil {
			t.Fatal(err)
		}
		if err := q0.Fill(src, unsafe.Pointer(&pattern), 4, 256); err != nil {
			t.Fatal(err)
		}
		e0, err := q0.Record()
		if err != nil {
			t.Fatal(err)
		}
		if err := q1.Wait(e0); err != nil {
			t.Fatal(err)
		}
		if err := e0.Release(); err != nil { // held back: not even recorded yet
			t.Fatal(err)
		}
		if err := q1.CopyDevice(dst, g1, src, g0, 256); err != nil {
			t.Fatal(err)
		}
		close(gate)
		within(t, "Sync of a queue waiting for a released event", q1.Sync)
		if got := e.Peek(dst, 256); !bytes.Equal(got, want) {
			t.Errorf("the waiting queue copied % x..., want % x...", got[:8], want[:8])
		}
		_ = q0.Sync()
		_ = q0.Release()
		_ = q1.Release()
		_ = g1.Free(dst, ol.AllocTypeDevice)
	}
	// a released queue held back by a host function: Drain waits for it
	q := MustQueue(t, g0)
	e.Poke(src, make([]byte, 256))
	gate := make(chan struct{})
	if err := q.HostCall(func() error { <-gate; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := q.Fill(src, unsafe.Pointer(&pattern), 4, 256); err != nil {
		t.Fatal(err)
	}
	_ = q.Release()
	time.AfterFunc(100*time.Millisecond, func() { close(gate) })
	within(t, "Drain", e.Platform.Drain)
	if got := e.Peek(src, 256); !bytes.Equal(got, want) {
		t.Errorf("after Drain the released queue's fill left % x..., want % x...", got[:8], want[:8])
	}
	_ = g0.Free(src, ol.AllocTypeDevice)
	e.Deinit()
}

// CheckEventsWaitsAndQueueReuse checks that a queue waits for an event of
// another queue on another device (the same one where the backend has one) without blocking the caller, and that
// released busy queues are reused once idle, so that what the double
// counts of its QueueKind (and of Bounded, unless "") does not grow over
// 100 queue cycles (where the fixture counts: Live); then it deinitialises.
func CheckEventsWaitsAndQueueReuse(t *testing.T, d *Env) {
	t.Helper()
	g0, g1 := d.Devices[0], d.Devices[0]
	if len(d.Devices) > 1 {
		g1 = d.Devices[1]
	}
	bounded := d.F.Bounded
	if d.F.Live == nil {
		t.Run("driver queue counts", func(t *testing.T) { t.Skip("the backend does not count its driver queues (Fixture.Live)") })
	}
	if len(d.Devices) < 2 {
		t.Run("across devices", func(t *testing.T) { t.Skip("the backend has one device: the waiting queue is on the same one") })
	}
	q0, q1 := MustQueue(t, g0), MustQueue(t, g1)
	gate := make(chan struct{})
	if err := q0.HostCall(func() error { <-gate; return nil }); err != nil {
		t.Fatal(err)
	}
	src := MustAlloc(t, g0, ol.AllocTypeDevice, 256)
	dst := MustAlloc(t, g1, ol.AllocTypeDevice, 256)
	d.Poke(src, Seq(256, 1))
	d.Poke(dst, make([]byte, 256)) // device memory starts undefined
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
	if e0.Done() || q1.Empty() || !bytes.Equal(d.Peek(dst, 256), make([]byte, 256)) {
		t.Fatal("the waiting queue ran past the event")
	}
	// released with work pending: its driver queue is not handed out again
	if err := q0.Release(); err != nil {
		t.Fatal(err)
	}
	kind := d.F.QueueKind
	queues := d.live(kind)
	q2 := MustQueue(t, g0)
	if d.F.Live != nil && d.live(kind) != queues+1 {
		t.Errorf("a busy released %s was handed out again", kind)
	}
	close(gate)
	if err := q1.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := e0.Sync(); err != nil || !e0.Done() {
		t.Fatalf("event: %v", err)
	}
	if !bytes.Equal(d.Peek(dst, 256), Seq(256, 1)) {
		t.Error("wrong bytes after the wait")
	}
	_ = e0.Release()
	// once idle, released queues are reused: no new ones for many queues
	_ = q2.Release()
	before := d.live(kind)
	var others int
	if d.F.Live != nil && bounded != "" {
		others = d.live(bounded)
	}
	for i := 0; i < 100; i++ {
		q := MustQueue(t, g0)
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
	if after := d.live(kind); after > before {
		t.Errorf("%s count grew from %d to %d over 100 queue cycles", kind, before, after)
	}
	if d.F.Live != nil && bounded != "" {
		if after := d.live(bounded); after > others+2 {
			t.Errorf("%s count grew from %d to %d over 100 queue cycles", bounded, others, after)
		}
	}
	_ = g0.Free(src, ol.AllocTypeDevice)
	_ = g1.Free(dst, ol.AllocTypeDevice)
	_ = q1.Release()
	d.Deinit()
}

// live is the driver's count of kind, 0 where the fixture does not count.
func (e *Env) live(kind string) int {
	if e.F.Live == nil {
		return 0
	}
	return e.F.Live(kind)
}

// MemoryWant is what differs between backends in CheckMemoryCopiesFills.
type MemoryWant struct {
	// FillStage is the plugin's chunk for staging large fills.
	FillStage int
	// Unknown adds a copy into Go memory that the driver does not know.
	Unknown bool
	// FillBehindCopy queues each fill behind a copy, and adds a 1-byte
	// pattern at an odd offset.
	FillBehindCopy bool
	// DoubleFree is what freeing memory twice says ("" for no check).
	DoubleFree string
	// AfterCopies and AfterRelease check the driver further after the
	// copies, and after the queues are released.
	AfterCopies, AfterRelease func()
}

// CheckMemoryCopiesFills checks memory of every kind, copies in every
// direction (within a GPU and between two) and fills of every pattern
// size, in the driver's own view of device memory (Fixture.Peek), then
// deinitialises.
func CheckMemoryCopiesFills(t *testing.T, d *Env, w MemoryWant) {
	t.Helper()
	g0, g1 := d.Devices[0], d.Devices[0]
	if len(d.Devices) > 1 {
		g1 = d.Devices[1]
	} else {
		t.Run("across devices", func(t *testing.T) { t.Skip("the backend has one device: the copy between devices stays on it") })
	}
	const n = 5000
	a := MustAlloc(t, g0, ol.AllocTypeDevice, n)
	b := MustAlloc(t, g0, ol.AllocTypeDevice, n)
	c := MustAlloc(t, g1, ol.AllocTypeDevice, n)
	h := MustAlloc(t, g0, ol.AllocTypeHost, n)
	m := MustAlloc(t, g1, ol.AllocTypeManaged, n)
	want := Seq(n, 7)
	copy(HostBytes(h, n), want)

	q := MustQueue(t, g0)
	steps := []struct {
		what string
		do   func() error
	}{
		{"host to device", func() error { return q.CopyToDevice(a, g0, h, n) }},
		{"device to device", func() error { return q.CopyDevice(b, g0, a, g0, n) }},
		{"across GPUs", func() error { return q.CopyDevice(c, g1, b, g0, n) }},
		{"device to managed", func() error { return q.CopyFromDevice(m, c, g1, n) }},
	}
	heap := Pageable(t, n) // not the driver's: locked for the copy
	if w.Unknown {
		steps = append(steps, struct {
			what string
			do   func() error
		}{"device to C heap", func() error { return q.CopyFromDevice(uintptr(unsafe.Pointer(&heap[0])), c, g1, n) }})
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v%s", s.what, err, d.why())
		}
	}
	if err := q.Sync(); err != nil {
		t.Fatalf("%v%s", err, d.why())
	}
	got := map[string][]byte{"a": d.Peek(a, n), "b": d.Peek(b, n), "c": d.Peek(c, n), "managed": HostBytes(m, n)}
	if w.Unknown {
		got["heap"] = heap
	}
	for name, got := range got {
		if !bytes.Equal(got, want) {
			t.Errorf("%s: wrong bytes", name)
		}
	}
	if w.AfterCopies != nil {
		w.AfterCopies()
	}

	fills := []struct {
		pat []byte
		off uintptr
	}{
		{[]byte{0xab}, 0}, {[]byte{1, 2}, 0}, {[]byte{1, 2, 3, 4}, 0}, {[]byte{1, 2, 3, 4}, 2},
		{[]byte{9, 8, 7}, 1}, {Seq(17, 1), 0},
	}
	if w.FillBehindCopy {
		fills = append(fills, struct {
			pat []byte
			off uintptr
		}{[]byte{0xcd}, 3})
	}
	for _, tc := range fills {
		d.Poke(a, make([]byte, n))
		size := uint64(len(tc.pat) * 200)
		if w.FillBehindCopy {
			// behind a copy, so that the fill waits for it in order
			if err := q.CopyDevice(b, g0, a, g0, 64); err != nil {
				t.Fatal(err)
			}
		}
		if err := q.Fill(a+tc.off, unsafe.Pointer(&tc.pat[0]), uint64(len(tc.pat)), size); err != nil {
			t.Fatalf("fill %v: %v", tc.pat, err)
		}
		tc.pat[0] ^= 0xff // the caller's pattern is theirs again at once
		if err := q.Sync(); err != nil {
			t.Fatalf("%v%s", err, d.why())
		}
		tc.pat[0] ^= 0xff
		got := d.Peek(a, n)
		exp := make([]byte, n)
		for i := uint64(0); i < size; i++ {
			exp[uint64(tc.off)+i] = tc.pat[i%uint64(len(tc.pat))]
		}
		if !bytes.Equal(got, exp) {
			t.Errorf("fill with %d-byte pattern at +%d: wrong bytes", len(tc.pat), tc.off)
		}
	}
	// a large fill with an odd pattern goes through several staged chunks
	stage := uint64(w.FillStage)
	big := MustAlloc(t, g1, ol.AllocTypeDevice, 3*stage+6)
	pat := []byte{5, 6, 7}
	q1 := MustQueue(t, g1)
	if err := q1.Fill(big, unsafe.Pointer(&pat[0]), 3, 3*stage+6); err != nil {
		t.Fatal(err)
	}
	d.WantBytes(t, q1, big, bytes.Repeat(pat, w.FillStage+2), "large staged fill")

	for _, x := range []struct {
		d    plugin.Device
		p    uintptr
		kind ol.AllocType
	}{{g0, a, ol.AllocTypeDevice}, {g0, b, ol.AllocTypeDevice}, {g1, c, ol.AllocTypeDevice}, {g0, h, ol.AllocTypeHost}, {g1, m, ol.AllocTypeManaged}, {g1, big, ol.AllocTypeDevice}} {
		if err := x.d.Free(x.p, x.kind); err != nil {
			t.Errorf("free %#x: %v", x.p, err)
		}
	}
	if w.DoubleFree != "" {
		if err := g0.Free(a, ol.AllocTypeDevice); err == nil || !strings.Contains(err.Error(), w.DoubleFree) {
			t.Errorf("double free: %v", err)
		}
	}
	for _, x := range []plugin.Queue{q, q1} {
		if err := x.Release(); err != nil {
			t.Fatal(err)
		}
	}
	if w.AfterRelease != nil {
		w.AfterRelease()
	}
	d.Deinit()
}

// why is the driver's last error for a message, if the fixture says.
func (e *Env) why() string {
	if e.F.Why == nil || e.F.Why() == "" {
		return ""
	}
	return " (runtime: " + e.F.Why() + ")"
}

// HostBytes is n bytes of CPU-visible memory at p.
func HostBytes(p uintptr, n int) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), n)
}

// Pageable maps n bytes of ordinary (not page-locked) memory outside Go's
// heap and stack, which the driver does not know.
func Pageable(t *testing.T, n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(b) })
	return b
}

// WantBytes syncs q and checks that device memory at p holds want.
func (e *Env) WantBytes(t *testing.T, q plugin.Queue, p uintptr, want []byte, what string) {
	t.Helper()
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(e.Peek(p, len(want)), want) {
		t.Errorf("%s: wrong bytes", what)
	}
}

// ProgramsWant is what differs between backends in CheckProgramsAndLaunches.
type ProgramsWant struct {
	// CopyIn stages the kernel's input with a queued copy from host
	// memory, which the launch must wait for, rather than with Poke.
	CopyIn bool
	// TooMuchShared is how a launch with 200 KiB of dynamic shared memory
	// is refused; TooLargeGroup and NoGroups how a group of 2048 and a
	// grid of no groups are ("" for the GPU backends' words).
	TooMuchShared, TooLargeGroup, NoGroups string
	// MaxGroupSize is the reduction kernel's (0 for the GPUs' 1024).
	MaxGroupSize uint64
	// SharedUnlimited and LaunchAfterUnload, where not "", are why the
	// backend accepts 200 KiB of dynamic shared memory, and a launch of a
	// kernel whose program was unloaded while a launch of it is still
	// queued (those checks are then skipped with the reason).
	SharedUnlimited, LaunchAfterUnload string
	// Kernel checks the reduction kernel k further on q (args are its
	// arguments); Global checks the global at addr of gp further.
	Kernel func(q plugin.Queue, k plugin.Kernel, args []byte)
	Global func(gp plugin.Program, addr uintptr)
	// ProgramKind is what the driver counts for a loaded program (with
	// Fixture.Live).
	ProgramKind string
	// Launched is how many launches the driver has seen (nil: not
	// counted), which must be Launches (Kernel's included).
	Launched func() int
	Launches int
	// LastSync checks the queue's final Sync.
	LastSync bool
}

// CheckProgramsAndLaunches checks that kernels run over the whole grid
// with the argument buffer as given, with barriers and dynamic shared
// memory, within the launch limits; that globals have device addresses
// that copies reach; and that unloading waits for queued launches. It
// deinitialises.
func CheckProgramsAndLaunches(t *testing.T, d *Env, w ProgramsWant) {
	t.Helper()
	g := d.Devices[0]
	prog, k := d.loadKernel(t, g, "localmem_reduction", "localmem_reduction")
	if _, err := prog.Kernel("nope"); err == nil || !strings.Contains(err.Error(), `no kernel named "nope"`) {
		t.Errorf("unknown kernel: %v", err)
	}
	wantMax := w.MaxGroupSize
	if wantMax == 0 {
		wantMax = 1024
	}
	if n, err := k.MaxGroupSize(0); err != nil || n != wantMax {
		t.Errorf("MaxGroupSize = %d, %v, want %d", n, err, wantMax)
	}
	const groups, size = 8, 128
	in := MustAlloc(t, g, ol.AllocTypeDevice, 4*groups*size)
	out := MustAlloc(t, g, ol.AllocTypeDevice, 4*groups)
	host := MustAlloc(t, g, ol.AllocTypeHost, 4*groups*size)
	vals := make([]byte, 4*groups*size)
	want := make([]uint32, groups)
	for i := 0; i < groups*size; i++ {
		v := uint32(i*i%1000 + 1)
		binary.LittleEndian.PutUint32(vals[4*i:], v)
		want[i/size] += v
	}
	q := MustQueue(t, g)
	if w.CopyIn {
		// a copy first: the launch waits for it
		copy(HostBytes(host, len(vals)), vals)
		if err := q.CopyToDevice(in, g, host, uint64(len(vals))); err != nil {
			t.Fatal(err)
		}
	} else {
		d.Poke(in, vals)
	}
	args := Args(uint64(in), uint64(out))
	if err := q.Launch(k, args, Size1D(groups, size, 4*size)); err != nil {
		t.Fatal(err)
	}
	if err := q.Sync(); err != nil {
		t.Fatalf("%v%s", err, d.why())
	}
	got := d.Peek(out, 4*groups)
	for i := range want {
		if v := binary.LittleEndian.Uint32(got[4*i:]); v != want[i] {
			t.Errorf("group %d: sum %d, want %d", i, v, want[i])
		}
	}
	for _, tc := range []struct {
		size plugin.LaunchSize
		want string
	}{
		{Size1D(1, 2048, 0), or(w.TooLargeGroup, "GroupSize.x 2048 exceeds the maximum 1024")},
		{Size1D(0, 1, 0), or(w.NoGroups, "NumGroups.x is 0")},
		{Size1D(1, 64, 200<<10), w.TooMuchShared},
	} {
		if tc.size.DynSharedMemory != 0 && w.SharedUnlimited != "" {
			t.Run("200 KiB of dynamic shared memory is refused", func(t *testing.T) { t.Skip(w.SharedUnlimited) })
			continue
		}
		if err := q.Launch(k, args, tc.size); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("launch %+v: %v, want %q", tc.size, err, tc.want)
		}
	}
	if w.Kernel != nil {
		w.Kernel(q, k, args)
	}

	// a global: written by a kernel, read back at its device address
	gp, write := d.loadKernel(t, g, "global", "write")
	addr, gsize, err := gp.Global("global")
	if err != nil || gsize != 256 {
		t.Fatalf("Global: %#x %d %v", addr, gsize, err)
	}
	if _, _, err := gp.Global("nope"); err == nil || !strings.Contains(err.Error(), `no global variable named "nope"`) {
		t.Errorf("unknown global: %v", err)
	}
	if w.Global != nil {
		w.Global(gp, addr)
	}
	if err := q.Launch(write, Args(0), Size1D(1, 64, 0)); err != nil {
		t.Fatal(err)
	}
	if err := q.CopyFromDevice(host, addr, g, 256); err != nil {
		t.Fatal(err)
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	hb := HostBytes(host, 256)
	for i := 0; i < 64; i++ {
		if v := binary.LittleEndian.Uint32(hb[4*i:]); v != uint32(2*i) {
			t.Fatalf("global[%d] = %d, want %d", i, v, 2*i)
		}
	}

	// unloading while a launch is queued waits for it
	gate := make(chan struct{})
	if err := q.HostCall(func() error { <-gate; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := q.Launch(write, Args(0), Size1D(1, 64, 0)); err != nil {
		t.Fatal(err)
	}
	if err := gp.Unload(); err != nil {
		t.Fatal(err)
	}
	if n := d.live(w.ProgramKind); d.F.Live != nil && n != 2 {
		t.Errorf("%d of kind %s loaded while a launch of one is queued, want 2", n, w.ProgramKind)
	}
	if w.LaunchAfterUnload != "" {
		t.Run("launch after Unload is refused", func(t *testing.T) { t.Skip(w.LaunchAfterUnload) })
	} else if err := q.Launch(write, Args(0), Size1D(1, 64, 0)); err == nil || !strings.Contains(err.Error(), "was destroyed") {
		t.Errorf("launch after Unload: %v", err)
	}
	close(gate)
	if err := prog.Unload(); err != nil {
		t.Fatal(err)
	}
	if err := q.Sync(); err != nil && w.LastSync {
		t.Fatal(err)
	}
	_ = q.Release()
	for _, p := range []uintptr{in, out} {
		_ = g.Free(p, ol.AllocTypeDevice)
	}
	_ = g.Free(host, ol.AllocTypeHost)
	d.Deinit()
	if n := d.live(w.ProgramKind); d.F.Live != nil && n != 0 {
		t.Errorf("%d of kind %s left after Deinit", n, w.ProgramKind)
	}
	if w.Launched != nil {
		if n := w.Launched(); n != w.Launches {
			t.Errorf("the driver ran %d kernels, want %d", n, w.Launches)
		}
	}
}

func or(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

// loadKernel loads kernel source (tests/c/kernels) as an image of the
// backend on g and finds kernel name in it.
func (e *Env) loadKernel(t *testing.T, g plugin.Device, source, name string) (plugin.Program, plugin.Kernel) {
	t.Helper()
	prog, err := g.LoadProgram(e.F.Image(t, source))
	if err != nil {
		t.Fatal(err)
	}
	k, err := prog.Kernel(name)
	if err != nil {
		t.Fatal(err)
	}
	return prog, k
}

// Args is a kernel argument buffer of 64-bit words.
func Args(words ...uint64) []byte {
	b := make([]byte, 8*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint64(b[8*i:], w)
	}
	return b
}

// Size1D is a one-dimensional launch of groups groups of size.
func Size1D(groups, size uint32, dyn uint64) plugin.LaunchSize {
	return plugin.LaunchSize{
		NumGroups: ol.Dimensions{X: groups, Y: 1, Z: 1}, GroupSize: ol.Dimensions{X: size, Y: 1, Z: 1}, DynSharedMemory: dyn,
	}
}

// CheckHotPathAllocatesNothing checks that a round of launch, asynchronous
// copies, a fill, record, wait, release of the event and sync makes no Go
// allocation; it deinitialises.
func CheckHotPathAllocatesNothing(t *testing.T, d *Env) {
	t.Helper()
	g := d.Devices[0]
	prog, k := d.loadKernel(t, g, "noargs", "noargs")
	dev := MustAlloc(t, g, ol.AllocTypeDevice, 4096)
	host := MustAlloc(t, g, ol.AllocTypeHost, 4096)
	q, q2 := MustQueue(t, g), MustQueue(t, g)
	pat := []byte{1, 2, 3, 4}
	size := Size1D(1, 1, 0)
	round := func() {
		if err := q.Launch(k, nil, size); err != nil {
			t.Fatal(err)
		}
		if err := q.CopyToDevice(dev, g, host, 4096); err != nil {
			t.Fatal(err)
		}
		if err := q.Fill(dev, unsafe.Pointer(&pat[0]), 4, 4096); err != nil {
			t.Fatal(err)
		}
		if err := q.CopyFromDevice(host, dev, g, 4096); err != nil {
			t.Fatal(err)
		}
		e, err := q.Record()
		if err != nil {
			t.Fatal(err)
		}
		if err := q2.Wait(e); err != nil {
			t.Fatal(err)
		}
		if err := e.Release(); err != nil {
			t.Fatal(err)
		}
		if err := q2.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := q.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 100; i++ {
		round() // warm: pools and the wait list reach their size
	}
	if n := testing.AllocsPerRun(200, round); n != 0 {
		t.Errorf("%.1f Go allocations per round of launch, copies, fill, record, wait and sync, want 0", n)
	}
	_ = q.Release()
	_ = q2.Release()
	_ = prog.Unload()
	_ = g.Free(dev, ol.AllocTypeDevice)
	_ = g.Free(host, ol.AllocTypeHost)
	d.Deinit()
}

// RegisterWant is what differs between backends in CheckRegister.
type RegisterWant struct {
	// Buf is 8192 bytes of host memory to register (0: pageable memory
	// the suite maps).
	Buf uintptr
	// Locked is what the driver counts for a locked range (Fixture.Live).
	Locked string
	// SameAddress checks that a contained range registers at its own
	// address.
	SameAddress bool
	// Registered checks the double further while the range is registered.
	Registered func()
}

// CheckRegister checks that registration is reference counted: the driver
// locks a range once and unlocks it with the last user. The caller
// deinitialises.
func CheckRegister(t *testing.T, d *Env, w RegisterWant) {
	t.Helper()
	g, p := d.Devices[0], w.Buf
	if p == 0 {
		p = uintptr(unsafe.Pointer(&Pageable(t, 8192)[0]))
	}
	if d.F.Live == nil {
		t.Run("driver lock counts", func(t *testing.T) { t.Skip("the backend does not count its locked ranges (Fixture.Live)") })
	}
	for i := 0; i < 2; i++ {
		if got, err := g.Register(p, 4096); err != nil || got != p {
			t.Fatalf("Register: %#x %v", got, err)
		}
	}
	if got, err := g.Register(p+100, 100); err != nil || (w.SameAddress && got != p+100) {
		t.Fatalf("a contained range: %#x %v", got, err)
	}
	if _, err := g.Register(p+4000, 200); err == nil || !strings.Contains(err.Error(), "partial overlapping") {
		t.Errorf("partial overlap: %v", err)
	}
	if n := d.live(w.Locked); d.F.Live != nil && n != 1 {
		t.Errorf("%d ranges locked in the driver, want 1", n)
	}
	if w.Registered != nil {
		w.Registered()
	}
	for i := 0; i < 3; i++ {
		if err := g.Unregister(p); err != nil {
			t.Fatal(err)
		}
	}
	if n := d.live(w.Locked); d.F.Live != nil && n != 0 {
		t.Errorf("%d ranges still locked", n)
	}
	if err := g.Unregister(p); err == nil || !strings.Contains(err.Error(), "cannot find locked buffer") {
		t.Errorf("unregistering again: %v", err)
	}
}
