package cuda

import (
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is tests/drivers/fake_cuda.c, loaded through this plugin.
var fake = fakedriver.Driver{
	Kind:        "CUDA driver",
	Source:      "fake_cuda.c",
	EnvLibrary:  EnvLibrary,
	InitFunc:    "cuInit",
	InitCounter: "fake_cuda_init_calls",
	New:         func() plugin.Plugin { return New() },
	Load: func(names []string) fakedriver.State {
		d := drivers.Load(names)
		return fakedriver.State{Driver: d, Library: d.Library, Init: int64(d.initResult)}
	},
	GPUsEnv:       "FAKE_CUDA_DEVICES",
	Prefix:        "fake_cuda",
	PeekHostFirst: true,
	QueueKind:     "stream",
	Image:         fakedriver.FakeCubin,
	Held:          held,
}

func TestName(t *testing.T) {
	fake.CheckName(t, "cuda")
}

func TestLibraryNames(t *testing.T) {
	fakedriver.CheckLibraryNames(t, New().LibraryNames, EnvLibrary, []string{"libcuda.so.1", "libcuda.so"})
}

func TestLibraryMissingIsAbsent(t *testing.T) {
	fake.CheckLibraryMissing(t, "libcuda-does-not-exist.so")
}

func TestFakeMissingSymbolIsAbsent(t *testing.T) {
	t.Setenv("FAKE_CUDA_DEVICES", "2")
	fake.CheckMissingSymbol(t, "libcuda-nouuid.so", "cuDeviceGetUuid")
}

func TestFakeZeroDevices(t *testing.T) {
	t.Setenv("FAKE_CUDA_DEVICES", "0")
	fake.CheckNoDevices(t, "libcuda-zero.so")
}

func TestFakeNoDeviceCodesAreAbsent(t *testing.T) {
	for _, tc := range []struct{ name, code string }{
		{"no-device", "100"},
		{"invalid-handle", "400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib := fake.Build(t, "libcuda-"+tc.name+".so")
			t.Setenv("FAKE_CUDA_INIT_RESULT", tc.code)
			t.Setenv("FAKE_CUDA_DEVICES", "2")
			fake.WantAbsent(t, lib)
			if d := drivers.Load([]string{lib}); !strings.HasPrefix(d.Absent, "cuInit: "+tc.code+" ") {
				t.Errorf("absent = %q", d.Absent)
			}
		})
	}
}

func TestFakeInitFailureIsAnErrorAndCached(t *testing.T) {
	lib := fake.Build(t, "libcuda-init999.so")
	t.Setenv("FAKE_CUDA_INIT_RESULT", "999")
	t.Setenv("FAKE_CUDA_DEVICES", "1")
	for i := 0; i < 3; i++ {
		fake.WantFailure(t, lib, "cuInit failed: 999 CUDA_ERROR_UNKNOWN")
	}
	fake.WantInitCalls(t, lib, 1, "over 3 Inits")
}

func TestFakeDeviceCountFailure(t *testing.T) {
	lib := fake.Build(t, "libcuda-count999.so")
	t.Setenv("FAKE_CUDA_DEVICES", "1")
	t.Setenv("FAKE_CUDA_COUNT_RESULT", "999")
	fake.WantFailure(t, lib, "cuDeviceGetCount failed: 999 CUDA_ERROR_UNKNOWN")
}

func TestFakeTwoDevices(t *testing.T) {
	t.Setenv("FAKE_CUDA_DEVICES", "2")
	fake.CheckCycles(t, "libcuda-two.so", checkTwoDevices)
}

func checkTwoDevices(t *testing.T, p plugin.Platform) {
	t.Helper()
	devs := fakedriver.CheckPlatform(t, p, fakedriver.PlatformWant{
		Name: "CUDA", Vendor: "NVIDIA Corporation", Version: "12.4", Backend: ol.PlatformBackendCuda, Devices: 2,
	})
	for i, d := range devs {
		got := *d.Info()
		want := fakedriver.GPUInfo()
		want.Name = plugin.Some([]string{"Fake CUDA GPU 0", "Fake CUDA GPU 1"}[i])
		want.ProductName = want.Name
		want.Uid = plugin.Some([]string{"CUDA-a00102030405060708090a0b0c0d0e0f", "CUDA-a10102030405060708090a0b0c0d0e0f"}[i])
		want.Vendor, want.VendorId = plugin.Some("NVIDIA"), plugin.Some[uint32](0x10de)
		want.DriverVersion = plugin.Some("12040")         // cuDriverGetVersion in decimal, as LLVM 22.1
		want.CooperativeLaunchSupport = plugin.Some(true) // the double's CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH is 1
		want.MaxWorkGroupSize, want.MaxWorkGroupSizePerDimension = plugin.Some[uint32](1024), plugin.Some(ol.Dimensions{X: 1024, Y: 1024, Z: 64})
		want.MaxWorkSize, want.MaxWorkSizePerDimension = plugin.Some[uint32](4294967295), plugin.Some(ol.Dimensions{X: 2147483647, Y: 65535, Z: 65535}) // the grid, as LLVM 22.1
		want.NumComputeUnits, want.MaxClockFrequency, want.MemoryClockRate = plugin.Some(uint32(80+i)), plugin.Some[uint32](1530), plugin.Some[uint32](877)
		want.MaxMemAllocSize, want.GlobalMemSize, want.WorkGroupLocalMemSize = plugin.Some(uint64(i+1)<<33), plugin.Some(uint64(i+1)<<33), plugin.Some[uint64](49152)
		if got != want {
			t.Errorf("device %d info:\n got  %+v\n want %+v", i, got, want)
		}
		if sm := d.(*Device).Target.SM(); sm != 80+10*i {
			t.Errorf("device %d has compute capability %d, want %d", i, sm, 80+10*i)
		}
		if d.IsHost() || d.IsValidBinary([]byte{0x7f, 'E', 'L', 'F'}) {
			t.Errorf("device %d: IsHost %v, takes an ELF header", i, d.IsHost())
		}
		if _, err := d.LoadProgram([]byte{1}); err == nil || !strings.Contains(err.Error(), "cuModuleLoadDataEx of not a program image") || !strings.Contains(err.Error(), "CUDA_ERROR_INVALID_PTX") {
			t.Errorf("device %d: LoadProgram: %v", i, err)
		}
	}
}

// TestRealDriver loads the installed libcuda (Debian package libcuda1, see
// tests/drivers/install-real-drivers.sh). On a machine without an NVIDIA GPU
// cuInit reports CUDA_ERROR_NO_DEVICE and the platform must be absent.
func TestRealDriver(t *testing.T) {
	fake.CheckRealDriver(t, sonames, func(t *testing.T, d fakedriver.State) {
		if d.Absent == "" {
			t.Log("the driver initialised and reported 0 devices")
		}
		if _, statErr := os.Stat("/dev/nvidia0"); statErr != nil && d.Init != cudaErrorNoDevice && d.Init != -1 {
			t.Errorf("no /dev/nvidia0 but cuInit = %d, want %d", d.Init, cudaErrorNoDevice)
		}
	}, func(info *plugin.DeviceInfo) bool {
		return info.Name.V != "" && strings.HasPrefix(info.Uid.V, "GPU-") && info.GlobalMemSize.V != 0 && info.MaxWorkGroupSize.V != 0
	})
}
