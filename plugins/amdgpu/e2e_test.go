package amdgpu_test

import (
	"bytes"
	"testing"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/impl"
	"github.com/liboffload-go/liboffload-go/plugins/amdgpu"
	"github.com/liboffload-go/liboffload-go/plugins/cuda"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
	"github.com/liboffload-go/liboffload-go/plugins/internal/imagetest"
	"github.com/liboffload-go/liboffload-go/tests/go/ccb"
)

var must = imagetest.Must

// Through the runtime, with two fake AMD GPUs and the host device: copies
// on queues of every platform, a copy between the GPUs, a host queue
// waiting for a GPU event, a fill without a queue, and kernel launches in
// order.
func TestRuntimeOnFakeGPUs(t *testing.T) {
	devs := imagetest.HSA.Start(t, "libhsa-e2e.so", 2, nil)
	imagetest.CheckRuntimeOnGPUs(t, devs, fakedriver.FakeHsaco(t, "sequence", "gfx90a"))
}

// Through the runtime with both driver doubles loaded, one fake AMD GPU
// and one fake CUDA GPU (whose device memory the CPU cannot touch either):
// copies between them on a queue of each platform and without a queue
// (staged by the runtime through host memory), and each platform's queue
// waiting for an event of the other while that event's queue is still
// held back by a host call.
func TestRuntimeAcrossAMDAndCUDA(t *testing.T) {
	hsa := imagetest.HSA.Build(t, "libhsa-both.so")
	cu := imagetest.CUDA.Build(t, "libcuda-both.so")
	devs := imagetest.Init(t, "amdgpu,cuda", map[string]string{
		amdgpu.EnvLibrary: hsa, "FAKE_HSA_GPUS": "1",
		cuda.EnvLibrary: cu, "FAKE_CUDA_DEVICES": "1",
	})
	var amd, nv, host uintptr
	for _, d := range devs {
		var plat uintptr
		must(t, "olGetDeviceInfo(PLATFORM)", impl.OlGetDeviceInfo(d, uint32(ol.DeviceInfoPlatform), 8, unsafe.Pointer(&plat), nil))
		var backend uint32
		must(t, "olGetPlatformInfo(BACKEND)", impl.OlGetPlatformInfo(plat, uint32(ol.PlatformInfoBackend), 4, unsafe.Pointer(&backend), nil))
		switch ol.PlatformBackend(backend) {
		case ol.PlatformBackendAmdgpu:
			amd = d
		case ol.PlatformBackendCuda:
			nv = d
		case ol.PlatformBackendHost:
			host = d
		}
	}
	if amd == 0 || nv == 0 || host == 0 || len(devs) != 3 {
		t.Fatalf("devices %v: want one AMD GPU, one CUDA GPU and the host", devs)
	}
	const n = 3<<20 + 5 // not a multiple of anything the staging uses
	alloc := func(dev uintptr) unsafe.Pointer {
		var p unsafe.Pointer
		must(t, "olMemAlloc", impl.OlMemAlloc(dev, uint32(ol.AllocTypeDevice), n, unsafe.Pointer(&p), nil))
		return p
	}
	queue := func(dev uintptr) uintptr {
		var q uintptr
		must(t, "olCreateQueue", impl.OlCreateQueue(dev, unsafe.Pointer(&q), nil))
		return q
	}
	a, b := alloc(amd), alloc(nv)
	in, out := make([]byte, n), make([]byte, n)
	for round, q := range []uintptr{0, queue(amd), queue(nv)} {
		for i := range in {
			in[i] = byte(i*13 + round)
		}
		// host -> AMD -> CUDA -> AMD -> host, all on q (or without a queue)
		must(t, "olMemcpy host→amd", impl.OlMemcpy(q, a, amd, unsafe.Pointer(&in[0]), host, n, nil))
		must(t, "olMemcpy amd→cuda", impl.OlMemcpy(q, b, nv, a, amd, n, nil))
		must(t, "olMemFill amd", impl.OlMemFill(q, a, 1, unsafe.Pointer(&[]byte{0}[0]), n, nil))
		must(t, "olMemcpy cuda→amd", impl.OlMemcpy(q, a, amd, b, nv, n, nil))
		must(t, "olMemcpy amd→host", impl.OlMemcpy(q, unsafe.Pointer(&out[0]), host, a, amd, n, nil))
		if q != 0 {
			must(t, "olSyncQueue", impl.OlSyncQueue(q, nil))
			must(t, "olDestroyQueue", impl.OlDestroyQueue(q, nil))
		}
		if !bytes.Equal(in, out) {
			t.Fatalf("round %d: wrong bytes after host → AMD → CUDA → AMD → host", round)
		}
	}
	// waits across the two GPU platforms, both ways: the waited-for queue
	// is held by a host call, then copies, then records its event
	for _, pair := range [][2]uintptr{{amd, nv}, {nv, amd}} {
		qa, qb := queue(pair[0]), queue(pair[1])
		for i := range in {
			in[i] = byte(i * 5)
		}
		pa, pb := a, b
		if pair[0] == nv {
			pa, pb = b, a
		}
		gate := ccb.NewGate()
		must(t, "olLaunchHostFunction", impl.OlLaunchHostFunction(qa, gate.Callback(), gate.User(), nil))
		must(t, "olMemcpy", impl.OlMemcpy(qa, pa, pair[0], unsafe.Pointer(&in[0]), host, n, nil))
		var ev uintptr
		must(t, "olCreateEvent", impl.OlCreateEvent(qa, unsafe.Pointer(&ev), nil))
		must(t, "olWaitEvents", impl.OlWaitEvents(qb, unsafe.Pointer(&ev), 1, nil))
		must(t, "olMemcpy", impl.OlMemcpy(qb, pb, pair[1], pa, pair[0], n, nil))
		must(t, "olMemcpy", impl.OlMemcpy(qb, unsafe.Pointer(&out[0]), host, pb, pair[1], n, nil))
		time.Sleep(30 * time.Millisecond) // qb must still be waiting
		gate.Open()
		must(t, "olSyncQueue", impl.OlSyncQueue(qb, nil))
		must(t, "olSyncQueue", impl.OlSyncQueue(qa, nil))
		gate.Free()
		if !bytes.Equal(in, out) {
			t.Fatalf("wait %v: the copy after the wait did not see the copy before the event", pair)
		}
		must(t, "olDestroyEvent", impl.OlDestroyEvent(ev, nil))
		must(t, "olDestroyQueue", impl.OlDestroyQueue(qa, nil))
		must(t, "olDestroyQueue", impl.OlDestroyQueue(qb, nil))
	}
	must(t, "olMemFree", impl.OlMemFree(a, nil))
	must(t, "olMemFree", impl.OlMemFree(b, nil))
}

// With OFFLOAD_TRACE=all, an absent platform says why in one line.
func TestTraceSaysWhyAbsent(t *testing.T) {
	imagetest.HSA.CheckTraceSaysWhyAbsent(t, "libhsa-absent.so", map[string]string{"FAKE_HSA_INIT_RESULT": "0x1008"},
		"liboffload-go: platform amdgpu is absent: hsa_init: 0x1008 HSA_STATUS_ERROR_OUT_OF_RESOURCES")
}

// olMemFree with work of the memory queued frees it in the runtime only
// after that work, and the final olShutDown frees what still waits.
func TestRuntimeDeferredFree(t *testing.T) {
	imagetest.HSA.CheckDeferredFree(t, "libhsa-deferfree.so", "fake_hsa_live")
}

// Pooled device memory: reuse, the idle bound, the retry after
// out-of-memory, and everything back in the runtime after olShutDown.
func TestPools(t *testing.T) {
	imagetest.HSA.CheckPools(t, "libhsa-pools.so", "fake_hsa_live", "FAKE_HSA_MEMORY_BYTES")
}
