package amdgpu

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/contract"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
)

// The runtime runs no constructor of a code object (nor does the double):
// the plugin launches amdgcn.device.init once the executable is frozen
// and amdgcn.device.fini before destroying it, one dispatch each, only
// for a code object whose metadata lists them
// (tests/c/kernels/global_ctor.c, global_dtor.c).
func TestFakeConstructorsAndDestructorsRun(t *testing.T) {
	d := newDouble(t, "libhsa-ctors.so")
	g := d.Dev[0]
	dispatches := func() int64 { return int64(d.Call("fake_hsa_dispatches")) }

	n := dispatches()
	prog, err := g.LoadProgram(fake.Image(t, "global_ctor"))
	if err != nil {
		t.Fatal(err)
	}
	if got := dispatches() - n; got != 1 {
		t.Errorf("loading a code object with a constructor: %d dispatches, want 1 (amdgcn.device.init)", got)
	}
	// the init kernel calls through pointers: its call stack needs a
	// private segment of the plugin's stack size; other kernels keep theirs
	ik, err := prog.Kernel(initKernel)
	if err != nil {
		t.Fatal(err)
	}
	if k := ik.(*Kernel); k.privateSize != dynamicStackSize || k.maxGroup != 1 || k.implicitOff != 0 || k.argsSize != 0 {
		t.Errorf("%s: private %d, max group %d, implicit arguments at %d, %d bytes of arguments; want %d, 1, 0, 0",
			initKernel, k.privateSize, k.maxGroup, k.implicitOff, k.argsSize, dynamicStackSize)
	}
	if gk, err := prog.Kernel("global_ctor"); err != nil || gk.(*Kernel).privateSize != 0 {
		t.Errorf("global_ctor: %v, private segment %d, want 0", err, gk.(*Kernel).privateSize)
	}
	addr, size, err := prog.Global("global")
	if err != nil || size != 256 {
		t.Fatalf("global: %d bytes, %v", size, err)
	}
	b := d.Peek(addr, 256)
	for i := 0; i < 64; i++ {
		if v := binary.LittleEndian.Uint32(b[4*i:]); v != uint32(i)+100 {
			t.Fatalf("global[%d] = %d after the load, want %d (the constructor did not run)", i, v, i+100)
		}
	}
	n = dispatches()
	if err := prog.Unload(); err != nil {
		t.Fatal(err)
	}
	if got := dispatches() - n; got != 0 {
		t.Errorf("unloading a code object without destructors: %d dispatches", got)
	}

	// no constructors or destructors: nothing is launched
	n = dispatches()
	foo, err := g.LoadProgram(fake.Image(t, "foo"))
	if err != nil {
		t.Fatal(err)
	}
	if err := foo.Unload(); err != nil {
		t.Fatal(err)
	}
	if got := dispatches() - n; got != 0 {
		t.Errorf("a code object without constructors: %d dispatches", got)
	}

	// the destructor writes through dtor_target when the program goes
	target := contract.MustAlloc(t, g, ol.AllocTypeDevice, 65*4)
	n = dispatches()
	dtor, err := g.LoadProgram(fake.Image(t, "global_dtor"))
	if err != nil {
		t.Fatal(err)
	}
	if got := dispatches() - n; got != 0 {
		t.Errorf("loading a code object with only a destructor: %d dispatches", got)
	}
	p, _, err := dtor.Global("dtor_target")
	if err != nil {
		t.Fatal(err)
	}
	d.Poke(p, binary.LittleEndian.AppendUint64(nil, uint64(target)))
	if seen := d.Peek(target, 4); binary.LittleEndian.Uint32(seen) != 0 {
		t.Fatal("the destructor ran before the unload")
	}
	if err := dtor.Unload(); err != nil {
		t.Fatal(err)
	}
	if got := dispatches() - n; got != 1 {
		t.Errorf("unloading a code object with a destructor: %d dispatches, want 1 (amdgcn.device.fini)", got)
	}
	seen := d.Peek(target, 65*4)
	for i := 0; i < 64; i++ {
		if v := binary.LittleEndian.Uint32(seen[4*i:]); v != uint32(i)+200 {
			t.Fatalf("target[%d] = %d after the unload, want %d (the destructor did not run)", i, v, i+200)
		}
	}
	_ = g.Free(target, ol.AllocTypeDevice)
	d.Deinit()
}

// A constructor that faults fails the load with the runtime's error, and
// the executable is destroyed.
func TestFakeFailingConstructorFailsLoad(t *testing.T) {
	d := newDouble(t, "libhsa-ctorfault.so")
	g := d.Dev[0]
	t.Setenv("FAKE_HSA_CTOR_RESULT", "41") // HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION
	prog, err := g.LoadProgram(fake.Image(t, "global_ctor"))
	var oe *ol.Error
	if prog != nil || !errors.As(err, &oe) || oe.Code != ol.ErrcBackendFailure ||
		!strings.Contains(oe.Details, "constructors (amdgcn.device.init)") || !strings.Contains(oe.Details, "APERTURE_VIOLATION") {
		t.Fatalf("LoadProgram with a faulting constructor = (%v, %v)", prog, err)
	}
	if n := d.Live("executable"); n != 0 {
		t.Errorf("%d executables alive after the failed load", n)
	}
	t.Setenv("FAKE_HSA_CTOR_RESULT", "")
	// the device goes on working: a load without the fault runs the constructor
	prog2, err := g.LoadProgram(fake.Image(t, "global_ctor"))
	if err != nil {
		t.Fatal(err)
	}
	addr, _, err := prog2.Global("global")
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint32(d.Peek(addr+4, 4)); v != 101 {
		t.Errorf("global[1] = %d, want 101", v)
	}
	if err := prog2.Unload(); err != nil {
		t.Fatal(err)
	}
	if err := d.Platform.Deinit(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"queue", "signal", "executable"} {
		if n := d.Count("fake_hsa_leaked", k); n != 0 {
			t.Errorf("%d %s leaked", n, k)
		}
	}
}

// clang-22's code objects with a constructor (destructor) list
// amdgcn.device.init (fini) in their metadata: no explicit arguments, the
// implicit ones from offset 0, one work-item, a dynamic call stack; so do
// the double's (hsaco_meta), and a code object without constructors lists
// neither.
func TestClangConstructorKernelMetadata(t *testing.T) {
	if _, err := exec.LookPath("clang-22"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("clang-22 is needed (CI installs it)")
		}
		t.Skip("no clang-22")
	}
	root := fakedriver.ModuleRoot(t)
	check := func(what string, meta map[string]kernelMeta, has, hasNot string) {
		t.Helper()
		m, ok := meta[has]
		if !ok || m.implicitBase != 0 || m.argsSize != 0 || m.maxFlatGroupSize != 1 || !m.dynamicStack {
			t.Errorf("%s: %s is %+v (listed: %v), want implicit arguments at 0, no arguments, 1 work-item, a dynamic stack", what, has, m, ok)
		}
		if _, ok := meta[hasNot]; ok {
			t.Errorf("%s lists %s", what, hasNot)
		}
	}
	for _, tc := range []struct{ source, has, hasNot string }{
		{"global_ctor", initKernel, finiKernel}, {"global_dtor", finiKernel, initKernel},
	} {
		out := filepath.Join(t.TempDir(), tc.source+".hsaco")
		cmd := exec.Command("clang-22", "--target=amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-nogpulib", "-ffreestanding", "-O2",
			"-I", filepath.Join(root, "include"), filepath.Join(root, "tests", "c", "kernels", tc.source+".c"), "-o", out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", cmd, err, b)
		}
		img, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		meta := parseKernelMeta(img)
		check("clang-22's "+tc.source, meta, tc.has, tc.hasNot)
		if m := meta[tc.source]; m.dynamicStack {
			t.Errorf("clang-22's %s: kernel %s has a dynamic stack", tc.source, tc.source)
		}
		check("the double's "+tc.source, parseKernelMeta(fakedriver.FakeHsaco(t, tc.source, "gfx90a")), tc.has, tc.hasNot)
	}
	meta := parseKernelMeta(fakedriver.FakeHsaco(t, "foo", "gfx90a"))
	for _, k := range []string{initKernel, finiKernel} {
		if _, ok := meta[k]; ok {
			t.Errorf("the double's foo (no constructors) lists %s", k)
		}
	}
}
