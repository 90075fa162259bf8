package impl

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline void ol_memmove(uintptr_t dst, uintptr_t src, uint64_t size) {
  __builtin_memmove((void *)dst, (const void *)src, size);
}
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/cmem"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// Routing: the runtime decides which platform does a copy, a fill or a
// wait, from the allocation map, the globals of loaded programs and the
// device handles, so that a plugin only ever sees memory, devices and
// events of its own platform (see plugin.Queue).

// ownerOf returns the device whose memory p is, when the runtime knows:
// an allocation of olMemAlloc or a global of a loaded program.
func (c *Context) ownerOf(p uint64) (*Device, bool) {
	a, _ := c.mem.find(p)
	return c.ownerWith(p, a)
}

// ownerWith is ownerOf when a, the allocation that holds p (device nil:
// none), is known already.
func (c *Context) ownerWith(p uint64, a alloc) (*Device, bool) {
	if a.device != nil {
		return a.device, a.kind == ol.AllocTypeDevice
	}
	if g, ok := c.globals.find(p); ok {
		return g.device, true
	}
	return nil, false
}

// sideDevice decides which device one side of a copy goes through, for a
// pointer p that the caller named with device dev. a is the allocation that
// contains p (c.mem.find(p); device nil: none), which the caller looked up
// already. Memory the runtime knows (an allocation of olMemAlloc, a global
// of a loaded program) named with a device it does not belong to is
//   - copied as named where the named device reaches it as the caller
//     means: HOST or MANAGED memory of a GPU named with the host device
//     (the CPU reaches it);
//   - copied through the device it belongs to where both are GPUs of one
//     platform (the platform's devices reach one another's memory, and its
//     plugin gets the memory's own device);
//   - refused otherwise (INVALID_ARGUMENT), before anything is queued: the
//     named device may not reach it at all (GPU DEVICE memory named with
//     the host device or another platform's GPU; memory of the host device,
//     which is pageable host memory, named with a GPU; a GPU's HOST or
//     MANAGED memory named with another platform's GPU).
//
// Memory the runtime does not know is the caller's to name. The C fast
// paths (ol_fast_memcpy, ol_qmirror_copy) take only sides named with the
// memory's own device or host-accessible GPU memory named with the host
// device, and leave every other case to this decision.
func (c *Context) sideDevice(fn, what string, p uintptr, a alloc, dev *Device) (*Device, error) {
	if len(c.deviceList) == 1 {
		return dev, nil // the one device is the host device
	}
	owner, devMem := c.ownerWith(uint64(p), a)
	switch {
	case owner == nil || owner == dev:
		return dev, nil
	case dev.d.IsHost() && !devMem && !owner.d.IsHost():
		return dev, nil
	case !dev.d.IsHost() && !owner.d.IsHost() && owner.platform == dev.platform:
		return owner, nil
	}
	mem := fmt.Sprintf("a global of a program of device %#x (%s)", owner.h, owner.platform.name)
	if a.device != nil {
		mem = fmt.Sprintf("in the %d-byte %s allocation at %#x of device %#x (%s)", a.size, a.kind, a.base, owner.h, owner.platform.name)
	}
	why := "which cannot reach it"
	if owner.d.IsHost() {
		why = "which need not reach it (the host device's memory is pageable host memory)"
	}
	return nil, ol.Errorf(ol.ErrcInvalidArgument, "%s: %sPtr %#x is %s, but %sDevice is %#x (%s), %s: name the device it belongs to; nothing was copied",
		fn, what, p, mem, what, dev.h, dev.platform.name, why)
}

// onTempQueue runs fn on a fresh queue of dev and waits for it: the
// synchronous form of the queued operations.
func onTempQueue(dev *Device, fn func(q plugin.Queue) error) error {
	var q plugin.Queue
	var err error
	if sd, ok := dev.d.(plugin.SyncQueueDevice); ok {
		q, err = sd.NewSyncQueue()
	} else {
		q, err = dev.d.NewQueue()
	}
	if err != nil {
		return err
	}
	err = fn(q)
	if err == nil {
		err = q.Sync()
	} else {
		_ = q.Sync()
	}
	if rerr := q.Release(); err == nil {
		err = rerr
	}
	return err
}

func (c *Context) olMemcpy(q *Queue, dst uintptr, dstDev *Device, src uintptr, srcDev *Device, size uint64) error {
	if size == 0 {
		return nil
	}
	if dst == 0 || src == 0 {
		return ol.Errorf(ol.ErrcInvalidNullPointer, "olMemcpy of %d bytes with DstPtr %#x and SrcPtr %#x", size, dst, src)
	}
	// (each side's allocation is looked up once, for both checks)
	da, err := c.mem.checkRange("olMemcpy", "DstPtr", uint64(dst), size)
	if err != nil {
		return err
	}
	sa, err := c.mem.checkRange("olMemcpy", "SrcPtr", uint64(src), size)
	if err != nil {
		return err
	}
	if dstDev, err = c.sideDevice("olMemcpy", "Dst", dst, da, dstDev); err != nil {
		return err
	}
	if srcDev, err = c.sideDevice("olMemcpy", "Src", src, sa, srcDev); err != nil {
		return err
	}
	d, s := dst, src
	if q == nil {
		return copyNow(d, dstDev, s, srcDev, size)
	}
	qp := q.device.platform
	switch {
	case dstDev.platform == qp && srcDev.platform == qp:
		return q.q.CopyDevice(d, dstDev.d, s, srcDev.d, size)
	case dstDev.platform == qp && srcDev.d.IsHost():
		return q.q.CopyToDevice(d, dstDev.d, s, size)
	case srcDev.platform == qp && dstDev.d.IsHost():
		return q.q.CopyFromDevice(d, s, srcDev.d, size)
	case srcDev.platform == qp && peers(srcDev, dstDev):
		if pq, ok := q.q.(plugin.PeerQueue); ok {
			return pq.CopyToPeer(d, dstDev.d, s, srcDev.d, size)
		}
	}
	// The queue's platform cannot make this copy: the queue holds its later
	// work while the runtime makes it with the platforms that can.
	return q.q.HostCall(func() error { return copyNow(d, dstDev, s, srcDev, size) })
}

// copyNow makes a copy and waits for it, on the platforms of its two sides.
func copyNow(dst uintptr, dstDev *Device, src uintptr, srcDev *Device, size uint64) error {
	dh, sh := dstDev.d.IsHost(), srcDev.d.IsHost()
	switch {
	case dh && sh && size < plugin.ParallelHostCopy:
		C.ol_memmove(C.uintptr_t(dst), C.uintptr_t(src), C.uint64_t(size))
		return nil
	case dh && sh:
		// the host device spreads large copies over its threads
		return onTempQueue(dstDev, func(q plugin.Queue) error { return q.CopyDevice(dst, dstDev.d, src, srcDev.d, size) })
	case sh:
		return onTempQueue(dstDev, func(q plugin.Queue) error { return q.CopyToDevice(dst, dstDev.d, src, size) })
	case dh:
		return onTempQueue(srcDev, func(q plugin.Queue) error { return q.CopyFromDevice(dst, src, srcDev.d, size) })
	case dstDev.platform == srcDev.platform:
		return onTempQueue(srcDev, func(q plugin.Queue) error { return q.CopyDevice(dst, dstDev.d, src, srcDev.d, size) })
	case peers(srcDev, dstDev):
		return onTempQueue(srcDev, func(q plugin.Queue) error {
			pq, ok := q.(plugin.PeerQueue)
			if !ok {
				return ol.Errorf(ol.ErrcUnknown, "olMemcpy: device %#x (%s) copies to device %#x itself, but its queue cannot", srcDev.h, srcDev.platform.name, dstDev.h)
			}
			return pq.CopyToPeer(dst, dstDev.d, src, srcDev.d, size)
		})
	}
	return stagedCopy(dst, dstDev, src, srcDev, size)
}

// peers reports whether the plugin of src copies to dst, a device of
// another platform, itself (plugin.PeerDevice: between two proxies, the
// bytes go from one to the other, not through this process).
func peers(src, dst *Device) bool {
	pd, ok := src.d.(plugin.PeerDevice)
	return ok && src.platform != dst.platform && pd.PeerOf(dst.d)
}

// stageChunk is the size of each of the two host buffers a copy between
// devices of two platforms goes through.
const stageChunk = 4 << 20

// stagedCopy copies between devices of two platforms through host memory,
// in chunks: while the destination's queue writes one buffer to the
// destination, the source's queue fills the other.
func stagedCopy(dst uintptr, dstDev *Device, src uintptr, srcDev *Device, size uint64) (err error) {
	n := min(size, stageChunk)
	buf, err := cmem.Malloc(2*n, "olMemcpy: the staging buffers of a copy between platforms")
	if err != nil {
		return err
	}
	var qs, qd plugin.Queue
	var pending [2]plugin.Event
	defer func() {
		// qd may still read the buffers until it is synced
		if qd != nil {
			if serr := qd.Sync(); err == nil {
				err = serr
			}
			for _, e := range pending {
				if e != nil {
					_ = e.Release()
				}
			}
			_ = qd.Release()
		}
		if qs != nil {
			_ = qs.Sync()
			_ = qs.Release()
		}
		cmem.Free(buf)
	}()
	if qs, err = srcDev.d.NewQueue(); err != nil {
		return err
	}
	if qd, err = dstDev.d.NewQueue(); err != nil {
		return err
	}
	for off, i := uint64(0), 0; off < size; off, i = off+n, 1-i {
		m := min(n, size-off)
		b := uintptr(buf) + uintptr(i)*uintptr(n)
		if e := pending[i]; e != nil {
			pending[i] = nil
			err = e.Sync()
			_ = e.Release()
			if err != nil {
				return err
			}
		}
		if err = qs.CopyFromDevice(b, src+uintptr(off), srcDev.d, m); err != nil {
			return err
		}
		if err = qs.Sync(); err != nil {
			return err
		}
		if err = qd.CopyToDevice(dst+uintptr(off), dstDev.d, b, m); err != nil {
			return err
		}
		if pending[i], err = qd.Record(); err != nil {
			return err
		}
	}
	return nil
}

// unsafe: pattern stays the C pointer (mark c-bytes): plugin.Queue.Fill
// takes one, and a fill on another platform copies it with memcpy.
func (c *Context) olMemFill(q *Queue, ptr uintptr, patternSize uint64, pattern unsafe.Pointer, fillSize uint64) error {
	switch {
	case patternSize == 0:
		return ol.NewError(ol.ErrcInvalidSize, "PatternSize is 0")
	case fillSize%patternSize != 0:
		return ol.Errorf(ol.ErrcInvalidSize, "FillSize %d is not a multiple of PatternSize %d", fillSize, patternSize)
	case ptr == 0 || pattern == nil:
		return ol.NewError(ol.ErrcInvalidNullPointer, "Ptr and PatternPtr must not be NULL")
	case fillSize == 0:
		return nil
	}
	// Sizes are checked before anything is copied: the pattern is never
	// longer than the fill, and the fill must fit where it goes.
	a, err := c.mem.checkRange("olMemFill", "Ptr", uint64(ptr), fillSize)
	if err != nil {
		return err
	}
	if _, err := c.mem.checkRange("olMemFill", "PatternPtr", uint64(uintptr(pattern)), patternSize); err != nil {
		return err
	}
	p := ptr
	var owner *Device
	switch {
	case a.device != nil:
		owner = a.device
	case len(c.platformList) == 1:
		owner = c.hostDevice() // the only platform is the host's
	default:
		owner, _ = c.ownerOf(uint64(p))
	}
	if q != nil {
		if owner == nil || owner == q.device {
			return q.q.Fill(p, pattern, patternSize, fillSize)
		}
		// Memory of another device: its own device fills it, in the
		// queue's order (a queue's device may not reach it: another
		// platform's memory, pageable host memory for a GPU, a global of
		// another GPU of its platform). The pattern is the caller's only
		// during this call.
		pat, err := cmem.Copy(pattern, patternSize, "olMemFill: the copy of the pattern")
		if err != nil {
			return err
		}
		// the call runs exactly once if HostCall takes it, never if not
		err = q.q.HostCall(func() error {
			defer cmem.Free(pat)
			return onTempQueue(owner, func(tq plugin.Queue) error { return tq.Fill(p, pat, patternSize, fillSize) })
		})
		if err != nil {
			cmem.Free(pat)
		}
		return err
	}
	dev := owner
	if dev == nil {
		if dev, err = c.unplacedPointer(ptr); err != nil {
			return err
		}
	}
	return onTempQueue(dev, func(tq plugin.Queue) error { return tq.Fill(p, pattern, patternSize, fillSize) })
}

// unplacedPointer finds the device of a pointer that is neither an
// allocation of the map nor a global of a loaded program (olMemFill without
// a queue): a device that says it is its memory, else the host device,
// when every other device can say. The CPU never writes to a pointer that
// might be a GPU's.
func (c *Context) unplacedPointer(p uintptr) (*Device, error) {
	var unsure []string
	for _, d := range c.deviceList {
		if d.d.IsHost() {
			continue
		}
		pd, ok := d.d.(plugin.PointerDevice)
		if !ok {
			unsure = append(unsure, fmt.Sprintf("%#x (%s)", d.h, d.platform.name))
			continue
		}
		if pd.OwnsPointer(p) {
			return d, nil
		}
	}
	if len(unsure) > 0 {
		return nil, ol.Errorf(ol.ErrcInvalidArgument,
			"olMemFill without a queue: Ptr %#x is not from olMemAlloc nor a global of a loaded program, and device %s cannot tell whether it is its memory; fill it on a queue of the device that owns it",
			p, strings.Join(unsure, ", "))
	}
	return c.hostDevice(), nil
}

// hostDevice is the device whose memory is the host's (always present).
func (c *Context) hostDevice() *Device {
	for _, d := range c.deviceList {
		if d.d.IsHost() {
			return d
		}
	}
	return c.deviceList[len(c.deviceList)-1]
}

// waitOther makes q hold its later work until e, an event of another
// platform, completes: a HostCall on q waits for it. The caller does not
// wait. The event's plugin object stays alive until then, even if the
// event is destroyed meanwhile. The wait is an edge of the context's wait
// graph until it ends.
func (c *Context) waitOther(q *Queue, e *Event) error {
	if !e.acquire() {
		return ol.Errorf(ol.ErrcInvalidEvent, "olWaitEvents: event %#x was destroyed during the call", e.h)
	}
	pe := e.e
	if pe.Done() {
		_ = e.releaseRef()
		return nil
	}
	var edge *crossEdge
	if p, ok := pe.(plugin.PointEvent); ok {
		if on, mark := p.Point(); mark != 0 {
			edge = &crossEdge{q: q.q, at: ^uint64(0), on: on, mark: mark}
			c.waits.add(edge)
		}
	}
	err := q.q.HostCall(func() error {
		defer func() {
			if edge != nil {
				c.waits.remove(edge)
			}
			_ = e.releaseRef()
		}()
		// A failure of the event's own work is reported by its own queue;
		// a wait that could not be made (the event is still pending) is
		// this queue's error, never a silent step past the wait.
		if err := pe.Sync(); err != nil && !pe.Done() {
			return err
		}
		return nil
	})
	if err != nil {
		if edge != nil {
			c.waits.remove(edge)
		}
		_ = e.releaseRef()
		return err
	}
	if edge != nil {
		// the HostCall is the queue's latest operation, unless another
		// thread submits to the same queue meanwhile
		c.waits.place(edge, queuePoint(q.q))
	}
	return nil
}

// acquire takes a reference on a live event (the handle holds one).
func (e *Event) acquire() bool {
	for {
		n := e.refs.Load()
		if n <= 0 {
			return false
		}
		if e.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// releaseRef drops a reference; the last one releases the plugin's event.
func (e *Event) releaseRef() error {
	if e.refs.Add(-1) == 0 && e.e != nil {
		return e.e.Release()
	}
	return nil
}
