package impl

/*
#include "pool.h"
*/
import "C"

import (
	"strconv"
	"strings"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// EnvPoolIdle bounds the free memory each device's allocation pool keeps
// (bytes, or with a K, M or G suffix; 0: none is kept beyond the slabs
// that still hold allocations). See pool.h and docs/environment.md.
const EnvPoolIdle = "OFFLOAD_POOL_IDLE"

// defaultPoolIdle is the bound when EnvPoolIdle is unset.
const defaultPoolIdle = 64 << 20

// trimBatch is how many slabs one trim hands back at most.
const trimBatch = 64

// poolIdle reads EnvPoolIdle.
func poolIdle(env cEnv) (uint64, error) {
	v, ok := env.Lookup(EnvPoolIdle)
	if !ok || strings.TrimSpace(v) == "" {
		return defaultPoolIdle, nil
	}
	s := strings.ToUpper(strings.TrimSpace(v))
	mul := uint64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mul, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mul, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mul, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > (1<<62)/mul {
		return 0, ol.Errorf(ol.ErrcInvalidValue, "%s=%q is not a number of bytes (such as 67108864 or 64M)", EnvPoolIdle, v)
	}
	return n * mul, nil
}

// poolPtr is a device's pool (Device.pool).
type poolPtr = *C.ol_pool

// makePools gives each device whose plugin offers its allocator in C
// (plugin.FastAllocDevice) an allocation pool keeping at most idle free
// bytes; a pool that cannot be made leaves its device unpooled.
func (c *Context) makePools(idle uint64) {
	for _, d := range c.deviceList {
		fd, ok := d.d.(plugin.FastAllocDevice)
		if !ok {
			continue
		}
		src := fd.FastAlloc()
		if src == nil {
			continue
		}
		d.pool = C.ol_pool_new(C.uint64_t(d.h), (*C.ol_fastalloc)(src), C.uint64_t(idle))
	}
}

// freePools releases every pool's memory (teardown, once the allocation
// map has let go of every slab).
func (c *Context) freePools() {
	for _, d := range c.deviceList {
		if d.pool != nil {
			C.ol_pool_free(d.pool)
			d.pool = nil
		}
	}
}

// publishPools lets the C paths of olMemAlloc use the pools (before the
// fast paths are published).
func (c *Context) publishPools() {
	C.ol_fast_clear_pools()
	C.ol_pool_gate_reset()
	n := 0
	for _, d := range c.deviceList {
		if d.pool != nil && n < C.OL_FAST_POOLS {
			C.ol_fast_add_pool(C.uint64_t(d.h), d.pool)
			n++
		}
	}
}

// pooled reports whether an allocation of size bytes of typ aligned to
// alignment comes from dev's pool.
func (d *Device) pooled(typ ol.AllocType, size, alignment uint64) bool {
	return d.pool != nil && alignment <= 64 && C.ol_pool_class(d.pool, C.uint64_t(size)) >= 0 &&
		C.ol_pool_kind_ok(d.pool, C.uint32_t(typ)) != 0
}

// poolAlloc takes size bytes of typ from dev's pool, making a slab when
// none is free. ok false: the pool could not serve it (the caller
// allocates from the device).
func (c *Context) poolAlloc(dev *Device, typ ol.AllocType, size uint64) (p uintptr, ok bool) {
	if b := C.ol_pool_alloc(dev.pool, C.uint64_t(size), C.uint32_t(typ)); b != 0 {
		return uintptr(b), true
	}
	s := C.ol_pool_slab_new(dev.pool, C.uint64_t(size), C.uint32_t(typ))
	if s == nil {
		// out of memory: hand back every free slab and try once more
		c.trimPool(dev, nil)
		if s = C.ol_pool_slab_new(dev.pool, C.uint64_t(size), C.uint32_t(typ)); s == nil {
			return 0, false
		}
	}
	if !c.mem.insertSlab(dev, s) {
		C.ol_pool_slab_release(dev.pool, s)
		return 0, false
	}
	b := C.ol_pool_slab_add(dev.pool, s, C.uint64_t(size), C.uint32_t(typ))
	if b == 0 {
		// no room to keep its blocks: it goes back
		c.mem.removeSlab(s)
		C.ol_pool_slab_release(dev.pool, s)
		return 0, false
	}
	return uintptr(b), true
}

// trimPool hands free slabs of dev's pool back to the device: those of the
// arena of slab from until the arena's idle memory is under its bound, or
// (from nil) every free slab.
func (c *Context) trimPool(dev *Device, from *C.ol_slab) {
	var out [trimBatch]*C.ol_slab
	for {
		n := int(C.ol_pool_trim(dev.pool, from, &out[0], trimBatch))
		for _, s := range out[:n] {
			c.mem.removeSlab(s)
			C.ol_pool_slab_release(dev.pool, s)
		}
		if n < trimBatch {
			return
		}
	}
}

// freePooled returns the pooled block a (taken out of the map) to its
// pool, trimming the pool when its idle memory is over the bound.
func (c *Context) freePooled(a *alloc) {
	over := C.ol_pool_over(a.slab, C.uint64_t(a.base)) != 0
	C.ol_pool_put(a.slab, C.uint64_t(a.base))
	if over {
		c.trimPool(a.device, a.slab)
	}
}

// insertSlab files slab s of dev as one allocation; false if it overlaps a
// live allocation.
func (m *allocMap) insertSlab(dev *Device, s *C.ol_slab) bool {
	var h C.ol_amap_hit
	C.ol_pool_slab_hit(s, &h)
	m.mu.Lock()
	defer m.mu.Unlock()
	base, end := uint64(h.base), uint64(h.base)+uint64(h.size)
	if m.order.Overlaps(base, end) {
		return false
	}
	h.aux = C.uint32_t(m.aux(dev))
	h.dev = C.uint64_t(dev.h)
	if dev.d == nil || !dev.d.IsHost() {
		h.flags |= C.OL_AMAP_FOREIGN
	}
	if C.ol_amap_insert(m.idx.p, &h) == 0 {
		return false
	}
	m.order.Insert(base, end)
	return true
}

// removeSlab takes slab s (no live block) out of the map.
func (m *allocMap) removeSlab(s *C.ol_slab) {
	var h C.ol_amap_hit
	C.ol_pool_slab_hit(s, &h)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.order.Remove(uint64(h.base)); ok {
		C.ol_amap_remove(m.idx.p, h.base, h.size, nil)
	}
}

// slabBlocks appends the live blocks of the slab filed at base (mu held).
func (m *allocMap) slabBlocks(out []*alloc, h *C.ol_amap_hit) []*alloc {
	s := C.ol_hit_slab(*h)
	var i C.uint64_t
	b := *h
	for C.ol_pool_slab_live(s, &i, &b) != 0 {
		a := m.hit(&b)
		out = append(out, &a)
	}
	return out
}

// countQueue tells the C free path (pool.h) of a new queue: a mirrored one
// is registered, so that frees stay in C while it is idle; any other counts
// in the gate while it lives, and frees then take the Go path, which
// decides whether they wait for queued work.
func (c *Context) countQueue(q *Queue) {
	if q.mirrored && C.ol_pool_queue_add(q.q.(plugin.FastQueue).Fast()) != 0 {
		q.registered = true
		return
	}
	C.ol_pool_gate_add(1)
}

// uncountQueue moves a registered queue that is being destroyed to the
// gate (the free path's counts of retiring queues, which endRetire
// lowers) and returns once no C path reads its counters. Called with
// frees.scan held for writing.
func (c *Context) uncountQueue(q *Queue) {
	if !q.registered {
		return
	}
	q.registered = false
	C.ol_pool_gate_add(1)
	C.ol_pool_queue_remove(q.q.(plugin.FastQueue).Fast())
}
