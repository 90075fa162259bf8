package amdgpu

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// Directions of cCopy (fastq.h, OL_FASTQ_*).
const (
	cToDevice   = 0
	cFromDevice = 1
	cOnDevice   = 2
)

// cCopy and cLaunch call the queue's C copy and launch as the runtime's C
// entry points do (tests): true when C submitted the operation.
func (q *Queue) cCopy(dir int, dst, src uintptr, n uint64) bool {
	return C.lgo_hsa_fastq_copy(q.f.Ptr(), C.int(dir), C.uint64_t(dst), C.uint64_t(src), C.uint64_t(n)) != 0
}

func (q *Queue) cLaunch(k *Kernel, args []byte, s plugin.LaunchSize) bool {
	var p unsafe.Pointer
	if len(args) > 0 {
		p = unsafe.Pointer(&args[0])
	}
	return C.lgo_hsa_fastq_launch(q.f.Ptr(), k.Fast(), p, C.uint64_t(len(args)),
		C.uint32_t(s.NumGroups.X), C.uint32_t(s.NumGroups.Y), C.uint32_t(s.NumGroups.Z),
		C.uint32_t(s.GroupSize.X), C.uint32_t(s.GroupSize.Y), C.uint32_t(s.GroupSize.Z), C.uint64_t(s.DynSharedMemory)) != 0
}
