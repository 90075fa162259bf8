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
	"github.com/liboffload-go/liboffload-go/plugins/internal/gpu"
)

// signal is an HSA signal of the platform's pool. It counts its
// references: the entry whose completion it marks, the queue whose latest
// work it is, the entry that waits for it, events. The last reference gives
// it back to the pool; it is set to 1 again when it is next handed out.
type signal struct {
	h    uint64
	refs atomic.Int32
	pool *signalPool
}

// release drops a reference (nil: none).
func (s *signal) release() {
	if s != nil && s.refs.Add(-1) == 0 {
		s.pool.put(s)
	}
}

// value is the signal's value: 1 while its work is pending, 0 once it is
// done, negative when the runtime reports that the work failed.
func (s *signal) value() int64 { return int64(C.lgo_hsa_signal_load(s.pool.p.run, C.uint64_t(s.h))) }

// signalPool holds the platform's signals; every signal it ever created is
// destroyed by release (Deinit).
type signalPool struct {
	p    *Platform
	mu   sync.Mutex
	free gpu.Pool[*signal]
	all  []*signal
}

// get returns a signal with value 1 and one reference.
func (sp *signalPool) get() (*signal, error) {
	s, err := sp.getUnarmed()
	if err == nil {
		C.lgo_hsa_signal_store(sp.p.run, C.uint64_t(s.h), 1)
	}
	return s, err
}

// getUnarmed returns a signal with one reference whose value is left as
// its last use left it: the caller sets it to 1 before using it, in the
// same call to C as the submission (lgo_hsa_copy_armed, lgo_hsa_dispatch).
func (sp *signalPool) getUnarmed() (*signal, error) {
	s := func() *signal {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		return sp.free.Get()
	}()
	if s == nil {
		r := C.lgo_hsa_signal_create(sp.p.run, 1)
		if r.st != hsaStatusSuccess {
			return nil, sp.p.drv.failure("hsa_signal_create", uint32(r.st))
		}
		s = &signal{h: uint64(r.v), pool: sp}
		func() {
			sp.mu.Lock()
			defer sp.mu.Unlock()
			sp.all = append(sp.all, s)
		}()
	}
	s.refs.Store(1)
	return s, nil
}

// put takes back a signal no one refers to (its value is set again when
// it is handed out).
func (sp *signalPool) put(s *signal) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.free.Push(s)
}

func (sp *signalPool) release() error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	var errs []error
	for _, s := range sp.all {
		errs = append(errs, sp.p.drv.check("hsa_signal_destroy", C.lgo_hsa_signal_destroy(sp.p.run, C.uint64_t(s.h))))
	}
	sp.free.Take()
	sp.all = nil
	return errors.Join(errs...)
}

// Kernel-argument buffers come in size classes of 256 << k bytes, carved
// from slabs of the kernarg pool made accessible to every GPU; larger ones
// are allocated one by one.
const (
	kernargMinClass = 256
	kernargClasses  = 8       // 256 B .. 32 KiB
	kernargSlab     = 1 << 16 // bytes per slab
)

type kernargPool struct {
	p     *Platform
	mu    sync.Mutex
	free  [kernargClasses][]uintptr
	slabs []uintptr
}

// kernargClass is the size class of a buffer of size bytes, -1 when it
// is larger than the largest class.
func kernargClass(size uint64) int8 {
	for k := int8(0); k < kernargClasses; k++ {
		if size <= kernargMinClass<<k {
			return k
		}
	}
	return -1
}

// get returns a buffer of at least size bytes and its class.
func (kp *kernargPool) get(size uint64) (uintptr, int8, error) {
	class := kernargClass(size)
	if class < 0 {
		b, err := kp.allocate(size)
		return b, class, err
	}
	kp.mu.Lock()
	defer kp.mu.Unlock()
	if b := gpu.PopLast(&kp.free[class]); b != 0 {
		return b, class, nil
	}
	slab, err := kp.allocate(kernargSlab)
	if err != nil {
		return 0, 0, err
	}
	kp.slabs = append(kp.slabs, slab)
	n := uintptr(kernargMinClass) << class
	for b := slab + n; b+n <= slab+kernargSlab; b += n {
		kp.free[class] = append(kp.free[class], b)
	}
	return slab, class, nil
}

func (kp *kernargPool) allocate(size uint64) (uintptr, error) {
	p := kp.p
	if p.kernargPool == 0 {
		return 0, ol.NewError(ol.ErrcUnsupported, "amdgpu: the HSA runtime has no memory pool for kernel arguments")
	}
	r := C.lgo_hsa_pool_allocate(p.run, C.uint64_t(p.kernargPool), C.size_t(size))
	if r.st != hsaStatusSuccess {
		return 0, p.drv.failure(fmt.Sprintf("hsa_amd_memory_pool_allocate of %d bytes of kernel-argument memory", size), uint32(r.st))
	}
	b := uintptr(r.v)
	if err := p.allowAccess(p.agentsC, len(p.gpus), b); err != nil {
		_ = C.lgo_hsa_pool_free(p.run, C.uintptr_t(b))
		return 0, err
	}
	return b, nil
}

// put gives a buffer back.
func (kp *kernargPool) put(b uintptr, class int8) {
	if b == 0 {
		return
	}
	if class < 0 {
		_ = C.lgo_hsa_pool_free(kp.p.run, C.uintptr_t(b))
		return
	}
	kp.mu.Lock()
	defer kp.mu.Unlock()
	kp.free[class] = append(kp.free[class], b)
}

func (kp *kernargPool) release() error {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	var errs []error
	for _, s := range kp.slabs {
		errs = append(errs, kp.p.drv.check("hsa_amd_memory_pool_free of kernel-argument memory", C.lgo_hsa_pool_free(kp.p.run, C.uintptr_t(s))))
	}
	kp.slabs = nil
	kp.free = [kernargClasses][]uintptr{}
	return errors.Join(errs...)
}

// bytesAt views size bytes of C memory at p.
func bytesAt(p uintptr, size uint64) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), size)
}
