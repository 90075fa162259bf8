package amdgpu

/*
#include "shim.h"
*/
import "C"

import "runtime/cgo"

// maxCollected bounds how many handles one iteration keeps; a driver that
// reports more is stopped with HSA_STATUS_ERROR.
const maxCollected = 1 << 16

// collector receives the handles of one hsa_iterate_agents or
// hsa_amd_agent_iterate_memory_pools call. The callback does nothing but
// record them: all driver queries happen afterwards, from ordinary Go code.
type collector struct{ handles []uint64 }

// iterate runs an iterator trampoline with a collector and returns the
// handles it saw and the iterator's status.
func iterate(run func(data C.uintptr_t) C.uint32_t) ([]uint64, uint32) {
	c := &collector{}
	h := cgo.NewHandle(c)
	defer h.Delete()
	st := uint32(run(C.uintptr_t(h)))
	return c.handles, st
}

// lgoHsaCollect is called by the driver (through collect in shim.c), on the
// thread that called the iterator, once per agent or memory pool.
//
//export lgoHsaCollect
func lgoHsaCollect(handle C.uint64_t, data C.uintptr_t) C.uint32_t {
	c, ok := cgo.Handle(data).Value().(*collector)
	if !ok || len(c.handles) >= maxCollected {
		return hsaStatusError
	}
	c.handles = append(c.handles, uint64(handle))
	return hsaStatusSuccess
}
