package amdgpu

/*
#include <stdlib.h>
#include <string.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/cmem"
	"github.com/liboffload-go/liboffload-go/plugins/image"
	"github.com/liboffload-go/liboffload-go/plugins/internal/gpu"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// hsa_executable_symbol_info_t values and symbol kinds
const (
	symInfoType               = 0  // hsa_symbol_kind_t
	symInfoVariableSize       = 9  // uint32_t
	symInfoKernargSize        = 11 // uint32_t
	symInfoKernargAlignment   = 12 // uint32_t
	symInfoGroupSegmentSize   = 13 // uint32_t
	symInfoPrivateSegmentSize = 14 // uint32_t
	symInfoVariableAddress    = 21 // uint64_t
	symInfoKernelObject       = 22 // uint64_t

	symbolVariable = 0
	symbolKernel   = 1

	statusInvalidSymbolName = 0x1013

	// dynamicStackSize is the private segment (bytes per work-item) a
	// dispatch of a kernel with a dynamic call stack gets (the metadata's
	// .uses_dynamic_stack; the kernels that run constructors always have
	// one): LLVM 22.1's AMDGPU plugin gives such kernels its default stack
	// size, 16 KiB.
	dynamicStackSize = 16 << 10
)

// LoadProgram implements plugin.Device: the code object goes through a
// code-object reader into an executable of its own, loaded for the agent
// and frozen; then its constructors run (see ctors.go).
func (d *Device) LoadProgram(img []byte) (plugin.Program, error) {
	if len(img) == 0 {
		return nil, ol.NewError(ol.ErrcInvalidBinary, "amdgpu: the image is empty")
	}
	p := d.p
	buf, err := cmem.Malloc(uint64(len(img)), "amdgpu: the staging copy of an image")
	if err != nil {
		return nil, err
	}
	defer cmem.Free(buf)
	copy(unsafe.Slice((*byte)(buf), len(img)), img)
	what := image.Classify(img).Phrase()
	fail := func(call string, st C.uint32_t) error {
		return ol.Errorf(errcOf(uint32(st)), "amdgpu: %s of %s for %s failed: %s", call, what, d.name(), p.drv.describe(uint32(st)))
	}
	r := C.lgo_hsa_reader_create(p.run, buf, C.size_t(len(img)))
	if r.st != hsaStatusSuccess {
		return nil, fail("hsa_code_object_reader_create_from_memory", r.st)
	}
	reader := r.v
	defer C.lgo_hsa_reader_destroy(p.run, reader)
	r = C.lgo_hsa_executable_create(p.run, C.uint32_t(d.profile))
	if r.st != hsaStatusSuccess {
		return nil, fail("hsa_executable_create_alt", r.st)
	}
	exe := r.v
	if st := C.lgo_hsa_executable_load(p.run, exe, C.uint64_t(d.agent), reader); st != hsaStatusSuccess {
		_ = C.lgo_hsa_executable_destroy(p.run, exe)
		return nil, fail("hsa_executable_load_agent_code_object", st)
	}
	if st := C.lgo_hsa_executable_freeze(p.run, exe); st != hsaStatusSuccess {
		_ = C.lgo_hsa_executable_destroy(p.run, exe)
		return nil, fail("hsa_executable_freeze", st)
	}
	prog := &Program{d: d, exe: uint64(exe), queues: map[*hwQueue]bool{}, meta: parseKernelMeta(img)}
	if err := prog.runCtors(true); err != nil {
		_ = C.lgo_hsa_executable_destroy(p.run, exe)
		return nil, err
	}
	return prog, nil
}

// Program is an executable holding one code object. It remembers the HSA
// queues its kernels were launched on, so that unloading waits for them
// instead of pulling the code from under a queued launch.
type Program struct {
	d   *Device
	exe uint64

	// meta is the code object's kernel metadata, by kernel name (nil
	// when it has none the plugin can read)
	meta map[string]kernelMeta

	mu       sync.Mutex
	queues   map[*hwQueue]bool // bounded by the device's HSA queues
	unloaded bool
}

// symbol finds a symbol of the executable and checks its kind.
func (p *Program) symbol(name string, kind uint32, what string) (uint64, error) {
	d := p.d
	r := C.lgo_hsa_symbol(d.p.run, C.uint64_t(p.exe), (*C.char)(cmem.CName(name)), C.uint64_t(d.agent))
	if r.st == statusInvalidSymbolName {
		return 0, ol.Errorf(ol.ErrcNotFound, "the program has no %s named %q", what, trimKD(name))
	}
	if r.st != hsaStatusSuccess {
		return 0, d.p.drv.failure(fmt.Sprintf("hsa_executable_get_symbol_by_name(%q)", name), uint32(r.st))
	}
	var k uint32
	if err := p.info(uint64(r.v), symInfoType, unsafe.Pointer(&k)); err != nil {
		return 0, err
	}
	if k != kind {
		return 0, ol.Errorf(ol.ErrcSymbolKind, "symbol %q of the program is not a %s", trimKD(name), what)
	}
	return uint64(r.v), nil
}

func trimKD(name string) string {
	if len(name) > 3 && name[len(name)-3:] == ".kd" {
		return name[:len(name)-3]
	}
	return name
}

func (p *Program) info(sym uint64, attr uint32, v unsafe.Pointer) error {
	return p.d.call(fmt.Sprintf("hsa_executable_symbol_get_info(%d)", attr), C.lgo_hsa_symbol_info(p.d.p.run, C.uint64_t(sym), C.uint32_t(attr), v))
}

// Kernel implements plugin.Program: the kernel descriptor symbol
// "<name>.kd" and what the dispatch needs of it.
func (p *Program) Kernel(name string) (plugin.Kernel, error) {
	sym, err := p.symbol(name+".kd", symbolKernel, "kernel")
	if err != nil {
		return nil, err
	}
	var object uint64
	var kernargSize, kernargAlign, group, private uint32
	for _, f := range []struct {
		attr uint32
		v    unsafe.Pointer
	}{
		{symInfoKernelObject, unsafe.Pointer(&object)},
		{symInfoKernargSize, unsafe.Pointer(&kernargSize)},
		{symInfoKernargAlignment, unsafe.Pointer(&kernargAlign)},
		{symInfoGroupSegmentSize, unsafe.Pointer(&group)},
		{symInfoPrivateSegmentSize, unsafe.Pointer(&private)},
	} {
		if err := p.info(sym, f.attr, f.v); err != nil {
			return nil, err
		}
	}
	k := &Kernel{p: p, name: name, object: object, kernargSize: kernargSize, kernargAlign: kernargAlign, argsSize: -1,
		groupSize: group, privateSize: private, implicitOff: implicitOffset(uint64(kernargSize)), maxGroup: p.d.info.MaxWorkGroupSize.V, suggest: p.d.info.MaxWorkGroupSize.V}
	if m, ok := p.meta[name]; ok {
		// the metadata says where the implicit arguments are, if any, and
		// how many bytes of arguments the kernel reads
		k.argsSize = int64(m.argsSize)
		k.implicitOff = m.implicitBase
		if k.implicitOff > int64(kernargSize) {
			k.implicitOff = -1
		}
		if m.maxFlatGroupSize > 0 {
			k.maxGroup = min(k.maxGroup, m.maxFlatGroupSize)
		}
		k.suggest = k.maxGroup
		if m.dynamicStack {
			k.privateSize = max(k.privateSize, dynamicStackSize)
		}
		if lim := regGroupLimit(p.d.info.Name.V, m.vgprs, m.agprs, m.wave); lim > 0 {
			k.suggest = min(k.suggest, lim)
			k.cuItems, k.wave = lim, waveSize(p.d.info.Name.V, m.wave)
		}
	}
	if err := k.newFast(); err != nil {
		return nil, err
	}
	return k, nil
}

// newFast makes the kernel's C view (lgo_hsa_fastk): what launch checks.
func (k *Kernel) newFast() error {
	d := k.p.d
	mem, err := cmem.Calloc(C.sizeof_lgo_hsa_fastk, "amdgpu: a kernel's launch record")
	if err != nil {
		return err
	}
	f := (*C.lgo_hsa_fastk)(mem)
	f.object, f.seg, f.private_size, f.group_size = C.uint64_t(k.object), C.uint32_t(k.kernargSize), C.uint32_t(k.privateSize), C.uint32_t(k.groupSize)
	f.max_group, f.implicit_off, f.args_size = C.uint32_t(k.maxGroup), C.int64_t(k.implicitOff), C.int64_t(k.argsSize)
	gm, wm := d.info.MaxWorkGroupSizePerDimension.V, d.info.MaxWorkSizePerDimension.V
	f.group_max = [3]C.uint32_t{C.uint32_t(gm.X), C.uint32_t(gm.Y), C.uint32_t(gm.Z)}
	f.grid_max = [3]C.uint32_t{C.uint32_t(wm.X), C.uint32_t(wm.Y), C.uint32_t(wm.Z)}
	f.total_max, f.lds_limit = C.uint64_t(d.info.MaxWorkSize.V), C.uint64_t(d.info.WorkGroupLocalMemSize.V)
	k.fast = f
	runtime.AddCleanup(k, cmem.Free, unsafe.Pointer(f))
	return nil
}

// Fast implements plugin.FastKernel.
func (k *Kernel) Fast() unsafe.Pointer { return unsafe.Pointer(k.fast) }

// Global implements plugin.Program: the variable's address and size.
func (p *Program) Global(name string) (uintptr, uint64, error) {
	sym, err := p.symbol(name, symbolVariable, "global variable")
	if err != nil {
		return 0, 0, err
	}
	var addr uint64
	var size uint32
	if err := p.info(sym, symInfoVariableAddress, unsafe.Pointer(&addr)); err != nil {
		return 0, 0, err
	}
	if err := p.info(sym, symInfoVariableSize, unsafe.Pointer(&size)); err != nil {
		return 0, 0, err
	}
	return uintptr(addr), uint64(size), nil
}

// Unload implements plugin.Program: the destructors (see ctors.go), then
// hsa_executable_destroy, at once when no queue that launched its kernels
// has work left, else once that work is done (Deinit waits).
func (p *Program) Unload() error {
	p.mu.Lock()
	if p.unloaded {
		p.mu.Unlock()
		return nil
	}
	p.unloaded = true
	type pending struct {
		h *hwQueue
		s *signal
	}
	var busy []pending
	for h := range p.queues {
		h.lock()
		h.reclaim()
		if s := h.last; s != nil {
			s.refs.Add(1)
			busy = append(busy, pending{h, s})
		}
		h.unlock()
	}
	p.queues = nil
	p.mu.Unlock()
	d := p.d
	destroy := func() error {
		err := p.runCtors(false) // the destructors, once the launches are done
		if derr := d.call("hsa_executable_destroy", C.lgo_hsa_executable_destroy(d.p.run, C.uint64_t(p.exe))); err == nil {
			err = derr
		}
		return err
	}
	if len(busy) == 0 {
		return destroy()
	}
	d.p.unloads.Add(1)
	go func() {
		defer d.p.unloads.Done()
		for _, b := range busy {
			_ = b.h.wait(b.s, drainTimeout)
			b.s.release()
		}
		_ = destroy()
	}()
	return nil
}

// Kernel is a kernel of a loaded executable.
type Kernel struct {
	p                         *Program
	name                      string
	object                    uint64
	kernargSize, kernargAlign uint32
	groupSize, privateSize    uint32
	// implicitOff is where the implicit arguments start in the kernarg
	// segment (-1: none); maxGroup the largest work-group it can run.
	implicitOff int64
	maxGroup    uint32
	// suggest is the group size olCalculateOptimalOccupancy gives: maxGroup,
	// or less when the waves of so large a group would not all fit on one
	// compute unit for the vector registers the kernel uses (metadata).
	suggest uint32
	// argsSize is the bytes of explicit arguments the kernel reads (its
	// metadata's arguments), or -1 when the code object has no metadata.
	argsSize int64
	// cuItems is how many of its work-items a compute unit holds at once
	// for its vector registers (regGroupLimit; 0: not known), wave its
	// wavefront size
	cuItems, wave uint32
	fast          *C.lgo_hsa_fastk
}

// MaxGroupSize implements plugin.Kernel: the largest work-group the
// kernel was compiled for (its metadata's .max_flat_workgroup_size) and
// the agent allows, and whose waves fit on one compute unit together for
// the vector registers the kernel uses (see regGroupLimit), once the
// kernel's group memory and the dynamic group memory fit in the agent's.
func (k *Kernel) MaxGroupSize(dynShared uint64) (uint64, error) {
	d := k.p.d
	if err := d.checkGroupMemory(k, dynShared); err != nil {
		return 0, err
	}
	return uint64(k.suggest), nil
}

func (d *Device) checkGroupMemory(k *Kernel, dyn uint64) error {
	limit := d.info.WorkGroupLocalMemSize.V
	if total := uint64(k.groupSize) + dyn; total > limit || total > math.MaxUint32 {
		return ol.Errorf(ol.ErrcInvalidSize, "DynSharedMemory %d and the %d bytes of group memory of kernel %q exceed the %d bytes of group memory a work-group of %s can have",
			dyn, k.groupSize, k.name, limit, d.name())
	}
	return nil
}

// checkLaunch refuses a grid the device cannot run, with the value named.
// The grid is limited in work-items, per dimension and in total (the
// agent's GRID_MAX_SIZE, reported as MAX_WORK_SIZE): a dispatch packet
// counts each dimension in 32 bits.
func (d *Device) checkLaunch(k *Kernel, s plugin.LaunchSize) error {
	gm, wm := d.info.MaxWorkGroupSizePerDimension.V, d.info.MaxWorkSizePerDimension.V
	l := gpu.Limits{Group: [3]uint32{gm.X, gm.Y, gm.Z}, Grid: [3]uint32{wm.X, wm.Y, wm.Z}, GridInItems: true,
		Total: uint64(d.info.MaxWorkSize.V), KernelGroup: k.maxGroup}
	if err := gpu.CheckLaunch(s, l, k.name, d.name); err != nil {
		return err
	}
	return d.checkGroupMemory(k, s.DynSharedMemory)
}

// Launch implements plugin.Queue: a kernel dispatch packet whose kernarg
// segment holds the argument bytes and the implicit arguments (see
// writeKernarg), behind a barrier-AND packet when the work before it was
// not on the HSA queue.
func (q *Queue) Launch(pk plugin.Kernel, args []byte, s plugin.LaunchSize) error {
	k, ok := pk.(*Kernel)
	if !ok || k.p.d != q.d {
		return ol.NewError(ol.ErrcInvalidDevice, "amdgpu: the kernel is not of the queue's device")
	}
	return q.launch(k, args, s, true, false)
}

// coopTag marks the dispatch packet of a cooperative launch (its reserved2
// field, "OLCOOP" in ASCII). The packet processor ignores the field: a
// grid that fits on the GPU at once runs with all its groups resident
// anyway. The HSA runtime double reads it to run every group at once.
const coopTag = 0x504f4f434c4f

// Groups of one kernel a compute unit holds at once at most (the
// work-group slots of a CU; conservative for every gfx), and its group
// memory (LDS) in bytes.
const (
	cuMaxGroups = 16
	cuLDSBytes  = 64 << 10
)

// MaxCooperativeGroups implements plugin.CooperativeKernel: the groups the
// GPU holds at once, compute units times the groups of this size one CU
// holds for its wave slots, the vector registers the kernel uses (the
// metadata; see regGroupLimit), its group memory and at most cuMaxGroups.
// ROCr has no cooperative dispatch: such a grid is an ordinary dispatch
// whose groups all fit.
func (k *Kernel) MaxCooperativeGroups(gs ol.Dimensions, dynShared uint64) (uint32, error) {
	d := k.p.d
	items := uint64(gs.X) * uint64(gs.Y) * uint64(gs.Z)
	if items == 0 || items > uint64(k.maxGroup) {
		return 0, ol.Errorf(ol.ErrcInvalidSize, "GroupSize %dx%dx%d is %d work-items; kernel %q takes 1 to %d on %s", gs.X, gs.Y, gs.Z, items, k.name, k.maxGroup, d.name())
	}
	if err := d.checkGroupMemory(k, dynShared); err != nil {
		return 0, err
	}
	perCU := uint64(cuMaxGroups)
	if k.cuItems > 0 {
		// whole waves: a group of 65 work-items takes two wave64 slots
		waves := (items + uint64(k.wave) - 1) / uint64(k.wave)
		perCU = min(perCU, uint64(k.cuItems)/uint64(k.wave)/waves)
	} else {
		perCU = 1 // a gfx the plugin knows nothing of: one group per CU
	}
	if lds := uint64(k.groupSize) + dynShared; lds > 0 {
		perCU = min(perCU, cuLDSBytes/lds)
	}
	return uint32(min(max(perCU, 1)*uint64(d.info.NumComputeUnits.V), uint64(^uint32(0)))), nil
}

// LaunchCooperative implements plugin.CooperativeQueue: an ordinary
// dispatch (tagged, see coopTag) of a grid no larger than
// MaxCooperativeGroups; a larger one is refused naming both numbers.
func (q *Queue) LaunchCooperative(pk plugin.Kernel, args []byte, s plugin.LaunchSize) error {
	k, ok := pk.(*Kernel)
	if !ok || k.p.d != q.d {
		return ol.NewError(ol.ErrcInvalidDevice, "amdgpu: the kernel is not of the queue's device")
	}
	if err := q.d.checkLaunch(k, s); err != nil {
		return err
	}
	most, err := k.MaxCooperativeGroups(s.GroupSize, s.DynSharedMemory)
	if err != nil {
		return err
	}
	if n := uint64(s.NumGroups.X) * uint64(s.NumGroups.Y) * uint64(s.NumGroups.Z); n > uint64(most) {
		return ol.Errorf(ol.ErrcInvalidArgument, "a cooperative launch of kernel %q has %d groups, more than the %d %s holds at once",
			k.name, n, most, q.d.name())
	}
	return q.launch(k, args, s, true, true)
}

// launch dispatches k; track records the queue with k's program, refused
// once the program is unloaded (the plugin's own launches of the
// constructor kernels, which wait for themselves, do not track). coop
// tags the packet as a cooperative launch's.
func (q *Queue) launch(k *Kernel, args []byte, s plugin.LaunchSize, track, coop bool) error {
	d := q.d
	if err := d.checkLaunch(k, s); err != nil {
		return err
	}
	var tag uint64
	if coop {
		tag = coopTag
	}
	// a short buffer would leave arguments zero (pointers NULL); bytes
	// past the arguments are ignored, as on the other devices
	if k.argsSize >= 0 && int64(len(args)) < k.argsSize {
		return ol.Errorf(ol.ErrcInvalidArgument, "kernel %q takes %d bytes of arguments, but ArgumentsSize is %d", k.name, k.argsSize, len(args))
	}
	h := q.hw
	if prog := k.p; track {
		prog.mu.Lock()
		if prog.unloaded {
			prog.mu.Unlock()
			return ol.Errorf(ol.ErrcInvalidArgument, "the program of kernel %q was destroyed", k.name)
		}
		if !prog.queues[h] {
			prog.queues[h] = true
		}
		// (its C view: C launches of k on h need no registration)
		if last := (*uint64)(unsafe.Pointer(&k.fast.last_hw)); atomic.LoadUint64(last) != uint64(h.id) {
			atomic.StoreUint64(last, uint64(h.id))
		}
		prog.mu.Unlock()
	}
	seg := uint64(k.kernargSize)
	q.ops.Add(1)
	defer q.handed.Add(1)
	karg, class, err := d.p.kernargs.get(max(seg, 16))
	if err != nil {
		return err
	}
	dims := gridDims(s)
	writeKernarg(bytesAt(karg, max(seg, 16)), seg, k.implicitOff, args, s, dims)
	sig, err := h.begin(false)
	if err != nil {
		d.p.kernargs.put(karg, class)
		return err
	}
	run := d.p.run
	if h.last != nil && !h.lastInRing {
		C.lgo_hsa_barrier(run, C.uintptr_t(h.q), h.dep(), 0, 0)
	}
	C.lgo_hsa_dispatch(run, C.uintptr_t(h.q), C.uint16_t(dims),
		C.uint16_t(s.GroupSize.X), C.uint16_t(s.GroupSize.Y), C.uint16_t(s.GroupSize.Z),
		C.uint32_t(s.NumGroups.X*s.GroupSize.X), C.uint32_t(s.NumGroups.Y*s.GroupSize.Y), C.uint32_t(s.NumGroups.Z*s.GroupSize.Z),
		C.uint32_t(k.privateSize), C.uint32_t(uint64(k.groupSize)+s.DynSharedMemory),
		C.uint64_t(k.object), C.uintptr_t(karg), C.uint64_t(tag), C.uint64_t(sig.h), true)
	h.commit(entry{sig: sig, karg: karg, kclass: class}, true)
	return nil
}

var (
	_ plugin.CooperativeKernel = (*Kernel)(nil)
	_ plugin.CooperativeQueue  = (*Queue)(nil)
)
