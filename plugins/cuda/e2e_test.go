package cuda_test

import (
	"runtime"
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

var must = imagetest.Must

// Through the runtime, with two fake GPUs and the host device: copies on
// queues of every platform, a peer copy, a host queue waiting for a GPU
// event, a fill without a queue, and a kernel launch.
func TestRuntimeOnFakeGPUs(t *testing.T) {
	devs := imagetest.CUDA.Start(t, "libcuda-e2e.so", 2, nil)
	imagetest.CheckRuntimeOnGPUs(t, devs, fakedriver.FakeCubin(t, "sequence"))
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
func (brokenPlatform) Drain() error                { return nil }
func (brokenPlatform) Deinit() error {
	return ol.NewError(ol.ErrcBackendFailure, "the broken platform failed to shut down")
}

type brokenDevice struct{ plugin.Device }

func (brokenDevice) IsHost() bool { return false }

func (brokenDevice) Info() *plugin.DeviceInfo {
	return &plugin.DeviceInfo{Type: plugin.Some(ol.DeviceTypeGpu)}
}

// Injected driver failures give the right error, never a crash or a leak:
// an allocation the driver refuses is OUT_OF_RESOURCES; a failing context
// release at shutdown comes back from olShutDown joined with another
// platform's failure, and the library is shut down anyway.
func TestRuntimeFaultInjection(t *testing.T) {
	lib := imagetest.CUDA.Build(t, "libcuda-faults.so")
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
	imagetest.CUDA.CheckTraceSaysWhyAbsent(t, "libcuda-absent.so", map[string]string{"FAKE_CUDA_INIT_RESULT": "100"},
		"liboffload-go: platform cuda is absent: cuInit: 100 CUDA_ERROR_NO_DEVICE")
}

// Host ranges still registered at the final olShutDown are unregistered
// in the driver (the AMDGPU plugin unlocks its ranges the same way), also
// one registered on two devices and one registered twice; a new
// initialisation can register them again.
func TestShutDownUnregisters(t *testing.T) {
	lib := imagetest.CUDA.Build(t, "libcuda-unregister.so")
	t.Setenv(cuda.EnvLibrary, lib)
	t.Setenv("FAKE_CUDA_DEVICES", "2")
	t.Setenv(impl.EnvPlugins, "cuda")
	impl.UsePlugins(amdgpu.New(), cuda.New(), host.New())
	hooks := fakedriver.OpenHooks(t, lib)
	buf := make([]byte, 7*4096)
	defer runtime.KeepAlive(buf)
	mem := unsafe.Pointer(&buf[0])
	for round := 0; round < 2; round++ {
		must(t, "olInit", impl.OlInit(nil))
		it := ccb.NewIter(0)
		must(t, "olIterateDevices", impl.OlIterateDevices(it.Callback(), it.User(), nil))
		gpus := []uintptr{it.Device(0), it.Device(1)}
		it.Free()
		for i := 0; i < 7; i++ {
			var pinned unsafe.Pointer
			dev := gpus[i%2]
			p := unsafe.Add(mem, i*4096)
			must(t, "olMemRegister", impl.OlMemRegister(dev, p, 4096, 0, unsafe.Pointer(&pinned), nil))
			if i == 3 { // a second user of the same range
				must(t, "olMemRegister", impl.OlMemRegister(dev, p, 4096, 0, unsafe.Pointer(&pinned), nil))
			}
		}
		if n := hooks.Count("fake_cuda_live", "register"); n != 7 {
			t.Fatalf("round %d: %d ranges registered in the driver, want 7", round, n)
		}
		must(t, "olShutDown", impl.OlShutDown(nil))
		if n := hooks.Count("fake_cuda_live", "register"); n != 0 {
			t.Errorf("round %d: %d ranges still registered in the driver after the final olShutDown", round, n)
		}
	}
}

// olMemFree with work of the memory queued frees it in the driver only
// after that work, and the final olShutDown frees what still waits.
func TestRuntimeDeferredFree(t *testing.T) {
	imagetest.CUDA.CheckDeferredFree(t, "libcuda-deferfree.so", "fake_cuda_live")
}

// Pooled device memory: reuse, the idle bound, the retry after
// out-of-memory, and everything back in the driver after olShutDown.
func TestPools(t *testing.T) {
	imagetest.CUDA.CheckPools(t, "libcuda-pools.so", "fake_cuda_live", "FAKE_CUDA_MEMORY_BYTES")
}
