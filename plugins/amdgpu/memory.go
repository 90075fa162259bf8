package amdgpu

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
)

// hsa_amd_pointer_type_t values
const (
	pointerUnknown  = 0
	pointerHSA      = 1
	pointerLocked   = 2
	pointerGraphics = 3
	pointerIPC      = 4
)

// FastAlloc implements plugin.FastAllocDevice: the runtime's pool (which
// serves olMemAlloc of up to 1 MiB, RATIONALE.md "Why is small memory
// pooled, and the pool in C?") gets its memory from ROCr as Alloc
// allocates it, straight from C (lgo_hsa_fastalloc_new); Alloc then sees
// only larger allocations, those aligned beyond 64 bytes, and those the
// pool could not serve.
func (d *Device) FastAlloc() unsafe.Pointer { return unsafe.Pointer(d.fast) }

// Alloc implements plugin.Device: DEVICE memory comes from the agent's
// coarse-grained pool (made reachable by the other GPUs where the runtime
// needs to be told); HOST and MANAGED memory from fine-grained system
// memory made accessible to every GPU agent.
func (d *Device) Alloc(kind ol.AllocType, size uint64) (uintptr, error) {
	p := d.p
	pool, agents, n := p.hostPool, p.agentsC, len(p.gpus)
	if kind == ol.AllocTypeDevice {
		pool, agents, n = d.devPool, d.peers, d.nPeers
	}
	if pool == 0 {
		return 0, ol.Errorf(ol.ErrcUnsupported, "amdgpu: %s has no memory pool for %s memory", d.name(), kind)
	}
	r := C.lgo_hsa_pool_allocate(p.run, C.uint64_t(pool), C.size_t(size))
	if r.st != hsaStatusSuccess {
		code := errcOf(uint32(r.st))
		if r.st == 0x1003 { // HSA_STATUS_ERROR_INVALID_ALLOCATION: larger than the pool allows
			code = ol.ErrcOutOfResources
		}
		return 0, ol.Errorf(code, "hsa_amd_memory_pool_allocate of %d bytes of %s memory on %s failed: %s", size, kind, d.name(), p.drv.describe(uint32(r.st)))
	}
	ptr := uintptr(r.v)
	if n > 0 {
		if err := p.allowAccess(agents, n, ptr); err != nil {
			_ = C.lgo_hsa_pool_free(p.run, C.uintptr_t(ptr))
			return 0, fmt.Errorf("%w (%s memory on %s)", err, kind, d.name())
		}
	}
	return ptr, nil
}

// allowAccess lets the n agents at agents (in C memory) reach the
// allocation at ptr, in one call.
func (p *Platform) allowAccess(agents *C.uint64_t, n int, ptr uintptr) error {
	st := C.lgo_hsa_allow_access(p.run, agents, C.uint32_t(n), C.uintptr_t(ptr))
	return p.drv.check(fmt.Sprintf("hsa_amd_agents_allow_access for %#x", ptr), st)
}

// Free implements plugin.Device.
func (d *Device) Free(ptr uintptr, kind ol.AllocType) error {
	return d.call(fmt.Sprintf("hsa_amd_memory_pool_free of %s memory at %#x", kind, ptr), C.lgo_hsa_pool_free(d.p.run, C.uintptr_t(ptr)))
}

// lockedRange is what a device keeps of each range it registered: the
// address the GPUs use for its start (hsa_amd_memory_lock may map host
// memory at another address for GPUs) and its share of the plugin's lock
// of the memory (nil for memory of the runtime's or locked outside the
// plugin).
type lockedRange struct {
	agent uintptr
	lock  *tempLock
}

// Register implements plugin.Device: the first registration of a range
// on a device takes a share of the plugin's locks of host memory
// (hostAddr): it joins a lock that covers the range (a copy's, another
// device's registration) or locks the range for every GPU agent
// (hsa_amd_memory_lock), unless the runtime knows the memory otherwise
// (its own allocations, memory locked outside the plugin): memory the
// runtime knows only through a copy's lock is locked only until that
// copy completes, unless the registration joins the lock. The result is
// the address the GPUs use for ptr. A registration inside a range waits for the range's first
// registration to be done (see pinned.Ranges.AddLocked), so that it gets
// the agent address.
func (d *Device) Register(ptr uintptr, size uint64) (uintptr, error) {
	p := d.p
	start, l, err := d.pinned.AddLocked(ptr, size, func() (lockedRange, error) {
		a, tl, err := p.hostAddr(ptr, size)
		return lockedRange{agent: a, lock: tl}, err
	})
	if err != nil {
		return 0, err
	}
	return l.agent + (ptr - start), nil
}

// Unregister implements plugin.Device: the last user of a range on the
// device gives back its share of the lock, which is undone once no copy
// or other registration uses it.
func (d *Device) Unregister(ptr uintptr) error {
	last, _, l, err := d.pinned.Remove(ptr)
	if err != nil || !last || l.lock == nil {
		return err
	}
	return d.p.unlockTemp(l.lock)
}

// unlockAll gives back the shares of the ranges still registered (Deinit).
func (d *Device) unlockAll() error {
	var errs []error
	d.pinned.Reset(func(_ uintptr, l lockedRange) {
		if l.lock != nil {
			errs = append(errs, d.p.unlockTemp(l.lock))
		}
	})
	return errors.Join(errs...)
}

// OwnsPointer implements plugin.PointerDevice: p is memory of this GPU
// agent as the runtime knows it (a global of an executable, memory
// allocated by another library in this process).
func (d *Device) OwnsPointer(p uintptr) bool {
	r := C.lgo_hsa_pointer_info(d.p.run, C.uintptr_t(p))
	return r._type == pointerHSA && uint64(r.owner) == d.agent
}

// tempLocks are host ranges the plugin locked itself (host memory the
// runtime did not allocate or lock) for the copies and registrations that
// use them, shared by those within the same range and unlocked when the
// last one has gone: a copy's share lasts until it has completed, a
// registration's until olMemUnregister. While one is held the runtime
// knows its memory as locked, but only until its last user goes: a copy
// or registration of memory inside it must join it (hostAddr), not take
// the memory as the runtime's for good, and a copy from a registered
// range holds its share, so that olMemUnregister while it is queued does
// not unlock its memory.
// C's lookup (lgo_hsa_copy_host) leaves locked memory to hostAddr while the
// counts in the entry-point table say temporary locks may be held
// (lockCounted, unlockCounted). A proxy's copies from several threads
// meet this all the time: a staging buffer is freed once its copy has
// run, before the queue gives back the copy's lock, and the next one
// comes from the same place.
type tempLocks struct {
	mu   sync.Mutex
	list []*tempLock
}

type tempLock struct {
	start, end, agent uintptr
	users             int
	// held counts the runtime's locks at start that this one answers
	// for: its own, and those of earlier temporary locks at the same start
	// whose last user went while this one was live. hsa_amd_memory_unlock
	// names a range by its start alone, so unlocking one of two locks at
	// one address (a copy from a buffer freed and allocated again, larger,
	// before the first copy's entry was reclaimed) could release the one
	// a pending copy still needs: every lock at a start is undone only once
	// none there is in use.
	held int
}

// hostAddr returns the address the GPUs use for size bytes of host memory
// at h, and the lock taken or joined for it (nil when none was needed:
// memory of the runtime's pools, or locked memory none of the plugin's
// locks holds).
func (p *Platform) hostAddr(h uintptr, size uint64) (uintptr, *tempLock, error) {
	end := h + uintptr(size)
	p.tlocks.mu.Lock()
	defer p.tlocks.mu.Unlock()
	partly := false
	for _, l := range p.tlocks.list {
		if l.start <= h && end <= l.end {
			l.users++
			return l.agent + (h - l.start), l, nil
		}
		partly = partly || (l.start <= h && h < l.end)
	}
	// the runtime knows h when one of these locks holds it, but not the
	// rest of the range: lock the range for this copy
	if !partly {
		if r := C.lgo_hsa_pointer_info(p.run, C.uintptr_t(h)); r._type != pointerUnknown {
			return uintptr(r.agent_addr), nil, nil
		}
	}
	lr := p.lockCounted(h, size)
	if lr.st != hsaStatusSuccess {
		return 0, nil, p.drv.failure(fmt.Sprintf("hsa_amd_memory_lock of %d bytes of host memory at %#x", size, h), uint32(lr.st))
	}
	l := &tempLock{start: h, end: end, agent: uintptr(lr.v), users: 1, held: 1}
	p.tlocks.list = append(p.tlocks.list, l)
	return l.agent, l, nil
}

// lockCounted is hsa_amd_memory_lock of one of the plugin's locks,
// counted in the entry-point table first (see tempLocks); unlockCounted
// undoes one.
func (p *Platform) lockCounted(h uintptr, size uint64) C.lgo_hsa_r {
	live := (*uint64)(unsafe.Pointer(&p.run.tlocks_live))
	atomic.AddUint64((*uint64)(unsafe.Pointer(&p.run.tlocks_taken)), 1)
	atomic.AddUint64(live, 1)
	r := C.lgo_hsa_lock(p.run, C.uintptr_t(h), C.size_t(size), p.agentsC, C.uint32_t(len(p.gpus)))
	if r.st != hsaStatusSuccess {
		atomic.AddUint64(live, ^uint64(0))
	}
	return r
}

func (p *Platform) unlockCounted(start uintptr) C.uint32_t {
	st := C.lgo_hsa_unlock(p.run, C.uintptr_t(start))
	atomic.AddUint64((*uint64)(unsafe.Pointer(&p.run.tlocks_live)), ^uint64(0))
	return st
}

// unlockTemp drops one user of a lock; the last one unlocks it, unless
// another lock of the plugin's at the same start is in use (see held).
// The runtime's unlock is made under the list's lock: between the entry's
// removal and the unlock, hostAddr would find the range still known to
// the runtime (the lock about to go) and copy from it without a lock of
// its own.
func (p *Platform) unlockTemp(l *tempLock) error {
	p.tlocks.mu.Lock()
	defer p.tlocks.mu.Unlock()
	l.users--
	n := 0
	if l.users == 0 {
		for i, v := range p.tlocks.list {
			if v == l {
				p.tlocks.list = append(p.tlocks.list[:i], p.tlocks.list[i+1:]...)
				break
			}
		}
		n = l.held
		for _, v := range p.tlocks.list {
			if v.start == l.start {
				v.held += n
				n = 0
				break
			}
		}
	}
	var errs []error
	for ; n > 0; n-- {
		errs = append(errs, p.drv.check(fmt.Sprintf("hsa_amd_memory_unlock at %#x", l.start), p.unlockCounted(l.start)))
	}
	return errors.Join(errs...)
}

// releaseAll unlocks what copies that never completed left locked.
func (t *tempLocks) releaseAll(p *Platform) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for _, l := range t.list {
		for range l.held {
			errs = append(errs, p.drv.check(fmt.Sprintf("hsa_amd_memory_unlock at %#x", l.start), p.unlockCounted(l.start)))
		}
	}
	t.list = nil
	return errors.Join(errs...)
}
