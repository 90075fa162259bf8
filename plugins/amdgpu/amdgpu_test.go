package amdgpu

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

// fake is tests/drivers/fake_hsa.c, loaded through this plugin.
var fake = fakedriver.Driver{
	Kind:        "HSA runtime",
	Source:      "fake_hsa.c",
	EnvLibrary:  EnvLibrary,
	InitFunc:    "hsa_init",
	InitCounter: "fake_hsa_init_calls",
	New:         func() plugin.Plugin { return New() },
	Load: func(names []string) fakedriver.State {
		d := drivers.Load(names)
		return fakedriver.State{Driver: d, Library: d.Library, Init: d.initStatus}
	},
}

func TestName(t *testing.T) {
	if got := New().Name(); got != "amdgpu" {
		t.Fatalf("Name() = %q, want amdgpu", got)
	}
}

func TestLibraryNames(t *testing.T) {
	fakedriver.CheckLibraryNames(t, New().LibraryNames, EnvLibrary, []string{"libhsa-runtime64.so.1", "libhsa-runtime64.so"})
}

func TestLibraryMissingIsAbsent(t *testing.T) {
	fake.CheckLibraryMissing(t, "libhsa-does-not-exist.so")
}

func TestFakeMissingSymbolIsAbsent(t *testing.T) {
	t.Setenv("FAKE_HSA_GPUS", "2")
	fake.CheckMissingSymbol(t, "libhsa-nopools.so", "hsa_amd_agent_iterate_memory_pools")
}

func TestFakeInitFailureIsAbsentAndCached(t *testing.T) {
	lib := fake.Build(t, "libhsa-init1008.so")
	t.Setenv("FAKE_HSA_INIT_RESULT", "0x1008")
	t.Setenv("FAKE_HSA_GPUS", "2")
	for i := 0; i < 3; i++ {
		fake.WantAbsent(t, lib)
	}
	d := drivers.Load([]string{lib})
	if !strings.HasPrefix(d.Absent, "hsa_init: 0x1008 HSA_STATUS_ERROR_OUT_OF_RESOURCES") {
		t.Errorf("absent = %q", d.Absent)
	}
	fake.WantInitCalls(t, lib, 1, "over 3 Inits")
}

func TestFakeCPUOnlyIsAbsent(t *testing.T) {
	t.Setenv("FAKE_HSA_GPUS", "0")
	fake.CheckNoDevices(t, "libhsa-cpuonly.so")
}

func TestFakeIterateFailureIsAnError(t *testing.T) {
	lib := fake.Build(t, "libhsa-iterate.so")
	t.Setenv("FAKE_HSA_GPUS", "1")
	t.Setenv("FAKE_HSA_ITERATE_RESULT", "0x1000")
	fake.WantFailure(t, lib, "hsa_iterate_agents failed: 0x1000 HSA_STATUS_ERROR")
}

func TestFakeTwoGPUs(t *testing.T) {
	t.Setenv("FAKE_HSA_GPUS", "2")
	fake.CheckCycles(t, "libhsa-two.so", checkTwoGPUs)
}

func checkTwoGPUs(t *testing.T, p plugin.Platform) {
	t.Helper()
	devs := fakedriver.CheckPlatform(t, p, fakedriver.PlatformWant{
		Name: "AMDGPU", Vendor: "Advanced Micro Devices", Version: "1.1", Backend: ol.PlatformBackendAmdgpu,
		Devices: 2, Why: " (the CPU agent must be skipped)",
	})
	for i, d := range devs {
		if a := d.(*Device).agent; a != uint64(0x200+i) {
			t.Errorf("device %d is agent %#x, want %#x", i, a, 0x200+i)
		}
		if tg := d.(*Device).Target.String(); tg != "gfx90a" {
			t.Errorf("device %d loads images for %s, want gfx90a", i, tg)
		}
		got := *d.Info()
		want := fakedriver.GPUInfo()
		want.Name = plugin.Some("gfx90a")
		want.ProductName = plugin.Some([]string{"Fake AMD GPU 0", "Fake AMD GPU 1"}[i])
		want.Uid = plugin.Some([]string{"GPU-00000000000000a0", "GPU-00000000000000a1"}[i])
		want.Vendor, want.VendorId = plugin.Some("AMD"), plugin.Some[uint32](0x1002)
		want.DriverVersion = plugin.Some("1.1")
		want.MaxWorkGroupSize, want.MaxWorkGroupSizePerDimension = plugin.Some[uint32](1024), plugin.Some(ol.Dimensions{X: 1024, Y: 1024, Z: 1024})
		want.MaxWorkSize, want.MaxWorkSizePerDimension = plugin.Some[uint32](4294967295), plugin.Some(ol.Dimensions{X: 4294967295, Y: 65535, Z: 65535})
		want.NumComputeUnits, want.MaxClockFrequency, want.MemoryClockRate = plugin.Some(uint32(104+i)), plugin.Some[uint32](1700), plugin.Some[uint32](1600)
		// MaxMemAllocSize and GlobalMemSize are the coarse-grained pool.
		want.MaxMemAllocSize, want.GlobalMemSize, want.WorkGroupLocalMemSize = plugin.Some(uint64(i+1)<<36), plugin.Some(uint64(i+1)<<36), plugin.Some[uint64](65536)
		if got != want {
			t.Errorf("device %d info:\n got  %+v\n want %+v", i, got, want)
		}
		fakedriver.CheckUnsupported(t, d, "amdgpu")
	}
}

// TestRealDriver loads the installed ROCr (Debian package
// libhsa-runtime64-1, see tests/drivers/install-real-drivers.sh). Without
// /dev/kfd hsa_init fails (0x1008) and the platform must be absent.
func TestRealDriver(t *testing.T) {
	fake.CheckRealDriver(t, sonames, func(t *testing.T, d fakedriver.State) {
		if _, statErr := os.Stat("/dev/kfd"); statErr != nil && d.Init == 0 {
			t.Errorf("no /dev/kfd but hsa_init succeeded")
		}
	}, func(info *plugin.DeviceInfo) bool {
		return info.Name.V != "" && info.GlobalMemSize.V != 0 && info.MaxWorkGroupSize.V != 0
	})
}
