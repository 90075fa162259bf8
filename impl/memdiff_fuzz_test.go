package impl

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
)

// FuzzMemRangesDifferential runs one sequence of olMemAlloc, olMemcpy and
// olMemFill on the host device and on a fake GPU (whose memory the CPU
// cannot touch) and requires the same result codes and, read back with
// olMemcpy, the same bytes on both; both must also match a byte model
// (a range that leaves its allocation, or a fill size that is not a
// multiple of the pattern, fails with INVALID_SIZE and writes nothing).
// It lives beside the fake backend because tests/go cannot import an
// internal package; FuzzMemRanges in tests/go is its host-only sibling.
func FuzzMemRangesDifferential(f *testing.F) {
	f.Add(uint16(0), uint16(0), uint64(4096), uint16(1), false)
	f.Add(uint16(4000), uint16(0), uint64(97), uint16(1), true)
	f.Add(uint16(1), uint16(5), uint64(1<<63), uint16(3), false)
	f.Add(uint16(17), uint16(0), uint64(^uint64(0)), uint16(17), true)
	f.Add(uint16(4095), uint16(4095), uint64(1), uint16(1), false)
	f.Add(uint16(64), uint16(3), uint64(4032), uint16(64), true)
	f.Add(uint16(0), uint16(100), uint64(4000), uint16(8), false)
	f.Add(uint16(3), uint16(0), uint64(0), uint16(5), true)
	f.Fuzz(func(t *testing.T, off, srcOff uint16, size uint64, patSize uint16, queued bool) {
		const n = 4096
		if off >= n || srcOff >= n || patSize == 0 {
			return // a range that starts outside the library's memory is the caller's
		}
		e := newRouteEnv(t)
		init := make([]byte, n)
		for i := range init {
			init[i] = byte(i*7 + 3)
		}
		pat := make([]byte, int(patSize))
		for i := range pat {
			pat[i] = byte(0xA0 + i)
		}

		// The model.
		model := make([]byte, n)
		fits := size <= n-uint64(off) && size <= n-uint64(srcOff)
		var wantCopy, wantFill ol.Errc = ol.ErrcSuccess, ol.ErrcSuccess
		if fits {
			copy(model[off:], init[srcOff:uint64(srcOff)+size])
		} else {
			wantCopy = ol.ErrcInvalidSize
		}
		afterCopy := append([]byte(nil), model...)
		fillFits := size <= n-uint64(off)
		if fillFits && size%uint64(patSize) == 0 {
			for i := uint64(0); i < size; i++ {
				model[uint64(off)+i] = pat[i%uint64(patSize)]
			}
		} else {
			wantFill = ol.ErrcInvalidSize
		}

		type outcome struct {
			copyCode, fillCode ol.Errc
			afterCopy, final   []byte
		}
		run := func(d *Device) outcome {
			var o outcome
			a, b := e.alloc(d, n), e.alloc(d, n)
			zero := make([]byte, n)
			if err := e.c.callOlMemcpy(0, ptr(a), d.h, unsafe.Pointer(&zero[0]), e.host.h, n); err != nil {
				t.Fatalf("%s: clearing: %v", devName(d), err)
			}
			if err := e.c.callOlMemcpy(0, ptr(b), d.h, unsafe.Pointer(&init[0]), e.host.h, n); err != nil {
				t.Fatalf("%s: filling the source: %v", devName(d), err)
			}
			var q uintptr
			if queued {
				q = e.queue(d)
			}
			sync := func() {
				if q != 0 {
					if err := e.c.callOlSyncQueue(q); err != nil {
						t.Fatalf("%s: olSyncQueue: %v", devName(d), err)
					}
				}
			}
			readBack := func() []byte {
				out := make([]byte, n)
				if err := e.c.callOlMemcpy(0, unsafe.Pointer(&out[0]), e.host.h, ptr(a), d.h, n); err != nil {
					t.Fatalf("%s: reading back: %v", devName(d), err)
				}
				return out
			}
			o.copyCode = codeOf(e.c.callOlMemcpy(q, ptr(a+uintptr(off)), d.h, ptr(b+uintptr(srcOff)), d.h, size))
			sync()
			o.afterCopy = readBack()
			o.fillCode = codeOf(e.c.callOlMemFill(q, ptr(a+uintptr(off)), uint64(patSize), unsafe.Pointer(&pat[0]), size))
			sync()
			o.final = readBack()
			if q != 0 {
				if err := e.c.callOlDestroyQueue(q); err != nil {
					t.Fatalf("%s: olDestroyQueue: %v", devName(d), err)
				}
			}
			for _, p := range []uintptr{a, b} {
				if err := e.c.callOlMemFree(ptr(p)); err != nil {
					t.Fatalf("%s: olMemFree: %v", devName(d), err)
				}
			}
			return o
		}
		h := run(e.host)
		fills := e.a.Platform.Fills.Load()
		g := run(e.a0)
		if g.fillCode == ol.ErrcSuccess && size > 0 && e.a.Platform.Fills.Load() == fills {
			t.Fatal("the fake GPU's fill was not done by the fake platform")
		}

		if h.copyCode != g.copyCode || h.fillCode != g.fillCode {
			t.Fatalf("off %d, srcOff %d, size %d, pattern %d, queued %v: host gives copy %s, fill %s; fake GPU gives copy %s, fill %s",
				off, srcOff, size, patSize, queued, h.copyCode, h.fillCode, g.copyCode, g.fillCode)
		}
		if !bytes.Equal(h.afterCopy, g.afterCopy) || !bytes.Equal(h.final, g.final) {
			t.Fatalf("off %d, srcOff %d, size %d, pattern %d, queued %v: host and fake GPU memory differ (first at %d after the copy, %d at the end)",
				off, srcOff, size, patSize, queued, firstDiff(h.afterCopy, g.afterCopy), firstDiff(h.final, g.final))
		}
		if h.copyCode != wantCopy || h.fillCode != wantFill {
			t.Fatalf("off %d, srcOff %d, size %d, pattern %d: copy %s, fill %s; want %s, %s",
				off, srcOff, size, patSize, h.copyCode, h.fillCode, wantCopy, wantFill)
		}
		if !bytes.Equal(h.afterCopy, afterCopy) || !bytes.Equal(h.final, model) {
			t.Fatalf("off %d, srcOff %d, size %d, pattern %d: memory differs from the model (first at %d after the copy, %d at the end)",
				off, srcOff, size, patSize, firstDiff(h.afterCopy, afterCopy), firstDiff(h.final, model))
		}
	})
}

// codeOf is err's result code (SUCCESS for nil).
func codeOf(err error) ol.Errc {
	if err == nil {
		return ol.ErrcSuccess
	}
	c, _ := describe(err)
	return c
}

// firstDiff is the first index where a and b differ, or -1.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}
