package impl

import (
	"sort"
	"sync"

	"github.com/liboffload-go/liboffload-go/api/ol"
)

// alloc is one live olMemAlloc allocation.
type alloc struct {
	base, size uint64
	kind       ol.AllocType
	device     *Device
}

func (a *alloc) end() uint64 { return a.base + a.size }

// allocMap records every allocation of every device, so that olMemFree and
// olGetMemInfo find them by address and no two live allocations overlap.
type allocMap struct {
	mu     sync.RWMutex
	sorted []*alloc // by base
}

func newAllocMap() *allocMap { return &allocMap{} }

// find returns the allocation containing p (any interior address).
// (No defer and no closure: every queued copy makes two of these.)
func (m *allocMap) find(p uint64) *alloc {
	m.mu.RLock()
	s := m.sorted
	lo, hi := 0, len(s) // the first allocation that ends after p
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if s[mid].end() > p {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	var a *alloc
	if lo < len(s) && s[lo].base <= p {
		a = s[lo]
	}
	m.mu.RUnlock()
	return a
}

// insert records a; it reports false if a overlaps a live allocation.
func (m *allocMap) insert(a *alloc) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := sort.Search(len(m.sorted), func(i int) bool { return m.sorted[i].end() > a.base })
	if i < len(m.sorted) && m.sorted[i].base < a.end() {
		return false
	}
	m.sorted = append(m.sorted, nil)
	copy(m.sorted[i+1:], m.sorted[i:])
	m.sorted[i] = a
	return true
}

// removeBase removes the allocation that starts exactly at base.
func (m *allocMap) removeBase(base uint64) *alloc {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := sort.Search(len(m.sorted), func(i int) bool { return m.sorted[i].base >= base })
	if i < len(m.sorted) && m.sorted[i].base == base {
		a := m.sorted[i]
		m.sorted = append(m.sorted[:i], m.sorted[i+1:]...)
		return a
	}
	return nil
}

// checkRange refuses a range of size bytes at p that wraps around the end
// of the address space, or that starts inside an allocation of the library
// and runs past its end. Ranges in memory the library did not allocate are
// the caller's responsibility. what names the pointer in the message. It
// returns the allocation p is in (nil: none, or size is 0).
func (m *allocMap) checkRange(fn, what string, p, size uint64) (*alloc, error) {
	if size == 0 {
		return nil, nil
	}
	if p+size < p {
		return nil, ol.Errorf(ol.ErrcInvalidSize, "%s of %d bytes at %s %#x wraps around the end of the address space", fn, size, what, p)
	}
	a := m.find(p)
	if a != nil && p+size > a.end() {
		return nil, ol.Errorf(ol.ErrcInvalidSize, "%s of %d bytes at %s %#x runs past the end of the %d-byte allocation at %#x (%d bytes left)",
			fn, size, what, p, a.size, a.base, a.end()-p)
	}
	return a, nil
}

func (m *allocMap) snapshot() []*alloc {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*alloc(nil), m.sorted...)
}

// drain removes and returns every allocation.
func (m *allocMap) drain() []*alloc {
	m.mu.Lock()
	defer m.mu.Unlock()
	all := m.sorted
	m.sorted = nil
	return all
}

const maxAllocAttempts = 50

func (c *Context) olMemAlloc(dev *Device, typ ol.AllocType, size uint64) (uintptr, error) {
	if size == 0 {
		return 0, ol.NewError(ol.ErrcInvalidSize, "Size is 0")
	}
	if !typ.Valid() {
		// LLVM 22.1 treats every other value as managed memory.
		typ = ol.AllocTypeManaged
	}
	if max := dev.d.Info().MaxMemAllocSize.V; max > 0 && size > max {
		return 0, ol.Errorf(ol.ErrcOutOfResources, "Size %d exceeds the largest allocation of device %#x (%d bytes)", size, dev.h, max)
	}
	var rejected []uintptr
	defer func() {
		for _, p := range rejected {
			_ = dev.d.Free(p, typ)
		}
	}()
	for attempt := 0; attempt < maxAllocAttempts; attempt++ {
		p, err := c.allocDevice(dev, typ, size)
		if err != nil {
			return 0, err
		}
		if uint64(p)+size < uint64(p) {
			rejected = append(rejected, p)
			return 0, ol.Errorf(ol.ErrcBackendFailure, "the device returned %#x for %d bytes, a range that wraps around the address space", p, size)
		}
		if c.mem.insert(&alloc{base: uint64(p), size: size, kind: typ, device: dev}) {
			return p, nil
		}
		rejected = append(rejected, p)
	}
	return 0, ol.NewError(ol.ErrcBackendFailure, "failed to allocate non-overlapping memory")
}

func (c *Context) olMemFree(address uintptr) error {
	a := c.mem.removeBase(uint64(address))
	if a == nil {
		return ol.NewError(ol.ErrcInvalidArgument, "address is not a known allocation")
	}
	return c.freeAfterQueuedWork(a.device, uintptr(a.base), a.size, a.kind)
}

func (c *Context) memInfo(ptr uintptr, prop ol.MemInfo) (infoValue, error) {
	a := c.mem.find(uint64(ptr))
	if a == nil {
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
