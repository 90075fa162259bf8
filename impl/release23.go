package impl

// The calls LLVM 23.1 added or changed. The 23.1 library (built with the
// ol23 tag) exports them; the runtime behind them is the same for both
// releases, and a 22.1 call that 23.1 changed is the 23.1 call with its
// new parameters at their neutral values.

import (
	"fmt"
	"sync"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// olInit23 is the hand-written entry of 23.1's olInit (see OlInit23):
// InitArgs selects the platforms to start; the host platform always starts.
// They are read (and checked) at the first reference only, as in LLVM 23.1.
func olInit23(initArgs initArgsRef, params func(*traceBuf), loc *ol.CodeLocation) uintptr {
	return initLibrary(func(ps []plugin.Plugin) ([]plugin.Plugin, error) {
		args, err := initArgs.read()
		if err != nil || args == nil {
			return ps, err
		}
		return pickPlatforms(args, ps)
	}, params, loc)
}

// backendPlugins names the plugin of each backend.
var backendPlugins = map[ol.PlatformBackend]string{
	ol.PlatformBackendCuda:   "cuda",
	ol.PlatformBackendAmdgpu: "amdgpu",
	ol.PlatformBackendHost:   "host",
}

// pickPlatforms keeps the plugins olInit's arguments list (and the
// host's); the generated reader checked them. No platforms keeps them all.
func pickPlatforms(args *initArgsValue, ps []plugin.Plugin) ([]plugin.Plugin, error) {
	if len(args.Platforms) == 0 {
		return ps, nil
	}
	want := map[string]bool{"host": true}
	for _, b := range args.Platforms {
		want[backendPlugins[b]] = true // a backend without a plugin starts nothing
	}
	var out []plugin.Plugin
	for _, p := range ps {
		if want[p.Name()] {
			out = append(out, p)
		}
	}
	return out, nil
}

// olGetEventElapsedTime waits for both profiling events, then measures.
func (c *Context) olGetEventElapsedTime(start, end *Event) (float32, error) {
	for _, x := range []struct {
		e    *Event
		name string
	}{{start, "StartEvent"}, {end, "EndEvent"}} {
		if x.e.timed == nil {
			return 0, ol.Errorf(ol.ErrcInvalidArgument, "%s %#x was not created with OL_EVENT_FLAGS_ENABLE_PROFILING", x.name, x.e.h)
		}
	}
	if start.device.platform != end.device.platform {
		return 0, ol.Errorf(ol.ErrcInvalidArgument, "StartEvent %#x and EndEvent %#x are events of two platforms (%s, %s): their clocks differ", start.h, end.h, start.device.platform.name, end.device.platform.name)
	}
	for _, e := range []*Event{start, end} {
		if err := c.olSyncEvent(e); err != nil {
			return 0, err
		}
	}
	return end.timed.ElapsedSince(start.timed)
}

// olQueryQueue tells whether the queue has no outstanding work.
func (c *Context) olQueryQueue(q *Queue) (bool, error) { return q.q.Empty(), nil }

// olGetKernelMaxCooperativeGroupCount asks the device how many groups of
// the launch's group size it holds resident at once.
func (c *Context) olGetKernelMaxCooperativeGroupCount(dev *Device, k *Symbol, la *ol.KernelLaunchSizeArgs) (uint32, error) {
	if err := c.kernelOf(dev, k); err != nil {
		return 0, err
	}
	if err := k.program.use("olGetKernelMaxCooperativeGroupCount", k); err != nil {
		return 0, err
	}
	defer k.program.release()
	ck, ok := k.kernel.(plugin.CooperativeKernel)
	if !ok {
		return 0, ol.Errorf(ol.ErrcUnsupported, "device %s has no cooperative launch", dev.d.Info().Name.V)
	}
	return ck.MaxCooperativeGroups(la.GroupSize, la.DynSharedMemory)
}

// launchProps tells whether a launch's properties (read and checked by
// the generated listKernelLaunchProp) make it cooperative: the last
// IS_COOPERATIVE entry decides.
func launchProps(props []kernelLaunchPropValue) (cooperative bool) {
	for _, p := range props {
		if p.Type == ol.KernelLaunchPropTypeIsCooperative {
			cooperative = p.Bool
		}
	}
	return cooperative
}

// argBuffers recycles the argument buffers olLaunchKernel23 lays out.
var argBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// maxArgBlock bounds the buffer layOutArgs builds for several arguments
// (real parameter space is far smaller: CUDA's is 32764 bytes), so that
// parameters a device reports as huge cannot make the runtime allocate
// that much: without it the Go runtime ended the process ("fatal error:
// runtime: out of memory") instead of the call failing.
const maxArgBlock = 1 << 20

// layOutArgs writes the arguments into buf as the kernel reads them: at the
// offsets of its parameters, after checking their count and sizes. Where
// the device cannot say what the parameters are (a host image of ABI 2 or
// 3, a CUDA driver without cuFuncGetParamInfo, a code object without
// metadata), no layout of several arguments is known, and guessing one
// (C-struct packing, alignment from size) computed wrong results silently:
// such launches are refused. One argument is then the whole argument
// block, passed where it is, as 22.1's ArgumentsData is (inPlace: the
// result is the caller's memory, not buf; the plugin reads only what the
// kernel takes, so a size larger than that costs nothing; copying it
// could take more memory than there is), as is the one argument of a
// kernel with one parameter at offset 0; none is an empty block.
func layOutArgs(k *Symbol, ptrs [][]byte, sizes []uint64, buf []byte) (args []byte, inPlace bool, err error) {
	for i, p := range ptrs {
		if p == nil && sizes[i] > 0 {
			return nil, false, ol.Errorf(ol.ErrcInvalidNullPointer, "ArgPtrs[%d] is NULL but ArgSizes[%d] is %d", i, i, sizes[i])
		}
		if sizes[i] > maxUserRange {
			return nil, false, ol.Errorf(ol.ErrcInvalidSize, "ArgSizes[%d] is %d", i, sizes[i])
		}
	}
	var params []plugin.Param
	known := false
	if pk, ok := k.kernel.(plugin.ParamKernel); ok {
		params, known = pk.Params()
	}
	whole := func() ([]byte, bool, error) {
		if len(ptrs) == 0 || sizes[0] == 0 {
			return nil, true, nil
		}
		return ptrs[0], true, nil
	}
	if !known {
		if len(ptrs) > 1 {
			return nil, false, ol.Errorf(ol.ErrcInvalidArgument, "kernel %q: the device does not say where its parameters are (an image or driver that does not record them), so NumArgs %d cannot be laid out; pass the whole argument block as one argument", k.name, len(ptrs))
		}
		return whole()
	}
	if len(params) != len(ptrs) {
		return nil, false, ol.Errorf(ol.ErrcInvalidArgument, "kernel %q takes %d arguments; NumArgs is %d", k.name, len(params), len(ptrs))
	}
	var end uint64
	for i, p := range params {
		if p.Size != sizes[i] {
			return nil, false, ol.Errorf(ol.ErrcInvalidArgument, "ArgSizes[%d] is %d; argument %d of kernel %q is %d bytes", i, sizes[i], i, k.name, p.Size)
		}
		end = max(end, p.Offset+p.Size)
	}
	if len(params) == 1 && params[0].Offset == 0 {
		return whole() // the block already
	}
	if end > maxArgBlock {
		return nil, false, ol.Errorf(ol.ErrcInvalidSize, "the arguments of kernel %q take %d bytes, more than the %d a launch lays out", k.name, end, maxArgBlock)
	}
	if uint64(cap(buf)) < end {
		buf = make([]byte, end)
	}
	buf = buf[:end]
	clear(buf) // padding between parameters is zero, as a compiler's struct copy leaves it defined
	for i, p := range params {
		if sizes[i] > 0 {
			copy(buf[p.Offset:], ptrs[i])
		}
	}
	return buf, false, nil
}

// olLaunchKernel23 launches with the arguments one by one (ptrs[i] views
// the sizes[i] bytes of argument i) and a property list.
func (c *Context) olLaunchKernel23(q *Queue, dev *Device, k *Symbol, la *ol.KernelLaunchSizeArgs, props []kernelLaunchPropValue, ptrs [][]byte, sizes []uint64) error {
	if err := c.launchTarget(q, dev, k); err != nil {
		return err
	}
	cooperative := launchProps(props)
	bp := argBuffers.Get().(*[]byte)
	defer argBuffers.Put(bp)
	args, inPlace, err := layOutArgs(k, ptrs, sizes, *bp)
	if err != nil {
		return err
	}
	if !inPlace && cap(args) <= 64<<10 {
		*bp = args[:0] // keep a grown buffer, unless it is huge (never the caller's memory)
	}
	return c.launch(q, dev, k, args, la, cooperative)
}

// olMemPrefetch moves managed allocations toward the queue's device or the
// host, in the queue's order. Ranges that are not managed memory of the
// queue's platform are left alone: a prefetch is a hint.
func (c *Context) olMemPrefetch(q *Queue, mems []uintptr, sizes []uint64, flags uint32) error {
	const toDev, toHost = uint32(ol.MemMigrationFlagHostToDevice), uint32(ol.MemMigrationFlagDeviceToHost)
	if flags&toDev != 0 && flags&toHost != 0 {
		return ol.NewError(ol.ErrcInvalidArgument, "Flags asks for both HOST_TO_DEVICE and DEVICE_TO_HOST")
	}
	toDevice := flags&toHost == 0
	pq, canMove := q.q.(plugin.PrefetchQueue)
	for i, m := range mems {
		if sizes[i] == 0 {
			continue
		}
		if m == 0 {
			return ol.Errorf(ol.ErrcInvalidNullPointer, "Mems[%d] is NULL but Sizes[%d] is %d", i, i, sizes[i])
		}
		a, err := c.mem.checkRange("olMemPrefetch", fmt.Sprintf("Mems[%d]", i), uint64(m), sizes[i])
		if err != nil {
			return err
		}
		if !canMove || a.device == nil || a.kind != ol.AllocTypeManaged || a.device.platform != q.device.platform {
			continue
		}
		if err := pq.Prefetch(m, q.device.d, sizes[i], toDevice); err != nil {
			return err
		}
	}
	return nil
}

// olMemUnregister23 drops a registration; the pages are unlocked when the
// last registration goes, with or without UNLOCK_MEMORY (a registration is
// always a lock here).
func (c *Context) olMemUnregister23(dev *Device, ptr uintptr, flags uint32) error {
	if err := registerFlags("olMemUnregister", flags); err != nil {
		return err
	}
	return c.olMemUnregister(dev, ptr)
}

// registerFlags refuses bits that are not ol_memory_register_flag_t.
func registerFlags(fn string, flags uint32) error {
	const known = uint32(ol.MemoryRegisterFlagLockMemory | ol.MemoryRegisterFlagUnlockMemory)
	if flags&^known != 0 {
		return ol.Errorf(ol.ErrcInvalidEnumeration, "%s: Flags %#x has bits that are not ol_memory_register_flag_t", fn, flags)
	}
	return nil
}
