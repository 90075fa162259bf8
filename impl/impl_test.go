package impl

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"go.uber.org/goleak"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/host"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type thing struct{ n int }

// insertAll files a batch under one lock: each object gets its own handle
// before any reader can find it, mixed with single inserts and removals.
func TestTableInsertAll(t *testing.T) {
	tb := newTable[thing](kindEvent, 3)
	one, _ := tb.insert(&thing{-1})
	vs := make([]thing, 40)
	hs := make([]uintptr, 40)
	seen := map[uintptr]bool{one: true}
	if n := tb.insertAll(vs, hs, func(v *thing, h uintptr) { v.n = int(h & indexMask) }); n != len(vs) {
		t.Fatalf("insertAll stored %d of %d", n, len(vs))
	}
	for i, h := range hs {
		if seen[h] {
			t.Fatalf("handle %#x handed out twice", h)
		}
		seen[h] = true
		got, err := tb.get(h, "Event")
		if err != nil || got != &vs[i] || got.n != int(h&indexMask) {
			t.Fatalf("get(%#x): %v %v", h, got, err)
		}
	}
	if !tb.remove(hs[3]) || tb.count() != len(vs) {
		t.Fatalf("remove: live %d", tb.count())
	}
}

func TestTableLifecycle(t *testing.T) {
	tb := newTable[thing](kindQueue, 7)
	a := &thing{1}
	h, err := tb.insert(a)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tb.get(h, "Queue"); err != nil || got != a {
		t.Fatalf("get: %v %v", got, err)
	}
	if !tb.remove(h) || tb.remove(h) {
		t.Fatal("remove must succeed once")
	}
	_, err = tb.get(h, "Queue")
	var oe *ol.Error
	if !errors.As(err, &oe) || oe.Code != ol.ErrcInvalidQueue || !strings.Contains(oe.Details, "already destroyed") {
		t.Fatalf("stale handle: %v", err)
	}
	// a handle of the same slot from another epoch
	other := newTable[thing](kindQueue, 6)
	h6, _ := other.insert(a)
	if _, err := tb.get(h6, "Queue"); err == nil || !strings.Contains(err.Error(), "earlier initialisation") {
		t.Fatalf("old epoch: %v", err)
	}
	// another kind
	dev := newTable[thing](kindDevice, 7)
	hd, _ := dev.insert(a)
	if _, err := tb.get(hd, "Queue"); err == nil || !strings.Contains(err.Error(), "is a device handle, not a queue handle") {
		t.Fatalf("wrong kind: %v", err)
	}
	if _, err := tb.get(0x10, "Queue"); err == nil || !strings.Contains(err.Error(), "is not a valid queue handle") {
		t.Fatalf("garbage: %v", err)
	}
	if v, err := tb.optional(0, "Queue"); v != nil || err != nil {
		t.Fatal("optional NULL must be nil, nil")
	}
}

func TestTableReuseKeepsStaleHandlesInvalid(t *testing.T) {
	tb := newTable[thing](kindEvent, 1)
	seen := map[uintptr]bool{}
	var old []uintptr
	for i := 0; i < 5000; i++ {
		h, err := tb.insert(&thing{i})
		if err != nil {
			t.Fatal(err)
		}
		if seen[h] {
			t.Fatalf("handle %#x handed out twice", h)
		}
		seen[h] = true
		old = append(old, h)
		tb.remove(h)
	}
	for _, h := range old {
		if _, err := tb.get(h, "Event"); err == nil {
			t.Fatalf("destroyed handle %#x still resolves", h)
		}
	}
	if tb.used.Load() > reuseDelay+2 {
		t.Fatalf("slots are not reused: %d used", tb.used.Load())
	}
}

// Generations run past 2^32 within a table, and the next initialisation's
// table starts past every generation handed out: no handle value repeats.
func TestTableGenerationsWrapAndCarryOver(t *testing.T) {
	first := newTable[thing](kindEvent, 0xFFFFFF00)
	seen := map[uintptr]bool{}
	var stale []uintptr
	for i := 0; i < 300*(reuseDelay+1); i++ {
		h, err := first.insert(&thing{i})
		if err != nil {
			t.Fatal(err)
		}
		if seen[h] {
			t.Fatalf("handle %#x handed out twice", h)
		}
		seen[h] = true
		if i%97 == 0 {
			stale = append(stale, h)
		}
		first.remove(h)
	}
	for _, h := range stale {
		if _, err := first.get(h, "Event"); err == nil || !strings.Contains(err.Error(), "already destroyed") {
			t.Fatalf("destroyed handle %#x: %v", h, err)
		}
	}
	base := first.nextBase()
	if int32(base-0xFFFFFF00) < 300 {
		t.Fatalf("next base %#x is not past the generations handed out", base)
	}
	second := newTable[thing](kindEvent, base)
	for i := 0; i < 2*(reuseDelay+1); i++ {
		h, err := second.insert(&thing{i})
		if err != nil {
			t.Fatal(err)
		}
		if seen[h] {
			t.Fatalf("handle %#x of the first table handed out again", h)
		}
		second.remove(h)
	}
	for _, h := range stale {
		if _, err := second.get(h, "Event"); err == nil || !strings.Contains(err.Error(), "earlier initialisation") {
			t.Fatalf("handle %#x of the first table: %v", h, err)
		}
	}
	// a table where nothing was created passes its base on unchanged
	if got := newTable[thing](kindQueue, 77).nextBase(); got != 77 {
		t.Fatalf("empty table: next base %d, want 77", got)
	}
}

func TestTableConcurrent(t *testing.T) {
	tb := newTable[thing](kindQueue, 1)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				v := &thing{i}
				h, err := tb.insert(v)
				if err != nil {
					t.Error(err)
					return
				}
				if got, err := tb.get(h, "Queue"); err != nil || got != v {
					t.Errorf("get after insert: %v", err)
					return
				}
				tb.remove(h)
			}
		}()
	}
	wg.Wait()
	if tb.count() != 0 {
		t.Fatalf("%d live after all removed", tb.count())
	}
}

func TestAllocMap(t *testing.T) {
	m := newAllocMap()
	if !m.insert(&alloc{base: 100, size: 50}) || !m.insert(&alloc{base: 200, size: 10}) || !m.insert(&alloc{base: 150, size: 50}) {
		t.Fatal("disjoint inserts refused")
	}
	for _, bad := range []alloc{{base: 90, size: 11}, {base: 149, size: 1}, {base: 209, size: 5}, {base: 0, size: 1000}} {
		if m.insert(&bad) {
			t.Fatalf("overlapping insert %+v accepted", bad)
		}
	}
	if a, ok := m.find(199); !ok || a.base != 150 {
		t.Fatalf("find(199) = %+v", a)
	}
	if _, ok := m.find(210); ok {
		t.Fatal("find outside allocations")
	}
	if _, ok := m.find(99); ok {
		t.Fatal("find outside allocations")
	}
	if _, ok := m.removeBase(151); ok {
		t.Fatal("removeBase must take exact bases only")
	}
	if _, ok := m.removeBase(150); !ok {
		t.Fatal("removeBase must take exact bases only")
	}
	if _, ok := m.find(160); ok {
		t.Fatal("removeBase must take exact bases only")
	}
}

// fakePlatform is a platform whose Deinit can fail; with log set it and
// its device note their teardown calls there.
type fakePlatform struct {
	name       string
	fail       error
	deinits    *int
	dev        fakeDevice
	log        *[]string
	deviceless bool // Devices reports none
}

func (p *fakePlatform) Name() string                { return p.name }
func (p *fakePlatform) Vendor() string              { return "test" }
func (p *fakePlatform) Version() string             { return "v0" }
func (p *fakePlatform) Backend() ol.PlatformBackend { return ol.PlatformBackendUnknown }
func (p *fakePlatform) Devices() []plugin.Device {
	if p.deviceless {
		return nil
	}
	return []plugin.Device{&p.dev}
}
func (p *fakePlatform) Drain() error { p.note("drain " + p.name); return nil }
func (p *fakePlatform) Deinit() error {
	p.note("deinit " + p.name)
	*p.deinits++
	return p.fail
}

func (p *fakePlatform) note(s string) {
	if p.log != nil {
		*p.log = append(*p.log, s)
	}
}

type fakeDevice struct {
	plugin.Device
	p *fakePlatform
}

func (d *fakeDevice) Free(ptr uintptr, kind ol.AllocType) error {
	d.p.note(fmt.Sprintf("free %#x", ptr))
	return nil
}

func (*fakeDevice) IsHost() bool { return false }

func (*fakeDevice) Info() *plugin.DeviceInfo {
	return &plugin.DeviceInfo{Type: plugin.Some(ol.DeviceTypeGpu)}
}

type fakePlugin struct {
	name string
	p    *fakePlatform
	err  error
}

func (f *fakePlugin) Name() string                             { return f.name }
func (f *fakePlugin) Init(plugin.Env) (plugin.Platform, error) { return f.p, f.err }

func TestTeardownJoinsPlatformErrors(t *testing.T) {
	n := 0
	plugins := []plugin.Plugin{
		&fakePlugin{name: "a", p: &fakePlatform{name: "A", fail: ol.NewError(ol.ErrcBackendFailure, "A broke"), deinits: &n}},
		&fakePlugin{name: "b", p: &fakePlatform{name: "B", deinits: &n}},
		&fakePlugin{name: "c", p: &fakePlatform{name: "C", fail: ol.NewError(ol.ErrcOutOfResources, "C broke"), deinits: &n}},
	}
	c, err := newContext(generations{}, plugins)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.deviceList) != 3 {
		t.Fatalf("%d devices", len(c.deviceList))
	}
	code, details := describe(c.teardown())
	if n != 3 {
		t.Fatalf("%d platforms de-initialised, want 3", n)
	}
	if code != ol.ErrcBackendFailure || !strings.Contains(details, "platform A: A broke") || !strings.Contains(details, "platform C: C broke") {
		t.Fatalf("joined error: %s %q", code, details)
	}
}

// The final shutdown waits for the work of every platform before it
// releases anything of any platform.
func TestTeardownDrainsBeforeReleasing(t *testing.T) {
	n := 0
	var log []string
	a := &fakePlatform{name: "A", deinits: &n, log: &log}
	b := &fakePlatform{name: "B", deinits: &n, log: &log}
	a.dev.p, b.dev.p = a, b
	c, err := newContext(generations{}, []plugin.Plugin{&fakePlugin{name: "a", p: a}, &fakePlugin{name: "b", p: b}})
	if err != nil {
		t.Fatal(err)
	}
	if !c.mem.insert(&alloc{base: 0x1000, size: 64, kind: ol.AllocTypeDevice, device: c.deviceList[0]}) {
		t.Fatal("insert refused")
	}
	if err := c.teardown(); err != nil {
		t.Fatal(err)
	}
	want := "drain A, drain B, free 0x1000, deinit A, deinit B"
	if got := strings.Join(log, ", "); got != want {
		t.Fatalf("teardown order: %s, want %s", got, want)
	}
}

func TestPluginInitErrorKeepsOthers(t *testing.T) {
	n := 0
	plugins := []plugin.Plugin{
		&fakePlugin{name: "bad", err: ol.NewError(ol.ErrcBackendFailure, "driver said 999")},
		&fakePlugin{name: "good", p: &fakePlatform{name: "G", deinits: &n}},
	}
	c, err := newContext(generations{}, plugins)
	if c == nil || err == nil || !strings.Contains(err.Error(), "platform bad: driver said 999") {
		t.Fatalf("context %v, error %v", c, err)
	}
	if len(c.platformList) != 1 || c.platformList[0].name != "G" {
		t.Fatal("the working platform is missing")
	}
	if err := c.teardown(); err != nil || n != 1 {
		t.Fatalf("teardown: %v, %d deinits", err, n)
	}
}

// A platform that finds no device is absent, as in LLVM 22.1, and is
// de-initialised at once: what its Init took is given back.
func TestDevicelessPlatformIsDeinitialised(t *testing.T) {
	n := 0
	plugins := []plugin.Plugin{
		&fakePlugin{name: "none", p: &fakePlatform{name: "N", deinits: &n, deviceless: true}},
		&fakePlugin{name: "good", p: &fakePlatform{name: "G", deinits: &n}},
	}
	c, err := newContext(generations{}, plugins)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || len(c.platformList) != 1 || c.platformList[0].name != "G" {
		t.Fatalf("%d de-initialised at init, platforms %d", n, len(c.platformList))
	}
	if err := c.teardown(); err != nil || n != 2 {
		t.Fatalf("teardown: %v, %d de-initialised in all, want 2", err, n)
	}
}

func TestRecoverTurnsPanicIntoError(t *testing.T) {
	res := func() (res uintptr) {
		defer Recover("olTest", &res)
		var m map[string]int
		m["x"] = 1 // panics
		return 0
	}()
	if ResultCode(res) != ol.ErrcUnknown || !strings.Contains(ResultDetails(res), "internal error in olTest: assignment to entry in nil map") {
		t.Fatalf("%s %q", ResultCode(res), ResultDetails(res))
	}
}

func TestInfoWriteRules(t *testing.T) {
	var buf [8]byte
	v := str("abc")
	if err := v.write(3, unsafe.Pointer(&buf[0]), nil); err == nil || buf[0] != 0 {
		t.Fatal("a 3-byte buffer must be refused for a 4-byte string, untouched")
	}
	if err := v.write(8, unsafe.Pointer(&buf[0]), nil); err != nil || string(buf[:5]) != "abc\x00\x00" {
		t.Fatalf("wrote %q, %v", buf, err)
	}
	var n uint64
	if err := v.write(0, nil, unsafe.Pointer(&n)); err != nil || n != 4 {
		t.Fatalf("size %d", n)
	}
	if err := u32(5).write(4, nil, nil); err == nil {
		t.Fatal("no outputs must be refused")
	}
}

func TestLeakReport(t *testing.T) {
	c, err := newContext(generations{}, []plugin.Plugin{host.New()})
	if err != nil {
		t.Fatal(err)
	}
	dev := c.deviceList[len(c.deviceList)-1]
	var p uintptr
	if p, err = c.olMemAlloc(dev, ol.AllocTypeHost, 4096); err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(t.TempDir(), "leaks")
	if err != nil {
		t.Fatal(err)
	}
	c.reportLeaks(f)
	if err := c.teardown(); err != nil {
		t.Fatal(err)
	}
	if len(c.mem.snapshot()) != 0 {
		t.Fatal("teardown left allocations behind")
	}
	f.Close()
	got, _ := os.ReadFile(f.Name())
	want := fmt.Sprintf("liboffload-go leak check: 1 objects left alive at olShutDown: 0 queues, 0 events, 0 programs, 1 allocations (4096 bytes)\n  allocation %#x, 4096 bytes, OL_ALLOC_TYPE_HOST, device %#x\n", p, dev.h)
	if string(got) != want {
		t.Fatalf("report:\n%s\nwant:\n%s", got, want)
	}
}

// The runtime knows backends only through the plugin interface: nothing it
// imports (directly or not) is a concrete backend.
func TestRuntimeImportsNoBackend(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, backend := range []string{"/plugins/host", "/plugins/cuda", "/plugins/amdgpu", "/plugins/internal/"} {
			if strings.Contains(pkg, "liboffload-go/liboffload-go"+backend) {
				t.Errorf("impl depends on %s", pkg)
			}
		}
	}
}

// TestUnsetDeviceInfoIsUnimplemented checks that a property the plugin
// leaves unset is answered as LLVM 22.1 answers it, by both halves of the
// pair, while the ones it sets and the runtime's own are answered.
func TestUnsetDeviceInfoIsUnimplemented(t *testing.T) {
	n := 0
	c, err := newContext(generations{}, []plugin.Plugin{&fakePlugin{name: "f", p: &fakePlatform{name: "F", deinits: &n}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.teardown()
	dev := c.deviceList[0]
	var typ ol.DeviceType
	if err := c.callOlGetDeviceInfo(dev.h, uint32(ol.DeviceInfoType), 4, unsafe.Pointer(&typ)); err != nil || typ != ol.DeviceTypeGpu {
		t.Fatalf("TYPE: %v, %v", typ, err)
	}
	var h uintptr
	if err := c.callOlGetDeviceInfo(dev.h, uint32(ol.DeviceInfoPlatform), 8, unsafe.Pointer(&h)); err != nil || h != dev.platform.h {
		t.Fatalf("PLATFORM: %#x, %v", h, err)
	}
	for _, prop := range []ol.DeviceInfo{ol.DeviceInfoName, ol.DeviceInfoMaxWorkGroupSizePerDimension, ol.DeviceInfoGlobalMemSize} {
		want := prop.String() + ": plugin did not provide a response for this information"
		var buf [64]byte
		code, details := describe(c.callOlGetDeviceInfo(dev.h, uint32(prop), 64, unsafe.Pointer(&buf[0])))
		if code != ol.ErrcUnimplemented || details != want {
			t.Errorf("olGetDeviceInfo(%s): %s %q, want UNIMPLEMENTED %q", prop, code, details, want)
		}
		var size uint64
		code, details = describe(c.callOlGetDeviceInfoSize(dev.h, uint32(prop), unsafe.Pointer(&size)))
		if code != ol.ErrcUnimplemented || details != want || size != 0 {
			t.Errorf("olGetDeviceInfoSize(%s): %s %q, size %d", prop, code, details, size)
		}
	}
	code, details := describe(c.callOlGetDeviceInfo(dev.h, 999, 4, unsafe.Pointer(&typ)))
	if code != ol.ErrcInvalidEnumeration || details != "getDeviceInfo enum '999' is invalid" {
		t.Errorf("invalid enum: %s %q", code, details)
	}
}
