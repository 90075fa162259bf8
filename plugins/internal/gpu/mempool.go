package gpu

import (
	"errors"
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// Memory pools (RATIONALE.md, "Why do the GPU backends cache freed
// allocations instead of sub-allocating or using the drivers' pools?").
// A device's allocations of at most MaxPooled bytes are rounded up to a
// size class and come from the driver whole, one driver allocation each;
// a freed one is kept in its class's free list and handed out again, so
// that a steady olMemAlloc/olMemFree pattern makes no driver call. Larger
// allocations go to the driver and back at once. Cached memory returns to
// the driver at Release (the platform's Deinit), when the driver runs out
// of memory (everything cached is released and the allocation retried
// once), and when caching a freed allocation would take the device's idle
// bytes past the bound (the allocation is freed instead).
//
// The runtime calls Free only after the work queued before olMemFree has
// completed (impl/deferfree.go), so a block handed out again is never
// still in use by earlier work.

// MaxPooled is the largest allocation served from the pools.
const MaxPooled = 1 << 20

// DefaultPoolIdle is the default bound on a device's idle pooled bytes.
const DefaultPoolIdle = 256 << 20

// PoolIdleEnv names the variable that sets the bound on a device's idle
// pooled bytes (0: every free goes to the driver at once).
const PoolIdleEnv = "OFFLOAD_GPU_POOL_IDLE_BYTES"

// PoolIdle reads the idle bound from env: DefaultPoolIdle when unset or not
// a number of bytes.
func PoolIdle(env plugin.Env) uint64 {
	if env != nil {
		if v, ok := env.Lookup(PoolIdleEnv); ok {
			if n, err := strconv.ParseUint(v, 0, 64); err == nil {
				return n
			}
		}
	}
	return DefaultPoolIdle
}

// Size classes: 512 bytes, then four per power of two (2^k·(1+q/4)) up to
// MaxPooled, so that rounding wastes at most a quarter of an allocation.
const (
	minClassShift = 9
	numClasses    = 1 + 4*(20-minClassShift)
)

// sizeClass returns the class of an allocation of size bytes
// (0 < size <= MaxPooled).
func sizeClass(size uint64) int {
	if size <= 1<<minClassShift {
		return 0
	}
	k := bits.Len64(size-1) - 1 // 2^k < size <= 2^(k+1)
	step := uint64(1) << (k - 2)
	q := (size - 1<<k + step - 1) / step // 1..4
	return (k-minClassShift)*4 + int(q)
}

// classSize is the bytes a driver allocation of class c has.
func classSize(c int) uint64 {
	if c == 0 {
		return 1 << minClassShift
	}
	k := minClassShift + (c-1)/4
	q := uint64((c-1)%4 + 1)
	return 1<<k + q<<(k-2)
}

// MemDriver is what a pool asks of its device's driver.
type MemDriver interface {
	// DriverAlloc allocates size bytes of kind; running out of memory is
	// an *ol.Error with ErrcOutOfResources.
	DriverAlloc(kind ol.AllocType, size uint64) (uintptr, error)
	DriverFree(p uintptr, kind ol.AllocType) error
}

// MemPools are a device's pools, one per kind of memory.
type MemPools struct {
	drv   MemDriver
	bound uint64
	idle  atomic.Int64 // bytes cached, all kinds
	kinds [3]memPool   // by ol.AllocType
}

// memPool is one kind's pool. mu guards it; no call to the driver is made
// with it held.
type memPool struct {
	mu    sync.Mutex
	free  [numClasses][]uintptr
	known map[uintptr]uint8 // pooled blocks, handed out or cached: their class, | cached
}

// cached marks a block of known that is in a free list.
const cached = 0x80

// NewMemPools returns empty pools over drv keeping at most idleBound idle
// bytes.
func NewMemPools(drv MemDriver, idleBound uint64) *MemPools {
	m := &MemPools{drv: drv, bound: idleBound}
	for i := range m.kinds {
		m.kinds[i].known = make(map[uintptr]uint8)
	}
	return m
}

func (m *MemPools) pool(kind ol.AllocType) *memPool {
	if int(kind) < 0 || int(kind) >= len(m.kinds) {
		return nil
	}
	return &m.kinds[kind]
}

// Alloc returns size bytes of kind: a cached block of its class, else a
// new driver allocation (after releasing the cache and retrying when the
// driver is out of memory).
func (m *MemPools) Alloc(kind ol.AllocType, size uint64) (uintptr, error) {
	mp := m.pool(kind)
	if mp == nil || size > MaxPooled || size == 0 {
		return m.driverAlloc(kind, size)
	}
	c := sizeClass(size)
	if p := mp.take(c); p != 0 {
		m.idle.Add(-int64(classSize(c)))
		return p, nil
	}
	p, err := m.driverAlloc(kind, classSize(c))
	if err != nil {
		var oe *ol.Error
		if errors.As(err, &oe) && classSize(c) != size {
			return 0, ol.Errorf(oe.Code, "%s (for %d bytes, rounded up to a size class of the device's pool)", oe.Details, size)
		}
		return 0, err
	}
	mp.note(p, c)
	return p, nil
}

// take pops a cached block of class c and marks it handed out; 0 if none.
func (mp *memPool) take(c int) uintptr {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	l := mp.free[c]
	if len(l) == 0 {
		return 0
	}
	p := l[len(l)-1]
	mp.free[c] = l[:len(l)-1]
	mp.known[p] = uint8(c)
	return p
}

// note records a new driver block of class c as handed out.
func (mp *memPool) note(p uintptr, c int) {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	mp.known[p] = uint8(c)
}

// driverAlloc allocates from the driver, releasing the cache and trying
// again once if the driver is out of memory.
func (m *MemPools) driverAlloc(kind ol.AllocType, size uint64) (uintptr, error) {
	p, err := m.drv.DriverAlloc(kind, size)
	if err == nil || !outOfMemory(err) || m.idle.Load() == 0 {
		return p, err
	}
	if rerr := m.Release(); rerr != nil {
		return 0, errors.Join(err, rerr)
	}
	return m.drv.DriverAlloc(kind, size)
}

func outOfMemory(err error) bool {
	var oe *ol.Error
	return errors.As(err, &oe) && oe.Code == ol.ErrcOutOfResources
}

// Free takes back memory Alloc returned: a pooled block is cached while
// the device's idle bytes stay within the bound, everything else goes
// back to the driver. Freeing a cached block again is an error (the
// driver would take it while the free list still holds it).
func (m *MemPools) Free(p uintptr, kind ol.AllocType) error {
	mp := m.pool(kind)
	if mp == nil {
		return m.drv.DriverFree(p, kind)
	}
	switch m.give(mp, p) {
	case giveCached:
		return nil
	case giveTwice:
		return ol.Errorf(ol.ErrcInvalidArgument, "%s memory at %#x was freed already (it is in the device's pool)", kind, p)
	}
	return m.drv.DriverFree(p, kind)
}

// What give did with a block.
const (
	giveDriver = iota // not the pool's, or past the idle bound: the driver's to free
	giveCached        // in its class's free list
	giveTwice         // cached already: a second free
)

// give caches the pooled block p if the idle bound allows.
func (m *MemPools) give(mp *memPool, p uintptr) int {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	c, ok := mp.known[p]
	switch {
	case !ok:
		return giveDriver
	case c&cached != 0:
		return giveTwice
	}
	n := int64(classSize(int(c)))
	if uint64(m.idle.Add(n)) > m.bound {
		m.idle.Add(-n)
		delete(mp.known, p)
		return giveDriver
	}
	mp.known[p] = c | cached
	mp.free[c] = append(mp.free[c], p)
	return giveCached
}

// Idle returns the bytes cached now.
func (m *MemPools) Idle() uint64 { return uint64(m.idle.Load()) }

// Release returns every cached block to the driver. Blocks handed out stay
// as they are (Free of them later goes to the pool or the driver as usual).
func (m *MemPools) Release() error {
	var errs []error
	for k := range m.kinds {
		taken := m.takeAll(&m.kinds[k])
		for _, l := range taken {
			for _, p := range l {
				if err := m.drv.DriverFree(p, ol.AllocType(k)); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// takeAll empties mp's free lists and returns what they held.
func (m *MemPools) takeAll(mp *memPool) (taken [numClasses][]uintptr) {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	for c := range mp.free {
		taken[c], mp.free[c] = mp.free[c], nil
		for _, p := range taken[c] {
			delete(mp.known, p)
		}
		m.idle.Add(-int64(classSize(c)) * int64(len(taken[c])))
	}
	return taken
}
