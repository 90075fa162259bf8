package cuda

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/contract"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// openWithout is newDouble with a driver that lacks the symbols missing.
func openWithout(t *testing.T, name string, missing ...string) *double {
	t.Helper()
	return fakedriver.OpenTyped[*Device](t, &fake, name, missing...)
}

func wantInvalid(t *testing.T, err error, text, what string) {
	t.Helper()
	var oe *ol.Error
	if !errors.As(err, &oe) || oe.Code != ol.ErrcInvalidArgument || !strings.Contains(oe.Details, text) {
		t.Errorf("%s: %v, want INVALID_ARGUMENT with %q", what, err, text)
	}
}

// A timed pair around a copy and 20 ms of queue work measures at least
// that (the double takes the time when the stream gets to the event, as
// the GPU does); events that are not profiling events, of another device
// or of another platform are refused; one held back behind a host call has
// not completed; a timed event is an event other queues can wait for; the
// driver holds no event after Deinit (timing events are destroyed, not
// pooled). What every backend does is the contract suite's timed group.
func TestFakeTimedEvents(t *testing.T) {
	d := newDouble(t, "libcuda-timed.so")
	g := d.Dev[0]
	q := contract.MustQueue(t, g)

	buf, err := g.Alloc(ol.AllocTypeDevice, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	src := fakedriver.Pageable(t, 1<<20)
	src[12345] = 7
	start := contract.RecordTimed(t, q)
	if err := q.CopyToDevice(buf, g, uintptr(unsafe.Pointer(&src[0])), 1<<20); err != nil {
		t.Fatal(err)
	}
	const nap = 20 * time.Millisecond
	if err := q.HostCall(func() error { time.Sleep(nap); return nil }); err != nil {
		t.Fatal(err)
	}
	end := contract.RecordTimed(t, q)
	if err := end.Sync(); err != nil || !start.Done() {
		t.Fatalf("Sync: %v, start done %v", err, start.Done())
	}
	ms, err := end.ElapsedSince(start)
	if err != nil || ms < float32(nap/time.Millisecond)-0.5 || ms > 5000 {
		t.Errorf("a copy and a %v host call: %v ms, %v", nap, ms, err)
	}
	if back, err := start.ElapsedSince(end); err != nil || back > -float32(nap/time.Millisecond)+0.5 {
		t.Errorf("reverse order: %v ms, %v", back, err)
	}
	if got := d.Peek(buf+12345, 1); got[0] != 7 {
		t.Errorf("the copy between the events: byte %d", got[0])
	}

	plain, err := q.Record()
	if err != nil {
		t.Fatal(err)
	}
	_, err = end.ElapsedSince(plain.(plugin.TimedEvent))
	wantInvalid(t, err, "not created for profiling", "a plain event as the start")
	_, err = plain.(plugin.TimedEvent).ElapsedSince(start)
	wantInvalid(t, err, "not created for profiling", "a plain event as the end")
	_, err = end.ElapsedSince(contract.ForeignTimed{Event: start})
	wantInvalid(t, err, "not an event of the CUDA platform", "another platform's event")
	q1 := contract.MustQueue(t, d.Dev[1])
	other := contract.RecordTimed(t, q1)
	_, err = end.ElapsedSince(other)
	wantInvalid(t, err, "two devices", "an event of the other GPU")

	// held back behind a host call: not recorded, not complete
	gate := make(chan struct{})
	if err := q.HostCall(func() error { <-gate; return nil }); err != nil {
		t.Fatal(err)
	}
	late := contract.RecordTimed(t, q)
	if late.Done() {
		t.Error("an event behind a blocked host call is done")
	}
	_, err = late.ElapsedSince(end)
	wantInvalid(t, err, "has not completed", "a pending event")
	// another queue waits for the timed event
	if err := q1.Wait(late); err != nil {
		t.Fatal(err)
	}
	after := contract.RecordTimed(t, q1)
	close(gate)
	if err := q1.Sync(); err != nil {
		t.Fatal(err)
	}
	if !late.Done() {
		t.Error("q1 passed its wait before the event it waited for")
	}
	if ms, err := late.ElapsedSince(end); err != nil || ms < 0 {
		t.Errorf("after the gate: %v ms, %v", ms, err)
	}
	if ms, err := after.ElapsedSince(other); err != nil || ms < 0 {
		t.Errorf("q1's events: %v ms, %v", ms, err)
	}
	for _, e := range []plugin.Event{start, end, plain, other, late, after} {
		if err := e.Release(); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	_ = g.Free(buf, ol.AllocTypeDevice)
	_ = q.Release()
	_ = q1.Release()
	d.Deinit()
}

// Without cuEventElapsedTime profiling events are UNSUPPORTED.
func TestFakeTimedEventsNeedTheDriver(t *testing.T) {
	d := openWithout(t, "libcuda-notiming.so", "cuEventElapsedTime")
	q := contract.MustQueue(t, d.Dev[0])
	_, err := q.(plugin.TimedQueue).RecordTimed()
	var oe *ol.Error
	if !errors.As(err, &oe) || oe.Code != ol.ErrcUnsupported {
		t.Errorf("RecordTimed without cuEventElapsedTime: %v", err)
	}
	_ = q.Release()
	d.Deinit()
}

// checkPrefetch prefetches managed memory behind a blocked host call: the
// double sees the prefetches only once the work before them has run, in
// order with the fills around them, whose bytes stay right; memory that is
// not managed is left alone without an error.
func checkPrefetch(t *testing.T, d *double) {
	g := d.Dev[0]
	q := contract.MustQueue(t, g)
	prefetches := func() int { return int(int32(d.Call("fake_cuda_prefetches"))) }
	lastDev := func() int { return int(int32(d.Call("fake_cuda_prefetch_last_device"))) }
	m, err := g.Alloc(ol.AllocTypeManaged, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := g.Alloc(ol.AllocTypeDevice, 4096)
	if err != nil {
		t.Fatal(err)
	}
	before := prefetches()
	pq := q.(plugin.PrefetchQueue)
	pat := uint32(0xa5a5a5a5)
	if err := q.Fill(m, unsafe.Pointer(&pat), 4, 1<<16); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	if err := q.HostCall(func() error { <-gate; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := pq.Prefetch(m, d.Dev[1], 1<<16, true); err != nil {
		t.Fatal(err)
	}
	one := uint8(0x3c)
	if err := q.Fill(m+100, unsafe.Pointer(&one), 1, 8); err != nil {
		t.Fatal(err)
	}
	if err := pq.Prefetch(m, g, 1<<16, false); err != nil {
		t.Fatal(err)
	}
	// not managed: a hint that cannot move anything
	if err := pq.Prefetch(dev, g, 4096, true); err != nil {
		t.Errorf("prefetch of device memory: %v", err)
	}
	host := fakedriver.Pageable(t, 4096)
	if err := pq.Prefetch(uintptr(unsafe.Pointer(&host[0])), g, 4096, true); err != nil {
		t.Errorf("prefetch of pageable memory: %v", err)
	}
	time.Sleep(5 * time.Millisecond)
	if n := prefetches(); n != before {
		t.Errorf("%d prefetches ran before the work ahead of them", n-before)
	}
	close(gate)
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := prefetches(); n != before+2 {
		t.Errorf("%d prefetches ran, want 2", n-before)
	}
	if ld := lastDev(); ld != -1 {
		t.Errorf("the last prefetch went to device %d, want the host (-1)", ld)
	}
	b := fakedriver.HostBytes(m, 1<<16)
	for i, x := range b {
		want := byte(0xa5)
		if i >= 100 && i < 108 {
			want = 0x3c
		}
		if x != want {
			t.Fatalf("managed byte %d = %#x, want %#x", i, x, want)
		}
	}
	_ = g.Free(m, ol.AllocTypeManaged)
	_ = g.Free(dev, ol.AllocTypeDevice)
	_ = q.Release()
	d.Deinit()
}

func TestFakePrefetch(t *testing.T) { checkPrefetch(t, newDouble(t, "libcuda-prefetch.so")) }

// A driver without the original cuMemPrefetchAsync ABI is called through
// cuMemPrefetchAsync_v2 (a CUmemLocation).
func TestFakePrefetchV2(t *testing.T) {
	checkPrefetch(t, openWithout(t, "libcuda-prefetch2.so", "cuMemPrefetchAsync"))
}

// Params are what cuFuncGetParamInfo says: multiargs takes its 56-byte
// struct by value (tests/c/kernels/multiargs.c), noargs nothing; without
// the call the plugin cannot say.
func TestFakeKernelParams(t *testing.T) {
	d := newDouble(t, "libcuda-params.so")
	for _, c := range []struct {
		src, name string
		want      []plugin.Param
	}{{"multiargs", "multiargs", []plugin.Param{{Offset: 0, Size: 56}}}, {"noargs", "noargs", nil}} {
		prog, k := d.LoadKernel(t, d.Dev[0], c.src, c.name)
		got, ok := k.(plugin.ParamKernel).Params()
		if !ok || len(got) != len(c.want) || (len(got) > 0 && got[0] != c.want[0]) {
			t.Errorf("%s: Params() = %v, %v; want %v", c.name, got, ok, c.want)
		}
		_ = prog.Unload()
	}
	d.Deinit()

	d = openWithout(t, "libcuda-noparams.so", "cuFuncGetParamInfo")
	prog, k := d.LoadKernel(t, d.Dev[0], "multiargs", "multiargs")
	if got, ok := k.(plugin.ParamKernel).Params(); ok {
		t.Errorf("without cuFuncGetParamInfo: Params() = %v, true", got)
	}
	_ = prog.Unload()
	d.Deinit()
}
