package impl

/*
// The index's writers keep no Go pointer and never call back into Go: a
// pointer to a Go local passed to them then stays on the stack, and
// olMemAlloc / olMemFree allocate nothing for it.
#cgo noescape ol_amap_insert
#cgo nocallback ol_amap_insert
#cgo noescape ol_amap_remove
#cgo nocallback ol_amap_remove
#cgo noescape ol_amap_prefetch
#cgo nocallback ol_amap_prefetch
#include "allocmap.h"
#include "pool.h"

// ol_amap_lookup is ol_amap_find returning by value (size 0: none), so
// that Go passes C no pointer to its stack (which would move it to the
// heap: a lookup must not allocate).
static inline ol_amap_hit ol_amap_lookup(const ol_amap *m, uint64_t p) {
  ol_amap_hit h = {0};
  if (!ol_amap_find(m, p, &h))
    h.size = 0;
  return h;
}
static inline ol_amap_hit ol_amap_lookup_raw(const ol_amap *m, uint64_t p) {
  ol_amap_hit h = {0};
  if (!ol_amap_find_raw(m, p, &h))
    h.size = 0;
  return h;
}
*/
import "C"

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/fault"
	"github.com/liboffload-go/liboffload-go/internal/rangeset"
)

// alloc is one live olMemAlloc allocation.
type alloc struct {
	base, size uint64
	kind       ol.AllocType
	device     *Device
	// raw is the address the device returned when olMemAllocAligned
	// over-allocated to align base (0: it is base); the device frees raw.
	raw uint64
	// slab: the pool's slab the block is in (pool.h; nil: the device's own
	// allocation)
	slab *C.ol_slab
}

func (a *alloc) end() uint64 { return a.base + a.size }

// deviceBase is the address the device allocated, which its Free takes.
func (a *alloc) deviceBase() uintptr {
	if a.raw != 0 {
		return uintptr(a.raw)
	}
	return uintptr(a.base)
}

// allocMap records every allocation of every device, so that olMemFree and
// olGetMemInfo find them by address and no two live allocations overlap.
//
// The allocations live in C (allocmap.h): an index from address granules
// to the allocations that touch them, which any thread reads without a
// lock, in C (the entry points' fast paths) or from Go (find), at the
// same cost with a thousand allocations or millions. Writers take mu, find
// overlaps in order (rangeset.Set, O(log n)) and file or take out the
// allocation in the index through cgo.
type allocMap struct {
	mu    sync.Mutex
	order rangeset.Set // guarded by mu
	// the C index, freed by release (or, for a map never released, by a
	// cleanup once the map is unreachable)
	idx  *cIndex
	devs atomic.Pointer[[]*Device] // the devices of allocations, by the index's aux; [0] is nil
	// padded maps the base of each over-allocated olMemAllocAligned
	// allocation to the address the device returned (guarded by mu; rare,
	// so a plain map beside the index)
	padded map[uint64]uint64
}

// cIndex owns the C index.
type cIndex struct{ p *C.ol_amap }

func newAllocMap() *allocMap {
	m := &allocMap{idx: &cIndex{p: C.ol_amap_new()}}
	if m.idx.p == nil {
		panic("liboffload-go: out of memory for the allocation map")
	}
	devs := []*Device{nil}
	m.devs.Store(&devs)
	runtime.AddCleanup(m, func(x *cIndex) {
		if x.p != nil {
			C.ol_amap_free(x.p)
		}
	}, m.idx)
	return m
}

// release frees the C index at the end of an initialisation (after drain):
// the map must not be used after.
func (m *allocMap) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	fault.Point()
	if p := m.idx.p; p != nil {
		m.idx.p = nil
		C.ol_amap_free(p)
	}
}

// aux returns the index's number for device d, adding it if new (mu held).
func (m *allocMap) aux(d *Device) uint32 {
	devs := *m.devs.Load()
	for i, x := range devs {
		if x == d {
			return uint32(i)
		}
	}
	grown := append(devs[:len(devs):len(devs)], d)
	m.devs.Store(&grown)
	return uint32(len(grown) - 1)
}

// hit converts what the index returned.
func (m *allocMap) hit(h *C.ol_amap_hit) alloc {
	a := alloc{base: uint64(h.base), size: uint64(h.size), kind: ol.AllocType(h.kind)}
	if h.flags&C.OL_AMAP_POOLED != 0 {
		a.slab = C.ol_hit_slab(*h)
	}
	if devs := *m.devs.Load(); int(h.aux) < len(devs) {
		a.device = devs[h.aux]
	}
	return a
}

// find returns the allocation containing p (any interior address).
func (m *allocMap) find(p uint64) (alloc, bool) {
	h := C.ol_amap_lookup(m.idx.p, C.uint64_t(p))
	if h.size == 0 {
		return alloc{}, false
	}
	return m.hit(&h), true
}

// insert records a; it reports false if a overlaps a live allocation.
func (m *allocMap) insert(a *alloc) bool {
	if a.size == 0 || a.base+a.size < a.base {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	fault.Point()
	if m.order.Overlaps(a.base, a.end()) {
		return false
	}
	h := C.ol_amap_hit{base: C.uint64_t(a.base), size: C.uint64_t(a.size), kind: C.uint32_t(a.kind), aux: C.uint32_t(m.aux(a.device))}
	if a.device != nil {
		h.dev = C.uint64_t(a.device.h)
		if a.device.d == nil || !a.device.d.IsHost() {
			h.flags = C.OL_AMAP_FOREIGN
		}
	}
	if C.ol_amap_insert(m.idx.p, &h) == 0 {
		return false
	}
	m.order.Insert(a.base, a.end())
	if a.raw != 0 {
		if m.padded == nil {
			m.padded = map[uint64]uint64{}
		}
		m.padded[a.base] = a.raw
	}
	return true
}

// takeRaw fills in a.raw for an over-allocated allocation that leaves the
// map (mu held).
func (m *allocMap) takeRaw(a *alloc) {
	if len(m.padded) == 0 {
		return
	}
	if raw, ok := m.padded[a.base]; ok {
		a.raw = raw
		delete(m.padded, a.base)
	}
}

// removeBase removes the allocation that starts exactly at base and
// returns it (false: there is none).
func (m *allocMap) removeBase(base uint64) (alloc, bool) {
	if a, ok := m.find(base); ok && a.slab != nil {
		// a pooled block leaves by its word alone (pool.h)
		if a.base != base || C.ol_pool_take(a.slab, C.uint64_t(base)) == 0 {
			return alloc{}, false
		}
		return a, true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	fault.Point()
	if h := C.ol_amap_lookup_raw(m.idx.p, C.uint64_t(base)); h.size != 0 && h.flags&C.OL_AMAP_SLAB != 0 {
		return alloc{}, false // a free block of a slab (or the slab itself)
	}
	// the index's chains (and the allocator's header that the host
	// device's free reads) load while the B+tree is searched for the size
	C.ol_amap_prefetch(m.idx.p, C.uint64_t(base))
	end, ok := m.order.Remove(base)
	if !ok {
		return alloc{}, false
	}
	var h C.ol_amap_hit
	C.ol_amap_remove(m.idx.p, C.uint64_t(base), C.uint64_t(end-base), &h)
	a := m.hit(&h)
	m.takeRaw(&a)
	return a, true
}

// checkRange refuses a range of size bytes at p that wraps around the end
// of the address space, or that starts inside an allocation of the library
// and runs past its end. Ranges in memory the library did not allocate are
// the caller's responsibility. what names the pointer in the message. It
// returns the allocation p is in (device nil: none, or size is 0).
func (m *allocMap) checkRange(fn, what string, p, size uint64) (alloc, error) {
	if size == 0 {
		return alloc{}, nil
	}
	if p+size < p {
		return alloc{}, ol.Errorf(ol.ErrcInvalidSize, "%s of %d bytes at %s %#x wraps around the end of the address space", fn, size, what, p)
	}
	a, ok := m.find(p)
	if ok && p+size > a.end() {
		return alloc{}, ol.Errorf(ol.ErrcInvalidSize, "%s of %d bytes at %s %#x runs past the end of the %d-byte allocation at %#x (%d bytes left)",
			fn, size, what, p, a.size, a.base, a.end()-p)
	}
	return a, nil
}

// snapshot returns every allocation, in order of base.
func (m *allocMap) snapshot() []*alloc {
	m.mu.Lock()
	defer m.mu.Unlock()
	fault.Point()
	return m.all()
}

// all returns every allocation, in order of base (mu held).
func (m *allocMap) all() []*alloc {
	out := make([]*alloc, 0, m.order.Len())
	m.order.Each(func(base, end uint64) {
		h := C.ol_amap_lookup_raw(m.idx.p, C.uint64_t(base))
		switch {
		case h.size == 0:
		case h.flags&C.OL_AMAP_SLAB != 0:
			out = m.slabBlocks(out, &h)
		default:
			a := m.hit(&h)
			out = append(out, &a)
		}
	})
	return out
}

// drainSlabs removes every slab and marks its blocks free (mu held).
func (m *allocMap) drainSlabs() {
	var slabs []C.ol_amap_hit
	m.order.Each(func(base, end uint64) {
		if h := C.ol_amap_lookup_raw(m.idx.p, C.uint64_t(base)); h.size != 0 && h.flags&C.OL_AMAP_SLAB != 0 {
			slabs = append(slabs, h)
		}
	})
	for _, h := range slabs {
		m.order.Remove(uint64(h.base))
		C.ol_amap_remove(m.idx.p, h.base, h.size, nil)
		C.ol_pool_slab_clear(C.ol_hit_slab(h))
	}
}

// drain removes and returns every allocation.
func (m *allocMap) drain() []*alloc {
	m.mu.Lock()
	defer m.mu.Unlock()
	fault.Point()
	all := m.all()
	m.drainSlabs()
	for _, a := range all {
		if a.slab != nil {
			continue // its slab is gone
		}
		m.order.Remove(a.base)
		var h C.ol_amap_hit
		C.ol_amap_remove(m.idx.p, C.uint64_t(a.base), C.uint64_t(a.size), &h)
		m.takeRaw(a)
	}
	return all
}

const maxAllocAttempts = 50

func (c *Context) olMemAlloc(dev *Device, typ ol.AllocType, size uint64) (uintptr, error) {
	return c.olMemAllocAligned(dev, typ, size, 1)
}

// olMemAllocAligned allocates with base a multiple of alignment (1 for
// olMemAlloc): as the device allocates when that is aligned enough, else
// from an allocation alignment-1 bytes larger (olMemFree of the base frees
// it). A range that overlaps a live allocation of another device is kept
// until the end, so that the device does not hand it out again.
func (c *Context) olMemAllocAligned(dev *Device, typ ol.AllocType, size, alignment uint64) (uintptr, error) {
	if size == 0 {
		return 0, ol.NewError(ol.ErrcInvalidSize, "Size is 0")
	}
	if alignment == 0 || alignment&(alignment-1) != 0 {
		return 0, ol.Errorf(ol.ErrcInvalidArgument, "Alignment %d is not a power of two", alignment)
	}
	if !typ.Valid() {
		// LLVM 22.1 treats every other value as managed memory.
		typ = ol.AllocTypeManaged
	}
	var rejected []uintptr
	defer func() {
		for _, p := range rejected {
			_ = dev.d.Free(p, typ)
		}
	}()
	if dev.pooled(typ, size, alignment) {
		if p, ok := c.poolAlloc(dev, typ, size); ok {
			return p, nil
		}
	}
	pad := uint64(0) // none until the device's own alignment falls short
	for attempt := 0; attempt < maxAllocAttempts; attempt++ {
		n := size + pad
		if n < size {
			return 0, ol.Errorf(ol.ErrcOutOfResources, "Size %d aligned to %d wraps around the address space", size, alignment)
		}
		if max := dev.d.Info().MaxMemAllocSize.V; max > 0 && n > max {
			return 0, ol.Errorf(ol.ErrcOutOfResources, "Size %d (%d bytes with alignment %d) exceeds the largest allocation of device %#x (%d bytes)", size, n, alignment, dev.h, max)
		}
		p, err := c.allocDevice(dev, typ, n)
		if err != nil {
			return 0, err
		}
		if uint64(p)+n < uint64(p) {
			rejected = append(rejected, p)
			return 0, ol.Errorf(ol.ErrcBackendFailure, "the device returned %#x for %d bytes, a range that wraps around the address space", p, n)
		}
		base := alignUp(uint64(p), alignment)
		if base+size > uint64(p)+n {
			// not aligned as it came (never seen by the caller: freed at once)
			_ = dev.d.Free(p, typ)
			pad = alignment - 1
			continue
		}
		a := &alloc{base: base, size: size, kind: typ, device: dev}
		if base != uint64(p) {
			a.raw = uint64(p)
		}
		if c.mem.insert(a) {
			return uintptr(base), nil
		}
		rejected = append(rejected, p)
	}
	return 0, ol.NewError(ol.ErrcBackendFailure, "failed to allocate non-overlapping memory")
}

func alignUp(x, a uint64) uint64 { return (x + a - 1) &^ (a - 1) }

func (c *Context) olMemFree(address uintptr) error {
	a, ok := c.mem.removeBase(uint64(address))
	if !ok {
		return ol.NewError(ol.ErrcInvalidArgument, "address is not a known allocation")
	}
	return c.freeAfterQueuedWork(&a)
}

func (c *Context) memInfo(ptr uintptr, prop ol.MemInfo) (infoValue, error) {
	a, ok := c.mem.find(uint64(ptr))
	if !ok {
		return infoValue{}, ol.NewError(ol.ErrcNotFound, "allocated memory information not found")
	}
	switch prop {
	case ol.MemInfoDevice:
		return infoValue{kind: ol.ValueHandle, u: uint64(a.device.h)}, nil
	case ol.MemInfoBase:
		return infoValue{kind: ol.ValuePointer, u: a.base}, nil
	case ol.MemInfoSize:
		return infoValue{kind: ol.ValueU64, u: a.size}, nil
	case ol.MemInfoType:
		return infoValue{kind: ol.ValueEnum, u: uint64(a.kind)}, nil
	}
	return infoValue{}, badEnum("olGetMemInfo", uint32(prop))
}

// publishFast lets the C entry points' fast paths (allocmap.h) answer for
// c: olInit calls it once c is current, unless tracing is on (every call
// must then be traced).
func (c *Context) publishFast() {
	if c.trace != nil || len(c.deviceList) == 0 {
		return
	}
	h := c.hostDevice()
	if !h.d.IsHost() {
		return
	}
	multi := 0
	if len(c.platformList) > 1 {
		multi = 1
	}
	c.publishPools()
	C.ol_fast_publish(C.uint64_t(h.h), c.mem.idx.p, c.globals.idx.p, C.int(multi))
	c.fast = true
}

// unpublishFast sends every later call to the Go path; the final
// olShutDown calls it before the context stops being current.
func unpublishFast() {
	C.ol_fast_unpublish()
	C.ol_fast_clear_pools()
}
