package amdgpu_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"strings"
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

// must fails the test on an API error.
func must(t *testing.T, what string, r uintptr) {
	t.Helper()
	if r != 0 {
		t.Fatalf("%s: %s: %s", what, impl.ResultCode(r), impl.ResultDetails(r))
	}
}

// Through the runtime, with two fake AMD GPUs and the host device: copies
// on queues of every platform (the runtime routes them), a copy between
// the GPUs, a host queue waiting for a GPU event, a fill without a queue
// of GPU memory the CPU cannot touch, and kernel launches in order.
func TestRuntimeOnFakeGPUs(t *testing.T) {
	lib := (&fakedriver.Driver{Source: "fake_hsa.c"}).Build(t, "libhsa-e2e.so")
	devs := imagetest.Init(t, "amdgpu", map[string]string{amdgpu.EnvLibrary: lib, "FAKE_HSA_GPUS": "2"})
	if len(devs) != 3 {
		t.Fatalf("%d devices, want 2 GPUs and the host", len(devs))
	}
	g0, g1, host := devs[0], devs[1], devs[2]
	alloc := func(dev uintptr, kind ol.AllocType, n uint64) unsafe.Pointer {
		var p unsafe.Pointer
		must(t, "olMemAlloc", impl.OlMemAlloc(dev, uint32(kind), n, unsafe.Pointer(&p), nil))
		return p
	}
	queue := func(dev uintptr) uintptr {
		var q uintptr
		must(t, "olCreateQueue", impl.OlCreateQueue(dev, unsafe.Pointer(&q), nil))
		return q
	}
	const n = 4096
	src := alloc(host, ol.AllocTypeHost, n)
	dst := alloc(host, ol.AllocTypeHost, n)
	a := alloc(g0, ol.AllocTypeDevice, n)
	b := alloc(g1, ol.AllocTypeDevice, n)
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i*7 + 3)
	}
	copy(unsafe.Slice((*byte)(src), n), want)

	hq, q0 := queue(host), queue(g0)
	must(t, "olMemcpy host→g0 on a host queue", impl.OlMemcpy(hq, a, g0, src, host, n, nil))
	must(t, "olSyncQueue", impl.OlSyncQueue(hq, nil))
	must(t, "olMemcpy g0→g1", impl.OlMemcpy(q0, b, g1, a, g0, n, nil))
	var ev uintptr
	must(t, "olCreateEvent", impl.OlCreateEvent(q0, unsafe.Pointer(&ev), nil))
	must(t, "olWaitEvents", impl.OlWaitEvents(hq, unsafe.Pointer(&ev), 1, nil))
	must(t, "olMemcpy g1→host on a host queue", impl.OlMemcpy(hq, dst, host, b, g1, n, nil))
	must(t, "olSyncQueue", impl.OlSyncQueue(hq, nil))
	if !bytes.Equal(unsafe.Slice((*byte)(dst), n), want) {
		t.Fatal("wrong bytes after host → g0 → g1 → host")
	}
	pat := []byte{0x5a, 0xa5}
	must(t, "olMemFill", impl.OlMemFill(0, b, 2, unsafe.Pointer(&pat[0]), n, nil))
	must(t, "olMemcpy g1→host", impl.OlMemcpy(0, dst, host, b, g1, n, nil))
	if !bytes.Equal(unsafe.Slice((*byte)(dst), n), bytes.Repeat(pat, n/2)) {
		t.Fatal("wrong bytes after the fill")
	}

	// kernels in order: each element of the sequence from the two before
	img := fakedriver.FakeHsaco(t, "sequence", "gfx90a")
	var prog, kernel uintptr
	must(t, "olCreateProgram", impl.OlCreateProgram(g0, unsafe.Pointer(&img[0]), uint64(len(img)), unsafe.Pointer(&prog), nil))
	name := []byte("sequence\x00")
	must(t, "olGetSymbol", impl.OlGetSymbol(prog, unsafe.Pointer(&name[0]), uint32(ol.SymbolKindKernel), unsafe.Pointer(&kernel), nil))
	out := alloc(g0, ol.AllocTypeDevice, 4*16)
	first := []uint32{0, 1}
	must(t, "olMemcpy", impl.OlMemcpy(q0, out, g0, unsafe.Pointer(&first[0]), host, 8, nil))
	for i := 2; i < 16; i++ {
		args := binary.LittleEndian.AppendUint64(nil, uint64(uintptr(out)))
		args = binary.LittleEndian.AppendUint64(args, uint64(i))
		size := ol.KernelLaunchSizeArgs{Dimensions: 1, NumGroups: ol.Dimensions{X: 1, Y: 1, Z: 1}, GroupSize: ol.Dimensions{X: 1, Y: 1, Z: 1}}
		must(t, "olLaunchKernel", impl.OlLaunchKernel(q0, g0, kernel, unsafe.Pointer(&args[0]), 16, unsafe.Pointer(&size), nil))
	}
	got := make([]uint32, 16)
	must(t, "olMemcpy", impl.OlMemcpy(q0, unsafe.Pointer(&got[0]), host, out, g0, 64, nil))
	must(t, "olSyncQueue", impl.OlSyncQueue(q0, nil))
	for i := 2; i < 16; i++ {
		if got[i] != got[i-1]+got[i-2] {
			t.Fatalf("sequence: %v", got)
		}
	}
	if got[15] != 610 {
		t.Fatalf("sequence[15] = %d, want 610", got[15])
	}
	must(t, "olDestroyProgram", impl.OlDestroyProgram(prog, nil))
	for _, q := range []uintptr{hq, q0} {
		must(t, "olDestroyQueue", impl.OlDestroyQueue(q, nil))
	}
	must(t, "olDestroyEvent", impl.OlDestroyEvent(ev, nil))
	for _, p := range []unsafe.Pointer{src, dst, a, b, out} {
		must(t, "olMemFree", impl.OlMemFree(p, nil))
	}
}

// Through the runtime with both driver doubles loaded, one fake AMD GPU
// and one fake CUDA GPU (whose device memory the CPU cannot touch either):
// copies between them on a queue of each platform and without a queue
// (staged by the runtime through host memory), and each platform's queue
// waiting for an event of the other while that event's queue is still
// held back by a host call.
func TestRuntimeAcrossAMDAndCUDA(t *testing.T) {
	hsa := (&fakedriver.Driver{Source: "fake_hsa.c"}).Build(t, "libhsa-both.so")
	cu := (&fakedriver.Driver{Source: "fake_cuda.c"}).Build(t, "libcuda-both.so")
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
	lib := (&fakedriver.Driver{Source: "fake_hsa.c"}).Build(t, "libhsa-absent.so")
	trace := t.TempDir() + "/trace"
	imagetest.Init(t, "amdgpu", map[string]string{amdgpu.EnvLibrary: lib, "FAKE_HSA_INIT_RESULT": "0x1008",
		impl.EnvTraceFile: trace, impl.EnvTrace: "all"})
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	want := "liboffload-go: platform amdgpu is absent: hsa_init: 0x1008 HSA_STATUS_ERROR_OUT_OF_RESOURCES"
	if !strings.Contains(string(b), want) {
		t.Errorf("trace lacks %q:\n%s", want, b)
	}
}
