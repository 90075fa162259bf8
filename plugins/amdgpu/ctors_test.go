package amdgpu

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/contract"
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
