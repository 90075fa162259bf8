package tests

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/impl"
	"github.com/liboffload-go/liboffload-go/tests/go/ccb"
)

// maxAllocsPerLaunch bounds the Go allocations of one queued launch plus
// its sync, whatever the number of groups: the host device runs kernels on
// persistent workers, keeps launch arguments in a per-queue arena and
// splits grids without allocating per group or per chunk.
const maxAllocsPerLaunch = 0

// TestQueuedLaunchAllocations fails if a queued launch and its sync start
// allocating, or if what they allocate grows with the number of groups.
func TestQueuedLaunchAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("measures allocations")
	}
	e := newHostEnv(t)
	k := e.symbol(e.prog, "count_items", ol.SymbolKindKernel)
	count := (*uint32)(e.alloc(4))
	args := struct{ count *uint32 }{count}
	q := e.queue()
	defer impl.OlDestroyQueue(q, nil)
	measure := func(groups uint32) float64 {
		ls := launchArgs([3]uint32{groups, 1, 1}, [3]uint32{1, 1, 1}, 0)
		run := func() {
			if r := e.launch(q, k, unsafe.Pointer(&args), unsafe.Sizeof(args), ls); r != 0 {
				t.Fatalf("launch: %s", impl.ResultDetails(r))
			}
			if r := impl.OlSyncQueue(q, nil); r != 0 {
				t.Fatalf("sync: %s", impl.ResultDetails(r))
			}
		}
		for i := 0; i < 50; i++ { // warm up: workers started, arenas grown
			run()
		}
		*count = 0
		n := testing.AllocsPerRun(200, run)
		if want := 201 * groups; *count != want {
			t.Fatalf("%d groups: %d work-items ran, want %d", groups, *count, want)
		}
		return n
	}
	one, many := measure(1), measure(10000)
	t.Logf("allocations per queued launch + sync: %.2f with 1 group, %.2f with 10,000 groups", one, many)
	if one > maxAllocsPerLaunch || many > maxAllocsPerLaunch {
		t.Fatalf("allocations per queued launch + sync: %.2f (1 group), %.2f (10,000 groups); want at most %d", one, many, maxAllocsPerLaunch)
	}
	if many > one {
		t.Fatalf("allocations grow with the number of groups: %.2f with 1 group, %.2f with 10,000", one, many)
	}
}

// syncWithin syncs q, failing the test if that takes longer than a
// deadlock would allow.
func syncWithin(t *testing.T, what string, q uintptr) {
	t.Helper()
	done := make(chan uintptr, 1)
	go func() { done <- impl.OlSyncQueue(q, nil) }()
	select {
	case r := <-done:
		mustOK(t, what, r)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: no progress after 60 s (deadlock?)", what)
	}
}

// Kernels still run while many queues are blocked (an olWaitEvents on a
// queue held by a blocked host function, more of them than cores), and a
// host function can launch kernels (with and without a queue) and wait for
// them: blocked runners never hold the kernel workers.
func TestPoolNestedWorkDoesNotDeadlock(t *testing.T) {
	e := newHostEnv(t)
	k := e.symbol(e.prog, "count_items", ol.SymbolKindKernel)
	const groups = 10000
	ls := launchArgs([3]uint32{groups, 1, 1}, [3]uint32{4, 1, 1}, 0)
	launch := func(q uintptr, count *uint32) uintptr {
		args := struct{ count *uint32 }{count}
		return e.launch(q, k, unsafe.Pointer(&args), unsafe.Sizeof(args), ls)
	}

	// a queue held by a blocked host function, and queues that wait for it
	gate := ccb.NewGate()
	defer gate.Free()
	held := e.queue()
	mustOK(t, "gate", impl.OlLaunchHostFunction(held, gate.Callback(), gate.User(), nil))
	var ev uintptr
	mustOK(t, "event", impl.OlCreateEvent(held, unsafe.Pointer(&ev), nil))
	waiting := make([]uintptr, 2*runtime.NumCPU()+4)
	blocked := (*uint32)(e.alloc(4))
	for i := range waiting {
		waiting[i] = e.queue()
		mustOK(t, "olWaitEvents", impl.OlWaitEvents(waiting[i], unsafe.Pointer(&ev), 1, nil))
		mustOK(t, "launch behind the wait", launch(waiting[i], blocked))
	}
	for !gate.Entered() {
		time.Sleep(time.Millisecond)
	}

	// a host function that launches kernels and waits for them
	direct, inner, outer := (*uint32)(e.alloc(4)), (*uint32)(e.alloc(4)), (*uint32)(e.alloc(4))
	innerQ := e.queue()
	var hfErr atomic.Value
	fn := ccb.NewGoFunc(func() {
		if r := launch(0, direct); r != 0 {
			hfErr.Store("launch without a queue: " + impl.ResultDetails(r))
			return
		}
		if r := launch(innerQ, inner); r != 0 {
			hfErr.Store("launch: " + impl.ResultDetails(r))
			return
		}
		if r := impl.OlSyncQueue(innerQ, nil); r != 0 {
			hfErr.Store("sync: " + impl.ResultDetails(r))
		}
	})
	defer fn.Free()
	q := e.queue()
	mustOK(t, "host function", impl.OlLaunchHostFunction(q, fn.Callback(), fn.User(), nil))
	mustOK(t, "launch after it", launch(q, outer))
	syncWithin(t, "olSyncQueue while other queues are blocked", q)
	if v := hfErr.Load(); v != nil {
		t.Fatalf("in the host function: %v", v)
	}
	const n = groups * 4
	if *direct != n || *inner != n || *outer != n || *blocked != 0 {
		t.Fatalf("work-items run: %d without a queue, %d on a queue, %d after the host function, %d behind the wait (want %d, %d, %d, 0)",
			*direct, *inner, *outer, *blocked, n, n, n)
	}

	gate.Open()
	for i, w := range waiting {
		syncWithin(t, "a waiting queue", w)
		mustOK(t, "destroy", impl.OlDestroyQueue(waiting[i], nil))
	}
	if want := uint32(len(waiting) * n); *blocked != want {
		t.Fatalf("%d work-items ran behind the waits, want %d", *blocked, want)
	}
	for _, x := range []uintptr{held, innerQ, q} {
		mustOK(t, "destroy", impl.OlDestroyQueue(x, nil))
	}
	mustOK(t, "destroy event", impl.OlDestroyEvent(ev, nil))
}
