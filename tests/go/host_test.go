package tests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/impl"
	"github.com/liboffload-go/liboffload-go/tests/go/ccb"
)

// buildKernels compiles testdata/kernels.c into a shared object and returns
// its bytes.
func buildKernels(t *testing.T) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "kernels.so")
	cmd := exec.Command("gcc", "-std=gnu17", "-O2", "-fPIC", "-shared", "-Wall", "-Werror", "-I../../include", "testdata/kernels.c", "-o", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compiling kernels: %v\n%s", err, msg)
	}
	img, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

type hostEnv struct {
	t    *testing.T
	dev  uintptr
	prog uintptr
	img  []byte
}

func newHostEnv(t *testing.T) *hostEnv {
	initLib(t)
	e := &hostEnv{t: t, dev: hostDevice(t), img: buildKernels(t)}
	e.prog = e.load()
	return e
}

func (e *hostEnv) load() uintptr {
	var p uintptr
	mustOK(e.t, "olCreateProgram", impl.OlCreateProgram(e.dev, unsafe.Pointer(&e.img[0]), uint64(len(e.img)), unsafe.Pointer(&p), nil))
	e.t.Cleanup(func() { impl.OlDestroyProgram(p, nil) })
	return p
}

func (e *hostEnv) symbol(prog uintptr, name string, kind ol.SymbolKind) uintptr {
	e.t.Helper()
	cname := append([]byte(name), 0)
	var s uintptr
	mustOK(e.t, "olGetSymbol "+name, impl.OlGetSymbol(prog, unsafe.Pointer(&cname[0]), uint32(kind), unsafe.Pointer(&s), nil))
	return s
}

func (e *hostEnv) alloc(n int) unsafe.Pointer {
	var p unsafe.Pointer
	mustOK(e.t, "olMemAlloc", impl.OlMemAlloc(e.dev, uint32(ol.AllocTypeManaged), uint64(n), unsafe.Pointer(&p), nil))
	e.t.Cleanup(func() { impl.OlMemFree(p, nil) })
	clear(unsafe.Slice((*byte)(p), n)) // device memory starts undefined, as on GPUs
	return p
}

func (e *hostEnv) queue() uintptr {
	var q uintptr
	mustOK(e.t, "olCreateQueue", impl.OlCreateQueue(e.dev, unsafe.Pointer(&q), nil))
	return q
}

func launchArgs(groups, size [3]uint32, dyn uint64) *ol.KernelLaunchSizeArgs {
	return &ol.KernelLaunchSizeArgs{Dimensions: 3, NumGroups: ol.Dimensions{X: groups[0], Y: groups[1], Z: groups[2]},
		GroupSize: ol.Dimensions{X: size[0], Y: size[1], Z: size[2]}, DynSharedMemory: dyn}
}

func (e *hostEnv) launch(q, k uintptr, args unsafe.Pointer, argSize uintptr, ls *ol.KernelLaunchSizeArgs) uintptr {
	return impl.OlLaunchKernel(q, e.dev, k, args, uint64(argSize), unsafe.Pointer(ls), nil)
}

func TestKernelGridsCoverEveryItemOnce(t *testing.T) {
	e := newHostEnv(t)
	k := e.symbol(e.prog, "write_ids", ol.SymbolKindKernel)
	for _, c := range []struct{ groups, size [3]uint32 }{
		{[3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}},
		{[3]uint32{7, 1, 1}, [3]uint32{33, 1, 1}},
		{[3]uint32{3, 5, 1}, [3]uint32{4, 8, 1}},
		{[3]uint32{2, 3, 4}, [3]uint32{5, 2, 3}},
	} {
		n := int(c.groups[0] * c.groups[1] * c.groups[2] * c.size[0] * c.size[1] * c.size[2])
		out := e.alloc(n * 4)
		args := struct{ out unsafe.Pointer }{out}
		mustOK(t, "launch", e.launch(0, k, unsafe.Pointer(&args), unsafe.Sizeof(args), launchArgs(c.groups, c.size, 0)))
		for i, v := range unsafe.Slice((*uint32)(out), n) {
			if v != uint32(i+1) {
				t.Fatalf("grid %v x %v: item %d wrote %d", c.groups, c.size, i, v)
			}
		}
	}
}

func TestBarrierReduction(t *testing.T) {
	e := newHostEnv(t)
	k := e.symbol(e.prog, "group_sum", ol.SymbolKindKernel)
	for _, gs := range []uint32{1, 32, 256, 1024} {
		const groups = 5
		in := e.alloc(int(gs) * groups * 4)
		out := e.alloc(groups * 4)
		vals := unsafe.Slice((*uint32)(in), int(gs)*groups)
		for i := range vals {
			vals[i] = uint32(i * 3)
		}
		args := struct{ in, out unsafe.Pointer }{in, out}
		q := e.queue()
		mustOK(t, "launch", e.launch(q, k, unsafe.Pointer(&args), unsafe.Sizeof(args), launchArgs([3]uint32{groups, 1, 1}, [3]uint32{gs, 1, 1}, uint64(gs)*4)))
		mustOK(t, "sync", impl.OlSyncQueue(q, nil))
		mustOK(t, "destroy", impl.OlDestroyQueue(q, nil))
		for g, got := range unsafe.Slice((*uint32)(out), groups) {
			var want uint32
			for i := 0; i < int(gs); i++ {
				want += vals[g*int(gs)+i]
			}
			if got != want {
				t.Fatalf("group size %d, group %d: sum %d, want %d", gs, g, got, want)
			}
		}
	}
}

func TestLaunchErrors(t *testing.T) {
	e := newHostEnv(t)
	k := e.symbol(e.prog, "write_ids", ol.SymbolKindKernel)
	g := e.symbol(e.prog, "counter", ol.SymbolKindGlobalVariable)
	out := e.alloc(4)
	args := struct{ out unsafe.Pointer }{out}
	one := [3]uint32{1, 1, 1}
	wantErr(t, "zero groups", e.launch(0, k, unsafe.Pointer(&args), 8, launchArgs([3]uint32{1, 0, 1}, one, 0)), ol.ErrcInvalidSize, "NumGroups.y is 0")
	wantErr(t, "huge group", e.launch(0, k, unsafe.Pointer(&args), 8, launchArgs(one, [3]uint32{64, 32, 1}, 0)), ol.ErrcInvalidSize, "2048 work-items")
	wantErr(t, "too much local memory", e.launch(0, k, unsafe.Pointer(&args), 8, launchArgs(one, one, 2<<20)), ol.ErrcInvalidSize, "DynSharedMemory 2097152")
	wantErr(t, "short arguments", e.launch(0, k, unsafe.Pointer(&args), 4, launchArgs(one, one, 0)), ol.ErrcInvalidArgument, `takes 8 bytes of arguments, but ArgumentsSize is 4`)
	wantErr(t, "a global", e.launch(0, g, unsafe.Pointer(&args), 8, launchArgs(one, one, 0)), ol.ErrcSymbolKind, "provided symbol is not a kernel")
	name := []byte("not_a_kernel\x00")
	var s uintptr
	wantErr(t, "plain function", impl.OlGetSymbol(e.prog, unsafe.Pointer(&name[0]), uint32(ol.SymbolKindKernel), unsafe.Pointer(&s), nil), ol.ErrcNotFound, "not declared with OL_KERNEL")
}

func TestQueueOrderEventsAndBlocking(t *testing.T) {
	e := newHostEnv(t)
	k := e.symbol(e.prog, "write_ids", ol.SymbolKindKernel)
	gate := ccb.NewGate()
	defer gate.Free()
	out := e.alloc(64 * 4)
	args := struct{ out unsafe.Pointer }{out}
	q := e.queue()
	mustOK(t, "host function", impl.OlLaunchHostFunction(q, gate.Callback(), gate.User(), nil))
	mustOK(t, "launch", e.launch(q, k, unsafe.Pointer(&args), unsafe.Sizeof(args), launchArgs([3]uint32{1, 1, 1}, [3]uint32{64, 1, 1}, 0)))
	var ev uintptr
	mustOK(t, "event", impl.OlCreateEvent(q, unsafe.Pointer(&ev), nil))
	for !gate.Entered() {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	var empty, done bool
	mustOK(t, "EMPTY", impl.OlGetQueueInfo(q, uint32(ol.QueueInfoEmpty), 1, unsafe.Pointer(&empty), nil))
	mustOK(t, "IS_COMPLETE", impl.OlGetEventInfo(ev, uint32(ol.EventInfoIsComplete), 1, unsafe.Pointer(&done), nil))
	if empty || done {
		t.Fatalf("while blocked: EMPTY %v, IS_COMPLETE %v", empty, done)
	}
	if got := unsafe.Slice((*uint32)(out), 64)[5]; got != 0 {
		t.Fatalf("the kernel ran before the host function returned (out[5] = %d)", got)
	}
	// destroying the queue does not block, and its event stays usable
	mustOK(t, "destroy while busy", impl.OlDestroyQueue(q, nil))
	gate.Open()
	mustOK(t, "sync event", impl.OlSyncEvent(ev, nil))
	mustOK(t, "sync event again", impl.OlSyncEvent(ev, nil))
	mustOK(t, "IS_COMPLETE", impl.OlGetEventInfo(ev, uint32(ol.EventInfoIsComplete), 1, unsafe.Pointer(&done), nil))
	var evq uintptr
	mustOK(t, "QUEUE", impl.OlGetEventInfo(ev, uint32(ol.EventInfoQueue), 8, unsafe.Pointer(&evq), nil))
	if !done || evq != q || unsafe.Slice((*uint32)(out), 64)[5] != 6 {
		t.Fatalf("after release: complete %v, queue %#x (want %#x), out[5] %d", done, evq, q, unsafe.Slice((*uint32)(out), 64)[5])
	}
	mustOK(t, "destroy event", impl.OlDestroyEvent(ev, nil))
	wantErr(t, "destroyed queue", impl.OlSyncQueue(q, nil), ol.ErrcInvalidQueue, "already destroyed")
}

func TestFibonacciAcrossQueues(t *testing.T) {
	e := newHostEnv(t)
	k := e.symbol(e.prog, "step", ol.SymbolKindKernel)
	const n = 18
	seq := e.alloc(n * 4)
	s := unsafe.Slice((*uint32)(seq), n)
	s[0], s[1] = 0, 1
	gate := ccb.NewGate()
	defer gate.Free()
	var queues []uintptr
	var prev uintptr
	for i := 2; i < n; i++ {
		q := e.queue()
		queues = append(queues, q)
		if i == 2 {
			mustOK(t, "gate", impl.OlLaunchHostFunction(q, gate.Callback(), gate.User(), nil))
		}
		if prev != 0 {
			mustOK(t, "wait", impl.OlWaitEvents(q, unsafe.Pointer(&prev), 1, nil))
		}
		args := struct {
			seq unsafe.Pointer
			idx uint32
		}{seq, uint32(i)}
		mustOK(t, "launch", e.launch(q, k, unsafe.Pointer(&args), unsafe.Sizeof(args), launchArgs([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0)))
		mustOK(t, "event", impl.OlCreateEvent(q, unsafe.Pointer(&prev), nil))
	}
	if s[n-1] != 0 {
		t.Fatal("the chain ran before the first queue was released")
	}
	gate.Open()
	mustOK(t, "sync last", impl.OlSyncEvent(prev, nil))
	for i := 2; i < n; i++ {
		if s[i] != s[i-1]+s[i-2] {
			t.Fatalf("seq[%d] = %d, want %d", i, s[i], s[i-1]+s[i-2])
		}
	}
	for _, q := range queues {
		mustOK(t, "destroy", impl.OlDestroyQueue(q, nil))
	}
	var null uintptr
	wantErr(t, "NULL event", impl.OlWaitEvents(queues[0], unsafe.Pointer(&null), 1, nil), ol.ErrcInvalidQueue, "already destroyed")
}

func TestConcurrentLaunchesOnOneQueue(t *testing.T) {
	e := newHostEnv(t)
	k := e.symbol(e.prog, "write_ids", ol.SymbolKindKernel)
	const threads, items = 20, 128
	out := e.alloc(threads * items * 4)
	q := e.queue()
	var wg sync.WaitGroup
	for i := 0; i < threads; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := struct{ out unsafe.Pointer }{out}
			if r := e.launch(q, k, unsafe.Pointer(&args), unsafe.Sizeof(args), launchArgs([3]uint32{threads, 1, 1}, [3]uint32{items, 1, 1}, 0)); r != 0 {
				t.Error(impl.ResultDetails(r))
			}
		}()
	}
	wg.Wait()
	mustOK(t, "sync", impl.OlSyncQueue(q, nil))
	mustOK(t, "destroy", impl.OlDestroyQueue(q, nil))
	for i, v := range unsafe.Slice((*uint32)(out), threads*items) {
		if v != uint32(threads*(i+1)) {
			t.Fatalf("item %d: %d, want %d (each of %d launches adds i+1)", i, v, threads*(i+1), threads)
		}
	}
}

func TestProgramsHavePrivateGlobals(t *testing.T) {
	e := newHostEnv(t)
	p2 := e.load()
	bump := e.symbol(e.prog, "bump", ol.SymbolKindKernel)
	g1 := e.symbol(e.prog, "counter", ol.SymbolKindGlobalVariable)
	g2 := e.symbol(p2, "counter", ol.SymbolKindGlobalVariable)
	if again := e.symbol(e.prog, "counter", ol.SymbolKindGlobalVariable); again != g1 {
		t.Fatal("repeated lookups must return the same handle")
	}
	for i := 0; i < 3; i++ {
		mustOK(t, "bump", e.launch(0, bump, nil, 0, launchArgs([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0)))
	}
	read := func(g uintptr) uint32 {
		var addr unsafe.Pointer
		var size uint64
		mustOK(t, "ADDRESS", impl.OlGetSymbolInfo(g, uint32(ol.SymbolInfoGlobalVariableAddress), 8, unsafe.Pointer(&addr), nil))
		mustOK(t, "SIZE", impl.OlGetSymbolInfo(g, uint32(ol.SymbolInfoGlobalVariableSize), 8, unsafe.Pointer(&size), nil))
		if size != 4 {
			t.Fatalf("size %d", size)
		}
		var v uint32
		mustOK(t, "copy out", impl.OlMemcpy(0, unsafe.Pointer(&v), e.dev, addr, e.dev, 4, nil))
		return v
	}
	if a, b := read(g1), read(g2); a != 3 || b != 0 {
		t.Fatalf("counters %d and %d, want 3 and 0", a, b)
	}
	wantErr(t, "ADDRESS of a kernel", impl.OlGetSymbolInfo(bump, uint32(ol.SymbolInfoGlobalVariableAddress), 8, unsafe.Pointer(&g1), nil), ol.ErrcSymbolKind,
		"OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS: Expected a symbol of Kind OL_SYMBOL_KIND_GLOBAL_VARIABLE but given a symbol of Kind OL_SYMBOL_KIND_KERNEL")
}

func TestInvalidImages(t *testing.T) {
	initLib(t)
	d := hostDevice(t)
	var p uintptr
	var valid bool
	junk := []byte(strings.Repeat("this is not an ELF file at all. ", 4))
	mustOK(t, "IsValidBinary", impl.OlIsValidBinary(d, unsafe.Pointer(&junk[0]), uint64(len(junk)), unsafe.Pointer(&valid), nil))
	if valid {
		t.Fatal("junk accepted")
	}
	r := impl.OlCreateProgram(d, unsafe.Pointer(&junk[0]), uint64(len(junk)), unsafe.Pointer(&p), nil)
	wantErr(t, "junk", r, ol.ErrcInvalidBinary, "not an ELF image")
	obj := filepath.Join(t.TempDir(), "k.o")
	if msg, err := exec.Command("gcc", "-c", "-fPIC", "-I../../include", "testdata/kernels.c", "-o", obj).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, msg)
	}
	img, _ := os.ReadFile(obj)
	r = impl.OlCreateProgram(d, unsafe.Pointer(&img[0]), uint64(len(img)), unsafe.Pointer(&p), nil)
	wantErr(t, "relocatable object", r, ol.ErrcInvalidBinary, "not a shared object")
	if !strings.Contains(impl.ResultDetails(r), "-shared") {
		t.Fatalf("the message should say how to build it: %q", impl.ResultDetails(r))
	}
}

func TestQueueChurnLeavesNothing(t *testing.T) {
	e := newHostEnv(t)
	bump := e.symbol(e.prog, "bump", ol.SymbolKindKernel)
	for i := 0; i < 5000; i++ {
		q := e.queue()
		mustOK(t, "launch", e.launch(q, bump, nil, 0, launchArgs([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0)))
		mustOK(t, "destroy", impl.OlDestroyQueue(q, nil))
	}
	// olShutDown (cleanup) waits for the released queues; goleak in
	// TestMain then checks that no goroutine is left.
}

func TestRegisterRanges(t *testing.T) {
	initLib(t)
	d := hostDevice(t)
	buf := ccb.Alloc(256)
	defer ccb.Free(buf)
	var p1, p2 unsafe.Pointer
	mustOK(t, "register", impl.OlMemRegister(d, buf, 256, 0, unsafe.Pointer(&p1), nil))
	mustOK(t, "register again", impl.OlMemRegister(d, buf, 256, 0, unsafe.Pointer(&p2), nil))
	if p1 != buf || p2 != buf {
		t.Fatal("the host device's pinned pointer is the host pointer")
	}
	wantErr(t, "partial overlap", impl.OlMemRegister(d, unsafe.Add(buf, 8), 256, 0, unsafe.Pointer(&p2), nil), ol.ErrcInvalidArgument, "partial overlapping not allowed in locked buffers")
	mustOK(t, "unregister", impl.OlMemUnregister(d, p1, nil))
	mustOK(t, "unregister again", impl.OlMemUnregister(d, p1, nil))
	wantErr(t, "unregister unknown", impl.OlMemUnregister(d, p1, nil), ol.ErrcInvalidArgument, "cannot find locked buffer")
}

// Large copies (which the host device splits over its threads) and small
// ones, without a queue and on one, between separate ranges and within one
// allocation in both overlapping directions: each must equal what a
// byte-by-byte model of memmove gives.
func TestLargeAndOverlappingCopies(t *testing.T) {
	e := newHostEnv(t)
	const n = 3*8<<20 + 12345 // beyond the parallel threshold, no whole number of blocks
	a, b := e.alloc(n), e.alloc(n)
	as, bs := unsafe.Slice((*byte)(a), n), unsafe.Slice((*byte)(b), n)
	model := make([]byte, n)
	fill := func(seed int) {
		for i := range as {
			as[i] = byte(i*31 + i>>12 + seed)
		}
		copy(model, as)
	}
	q := e.queue()
	defer impl.OlDestroyQueue(q, nil)
	at := func(p unsafe.Pointer, off int) unsafe.Pointer { return unsafe.Add(p, off) }
	for _, queued := range []bool{false, true} {
		var qq uintptr
		if queued {
			qq = q
		}
		sync := func() {
			if queued {
				mustOK(t, "olSyncQueue", impl.OlSyncQueue(q, nil))
			}
		}
		for _, size := range []int{n, 9 << 20, 4096} {
			fill(size)
			clear(bs)
			mustOK(t, "olMemcpy", impl.OlMemcpy(qq, b, e.dev, a, e.dev, uint64(size), nil))
			sync()
			if !bytes.Equal(bs[:size], model[:size]) || bytes.ContainsFunc(bs[size:], func(r rune) bool { return r != 0 }) {
				t.Fatalf("queued=%v: copy of %d bytes wrong", queued, size)
			}
		}
		// within one allocation, shifted by 1 MiB + 3 both ways
		const shift, size = 1<<20 + 3, 16 << 20
		fill(7)
		mustOK(t, "olMemcpy up", impl.OlMemcpy(qq, at(a, shift), e.dev, a, e.dev, size, nil))
		sync()
		copy(model[shift:shift+size], model[:size])
		if !bytes.Equal(as, model) {
			t.Fatalf("queued=%v: overlapping copy to a higher address wrong", queued)
		}
		mustOK(t, "olMemcpy down", impl.OlMemcpy(qq, a, e.dev, at(a, shift), e.dev, size, nil))
		sync()
		copy(model[:size], model[shift:shift+size])
		if !bytes.Equal(as, model) {
			t.Fatalf("queued=%v: overlapping copy to a lower address wrong", queued)
		}
	}
}
