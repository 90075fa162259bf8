// Package fakedriver is the test scaffolding the GPU plugins share: it
// builds the driver doubles in tests/drivers/*.c into shared libraries,
// points a plugin at one, asks a loaded double how often its init entry
// point ran, and checks what every GPU plugin must do alike (the
// scenarios of scenarios.go drive a loaded double through the plugin
// interfaces). Only tests import it.
package fakedriver

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/internal/vendorlib"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// Env is a plugin.Env backed by a map (the process environment is not
// consulted for the library override).
type Env map[string]string

// Lookup implements plugin.Env.
func (e Env) Lookup(name string) (string, bool) { v, ok := e[name]; return v, ok }

// State is what a test reads of a plugin's process-wide driver.
type State struct {
	// Driver is the plugin's cached driver itself, to tell whether two
	// loads returned the same one.
	Driver any
	vendorlib.Library
	// Init is what the driver's init entry point returned (-1 if it was
	// never called).
	Init int64
}

// Driver describes a driver double and the plugin that loads it.
type Driver struct {
	// Kind names the library in messages, e.g. "CUDA driver".
	Kind string
	// Source is the double's file in tests/drivers, e.g. "fake_cuda.c".
	Source string
	// EnvLibrary is the variable that makes the plugin load one exact library.
	EnvLibrary string
	// InitFunc is the driver's init entry point, e.g. "cuInit".
	InitFunc string
	// InitCounter is the double's function that returns how often InitFunc
	// was called, e.g. "fake_cuda_init_calls".
	InitCounter string
	// New returns the plugin.
	New func() plugin.Plugin
	// Load returns the plugin's process-wide driver for names (loading it
	// on first use, like the plugin's Init).
	Load func(names []string) State

	// What the scenarios of scenarios.go need of the double:
	// GPUsEnv is its variable for the number of GPUs.
	GPUsEnv string
	// Prefix names its test entry points: Prefix+"_live" counts live
	// objects by kind, Prefix+"_peek" and "_poke" copy device memory
	// (the device address last in peek if PeekHostFirst, as a copy's
	// destination first).
	Prefix        string
	PeekHostFirst bool
	// QueueKind is what it counts for a plugin queue, e.g. "stream".
	QueueKind string
	// Image builds a kernel source of tests/c/kernels as an image it runs.
	Image func(t *testing.T, kernel string) []byte
	// Held checks, after Deinit, that it holds nothing.
	Held func(d *Double)
	// LastError is its last error, for messages (nil if it keeps none).
	LastError func(d *Double) string
}

// Build compiles the double into a library named name in a fresh temporary
// directory. Because the plugins cache one driver per library path for the
// whole process, every scenario builds its own copy. Symbols in missing are
// left out of the dynamic symbol table (a version script makes them
// local), which is how a driver without them looks.
func (f *Driver) Build(t *testing.T, name string, missing ...string) string {
	t.Helper()
	src := filepath.Join(ModuleRoot(t), "tests", "drivers", f.Source)
	dir := t.TempDir()
	lib := filepath.Join(dir, name)
	args := []string{"-shared", "-fPIC", "-O1", "-I", filepath.Join(ModuleRoot(t), "include"), "-o", lib, src, "-ldl", "-lpthread"}
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
		t.Fatalf("building the fake %s: %s %v: %v\n%s", f.Kind, cc, args, err, out)
	}
	return lib
}

// ModuleRoot is the directory of go.mod above the test's working directory
// (a package directory of the module).
func ModuleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// InitCalls asks a loaded double how often its init entry point ran.
func (f *Driver) InitCalls(t *testing.T, lib string) int {
	t.Helper()
	// The double is already loaded by the plugin: this only takes another
	// reference (never dropped, like the plugin's).
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := purego.Dlsym(h, f.InitCounter)
	if err != nil {
		t.Fatal(err)
	}
	n, _, _ := purego.SyscallN(fn)
	return int(int32(n))
}

// WantInitCalls checks that the init entry point of a loaded double ran
// want times; when says over what, e.g. "over 3 Inits".
func (f *Driver) WantInitCalls(t *testing.T, lib string, want int, when string) {
	t.Helper()
	if n := f.InitCalls(t, lib); n != want {
		t.Errorf("%s called %d times %s, want %d", f.InitFunc, n, when, want)
	}
}

// Init initialises the plugin with lib as the library override.
func (f *Driver) Init(t *testing.T, lib string) (plugin.Platform, error) {
	t.Helper()
	return f.New().Init(Env{f.EnvLibrary: lib})
}

// WantAbsent checks that Init with lib leaves the platform out without an
// error.
func (f *Driver) WantAbsent(t *testing.T, lib string) {
	t.Helper()
	if p, err := f.Init(t, lib); p != nil || err != nil {
		t.Fatalf("Init = (%v, %v), want (nil, nil)", p, err)
	}
}

// CheckLibraryMissing checks that a library name that does not exist
// (a file name in a fresh directory) leaves the platform out, with the
// path in the reason.
func (f *Driver) CheckLibraryMissing(t *testing.T, name string) {
	t.Helper()
	lib := filepath.Join(t.TempDir(), name)
	f.WantAbsent(t, lib)
	if s := f.Load([]string{lib}); s.Handle != 0 || !strings.Contains(s.Absent, name) {
		t.Fatalf("driver = %+v, want not loaded with the path in the reason", s.Driver)
	}
}

// CheckMissingSymbol checks that a double built as name without symbol
// leaves the platform out, naming the symbol, and that the driver was not
// initialised.
func (f *Driver) CheckMissingSymbol(t *testing.T, name, symbol string) {
	t.Helper()
	lib := f.Build(t, name, symbol)
	f.WantAbsent(t, lib)
	if s := f.Load([]string{lib}); !strings.Contains(s.Absent, "does not export "+symbol) {
		t.Errorf("absent = %q, want the missing symbol named", s.Absent)
	}
	f.WantInitCalls(t, lib, 0, "(symbols are checked first)")
}

// CheckNoDevices checks that a double that initialises but has no device
// for the plugin leaves the platform out without an error.
func (f *Driver) CheckNoDevices(t *testing.T, name string) {
	t.Helper()
	lib := f.Build(t, name)
	f.WantAbsent(t, lib)
	if s := f.Load([]string{lib}); s.Init != 0 || s.Absent != "" || s.Err != nil {
		t.Fatalf("driver = %+v, want initialised", s.Driver)
	}
}

// CheckCycles initialises the plugin with a double built as name twice, as
// olShutDown/olInit cycles do, checks each platform with check and
// deinitialises it, and checks that the driver was initialised once.
func (f *Driver) CheckCycles(t *testing.T, name string, check func(*testing.T, plugin.Platform)) {
	t.Helper()
	lib := f.Build(t, name)
	for round := 0; round < 2; round++ {
		p, err := f.Init(t, lib)
		if err != nil || p == nil {
			t.Fatalf("round %d: Init = (%v, %v), want a platform", round, p, err)
		}
		check(t, p)
		if err := p.Deinit(); err != nil {
			t.Fatalf("Deinit: %v", err)
		}
	}
	f.WantInitCalls(t, lib, 1, "over 2 Inits")
}

// CheckRealDriver loads the installed vendor library by its SONAMEs and
// initialises the plugin with it; it skips the test if none is installed
// (fails with CI=true, where .ci/run installs them).
// Without a platform, noPlatform checks the driver's state; with one, every
// device's info must be plausible, and the driver must stay the one loaded.
func (f *Driver) CheckRealDriver(t *testing.T, sonames []string, noPlatform func(*testing.T, State), plausible func(*plugin.DeviceInfo) bool) {
	t.Helper()
	s := f.Load(sonames)
	if s.Handle == 0 {
		if os.Getenv("CI") == "true" {
			// CI installs them (.ci/run): a missing one is a failure there
			t.Fatalf("no real %s installed (%s): .ci/run installs it with tests/drivers/install-real-drivers.sh", f.Kind, s.Absent)
		}
		t.Skipf("no real %s installed (%s); run tests/drivers/install-real-drivers.sh", f.Kind, s.Absent)
	}
	p, err := f.New().Init(Env{})
	if err != nil {
		t.Fatalf("Init with %s: %v", s.Name, err)
	}
	t.Logf("%s: %s = %d (%#x), absent = %q", s.Name, f.InitFunc, s.Init, s.Init, s.Absent)
	if p == nil {
		noPlatform(t, s)
		// 100 more initialisations: each finds no platform, and memory
		// stays flat (the driver is loaded once; what it says is kept).
		const warm, cycles = 10, 100
		var rss0 int64
		for i := 0; i < warm+cycles; i++ {
			if i == warm {
				rss0 = VmRSS(t)
			}
			q, err := f.New().Init(Env{})
			if err != nil || q != nil {
				t.Fatalf("cycle %d: Init = %v, %v; want no platform and no error", i, q, err)
			}
		}
		if growth := VmRSS(t) - rss0; growth > 1024 {
			t.Errorf("VmRSS grew by %d KiB over %d initialisations without a platform", growth, cycles)
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
		if !plausible(info) {
			t.Errorf("implausible device info %+v", *info)
		}
	}
	if again := f.Load(sonames); again.Driver != s.Driver {
		t.Error("the driver was loaded twice")
	}
}

// VmRSS is the process's resident memory in KiB.
func VmRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS: %v", err)
			}
			return kib
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// CheckName checks that the plugin is named want.
func (f *Driver) CheckName(t *testing.T, want string) {
	t.Helper()
	if got := f.New().Name(); got != want {
		t.Fatalf("Name() = %q, want %s", got, want)
	}
}

// CheckLibraryNames checks a plugin's choice of libraries: the SONAMEs
// without an override or with an empty one, the override alone otherwise.
func CheckLibraryNames(t *testing.T, libraryNames func(plugin.Env) []string, envLibrary string, sonames []string) {
	t.Helper()
	if got := libraryNames(nil); !slices.Equal(got, sonames) {
		t.Errorf("libraryNames(nil) = %v, want %v", got, sonames)
	}
	if got := libraryNames(Env{envLibrary: ""}); !slices.Equal(got, sonames) {
		t.Errorf("empty override: libraryNames = %v, want the SONAMEs", got)
	}
	if got := libraryNames(Env{envLibrary: "/x/libfake.so"}); len(got) != 1 || got[0] != "/x/libfake.so" {
		t.Errorf("override: libraryNames = %v", got)
	}
}

// WantBackendFailure checks that err is an *ol.Error with code
// BACKEND_FAILURE whose details contain details.
func WantBackendFailure(t *testing.T, err error, details string) {
	t.Helper()
	var oe *ol.Error
	if !errors.As(err, &oe) {
		t.Fatalf("error = %v (%T), want *ol.Error", err, err)
	}
	if oe.Code != ol.ErrcBackendFailure || !strings.Contains(oe.Details, details) {
		t.Fatalf("error = %v / %q, want BACKEND_FAILURE containing %q", oe.Code, oe.Details, details)
	}
}

// GPUInfo is the part of the expected device info that is the same for
// every GPU (liboffload reports FP configuration 127 for single and double
// precision, none for half, and vector widths of 1; single, double and half
// arithmetic, 23.1's FP support properties). A test sets the rest.
func GPUInfo() plugin.DeviceInfo {
	one := plugin.Some[uint32](1)
	return plugin.DeviceInfo{
		Type:                  plugin.Some(ol.DeviceTypeGpu),
		AddressBits:           plugin.Some[uint32](64),
		SingleFpConfig:        plugin.Some[uint32](127),
		DoubleFpConfig:        plugin.Some[uint32](127),
		HalfFpConfig:          plugin.Some[uint32](0),
		NativeVectorWidthChar: one, NativeVectorWidthShort: one, NativeVectorWidthInt: one, NativeVectorWidthLong: one,
		NativeVectorWidthFloat: one, NativeVectorWidthDouble: one, NativeVectorWidthHalf: plugin.Some[uint32](0),
		SingleFpSupport: plugin.Some(true), DoubleFpSupport: plugin.Some(true), HalfFpSupport: plugin.Some(true),
	}
}

// CheckUnsupported checks that a GPU device is not the host, accepts no
// binary and reports every other operation as UNSUPPORTED by backend.
func CheckUnsupported(t *testing.T, d plugin.Device, backend string) {
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
		if !errors.As(err, &oe) || oe.Code != ol.ErrcUnsupported || !strings.HasPrefix(oe.Details, backend+": ") {
			t.Errorf("operation %d: error = %v, want UNSUPPORTED from %s", i, err, backend)
		}
	}
}

// WantFailure checks that Init with lib returns no platform and a
// BACKEND_FAILURE whose details contain details.
func (f *Driver) WantFailure(t *testing.T, lib, details string) {
	t.Helper()
	p, err := f.Init(t, lib)
	if p != nil {
		t.Fatalf("Init returned a platform with %s failing", details)
	}
	WantBackendFailure(t, err, details)
}

// PlatformWant is what CheckPlatform expects of a platform.
type PlatformWant struct {
	Name, Vendor, Version string
	Backend               ol.PlatformBackend
	// Devices is the number of devices; Why says why if it is not obvious.
	Devices int
	Why     string
}

// CheckPlatform checks a platform against want and returns its devices.
func CheckPlatform(t *testing.T, p plugin.Platform, want PlatformWant) []plugin.Device {
	t.Helper()
	if p.Name() != want.Name || p.Vendor() != want.Vendor || p.Version() != want.Version ||
		p.Backend() != want.Backend {
		t.Errorf("platform = %q %q %q %v", p.Name(), p.Vendor(), p.Version(), p.Backend())
	}
	devs := p.Devices()
	if len(devs) != want.Devices {
		t.Fatalf("%d devices, want %d%s", len(devs), want.Devices, want.Why)
	}
	return devs
}

// HostKernel builds a kernel source of tests/c/kernels as a host shared
// object and returns its bytes.
func HostKernel(t *testing.T, kernel string) []byte {
	t.Helper()
	root := ModuleRoot(t)
	out := filepath.Join(t.TempDir(), kernel+".so")
	cmd := exec.Command("cc", "-O2", "-fPIC", "-shared", "-I", filepath.Join(root, "include"),
		filepath.Join(root, "tests", "c", "kernels", kernel+".c"), "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	img, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// FakeCubin builds a kernel source of tests/c/kernels as a host shared
// object and dresses it as a cubin for sm_80 with the ELF header nvcc
// writes (OS ABI CUDA, ABI version 7, EM_CUDA, the SM in the low byte of
// e_flags with 64-bit addressing): what the CUDA driver double loads and
// runs (tests/c/device/Makefile dresses its images the same way).
func FakeCubin(t *testing.T, kernel string) []byte {
	t.Helper()
	img := HostKernel(t, kernel)
	img[7], img[8] = 0x33, 7                          // EI_OSABI: CUDA; EI_ABIVERSION 7
	binary.LittleEndian.PutUint16(img[18:], 190)      // e_machine: EM_CUDA
	binary.LittleEndian.PutUint32(img[48:], 0x500550) // e_flags: sm_80, 64-bit, compute_80
	return img
}

// amdgpuFlags is the e_flags clang-22 writes for a code object of gfx with
// xnack and sramecc left to the processor ("any"): EF_AMDGPU_MACH, plus
// the "any" settings of both features (0x100, 0x400) on the gfx9
// processors that have them. The tests use gfx90a only.
func amdgpuFlags(gfx string) (uint32, bool) {
	mach := map[string]uint32{"gfx90a": 0x3f}
	m, ok := mach[gfx]
	if ok && strings.HasPrefix(gfx, "gfx9") {
		m |= 0x100 | 0x400
	}
	return m, ok
}

// FakeHsaco builds a kernel source of tests/c/kernels as a host shared
// object, adds the kernel metadata note a real code object carries
// (tests/drivers/hsaco_meta.c) and dresses it as an AMDGPU code object
// (code object v5) for gfx (only "gfx90a" is known): ELFOSABI_AMDGPU_HSA,
// ABI version 3, EM_AMDGPU and the processor's e_flags. The HSA runtime
// double loads and runs it.
func FakeHsaco(t *testing.T, kernel, gfx string) []byte {
	t.Helper()
	flags, ok := amdgpuFlags(gfx)
	if !ok {
		t.Fatalf("FakeHsaco: no e_flags known for %s", gfx)
	}
	img := withMetadata(t, HostKernel(t, kernel))
	img[7], img[8] = 64, 3                         // EI_OSABI: ELFOSABI_AMDGPU_HSA; EI_ABIVERSION: code object v5
	binary.LittleEndian.PutUint16(img[18:], 224)   // e_machine: EM_AMDGPU
	binary.LittleEndian.PutUint32(img[48:], flags) // e_flags
	return img
}

// withMetadata runs tests/drivers/hsaco_meta on a host shared object.
func withMetadata(t *testing.T, so []byte) []byte {
	t.Helper()
	root, dir := ModuleRoot(t), t.TempDir()
	tool, in, out := filepath.Join(dir, "hsaco_meta"), filepath.Join(dir, "in.so"), filepath.Join(dir, "out")
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if b, err := exec.Command(cc, "-O1", "-I", filepath.Join(root, "include"), filepath.Join(root, "tests", "drivers", "hsaco_meta.c"), "-o", tool).CombinedOutput(); err != nil {
		t.Fatalf("building hsaco_meta: %v\n%s", err, b)
	}
	if err := os.WriteFile(in, so, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(tool, in, out).CombinedOutput(); err != nil {
		t.Fatalf("hsaco_meta: %v\n%s", err, b)
	}
	img, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// Hooks are a driver double's test entry points, from a handle of its own
// on the library the plugin loaded.
type Hooks struct {
	t *testing.T
	h uintptr
}

// OpenHooks opens lib (already built) for its test entry points.
func OpenHooks(t *testing.T, lib string) *Hooks {
	t.Helper()
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	return &Hooks{t: t, h: h}
}

// Sym is the address of the double's function name.
func (k *Hooks) Sym(name string) uintptr {
	fn, err := purego.Dlsym(k.h, name)
	if err != nil {
		k.t.Fatal(err)
	}
	return fn
}

// Call calls the double's function name.
func (k *Hooks) Call(name string, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(k.Sym(name), args...)
	return r
}

// Count calls a counter of the double that takes a kind name, such as
// fake_cuda_live("stream").
func (k *Hooks) Count(fn, kind string) int {
	b := append([]byte(kind), 0)
	return int(int64(k.Call(fn, uintptr(unsafe.Pointer(&b[0])))))
}

// PtrOf turns an address into a pointer (for memory outside Go's heap).
func PtrOf(a uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }

// HostBytes is n bytes of CPU-visible memory at p.
func HostBytes(p uintptr, n int) []byte { return unsafe.Slice((*byte)(PtrOf(p)), n) }
