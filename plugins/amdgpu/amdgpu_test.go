package amdgpu

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ebitengine/purego"
	"go.uber.org/goleak"

	"github.com/liboffload-go/liboffload-go/impl/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// mapEnv is a plugin.Env backed by a map (the process environment is not
// consulted for the library override).
type mapEnv map[string]string

func (e mapEnv) Lookup(name string) (string, bool) { v, ok := e[name]; return v, ok }

// buildFake compiles tests/drivers/fake_hsa.c into a library named name in
// a fresh temporary directory. Because the plugin caches one driver per
// library path for the whole process, every scenario builds its own copy.
// Symbols in missing are left out of the dynamic symbol table (a version
// script makes them local), which is how a runtime without them looks.
func buildFake(t *testing.T, name string, missing ...string) string {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("..", "..", "tests", "drivers", "fake_hsa.c"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, name)
	args := []string{"-shared", "-fPIC", "-O1", "-o", lib, src}
	if len(missing) > 0 {
		script := filepath.Join(dir, "hide.map")
		text := "{ global: *; local: " + strings.Join(missing, "; ") + "; };\n"
		if err := os.WriteFile(script, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-Wl,--version-script="+script)
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("building the fake runtime: %s %v: %v\n%s", cc, args, err, out)
	}
	return lib
}

// initCalls asks a loaded fake how often its hsa_init ran.
func initCalls(t *testing.T, lib string) int {
	t.Helper()
	// The fake is already loaded by the plugin: this only takes another
	// reference (never dropped, like the plugin's).
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := purego.Dlsym(h, "fake_hsa_init_calls")
	if err != nil {
		t.Fatal(err)
	}
	n, _, _ := purego.SyscallN(fn)
	return int(int32(n))
}

func initFake(t *testing.T, lib string) (plugin.Platform, error) {
	t.Helper()
	return New().Init(mapEnv{EnvLibrary: lib})
}

func TestName(t *testing.T) {
	if got := New().Name(); got != "amdgpu" {
		t.Fatalf("Name() = %q, want amdgpu", got)
	}
}

func TestLibraryNames(t *testing.T) {
	if got := libraryNames(nil); strings.Join(got, ",") != "libhsa-runtime64.so.1,libhsa-runtime64.so" {
		t.Errorf("libraryNames(nil) = %v", got)
	}
	if got := libraryNames(mapEnv{EnvLibrary: ""}); len(got) != 2 {
		t.Errorf("empty override: libraryNames = %v, want the SONAMEs", got)
	}
	if got := libraryNames(mapEnv{EnvLibrary: "/x/libfake.so"}); len(got) != 1 || got[0] != "/x/libfake.so" {
		t.Errorf("override: libraryNames = %v", got)
	}
}

func TestLibraryMissingIsAbsent(t *testing.T) {
	lib := filepath.Join(t.TempDir(), "libhsa-does-not-exist.so")
	p, err := initFake(t, lib)
	if p != nil || err != nil {
		t.Fatalf("Init = (%v, %v), want (nil, nil)", p, err)
	}
	d := loadDriver([]string{lib})
	if d.handle != 0 || !strings.Contains(d.absent, "libhsa-does-not-exist.so") {
		t.Fatalf("driver = %+v, want not loaded with the path in the reason", d)
	}
}

func TestFakeMissingSymbolIsAbsent(t *testing.T) {
	lib := buildFake(t, "libhsa-nopools.so", "hsa_amd_agent_iterate_memory_pools")
	t.Setenv("FAKE_HSA_GPUS", "2")
	p, err := initFake(t, lib)
	if p != nil || err != nil {
		t.Fatalf("Init = (%v, %v), want (nil, nil)", p, err)
	}
	d := loadDriver([]string{lib})
	if !strings.Contains(d.absent, "does not export hsa_amd_agent_iterate_memory_pools") {
		t.Errorf("absent = %q, want the missing symbol named", d.absent)
	}
	if n := initCalls(t, lib); n != 0 {
		t.Errorf("hsa_init called %d times, want 0 (symbols are checked first)", n)
	}
}

func TestFakeInitFailureIsAbsentAndCached(t *testing.T) {
	lib := buildFake(t, "libhsa-init1008.so")
	t.Setenv("FAKE_HSA_INIT_RESULT", "0x1008")
	t.Setenv("FAKE_HSA_GPUS", "2")
	for i := 0; i < 3; i++ {
		p, err := initFake(t, lib)
		if p != nil || err != nil {
			t.Fatalf("Init = (%v, %v), want (nil, nil)", p, err)
		}
	}
	d := loadDriver([]string{lib})
	if !strings.HasPrefix(d.absent, "hsa_init: 0x1008 HSA_STATUS_ERROR_OUT_OF_RESOURCES") {
		t.Errorf("absent = %q", d.absent)
	}
	if n := initCalls(t, lib); n != 1 {
		t.Errorf("hsa_init called %d times over 3 Inits, want 1", n)
	}
}

func TestFakeCPUOnlyIsAbsent(t *testing.T) {
	lib := buildFake(t, "libhsa-cpuonly.so")
	t.Setenv("FAKE_HSA_GPUS", "0")
	p, err := initFake(t, lib)
	if p != nil || err != nil {
		t.Fatalf("Init = (%v, %v), want (nil, nil)", p, err)
	}
	if d := loadDriver([]string{lib}); d.initStatus != 0 || d.absent != "" || d.err != nil {
		t.Fatalf("driver = %+v, want initialised", d)
	}
}

func TestFakeIterateFailureIsAnError(t *testing.T) {
	lib := buildFake(t, "libhsa-iterate.so")
	t.Setenv("FAKE_HSA_GPUS", "1")
	t.Setenv("FAKE_HSA_ITERATE_RESULT", "0x1000")
	p, err := initFake(t, lib)
	if p != nil {
		t.Fatal("Init returned a platform")
	}
	var oe *ol.Error
	if !errors.As(err, &oe) || oe.Code != ol.ErrcBackendFailure ||
		!strings.Contains(oe.Details, "hsa_iterate_agents failed: 0x1000 HSA_STATUS_ERROR") {
		t.Fatalf("error = %v, want BACKEND_FAILURE naming hsa_iterate_agents and 0x1000", err)
	}
}

func TestFakeTwoGPUs(t *testing.T) {
	lib := buildFake(t, "libhsa-two.so")
	t.Setenv("FAKE_HSA_GPUS", "2")
	for round := 0; round < 2; round++ { // an olShutDown/olInit cycle
		p, err := initFake(t, lib)
		if err != nil || p == nil {
			t.Fatalf("round %d: Init = (%v, %v), want a platform", round, p, err)
		}
		checkTwoGPUs(t, p)
		if err := p.Deinit(); err != nil {
			t.Fatalf("Deinit: %v", err)
		}
	}
	if n := initCalls(t, lib); n != 1 {
		t.Errorf("hsa_init called %d times over 2 Inits, want 1", n)
	}
}

func checkTwoGPUs(t *testing.T, p plugin.Platform) {
	t.Helper()
	if p.Name() != "AMDGPU" || p.Vendor() != "Advanced Micro Devices" || p.Version() != "1.1" ||
		p.Backend() != ol.PlatformBackendAmdgpu {
		t.Errorf("platform = %q %q %q %v", p.Name(), p.Vendor(), p.Version(), p.Backend())
	}
	devs := p.Devices()
	if len(devs) != 2 {
		t.Fatalf("%d devices, want 2 (the CPU agent must be skipped)", len(devs))
	}
	for i, d := range devs {
		if a := d.(*Device).agent; a != uint64(0x200+i) {
			t.Errorf("device %d is agent %#x, want %#x", i, a, 0x200+i)
		}
		got := *d.Info()
		want := plugin.DeviceInfo{
			Type:                   ol.DeviceTypeGpu,
			Name:                   "gfx90a",
			ProductName:            []string{"Fake AMD GPU 0", "Fake AMD GPU 1"}[i],
			UID:                    []string{"GPU-00000000000000a0", "GPU-00000000000000a1"}[i],
			Vendor:                 "AMD",
			DriverVersion:          "1.1",
			MaxWorkGroupSize:       1024,
			MaxWorkGroupSizePerDim: ol.Dimensions{X: 1024, Y: 1024, Z: 1024},
			MaxWorkSize:            4294967295,
			MaxWorkSizePerDim:      ol.Dimensions{X: 4294967295, Y: 65535, Z: 65535},
			VendorID:               0x1002,
			NumComputeUnits:        uint32(104 + i),
			MaxClockMHz:            1700,
			MemoryClockMHz:         1600,
			AddressBits:            64,
			MaxMemAllocSize:        uint64(i+1) << 36, // the coarse-grained pool
			GlobalMemSize:          uint64(i+1) << 36,
			LocalMemSize:           65536,
			SingleFPConfig:         127,
			DoubleFPConfig:         127,
			HalfFPConfig:           0,
			VectorWidthChar:        1, VectorWidthShort: 1, VectorWidthInt: 1, VectorWidthLong: 1,
			VectorWidthFloat: 1, VectorWidthDouble: 1, VectorWidthHalf: 0,
		}
		if got != want {
			t.Errorf("device %d info:\n got  %+v\n want %+v", i, got, want)
		}
		checkUnsupported(t, d)
	}
}

func checkUnsupported(t *testing.T, d plugin.Device) {
	t.Helper()
	if d.IsHost() {
		t.Error("IsHost() = true")
	}
	if d.IsValidBinary([]byte{0x7f, 'E', 'L', 'F'}) {
		t.Error("IsValidBinary() = true")
	}
	errs := []error{}
	_, err := d.Alloc(ol.AllocType(0), 16)
	errs = append(errs, err, d.Free(1, ol.AllocType(0)))
	_, err = d.Register(1, 16)
	errs = append(errs, err, d.Unregister(1))
	_, err = d.NewQueue()
	errs = append(errs, err)
	_, err = d.LoadProgram([]byte{1})
	errs = append(errs, err)
	for i, err := range errs {
		var oe *ol.Error
		if !errors.As(err, &oe) || oe.Code != ol.ErrcUnsupported || !strings.HasPrefix(oe.Details, "amdgpu: ") {
			t.Errorf("operation %d: error = %v, want UNSUPPORTED from amdgpu", i, err)
		}
	}
}

// TestRealDriver loads the installed ROCr (Debian package
// libhsa-runtime64-1, see tests/drivers/install-real-drivers.sh). Without
// /dev/kfd hsa_init fails (0x1008) and the platform must be absent.
func TestRealDriver(t *testing.T) {
	d := loadDriver(sonames)
	if d.handle == 0 {
		t.Skipf("no real HSA runtime installed (%s); run tests/drivers/install-real-drivers.sh", d.absent)
	}
	p, err := New().Init(mapEnv{})
	if err != nil {
		t.Fatalf("Init with %s: %v", d.lib, err)
	}
	t.Logf("%s: hsa_init = %#x, absent = %q", d.lib, d.initStatus, d.absent)
	if p == nil {
		if _, statErr := os.Stat("/dev/kfd"); statErr != nil && d.initStatus == 0 {
			t.Errorf("no /dev/kfd but hsa_init succeeded")
		}
		return
	}
	defer p.Deinit()
	for _, dev := range p.Devices() {
		info := dev.Info()
		t.Logf("%+v", *info)
		if info.Name == "" || info.GlobalMemSize == 0 || info.MaxWorkGroupSize == 0 {
			t.Errorf("implausible device info %+v", *info)
		}
	}
	if again := loadDriver(sonames); again != d {
		t.Error("the driver was loaded twice")
	}
}
