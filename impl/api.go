package impl

/*
#include <stdbool.h>
#include <stdint.h>

typedef bool (*ol_iterate_cb)(void *device, void *user);

static inline bool ol_call_iterate(void *cb, uintptr_t device, void *user) {
  return ((ol_iterate_cb)cb)((void *)device, user);
}
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/fault"
	"github.com/liboffload-go/liboffload-go/plugins/image"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// Queue is an in-order queue of a device.
type Queue struct {
	h      uintptr
	id     uint64
	device *Device
	q      plugin.Queue
	// calls counts the calls using the queue (enter, leave); finished:
	// its destroy is complete (finishRetire)
	calls    atomic.Int64
	finished atomic.Bool
	// mirrored: the C entry points may answer for the queue (queuemirror.go)
	mirrored bool
	// registered: the C free path checks that the queue is idle (pool.go);
	// else the queue counts in its gate while it lives
	registered bool
}

// Event marks a point of a queue. It keeps the queue's handle and id, not
// the queue, so it stays usable after the queue is destroyed. The events
// of idle queues live in C (doneevents.go): the table makes one of these
// for a call that decodes such a handle (e nil, no queue id, no refs).
type Event struct {
	h       uintptr
	device  *Device
	queueH  uintptr
	queueID uint64
	e       plugin.Event      // nil: a done event (complete when created)
	timed   plugin.TimedEvent // a profiling event (e is the same event); nil otherwise
	// refs counts the handle and the waits of other platforms' queues
	// (waitOther) that still need e; the last one releases it.
	refs atomic.Int32
}

// Program is a loaded image with its symbol cache.
type Program struct {
	h         uintptr
	device    *Device
	p         plugin.Program
	imageSize uint64

	mu      sync.Mutex
	symbols map[symbolKey]*Symbol

	// refs counts the handle and the calls (launches, occupancy queries)
	// that are using the plugin's program now, with the flags below. The
	// last one out after olDestroyProgram unloads the program, so a
	// destroy racing a launch never pulls the code from under it, and a
	// launch that starts after the destroy fails instead (see use).
	refs atomic.Int64
}

const (
	progDestroyed = 1 << 40 // set by olDestroyProgram
	progUnloaded  = 1 << 41 // set by the one that calls Unload
)

// use takes a reference for a call that reaches the plugin's program
// through one of its kernels, or says that the program was destroyed. The
// caller releases it when the plugin no longer needs the program: a plugin
// keeps it itself for the launches it has queued (plugin.Program).
func (p *Program) use(fn string, k *Symbol) error {
	if p.refs.Add(1)&progDestroyed != 0 {
		_ = p.release()
		return ol.Errorf(ol.ErrcInvalidArgument, "%s: kernel %q (%#x) belongs to program %#x, which was destroyed", fn, k.name, k.h, p.h)
	}
	return nil
}

// release drops a reference. After the destroy, the one that finds none
// left unloads; the swap makes it exactly one, as a refused use may add
// and drop a reference even after that.
func (p *Program) release() error {
	if p.refs.Add(-1) == progDestroyed && p.refs.CompareAndSwap(progDestroyed, progDestroyed|progUnloaded) {
		return p.p.Unload()
	}
	return nil
}

type symbolKey struct {
	name string
	kind ol.SymbolKind
}

// Symbol is a kernel or global variable of a program.
type Symbol struct {
	h       uintptr
	program *Program
	kind    ol.SymbolKind
	name    string
	kernel  plugin.Kernel
	addr    uintptr
	size    uint64
	// mirrored: olLaunchKernel of the kernel may be answered in C
	// (queuemirror.go)
	mirrored bool
}

func (c *Context) olIterateDevices(cb, user unsafe.Pointer) error { // unsafe: a C function and its data, only ever called from C
	// No lock is held while user code runs: the callback may call back in.
	for _, d := range c.deviceList {
		if !bool(C.ol_call_iterate(cb, C.uintptr_t(d.h), user)) {
			break
		}
	}
	return nil
}

func (c *Context) olMemRegister(dev *Device, ptr uintptr, size uint64, flags uint32) (uintptr, error) {
	if size == 0 {
		return 0, ol.NewError(ol.ErrcInvalidSize, "Size is 0")
	}
	if builtRelease >= Release23_1 {
		// 22.1 reserves the flags; 23.1 defines them
		if err := registerFlags("olMemRegister", flags); err != nil {
			return 0, err
		}
	}
	return dev.d.Register(ptr, size)
}

func (c *Context) olMemUnregister(dev *Device, ptr uintptr) error {
	return dev.d.Unregister(ptr)
}

func (c *Context) olCreateQueue(dev *Device) (uintptr, error) {
	pq, err := dev.d.NewQueue()
	if err != nil {
		return 0, err
	}
	q := &Queue{id: c.queueIDs.Add(1), device: dev, q: pq}
	if q.h, err = c.queues.insert(q); err != nil {
		_ = pq.Release()
		return 0, err
	}
	c.mirrorQueue(q)
	c.countQueue(q)
	return q.h, nil
}

func (c *Context) olDestroyQueue(q *Queue) error {
	if !c.retireQueue(q) {
		return c.queues.explain(q.h, "Queue")
	}
	if q.calls.Add(queueRetired) != queueRetired {
		return nil // the last call still using q finishes the destroy (leave)
	}
	return c.finishRetire(q)
}

// queueRetired is added to Queue.calls by olDestroyQueue: from then on
// the count is negative, and the call that brings it back to queueRetired
// is the last one that uses the queue.
const queueRetired = -1 << 40

// enter counts a call that decoded q's handle and is about to use q; it
// fails (the caller reports q as destroyed) once olDestroyQueue has run.
// The call's entry point (zentry.go) calls leave when it returns.
func (q *Queue) enter(c *Context) bool {
	if q.calls.Add(1) > 0 {
		return true
	}
	q.leave(c)
	return false
}

// leave ends what enter counted; the last call out of a destroyed queue
// finishes its destroy (an error then is kept for the final olShutDown).
func (q *Queue) leave(c *Context) {
	if q.calls.Add(-1) == queueRetired {
		if err := c.finishRetire(q); err != nil {
			c.frees.note(wrapErr("olDestroyQueue (finished by the last call using the queue)", err))
		}
	}
}

func (c *Context) olSyncQueue(q *Queue) error {
	if plugin.HostFunctionsRunning() {
		return c.syncFromHostFunction("olSyncQueue", q.q, queuePoint(q.q), q.q.Sync)
	}
	return q.q.Sync()
}

func (c *Context) olWaitEvents(q *Queue, events []uintptr) error {
	for i, h := range events {
		if h == 0 {
			return ol.NewError(ol.ErrcInvalidNullHandle, "olWaitEvents asked to wait on a NULL event")
		}
		if isDoneEvent(h) && doneEventLive(h) {
			continue // complete (and no Event object to make)
		}
		e, err := c.events.get(h, "Events")
		if err != nil {
			// the element's name only on failure: no formatting per wait
			return c.events.explain(h, fmt.Sprintf("Events[%d]", i))
		}
		if e.queueID == q.id || e.e == nil {
			continue
		}
		if e.device.platform != q.device.platform {
			if err := c.waitOther(q, e); err != nil {
				return err
			}
			continue
		}
		if err := q.q.Wait(e.e); err != nil {
			return err
		}
	}
	return nil
}

func (c *Context) queueInfo(q *Queue, prop ol.QueueInfo) (infoValue, error) {
	switch prop {
	case ol.QueueInfoDevice:
		return handleValue(q.device.h), nil
	case ol.QueueInfoEmpty:
		return boolValue(q.q.Empty()), nil
	}
	return infoValue{}, badEnum("olGetQueueInfo", uint32(prop))
}

func (c *Context) olLaunchHostFunction(q *Queue, cb, user unsafe.Pointer) error { // unsafe: a C function and its data, only ever called from C
	return q.q.HostFunc(cb, user)
}

func (c *Context) olCreateEvent(q *Queue) (uintptr, error) {
	return c.olCreateEvent23(q, ol.EventFlagsNone)
}

// olCreateEvent23 records a plain event (none on a queue without work: it
// is complete) or a profiling event (always recorded: its point is a time).
func (c *Context) olCreateEvent23(q *Queue, flags ol.EventFlags) (uintptr, error) {
	e := &Event{device: q.device, queueH: q.h, queueID: q.id}
	var err error
	switch flags {
	case ol.EventFlagsNone:
		if !q.q.Empty() {
			e.e, err = q.q.Record()
		}
	case ol.EventFlagsEnableProfiling:
		tq, ok := q.q.(plugin.TimedQueue)
		if !ok {
			return 0, ol.Errorf(ol.ErrcUnsupported, "queue %#x: device %s records no profiling events", q.h, q.device.d.Info().Name.V)
		}
		if e.timed, err = tq.RecordTimed(); err == nil {
			e.e = e.timed
		}
	default:
		return 0, ol.Errorf(ol.ErrcInvalidEnumeration, "Flags is %d, not an ol_event_flags_t", uint32(flags))
	}
	if err != nil {
		return 0, err
	}
	if e.e == nil {
		return makeDoneEvent(q)
	}
	e.refs.Store(1)
	if e.h, err = c.events.insert(e); err != nil {
		_ = e.e.Release()
		return 0, err
	}
	return e.h, nil
}

func (c *Context) olDestroyEvent(e *Event) error {
	if isDoneEvent(e.h) {
		if !destroyDoneEvent(e.h) {
			return c.events.explain(e.h, "Event")
		}
		return nil
	}
	if !c.events.remove(e.h) {
		return c.events.explain(e.h, "Event")
	}
	return e.releaseRef()
}

func (c *Context) olSyncEvent(e *Event) error {
	if e.e == nil {
		return nil
	}
	if plugin.HostFunctionsRunning() {
		if p, ok := e.e.(plugin.PointEvent); ok {
			if q, at := p.Point(); at != 0 {
				return c.syncFromHostFunction("olSyncEvent", q, at, e.e.Sync)
			}
		}
	}
	return e.e.Sync()
}

func (c *Context) eventInfo(e *Event, prop ol.EventInfo) (infoValue, error) {
	switch prop {
	case ol.EventInfoQueue:
		return handleValue(e.queueH), nil
	case ol.EventInfoIsComplete:
		return boolValue(e.e == nil || e.e.Done()), nil
	}
	return infoValue{}, badEnum("olGetEventInfo", uint32(prop))
}

// img is the caller's memory, read only during this call (the caller may
// free it when we return): no copy on the Go heap, which would add the
// image's size to every load's garbage.
func (c *Context) olCreateProgram(dev *Device, img []byte) (uintptr, error) {
	if err := checkImage("olCreateProgram", dev, img); err != nil {
		return 0, err
	}
	pp, err := dev.d.LoadProgram(img)
	if err != nil {
		return 0, err
	}
	p := &Program{device: dev, p: pp, imageSize: uint64(len(img)), symbols: map[symbolKey]*Symbol{}}
	p.refs.Store(1) // the handle's
	if p.h, err = c.programs.insert(p); err != nil {
		_ = pp.Unload()
		return 0, err
	}
	return p.h, nil
}

func (c *Context) olIsValidBinary(dev *Device, img []byte) (bool, error) {
	return len(img) > 0 && checkImage("olIsValidBinary", dev, img) == nil && dev.d.IsValidBinary(img), nil
}

// checkImage classifies an image once and asks the device whether it loads
// that kind (plugin.ImageDevice); a refusal says what the image is and
// what the device needs. Devices that do not say accept everything here
// and judge the image themselves.
func checkImage(fn string, dev *Device, img []byte) error {
	d, ok := dev.d.(plugin.ImageDevice)
	if !ok {
		return nil
	}
	info := image.Classify(img)
	if ok, need := d.AcceptsImage(info); !ok {
		di := dev.d.Info()
		name, product := di.Name.V, di.ProductName.V
		if product != "" && product != name {
			name = product + ", " + name
		}
		return ol.Errorf(ol.ErrcInvalidBinary, "%s: the image is %s; device %#x (%s) needs %s",
			fn, info.Phrase(), dev.h, name, need)
	}
	return nil
}

func (c *Context) olDestroyProgram(p *Program) error {
	if !c.programs.remove(p.h) {
		return c.programs.explain(p.h, "Program")
	}
	p.dropSymbols(c)
	// the handle's reference goes; a call still in the plugin unloads
	// when it is done (and its error then goes unreported)
	p.refs.Add(progDestroyed)
	return p.release()
}

// dropSymbols destroys the program's symbols: no C launch of its kernels
// from here on, no handle of them valid.
func (p *Program) dropSymbols(c *Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fault.Point()
	for _, s := range p.symbols {
		c.unmirrorKernel(s)
		c.symbols.remove(s.h)
		if s.kind == ol.SymbolKindGlobalVariable && s.size > 0 {
			c.globals.removeBase(uint64(s.addr))
		}
	}
	p.symbols = nil
}

// unmirror takes the program's kernels out of the C launch path (at
// the final olShutDown).
func (p *Program) unmirror(c *Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fault.Point()
	for _, s := range p.symbols {
		c.unmirrorKernel(s)
	}
}

func (c *Context) olGetSymbol(p *Program, name string, kind ol.SymbolKind) (uintptr, error) {
	if !kind.Valid() {
		return 0, ol.Errorf(ol.ErrcInvalidEnumeration, "getSymbol kind enum '%d' is invalid", uint32(kind))
	}
	key := symbolKey{name: name, kind: kind}
	p.mu.Lock()
	defer p.mu.Unlock()
	fault.Point()
	if p.symbols == nil {
		return 0, ol.Errorf(ol.ErrcInvalidArgument, "Program (%#x) was destroyed", p.h)
	}
	if s, ok := p.symbols[key]; ok {
		return s.h, nil
	}
	s := &Symbol{program: p, kind: kind, name: key.name}
	var err error
	if kind == ol.SymbolKindKernel {
		s.kernel, err = p.p.Kernel(key.name)
	} else {
		s.addr, s.size, err = p.p.Global(key.name)
	}
	if err != nil {
		return 0, err
	}
	if s.h, err = c.symbols.insert(s); err != nil {
		return 0, err
	}
	if kind == ol.SymbolKindGlobalVariable && s.size > 0 {
		// known as the program's device memory (see ownerOf)
		c.globals.insert(&alloc{base: uint64(s.addr), size: s.size, kind: ol.AllocTypeDevice, device: p.device})
	}
	if kind == ol.SymbolKindKernel {
		c.mirrorKernel(s)
	}
	p.symbols[key] = s
	return s.h, nil
}

func (c *Context) symbolInfo(s *Symbol, prop ol.SymbolInfo) (infoValue, error) {
	switch prop {
	case ol.SymbolInfoKind:
		return enumValue(uint32(s.kind)), nil
	case ol.SymbolInfoGlobalVariableAddress, ol.SymbolInfoGlobalVariableSize:
		if s.kind != ol.SymbolKindGlobalVariable {
			return infoValue{}, ol.Errorf(ol.ErrcSymbolKind, "%s: Expected a symbol of Kind %s but given a symbol of Kind %s",
				prop, ol.SymbolKindGlobalVariable, s.kind)
		}
		if prop == ol.SymbolInfoGlobalVariableAddress {
			return infoValue{kind: ol.ValuePointer, u: uint64(s.addr)}, nil
		}
		return u64(s.size), nil
	}
	return infoValue{}, badEnum("olGetSymbolInfo", uint32(prop))
}

func (c *Context) kernelOf(dev *Device, k *Symbol) error {
	if k.kind != ol.SymbolKindKernel {
		return ol.NewError(ol.ErrcSymbolKind, "provided symbol is not a kernel")
	}
	if k.program.device != dev {
		return ol.Errorf(ol.ErrcInvalidDevice, "kernel %q belongs to a program of device %#x, not of device %#x", k.name, k.program.device.h, dev.h)
	}
	return nil
}

// args is the caller's memory, valid during the call: the plugin copies
// what it keeps.
func (c *Context) olLaunchKernel(q *Queue, dev *Device, k *Symbol, args []byte, la *ol.KernelLaunchSizeArgs) error {
	if err := c.launchTarget(q, dev, k); err != nil {
		return err
	}
	return c.launch(q, dev, k, args, la, false)
}

// launchTarget checks that the kernel and the queue (if any) are of dev.
func (c *Context) launchTarget(q *Queue, dev *Device, k *Symbol) error {
	if q != nil && q.device != dev {
		return ol.NewError(ol.ErrcInvalidDevice, "device specified does not match the device of the given queue")
	}
	return c.kernelOf(dev, k)
}

// launch submits a launch whose queue, kernel and argument bytes are
// checked, on q or (q nil) on a queue of its own, waiting for it.
func (c *Context) launch(q *Queue, dev *Device, k *Symbol, args []byte, la *ol.KernelLaunchSizeArgs, cooperative bool) error {
	size := plugin.LaunchSize{NumGroups: la.NumGroups, GroupSize: la.GroupSize, DynSharedMemory: la.DynSharedMemory}
	if err := k.program.use("olLaunchKernel", k); err != nil {
		return err
	}
	defer k.program.release()
	if q != nil {
		return submitLaunch(q.q, dev, k, args, size, cooperative)
	}
	return onTempQueue(dev, func(tq plugin.Queue) error { return submitLaunch(tq, dev, k, args, size, cooperative) })
}

func submitLaunch(pq plugin.Queue, dev *Device, k *Symbol, args []byte, size plugin.LaunchSize, cooperative bool) error {
	if !cooperative {
		return pq.Launch(k.kernel, args, size)
	}
	cq, ok := pq.(plugin.CooperativeQueue)
	if !ok {
		return ol.Errorf(ol.ErrcUnsupported, "device %s has no cooperative launch", dev.d.Info().Name.V)
	}
	return cq.LaunchCooperative(k.kernel, args, size)
}

func (c *Context) olCalculateOptimalOccupancy(dev *Device, k *Symbol, shared uint64) (uint64, error) {
	if err := c.kernelOf(dev, k); err != nil {
		return 0, err
	}
	if err := k.program.use("olCalculateOptimalOccupancy", k); err != nil {
		return 0, err
	}
	defer k.program.release()
	return k.kernel.MaxGroupSize(shared)
}
