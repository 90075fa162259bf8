package fakedriver

import (
	"bytes"
	"syscall"
	"testing"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/internal/contract"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// Double is a driver double that the plugin has loaded, with its test
// entry points. The scenarios below drive it through the plugin
// interfaces; what differs between doubles comes from its Driver.
type Double struct {
	*Hooks
	T        *testing.T
	Driver   *Driver
	Lib      string
	Platform plugin.Platform
	Devices  []plugin.Device
}

// Open builds the double as name (without the entry points missing),
// initialises the plugin with it and two GPUs and opens the double's test
// entry points.
func (f *Driver) Open(t *testing.T, name string, missing ...string) *Double {
	t.Helper()
	lib := f.Build(t, name, missing...)
	t.Setenv(f.GPUsEnv, "2")
	pl, err := f.Init(t, lib)
	if err != nil || pl == nil {
		t.Fatalf("Init: %v %v", pl, err)
	}
	return &Double{Hooks: OpenHooks(t, lib), T: t, Driver: f, Lib: lib, Platform: pl, Devices: pl.Devices()}
}

// Live is how many objects of kind the double holds.
func (d *Double) Live(kind string) int { return d.Count(d.Driver.Prefix+"_live", kind) }

// Peek reads n bytes of device memory at p through the double.
func (d *Double) Peek(p uintptr, n int) []byte {
	b := make([]byte, n)
	args := []uintptr{p, uintptr(unsafe.Pointer(&b[0])), uintptr(n)}
	if d.Driver.PeekHostFirst {
		args[0], args[1] = args[1], args[0]
	}
	if d.Call(d.Driver.Prefix+"_peek", args...) != 0 {
		d.T.Fatalf("peek %#x: not device memory of the double", p)
	}
	return b
}

// Poke writes b to device memory at p through the double.
func (d *Double) Poke(p uintptr, b []byte) {
	if d.Call(d.Driver.Prefix+"_poke", p, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b))) != 0 {
		d.T.Fatalf("poke %#x: not device memory of the double", p)
	}
}

// Typed is a Double with the devices as the plugin's type D.
type Typed[D plugin.Device] struct {
	*Double
	Dev []D
}

// OpenTyped is Open with the devices as the plugin's type D.
func OpenTyped[D plugin.Device](t *testing.T, f *Driver, name string, missing ...string) *Typed[D] {
	t.Helper()
	d := &Typed[D]{Double: f.Open(t, name, missing...)}
	for _, x := range d.Devices {
		d.Dev = append(d.Dev, x.(D))
	}
	return d
}

// Deinit shuts the platform down and checks that the double holds nothing.
func (d *Double) Deinit() {
	d.T.Helper()
	if err := d.Platform.Deinit(); err != nil {
		d.T.Fatal(err)
	}
	d.Driver.Held(d)
}

// why is the double's last error for a message, if it keeps one.
func (d *Double) why() string {
	if d.Driver.LastError == nil {
		return ""
	}
	return " (runtime: " + d.Driver.LastError(d) + ")"
}

// lastError is the double's last error, "" if it keeps none.
func (d *Double) lastError() string {
	if d.Driver.LastError == nil {
		return ""
	}
	return d.Driver.LastError(d)
}

// LoadKernel loads kernel source (tests/c/kernels) as an image of the
// double on g and finds kernel name in it.
func (d *Double) LoadKernel(t *testing.T, g plugin.Device, source, name string) (plugin.Program, plugin.Kernel) {
	t.Helper()
	prog, err := g.LoadProgram(d.Driver.Image(t, source))
	if err != nil {
		t.Fatal(err)
	}
	k, err := prog.Kernel(name)
	if err != nil {
		t.Fatal(err)
	}
	return prog, k
}

// WantBytes syncs q and checks that device memory at p holds want.
func (d *Double) WantBytes(t *testing.T, q plugin.Queue, p uintptr, want []byte, what string) {
	t.Helper()
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(d.Peek(p, len(want)), want) {
		t.Errorf("%s: wrong bytes", what)
	}
}

// Pageable maps n bytes of ordinary (not page-locked) memory outside Go's
// heap and stack, which the driver does not know.
func Pageable(t *testing.T, n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(b) })
	return b
}

// CheckHostCallError checks that a host call's error is the next Sync's,
// and is reported once (the contract suite's scenario).
func CheckHostCallError(t *testing.T, q plugin.Queue) {
	t.Helper()
	contract.CheckHostCallError(t, q)
}

// MemoryWant is what differs between doubles in CheckMemoryCopiesFills.
type MemoryWant = contract.MemoryWant

// CheckMemoryCopiesFills is the contract suite's scenario over the open
// double d, in the double's own view of device memory; then it
// deinitialises.
func CheckMemoryCopiesFills(t *testing.T, d *Double, w MemoryWant) {
	t.Helper()
	contract.CheckMemoryCopiesFills(t, d.env(t), w)
}

// CheckEventsWaitsAndQueueReuse is the contract suite's scenario over the
// open double d, with the double's count of its QueueKind (and of bounded,
// unless "") bounded over 100 queue cycles; then it deinitialises.
func CheckEventsWaitsAndQueueReuse(t *testing.T, d *Double, bounded string) {
	t.Helper()
	e := d.env(t)
	e.F.QueueKind, e.F.Bounded = d.Driver.QueueKind, bounded
	contract.CheckEventsWaitsAndQueueReuse(t, e)
}

// CheckReleasedEventsAndDrain is the contract suite's scenario over the
// open double d: waits for released events end, on the same GPU and across
// GPUs, and Drain waits for the work of released queues. Then it
// deinitialises and checks that the double holds nothing.
func CheckReleasedEventsAndDrain(t *testing.T, d *Double) {
	t.Helper()
	contract.CheckReleasedEventsAndDrain(t, d.env(t))
}

// env is the contract suite's view of the open double d.
func (d *Double) env(t *testing.T) *contract.Env {
	f := &contract.Fixture{
		Open:  func(*testing.T) plugin.Platform { return d.Platform },
		Peek:  func(_ *testing.T, p uintptr, n int) []byte { return d.Peek(p, n) },
		Poke:  func(_ *testing.T, p uintptr, b []byte) { d.Poke(p, b) },
		Held:  func(*testing.T) { d.Driver.Held(d) },
		Live:  d.Live,
		Why:   d.lastError,
		Image: d.Driver.Image,
	}
	return &contract.Env{T: t, F: f, Platform: d.Platform, Devices: d.Devices}
}

// FixtureWant is what differs between doubles in the contract suite:
// Bounded is a kind the double counts that queue cycles must not grow
// ("" for none), Memory, Programs and Register what those groups want of
// the double.
type FixtureWant struct {
	Bounded  string
	Memory   func(d *Double) MemoryWant
	Programs func(d *Double) ProgramsWant
	Register func(d *Double) RegisterWant
}

// Fixture is the contract suite's fixture for the double built as name:
// each scenario group opens a fresh double with two GPUs, and checks after
// Deinit that the double holds nothing.
func (f *Driver) Fixture(name string, w FixtureWant) *contract.Fixture {
	var d *Double
	return &contract.Fixture{
		Memory:    func() MemoryWant { return w.Memory(d) },
		Programs:  func() contract.ProgramsWant { return d.programs(w.Programs(d)) },
		Register:  func() RegisterWant { return w.Register(d) },
		Image:     f.Image,
		Open:      func(t *testing.T) plugin.Platform { d = f.Open(t, name); return d.Platform },
		Peek:      func(_ *testing.T, p uintptr, n int) []byte { return d.Peek(p, n) },
		Poke:      func(_ *testing.T, p uintptr, b []byte) { d.Poke(p, b) },
		Held:      func(*testing.T) { d.Driver.Held(d) },
		Live:      func(kind string) int { return d.Live(kind) },
		Why:       func() string { return d.lastError() },
		QueueKind: f.QueueKind,
		Bounded:   w.Bounded,
	}
}

// RegisterWant is what differs between doubles in CheckRegister.
type RegisterWant = contract.RegisterWant

// CheckRegister is the contract suite's scenario over the open double d,
// with the double's count of locked ranges. The caller deinitialises.
func CheckRegister(t *testing.T, d *Double, w RegisterWant) {
	t.Helper()
	contract.CheckRegister(t, d.env(t), w)
}

// ProgramsWant is what differs between doubles in CheckProgramsAndLaunches.
type ProgramsWant struct {
	// CopyIn stages the kernel's input with a queued copy from host
	// memory, which the launch must wait for, rather than with Poke.
	CopyIn bool
	// TooMuchShared is how a launch with 200 KiB of dynamic shared memory
	// is refused.
	TooMuchShared string
	// Kernel checks the reduction kernel k further on q (args are its
	// arguments); Global checks the global at addr of gp further.
	Kernel func(q plugin.Queue, k plugin.Kernel, args []byte)
	Global func(gp plugin.Program, addr uintptr)
	// ProgramKind is what the double counts for a loaded program.
	ProgramKind string
	// Launches is how many launches the double's counter LaunchCounter
	// must have seen (Kernel's included).
	LaunchCounter string
	Launches      int
	// LastSync checks the queue's final Sync.
	LastSync bool
}

// CheckProgramsAndLaunches is the contract suite's scenario over the open
// double d, with what the double counts of loaded programs and launches;
// it deinitialises.
func CheckProgramsAndLaunches(t *testing.T, d *Double, w ProgramsWant) {
	t.Helper()
	contract.CheckProgramsAndLaunches(t, d.env(t), d.programs(w))
}

// programs is the contract suite's ProgramsWant for w over the double d.
func (d *Double) programs(w ProgramsWant) contract.ProgramsWant {
	return contract.ProgramsWant{
		CopyIn: w.CopyIn, TooMuchShared: w.TooMuchShared, Kernel: w.Kernel, Global: w.Global,
		ProgramKind: w.ProgramKind, LastSync: w.LastSync,
		Launched: func() int { return int(d.Call(w.LaunchCounter)) }, Launches: w.Launches,
	}
}

// CheckHotPathAllocatesNothing is the contract suite's scenario over the
// open double d; it deinitialises.
func CheckHotPathAllocatesNothing(t *testing.T, d *Double) {
	t.Helper()
	contract.CheckHotPathAllocatesNothing(t, d.env(t))
}

// Churn is how CheckQueueChurnIsFlat churns and what it allows.
type Churn struct {
	Warm, Cycles int
	// MaxQueues bounds what the double counts of its QueueKind afterwards.
	MaxQueues int
	// RSS checks that memory grew by at most 4 MiB over the cycles.
	RSS bool
	// Log are more kinds of object whose counts are logged.
	Log []string
}

// CheckQueueChurnIsFlat checks that create, launch and release
// (unsynchronised) cycles keep the double's queues bounded and the
// process's memory flat; it deinitialises.
func CheckQueueChurnIsFlat(t *testing.T, d *Double, c Churn) {
	t.Helper()
	g := d.Devices[0]
	prog, k := d.LoadKernel(t, g, "noargs", "noargs")
	size := contract.Size1D(1, 1, 0)
	cycle := func() {
		q, err := g.NewQueue()
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Launch(k, nil, size); err != nil {
			t.Fatal(err)
		}
		if err := q.Release(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < c.Warm; i++ {
		cycle()
	}
	rss0 := VmRSS(t)
	for i := 0; i < c.Cycles; i++ {
		cycle()
	}
	rss1 := VmRSS(t)
	kind := d.Driver.QueueKind
	if n := d.Live(kind); n > c.MaxQueues {
		t.Errorf("%d of kind %s after %d cycles, want at most %d", n, kind, c.Warm+c.Cycles, c.MaxQueues)
	}
	t.Logf("VmRSS %d KiB after %d warm-up cycles, %d KiB after %d more", rss0, c.Warm, rss1, c.Cycles)
	for _, k := range append([]string{kind}, c.Log...) {
		t.Logf("%d of kind %s", d.Live(k), k)
	}
	if growth := rss1 - rss0; c.RSS && growth > 4096 {
		t.Errorf("VmRSS grew by %d KiB over %d cycles", growth, c.Cycles)
	}
	_ = prog.Unload()
	d.Deinit()
}
