package cuda

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

// buildFake compiles tests/drivers/fake_cuda.c into a library named name in
// a fresh temporary directory. Because the plugin caches one driver per
// library path for the whole process, every scenario builds its own copy.
// Symbols in missing are left out of the dynamic symbol table (a version
// script makes them local), which is how a driver without them looks.
func buildFake(t *testing.T, name string, missing ...string) string {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("..", "..", "tests", "drivers", "fake_cuda.c"))
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
		t.Fatalf("building the fake driver: %s %v: %v\n%s", cc, args, err, out)
	}
	return lib
}

// initCalls asks a loaded fake how often its cuInit ran.
func initCalls(t *testing.T, lib string) int {
	t.Helper()
	// The fake is already loaded by the plugin: this only takes another
	// reference (never dropped, like the plugin's).
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := purego.Dlsym(h, "fake_cuda_init_calls")
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
	if got := New().Name(); got != "cuda" {
		t.Fatalf("Name() = %q, want cuda", got)
	}
}

func TestLibraryNames(t *testing.T) {
	if got := libraryNames(nil); strings.Join(got, ",") != "libcuda.so.1,libcuda.so" {
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
	lib := filepath.Join(t.TempDir(), "libcuda-does-not-exist.so")
	p, err := initFake(t, lib)
	if p != nil || err != nil {
		t.Fatalf("Init = (%v, %v), want (nil, nil)", p, err)
	}
	d := loadDriver([]string{lib})
	if d.handle != 0 || !strings.Contains(d.absent, "libcuda-does-not-exist.so") {
		t.Fatalf("driver = %+v, want not loaded with the path in the reason", d)
	}
}

func TestFakeMissingSymbolIsAbsent(t *testing.T) {
	lib := buildFake(t, "libcuda-nouuid.so", "cuDeviceGetUuid")
	t.Setenv("FAKE_CUDA_DEVICES", "2")
	p, err := initFake(t, lib)
	if p != nil || err != nil {
		t.Fatalf("Init = (%v, %v), want (nil, nil)", p, err)
	}
	d := loadDriver([]string{lib})
	if !strings.Contains(d.absent, "does not export cuDeviceGetUuid") {
		t.Errorf("absent = %q, want the missing symbol named", d.absent)
	}
	if n := initCalls(t, lib); n != 0 {
		t.Errorf("cuInit called %d times, want 0 (symbols are checked first)", n)
	}
}

func TestFakeZeroDevices(t *testing.T) {
	lib := buildFake(t, "libcuda-zero.so")
	t.Setenv("FAKE_CUDA_DEVICES", "0")
	p, err := initFake(t, lib)
	if p != nil || err != nil {
		t.Fatalf("Init = (%v, %v), want (nil, nil)", p, err)
	}
	if d := loadDriver([]string{lib}); d.initResult != 0 || d.absent != "" || d.err != nil {
		t.Fatalf("driver = %+v, want initialised", d)
	}
}

func TestFakeNoDeviceCodesAreAbsent(t *testing.T) {
	for _, tc := range []struct{ name, code string }{
		{"no-device", "100"},
		{"invalid-handle", "400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib := buildFake(t, "libcuda-"+tc.name+".so")
			t.Setenv("FAKE_CUDA_INIT_RESULT", tc.code)
			t.Setenv("FAKE_CUDA_DEVICES", "2")
			p, err := initFake(t, lib)
			if p != nil || err != nil {
				t.Fatalf("Init = (%v, %v), want (nil, nil)", p, err)
			}
			if d := loadDriver([]string{lib}); !strings.HasPrefix(d.absent, "cuInit: "+tc.code+" ") {
				t.Errorf("absent = %q", d.absent)
			}
		})
	}
}

func wantBackendFailure(t *testing.T, err error, details string) {
	t.Helper()
	var oe *ol.Error
	if !errors.As(err, &oe) {
		t.Fatalf("error = %v (%T), want *ol.Error", err, err)
	}
	if oe.Code != ol.ErrcBackendFailure || !strings.Contains(oe.Details, details) {
		t.Fatalf("error = %v / %q, want BACKEND_FAILURE containing %q", oe.Code, oe.Details, details)
	}
}

func TestFakeInitFailureIsAnErrorAndCached(t *testing.T) {
	lib := buildFake(t, "libcuda-init999.so")
	t.Setenv("FAKE_CUDA_INIT_RESULT", "999")
	t.Setenv("FAKE_CUDA_DEVICES", "1")
	for i := 0; i < 3; i++ {
		p, err := initFake(t, lib)
		if p != nil {
			t.Fatalf("Init returned a platform with cuInit failing")
		}
		wantBackendFailure(t, err, "cuInit failed: 999 CUDA_ERROR_UNKNOWN")
	}
	if n := initCalls(t, lib); n != 1 {
		t.Errorf("cuInit called %d times over 3 Inits, want 1", n)
	}
}

func TestFakeDeviceCountFailure(t *testing.T) {
	lib := buildFake(t, "libcuda-count999.so")
	t.Setenv("FAKE_CUDA_DEVICES", "1")
	t.Setenv("FAKE_CUDA_COUNT_RESULT", "999")
	p, err := initFake(t, lib)
	if p != nil {
		t.Fatal("Init returned a platform")
	}
	wantBackendFailure(t, err, "cuDeviceGetCount failed: 999 CUDA_ERROR_UNKNOWN")
}

func TestFakeTwoDevices(t *testing.T) {
	lib := buildFake(t, "libcuda-two.so")
	t.Setenv("FAKE_CUDA_DEVICES", "2")
	for round := 0; round < 2; round++ { // an olShutDown/olInit cycle
		p, err := initFake(t, lib)
		if err != nil || p == nil {
			t.Fatalf("round %d: Init = (%v, %v), want a platform", round, p, err)
		}
		checkTwoDevices(t, p)
		if err := p.Deinit(); err != nil {
			t.Fatalf("Deinit: %v", err)
		}
	}
	if n := initCalls(t, lib); n != 1 {
		t.Errorf("cuInit called %d times over 2 Inits, want 1", n)
	}
}

func checkTwoDevices(t *testing.T, p plugin.Platform) {
	t.Helper()
	if p.Name() != "CUDA" || p.Vendor() != "NVIDIA Corporation" || p.Version() != "12.4" ||
		p.Backend() != ol.PlatformBackendCuda {
		t.Errorf("platform = %q %q %q %v", p.Name(), p.Vendor(), p.Version(), p.Backend())
	}
	devs := p.Devices()
	if len(devs) != 2 {
		t.Fatalf("%d devices, want 2", len(devs))
	}
	for i, d := range devs {
		got := *d.Info()
		want := plugin.DeviceInfo{
			Type:                   ol.DeviceTypeGpu,
			Name:                   []string{"Fake CUDA GPU 0", "Fake CUDA GPU 1"}[i],
			ProductName:            []string{"Fake CUDA GPU 0", "Fake CUDA GPU 1"}[i],
			UID:                    []string{"GPU-a0010203-0405-0607-0809-0a0b0c0d0e0f", "GPU-a1010203-0405-0607-0809-0a0b0c0d0e0f"}[i],
			Vendor:                 "NVIDIA Corporation",
			DriverVersion:          "12.4",
			MaxWorkGroupSize:       1024,
			MaxWorkGroupSizePerDim: ol.Dimensions{X: 1024, Y: 1024, Z: 64},
			MaxWorkSize:            4294967295,
			MaxWorkSizePerDim:      ol.Dimensions{X: 4294967295, Y: 1024 * 65535, Z: 64 * 65535},
			VendorID:               0x10de,
			NumComputeUnits:        uint32(80 + i),
			MaxClockMHz:            1530,
			MemoryClockMHz:         877,
			AddressBits:            64,
			MaxMemAllocSize:        uint64(i+1) << 33,
			GlobalMemSize:          uint64(i+1) << 33,
			LocalMemSize:           49152,
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
		if !errors.As(err, &oe) || oe.Code != ol.ErrcUnsupported || !strings.HasPrefix(oe.Details, "cuda: ") {
			t.Errorf("operation %d: error = %v, want UNSUPPORTED from cuda", i, err)
		}
	}
}

// TestRealDriver loads the installed libcuda (Debian package libcuda1, see
// tests/drivers/install-real-drivers.sh). On a machine without an NVIDIA GPU
// cuInit reports CUDA_ERROR_NO_DEVICE and the platform must be absent.
func TestRealDriver(t *testing.T) {
	d := loadDriver(sonames)
	if d.handle == 0 {
		t.Skipf("no real CUDA driver installed (%s); run tests/drivers/install-real-drivers.sh", d.absent)
	}
	p, err := New().Init(mapEnv{})
	if err != nil {
		t.Fatalf("Init with %s: %v", d.lib, err)
	}
	t.Logf("%s: cuInit = %d, absent = %q", d.lib, d.initResult, d.absent)
	if p == nil {
		if d.absent == "" {
			t.Log("the driver initialised and reported 0 devices")
		}
		if _, statErr := os.Stat("/dev/nvidia0"); statErr != nil && d.initResult != cudaErrorNoDevice && d.initResult != -1 {
			t.Errorf("no /dev/nvidia0 but cuInit = %d, want %d", d.initResult, cudaErrorNoDevice)
		}
		return
	}
	defer p.Deinit()
	if len(p.Devices()) == 0 {
		t.Fatal("platform without devices")
	}
	for _, dev := range p.Devices() {
		info := dev.Info()
		t.Logf("%+v", *info)
		if info.Name == "" || !strings.HasPrefix(info.UID, "GPU-") || info.GlobalMemSize == 0 || info.MaxWorkGroupSize == 0 {
			t.Errorf("implausible device info %+v", *info)
		}
	}
	if again := loadDriver(sonames); again != d {
		t.Error("the driver was loaded twice")
	}
}
