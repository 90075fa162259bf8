package host

/*
#include "exec.h"
*/
import "C"

import (
	"math/big"
	"math/bits"
	"runtime"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/fault"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// kernel is an entry point of a host program, described by the descriptor
// that <offload/kernel.h> emits next to it.
type kernel struct {
	name string
	desc *C.ol_host_kernel_desc
	prog *program
	// params are the kernel's parameters as its descriptor records them
	// (ABI 4 and later; paramsKnown false for older images).
	params      []plugin.Param
	paramsKnown bool
}

// Params implements plugin.ParamKernel: what the descriptor records; an
// image of ABI 2 or 3 cannot say.
func (k *kernel) Params() ([]plugin.Param, bool) { return k.params, k.paramsKnown }

func (k *kernel) group() bool { return k.desc.kind == C.OL_HOST_KERNEL_GROUP }

// MaxGroupSize implements plugin.Kernel: enough work-items per group to
// amortise the group's overhead. Group kernels switch stacks at barriers,
// so they get smaller groups.
func (k *kernel) MaxGroupSize(dynShared uint64) (uint64, error) {
	if dynShared > LocalMemBytes {
		return 0, ol.Errorf(ol.ErrcInvalidSize, "SharedMemory %d exceeds the host device's %d bytes of group-local memory", dynShared, LocalMemBytes)
	}
	if k.group() {
		return 64, nil
	}
	return 256, nil
}

// A phased kernel keeps OL_PRIVATE values in arrays of OL_HOST_MAX_GROUP
// (kernel.h): the device's group limit must not exceed it (this does not
// compile when the two differ).
const _ = uint(MaxGroupSize-C.OL_HOST_MAX_GROUP) + uint(C.OL_HOST_MAX_GROUP-MaxGroupSize)

// checkLaunch enforces the limits the device reports.
func (d *Device) checkLaunch(k *kernel, args []byte, s plugin.LaunchSize) error {
	ng, gs := s.NumGroups, s.GroupSize
	for i, v := range []uint32{ng.X, ng.Y, ng.Z} {
		if v == 0 {
			return ol.Errorf(ol.ErrcInvalidSize, "NumGroups.%c is 0: every dimension needs at least one group", "xyz"[i])
		}
	}
	for i, v := range []uint32{gs.X, gs.Y, gs.Z} {
		if v == 0 {
			return ol.Errorf(ol.ErrcInvalidSize, "GroupSize.%c is 0: every dimension needs at least one work-item", "xyz"[i])
		}
	}
	if gs.X > MaxGroupSize || gs.Y > MaxGroupSize || gs.Z > MaxGroupDimZ {
		return ol.Errorf(ol.ErrcInvalidSize, "GroupSize %dx%dx%d exceeds the host device's per-dimension maximum %dx%dx%d",
			gs.X, gs.Y, gs.Z, MaxGroupSize, MaxGroupSize, MaxGroupDimZ)
	}
	if n := uint64(gs.X) * uint64(gs.Y) * uint64(gs.Z); n > MaxGroupSize {
		return ol.Errorf(ol.ErrcInvalidSize, "GroupSize %dx%dx%d is %d work-items, more than the host device's maximum of %d",
			gs.X, gs.Y, gs.Z, n, MaxGroupSize)
	}
	for i, p := range [][2]uint32{{ng.X, gs.X}, {ng.Y, gs.Y}, {ng.Z, gs.Z}} {
		if uint64(p[0])*uint64(p[1]) > maxU32 {
			return ol.Errorf(ol.ErrcInvalidSize, "dimension %c has %d groups of %d work-items, more than the maximum of %d work-items",
				"xyz"[i], p[0], p[1], uint64(maxU32))
		}
	}
	// The total is counted without wrapping: each dimension fits 32 bits,
	// so x*y fits 64 and only the last product can overflow.
	x, y, z := uint64(ng.X)*uint64(gs.X), uint64(ng.Y)*uint64(gs.Y), uint64(ng.Z)*uint64(gs.Z)
	if hi, lo := bits.Mul64(x*y, z); hi != 0 || lo > maxU32 {
		total := new(big.Int).Mul(new(big.Int).SetUint64(x*y), new(big.Int).SetUint64(z))
		return ol.Errorf(ol.ErrcInvalidSize, "the grid of %dx%dx%d groups of %dx%dx%d work-items has %s work-items in total, more than the host device's maximum of %d",
			ng.X, ng.Y, ng.Z, gs.X, gs.Y, gs.Z, total, uint64(maxU32))
	}
	if s.DynSharedMemory > LocalMemBytes {
		return ol.Errorf(ol.ErrcInvalidSize, "DynSharedMemory %d exceeds the host device's %d bytes of group-local memory",
			s.DynSharedMemory, LocalMemBytes)
	}
	if need := uint64(k.desc.args_size); uint64(len(args)) < need {
		return ol.Errorf(ol.ErrcInvalidArgument, "kernel %q takes %d bytes of arguments, but ArgumentsSize is %d", k.name, need, len(args))
	}
	return nil
}

// runKernel runs the whole grid on the calling thread (q's executor),
// with the device's kernel workers taking chunks of groups alongside when
// the grid has more than one group. The launch's state is q's kernelJob:
// nothing is allocated per launch, per chunk or per group.
func (d *Device) runKernel(q *queue, k *kernel, args []byte, s plugin.LaunchSize) error {
	j := &q.job
	j.k = k
	defer func() { j.k, j.argp = nil, nil }() // keep nothing alive, even after a panic
	j.argp = nil
	if len(args) > 0 {
		j.argp = unsafe.Pointer(&args[0])
	}
	j.ng = [3]C.uint32_t{C.uint32_t(s.NumGroups.X), C.uint32_t(s.NumGroups.Y), C.uint32_t(s.NumGroups.Z)}
	j.gs = [3]C.uint32_t{C.uint32_t(s.GroupSize.X), C.uint32_t(s.GroupSize.Y), C.uint32_t(s.GroupSize.Z)}
	j.dyn = C.size_t(s.DynSharedMemory)
	j.total = uint64(s.NumGroups.X) * uint64(s.NumGroups.Y) * uint64(s.NumGroups.Z)
	if k.group() {
		return d.runGroupJob(j)
	}
	return d.runJob(j, nil)
}

// MaxCooperativeGroups is the most groups of a cooperative launch: each
// group gets a thread of its own for the launch (its waits at the grid
// barrier block, so threads beyond the cores cost memory, not CPU): eight
// per core, at least 64 and at most 1024.
func MaxCooperativeGroups() uint32 {
	return uint32(min(max(8*runtime.NumCPU(), 64), 1024))
}

// MaxCooperativeGroups implements plugin.CooperativeKernel. The limit is
// the device's thread budget, the same for every group size the device
// takes.
func (k *kernel) MaxCooperativeGroups(gs ol.Dimensions, dynShared uint64) (uint32, error) {
	if dynShared > LocalMemBytes {
		return 0, ol.Errorf(ol.ErrcInvalidSize, "SharedMemory %d exceeds the host device's %d bytes of group-local memory", dynShared, LocalMemBytes)
	}
	if n := uint64(gs.X) * uint64(gs.Y) * uint64(gs.Z); n == 0 || n > MaxGroupSize {
		return 0, ol.Errorf(ol.ErrcInvalidSize, "GroupSize %dx%dx%d is %d work-items; the host device takes 1 to %d", gs.X, gs.Y, gs.Z, n, MaxGroupSize)
	}
	return MaxCooperativeGroups(), nil
}

// runCooperative runs a cooperative launch on the calling thread (q's
// executor), which waits while one thread per group runs the grid.
func (d *Device) runCooperative(k *kernel, args []byte, s plugin.LaunchSize) error {
	var argp unsafe.Pointer
	if len(args) > 0 {
		argp = unsafe.Pointer(&args[0])
	}
	ng := [3]C.uint32_t{C.uint32_t(s.NumGroups.X), C.uint32_t(s.NumGroups.Y), C.uint32_t(s.NumGroups.Z)}
	gs := [3]C.uint32_t{C.uint32_t(s.GroupSize.X), C.uint32_t(s.GroupSize.Y), C.uint32_t(s.GroupSize.Z)}
	if msg := C.ol_host_exec_coop(k.desc, argp, &ng[0], &gs[0], C.size_t(s.DynSharedMemory)); msg != nil {
		return execError(k.name, msg)
	}
	return nil
}

// execError is the error of a failed run of kernel name: a grid barrier
// outside a cooperative launch is the caller's mistake, anything else a
// resource the device could not have.
func execError(name string, msg *C.char) error {
	if C.ol_host_is_grid_misuse(msg) != 0 {
		return ol.Errorf(ol.ErrcInvalidArgument, "kernel %q: %s", name, C.GoString(msg))
	}
	return ol.Errorf(ol.ErrcOutOfResources, "kernel %q: %s", name, C.GoString(msg))
}

// Copies of at least plugin.ParallelHostCopy bytes whose ranges do not
// overlap are split into copyBlock-byte blocks that the kernel workers
// copy alongside the queue's executor: one core rarely moves as many bytes
// per second as the memory system can (docs/benchmarks.md, the olMemcpy
// rows).
const copyBlock = 1 << 20

// copy copies size bytes from src to dst (memmove semantics) on q's
// executor, with the kernel workers for a large copy.
func (d *Device) copy(q *queue, dst, src uintptr, size uint64) error {
	if size < plugin.ParallelHostCopy || d.pool.maxHelpers == 0 || (dst < src+uintptr(size) && src < dst+uintptr(size)) {
		C.memmove(ptr(dst), ptr(src), C.size_t(size))
		return nil
	}
	j := &q.job
	j.copyDst, j.copySrc, j.copySize = dst, src, size
	j.total = (size + copyBlock - 1) / copyBlock
	err := d.runJob(j, nil)
	j.copyDst, j.copySrc, j.copySize = 0, 0, 0
	return err
}

// runGroupJob runs a group kernel's job with a fiber pool of the device.
func (d *Device) runGroupJob(j *kernelJob) error {
	fp := d.takePool()
	defer d.givePool(fp)
	return d.runJob(j, fp)
}

// runJob runs j's groups here, offering chunks to the kernel workers when
// there is more than one group.
func (d *Device) runJob(j *kernelJob, fp *C.ol_fiber_pool) (err error) {
	workers := min(uint64(d.pool.maxHelpers)+1, j.total)
	if workers <= 1 {
		return j.runAll(fp)
	}
	j.reset(workers)
	d.pool.post(j)
	defer func() {
		// also after a panic here: no worker may be left inside the job
		if werr := d.pool.finish(j); err == nil {
			err = werr
		}
	}()
	return j.chunks(fp) // a failure has stopped the job (ctl.failed)
}

func (d *Device) takePool() *C.ol_fiber_pool {
	d.mu.Lock()
	defer d.mu.Unlock()
	fault.Point()
	if n := len(d.pools); n > 0 {
		p := d.pools[n-1]
		d.pools = d.pools[:n-1]
		return p
	}
	return C.ol_fiber_pool_new()
}

func (d *Device) givePool(p *C.ol_fiber_pool) {
	if p == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	fault.Point()
	d.pools = append(d.pools, p)
}

var (
	_ plugin.CooperativeKernel = (*kernel)(nil)
	_ plugin.CooperativeQueue  = (*queue)(nil)
)
