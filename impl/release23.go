package impl

// The calls LLVM 23.1 added or changed. The 23.1 library (built with the
// ol23 tag) exports them; the runtime behind them is the same for both
// releases, and a 22.1 call that 23.1 changed is the 23.1 call with its
// new parameters at their neutral values.

import (
	"fmt"
	"math/bits"
	"sync"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// olInit23 is the hand-written entry of 23.1's olInit (see OlInit23):
// InitArgs selects the platforms to start; the host platform always starts.
func olInit23(initArgs unsafe.Pointer, loc *ol.CodeLocation) uintptr {
	params := func(tb *traceBuf) { traceOlInit23(tb, initArgs) }
	if initArgs == nil {
		return initLibrary(nil, params, loc)
	}
	return initLibrary(func(ps []plugin.Plugin) ([]plugin.Plugin, error) {
		return pickPlatforms((*ol.InitArgs)(initArgs), ps)
	}, params, loc)
}

// backendPlugins names the plugin of each backend.
var backendPlugins = map[ol.PlatformBackend]string{
	ol.PlatformBackendCuda:   "cuda",
	ol.PlatformBackendAmdgpu: "amdgpu",
	ol.PlatformBackendHost:   "host",
}

// pickPlatforms checks olInit's arguments and keeps the plugins they list
// (and the host's). NumPlatforms 0 keeps them all.
func pickPlatforms(args *ol.InitArgs, ps []plugin.Plugin) ([]plugin.Plugin, error) {
	if args.Size < uint64(unsafe.Sizeof(ol.InitArgs{})) {
		return nil, ol.Errorf(ol.ErrcInvalidSize, "InitArgs->Size is %d, less than sizeof(ol_init_args_t) = %d", args.Size, unsafe.Sizeof(ol.InitArgs{}))
	}
	if args.NumPlatforms == 0 {
		return ps, nil
	}
	if args.Platforms == nil {
		return nil, ol.Errorf(ol.ErrcInvalidNullPointer, "InitArgs->NumPlatforms is %d but InitArgs->Platforms is NULL", args.NumPlatforms)
	}
	if err := checkUserRange("olInit", "InitArgs->Platforms", "InitArgs->NumPlatforms*4 =", args.Platforms, uint64(args.NumPlatforms)*4); err != nil {
		return nil, err
	}
	want := map[string]bool{"host": true}
	for i, b := range unsafe.Slice((*ol.PlatformBackend)(args.Platforms), args.NumPlatforms) {
		if !b.Valid() {
			return nil, ol.Errorf(ol.ErrcInvalidEnumeration, "InitArgs->Platforms[%d] is %d, not an ol_platform_backend_t", i, uint32(b))
		}
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

// maxLaunchProps bounds the walk of a property list without its end mark.
const maxLaunchProps = 1024

// launchProps reads a launch's property list: whether it is cooperative.
func launchProps(props *ol.KernelLaunchProp) (cooperative bool, err error) {
	if props == nil {
		return false, nil
	}
	for i := 0; i < maxLaunchProps; i++ {
		// one entry at a time: the list's length is known only at its end
		p := (*ol.KernelLaunchProp)(unsafe.Add(unsafe.Pointer(props), uintptr(i)*unsafe.Sizeof(*props)))
		switch p.Type {
		case ol.KernelLaunchPropTypeNone:
			return cooperative, nil
		case ol.KernelLaunchPropTypeIsCooperative:
			if p.Data == nil {
				return false, ol.Errorf(ol.ErrcInvalidNullPointer, "Properties[%d] (IS_COOPERATIVE) has a NULL data pointer", i)
			}
			cooperative = *(*bool)(p.Data)
		default:
			return false, ol.Errorf(ol.ErrcInvalidEnumeration, "Properties[%d].type is %d, not an ol_kernel_launch_prop_type_t", i, uint32(p.Type))
		}
	}
	return false, ol.Errorf(ol.ErrcInvalidArgument, "Properties has no OL_KERNEL_LAUNCH_PROP_TYPE_NONE entry in its first %d", maxLaunchProps)
}

// argBuffers recycles the argument buffers olLaunchKernel23 lays out.
var argBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// maxPackedArgs bounds the buffer layOutArgs builds for several arguments
// of a kernel whose parameters the device does not know. Without it an
// ArgSizes entry of, say, 1 TiB (below maxUserRange) made the runtime
// allocate that much, and the Go runtime ended the process ("fatal error:
// runtime: out of memory") instead of the call failing. Real parameter
// space is far smaller (CUDA: 32764 bytes).
const maxPackedArgs = 1 << 20

// argLayout says where each argument goes: at the offsets of the kernel's
// parameters where the device knows them (params), else like the members
// of a C struct.
type argLayout struct {
	params []plugin.Param
	known  bool
}

// each calls at(i, offset) for every argument in order and returns the
// size of the buffer: past the last argument, and for a packed layout
// rounded up to the struct's alignment.
func (l argLayout) each(sizes []uint64, at func(i int, off uint64)) (end uint64) {
	var off, align uint64 = 0, 1
	for i, sz := range sizes {
		if l.known {
			off = l.params[i].Offset
		} else {
			a := cAlign(sz)
			off, align = alignUp(off, a), max(align, a)
		}
		at(i, off)
		end = max(end, off+sz)
		off += sz
	}
	return alignUp(end, align)
}

// layOutArgs writes the arguments into buf as the kernel reads them (see
// argLayout), checking their count and sizes where the device knows the
// parameters. inPlace reports that the result is not buf but the caller's
// own memory: the one argument of a kernel whose parameters the device
// does not know is passed where it is, as 22.1's ArgumentsData is (the
// plugin reads only what the kernel takes, so a size larger than that
// costs nothing; copying it could take more memory than there is).
func layOutArgs(k *Symbol, ptrs []unsafe.Pointer, sizes []uint64, buf []byte) (args []byte, inPlace bool, err error) {
	for i, p := range ptrs {
		if p == nil && sizes[i] > 0 {
			return nil, false, ol.Errorf(ol.ErrcInvalidNullPointer, "ArgPtrs[%d] is NULL but ArgSizes[%d] is %d", i, i, sizes[i])
		}
		if sizes[i] > maxUserRange {
			return nil, false, ol.Errorf(ol.ErrcInvalidSize, "ArgSizes[%d] is %d", i, sizes[i])
		}
	}
	var l argLayout
	if pk, ok := k.kernel.(plugin.ParamKernel); ok {
		l.params, l.known = pk.Params()
	}
	if l.known {
		if len(l.params) != len(ptrs) {
			return nil, false, ol.Errorf(ol.ErrcInvalidArgument, "kernel %q takes %d arguments; NumArgs is %d", k.name, len(l.params), len(ptrs))
		}
		for i, p := range l.params {
			if p.Size != sizes[i] {
				return nil, false, ol.Errorf(ol.ErrcInvalidArgument, "ArgSizes[%d] is %d; argument %d of kernel %q is %d bytes", i, sizes[i], i, k.name, p.Size)
			}
		}
	} else if len(ptrs) == 1 {
		if sizes[0] == 0 {
			return nil, true, nil
		}
		return unsafe.Slice((*byte)(ptrs[0]), sizes[0]), true, nil
	}
	end := l.each(sizes, func(int, uint64) {})
	if end > maxUserRange || (!l.known && end > maxPackedArgs) {
		return nil, false, ol.Errorf(ol.ErrcInvalidSize, "the arguments of kernel %q take %d bytes", k.name, end)
	}
	if uint64(cap(buf)) < end {
		buf = make([]byte, end)
	}
	buf = buf[:end]
	clear(buf) // padding between parameters is zero, as a compiler's struct copy leaves it defined
	l.each(sizes, func(i int, off uint64) {
		if sizes[i] > 0 {
			copy(buf[off:], unsafe.Slice((*byte)(ptrs[i]), sizes[i]))
		}
	})
	return buf, false, nil
}

// cAlign is the alignment a C compiler gives a member of size bytes when
// nothing else is known: the largest power of two dividing it, at most 8
// (a scalar's own size; for a struct, that of its widest member in most
// layouts).
func cAlign(size uint64) uint64 {
	if size == 0 {
		return 1
	}
	return min(uint64(1)<<bits.TrailingZeros64(size), 8)
}

// olLaunchKernel23 launches with the arguments one by one and a property
// list.
func (c *Context) olLaunchKernel23(q *Queue, dev *Device, k *Symbol, la *ol.KernelLaunchSizeArgs, props *ol.KernelLaunchProp, ptrs []unsafe.Pointer, sizes []uint64) error {
	if err := c.launchTarget(q, dev, k); err != nil {
		return err
	}
	cooperative, err := launchProps(props)
	if err != nil {
		return err
	}
	if len(ptrs) != len(sizes) {
		return ol.Errorf(ol.ErrcInvalidArgument, "%d ArgPtrs but %d ArgSizes", len(ptrs), len(sizes))
	}
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
func (c *Context) olMemPrefetch(q *Queue, mems []unsafe.Pointer, sizes []uint64, flags uint32) error {
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
		if m == nil {
			return ol.Errorf(ol.ErrcInvalidNullPointer, "Mems[%d] is NULL but Sizes[%d] is %d", i, i, sizes[i])
		}
		a, err := c.mem.checkRange("olMemPrefetch", fmt.Sprintf("Mems[%d]", i), uint64(uintptr(m)), sizes[i])
		if err != nil {
			return err
		}
		if !canMove || a.device == nil || a.kind != ol.AllocTypeManaged || a.device.platform != q.device.platform {
			continue
		}
		if err := pq.Prefetch(uintptr(m), q.device.d, sizes[i], toDevice); err != nil {
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
