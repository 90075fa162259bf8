package cuda

/*
#include <stdlib.h>
#include <string.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/cmem"
	"github.com/liboffload-go/liboffload-go/plugins/image"
	"github.com/liboffload-go/liboffload-go/plugins/internal/gpu"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// CUresult values of a module load that mean the image is at fault.
var imageErrors = map[int32]bool{
	200: true, // CUDA_ERROR_INVALID_IMAGE
	209: true, // CUDA_ERROR_NO_BINARY_FOR_GPU
	218: true, // CUDA_ERROR_INVALID_PTX
	222: true, // CUDA_ERROR_UNSUPPORTED_PTX_VERSION
	300: true, // CUDA_ERROR_INVALID_SOURCE
}

const (
	cudaErrorNotFound = 500
	jitLogSize        = 8 << 10
	// CUfunction_attribute
	funcMaxThreadsPerBlock        = 0
	funcMaxDynamicSharedSizeBytes = 8
)

// LoadProgram implements plugin.Device: cuModuleLoadDataEx on a copy of
// the image in C memory (PTX text gets its NUL), with the JIT's error log
// in the Details of a refused image. The driver takes no size, so an image
// whose headers point past its end is refused first (image.CheckCUDA).
// The image's global constructors then run on the device (the driver runs
// none; see ctors.go).
func (d *Device) LoadProgram(img []byte) (plugin.Program, error) {
	if len(img) == 0 {
		return nil, ol.NewError(ol.ErrcInvalidBinary, "cuda: the image is empty")
	}
	if err := image.CheckCUDA(img); err != nil {
		return nil, ol.Errorf(ol.ErrcInvalidBinary, "cuda: the image is %s, damaged: %v", image.Classify(img).Phrase(), err)
	}
	buf, err := cmem.Malloc(uint64(len(img))+1+2*jitLogSize, "cuda: the staging copy of an image")
	if err != nil {
		return nil, err
	}
	defer cmem.Free(buf)
	b := unsafe.Slice((*byte)(buf), len(img)+1+2*jitLogSize)
	copy(b, img)
	b[len(img)] = 0
	errLog, infoLog := b[len(img)+1:len(img)+1+jitLogSize], b[len(img)+1+jitLogSize:]
	errLog[0], infoLog[0] = 0, 0
	var mod C.uintptr_t
	r := int32(C.lgo_cu_module_load(d.drv.run, d.ctx, &mod, buf,
		(*C.char)(unsafe.Pointer(&errLog[0])), jitLogSize, (*C.char)(unsafe.Pointer(&infoLog[0])), jitLogSize))
	if r != cudaSuccess {
		what := image.Classify(img).Phrase()
		log := strings.TrimSpace(cString(errLog))
		if log != "" {
			log = "; JIT log: " + log
		}
		code := ol.ErrcBackendFailure
		if imageErrors[r] {
			code = ol.ErrcInvalidBinary
		}
		return nil, ol.Errorf(code, "cuda: cuModuleLoadDataEx of %s for %s failed: %s%s", what, d.info.Name.V, d.drv.describe(r), log)
	}
	prog := &Program{d: d, mod: mod, queues: map[C.uintptr_t]*Queue{}}
	prog.ctors, prog.dtors = ctorObjects(img)
	if err := prog.runCtors(true); err != nil {
		_ = C.lgo_cu_module_unload(d.drv.run, d.ctx, mod)
		return nil, err
	}
	return prog, nil
}

// IsValidBinary implements plugin.Device: an image of a kind the device
// loads whose headers lie inside it.
func (d *Device) IsValidBinary(img []byte) bool {
	return d.Images.IsValidBinary(img) && image.CheckCUDA(img) == nil
}

func cString(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

// Program is a loaded module. It remembers the streams its kernels were
// launched on, so that unloading waits for them instead of pulling the
// code from under a queued launch.
type Program struct {
	d   *Device
	mod C.uintptr_t

	mu sync.Mutex
	// queues: the latest queue that launched its kernels on each stream
	// (bounded by the device's streams, however many queues come and go)
	queues   map[C.uintptr_t]*Queue
	unloaded bool
	// the lowered constructors and destructors, in the order they run
	// (see ctors.go)
	ctors, dtors []string
}

func withName(name string, f func(*C.char) C.int) C.int {
	return f((*C.char)(cmem.CName(name)))
}

// Kernel implements plugin.Program.
func (p *Program) Kernel(name string) (plugin.Kernel, error) {
	d := p.d
	if name == "" {
		// the driver answers CUDA_ERROR_INVALID_VALUE for an empty name
		return nil, ol.NewError(ol.ErrcNotFound, "the program has no kernel with an empty name")
	}
	var fn C.uintptr_t
	r := withName(name, func(cs *C.char) C.int { return C.lgo_cu_module_get_function(d.drv.run, d.ctx, &fn, p.mod, cs) })
	if lookupMissed(r) {
		return nil, ol.Errorf(ol.ErrcNotFound, "the program has no kernel named %q", name)
	}
	if err := d.call(fmt.Sprintf("cuModuleGetFunction(%q)", name), r); err != nil {
		return nil, err
	}
	var maxThreads C.int
	if err := d.call("cuFuncGetAttribute(MAX_THREADS_PER_BLOCK)", C.lgo_cu_func_attribute(d.drv.run, d.ctx, &maxThreads, funcMaxThreadsPerBlock, fn)); err != nil {
		return nil, err
	}
	k := &Kernel{p: p, fn: fn, name: name, maxThreads: uint32(maxThreads)}
	if k.params, k.paramsKnown = d.readParams(fn); k.paramsKnown {
		for _, pa := range k.params {
			k.paramBytes = max(k.paramBytes, pa.Offset+pa.Size)
		}
	}
	if err := k.newFast(); err != nil {
		return nil, err
	}
	return k, nil
}

// lookupMissed reports whether a cuModuleGetFunction or cuModuleGetGlobal
// result means that the module has no symbol of that kind by the name (all
// of the call's other arguments being valid): CUDA_ERROR_NOT_FOUND, or
// CUDA_ERROR_INVALID_VALUE, which the driver gives for a global looked up
// by the name of a kernel (and for an empty name).
func lookupMissed(r C.int) bool { return r == cudaErrorNotFound || r == cudaErrorInvalidValue }

// Global implements plugin.Program: the global's device address and size.
func (p *Program) Global(name string) (uintptr, uint64, error) {
	d := p.d
	if name == "" {
		return 0, 0, ol.NewError(ol.ErrcNotFound, "the program has no global variable with an empty name")
	}
	var ptr C.uintptr_t
	var size C.size_t
	r := withName(name, func(cs *C.char) C.int {
		return C.lgo_cu_module_get_global(d.drv.run, d.ctx, &ptr, &size, p.mod, cs)
	})
	if lookupMissed(r) {
		return 0, 0, ol.Errorf(ol.ErrcNotFound, "the program has no global variable named %q", name)
	}
	if err := d.call(fmt.Sprintf("cuModuleGetGlobal(%q)", name), r); err != nil {
		return 0, 0, err
	}
	return uintptr(ptr), uint64(size), nil
}

// Unload implements plugin.Program: at once when no stream that launched
// its kernels has work left, else once they are done (Deinit waits).
func (p *Program) Unload() error {
	busy, first := func() ([]*Queue, bool) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.unloaded {
			return nil, false
		}
		p.unloaded = true
		var busy []*Queue
		for _, q := range p.queues {
			if !q.Empty() {
				busy = append(busy, q)
			}
		}
		return busy, true
	}()
	if !first {
		return nil
	}
	unload := func() error {
		err := p.runCtors(false) // the destructors, once the launches are done
		if uerr := p.d.call("cuModuleUnload", C.lgo_cu_module_unload(p.d.drv.run, p.d.ctx, p.mod)); err == nil {
			err = uerr
		}
		return err
	}
	if len(busy) == 0 {
		return unload()
	}
	p.d.unloads.Add(1)
	go func() {
		defer p.d.unloads.Done()
		for _, q := range busy {
			q.waitUnheld()
			_ = p.d.handleOp(opStreamSync, q.s)
		}
		_ = unload()
	}()
	return nil
}

// Kernel is a function of a loaded module.
type Kernel struct {
	p          *Program
	fn         C.uintptr_t
	name       string
	maxThreads uint32
	// params are the kernel's parameters (offset and size of each) and
	// paramBytes where they end (0: it has none), when the driver can say
	// (paramsKnown: cuFuncGetParamInfo, R550+)
	params      []plugin.Param
	paramBytes  uint64
	paramsKnown bool
	dynShared   atomic.Uint64 // the dynamic shared memory the function is allowed
	// fast is the kernel's C view (plugin.FastKernel), freed with the
	// kernel
	fast *C.lgo_cu_fastk
}

// Fast implements plugin.FastKernel.
func (k *Kernel) Fast() unsafe.Pointer { return unsafe.Pointer(k.fast) }

var _ plugin.FastKernel = (*Kernel)(nil)

// newFast makes the kernel's C view.
func (k *Kernel) newFast() error {
	d := k.p.d
	mem, err := cmem.Calloc(C.sizeof_lgo_cu_fastk, "cuda: a kernel's launch record")
	if err != nil {
		return err
	}
	f := (*C.lgo_cu_fastk)(mem)
	f.fn = k.fn
	f.param_bytes = C.uint64_t(k.paramBytes)
	if k.paramsKnown {
		f.params_known = 1
	}
	f.max_threads = C.uint32_t(k.maxThreads)
	for i := range 3 {
		f.block_max[i] = C.uint32_t(d.blockMax[i])
		f.grid_max[i] = C.uint32_t(d.gridMax[i])
	}
	f.shared_limit = C.uint64_t(min(d.info.WorkGroupLocalMemSize.V, uint64(^uint32(0))))
	k.fast = f
	runtime.AddCleanup(k, cmem.Free, unsafe.Pointer(f))
	return nil
}

// noteQueue tells the kernel's C view that its program knows q (C launches
// on other queues go through Go, which registers them).
func (k *Kernel) noteQueue(q *Queue) {
	last, qp := (*uintptr)(unsafe.Pointer(&k.fast.last_q)), uintptr(q.f.Ptr())
	if atomic.LoadUintptr(last) != qp {
		atomic.StoreUintptr(last, qp)
	}
}

// maxParamBytes is the most parameter bytes a CUDA kernel can take: an
// argument buffer is passed up to it when the driver cannot say the exact
// size (longer buffers are the caller's own business, as on the host).
const maxParamBytes = 32764

// MaxGroupSize implements plugin.Kernel: the block size the driver's
// occupancy calculator suggests.
func (k *Kernel) MaxGroupSize(dynShared uint64) (uint64, error) {
	d := k.p.d
	if limit := max(d.info.WorkGroupLocalMemSize.V, d.sharedOptIn); dynShared > limit {
		return 0, ol.Errorf(ol.ErrcInvalidSize, "SharedMemory %d exceeds the %d bytes of shared memory a block of %s can have", dynShared, limit, d.info.Name.V)
	}
	var minGrid, block C.int
	if err := d.call("cuOccupancyMaxPotentialBlockSize", C.lgo_cu_occupancy(d.drv.run, d.ctx, &minGrid, &block, k.fn, C.size_t(dynShared))); err != nil {
		return 0, err
	}
	return uint64(block), nil
}

// checkLaunch refuses a grid the device cannot run, with the value named.
// The grid is limited in blocks.
func (d *Device) checkLaunch(k *Kernel, s plugin.LaunchSize) error {
	l := gpu.Limits{Group: d.blockMax, Grid: d.gridMax, KernelGroup: k.maxThreads}
	if err := gpu.CheckLaunch(s, l, k.name, func() string { return d.info.Name.V }); err != nil {
		return err
	}
	if s.DynSharedMemory > uint64(^uint32(0)) {
		return ol.Errorf(ol.ErrcInvalidSize, "DynSharedMemory %d exceeds the shared memory of %s", s.DynSharedMemory, d.info.Name.V)
	}
	return nil
}

// Launch implements plugin.Queue: the argument buffer goes to the driver
// as it is (CU_LAUNCH_PARAM_BUFFER_POINTER).
func (q *Queue) Launch(pk plugin.Kernel, args []byte, s plugin.LaunchSize) error {
	return q.launch(pk, args, s, false)
}

// MaxCooperativeGroups implements plugin.CooperativeKernel: the blocks one
// multiprocessor holds at once (the driver's occupancy calculator, for the
// kernel's registers and shared memory) times the multiprocessors.
func (k *Kernel) MaxCooperativeGroups(gs ol.Dimensions, dynShared uint64) (uint32, error) {
	d := k.p.d
	if !d.info.CooperativeLaunchSupport.V {
		return 0, plugin.Unsupported("cuda", "cooperative launches on "+d.info.Name.V)
	}
	n := uint64(gs.X) * uint64(gs.Y) * uint64(gs.Z)
	if n == 0 || n > uint64(k.maxThreads) {
		return 0, ol.Errorf(ol.ErrcInvalidSize, "GroupSize %dx%dx%d is %d work-items; kernel %q takes 1 to %d on %s", gs.X, gs.Y, gs.Z, n, k.name, k.maxThreads, d.info.Name.V)
	}
	if limit := max(d.info.WorkGroupLocalMemSize.V, d.sharedOptIn); dynShared > limit {
		return 0, ol.Errorf(ol.ErrcInvalidSize, "SharedMemory %d exceeds the %d bytes of shared memory a block of %s can have", dynShared, limit, d.info.Name.V)
	}
	var blocks C.int
	if err := d.call("cuOccupancyMaxActiveBlocksPerMultiprocessor", C.lgo_cu_active_blocks(d.drv.run, d.ctx, &blocks, k.fn, C.int(n), C.size_t(dynShared))); err != nil {
		return 0, err
	}
	return uint32(min(uint64(max(blocks, 0))*uint64(d.sms), uint64(^uint32(0)))), nil
}

// LaunchCooperative implements plugin.CooperativeQueue through
// cuLaunchCooperativeKernel: a grid of more blocks than MaxCooperativeGroups
// is refused here, naming both numbers (the driver would refuse it with
// CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE).
func (q *Queue) LaunchCooperative(pk plugin.Kernel, args []byte, s plugin.LaunchSize) error {
	return q.launch(pk, args, s, true)
}

func (q *Queue) launch(pk plugin.Kernel, args []byte, s plugin.LaunchSize, coop bool) error {
	k, ok := pk.(*Kernel)
	if !ok || k.p.d != q.d {
		return ol.NewError(ol.ErrcInvalidDevice, "cuda: the kernel is not of the queue's device")
	}
	d := q.d
	if err := d.checkLaunch(k, s); err != nil {
		return err
	}
	if coop {
		most, err := k.MaxCooperativeGroups(s.GroupSize, s.DynSharedMemory)
		if err != nil {
			return err
		}
		if n := uint64(s.NumGroups.X) * uint64(s.NumGroups.Y) * uint64(s.NumGroups.Z); n > uint64(most) {
			return ol.Errorf(ol.ErrcInvalidArgument, "a cooperative launch of kernel %q has %d groups, more than the %d %s holds at once",
				k.name, n, most, d.info.Name.V)
		}
	}
	if s.DynSharedMemory > d.info.WorkGroupLocalMemSize.V && s.DynSharedMemory > k.dynShared.Load() {
		// above the default limit a function must be allowed more first
		if C.lgo_cu_func_set_attribute(d.drv.run, d.ctx, k.fn, funcMaxDynamicSharedSizeBytes, C.int(s.DynSharedMemory)) != cudaSuccess {
			return ol.Errorf(ol.ErrcInvalidSize, "DynSharedMemory %d exceeds what kernel %q can use on %s (%d bytes of shared memory per block, %d with opt-in)",
				s.DynSharedMemory, k.name, d.info.Name.V, d.info.WorkGroupLocalMemSize.V, d.sharedOptIn)
		}
		k.dynShared.Store(s.DynSharedMemory)
	}
	p := k.p
	if !p.noteQueue(q) {
		return ol.Errorf(ol.ErrcInvalidArgument, "the program of kernel %q was destroyed", k.name)
	}
	k.noteQueue(q)
	if k.paramsKnown {
		// exactly the parameters: the driver refuses a longer buffer for
		// a kernel without parameters (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
		// on R580), and extra argument bytes are to be ignored
		if uint64(len(args)) < k.paramBytes {
			return ol.Errorf(ol.ErrcInvalidArgument, "kernel %q takes %d bytes of arguments, but ArgumentsSize is %d", k.name, k.paramBytes, len(args))
		}
		args = args[:k.paramBytes]
	} else if len(args) > maxParamBytes {
		args = args[:maxParamBytes]
	}
	q.ops.Add(1)
	defer q.subs.Add(1)
	if q.isHeld() {
		// held back: the argument bytes are the caller's only during this call
		kept := append([]byte(nil), args...)
		if q.hold(deferred{submit: func() error { return q.launchNow(k, kept, s, coop) }}) {
			return nil
		}
	}
	return q.launchNow(k, args, s, coop)
}

func (q *Queue) launchNow(k *Kernel, args []byte, s plugin.LaunchSize, coop bool) error {
	var argp unsafe.Pointer
	if len(args) > 0 {
		argp = unsafe.Pointer(&args[0])
	}
	if coop {
		// the driver takes a pointer to each parameter: where the kernel's
		// parameters are known, at their offsets; else the buffer is one
		var offs unsafe.Pointer
		n := len(k.params)
		if n > 0 {
			offs = unsafe.Pointer(&k.params[0])
		} else if !k.paramsKnown && len(args) > 0 {
			n = -1
		}
		r := C.lgo_cu_launch_coop(q.d.drv.run, q.d.ctx, k.fn,
			C.uint32_t(s.NumGroups.X), C.uint32_t(s.NumGroups.Y), C.uint32_t(s.NumGroups.Z),
			C.uint32_t(s.GroupSize.X), C.uint32_t(s.GroupSize.Y), C.uint32_t(s.GroupSize.Z),
			C.uint32_t(s.DynSharedMemory), q.s, argp, C.size_t(len(args)), (*C.uint64_t)(offs), C.int(n))
		if r == cudaErrorCooperativeLaunchTooLarge {
			return ol.Errorf(ol.ErrcInvalidArgument, "cuLaunchCooperativeKernel(%q) of %d groups: %s", k.name,
				uint64(s.NumGroups.X)*uint64(s.NumGroups.Y)*uint64(s.NumGroups.Z), q.d.drv.describe(int32(r)))
		}
		if r != cudaSuccess {
			return q.d.call(fmt.Sprintf("cuLaunchCooperativeKernel(%q)", k.name), r)
		}
		return nil
	}
	r := C.lgo_cu_launch(q.d.drv.run, q.d.ctx, k.fn,
		C.uint32_t(s.NumGroups.X), C.uint32_t(s.NumGroups.Y), C.uint32_t(s.NumGroups.Z),
		C.uint32_t(s.GroupSize.X), C.uint32_t(s.GroupSize.Y), C.uint32_t(s.GroupSize.Z),
		C.uint32_t(s.DynSharedMemory), q.s, argp, C.size_t(len(args)))
	if r != cudaSuccess {
		return q.d.call(fmt.Sprintf("cuLaunchKernel(%q)", k.name), r)
	}
	return nil
}

var (
	_ plugin.CooperativeKernel = (*Kernel)(nil)
	_ plugin.CooperativeQueue  = (*Queue)(nil)
)

// noteQueue records that q launches the program's kernels; false: the
// program was destroyed.
func (p *Program) noteQueue(q *Queue) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.unloaded {
		return false
	}
	if p.queues[q.s] != q {
		p.queues[q.s] = q
	}
	return true
}
