package host

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// setHook installs a test hook for the rest of the test.
func setHook(t *testing.T, f func(where string)) {
	testHook.Store(&f)
	t.Cleanup(func() { testHook.Store(nil) })
}

func newTestDevice(t *testing.T) *Device {
	p, err := New().Init(noEnv{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Deinit(); err != nil {
			t.Error(err)
		}
	})
	return p.Devices()[0].(*Device)
}

func hostBuf(t *testing.T, d *Device, n uint64) []uint32 {
	p, err := d.Alloc(ol.AllocTypeDevice, n*4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Free(p, ol.AllocTypeDevice) })
	s := unsafe.Slice((*uint32)(ptr(p)), n)
	clear(s)
	return s
}

// wantInternal checks that err is the error a recovered panic becomes.
func wantInternal(t *testing.T, err error, where, value string) {
	t.Helper()
	var oe *ol.Error
	if !errors.As(err, &oe) || oe.Code != ol.ErrcUnknown || !strings.Contains(oe.Details, "internal error in a "+where) || !strings.Contains(oe.Details, value) {
		t.Fatalf("got %v, want UNKNOWN naming an internal error in a %s and %q", err, where, value)
	}
}

func waitEmpty(t *testing.T, q plugin.Queue) {
	for deadline := time.Now().Add(20 * time.Second); !q.Empty(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the queue's work never ended")
		}
	}
}

// A panic on a queue runner becomes the queue's error: a thread already
// waiting is woken with it, and the queue runs later work.
func TestPanicOnQueueRunner(t *testing.T) {
	d := newTestDevice(t)
	src, dst := hostBuf(t, d, 4), hostBuf(t, d, 4)
	src[0] = 42
	entered, release := make(chan struct{}), make(chan struct{})
	var fired atomic.Bool
	setHook(t, func(where string) {
		if where == "queue runner" && fired.CompareAndSwap(false, true) {
			close(entered)
			<-release
			panic("injected fault")
		}
	})
	q, err := d.NewQueue()
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	copyOp := func() {
		if err := q.CopyDevice(uintptr(unsafe.Pointer(&dst[0])), d, uintptr(unsafe.Pointer(&src[0])), d, 16); err != nil {
			t.Fatal(err)
		}
	}
	copyOp()
	<-entered // the runner holds the queue: Sync waits for it
	synced := make(chan error)
	go func() { synced <- q.Sync() }()
	time.Sleep(20 * time.Millisecond)
	close(release)
	select {
	case err := <-synced:
		wantInternal(t, err, "queue runner", "injected fault")
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting Sync was never woken")
	}
	if dst[0] != 0 {
		t.Fatal("the failed copy ran")
	}
	copyOp()
	waitEmpty(t, q) // run by a runner, not by Sync
	if err := q.Sync(); err != nil || dst[0] != 42 {
		t.Fatalf("after the fault: Sync %v, copied %d", err, dst[0])
	}
}

// A panic on a kernel worker becomes the launch's error; the pool and the
// queue keep working.
func TestPanicOnKernelWorker(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("no kernel workers on one CPU")
	}
	d := newTestDevice(t)
	k := fooKernel(t, d)
	const groups, items = 4096, 64
	out := hostBuf(t, d, groups*items)
	args := (*[8]byte)(unsafe.Pointer(&struct{ p *uint32 }{&out[0]}))[:]
	size := plugin.LaunchSize{NumGroups: ol.Dimensions{X: groups, Y: 1, Z: 1}, GroupSize: ol.Dimensions{X: items, Y: 1, Z: 1}}
	var fired atomic.Bool
	setHook(t, func(where string) {
		if where == "kernel worker" && fired.CompareAndSwap(false, true) {
			panic(fmt.Sprintf("injected fault %d", 7))
		}
	})
	q, err := d.NewQueue()
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	// a worker joins a launch only if it wakes before the grid is done
	for i := 0; i < 1000 && !fired.Load(); i++ {
		if err := q.Launch(k, args, size); err != nil {
			t.Fatal(err)
		}
		err := q.Sync()
		if fired.Load() {
			wantInternal(t, err, "kernel worker", "injected fault 7")
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if !fired.Load() {
		t.Fatal("no kernel worker joined any of 1,000 launches of 4,096 groups")
	}
	clear(out)
	for i := 0; i < 20; i++ {
		if err := q.Launch(k, args, size); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Sync(); err != nil {
		t.Fatalf("after the fault: %v", err)
	}
	for i, v := range out {
		if v != uint32(i) {
			t.Fatalf("after the fault: out[%d] = %d", i, v)
		}
	}
}

// A panic around a host function gives its turn back and becomes its
// queue's error.
func TestPanicAroundHostFunction(t *testing.T) {
	d := newTestDevice(t)
	setHook(t, func(where string) {
		if where == "host function" {
			panic("injected fault")
		}
	})
	q, err := d.NewQueue()
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	var never byte // not a function: the hook panics before the call
	for i := 0; i < 2*d.hf.limit; i++ {
		if err := q.HostFunc(unsafe.Pointer(&never), nil); err != nil {
			t.Fatal(err)
		}
	}
	wantInternal(t, q.Sync(), "queue runner", "injected fault")
	d.hf.mu.Lock()
	active, free := d.hf.active, len(d.hf.free)
	d.hf.mu.Unlock()
	if active != 0 || d.hf.running.Load() != 0 || free != len(d.hf.runs) {
		t.Fatalf("turns not given back: %d active, %d running, %d of %d tokens free", active, d.hf.running.Load(), free, len(d.hf.runs))
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
}

// Launching on an idle queue starts no goroutine once the pool has a
// parked runner, and a launch split over workers starts none either.
func TestPoolStartsNoGoroutinePerLaunch(t *testing.T) {
	d := newTestDevice(t)
	k := fooKernel(t, d)
	out := hostBuf(t, d, 1024*16)
	args := (*[8]byte)(unsafe.Pointer(&struct{ p *uint32 }{&out[0]}))[:]
	size := plugin.LaunchSize{NumGroups: ol.Dimensions{X: 1024, Y: 1, Z: 1}, GroupSize: ol.Dimensions{X: 16, Y: 1, Z: 1}}
	q, err := d.NewQueue()
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	round := func() {
		if err := q.Launch(k, args, size); err != nil {
			t.Fatal(err)
		}
		waitEmpty(t, q) // run by a runner
		if err := q.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	round()
	before := runtime.NumGoroutine()
	for i := 0; i < 200; i++ {
		round()
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("%d goroutines before, %d after 200 launches", before, after)
	}
	var helpers, idle int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		d.pool.mu.Lock()
		helpers, idle = d.pool.helpers, len(d.pool.idle)
		d.pool.mu.Unlock()
		if idle == 1 || time.Now().After(deadline) {
			break // the runner parks just after the queue is seen empty
		}
	}
	if helpers != runtime.NumCPU()-1 || idle != 1 {
		t.Fatalf("pool: %d kernel workers (want %d), %d parked runners (want 1)", helpers, runtime.NumCPU()-1, idle)
	}
}

// fooKernel loads tests/c/kernels/foo.c on d (unloaded at cleanup) and
// returns its kernel.
func fooKernel(t *testing.T, d *Device) plugin.Kernel {
	t.Helper()
	prog, err := d.LoadProgram(buildKernel(t, t.TempDir(), "foo"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Unload() })
	k, err := prog.Kernel("foo")
	if err != nil {
		t.Fatal(err)
	}
	return k
}
