//go:build olfault

package tests

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/impl"
	"github.com/liboffload-go/liboffload-go/internal/fault"
	"github.com/liboffload-go/liboffload-go/tests/go/ccb"
)

// Fault injection (make test-go: go test -tags olfault): every entry point
// is called once per lock it takes, each time with a panic injected right
// after that lock is taken (internal/fault.Point), on the calling
// goroutine. The call must return OL_ERRC_UNKNOWN naming itself, and the
// library must still work afterwards: a nested olInit/olShutDown, an
// allocation, a copy and a launch on the host device, then a full
// olShutDown and a fresh olInit. A lock the panic left held hangs one of
// those; the watchdog reports which injection did it.

// faultFixture is what the calls work on, made anew (without injection)
// for every injected call.
type faultFixture struct {
	dev, plat, q, ev, pev1, pev2, prog, kern, glob uintptr
	buf, buf2                                      unsafe.Pointer
	ext, reg                                       unsafe.Pointer // C memory: to register, registered
	hostFn                                         *ccb.Gate
}

func (f *faultFixture) ptr(v any) unsafe.Pointer {
	switch p := v.(type) {
	case *uintptr:
		return unsafe.Pointer(p)
	case *uint64:
		return unsafe.Pointer(p)
	case *uint32:
		return unsafe.Pointer(p)
	case *bool:
		return unsafe.Pointer(p)
	case *float32:
		return unsafe.Pointer(p)
	case *unsafe.Pointer:
		return unsafe.Pointer(p)
	}
	panic(fmt.Sprintf("ptr of %T", v))
}

// withWatchdog runs fn, and ends the test binary if it does not return
// in time: a lock left held would otherwise hang the test until go
// test's own timeout, without saying which injection caused it.
func withWatchdog(what string, fn func()) {
	timer := time.AfterFunc(20*time.Second, func() {
		fmt.Fprintf(os.Stderr, "FAIL: %s did not return in 20 s: a panic left a lock held\n", what)
		os.Exit(1)
	})
	defer timer.Stop()
	fn()
}

func newFaultFixture(t *testing.T, img []byte) *faultFixture {
	t.Helper()
	mustOK(t, "olInit", impl.OlInit(nil))
	f := &faultFixture{dev: hostDevice(t)}
	mustOK(t, "olGetDeviceInfo", impl.OlGetDeviceInfo(f.dev, uint32(ol.DeviceInfoPlatform), 8, f.ptr(&f.plat), nil))
	mustOK(t, "olCreateQueue", impl.OlCreateQueue(f.dev, f.ptr(&f.q), nil))
	mustOK(t, "olCreateEvent", impl.OlCreateEvent(f.q, f.ptr(&f.ev), nil))
	mustOK(t, "olCreateEvent23", impl.OlCreateEvent23(f.q, uint32(ol.EventFlagsEnableProfiling), f.ptr(&f.pev1), nil))
	mustOK(t, "olCreateEvent23", impl.OlCreateEvent23(f.q, uint32(ol.EventFlagsEnableProfiling), f.ptr(&f.pev2), nil))
	mustOK(t, "olCreateProgram", impl.OlCreateProgram(f.dev, unsafe.Pointer(&img[0]), uint64(len(img)), f.ptr(&f.prog), nil))
	name := []byte("write_ids\x00")
	mustOK(t, "olGetSymbol", impl.OlGetSymbol(f.prog, unsafe.Pointer(&name[0]), uint32(ol.SymbolKindKernel), f.ptr(&f.kern), nil))
	gname := []byte("counter\x00")
	mustOK(t, "olGetSymbol", impl.OlGetSymbol(f.prog, unsafe.Pointer(&gname[0]), uint32(ol.SymbolKindGlobalVariable), f.ptr(&f.glob), nil))
	mustOK(t, "olMemAlloc", impl.OlMemAlloc(f.dev, uint32(ol.AllocTypeHost), 256, f.ptr(&f.buf), nil))
	mustOK(t, "olMemAlloc", impl.OlMemAlloc(f.dev, uint32(ol.AllocTypeHost), 256, f.ptr(&f.buf2), nil))
	f.ext, f.reg = ccb.Alloc(4096), ccb.Alloc(4096)
	var pinned unsafe.Pointer
	mustOK(t, "olMemRegister", impl.OlMemRegister(f.dev, f.reg, 4096, 0, f.ptr(&pinned), nil))
	f.hostFn = ccb.NewGate()
	f.hostFn.Open()
	return f
}

// close destroys what is left of the fixture and ends the initialisation
// (results ignored: the injected call may have destroyed some of it, or
// left it half made), then checks that the library is down.
func (f *faultFixture) close(t *testing.T, what string) {
	t.Helper()
	withWatchdog(what+": clean-up", func() {
		impl.OlSyncQueue(f.q, nil)
		for _, e := range []uintptr{f.ev, f.pev1, f.pev2} {
			impl.OlDestroyEvent(e, nil)
		}
		impl.OlDestroyQueue(f.q, nil)
		impl.OlDestroyProgram(f.prog, nil)
		impl.OlMemFree(f.buf, nil)
		impl.OlMemFree(f.buf2, nil)
		impl.OlMemUnregister(f.dev, f.reg, nil)
		for i := 0; i < 4 && impl.Initialized(); i++ {
			impl.OlShutDown(nil)
		}
	})
	f.hostFn.Free()
	ccb.Free(f.ext)
	ccb.Free(f.reg)
	if impl.Initialized() {
		t.Fatalf("%s: the library is still initialised after clean-up", what)
	}
}

// checkHealth proves the library works after an injected panic.
func checkHealth(t *testing.T, what string, img []byte) {
	t.Helper()
	withWatchdog(what+": health check", func() {
		mustOK(t, what+": olInit", impl.OlInit(nil))
		defer func() { mustOK(t, what+": olShutDown", impl.OlShutDown(nil)) }()
		mustOK(t, what+": nested olInit", impl.OlInit(nil))
		mustOK(t, what+": nested olShutDown", impl.OlShutDown(nil))
		dev := hostDevice(t)
		var q, prog, k uintptr
		var a, b unsafe.Pointer
		mustOK(t, what+": olCreateQueue", impl.OlCreateQueue(dev, unsafe.Pointer(&q), nil))
		mustOK(t, what+": olMemAlloc", impl.OlMemAlloc(dev, uint32(ol.AllocTypeHost), 64, unsafe.Pointer(&a), nil))
		mustOK(t, what+": olMemAlloc", impl.OlMemAlloc(dev, uint32(ol.AllocTypeHost), 64, unsafe.Pointer(&b), nil))
		src := unsafe.Slice((*uint32)(a), 16)
		for i := range src {
			src[i] = uint32(100 + i)
		}
		mustOK(t, what+": olMemcpy", impl.OlMemcpy(q, b, dev, a, dev, 64, nil))
		mustOK(t, what+": olSyncQueue", impl.OlSyncQueue(q, nil))
		if got := unsafe.Slice((*uint32)(b), 16)[15]; got != 115 {
			t.Fatalf("%s: olMemcpy copied %d, want 115", what, got)
		}
		mustOK(t, what+": olCreateProgram", impl.OlCreateProgram(dev, unsafe.Pointer(&img[0]), uint64(len(img)), unsafe.Pointer(&prog), nil))
		name := []byte("write_ids\x00")
		mustOK(t, what+": olGetSymbol", impl.OlGetSymbol(prog, unsafe.Pointer(&name[0]), uint32(ol.SymbolKindKernel), unsafe.Pointer(&k), nil))
		clear(unsafe.Slice((*byte)(a), 64))
		args := struct{ out unsafe.Pointer }{a}
		mustOK(t, what+": olLaunchKernel", impl.OlLaunchKernel(q, dev, k, unsafe.Pointer(&args), uint64(unsafe.Sizeof(args)), unsafe.Pointer(launchArgs([3]uint32{2, 1, 1}, [3]uint32{8, 1, 1}, 0)), nil))
		mustOK(t, what+": olSyncQueue", impl.OlSyncQueue(q, nil))
		if got := unsafe.Slice((*uint32)(a), 16)[15]; got != 16 {
			t.Fatalf("%s: the kernel wrote %d, want 16", what, got)
		}
		mustOK(t, what+": olDestroyProgram", impl.OlDestroyProgram(prog, nil))
		mustOK(t, what+": olMemFree", impl.OlMemFree(a, nil))
		mustOK(t, what+": olMemFree", impl.OlMemFree(b, nil))
		mustOK(t, what+": olDestroyQueue", impl.OlDestroyQueue(q, nil))
	})
}

// injected calls fn the way the library's C entry points do (the Go
// export defers impl.Recover) with a panic armed at the n-th lock point,
// and reports whether it fired.
func injected(name string, n int, fn func() uintptr) (res uintptr, fired bool) {
	withWatchdog(fmt.Sprintf("%s with a panic at lock point %d", name, n), func() {
		res = func() (res uintptr) {
			defer impl.Recover(name, &res)
			fault.Arm(n)
			return fn()
		}()
		fired = fault.Disarm()
	})
	return res, fired
}

type faultCall struct {
	name string
	fn   func(f *faultFixture) uintptr
}

func faultCalls() []faultCall {
	prop := func(f *faultFixture) unsafe.Pointer { var v [64]byte; return unsafe.Pointer(&v[0]) }
	return []faultCall{
		{"olGetPlatformInfo", func(f *faultFixture) uintptr {
			return impl.OlGetPlatformInfo(f.plat, uint32(ol.PlatformInfoName), 64, prop(f), nil)
		}},
		{"olGetPlatformInfoSize", func(f *faultFixture) uintptr {
			var n uint64
			return impl.OlGetPlatformInfoSize(f.plat, uint32(ol.PlatformInfoName), f.ptr(&n), nil)
		}},
		{"olIterateDevices", func(f *faultFixture) uintptr {
			it := ccb.NewIter(0)
			defer it.Free()
			return impl.OlIterateDevices(it.Callback(), it.User(), nil)
		}},
		{"olGetDeviceInfo", func(f *faultFixture) uintptr {
			return impl.OlGetDeviceInfo(f.dev, uint32(ol.DeviceInfoPlatform), 64, prop(f), nil)
		}},
		{"olGetDeviceInfoSize", func(f *faultFixture) uintptr {
			var n uint64
			return impl.OlGetDeviceInfoSize(f.dev, uint32(ol.DeviceInfoPlatform), f.ptr(&n), nil)
		}},
		{"olMemAlloc", func(f *faultFixture) uintptr {
			var p unsafe.Pointer
			return impl.OlMemAlloc(f.dev, uint32(ol.AllocTypeHost), 64, f.ptr(&p), nil)
		}},
		{"olMemAllocAligned", func(f *faultFixture) uintptr {
			var p unsafe.Pointer
			return impl.OlMemAllocAligned(f.dev, uint32(ol.AllocTypeHost), 64, 64, f.ptr(&p), nil)
		}},
		{"olMemFree", func(f *faultFixture) uintptr { return impl.OlMemFree(f.buf2, nil) }},
		{"olGetMemInfo", func(f *faultFixture) uintptr {
			return impl.OlGetMemInfo(f.buf, uint32(ol.MemInfoBase), 64, prop(f), nil)
		}},
		{"olGetMemInfoSize", func(f *faultFixture) uintptr {
			var n uint64
			return impl.OlGetMemInfoSize(f.buf, uint32(ol.MemInfoBase), f.ptr(&n), nil)
		}},
		{"olMemRegister", func(f *faultFixture) uintptr {
			var pinned unsafe.Pointer
			return impl.OlMemRegister(f.dev, f.ext, 4096, 0, f.ptr(&pinned), nil)
		}},
		{"olMemUnregister", func(f *faultFixture) uintptr { return impl.OlMemUnregister(f.dev, f.reg, nil) }},
		{"olMemUnregister23", func(f *faultFixture) uintptr { return impl.OlMemUnregister23(f.dev, f.reg, 0, nil) }},
		{"olMemcpy", func(f *faultFixture) uintptr { return impl.OlMemcpy(f.q, f.buf2, f.dev, f.buf, f.dev, 64, nil) }},
		{"olMemcpy (blocking)", func(f *faultFixture) uintptr { return impl.OlMemcpy(0, f.buf2, f.dev, f.buf, f.dev, 64, nil) }},
		{"olMemFill", func(f *faultFixture) uintptr {
			pat := uint32(7)
			return impl.OlMemFill(f.q, f.buf, 4, f.ptr(&pat), 64, nil)
		}},
		{"olMemPrefetch", func(f *faultFixture) uintptr {
			mems := []unsafe.Pointer{f.buf}
			sizes := []uint64{64}
			return impl.OlMemPrefetch(f.q, 1, unsafe.Pointer(&mems[0]), unsafe.Pointer(&sizes[0]), 0, nil)
		}},
		{"olCreateQueue", func(f *faultFixture) uintptr {
			var q uintptr
			return impl.OlCreateQueue(f.dev, f.ptr(&q), nil)
		}},
		{"olDestroyQueue", func(f *faultFixture) uintptr { return impl.OlDestroyQueue(f.q, nil) }},
		{"olSyncQueue", func(f *faultFixture) uintptr { return impl.OlSyncQueue(f.q, nil) }},
		{"olQueryQueue", func(f *faultFixture) uintptr {
			var done bool
			return impl.OlQueryQueue(f.q, f.ptr(&done), nil)
		}},
		{"olGetQueueInfo", func(f *faultFixture) uintptr {
			return impl.OlGetQueueInfo(f.q, uint32(ol.QueueInfoDevice), 64, prop(f), nil)
		}},
		{"olGetQueueInfoSize", func(f *faultFixture) uintptr {
			var n uint64
			return impl.OlGetQueueInfoSize(f.q, uint32(ol.QueueInfoDevice), f.ptr(&n), nil)
		}},
		{"olCreateEvent", func(f *faultFixture) uintptr {
			var e uintptr
			return impl.OlCreateEvent(f.q, f.ptr(&e), nil)
		}},
		{"olCreateEvent23", func(f *faultFixture) uintptr {
			var e uintptr
			return impl.OlCreateEvent23(f.q, uint32(ol.EventFlagsEnableProfiling), f.ptr(&e), nil)
		}},
		{"olDestroyEvent", func(f *faultFixture) uintptr { return impl.OlDestroyEvent(f.ev, nil) }},
		{"olSyncEvent", func(f *faultFixture) uintptr { return impl.OlSyncEvent(f.ev, nil) }},
		{"olWaitEvents", func(f *faultFixture) uintptr {
			evs := []uintptr{f.ev, f.pev1}
			return impl.OlWaitEvents(f.q, unsafe.Pointer(&evs[0]), 2, nil)
		}},
		{"olGetEventInfo", func(f *faultFixture) uintptr {
			return impl.OlGetEventInfo(f.ev, uint32(ol.EventInfoQueue), 64, prop(f), nil)
		}},
		{"olGetEventInfoSize", func(f *faultFixture) uintptr {
			var n uint64
			return impl.OlGetEventInfoSize(f.ev, uint32(ol.EventInfoQueue), f.ptr(&n), nil)
		}},
		{"olGetEventElapsedTime", func(f *faultFixture) uintptr {
			var ms float32
			return impl.OlGetEventElapsedTime(f.pev1, f.pev2, f.ptr(&ms), nil)
		}},
		{"olCreateProgram", func(f *faultFixture) uintptr { return 0 }}, // replaced in the test (needs the image)
		{"olIsValidBinary", func(f *faultFixture) uintptr { return 0 }}, // likewise
		{"olDestroyProgram", func(f *faultFixture) uintptr { return impl.OlDestroyProgram(f.prog, nil) }},
		{"olGetSymbol", func(f *faultFixture) uintptr {
			name := []byte("step\x00")
			var s uintptr
			return impl.OlGetSymbol(f.prog, unsafe.Pointer(&name[0]), uint32(ol.SymbolKindKernel), f.ptr(&s), nil)
		}},
		{"olGetSymbolInfo", func(f *faultFixture) uintptr {
			return impl.OlGetSymbolInfo(f.glob, uint32(ol.SymbolInfoKind), 64, prop(f), nil)
		}},
		{"olGetSymbolInfoSize", func(f *faultFixture) uintptr {
			var n uint64
			return impl.OlGetSymbolInfoSize(f.glob, uint32(ol.SymbolInfoKind), f.ptr(&n), nil)
		}},
		{"olCalculateOptimalOccupancy", func(f *faultFixture) uintptr {
			var n uint64
			return impl.OlCalculateOptimalOccupancy(f.dev, f.kern, 0, f.ptr(&n), nil)
		}},
		{"olGetKernelMaxCooperativeGroupCount", func(f *faultFixture) uintptr {
			var n uint32
			return impl.OlGetKernelMaxCooperativeGroupCount(f.dev, f.kern, unsafe.Pointer(launchArgs([3]uint32{1, 1, 1}, [3]uint32{8, 1, 1}, 0)), f.ptr(&n), nil)
		}},
		{"olLaunchKernel", func(f *faultFixture) uintptr {
			args := struct{ out unsafe.Pointer }{f.buf}
			return impl.OlLaunchKernel(f.q, f.dev, f.kern, unsafe.Pointer(&args), uint64(unsafe.Sizeof(args)), unsafe.Pointer(launchArgs([3]uint32{1, 1, 1}, [3]uint32{8, 1, 1}, 0)), nil)
		}},
		{"olLaunchKernel23", func(f *faultFixture) uintptr {
			out := f.buf
			ptrs := []unsafe.Pointer{unsafe.Pointer(&out)}
			sizes := []uint64{8}
			return impl.OlLaunchKernel23(f.q, f.dev, f.kern, unsafe.Pointer(launchArgs([3]uint32{1, 1, 1}, [3]uint32{8, 1, 1}, 0)), nil, 1, unsafe.Pointer(&ptrs[0]), unsafe.Pointer(&sizes[0]), nil)
		}},
		{"olLaunchHostFunction", func(f *faultFixture) uintptr {
			return impl.OlLaunchHostFunction(f.q, f.hostFn.Callback(), f.hostFn.User(), nil)
		}},
		{"olInit", func(f *faultFixture) uintptr { return impl.OlInit(nil) }},
		{"olInit23", func(f *faultFixture) uintptr { return impl.OlInit23(nil, nil) }},
		{"olShutDown", func(f *faultFixture) uintptr { return impl.OlShutDown(nil) }},
	}
}

func TestPanicsReleaseLocks(t *testing.T) {
	img := buildKernels(t)
	calls := faultCalls()
	for i := range calls {
		switch calls[i].name {
		case "olCreateProgram":
			calls[i].fn = func(f *faultFixture) uintptr {
				var p uintptr
				return impl.OlCreateProgram(f.dev, unsafe.Pointer(&img[0]), uint64(len(img)), f.ptr(&p), nil)
			}
		case "olIsValidBinary":
			calls[i].fn = func(f *faultFixture) uintptr {
				var ok bool
				return impl.OlIsValidBinary(f.dev, unsafe.Pointer(&img[0]), uint64(len(img)), f.ptr(&ok), nil)
			}
		}
	}
	// the first olInit and the final olShutDown, which hold the lifecycle
	// lock across the backends' start and teardown
	calls = append(calls, faultCall{"olInit (first)", nil}, faultCall{"olShutDown (final)", nil})
	total := 0
	for _, c := range calls {
		points := 0
		for n := 1; ; n++ {
			if n > 500 {
				t.Fatalf("%s: more than 500 lock points in one call", c.name)
			}
			what := fmt.Sprintf("%s, panic at lock point %d", c.name, n)
			// the name the C entry point gives impl.Recover
			name, _, _ := strings.Cut(c.name, " ")
			name = strings.TrimSuffix(name, "23")
			var res uintptr
			var fired bool
			switch c.name {
			case "olInit (first)":
				res, fired = injected("olInit", n, func() uintptr { return impl.OlInit(nil) })
			case "olShutDown (final)":
				mustOK(t, "olInit", impl.OlInit(nil))
				res, fired = injected("olShutDown", n, func() uintptr { return impl.OlShutDown(nil) })
			default:
				f := newFaultFixture(t, img)
				if c.name == "olShutDown" {
					// not the final one: that is "olShutDown (final)"
					mustOK(t, "olInit", impl.OlInit(nil))
				}
				res, fired = injected(name, n, func() uintptr { return c.fn(f) })
				if fired {
					t.Logf("%s: %s", what, impl.ResultDetails(res))
					checkHealth(t, what, img)
				}
				f.close(t, what)
			}
			if !fired {
				// past the last point: the call ran to its end
				if strings.HasPrefix(c.name, "olInit") || strings.HasPrefix(c.name, "olShutDown") {
					for impl.Initialized() {
						impl.OlShutDown(nil)
					}
				}
				break
			}
			points++
			t.Logf("%s: %s", what, impl.ResultDetails(res))
			if impl.ResultCode(res) != ol.ErrcUnknown || !strings.Contains(impl.ResultDetails(res), "internal error in "+name+": "+fault.Injected) {
				t.Fatalf("%s: got %s %q, want OL_ERRC_UNKNOWN naming the call and the panic", what, impl.ResultCode(res), impl.ResultDetails(res))
			}
			if c.fn == nil {
				// a lifecycle call: whatever state the panic left, the
				// next cycle must work
				withWatchdog(what+": clean-up", func() {
					for i := 0; i < 4 && impl.Initialized(); i++ {
						impl.OlShutDown(nil)
					}
				})
				checkHealth(t, what, img)
			}
		}
		if points == 0 {
			t.Logf("%s took no lock", c.name)
		}
		t.Logf("%s: %d lock points, each released after a panic", c.name, points)
		total += points
	}
	t.Logf("%d injected panics in all", total)
}
