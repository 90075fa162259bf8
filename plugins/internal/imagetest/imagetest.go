// Package imagetest is test scaffolding for the program-image checks of
// the GPU plugins: it builds real images (gcc, clang-22) and hand-made
// headers, and drives olIsValidBinary and olCreateProgram through the
// runtime's entry points on the devices of a driver double. Only the
// plugins' external tests import it (it imports the runtime, which imports
// the plugins).
package imagetest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/impl"
	"github.com/liboffload-go/liboffload-go/plugins/amdgpu"
	"github.com/liboffload-go/liboffload-go/plugins/cuda"
	"github.com/liboffload-go/liboffload-go/plugins/host"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
	"github.com/liboffload-go/liboffload-go/tests/go/ccb"
)

// Images are real images of tests/c/kernels/foo.c, by name: "so" (gcc
// -shared -fPIC), "ptx80" and "ptx90a" (clang-22, the NVPTX flags of
// tests/c/device/Makefile), "gfx90a", "gfx942:xnack+" and "gfx9-generic"
// (AMDGPU code objects). A missing compiler fails the test: CI installs
// gcc and clang-22.
func Images(t *testing.T) map[string][]byte {
	t.Helper()
	root := fakedriver.ModuleRoot(t)
	src := filepath.Join(root, "tests", "c", "kernels", "foo.c")
	inc := "-I" + filepath.Join(root, "include")
	dir := t.TempDir()
	ptx := func(sm, isa string) []string {
		return []string{"clang-22", "--target=nvptx64-nvidia-cuda", "-march=" + sm, "-Xclang", "-target-feature",
			"-Xclang", "+" + isa, "-nogpulib", "-ffreestanding", "-O2", "-S"}
	}
	amd := func(cpu string) []string {
		return []string{"clang-22", "--target=amdgcn-amd-amdhsa", "-mcpu=" + cpu, "-nogpulib", "-ffreestanding", "-O2"}
	}
	out := map[string][]byte{}
	for name, cmd := range map[string][]string{
		"so":            {"gcc", "-std=gnu17", "-O2", "-fPIC", "-shared"},
		"ptx80":         ptx("sm_80", "ptx78"),
		"ptx90a":        ptx("sm_90a", "ptx80"),
		"gfx90a":        amd("gfx90a"),
		"gfx942:xnack+": amd("gfx942:xnack+"),
		"gfx9-generic":  amd("gfx9-generic"),
	} {
		if _, err := exec.LookPath(cmd[0]); err != nil {
			t.Fatalf("%s is needed to build the test images: %v", cmd[0], err)
		}
		path := filepath.Join(dir, strings.NewReplacer(":", "_", "+", "p").Replace(name))
		args := append(cmd[1:], inc, src, "-o", path)
		if msg, err := exec.Command(cmd[0], args...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(cmd, " "), err, msg)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	return out
}

// HostDesc is how the classifier names this machine's shared objects.
func HostDesc() string {
	if runtime.GOARCH == "arm64" {
		return "an AArch64 ELF shared object"
	}
	return "an x86-64 ELF shared object"
}

// Cubin is the ELF header of a CUDA cubin for sm (ABI version 7: the SM in
// the low byte of e_flags, 0x800 for sm_XXa).
func Cubin(sm int, accel bool) []byte {
	h := make([]byte, 64)
	copy(h, "\x7fELF\x02\x01\x01\x33\x07")
	binary.LittleEndian.PutUint16(h[16:], 2)   // ET_EXEC
	binary.LittleEndian.PutUint16(h[18:], 190) // EM_CUDA
	f := uint32(sm) | 0x400
	if accel {
		f |= 0x800
	}
	binary.LittleEndian.PutUint32(h[48:], f)
	return h
}

// Fatbin is a CUDA fatbin header with no entries.
func Fatbin() []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint32(b, 0xba55ed50)
	binary.LittleEndian.PutUint16(b[4:], 1)
	binary.LittleEndian.PutUint16(b[6:], 16)
	return b
}

// Bundle is a clang offload bundle header with one entry for triple.
func Bundle(triple string) []byte {
	b := []byte("__CLANG_OFFLOAD_BUNDLE__")
	b = binary.LittleEndian.AppendUint64(b, 1)
	b = binary.LittleEndian.AppendUint64(b, 4096)
	b = binary.LittleEndian.AppendUint64(b, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(triple)))
	return append(b, triple...)
}

// OffloadBinary is the start of an LLVM offload binary (magic and version).
func OffloadBinary() []byte { return []byte{0x10, 0xff, 0x10, 0xad, 1, 0, 0, 0} }

// Init points the runtime at lib through env (e.g. OFFLOAD_CUDA_LIBRARY),
// initialises it with OFFLOAD_PLUGINS=plugin and returns the devices, the
// plugin's GPUs first and the host device last. olShutDown runs at cleanup.
func Init(t *testing.T, plugin string, env map[string]string) []uintptr {
	t.Helper()
	impl.UsePlugins(amdgpu.New(), cuda.New(), host.New())
	t.Setenv(impl.EnvPlugins, plugin)
	for k, v := range env {
		t.Setenv(k, v)
	}
	if r := impl.OlInit(nil); r != 0 {
		t.Fatalf("olInit: %s: %s", impl.ResultCode(r), impl.ResultDetails(r))
	}
	t.Cleanup(func() {
		if r := impl.OlShutDown(nil); r != 0 {
			t.Errorf("olShutDown: %s: %s", impl.ResultCode(r), impl.ResultDetails(r))
		}
	})
	it := ccb.NewIter(0)
	defer it.Free()
	if r := impl.OlIterateDevices(it.Callback(), it.User(), nil); r != 0 {
		t.Fatalf("olIterateDevices: %s", impl.ResultDetails(r))
	}
	var devs []uintptr
	for i := 0; i < it.Count(); i++ {
		devs = append(devs, it.Device(i))
	}
	return devs
}

func ptr(img []byte) unsafe.Pointer {
	if len(img) == 0 {
		return unsafe.Pointer(new(byte)) // a non-NULL pointer to no bytes
	}
	return unsafe.Pointer(&img[0])
}

// IsValid is olIsValidBinary's answer, which must come with OL_SUCCESS.
func IsValid(t *testing.T, dev uintptr, img []byte) bool {
	t.Helper()
	var valid bool
	if r := impl.OlIsValidBinary(dev, ptr(img), uint64(len(img)), unsafe.Pointer(&valid), nil); r != 0 {
		t.Fatalf("olIsValidBinary: %s: %s", impl.ResultCode(r), impl.ResultDetails(r))
	}
	return valid
}

// Create calls olCreateProgram and returns its result code and details (a
// program it creates is destroyed).
func Create(t *testing.T, dev uintptr, img []byte) (ol.Errc, string) {
	t.Helper()
	var p uintptr
	r := impl.OlCreateProgram(dev, ptr(img), uint64(len(img)), unsafe.Pointer(&p), nil)
	if r == 0 {
		if r := impl.OlDestroyProgram(p, nil); r != 0 {
			t.Fatalf("olDestroyProgram: %s", impl.ResultDetails(r))
		}
		return ol.ErrcSuccess, ""
	}
	return impl.ResultCode(r), impl.ResultDetails(r)
}

// Must fails the test on an API error.
func Must(t *testing.T, what string, r uintptr) {
	t.Helper()
	if r != 0 {
		t.Fatalf("%s: %s: %s", what, impl.ResultCode(r), impl.ResultDetails(r))
	}
}

// Fake is a driver double as the runtime loads it.
type Fake struct {
	// Plugin is the plugin's name in OFFLOAD_PLUGINS; Source is the
	// double's file in tests/drivers.
	Plugin, Source string
	// EnvLibrary and GPUsEnv set the double's library and its number of
	// GPUs.
	EnvLibrary, GPUsEnv string
}

// The two driver doubles.
var (
	CUDA = Fake{"cuda", "fake_cuda.c", cuda.EnvLibrary, "FAKE_CUDA_DEVICES"}
	HSA  = Fake{"amdgpu", "fake_hsa.c", amdgpu.EnvLibrary, "FAKE_HSA_GPUS"}
)

// Build builds the double as the library name.
func (f Fake) Build(t *testing.T, name string) string {
	t.Helper()
	return (&fakedriver.Driver{Source: f.Source}).Build(t, name)
}

// Start builds the double as name and initialises the runtime with it,
// gpus GPUs and env; the devices must be the GPUs and the host.
func (f Fake) Start(t *testing.T, name string, gpus int, env map[string]string) []uintptr {
	t.Helper()
	all := map[string]string{f.EnvLibrary: f.Build(t, name), f.GPUsEnv: strconv.Itoa(gpus)}
	maps.Copy(all, env)
	devs := Init(t, f.Plugin, all)
	if len(devs) != gpus+1 {
		t.Fatalf("%d devices, want %d GPUs and the host", len(devs), gpus)
	}
	return devs
}

// CheckTraceSaysWhyAbsent checks that with OFFLOAD_TRACE=all and env
// leaving the platform out, the trace says want.
func (f Fake) CheckTraceSaysWhyAbsent(t *testing.T, name string, env map[string]string, want string) {
	t.Helper()
	trace := t.TempDir() + "/trace"
	all := map[string]string{f.EnvLibrary: f.Build(t, name), impl.EnvTraceFile: trace, impl.EnvTrace: "all"}
	maps.Copy(all, env)
	Init(t, f.Plugin, all)
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), want) {
		t.Errorf("trace lacks %q:\n%s", want, b)
	}
}

// CheckRuntimeOnGPUs checks, through the runtime, with two GPUs and the
// host device (devs) and img the sequence kernel built for the GPUs:
// copies on queues of every platform (the runtime routes them), a copy
// between the GPUs, a host queue waiting for a GPU event, a fill without
// a queue of GPU memory the CPU cannot touch, and kernel launches in order.
func CheckRuntimeOnGPUs(t *testing.T, devs []uintptr, img []byte) {
	t.Helper()
	must := func(what string, r uintptr) { t.Helper(); Must(t, what, r) }
	g0, g1, host := devs[0], devs[1], devs[2]
	alloc := func(dev uintptr, kind ol.AllocType, n uint64) unsafe.Pointer {
		var p unsafe.Pointer
		must("olMemAlloc", impl.OlMemAlloc(dev, uint32(kind), n, unsafe.Pointer(&p), nil))
		return p
	}
	queue := func(dev uintptr) uintptr {
		var q uintptr
		must("olCreateQueue", impl.OlCreateQueue(dev, unsafe.Pointer(&q), nil))
		return q
	}
	const n = 4096
	src := alloc(host, ol.AllocTypeHost, n)
	dst := alloc(host, ol.AllocTypeHost, n)
	a := alloc(g0, ol.AllocTypeDevice, n)
	b := alloc(g1, ol.AllocTypeDevice, n)
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i*7 + 3)
	}
	copy(unsafe.Slice((*byte)(src), n), want)

	hq, q0 := queue(host), queue(g0)
	// host memory to GPU 0 on a host queue: the runtime has GPU 0 do it
	must("olMemcpy host→g0 on a host queue", impl.OlMemcpy(hq, a, g0, src, host, n, nil))
	must("olSyncQueue", impl.OlSyncQueue(hq, nil))
	// GPU 0 to GPU 1 on GPU 0's queue, then an event the host queue waits for
	must("olMemcpy g0→g1", impl.OlMemcpy(q0, b, g1, a, g0, n, nil))
	var ev uintptr
	must("olCreateEvent", impl.OlCreateEvent(q0, unsafe.Pointer(&ev), nil))
	must("olWaitEvents", impl.OlWaitEvents(hq, unsafe.Pointer(&ev), 1, nil))
	must("olMemcpy g1→host on a host queue", impl.OlMemcpy(hq, dst, host, b, g1, n, nil))
	must("olSyncQueue", impl.OlSyncQueue(hq, nil))
	if !bytes.Equal(unsafe.Slice((*byte)(dst), n), want) {
		t.Fatal("wrong bytes after host → g0 → g1 → host")
	}
	// a fill without a queue of GPU memory: GPU 1 does it
	pat := []byte{0x5a, 0xa5}
	must("olMemFill", impl.OlMemFill(0, b, 2, unsafe.Pointer(&pat[0]), n, nil))
	must("olMemcpy g1→host", impl.OlMemcpy(0, dst, host, b, g1, n, nil))
	if !bytes.Equal(unsafe.Slice((*byte)(dst), n), bytes.Repeat(pat, n/2)) {
		t.Fatal("wrong bytes after the fill")
	}

	// kernels in order: each element of the sequence from the two before
	var prog, kernel uintptr
	must("olCreateProgram", impl.OlCreateProgram(g0, unsafe.Pointer(&img[0]), uint64(len(img)), unsafe.Pointer(&prog), nil))
	name := []byte("sequence\x00")
	must("olGetSymbol", impl.OlGetSymbol(prog, unsafe.Pointer(&name[0]), uint32(ol.SymbolKindKernel), unsafe.Pointer(&kernel), nil))
	out := alloc(g0, ol.AllocTypeDevice, 4*16)
	first := []uint32{0, 1}
	must("olMemcpy", impl.OlMemcpy(q0, out, g0, unsafe.Pointer(&first[0]), host, 8, nil))
	for i := 2; i < 16; i++ {
		args := binary.LittleEndian.AppendUint64(nil, uint64(uintptr(out)))
		args = binary.LittleEndian.AppendUint64(args, uint64(i))
		size := ol.KernelLaunchSizeArgs{Dimensions: 1, NumGroups: ol.Dimensions{X: 1, Y: 1, Z: 1}, GroupSize: ol.Dimensions{X: 1, Y: 1, Z: 1}}
		must("olLaunchKernel", impl.OlLaunchKernel(q0, g0, kernel, unsafe.Pointer(&args[0]), 16, unsafe.Pointer(&size), nil))
	}
	got := make([]uint32, 16)
	must("olMemcpy", impl.OlMemcpy(q0, unsafe.Pointer(&got[0]), host, out, g0, 64, nil))
	must("olSyncQueue", impl.OlSyncQueue(q0, nil))
	for i := 2; i < 16; i++ {
		if got[i] != got[i-1]+got[i-2] {
			t.Fatalf("sequence: %v", got)
		}
	}
	if got[15] != 610 {
		t.Fatalf("sequence[15] = %d, want 610", got[15])
	}
	must("olDestroyProgram", impl.OlDestroyProgram(prog, nil))
	for _, q := range []uintptr{hq, q0} {
		must("olDestroyQueue", impl.OlDestroyQueue(q, nil))
	}
	must("olDestroyEvent", impl.OlDestroyEvent(ev, nil))
	for _, p := range []unsafe.Pointer{src, dst, a, b, out} {
		must("olMemFree", impl.OlMemFree(p, nil))
	}
}

// CheckDeferredFree checks, through the runtime on the double's first GPU,
// that olMemFree never lets the driver free memory that work queued before
// it still uses: with a fill held behind a host function, the allocation
// leaves the API at once but stays live in the driver (live counts the
// double's device allocations: "fake_cuda_live", "fake_hsa_live") until
// the work has ended; and the final olShutDown with such a free pending
// (its queue destroyed) frees it in the driver.
func (f Fake) CheckDeferredFree(t *testing.T, name, live string) {
	t.Helper()
	lib := f.Build(t, name)
	// the gates live until after Init's olShutDown; a failed check opens
	// them before it, which would wait for them
	gates := []*ccb.Gate{ccb.NewGate(), ccb.NewGate()}
	t.Cleanup(func() {
		for _, g := range gates {
			g.Free()
		}
	})
	// pooling off: every free the runtime makes reaches the driver, where
	// this watches when it comes
	devs := Init(t, f.Plugin, map[string]string{f.EnvLibrary: lib, f.GPUsEnv: "1", impl.EnvPoolIdle: "0"})
	t.Cleanup(func() {
		for _, g := range gates {
			g.Open()
		}
	})
	hooks := fakedriver.OpenHooks(t, lib)
	count := func() int { return hooks.Count(live, "alloc") }
	gpu := devs[0]
	// holds a queue behind a host function: gates[i]
	held := func(i int) (uintptr, *ccb.Gate) {
		var q uintptr
		Must(t, "olCreateQueue", impl.OlCreateQueue(gpu, unsafe.Pointer(&q), nil))
		g := gates[i]
		Must(t, "olLaunchHostFunction", impl.OlLaunchHostFunction(q, g.Callback(), g.User(), nil))
		return q, g
	}
	fillFree := func(q uintptr) {
		var p unsafe.Pointer
		Must(t, "olMemAlloc", impl.OlMemAlloc(gpu, uint32(ol.AllocTypeDevice), 1<<20, unsafe.Pointer(&p), nil))
		pat := uint32(0xabcd1234)
		Must(t, "olMemFill", impl.OlMemFill(q, p, 4, unsafe.Pointer(&pat), 1<<20, nil))
		Must(t, "olMemFree", impl.OlMemFree(p, nil))
		var base unsafe.Pointer
		if r := impl.OlGetMemInfo(p, uint32(ol.MemInfoBase), 8, unsafe.Pointer(&base), nil); impl.ResultCode(r) != ol.ErrcNotFound {
			t.Errorf("olGetMemInfo of the freed pointer: %s, want NOT_FOUND", impl.ResultCode(r))
		}
	}

	n0 := count()
	q, g := held(0)
	fillFree(q)
	if n := count(); n != n0+1 {
		t.Fatalf("%d allocations live in the driver after olMemFree with a fill of it held back, want %d", n, n0+1)
	}
	g.Open()
	Must(t, "olSyncQueue", impl.OlSyncQueue(q, nil))
	for start := time.Now(); count() != n0; time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%d allocations live in the driver 10 s after the held work ended, want %d", count(), n0)
		}
	}
	Must(t, "olDestroyQueue", impl.OlDestroyQueue(q, nil))

	q, g = held(1)
	fillFree(q)
	Must(t, "olDestroyQueue", impl.OlDestroyQueue(q, nil))
	go func() {
		time.Sleep(50 * time.Millisecond)
		g.Open()
	}()
	Must(t, "the final olShutDown", impl.OlShutDown(nil))
	if n := count(); n != 0 {
		t.Errorf("%d allocations live in the driver (or leaked at its shut down) after the final olShutDown, want 0", n)
	}
	Must(t, "olInit", impl.OlInit(nil)) // for Init's olShutDown
}

// CheckPools checks the device's memory pools through the API against the
// double (live is its live-count hook, memEnv its device memory size):
// a freed small allocation is handed out again without the driver; many
// allocations of up to 64 KiB of every kind take few driver allocations
// (the runtime's pool cuts them out of slabs); idle pooled memory stays
// within OFFLOAD_POOL_IDLE; an allocation the driver refuses for lack of
// memory succeeds once the pool's idle memory is released (a larger one
// the device allocates itself, and one the pool serves from a new slab);
// and after the final olShutDown the driver's live bytes and allocations
// (the slabs included) are back where they started.
// maxPooled is the largest allocation a GPU's pool serves (impl/pool.h
// OL_POOL_MAX_SIZE).
const maxPooled = 1 << 20

func (f Fake) CheckPools(t *testing.T, name, live, memEnv string) {
	// one OS thread throughout: a thread takes its own arena of the pool,
	// and a freed block is handed out again to the thread whose arena has it
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	lib := f.Build(t, name)
	impl.UsePlugins(amdgpu.New(), cuda.New(), host.New())
	const memory, bound = 64 << 20, 8 << 20
	for k, v := range map[string]string{impl.EnvPlugins: f.Plugin, f.EnvLibrary: lib, f.GPUsEnv: "1",
		memEnv: fmt.Sprint(memory), impl.EnvPoolIdle: fmt.Sprint(bound)} {
		t.Setenv(k, v)
	}
	hooks := fakedriver.OpenHooks(t, lib)
	driverBytes := func() int { return hooks.Count(live, "bytes") }
	start := driverBytes()
	// the doubles' live allocations ("host": CUDA's pinned host memory;
	// the HSA double counts every allocation as "alloc" and answers -1)
	driverAllocs := func() [2]int { return [2]int{hooks.Count(live, "alloc"), hooks.Count(live, "host")} }
	startAllocs := driverAllocs()
	Must(t, "olInit", impl.OlInit(nil))
	up := true
	defer func() {
		if up {
			_ = impl.OlShutDown(nil)
		}
	}()
	it := ccb.NewIter(0)
	Must(t, "olIterateDevices", impl.OlIterateDevices(it.Callback(), it.User(), nil))
	dev := it.Device(0)
	it.Free()
	alloc := func(size uint64) (unsafe.Pointer, uintptr) {
		var p unsafe.Pointer
		r := impl.OlMemAlloc(dev, uint32(ol.AllocTypeDevice), size, unsafe.Pointer(&p), nil)
		return p, r
	}
	must := func(size uint64) unsafe.Pointer {
		t.Helper()
		p, r := alloc(size)
		Must(t, fmt.Sprintf("olMemAlloc(%d)", size), r)
		return p
	}

	a := must(1000)
	Must(t, "olMemFree", impl.OlMemFree(a, nil))
	before := driverBytes()
	if b := must(900); b != a || driverBytes() != before {
		t.Errorf("a freed block of the same class was not reused: %p then %p, driver bytes %d then %d", a, b, before, driverBytes())
	} else {
		Must(t, "olMemFree", impl.OlMemFree(b, nil))
	}

	// small blocks of every kind come from the runtime's pool: 64 of them
	// take a slab or two of each kind, not 64 driver allocations
	for _, kind := range []ol.AllocType{ol.AllocTypeDevice, ol.AllocTypeHost, ol.AllocTypeManaged} {
		n0 := driverAllocs()
		var small []unsafe.Pointer
		for i := 0; i < 64; i++ {
			var p unsafe.Pointer
			Must(t, fmt.Sprintf("olMemAlloc(%s, 1000)", kind), impl.OlMemAlloc(dev, uint32(kind), 1000, unsafe.Pointer(&p), nil))
			small = append(small, p)
		}
		if n := driverAllocs(); n[0]+n[1]-n0[0]-n0[1] > 2 {
			t.Errorf("64 allocations of 1000 bytes of %s memory took %d driver allocations, want at most 2 (slabs of the runtime's pool)", kind, n[0]+n[1]-n0[0]-n0[1])
		}
		for _, p := range small {
			Must(t, "olMemFree", impl.OlMemFree(p, nil))
		}
	}

	before = driverBytes()
	var ps []unsafe.Pointer
	for i := 0; i < 16; i++ {
		ps = append(ps, must(maxPooled))
	}
	for _, p := range ps {
		Must(t, "olMemFree", impl.OlMemFree(p, nil))
	}
	if idle := driverBytes() - before; idle > bound || idle < bound/2 {
		t.Errorf("%d bytes stayed in the driver after freeing 16 MiB of pooled memory, want at most the bound %d (and some)", idle, bound)
	}

	// 64 MiB of device memory, some MiB of it cached: 60 MiB fit only once
	// the cache is released
	big := must(60 << 20)
	if _, r := alloc(8 << 20); impl.ResultCode(r) != ol.ErrcOutOfResources {
		t.Errorf("allocating past the device's memory: %s, want OUT_OF_RESOURCES", impl.ResultCode(r))
	}
	Must(t, "olMemFree", impl.OlMemFree(big, nil))

	// so does an allocation the pool serves: idle 1 MiB blocks cached, the
	// device taken but 512 KiB, a block of 768 KiB (another class, a slab
	// of its own) fits only once they go back
	before = driverBytes()
	ps = ps[:0]
	for i := 0; i < 16; i++ {
		ps = append(ps, must(maxPooled))
	}
	for _, p := range ps {
		Must(t, "olMemFree", impl.OlMemFree(p, nil))
	}
	if driverBytes()-before < maxPooled {
		t.Fatal("no idle 1 MiB block is cached: the check below would prove nothing")
	}
	filler := must(uint64(memory - driverBytes() - 512<<10))
	idle := driverBytes()
	if p, r := alloc(768 << 10); r != 0 {
		t.Errorf("olMemAlloc(768 KiB) with the device full but for 512 KiB and idle pooled blocks: %s, want success once they are released", impl.ResultCode(r))
	} else {
		if n := driverBytes(); n >= idle {
			t.Errorf("the driver holds %d bytes after the pooled allocation, %d before: the idle blocks did not go back", n, idle)
		}
		Must(t, "olMemFree", impl.OlMemFree(p, nil))
	}
	Must(t, "olMemFree", impl.OlMemFree(filler, nil))

	for _, size := range []uint64{512, 4096, 65536, maxPooled} {
		Must(t, "olMemFree", impl.OlMemFree(must(size), nil))
	}
	if driverBytes() == start {
		t.Fatal("nothing is cached before olShutDown: the check below would prove nothing")
	}
	up = false
	Must(t, "olShutDown", impl.OlShutDown(nil))
	if n := driverBytes(); n != start {
		t.Errorf("the driver holds %d bytes after the final olShutDown, %d before olInit", n, start)
	}
	if n := driverAllocs(); n != startAllocs {
		t.Errorf("the driver holds %v allocations (device/managed, pinned host) after the final olShutDown, %v before olInit", n, startAllocs)
	}
}
