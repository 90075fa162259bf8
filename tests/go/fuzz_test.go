package tests

import (
	"math/big"
	"sync"
	"testing"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/impl"
	"github.com/liboffload-go/liboffload-go/internal/fakegpu"
	"github.com/liboffload-go/liboffload-go/plugins/amdgpu"
	"github.com/liboffload-go/liboffload-go/plugins/cuda"
	"github.com/liboffload-go/liboffload-go/plugins/host"
)

// FuzzMemRanges copies and fills ranges that start inside a 4 KiB
// allocation with arbitrary sizes: each call either does exactly what a
// byte-by-byte model says, or (when the range leaves the allocation or the
// sizes do not fit) fails with INVALID_SIZE and writes nothing. It is
// differential: the same copy and fill run on the host device and on a
// fake GPU (fakegpu, whose memory the CPU cannot touch, through the
// runtime), and both must end with the same bytes and the same error codes.
func FuzzMemRanges(f *testing.F) {
	f.Add(uint16(0), uint64(4096), uint16(1), false)
	f.Add(uint16(4000), uint64(97), uint16(1), true)
	f.Add(uint16(1), uint64(1<<63), uint16(3), false)
	f.Add(uint16(17), uint64(^uint64(0)), uint16(17), true)
	f.Add(uint16(4095), uint64(1), uint16(1), false)
	f.Add(uint16(64), uint64(4032), uint16(64), true)
	f.Fuzz(func(t *testing.T, off uint16, size uint64, patSize uint16, queued bool) {
		const n = 4096
		if off >= n || patSize == 0 {
			return // a range that starts outside the library's memory is the caller's
		}
		// a fake GPU beside the host device, for this input only
		impl.UsePlugins(fakegpu.New(fakegpu.Options{Name: "fakegpu"}), host.New())
		t.Cleanup(func() { impl.UsePlugins(amdgpu.New(), cuda.New(), host.New()) })
		initLib(t)
		ds := devices(t)
		if len(ds) != 2 {
			t.Fatalf("%d devices, want the fake GPU and the host", len(ds))
		}
		e := &hostEnv{t: t, dev: ds[1]}
		gpu := ds[0]
		a, b := e.alloc(n), e.alloc(n)
		av, bv := unsafe.Slice((*byte)(a), n), unsafe.Slice((*byte)(b), n)
		for i := range bv {
			bv[i] = byte(i*7 + 3)
		}
		pat := make([]byte, int(patSize))
		for i := range pat {
			pat[i] = byte(0xA0 + i)
		}

		// the host device, against the model
		model := make([]byte, n)
		hostAfter, hostCodes := memOps(t, e.dev, e, queued, a, b, off, size, pat, func() []byte { return append([]byte(nil), av...) })
		fits := size <= n-uint64(off)
		if fits {
			mustOK(t, "olMemcpy", hostCodes[0])
			copy(model[off:], bv[:size])
		} else {
			wantErr(t, "olMemcpy", hostCodes[0], ol.ErrcInvalidSize, "")
		}
		if string(hostAfter[0]) != string(model) {
			t.Fatalf("olMemcpy(off %d, size %d): memory differs from the model", off, size)
		}
		switch {
		case size%uint64(patSize) != 0 || !fits:
			wantErr(t, "olMemFill", hostCodes[1], ol.ErrcInvalidSize, "")
		default:
			mustOK(t, "olMemFill", hostCodes[1])
			for i := uint64(0); i < size; i++ {
				model[uint64(off)+i] = pat[i%uint64(patSize)]
			}
		}
		if string(hostAfter[1]) != string(model) {
			t.Fatalf("olMemFill(off %d, size %d, pattern %d): memory differs from the model", off, size, patSize)
		}

		// the fake GPU: the same operations on its memory, staged through
		// host memory
		ga, gb := gpuAlloc(t, gpu, n), gpuAlloc(t, gpu, n)
		clear(av)
		mustOK(t, "olMemcpy to the GPU", impl.OlMemcpy(0, ga, gpu, a, e.dev, n, nil))
		mustOK(t, "olMemcpy to the GPU", impl.OlMemcpy(0, gb, gpu, b, e.dev, n, nil))
		g := &hostEnv{t: t, dev: gpu}
		gpuAfter, gpuCodes := memOps(t, gpu, g, queued, ga, gb, off, size, pat, func() []byte {
			mustOK(t, "olMemcpy from the GPU", impl.OlMemcpy(0, a, e.dev, ga, gpu, n, nil))
			return append([]byte(nil), av...)
		})
		for i, op := range []string{"olMemcpy", "olMemFill"} {
			if hc, gc := impl.ResultCode(hostCodes[i]), impl.ResultCode(gpuCodes[i]); hc != gc {
				t.Fatalf("%s(off %d, size %d, pattern %d): host device %s, fake GPU %s (%s)", op, off, size, patSize, hc, gc, impl.ResultDetails(gpuCodes[i]))
			}
			if string(hostAfter[i]) != string(gpuAfter[i]) {
				t.Fatalf("%s(off %d, size %d, pattern %d): the fake GPU's memory differs from the host device's", op, off, size, patSize)
			}
		}
	})
}

// memOps copies size bytes of b to a+off, then fills size bytes at
// a+off with pat, on dev (on a queue of it if queued, else blocking), and
// returns what read says of a after each, and the two results.
func memOps(t *testing.T, dev uintptr, e *hostEnv, queued bool, a, b unsafe.Pointer, off uint16, size uint64, pat []byte, read func() []byte) (after [2][]byte, rs [2]uintptr) {
	var q uintptr
	if queued {
		q = e.queue()
		defer impl.OlDestroyQueue(q, nil)
	}
	sync := func() {
		if q != 0 {
			mustOK(t, "olSyncQueue", impl.OlSyncQueue(q, nil))
		}
	}
	dst := unsafe.Add(a, int(off))
	rs[0] = impl.OlMemcpy(q, dst, dev, b, dev, size, nil)
	sync()
	after[0] = read()
	rs[1] = impl.OlMemFill(q, dst, uint64(len(pat)), unsafe.Pointer(&pat[0]), size, nil)
	sync()
	after[1] = read()
	return after, rs
}

// gpuAlloc allocates n bytes of device memory on dev.
func gpuAlloc(t *testing.T, dev uintptr, n int) unsafe.Pointer {
	var p unsafe.Pointer
	mustOK(t, "olMemAlloc", impl.OlMemAlloc(dev, uint32(ol.AllocTypeDevice), uint64(n), unsafe.Pointer(&p), nil))
	t.Cleanup(func() { impl.OlMemFree(p, nil) })
	return p
}

// FuzzLaunchGrid launches with arbitrary grids: a launch is refused with
// INVALID_SIZE exactly when a limit the device reports is exceeded (counted
// here with big integers), and a small accepted grid runs every work-item.
func FuzzLaunchGrid(f *testing.F) {
	f.Add(uint32(1)<<31, uint32(1)<<31, uint32(4), uint32(1), uint32(1), uint32(1))
	f.Add(^uint32(0), ^uint32(0), ^uint32(0), uint32(1), uint32(1), uint32(1))
	f.Add(uint32(65536), uint32(65536), uint32(1), uint32(1), uint32(1), uint32(1))
	f.Add(uint32(3), uint32(5), uint32(7), uint32(2), uint32(4), uint32(8))
	f.Add(uint32(1)<<22, uint32(1), uint32(1), uint32(32), uint32(32), uint32(1))
	f.Add(uint32(0), uint32(1), uint32(1), uint32(1), uint32(1), uint32(1))
	f.Fuzz(func(t *testing.T, gx, gy, gz, sx, sy, sz uint32) {
		e := &hostEnv{t: t}
		initLib(t)
		e.dev, e.img = hostDevice(t), cachedKernels(t)
		e.prog = e.load()
		k := e.symbol(e.prog, "count_items", ol.SymbolKindKernel)
		cnt := (*uint32)(e.alloc(4))
		var maxGroup, maxWork uint32
		var perDim ol.Dimensions
		mustOK(t, "info", impl.OlGetDeviceInfo(e.dev, uint32(ol.DeviceInfoMaxWorkGroupSize), 4, unsafe.Pointer(&maxGroup), nil))
		mustOK(t, "info", impl.OlGetDeviceInfo(e.dev, uint32(ol.DeviceInfoMaxWorkSize), 4, unsafe.Pointer(&maxWork), nil))
		mustOK(t, "info", impl.OlGetDeviceInfo(e.dev, uint32(ol.DeviceInfoMaxWorkGroupSizePerDimension), uint64(unsafe.Sizeof(perDim)), unsafe.Pointer(&perDim), nil))
		big3 := func(x, y, z uint32) *big.Int {
			v := new(big.Int).SetUint64(uint64(x))
			v.Mul(v, new(big.Int).SetUint64(uint64(y)))
			return v.Mul(v, new(big.Int).SetUint64(uint64(z)))
		}
		perDimItems := func(g, s uint32) bool { return uint64(g)*uint64(s) <= uint64(maxWork) }
		groupItems := big3(sx, sy, sz)
		total := new(big.Int).Mul(big3(gx, gy, gz), groupItems)
		ok := gx > 0 && gy > 0 && gz > 0 && sx > 0 && sy > 0 && sz > 0 &&
			sx <= perDim.X && sy <= perDim.Y && sz <= perDim.Z &&
			groupItems.Cmp(big.NewInt(int64(maxGroup))) <= 0 &&
			perDimItems(gx, sx) && perDimItems(gy, sy) && perDimItems(gz, sz) &&
			total.Cmp(new(big.Int).SetUint64(uint64(maxWork))) <= 0
		if ok && total.Cmp(big.NewInt(1<<16)) > 0 {
			return // valid, but too long to run here
		}
		args := struct{ count *uint32 }{cnt}
		r := impl.OlLaunchKernel(0, e.dev, k, unsafe.Pointer(&args), uint64(unsafe.Sizeof(args)), unsafe.Pointer(launchArgs([3]uint32{gx, gy, gz}, [3]uint32{sx, sy, sz}, 0)), nil)
		if !ok {
			wantErr(t, "olLaunchKernel", r, ol.ErrcInvalidSize, "")
			if *cnt != 0 {
				t.Fatalf("a refused launch ran %d work-items", *cnt)
			}
			return
		}
		mustOK(t, "olLaunchKernel", r)
		if uint64(*cnt) != total.Uint64() {
			t.Fatalf("grid %dx%dx%d of %dx%dx%d ran %d work-items, want %s", gx, gy, gz, sx, sy, sz, *cnt, total)
		}
	})
}

// cachedKernels builds the test kernels once per process, for fuzz targets
// whose every input would otherwise run the compiler.
func cachedKernels(t *testing.T) []byte {
	kernelCache.once.Do(func() { kernelCache.img = buildKernels(t) })
	if kernelCache.img == nil {
		t.Fatal("the test kernels did not build")
	}
	return kernelCache.img
}

var kernelCache struct {
	once sync.Once
	img  []byte
}
