package tests

import (
	"testing"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/impl"
)

// The generated entry layer converts pointers (byte and handle views,
// typed outputs) without allocating: a queued copy, a wait on an event of
// the same queue, a queue info query, an allocation lookup (olGetMemInfo)
// through Go and an allocation and its free with every queue idle (the
// map's writers) allocate nothing.
func TestEntryLayerAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("measures allocations")
	}
	e := newHostEnv(t)
	q := e.queue()
	defer impl.OlDestroyQueue(q, nil)
	src, dst := e.alloc(64), e.alloc(64)
	var ev uintptr
	if r := impl.OlCreateEvent(q, unsafe.Pointer(&ev), nil); r != 0 {
		t.Fatal(impl.ResultDetails(r))
	}
	defer impl.OlDestroyEvent(ev, nil)
	var dev, base uintptr
	cases := map[string]func(){ // order does not matter
		"olGetMemInfo": func() {
			if r := impl.OlGetMemInfo(unsafe.Add(src, 3), uint32(ol.MemInfoBase), 8, unsafe.Pointer(&base), nil); r != 0 || base != uintptr(src) {
				t.Fatal(impl.ResultDetails(r))
			}
		},
		"olMemcpy": func() {
			if r := impl.OlMemcpy(q, dst, e.dev, src, e.dev, 64, nil); r != 0 {
				t.Fatal(impl.ResultDetails(r))
			}
		},
		"olWaitEvents": func() {
			if r := impl.OlWaitEvents(q, unsafe.Pointer(&ev), 1, nil); r != 0 {
				t.Fatal(impl.ResultDetails(r))
			}
		},
		"olGetQueueInfo": func() {
			if r := impl.OlGetQueueInfo(q, uint32(ol.QueueInfoDevice), 8, unsafe.Pointer(&dev), nil); r != 0 {
				t.Fatal(impl.ResultDetails(r))
			}
		},
		"olMemAlloc+olMemFree": func() {
			// with every queue idle the free is immediate (a deferred one
			// keeps bookkeeping until the queued work ends)
			if r := impl.OlSyncQueue(q, nil); r != 0 {
				t.Fatal(impl.ResultDetails(r))
			}
			var p unsafe.Pointer
			if r := impl.OlMemAlloc(e.dev, uint32(ol.AllocTypeDevice), 64, unsafe.Pointer(&p), nil); r != 0 {
				t.Fatal(impl.ResultDetails(r))
			}
			if r := impl.OlMemFree(p, nil); r != 0 {
				t.Fatal(impl.ResultDetails(r))
			}
		},
		"olSyncQueue": func() {
			if r := impl.OlSyncQueue(q, nil); r != 0 {
				t.Fatal(impl.ResultDetails(r))
			}
		},
	}
	for name, run := range cases {
		for i := 0; i < 50; i++ {
			run()
		}
		if n := testing.AllocsPerRun(200, run); n != 0 {
			t.Errorf("%s: %.2f allocations per call, want 0", name, n)
		}
	}
}
