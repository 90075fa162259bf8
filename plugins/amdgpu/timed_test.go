package amdgpu

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/contract"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// openWithout is newDouble with a runtime that lacks the symbols missing.
func openWithout(t *testing.T, name string, missing ...string) *double {
	t.Helper()
	return fakedriver.OpenTyped[*Device](t, &fake, name, missing...)
}

func wantErr(t *testing.T, err error, code ol.Errc, text, what string) {
	t.Helper()
	var oe *ol.Error
	if !errors.As(err, &oe) || oe.Code != code || !strings.Contains(oe.Details, text) {
		t.Errorf("%s: %v, want %v with %q", what, err, code, text)
	}
}

// A timed pair around a kernel, a copy and 20 ms of queue work measures
// at least that (the double stamps a barrier packet's signal when the
// queue runs it, as a profiling queue does); plain events and another
// platform's are refused (what every backend does is the contract suite's
// timed group); one
// behind a blocked host call has not completed, and another queue can
// wait for it; events of the two GPUs compare (system timestamps).
func TestFakeTimedEvents(t *testing.T) {
	d := newDouble(t, "libhsa-timed.so")
	g := d.Dev[0]
	q := contract.MustQueue(t, g)

	prog, k := d.LoadKernel(t, g, "noargs", "noargs")
	buf, err := g.Alloc(ol.AllocTypeDevice, 4096)
	if err != nil {
		t.Fatal(err)
	}
	src := make([]byte, 4096)
	src[100] = 9
	start := contract.RecordTimed(t, q)
	if err := q.Launch(k, nil, contract.Size1D(4, 64, 0)); err != nil {
		t.Fatal(err)
	}
	if err := q.CopyToDevice(buf, g, uintptr(unsafe.Pointer(&src[0])), 4096); err != nil {
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
		t.Errorf("a kernel, a copy and a %v host call: %v ms, %v", nap, ms, err)
	}
	if back, err := start.ElapsedSince(end); err != nil || back != -ms {
		t.Errorf("reverse order: %v ms, %v", back, err)
	}
	if got := d.Peek(buf+100, 1); got[0] != 9 {
		t.Errorf("the copy between the events: byte %d", got[0])
	}

	plain, err := q.Record()
	if err != nil {
		t.Fatal(err)
	}
	_, err = end.ElapsedSince(plain.(plugin.TimedEvent))
	wantErr(t, err, ol.ErrcInvalidArgument, "not created for profiling", "a plain event as the start")
	_, err = plain.(plugin.TimedEvent).ElapsedSince(start)
	wantErr(t, err, ol.ErrcInvalidArgument, "not created for profiling", "a plain event as the end")
	_, err = end.ElapsedSince(contract.ForeignTimed{Event: start})
	wantErr(t, err, ol.ErrcInvalidArgument, "not an event of the AMDGPU platform", "another platform's event")

	gate := make(chan struct{})
	if err := q.HostCall(func() error { <-gate; return nil }); err != nil {
		t.Fatal(err)
	}
	late := contract.RecordTimed(t, q)
	_, err = late.ElapsedSince(end)
	wantErr(t, err, ol.ErrcInvalidArgument, "has not completed", "a pending event")
	q1 := contract.MustQueue(t, d.Dev[1])
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
	if ms, err := after.ElapsedSince(late); err != nil || ms < 0 {
		t.Errorf("an event of the other GPU after the one it waited for: %v ms, %v", ms, err)
	}
	for _, e := range []plugin.Event{start, end, plain, late, after} {
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
	_ = prog.Unload()
	d.Deinit()
}

// Without the profiling calls profiling events are UNSUPPORTED.
func TestFakeTimedEventsNeedTheRuntime(t *testing.T) {
	d := openWithout(t, "libhsa-notiming.so", "hsa_amd_profiling_get_dispatch_time")
	q := contract.MustQueue(t, d.Dev[0])
	_, err := q.(plugin.TimedQueue).RecordTimed()
	wantErr(t, err, ol.ErrcUnsupported, "hsa_amd_profiling_get_dispatch_time", "RecordTimed")
	_ = q.Release()
	d.Deinit()
}

// Managed memory (fine-grained system memory) does not move: its prefetch
// reaches no runtime call and the queue's work keeps its order and bytes.
// Memory the runtime does not know is hsa_amd_svm_prefetch_async after the
// work before it (held here by a blocked host call), toward the GPU or the
// CPU agent; a runtime without the call makes every prefetch a no-op.
func TestFakePrefetch(t *testing.T) {
	d := newDouble(t, "libhsa-prefetch.so")
	g := d.Dev[0]
	q := contract.MustQueue(t, g)
	pq := q.(plugin.PrefetchQueue)
	count := func() int { return int(int64(d.Call("fake_hsa_prefetches"))) }
	last := func() int { return int(int32(d.Call("fake_hsa_prefetch_last"))) }

	m, err := g.Alloc(ol.AllocTypeManaged, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	pat := uint32(0x5a5a5a5a)
	if err := q.Fill(m, unsafe.Pointer(&pat), 4, 1<<16); err != nil {
		t.Fatal(err)
	}
	if err := pq.Prefetch(m, g, 1<<16, true); err != nil {
		t.Fatal(err)
	}
	one := uint8(0x11)
	if err := q.Fill(m+8, unsafe.Pointer(&one), 1, 4); err != nil {
		t.Fatal(err)
	}
	if err := pq.Prefetch(m, g, 1<<16, false); err != nil {
		t.Fatal(err)
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	for i, x := range fakedriver.HostBytes(m, 1<<16) {
		want := byte(0x5a)
		if i >= 8 && i < 12 {
			want = 0x11
		}
		if x != want {
			t.Fatalf("managed byte %d = %#x, want %#x", i, x, want)
		}
	}
	if n := count(); n != 0 {
		t.Errorf("%d prefetches of the runtime's own memory reached the runtime", n)
	}

	sys := fakedriver.Pageable(t, 1<<16)
	gate := make(chan struct{})
	if err := q.HostCall(func() error { <-gate; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := pq.Prefetch(uintptr(unsafe.Pointer(&sys[0])), d.Dev[1], 1<<16, true); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if n := count(); n != 0 {
		t.Errorf("a prefetch ran before the blocked host call before it")
	}
	close(gate)
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	if n, to := count(), last(); n != 1 || to != 1 {
		t.Errorf("%d prefetches, the last to agent %d; want 1 to GPU 1", n, to)
	}
	if err := pq.Prefetch(uintptr(unsafe.Pointer(&sys[0])), g, 4096, false); err != nil {
		t.Fatal(err)
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	if n, to := count(), last(); n != 2 || to != -1 {
		t.Errorf("%d prefetches, the last to agent %d; want 2, the last to the CPU (-1)", n, to)
	}
	_ = g.Free(m, ol.AllocTypeManaged)
	_ = q.Release()
	d.Deinit()

	d = openWithout(t, "libhsa-noprefetch.so", "hsa_amd_svm_prefetch_async")
	q = contract.MustQueue(t, d.Dev[0])
	if err := q.(plugin.PrefetchQueue).Prefetch(uintptr(unsafe.Pointer(&sys[0])), d.Dev[0], 4096, true); err != nil {
		t.Errorf("a prefetch without hsa_amd_svm_prefetch_async: %v", err)
	}
	_ = q.Sync()
	_ = q.Release()
	d.Deinit()
}

// Params are the explicit arguments of the code object's metadata: the
// double's code objects describe each kernel's argument struct by value,
// as clang does (tests/c/kernels/multiargs.c: 56 bytes), and no hidden
// argument.
func TestFakeKernelParams(t *testing.T) {
	d := newDouble(t, "libhsa-params.so")
	for _, c := range []struct {
		src, name string
		want      []plugin.Param
	}{{"multiargs", "multiargs", []plugin.Param{{Offset: 0, Size: 56}}}, {"noargs", "noargs", nil}} {
		prog, k := d.LoadKernel(t, d.Dev[0], c.src, c.name)
		got, ok := k.(plugin.ParamKernel).Params()
		if !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Params() = %v, %v; want %v", c.name, got, ok, c.want)
		}
		_ = prog.Unload()
	}
	d.Deinit()
}
