package cuda_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/impl"
	"github.com/liboffload-go/liboffload-go/plugins/amdgpu"
	"github.com/liboffload-go/liboffload-go/plugins/cuda"
	"github.com/liboffload-go/liboffload-go/plugins/host"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
	"github.com/liboffload-go/liboffload-go/plugins/internal/imagetest"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
	"github.com/liboffload-go/liboffload-go/tests/go/ccb"
)

// must fails the test on an API error.
func must(t *testing.T, what string, r uintptr) {
	t.Helper()
	if r != 0 {
		t.Fatalf("%s: %s: %s", what, impl.ResultCode(r), impl.ResultDetails(r))
	}
}

// Through the runtime, with two fake GPUs and the host device: copies on
// queues of every platform (the runtime routes them), a peer copy, a host
// queue waiting for a GPU event, a fill without a queue of GPU memory the
// CPU cannot touch, and a kernel launch.
func TestRuntimeOnFakeGPUs(t *testing.T) {
	lib := (&fakedriver.Driver{Source: "fake_cuda.c"}).Build(t, "libcuda-e2e.so")
	devs := imagetest.Init(t, "cuda", map[string]string{cuda.EnvLibrary: lib, "FAKE_CUDA_DEVICES": "2"})
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
	// host memory to GPU 0 on a host queue: the runtime has GPU 0 do it
	must(t, "olMemcpy host→g0 on a host queue", impl.OlMemcpy(hq, a, g0, src, host, n, nil))
	must(t, "olSyncQueue", impl.OlSyncQueue(hq, nil))
	// GPU 0 to GPU 1 on GPU 0's queue (peer), then an event the host queue waits for
	must(t, "olMemcpy g0→g1", impl.OlMemcpy(q0, b, g1, a, g0, n, nil))
	var ev uintptr
	must(t, "olCreateEvent", impl.OlCreateEvent(q0, unsafe.Pointer(&ev), nil))
	must(t, "olWaitEvents", impl.OlWaitEvents(hq, unsafe.Pointer(&ev), 1, nil))
	must(t, "olMemcpy g1→host on a host queue", impl.OlMemcpy(hq, dst, host, b, g1, n, nil))
	must(t, "olSyncQueue", impl.OlSyncQueue(hq, nil))
	if !bytes.Equal(unsafe.Slice((*byte)(dst), n), want) {
		t.Fatal("wrong bytes after host → g0 → g1 → host")
	}
	// a fill without a queue of GPU memory: GPU 1 does it
	pat := []byte{0x5a, 0xa5}
	must(t, "olMemFill", impl.OlMemFill(0, b, 2, unsafe.Pointer(&pat[0]), n, nil))
	must(t, "olMemcpy g1→host", impl.OlMemcpy(0, dst, host, b, g1, n, nil))
	if !bytes.Equal(unsafe.Slice((*byte)(dst), n), bytes.Repeat(pat, n/2)) {
		t.Fatal("wrong bytes after the fill")
	}

	// a kernel: the sequence kernel of the conformance tests
	img := fakedriver.FakeCubin(t, "sequence")
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

// brokenPlugin is a backend whose platform fails to shut down.
type brokenPlugin struct{}

func (brokenPlugin) Name() string { return "broken" }
func (brokenPlugin) Init(plugin.Env) (plugin.Platform, error) {
	return brokenPlatform{}, nil
}

type brokenPlatform struct{}

func (brokenPlatform) Name() string                { return "Broken" }
func (brokenPlatform) Vendor() string              { return "test" }
func (brokenPlatform) Version() string             { return "0" }
func (brokenPlatform) Backend() ol.PlatformBackend { return ol.PlatformBackendUnknown }
func (brokenPlatform) Devices() []plugin.Device    { return []plugin.Device{brokenDevice{}} }
func (brokenPlatform) Deinit() error {
	return ol.NewError(ol.ErrcBackendFailure, "the broken platform failed to shut down")
}

type brokenDevice struct{ plugin.Device }

func (brokenDevice) Info() *plugin.DeviceInfo {
	return &plugin.DeviceInfo{Type: plugin.Some(ol.DeviceTypeGpu)}
}

// Injected driver failures give the right error, never a crash or a leak:
// an allocation the driver refuses is OUT_OF_RESOURCES; a failing context
// release at shutdown comes back from olShutDown joined with another
// platform's failure, and the library is shut down anyway.
func TestRuntimeFaultInjection(t *testing.T) {
	lib := (&fakedriver.Driver{Source: "fake_cuda.c"}).Build(t, "libcuda-faults.so")
	t.Setenv(cuda.EnvLibrary, lib)
	t.Setenv("FAKE_CUDA_DEVICES", "1")
	impl.UsePlugins(cuda.New(), brokenPlugin{}, host.New())
	t.Cleanup(func() { impl.UsePlugins(amdgpu.New(), cuda.New(), host.New()) })
	must(t, "olInit", impl.OlInit(nil))
	it := ccb.NewIter(0)
	defer it.Free()
	must(t, "olIterateDevices", impl.OlIterateDevices(it.Callback(), it.User(), nil))
	gpu := it.Device(0)
	t.Setenv("FAKE_CUDA_ALLOC_RESULT", "2")
	var p unsafe.Pointer
	r := impl.OlMemAlloc(gpu, uint32(ol.AllocTypeDevice), 1<<20, unsafe.Pointer(&p), nil)
	if impl.ResultCode(r) != ol.ErrcOutOfResources || !strings.Contains(impl.ResultDetails(r), "CUDA_ERROR_OUT_OF_MEMORY") {
		t.Errorf("olMemAlloc with the driver out of memory: %s %q", impl.ResultCode(r), impl.ResultDetails(r))
	}
	t.Setenv("FAKE_CUDA_ALLOC_RESULT", "")
	t.Setenv("FAKE_CUDA_RELEASE_RESULT", "999")
	r = impl.OlShutDown(nil)
	details := impl.ResultDetails(r)
	if r == 0 || !strings.Contains(details, "cuDevicePrimaryCtxRelease(0) failed: 999 CUDA_ERROR_UNKNOWN") ||
		!strings.Contains(details, "the broken platform failed to shut down") {
		t.Errorf("olShutDown: %s %q, want both failures", impl.ResultCode(r), details)
	}
	// shut down anyway: a new initialisation works
	t.Setenv("FAKE_CUDA_RELEASE_RESULT", "")
	must(t, "olInit after a failed shutdown", impl.OlInit(nil))
	if r := impl.OlShutDown(nil); r == 0 || strings.Contains(impl.ResultDetails(r), "CUDA") {
		t.Errorf("second shutdown: %q (want only the broken platform's failure)", impl.ResultDetails(r))
	}
}

// With OFFLOAD_TRACE=all, an absent platform says why in one line (any
// other value keeps LLVM's trace format exactly).
func TestTraceSaysWhyAbsent(t *testing.T) {
	lib := (&fakedriver.Driver{Source: "fake_cuda.c"}).Build(t, "libcuda-absent.so")
	trace := t.TempDir() + "/trace"
	t.Setenv("FAKE_CUDA_INIT_RESULT", "100")
	imagetest.Init(t, "cuda", map[string]string{cuda.EnvLibrary: lib, impl.EnvTraceFile: trace, impl.EnvTrace: "all"})
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	want := "liboffload-go: platform cuda is absent: cuInit: 100 CUDA_ERROR_NO_DEVICE"
	if !strings.Contains(string(b), want) {
		t.Errorf("trace lacks %q:\n%s", want, b)
	}
}
