// Package tests drives the runtime through its entry points, the way the C
// shims do, with goleak checking that nothing outlives the last shutdown.
package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"go.uber.org/goleak"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/impl"
	"github.com/liboffload-go/liboffload-go/plugins/amdgpu"
	"github.com/liboffload-go/liboffload-go/plugins/cuda"
	"github.com/liboffload-go/liboffload-go/plugins/host"
	"github.com/liboffload-go/liboffload-go/tests/go/ccb"
)

// The runtime is driven here with the library's own backends (the list
// cmd/liboffload registers).
func TestMain(m *testing.M) {
	impl.UsePlugins(amdgpu.New(), cuda.New(), host.New())
	goleak.VerifyTestMain(m)
}

func mustOK(t *testing.T, what string, r uintptr) {
	t.Helper()
	if r != 0 {
		t.Fatalf("%s: %s: %s", what, impl.ResultCode(r), impl.ResultDetails(r))
	}
}

func wantErr(t *testing.T, what string, r uintptr, c ol.Errc, details string) {
	t.Helper()
	if impl.ResultCode(r) != c {
		t.Fatalf("%s: code %s, want %s (details %q)", what, impl.ResultCode(r), c, impl.ResultDetails(r))
	}
	if details != "" && !strings.Contains(impl.ResultDetails(r), details) {
		t.Fatalf("%s: details %q, want text containing %q", what, impl.ResultDetails(r), details)
	}
}

func initLib(t *testing.T) {
	t.Helper()
	mustOK(t, "olInit", impl.OlInit(nil))
	t.Cleanup(func() { mustOK(t, "olShutDown", impl.OlShutDown(nil)) })
}

func devices(t *testing.T) []uintptr {
	t.Helper()
	it := ccb.NewIter(0)
	defer it.Free()
	mustOK(t, "olIterateDevices", impl.OlIterateDevices(it.Callback(), it.User(), nil))
	var out []uintptr
	for i := 0; i < it.Count(); i++ {
		out = append(out, it.Device(i))
	}
	return out
}

func hostDevice(t *testing.T) uintptr {
	t.Helper()
	ds := devices(t)
	if len(ds) == 0 {
		t.Fatal("no devices")
	}
	return ds[len(ds)-1]
}

func TestUninitialized(t *testing.T) {
	r1 := impl.OlShutDown(nil)
	wantErr(t, "olShutDown before init", r1, ol.ErrcUninitialized, "please call olInit")
	r2 := impl.OlGetDeviceInfo(0, 0, 4, nil, nil)
	if r1 != r2 {
		t.Fatalf("UNINITIALIZED results differ: %#x %#x", r1, r2)
	}
}

func TestRefcountAndReinit(t *testing.T) {
	mustOK(t, "init 1", impl.OlInit(nil))
	mustOK(t, "init 2", impl.OlInit(nil))
	mustOK(t, "shutdown 1", impl.OlShutDown(nil))
	d1 := hostDevice(t)
	mustOK(t, "shutdown 2", impl.OlShutDown(nil))
	wantErr(t, "extra shutdown", impl.OlShutDown(nil), ol.ErrcUninitialized, "")
	if impl.Initialized() {
		t.Fatal("still initialised")
	}
	initLib(t)
	d2 := hostDevice(t)
	if d1 == d2 {
		t.Fatalf("re-init gave the same handle %#x", d1)
	}
	var typ uint32
	wantErr(t, "stale device", impl.OlGetDeviceInfo(d1, uint32(ol.DeviceInfoType), 4, unsafe.Pointer(&typ), nil),
		ol.ErrcInvalidDevice, "from an earlier initialisation")
}

func TestIterateStops(t *testing.T) {
	initLib(t)
	it := ccb.NewIter(1)
	defer it.Free()
	mustOK(t, "iterate", impl.OlIterateDevices(it.Callback(), it.User(), nil))
	if it.Count() != 1 {
		t.Fatalf("callback ran %d times after returning false", it.Count())
	}
	wantErr(t, "NULL callback", impl.OlIterateDevices(nil, nil, nil), ol.ErrcInvalidNullPointer, "validation failure: NULL == Callback")
}

func TestHostDeviceInfo(t *testing.T) {
	initLib(t)
	d := hostDevice(t)
	var typ uint32
	mustOK(t, "TYPE", impl.OlGetDeviceInfo(d, uint32(ol.DeviceInfoType), 4, unsafe.Pointer(&typ), nil))
	if ol.DeviceType(typ) != ol.DeviceTypeHost {
		t.Fatalf("type %d", typ)
	}
	var n uint32
	mustOK(t, "NUM_COMPUTE_UNITS", impl.OlGetDeviceInfo(d, uint32(ol.DeviceInfoNumComputeUnits), 4, unsafe.Pointer(&n), nil))
	if n == 0 {
		t.Fatal("0 compute units")
	}
	var mem uint64
	mustOK(t, "GLOBAL_MEM_SIZE", impl.OlGetDeviceInfo(d, uint32(ol.DeviceInfoGlobalMemSize), 8, unsafe.Pointer(&mem), nil))
	if mem == 0 {
		t.Fatal("0 global memory")
	}
	var plat uintptr
	mustOK(t, "PLATFORM", impl.OlGetDeviceInfo(d, uint32(ol.DeviceInfoPlatform), 8, unsafe.Pointer(&plat), nil))
	var be uint32
	mustOK(t, "BACKEND", impl.OlGetPlatformInfo(plat, uint32(ol.PlatformInfoBackend), 4, unsafe.Pointer(&be), nil))
	if ol.PlatformBackend(be) != ol.PlatformBackendHost {
		t.Fatalf("backend %d", be)
	}
	// strings: size includes the NUL; a buffer one byte short is refused untouched
	var size uint64
	mustOK(t, "NAME size", impl.OlGetPlatformInfoSize(plat, uint32(ol.PlatformInfoName), unsafe.Pointer(&size), nil))
	if size != 5 {
		t.Fatalf("platform NAME size %d, want 5", size)
	}
	buf := []byte("XXXXXX")
	wantErr(t, "short buffer", impl.OlGetPlatformInfo(plat, uint32(ol.PlatformInfoName), 4, unsafe.Pointer(&buf[0]), nil),
		ol.ErrcInvalidSize, "provided size is invalid")
	if string(buf) != "XXXXXX" {
		t.Fatalf("buffer written on error: %q", buf)
	}
	mustOK(t, "NAME", impl.OlGetPlatformInfo(plat, uint32(ol.PlatformInfoName), 6, unsafe.Pointer(&buf[0]), nil))
	if string(buf) != "Host\x00X" {
		t.Fatalf("NAME wrote %q", buf)
	}
	wantErr(t, "bad enum", impl.OlGetDeviceInfo(d, 0x7fffffff, 4, unsafe.Pointer(&typ), nil),
		ol.ErrcInvalidEnumeration, "getDeviceInfo enum '2147483647' is invalid")
	wantErr(t, "PropSize 0", impl.OlGetDeviceInfo(0, 0, 0, nil, nil), ol.ErrcInvalidSize, "validation failure: PropSize == 0")
}

func TestGarbageHandles(t *testing.T) {
	initLib(t)
	d := hostDevice(t)
	var plat uintptr
	mustOK(t, "PLATFORM", impl.OlGetDeviceInfo(d, uint32(ol.DeviceInfoPlatform), 8, unsafe.Pointer(&plat), nil))
	var v uint32
	wantErr(t, "garbage device", impl.OlGetDeviceInfo(0x1234, 0, 4, unsafe.Pointer(&v), nil), ol.ErrcInvalidDevice, "Device (0x1234) is not a valid device handle")
	wantErr(t, "platform as device", impl.OlGetDeviceInfo(plat, 0, 4, unsafe.Pointer(&v), nil), ol.ErrcInvalidDevice, "is a platform handle, not a device handle")
	wantErr(t, "device as platform", impl.OlGetPlatformInfo(d, 0, 4, unsafe.Pointer(&v), nil), ol.ErrcInvalidPlatform, "is a device handle, not a platform handle")
	wantErr(t, "garbage queue", impl.OlSyncQueue(^uintptr(0), nil), ol.ErrcInvalidQueue, "not a valid queue handle")
	wantErr(t, "garbage event", impl.OlSyncEvent(0xdeadbeef, nil), ol.ErrcInvalidEvent, "not a valid event handle")
	wantErr(t, "garbage program", impl.OlDestroyProgram(8, nil), ol.ErrcInvalidArgument, "not a valid program handle")
	wantErr(t, "garbage symbol", impl.OlGetSymbolInfo(8, 0, 4, unsafe.Pointer(&v), nil), ol.ErrcInvalidArgument, "not a valid symbol handle")
}

func TestMemFillPatternZero(t *testing.T) {
	initLib(t)
	var x [8]byte
	wantErr(t, "PatternSize 0", impl.OlMemFill(0, unsafe.Pointer(&x[0]), 0, unsafe.Pointer(&x[0]), 8, nil), ol.ErrcInvalidSize, "validation failure: PatternSize == 0")
	wantErr(t, "not a multiple", impl.OlMemFill(0, unsafe.Pointer(&x[0]), 3, unsafe.Pointer(&x[0]), 8, nil), ol.ErrcInvalidSize, "validation failure: FillSize % PatternSize != 0")
}

func TestMemcpyHost(t *testing.T) {
	initLib(t)
	d := hostDevice(t)
	src := ccb.Alloc(64)
	dst := ccb.Alloc(64)
	defer ccb.Free(src)
	defer ccb.Free(dst)
	s := unsafe.Slice((*byte)(src), 64)
	for i := range s {
		s[i] = byte(i * 3)
	}
	mustOK(t, "memcpy", impl.OlMemcpy(0, dst, d, src, d, 64, nil))
	if string(unsafe.Slice((*byte)(dst), 64)) != string(s) {
		t.Fatal("bytes differ after olMemcpy")
	}
	mustOK(t, "memcpy 0 bytes", impl.OlMemcpy(0, dst, d, src, d, 0, nil))
	wantErr(t, "NULL DstDevice", impl.OlMemcpy(0, dst, 0, src, d, 1, nil), ol.ErrcInvalidNullHandle, "validation failure: NULL == DstDevice")
	wantErr(t, "NULL SrcPtr", impl.OlMemcpy(0, dst, d, nil, d, 1, nil), ol.ErrcInvalidNullPointer, "validation failure: NULL == SrcPtr")
}

func TestHostAllocations(t *testing.T) {
	initLib(t)
	d := hostDevice(t)
	var p unsafe.Pointer
	for _, typ := range []ol.AllocType{ol.AllocTypeHost, ol.AllocTypeDevice, ol.AllocTypeManaged} {
		mustOK(t, "alloc", impl.OlMemAlloc(d, uint32(typ), 1024, unsafe.Pointer(&p), nil))
		if uintptr(p)%64 != 0 {
			t.Fatalf("allocation %p not 64-byte aligned", p)
		}
		var base unsafe.Pointer
		var size uint64
		var dev uintptr
		var gotType uint32
		interior := unsafe.Add(p, 123)
		mustOK(t, "BASE", impl.OlGetMemInfo(interior, uint32(ol.MemInfoBase), 8, unsafe.Pointer(&base), nil))
		mustOK(t, "SIZE", impl.OlGetMemInfo(interior, uint32(ol.MemInfoSize), 8, unsafe.Pointer(&size), nil))
		mustOK(t, "DEVICE", impl.OlGetMemInfo(interior, uint32(ol.MemInfoDevice), 8, unsafe.Pointer(&dev), nil))
		mustOK(t, "TYPE", impl.OlGetMemInfo(p, uint32(ol.MemInfoType), 4, unsafe.Pointer(&gotType), nil))
		if base != p || size != 1024 || dev != d || ol.AllocType(gotType) != typ {
			t.Fatalf("mem info: base %p size %d dev %#x type %d", base, size, dev, gotType)
		}
		wantErr(t, "free interior", impl.OlMemFree(interior, nil), ol.ErrcInvalidArgument, "address is not a known allocation")
		mustOK(t, "free", impl.OlMemFree(p, nil))
		wantErr(t, "double free", impl.OlMemFree(p, nil), ol.ErrcInvalidArgument, "address is not a known allocation")
	}
	var size uint64
	wantErr(t, "unknown ptr", impl.OlGetMemInfo(unsafe.Pointer(&size), 0x7fffffff, 8, unsafe.Pointer(&size), nil), ol.ErrcNotFound, "allocated memory information not found")
}

func TestDisableValidation(t *testing.T) {
	t.Setenv("OFFLOAD_DISABLE_VALIDATION", "")
	initLib(t)
	var v uint32
	wantErr(t, "NULL device", impl.OlGetDeviceInfo(0, 0, 4, unsafe.Pointer(&v), nil), ol.ErrcInvalidNullHandle, "Device is NULL")
	d := hostDevice(t)
	wantErr(t, "PropSize 0", impl.OlGetDeviceInfo(d, 0, 0, unsafe.Pointer(&v), nil), ol.ErrcInvalidSize, "provided size is invalid")
	wantErr(t, "NULL value", impl.OlGetDeviceInfo(d, 0, 4, nil, nil), ol.ErrcInvalidNullPointer, "value and size outputs are nullptr")
	wantErr(t, "PatternSize 0", impl.OlMemFill(0, unsafe.Pointer(&v), 0, unsafe.Pointer(&v), 4, nil), ol.ErrcInvalidSize, "PatternSize is 0")
}

func TestUnknownPlugin(t *testing.T) {
	t.Setenv("OFFLOAD_PLUGINS", "host,warp-drive")
	wantErr(t, "olInit", impl.OlInit(nil), ol.ErrcInvalidValue, `unknown plugin "warp-drive"`)
	if impl.Initialized() {
		t.Fatal("a failed configuration left the library initialised")
	}
}

func TestResultsInterned(t *testing.T) {
	initLib(t)
	var v uint32
	r1 := impl.OlGetDeviceInfo(0x1234, 0, 4, unsafe.Pointer(&v), nil)
	r2 := impl.OlGetDeviceInfo(0x1234, 0, 4, unsafe.Pointer(&v), nil)
	if r1 != r2 || r1 == 0 {
		t.Fatalf("same error gave %#x and %#x", r1, r2)
	}
}

func TestConcurrentLifecycle(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var typ uint32
			for i := 0; i < 300; i++ {
				if r := impl.OlInit(nil); r != 0 {
					errs <- "init: " + impl.ResultDetails(r)
					return
				}
				it := ccb.NewIter(0)
				r := impl.OlIterateDevices(it.Callback(), it.User(), nil)
				if r == 0 {
					r = impl.OlGetDeviceInfo(it.Device(0), uint32(ol.DeviceInfoType), 4, unsafe.Pointer(&typ), nil)
				}
				it.Free()
				if r != 0 {
					errs <- "query: " + impl.ResultDetails(r)
				}
				if r := impl.OlShutDown(nil); r != 0 {
					errs <- "shutdown: " + impl.ResultDetails(r)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if impl.Initialized() {
		t.Fatal("refcount did not return to 0")
	}
}

func TestTraceFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.txt")
	t.Setenv("OFFLOAD_TRACE_FILE", path)
	mustOK(t, "init", impl.OlInit(nil))
	d := hostDevice(t)
	var typ uint32
	mustOK(t, "TYPE", impl.OlGetDeviceInfo(d, uint32(ol.DeviceInfoType), 4, unsafe.Pointer(&typ), nil))
	impl.OlGetDeviceInfo(0, uint32(ol.DeviceInfoType), 4, nil, nil)
	mustOK(t, "shutdown", impl.OlShutDown(nil))
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("---> olInit()-> OL_SUCCESS\n"+
		"---> olGetDeviceInfo(.Device = %#x, .PropName = OL_DEVICE_INFO_TYPE, .PropSize = 4, .PropValue = %p (OL_DEVICE_TYPE_HOST))-> OL_SUCCESS\n"+
		"---> olGetDeviceInfo(.Device = nullptr, .PropName = OL_DEVICE_INFO_TYPE, .PropSize = 4, .PropValue = nullptr)-> OL_ERRC_INVALID_NULL_HANDLE\n"+
		"     *Error Details* validation failure: NULL == Device \n"+
		"---> olShutDown()-> OL_SUCCESS\n", d, &typ)
	// the iterate line carries a C function address; check it separately
	lines := strings.SplitAfter(string(got), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[1], "---> olIterateDevices(.Callback = 0x") {
		t.Fatalf("trace:\n%s", got)
	}
	rest := lines[0] + strings.Join(lines[2:], "")
	if rest != want {
		t.Fatalf("trace:\n%s\nwant:\n%s", rest, want)
	}
}

func TestLeakCheckAtShutDown(t *testing.T) {
	t.Setenv("OFFLOAD_LEAK_CHECK", "1")
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = f
	defer func() { os.Stderr = saved }()
	mustOK(t, "init", impl.OlInit(nil))
	d := hostDevice(t)
	var p unsafe.Pointer
	mustOK(t, "alloc", impl.OlMemAlloc(d, uint32(ol.AllocTypeManaged), 100, unsafe.Pointer(&p), nil))
	mustOK(t, "nested init", impl.OlInit(nil))
	mustOK(t, "nested shutdown", impl.OlShutDown(nil)) // not the last: no report
	mustOK(t, "shutdown", impl.OlShutDown(nil))
	os.Stderr = saved
	got, _ := os.ReadFile(f.Name())
	want := fmt.Sprintf("liboffload-go leak check: 1 objects left alive at olShutDown: 0 queues, 0 events, 0 programs, 1 allocations (100 bytes)\n  allocation %p, 100 bytes, OL_ALLOC_TYPE_MANAGED, device %#x\n", p, d)
	if string(got) != want {
		t.Fatalf("stderr:\n%s\nwant:\n%s", got, want)
	}
}
