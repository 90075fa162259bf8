package amdgpu

import (
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"

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
		return fakedriver.State{Driver: d, Library: d.Library, Init: d.initStatus.Load()}
	},
	GPUsEnv:   "FAKE_HSA_GPUS",
	Prefix:    "fake_hsa",
	QueueKind: "queue",
	Image:     func(t *testing.T, k string) []byte { return fakedriver.FakeHsaco(t, k, "gfx90a") },
	Held:      held,
	LastError: lastError,
}

func TestName(t *testing.T) {
	fake.CheckName(t, "amdgpu")
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
	// one of each group of entry points the backend needs
	for _, sym := range []string{"hsa_shut_down", "hsa_amd_memory_async_copy", "hsa_amd_signal_async_handler", "hsa_queue_create", "hsa_executable_freeze"} {
		fake.CheckMissingSymbol(t, "libhsa-no-"+sym+".so", sym)
	}
}

// hsa_init runs at every Init (the runtime counts its initialisations), so
// a failing one is tried again each time; each leaves the platform out.
func TestFakeInitFailureIsAbsentEveryTime(t *testing.T) {
	lib := fake.Build(t, "libhsa-init1008.so")
	t.Setenv("FAKE_HSA_INIT_RESULT", "0x1008")
	t.Setenv("FAKE_HSA_GPUS", "2")
	pl := New()
	for i := 0; i < 3; i++ {
		if p, err := pl.Init(fakedriver.Env{EnvLibrary: lib}); p != nil || err != nil {
			t.Fatalf("Init = (%v, %v), want (nil, nil)", p, err)
		}
		if why := pl.AbsentReason(); !strings.HasPrefix(why, "hsa_init: 0x1008 HSA_STATUS_ERROR_OUT_OF_RESOURCES") {
			t.Errorf("absent = %q", why)
		}
	}
	fake.WantInitCalls(t, lib, 3, "over 3 Inits")
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

// Every Init calls hsa_init and every Deinit hsa_shut_down: olInit and
// olShutDown cycles re-initialise the runtime.
func TestFakeTwoGPUs(t *testing.T) {
	t.Setenv("FAKE_HSA_GPUS", "2")
	lib := fake.Build(t, "libhsa-two.so")
	for round := 0; round < 3; round++ {
		p, err := fake.Init(t, lib)
		if err != nil || p == nil {
			t.Fatalf("round %d: Init = (%v, %v), want a platform", round, p, err)
		}
		checkTwoGPUs(t, p)
		if err := p.Deinit(); err != nil {
			t.Fatalf("Deinit: %v", err)
		}
		// after the final hsa_shut_down the runtime is down again: a call
		// is refused
		var major uint16
		if st := callInit(t, lib, "hsa_system_get_info", 0, uintptr(unsafe.Pointer(&major))); st != 0x100B {
			t.Errorf("round %d: after Deinit hsa_system_get_info returned %#x, want 0x100b (not initialised)", round, st)
		}
	}
	fake.WantInitCalls(t, lib, 3, "over 3 Inits")
}

// callInit calls an entry point of a loaded double.
func callInit(t *testing.T, lib, name string, args ...uintptr) uintptr {
	t.Helper()
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := purego.Dlsym(h, name)
	if err != nil {
		t.Fatal(err)
	}
	r, _, _ := purego.SyscallN(fn, args...)
	return r
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
		want.CooperativeLaunchSupport = plugin.Some(true) // any grid that fits at once
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
		if d.IsHost() {
			t.Error("IsHost() = true")
		}
	}
}

// TestRealDriver loads the installed ROCr (Debian package
// libhsa-runtime64-1, see tests/drivers/install-real-drivers.sh). Without
// /dev/kfd hsa_init fails (0x1008) and the platform must be absent.
func TestRealDriver(t *testing.T) {
	fake.CheckRealDriver(t, sonames, func(t *testing.T, d fakedriver.State) {
		// hsa_init runs at Init, after d was read: its latest status
		st := d.Driver.(*driver).initStatus.Load()
		t.Logf("hsa_init returned %#x", st)
		if _, statErr := os.Stat("/dev/kfd"); statErr != nil && (st == 0 || st == -1) {
			t.Errorf("no /dev/kfd but hsa_init returned %d", st)
		}
	}, func(info *plugin.DeviceInfo) bool {
		return info.Name.V != "" && info.GlobalMemSize.V != 0 && info.MaxWorkGroupSize.V != 0
	})
	// without /dev/kfd the failing hsa_init ran once over all those
	// initialisations, and every one gave the same reason
	d := drivers.Load(sonames)
	if _, err := os.Stat(kfdPath); err == nil || d.Handle == 0 || d.initStatus.Load() == 0 {
		return
	}
	if n := d.initCalls.Load(); n != 1 {
		t.Errorf("hsa_init called %d times without %s, want 1", n, kfdPath)
	}
	pl := New()
	p, err := pl.Init(nil)
	if p != nil || err != nil || !strings.Contains(pl.AbsentReason(), "(no /dev/kfd)") || d.initCalls.Load() != 1 {
		t.Errorf("Init without /dev/kfd: %v, %v, absent %q, %d hsa_init calls", p, err, pl.AbsentReason(), d.initCalls.Load())
	}
}
