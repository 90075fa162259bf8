package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
)

// call turns a CUresult into an error naming the call.
func (d *Device) call(what string, r C.int) error {
	if r == cudaSuccess {
		return nil
	}
	return d.drv.failure(what, int32(r))
}

// FastAlloc implements plugin.FastAllocDevice: the runtime's pool (which
// serves olMemAlloc of up to 1 MiB of every kind, RATIONALE.md "Why is
// small memory pooled, and the pool in C?") gets its memory from the
// driver as lgo_cu_alloc allocates it, straight from C; Alloc then sees
// only larger allocations, those aligned beyond 64 bytes, and those the
// pool could not serve.
func (d *Device) FastAlloc() unsafe.Pointer { return unsafe.Pointer(d.fast) }

// Alloc implements plugin.Device: DEVICE is cuMemAlloc, HOST pinned host
// memory (cuMemAllocHost), MANAGED cuMemAllocManaged.
func (d *Device) Alloc(kind ol.AllocType, size uint64) (uintptr, error) {
	var k C.int
	switch kind {
	case ol.AllocTypeHost:
		k = 0
	case ol.AllocTypeDevice:
		k = 1
	default:
		k = 2
	}
	var p C.uintptr_t
	r := C.lgo_cu_alloc(d.drv.run, d.ctx, k, &p, C.size_t(size))
	if r == cudaErrorOutOfMemory {
		return 0, ol.Errorf(ol.ErrcOutOfResources, "cuda: cannot allocate %d bytes of %s memory on %s: %s", size, kind, d.info.Name.V, d.drv.describe(int32(r)))
	}
	if r != cudaSuccess {
		return 0, d.call(fmt.Sprintf("allocating %d bytes of %s memory", size, kind), r)
	}
	return uintptr(p), nil
}

// Free implements plugin.Device.
func (d *Device) Free(p uintptr, kind ol.AllocType) error {
	host := C.int(0)
	if kind == ol.AllocTypeHost {
		host = 1
	}
	r := C.lgo_cu_free(d.drv.run, d.ctx, host, C.uintptr_t(p))
	if r == cudaSuccess {
		return nil
	}
	return d.call(fmt.Sprintf("freeing %s memory at %#x", kind, p), r)
}

// Register implements plugin.Device: the first registration of a range
// page-locks it (cuMemHostRegister, usable from every context); the device
// address of registered memory is its host address (unified addressing).
// Memory the driver knows already (cuPointerGetAttribute answers for it:
// cuMemAllocHost and managed memory, olMemAlloc's HOST and MANAGED; a
// range another library registered; device memory) is not registered
// again: the driver refuses that (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
// or INVALID_VALUE), and the device reaches it as it is. Such a range is
// tracked all the same, and never unregistered by the plugin.
func (d *Device) Register(p uintptr, size uint64) (uintptr, error) {
	_, _, err := d.pinned.AddLocked(p, size, func() (bool, error) {
		if C.lgo_cu_pointer_type(d.drv.run, d.ctx, C.uintptr_t(p)) != 0 {
			return false, nil // memory the driver knows (pinned, managed, device): the device reaches it
		}
		r := C.lgo_cu_register(d.drv.run, d.ctx, C.uintptr_t(p), C.size_t(size))
		if r == cudaErrorHostMemoryAlreadyRegistered {
			return false, nil
		}
		return true, d.call(fmt.Sprintf("cuMemHostRegister of %d bytes at %#x", size, p), r)
	})
	if err != nil {
		return 0, err
	}
	return p, nil
}

// Unregister implements plugin.Device: the last user of a range unlocks it
// (when the plugin locked it).
func (d *Device) Unregister(p uintptr) error {
	last, start, locked, err := d.pinned.Remove(p)
	if err != nil || !last || !locked {
		return err
	}
	return d.call(fmt.Sprintf("cuMemHostUnregister at %#x", start), C.lgo_cu_unregister(d.drv.run, d.ctx, C.uintptr_t(start)))
}

// unregisterAll unregisters the ranges still registered (Deinit): the
// driver keeps them page-locked until the process ends otherwise, and a
// later initialisation could not register them again.
func (d *Device) unregisterAll() error {
	if d.ctx == 0 {
		d.pinned.Reset(nil)
		return nil
	}
	var errs []error
	d.pinned.Reset(func(start uintptr, locked bool) {
		if locked {
			errs = append(errs, d.call(fmt.Sprintf("cuMemHostUnregister at %#x", start), C.lgo_cu_unregister(d.drv.run, d.ctx, C.uintptr_t(start))))
		}
	})
	return errors.Join(errs...)
}

// OwnsPointer implements plugin.PointerDevice: p is device memory of this
// GPU as the driver knows it (a global of a module, memory allocated by
// another library in this process).
func (d *Device) OwnsPointer(p uintptr) bool {
	var typ C.uint
	var ordinal C.int
	if C.lgo_cu_pointer_info(d.drv.run, d.ctx, C.uintptr_t(p), &typ, &ordinal) != cudaSuccess {
		return false
	}
	return typ == memoryTypeDevice && int32(ordinal) == d.ordinal
}

// CU_MEMORYTYPE_DEVICE
const memoryTypeDevice = 2
