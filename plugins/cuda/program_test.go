package cuda

import (
	"encoding/binary"
	"strings"
	"testing"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// loadKernel loads kernel source (tests/c/kernels) as a fake cubin on g
// and finds kernel name in it.
func loadKernel(t *testing.T, g *Device, source, name string) (plugin.Program, plugin.Kernel) {
	t.Helper()
	prog, err := g.LoadProgram(fakedriver.FakeCubin(t, source))
	if err != nil {
		t.Fatal(err)
	}
	k, err := prog.Kernel(name)
	if err != nil {
		t.Fatal(err)
	}
	return prog, k
}

func argBytes(words ...uint64) []byte {
	b := make([]byte, 8*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint64(b[8*i:], w)
	}
	return b
}

func launchSize(groups, size uint32, dyn uint64) plugin.LaunchSize {
	return plugin.LaunchSize{
		NumGroups: ol.Dimensions{X: groups, Y: 1, Z: 1}, GroupSize: ol.Dimensions{X: size, Y: 1, Z: 1}, DynSharedMemory: dyn,
	}
}

// Kernels run over the whole grid with the argument buffer as given, with
// barriers and dynamic shared memory; globals have device addresses that
// copies reach.
func TestFakeProgramsAndLaunches(t *testing.T) {
	d := newDouble(t, "libcuda-programs.so")
	g := d.dev[0]
	prog, k := loadKernel(t, g, "localmem_reduction", "localmem_reduction")
	if _, err := prog.Kernel("nope"); err == nil || !strings.Contains(err.Error(), `no kernel named "nope"`) {
		t.Errorf("unknown kernel: %v", err)
	}
	if n, err := k.MaxGroupSize(0); err != nil || n != 1024 {
		t.Errorf("MaxGroupSize = %d, %v", n, err)
	}
	const groups, size = 8, 128
	in := mustAlloc(t, g, ol.AllocTypeDevice, 4*groups*size)
	out := mustAlloc(t, g, ol.AllocTypeDevice, 4*groups)
	vals := make([]byte, 4*groups*size)
	want := make([]uint32, groups)
	for i := 0; i < groups*size; i++ {
		v := uint32(i*i%1000 + 1)
		binary.LittleEndian.PutUint32(vals[4*i:], v)
		want[i/size] += v
	}
	d.poke(in, vals)
	q := mustQueue(t, g)
	if err := q.Launch(k, argBytes(uint64(in), uint64(out)), launchSize(groups, size, 4*size)); err != nil {
		t.Fatal(err)
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	got := d.peek(out, 4*groups)
	for i := range want {
		if v := binary.LittleEndian.Uint32(got[4*i:]); v != want[i] {
			t.Errorf("group %d: sum %d, want %d", i, v, want[i])
		}
	}

	// launch limits and dynamic shared memory above the default 48 KiB
	for _, tc := range []struct {
		size plugin.LaunchSize
		want string
	}{
		{launchSize(1, 2048, 0), "GroupSize.x 2048 exceeds the maximum 1024"},
		{launchSize(0, 1, 0), "NumGroups.x is 0"},
		{launchSize(1, 64, 200<<10), "DynSharedMemory 204800 exceeds what kernel"},
	} {
		if err := q.Launch(k, argBytes(uint64(in), uint64(out)), tc.size); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("launch %+v: %v, want %q", tc.size, err, tc.want)
		}
	}
	if err := q.Launch(k, argBytes(uint64(in), uint64(out)), launchSize(groups, size, 64<<10)); err != nil {
		t.Errorf("64 KiB of dynamic shared memory (the device allows 96 with opt-in): %v", err)
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}

	// a global: written by a kernel, read back at its device address
	gp, err := g.LoadProgram(fakedriver.FakeCubin(t, "global"))
	if err != nil {
		t.Fatal(err)
	}
	write, err := gp.Kernel("write")
	if err != nil {
		t.Fatal(err)
	}
	addr, gsize, err := gp.Global("global")
	if err != nil || gsize != 256 {
		t.Fatalf("Global: %#x %d %v", addr, gsize, err)
	}
	if _, _, err := gp.Global("nope"); err == nil || !strings.Contains(err.Error(), `no global variable named "nope"`) {
		t.Errorf("unknown global: %v", err)
	}
	if err := q.Launch(write, argBytes(0), launchSize(1, 64, 0)); err != nil {
		t.Fatal(err)
	}
	host := mustAlloc(t, g, ol.AllocTypeHost, 256)
	if err := q.CopyFromDevice(host, addr, g, 256); err != nil {
		t.Fatal(err)
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	hb := hostBytes(host, 256)
	for i := 0; i < 64; i++ {
		if v := binary.LittleEndian.Uint32(hb[4*i:]); v != uint32(2*i) {
			t.Fatalf("global[%d] = %d, want %d", i, v, 2*i)
		}
	}

	// unloading while a launch is queued waits for it
	gate := make(chan struct{})
	if err := q.HostCall(func() error { <-gate; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := q.Launch(write, argBytes(0), launchSize(1, 64, 0)); err != nil {
		t.Fatal(err)
	}
	if err := gp.Unload(); err != nil {
		t.Fatal(err)
	}
	if n := d.live("module"); n != 2 {
		t.Errorf("%d modules loaded while a launch of one is queued, want 2", n)
	}
	if err := q.Launch(write, argBytes(0), launchSize(1, 64, 0)); err == nil || !strings.Contains(err.Error(), "was destroyed") {
		t.Errorf("launch after Unload: %v", err)
	}
	close(gate)
	if err := prog.Unload(); err != nil {
		t.Fatal(err)
	}
	_ = q.Sync()
	_ = q.Release()
	for _, p := range []uintptr{in, out} {
		_ = g.Free(p, ol.AllocTypeDevice)
	}
	_ = g.Free(host, ol.AllocTypeHost)
	d.deinit()
	if n := d.live("module"); n != 0 {
		t.Errorf("%d modules left after Deinit", n)
	}
	if n := d.Call("fake_cuda_launches"); n != 4 {
		t.Errorf("the driver got %d launches, want 4", n)
	}
}

// A module the driver refuses is INVALID_BINARY with its JIT log.
func TestFakeModuleLoadFailure(t *testing.T) {
	d := newDouble(t, "libcuda-modfail.so")
	t.Setenv("FAKE_CUDA_MODULE_RESULT", "218")
	_, err := d.dev[1].LoadProgram(fakedriver.FakeCubin(t, "sequence"))
	var oe *ol.Error
	if !asOl(err, &oe) || oe.Code != ol.ErrcInvalidBinary || !strings.Contains(oe.Details, "218 CUDA_ERROR_INVALID_PTX") ||
		!strings.Contains(oe.Details, "JIT log: fake_cuda: module load failure injected") {
		t.Errorf("%v", err)
	}
	d.deinit()
}

func asOl(err error, oe **ol.Error) bool {
	e, ok := err.(*ol.Error)
	*oe = e
	return ok
}

// The hot path makes no Go allocation: launch, asynchronous copies, a
// fill, record, wait, release of the event and sync.
func TestFakeHotPathAllocatesNothing(t *testing.T) {
	d := newDouble(t, "libcuda-allocs.so")
	g := d.dev[0]
	prog, k := loadKernel(t, g, "noargs", "noargs")
	dev := mustAlloc(t, g, ol.AllocTypeDevice, 4096)
	host := mustAlloc(t, g, ol.AllocTypeHost, 4096)
	q, q2 := mustQueue(t, g), mustQueue(t, g)
	pat := []byte{1, 2, 3, 4}
	size := launchSize(1, 1, 0)
	round := func() {
		if err := q.Launch(k, nil, size); err != nil {
			t.Fatal(err)
		}
		if err := q.CopyToDevice(dev, g, host, 4096); err != nil {
			t.Fatal(err)
		}
		if err := q.Fill(dev, unsafe.Pointer(&pat[0]), 4, 4096); err != nil {
			t.Fatal(err)
		}
		if err := q.CopyFromDevice(host, dev, g, 4096); err != nil {
			t.Fatal(err)
		}
		e, err := q.Record()
		if err != nil {
			t.Fatal(err)
		}
		if err := q2.Wait(e); err != nil {
			t.Fatal(err)
		}
		if err := e.Release(); err != nil {
			t.Fatal(err)
		}
		if err := q2.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := q.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 100; i++ {
		round() // warm: pools and the wait list reach their size
	}
	if n := testing.AllocsPerRun(200, round); n != 0 {
		t.Errorf("%.1f Go allocations per round of launch, copies, fill, record, wait and sync, want 0", n)
	}
	_ = q.Release()
	_ = q2.Release()
	_ = prog.Unload()
	_ = g.Free(dev, ol.AllocTypeDevice)
	_ = g.Free(host, ol.AllocTypeHost)
	d.deinit()
}

// Queues are pooled: create, launch and release (unsynchronised) cycles
// keep the driver's streams and events bounded and the process's memory
// flat.
func TestFakeQueueChurnIsFlat(t *testing.T) {
	if raceDetector {
		t.Skip("memory growth is measured without the race detector (make test runs this test so too)")
	}
	d := newDouble(t, "libcuda-churn.so")
	g := d.dev[0]
	prog, k := loadKernel(t, g, "noargs", "noargs")
	size := launchSize(1, 1, 0)
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
	const warm, cycles = 20000, 100000
	for i := 0; i < warm; i++ {
		cycle()
	}
	rss0 := fakedriver.VmRSS(t)
	for i := 0; i < cycles; i++ {
		cycle()
	}
	rss1 := fakedriver.VmRSS(t)
	if n := d.live("stream"); n > 2*maxIdleStreams {
		t.Errorf("%d streams after %d cycles", n, warm+cycles)
	}
	t.Logf("VmRSS %d KiB after %d warm-up cycles, %d KiB after %d more", rss0, warm, rss1, cycles)
	if growth := rss1 - rss0; growth > 4096 {
		t.Errorf("VmRSS grew by %d KiB over %d cycles", growth, cycles)
	}
	_ = prog.Unload()
	d.deinit()
}
