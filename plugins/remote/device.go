package remote

import (
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/remote/link"
	"github.com/liboffload-go/liboffload-go/internal/remote/wire"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// Device is a device of a proxy.
type Device struct {
	p     *Platform
	c     *conn
	index uint32
	info  plugin.DeviceInfo

	mu    sync.Mutex
	sizes map[uintptr]uint64 // reserved allocations (conn.reserve)
}

// Info implements plugin.Device: the proxied device's own answers.
func (d *Device) Info() *plugin.DeviceInfo { return &d.info }

// IsHost implements plugin.Device: a remote device's memory is never this
// process's.
func (d *Device) IsHost() bool { return false }

func (d *Device) name() string {
	return d.c.where() + " device " + d.info.Name.V
}

// Alloc implements plugin.Device: device memory of the proxy, at the
// address the proxy's device gave.
func (d *Device) Alloc(kind ol.AllocType, size uint64) (uintptr, error) {
	if kind != ol.AllocTypeDevice {
		return 0, ol.Errorf(ol.ErrcUnsupported, "%s: %v memory is not supported on a remote device (only DEVICE memory)", d.name(), kind)
	}
	if !d.c.reserve {
		r, err := d.c.call(wire.OpAlloc, nil, "", uint64(d.index), uint64(kind), size)
		return uintptr(r.Args[1]), err
	}
	// an allocation whose range is not free here is kept until the end,
	// so that the proxy does not give it again
	var held []uintptr
	defer func() {
		for _, p := range held {
			_, _ = d.c.call(wire.OpFree, nil, "", uint64(d.index), uint64(p), uint64(kind))
		}
	}()
	for i := range maxReserveAttempts {
		r, err := d.c.call(wire.OpAlloc, nil, "", uint64(d.index), uint64(kind), reserveAttemptSize(size, i))
		if err != nil {
			if len(held) > 0 && i >= sameSizeAttempts {
				break // a larger request the proxy could not serve
			}
			return 0, err
		}
		p := uintptr(r.Args[1])
		// only the first size bytes of a larger block are used
		if reserve(d.c.rank, p, size) {
			d.mu.Lock()
			d.sizes[p] = size
			d.mu.Unlock()
			return p, nil
		}
		held = append(held, p)
	}
	return 0, ol.Errorf(ol.ErrcOutOfResources, "%s: %d allocations for %d bytes all overlap memory of this process or of another proxy (first at %#x)",
		d.name(), len(held), size, held[0])
}

// maxReserveAttempts bounds the allocations tried for one whose range is
// free in this process.
const maxReserveAttempts = 16

// sameSizeAttempts are made at the size asked. Small allocations come
// from the proxy's pools, whose next blocks lie beside the one refused,
// so they can all land in the same mapping of this process: later
// attempts ask for a block beyond the pools (escapeSize, doubling), which
// the proxy's driver maps afresh.
const (
	sameSizeAttempts = 2
	escapeSize       = 4 << 20 // above the pools' largest blocks (gpu.MaxPooled, impl/pool.h)
	maxEscapeSize    = 256 << 20
)

// reserveAttemptSize is the size requested by attempt i for size bytes.
func reserveAttemptSize(size uint64, i int) uint64 {
	if i < sameSizeAttempts {
		return size
	}
	return max(size, min(uint64(escapeSize)<<(i-sameSizeAttempts), maxEscapeSize))
}

// Free implements plugin.Device.
func (d *Device) Free(p uintptr, kind ol.AllocType) error {
	_, err := d.c.call(wire.OpFree, nil, "", uint64(d.index), uint64(p), uint64(kind))
	if err == nil && d.c.reserve {
		d.mu.Lock()
		size, ok := d.sizes[p]
		delete(d.sizes, p)
		d.mu.Unlock()
		if ok {
			unreserve(p, size)
		}
	}
	return err
}

// Register implements plugin.Device: UNSUPPORTED (this process's memory
// cannot be mapped into a device of another machine).
func (d *Device) Register(uintptr, uint64) (uintptr, error) {
	return 0, ol.Errorf(ol.ErrcUnsupported, "%s: olMemRegister is not supported on a remote device", d.name())
}

// Unregister implements plugin.Device.
func (d *Device) Unregister(uintptr) error {
	return ol.Errorf(ol.ErrcUnsupported, "%s: olMemUnregister is not supported on a remote device", d.name())
}

// NewQueue implements plugin.Device: the proxy makes the queue when the
// request arrives; an error comes at its first sync.
func (d *Device) NewQueue() (plugin.Queue, error) {
	q := &Queue{d: d, c: d.c, id: nextID()}
	if err := d.c.post(wire.OpQueueNew, nil, uint64(d.index), q.id); err != nil {
		return nil, err
	}
	return q, nil
}

// IsValidBinary implements plugin.Device (the proxy's device answers).
func (d *Device) IsValidBinary(image []byte) bool {
	r, err := d.c.call(wire.OpValidBinary, image, "", uint64(d.index))
	return err == nil && r.Args[1] == 1
}

// LoadProgram implements plugin.Device: the image is sent once.
func (d *Device) LoadProgram(image []byte) (plugin.Program, error) {
	p := &Program{d: d, id: nextID()}
	if _, err := d.c.call(wire.OpLoad, image, "", uint64(d.index), p.id); err != nil {
		return nil, err
	}
	return p, nil
}

// Program is a program loaded on a proxy's device.
type Program struct {
	d  *Device
	id uint64
}

// Kernel implements plugin.Program.
func (p *Program) Kernel(name string) (plugin.Kernel, error) {
	k := &Kernel{p: p, id: nextID()}
	r, err := p.d.c.call(wire.OpKernel, nil, name, p.id, k.id)
	if err != nil {
		return nil, err
	}
	if r.Args[1] == 1 {
		pairs, err := wire.DecodeParams(r.Data)
		if err != nil {
			return nil, ol.Errorf(ol.ErrcBackendFailure, "%s: %v", p.d.c.where(), err)
		}
		k.params = make([]plugin.Param, len(pairs))
		for i, pr := range pairs {
			k.params[i] = plugin.Param{Offset: pr[0], Size: pr[1]}
		}
		k.hasParams = true
	}
	k.coop = r.Args[2] == 1
	return k, nil
}

// Global implements plugin.Program: the global's remote address.
func (p *Program) Global(name string) (uintptr, uint64, error) {
	r, err := p.d.c.call(wire.OpGlobal, nil, name, p.id)
	if err != nil {
		return 0, 0, err
	}
	return uintptr(r.Args[1]), r.Args[2], nil
}

// Unload implements plugin.Program: the proxy's plugin keeps the image
// for launches still queued. It waits for the proxy, so that what the
// program held there is released when olDestroyProgram returns.
func (p *Program) Unload() error {
	if p.d.c.failed() != nil {
		return nil // nothing is left of it on a proxy that is gone
	}
	_, err := p.d.c.call(wire.OpUnload, nil, "", p.id)
	return err
}

// Kernel is a kernel of a remote program.
type Kernel struct {
	p         *Program
	id        uint64
	params    []plugin.Param
	hasParams bool
	coop      bool
}

// MaxGroupSize implements plugin.Kernel.
func (k *Kernel) MaxGroupSize(dynShared uint64) (uint64, error) {
	r, err := k.p.d.c.call(wire.OpMaxGroup, nil, "", k.id, dynShared)
	return r.Args[1], err
}

// Params implements plugin.ParamKernel with the proxy's answer.
func (k *Kernel) Params() ([]plugin.Param, bool) { return k.params, k.hasParams }

// MaxCooperativeGroups implements plugin.CooperativeKernel.
func (k *Kernel) MaxCooperativeGroups(groupSize ol.Dimensions, dynShared uint64) (uint32, error) {
	if !k.coop {
		return 0, ol.Errorf(ol.ErrcUnsupported, "%s: the device has no cooperative launches", k.p.d.name())
	}
	r, err := k.p.d.c.call(wire.OpMaxCoop, nil, "", k.id, uint64(groupSize.X), uint64(groupSize.Y), uint64(groupSize.Z), dynShared)
	if r.Args[1] > math.MaxUint32 {
		return 0, ol.Errorf(ol.ErrcBackendFailure, "%s answered %d groups", k.p.d.c.where(), r.Args[1])
	}
	return uint32(r.Args[1]), err
}

// Queue is a queue on a proxy's device. Its operations are sent without
// waiting; Sync collects their errors.
type Queue struct {
	d  *Device
	c  *conn
	id uint64

	// The runtime's view of the queue's waits (plugin.WaitGraphQueue), so
	// that a host function's sync that would wait for itself is refused:
	// ops numbers the queue's operations in the order they are sent; waits are the olWaitEvents within the platform, kept until a
	// sync has seen them done.
	mu    sync.Mutex
	ops   uint64
	bytes uint64 // the copies' bytes sent since the last sync (its spin)
	waits []queueWait
	// done: the queue's work up to this operation is known complete (a
	// sync or an emptiness query said so), so that Empty answers without
	// a round trip while nothing was sent since (events of idle queues)
	done uint64
}

// completed notes that the work up to operation pos is complete.
func (q *Queue) completed(pos uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.done = max(q.done, pos)
}

// queueWait says that the queue's work from operation at waits for queue
// on to reach operation mark.
type queueWait struct {
	at   uint64
	on   *Queue
	mark uint64
}

var (
	_ plugin.WaitGraphQueue       = (*Queue)(nil)
	_ plugin.PointEvent           = (*Event)(nil)
	_ plugin.HostFunctionPlatform = (*Platform)(nil)
)

// post sends an operation of the queue (the next of Position).
func (q *Queue) post(op wire.Op, data []byte, args ...uint64) error {
	return q.numbered(func(uint64) error { return q.c.post(op, data, args...) })
}

// numbered sends an operation as the queue's next (Position counts them
// all: the runtime's deferred frees take an unchanged position for no new
// work).
func (q *Queue) numbered(send func(at uint64) error) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	at := q.ops + 1
	if err := send(at); err != nil {
		return err
	}
	q.ops = at
	return nil
}

// addBytes counts a copy's bytes for the next sync's spin.
func (q *Queue) addBytes(n uint64) {
	q.mu.Lock()
	q.bytes += n
	q.mu.Unlock()
}

// Position implements plugin.WaitGraphQueue.
func (q *Queue) Position() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ops
}

// Waits implements plugin.WaitGraphQueue: the queue's olWaitEvents.
func (q *Queue) Waits(at uint64, visit func(plugin.Queue, uint64)) {
	q.mu.Lock()
	var found []queueWait
	for _, w := range q.waits {
		if w.at <= at {
			found = append(found, w)
		}
	}
	q.mu.Unlock()
	for _, w := range found {
		visit(w.on, w.mark)
	}
}

// RunningHostFunction implements plugin.HostFunctionPlatform.
func (p *Platform) RunningHostFunction() (plugin.Queue, uint64, bool) {
	r, ok := runningHostFn()
	if !ok || r.q.d.p != p {
		return nil, 0, false
	}
	return r.q, r.at, true
}

func (q *Queue) own(d plugin.Device) (*Device, error) {
	rd, ok := d.(*Device)
	if !ok || rd.c != q.c || rd.p != q.d.p {
		return nil, ol.Errorf(ol.ErrcInvalidDevice, "%s: the device is not on the queue's platform", q.c.where())
	}
	return rd, nil
}

// CopyToDevice implements plugin.Queue, in pieces (toPiece).
func (q *Queue) CopyToDevice(dst uintptr, dev plugin.Device, src uintptr, size uint64) error {
	d, err := q.own(dev)
	if err != nil {
		return err
	}
	q.addBytes(size)
	piece := q.toPiece(d)
	for off := uint64(0); off < size; off += piece {
		n := min(piece, size-off)
		data := unsafe.Slice((*byte)(ptr(src+uintptr(off))), n)
		if err := q.post(wire.OpCopyTo, data, q.id, uint64(d.index), uint64(dst)+off); err != nil {
			return err
		}
	}
	return nil
}

// toPiece is the piece of a copy into d: wire.HostPiece for a host
// device's memory when the transport moves the bytes from where they are
// to where they go (MPI: it sends from this process's memory, and the
// proxy's receiver places them into the device's), else the chunk size:
// the proxy stages each piece.
func (q *Queue) toPiece(d *Device) uint64 {
	if _, ok := q.c.ep.(link.Gatherer); ok && d.info.Type.V == ol.DeviceTypeHost {
		return wire.HostPiece(q.c.chunk)
	}
	return q.c.chunk
}

// CopyFromDevice implements plugin.Queue: each piece comes back as a Data
// message, written to dst by the receiver before the reply to any later
// sync (the proxy sends them in the queue's order).
func (q *Queue) CopyFromDevice(dst, src uintptr, dev plugin.Device, size uint64) error {
	d, err := q.own(dev)
	if err != nil {
		return err
	}
	q.addBytes(size)
	for off := uint64(0); off < size; off += q.c.chunk {
		n := min(q.c.chunk, size-off)
		token := nextID()
		q.c.mu.Lock()
		q.c.reads[token] = read{dst: dst + uintptr(off), n: n}
		q.c.mu.Unlock()
		if err := q.post(wire.OpCopyFrom, nil, q.id, uint64(d.index), uint64(src)+off, n, token); err != nil {
			return err
		}
	}
	return nil
}

// CopyDevice implements plugin.Queue: both devices are on the proxy.
func (q *Queue) CopyDevice(dst uintptr, dstDev plugin.Device, src uintptr, srcDev plugin.Device, size uint64) error {
	dd, err := q.own(dstDev)
	if err != nil {
		return err
	}
	sd, err := q.own(srcDev)
	if err != nil {
		return err
	}
	return q.post(wire.OpCopyDevice, nil, q.id, uint64(dd.index), uint64(dst), uint64(sd.index), uint64(src), size)
}

// PeerOf implements plugin.PeerDevice: a device of another proxy of the
// same session (one olInit), to which the proxy sends directly.
func (d *Device) PeerOf(dst plugin.Device) bool {
	rd, ok := dst.(*Device)
	return ok && rd.c != d.c && rd.p.s == d.p.s
}

// CopyToPeer implements plugin.PeerQueue: the destination proxy is
// granted the copy (sent at once: it tells the source proxy whether it
// accepts) and the queue's proxy is told to send it there when the queue
// reaches it (internal/remote/server/peer.go). Neither is waited for: a
// refused grant is the copy's error, at the queue's sync. No byte passes
// through this process.
func (q *Queue) CopyToPeer(dst uintptr, dstDev plugin.Device, src uintptr, srcDev plugin.Device, size uint64) error {
	sd, err := q.own(srcDev)
	if err != nil {
		return err
	}
	dd, ok := dstDev.(*Device)
	if !ok || !sd.PeerOf(dd) {
		return ol.Errorf(ol.ErrcInvalidDevice, "%s: the destination is not a device of another proxy", q.c.where())
	}
	token := nextID()
	if err := dd.c.postNow(wire.OpPeerRecv, uint64(dd.index), uint64(dst), size, uint64(q.c.rank), token); err != nil {
		return err
	}
	q.addBytes(size)
	ms := min(max(uint64(q.c.timeout/time.Millisecond), 1), uint64(time.Hour/time.Millisecond))
	return q.post(wire.OpPeerSend, nil, q.id, uint64(sd.index), uint64(src), size, uint64(dd.c.rank), token, q.c.chunk, ms)
}

// Fill implements plugin.Queue (the pattern travels with the request).
func (q *Queue) Fill(p uintptr, pattern unsafe.Pointer, patternSize, size uint64) error {
	return q.post(wire.OpFill, unsafe.Slice((*byte)(pattern), patternSize), q.id, uint64(p), size)
}

func (q *Queue) launch(k plugin.Kernel, args []byte, size plugin.LaunchSize, coop uint64) error {
	rk, ok := k.(*Kernel)
	if !ok || rk.p.d.c != q.c {
		return ol.Errorf(ol.ErrcInvalidArgument, "%s: the kernel is not of a program on this proxy", q.c.where())
	}
	g, b := size.NumGroups, size.GroupSize
	return q.post(wire.OpLaunch, args, q.id, rk.id, uint64(g.X), uint64(g.Y), uint64(g.Z),
		uint64(b.X), uint64(b.Y), uint64(b.Z), size.DynSharedMemory, coop)
}

// Launch implements plugin.Queue.
func (q *Queue) Launch(k plugin.Kernel, args []byte, size plugin.LaunchSize) error {
	return q.launch(k, args, size, 0)
}

// LaunchCooperative implements plugin.CooperativeQueue. The grid is
// checked against the device's limit first (one round trip), so that a
// grid too large is refused by the call, as on a local device.
func (q *Queue) LaunchCooperative(k plugin.Kernel, args []byte, size plugin.LaunchSize) error {
	rk, ok := k.(*Kernel)
	if ok {
		most, err := rk.MaxCooperativeGroups(size.GroupSize, size.DynSharedMemory)
		if err != nil {
			return err
		}
		g := size.NumGroups
		if n := uint64(g.X) * uint64(g.Y) * uint64(g.Z); n > uint64(most) {
			return ol.Errorf(ol.ErrcInvalidArgument, "%s: a cooperative launch of %d groups, more than the %d the device runs at once", q.c.where(), n, most)
		}
	}
	return q.launch(k, args, size, 1)
}

// HostFunc implements plugin.Queue: fn runs in this process when the
// remote queue reaches it (the proxy's queue waits for it).
func (q *Queue) HostFunc(fn, user unsafe.Pointer) error {
	return q.hostCall(func(at uint64) func() error {
		return func() error { callHostFn(q, at, fn, user); return nil }
	})
}

// HostCall implements plugin.Queue: the proxy tells this process when the
// queue reaches the call, and holds the queue until fn has returned here.
func (q *Queue) HostCall(fn func() error) error {
	return q.hostCall(func(uint64) func() error { return fn })
}

// hostCall sends a host call; fn makes it, knowing its operation.
func (q *Queue) hostCall(fn func(at uint64) func() error) error {
	return q.numbered(func(at uint64) error {
		token := nextID()
		q.c.mu.Lock()
		q.c.hostCalls[token] = fn(at)
		q.c.mu.Unlock()
		if err := q.c.post(wire.OpHostCall, nil, q.id, token); err != nil {
			q.c.mu.Lock()
			delete(q.c.hostCalls, token)
			q.c.mu.Unlock()
			return err
		}
		return nil
	})
}

// Record implements plugin.Queue.
func (q *Queue) Record() (plugin.Event, error) { return q.record(false) }

// RecordTimed implements plugin.TimedQueue: the times are the proxy
// device's.
func (q *Queue) RecordTimed() (plugin.TimedEvent, error) { return q.record(true) }

func (q *Queue) record(timed bool) (*Event, error) {
	e := &Event{q: q, id: nextID()}
	t := uint64(0)
	if timed {
		t = 1
	}
	if err := q.numbered(func(at uint64) error {
		e.mark = at
		return q.c.post(wire.OpRecord, nil, q.id, e.id, t)
	}); err != nil {
		return nil, err
	}
	return e, nil
}

// Wait implements plugin.Queue.
func (q *Queue) Wait(e plugin.Event) error {
	re, ok := e.(*Event)
	if !ok || re.q.c != q.c {
		return ol.Errorf(ol.ErrcInvalidEvent, "%s: the event is not of this proxy", q.c.where())
	}
	return q.numbered(func(at uint64) error {
		if err := q.c.post(wire.OpWait, nil, q.id, re.id); err != nil {
			return err
		}
		q.waits = append(q.waits, queueWait{at: at, on: re.q, mark: re.mark})
		return nil
	})
}

// Sync implements plugin.Queue: it reports the first error of the work
// sent before it. The waits it saw done are forgotten.
func (q *Queue) Sync() error {
	q.mu.Lock()
	pos, bytes := q.ops, q.bytes
	q.bytes = 0
	q.mu.Unlock()
	// a sync after large copies polls for its reply while they can last
	// (1 ns a byte, as the transport's waits for large messages): one
	// that slept noticed the end of a 256 MiB copy 0.6-0.9 ms late
	if _, err := q.c.callSpin(time.Duration(min(bytes, 1<<30)), wire.OpQueueSync, nil, "", q.id); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.done = max(q.done, pos)
	kept := q.waits[:0]
	for _, w := range q.waits {
		if w.at > pos {
			kept = append(kept, w)
		}
	}
	clear(q.waits[len(kept):])
	q.waits = kept
	return nil
}

// Empty implements plugin.Queue.
func (q *Queue) Empty() bool {
	q.mu.Lock()
	pos, idle := q.ops, q.ops == q.done
	q.mu.Unlock()
	if idle {
		return true
	}
	r, err := q.c.call(wire.OpQueueEmpty, nil, "", q.id)
	if err == nil && r.Args[1] == 1 {
		q.completed(pos)
	}
	return err != nil || r.Args[1] == 1
}

// Release implements plugin.Queue.
func (q *Queue) Release() error {
	err := q.c.post(wire.OpQueueRelease, nil, q.id)
	if q.c.failed() != nil {
		return nil // nothing is left to release on a proxy that is gone
	}
	return err
}

// Event is an event of a remote queue.
type Event struct {
	q    *Queue
	id   uint64
	mark uint64 // the queue's operation (Point)
}

// Point implements plugin.PointEvent.
func (e *Event) Point() (plugin.Queue, uint64) { return e.q, e.mark }

// Sync implements plugin.Event.
func (e *Event) Sync() error {
	_, err := e.q.c.call(wire.OpEventSync, nil, "", e.id)
	return err
}

// Done implements plugin.Event (a proxy that is gone: done, its Sync says why).
func (e *Event) Done() bool {
	r, err := e.q.c.call(wire.OpEventDone, nil, "", e.id)
	return err != nil || r.Args[1] == 1
}

// Release implements plugin.Event.
func (e *Event) Release() error {
	if e.q.c.failed() != nil {
		return nil
	}
	return e.q.c.post(wire.OpEventRelease, nil, e.id)
}

// ElapsedSince implements plugin.TimedEvent, measured on the proxy.
func (e *Event) ElapsedSince(start plugin.TimedEvent) (float32, error) {
	s, ok := start.(*Event)
	if !ok || s.q.c != e.q.c {
		return 0, ol.Errorf(ol.ErrcInvalidEvent, "%s: the start event is not of this proxy", e.q.c.where())
	}
	r, err := e.q.c.call(wire.OpElapsed, nil, "", e.id, s.id)
	return math.Float32frombits(uint32(r.Args[1])), err
}

// OwnsPointer implements plugin.PointerDevice: the application reaches a
// remote device's memory only through olMemAlloc's allocations and loaded
// programs' globals, which the runtime places itself, so any other pointer
// is not this device's.
func (d *Device) OwnsPointer(uintptr) bool { return false }
