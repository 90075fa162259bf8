// Package fakegpu is a backend for the runtime's tests that behaves like a
// GPU where routing matters: its device memory is address space the CPU
// cannot touch (reserved without access, so a CPU read or write there ends
// the test with a fault), its queues complete work on their own goroutines
// (the "driver threads"), host functions and host calls are relayed to
// other goroutines, and every method checks that it only ever gets memory,
// devices and events of its own platform. What a test needs to see inside
// device memory it reads with Peek and writes with Poke, beside the API.
package fakegpu

/*
static void fakegpu_call(void *fn, void *user) { ((void (*)(void *))fn)(user); }
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// arenaSize is the device memory of each device.
const arenaSize = 1 << 30

// Options shape a fake platform.
type Options struct {
	Name    string
	Devices int
	// OpDelay is how long each copy takes on a queue, so that tests can
	// see two platforms' copies overlap.
	OpDelay time.Duration
	// OwnsPointers makes the devices answer plugin.PointerDevice.
	OwnsPointers bool
}

// Plugin is a fake backend; Platform is the platform its Init returns.
type Plugin struct {
	opts     Options
	Platform *Platform
}

// New returns a fake plugin.
func New(opts Options) *Plugin {
	if opts.Devices == 0 {
		opts.Devices = 1
	}
	return &Plugin{opts: opts}
}

// Name implements plugin.Plugin.
func (p *Plugin) Name() string { return p.opts.Name }

// Init implements plugin.Plugin.
func (p *Plugin) Init(plugin.Env) (plugin.Platform, error) {
	pl := &Platform{opts: p.opts}
	for i := 0; i < p.opts.Devices; i++ {
		d, err := newDevice(pl, i)
		if err != nil {
			return nil, err
		}
		pl.devices = append(pl.devices, d)
	}
	p.Platform = pl
	if p.opts.OwnsPointers {
		return &ownerPlatform{pl}, nil
	}
	return pl, nil
}

// Platform is a fake platform.
type Platform struct {
	opts    Options
	devices []*Device
	workers sync.WaitGroup

	mu         sync.Mutex
	violations []string
	// Stats
	Fills, Copies, HostCalls, Waits atomic.Int64
	spans                           []span
}

type span struct {
	dir        string // "in", "out", "dev"
	start, end time.Time
}

type ownerPlatform struct{ *Platform }

func (p *ownerPlatform) Devices() []plugin.Device {
	var out []plugin.Device
	for _, d := range p.devices {
		out = append(out, &ownerDevice{d})
	}
	return out
}

type ownerDevice struct{ *Device }

func (d *ownerDevice) OwnsPointer(p uintptr) bool { _, ok := d.shadow(p, 1); return ok }

// Violation records a breach of the plugin contract by the runtime.
func (p *Platform) violate(format string, args ...any) error {
	msg := fmt.Sprintf(p.opts.Name+": "+format, args...)
	p.mu.Lock()
	p.violations = append(p.violations, msg)
	p.mu.Unlock()
	return ol.NewError(ol.ErrcBackendFailure, msg)
}

// Violations returns every breach of the contract seen so far.
func (p *Platform) Violations() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.violations...)
}

// Overlapped reports whether a copy into this platform's devices ran while
// a copy out of src's devices was running.
func (p *Platform) Overlapped(src *Platform) bool {
	p.mu.Lock()
	in := append([]span(nil), p.spans...)
	p.mu.Unlock()
	src.mu.Lock()
	out := append([]span(nil), src.spans...)
	src.mu.Unlock()
	for _, a := range in {
		for _, b := range out {
			if a.dir == "in" && b.dir == "out" && a.start.Before(b.end) && b.start.Before(a.end) {
				return true
			}
		}
	}
	return false
}

func (p *Platform) Name() string                { return p.opts.Name }
func (p *Platform) Vendor() string              { return "fake" }
func (p *Platform) Version() string             { return "0" }
func (p *Platform) Backend() ol.PlatformBackend { return ol.PlatformBackendUnknown }
func (p *Platform) Devices() []plugin.Device {
	var out []plugin.Device
	for _, d := range p.devices {
		out = append(out, d)
	}
	return out
}

// Drain waits for every queue's goroutine.
func (p *Platform) Drain() error {
	p.workers.Wait()
	return nil
}

// Deinit waits for every queue's goroutine and unmaps device memory.
func (p *Platform) Deinit() error {
	p.workers.Wait()
	arenas.Lock()
	for _, d := range p.devices {
		for i, r := range arenas.list {
			if r[0] == d.base {
				arenas.list = append(arenas.list[:i], arenas.list[i+1:]...)
				break
			}
		}
		_ = syscall.Munmap(d.reserved)
		_ = syscall.Munmap(d.backing)
	}
	arenas.Unlock()
	return nil
}

// Device is a fake device: addresses in reserved, bytes in backing.
type Device struct {
	pl       *Platform
	index    int
	reserved []byte // PROT_NONE: the device addresses
	backing  []byte // where their bytes live
	base     uintptr

	mu   sync.Mutex
	next uintptr
}

func newDevice(pl *Platform, i int) (*Device, error) {
	r, err := syscall.Mmap(-1, 0, arenaSize, syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, err
	}
	b, err := syscall.Mmap(-1, 0, arenaSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, err
	}
	d := &Device{pl: pl, index: i, reserved: r, backing: b, base: uintptr(unsafe.Pointer(&r[0]))}
	arenas.Lock()
	arenas.list = append(arenas.list, [2]uintptr{d.base, d.base + arenaSize})
	arenas.Unlock()
	return d, nil
}

// Base is the first device address of d.
func (d *Device) Base() uintptr { return d.base }

func (d *Device) Info() *plugin.DeviceInfo {
	return &plugin.DeviceInfo{
		Type: plugin.Some(ol.DeviceTypeGpu),
		Name: plugin.Some(fmt.Sprintf("%s%d", d.pl.opts.Name, d.index)),
	}
}
func (d *Device) IsHost() bool { return false }

// shadow returns the bytes behind n device bytes at a.
func (d *Device) shadow(a uintptr, n uint64) ([]byte, bool) {
	if a < d.base || a-d.base >= arenaSize || n > arenaSize-uint64(a-d.base) {
		return nil, false
	}
	off := a - d.base
	return d.backing[off : off+uintptr(n)], true
}

// shadow finds device memory on any device of the platform, as a driver
// with unified addressing does.
func (p *Platform) shadow(a uintptr, n uint64) ([]byte, bool) {
	for _, d := range p.devices {
		if b, ok := d.shadow(a, n); ok {
			return b, true
		}
	}
	return nil, false
}

// Peek returns a copy of n bytes of device memory at a.
func (d *Device) Peek(a uintptr, n uint64) []byte {
	b, ok := d.shadow(a, n)
	if !ok {
		panic(fmt.Sprintf("Peek %#x: not memory of %s", a, d.Info().Name.V))
	}
	return append([]byte(nil), b...)
}

// Poke writes device memory at a.
func (d *Device) Poke(a uintptr, v []byte) {
	b, ok := d.shadow(a, uint64(len(v)))
	if !ok {
		panic(fmt.Sprintf("Poke %#x: not memory of %s", a, d.Info().Name.V))
	}
	copy(b, v)
}

func (d *Device) Alloc(kind ol.AllocType, size uint64) (uintptr, error) {
	if kind != ol.AllocTypeDevice {
		return 0, plugin.Unsupported(d.pl.opts.Name, "host and managed memory")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	size = (size + 255) &^ 255
	if uint64(d.next)+size > arenaSize {
		return 0, ol.NewError(ol.ErrcOutOfResources, "fake device memory is full")
	}
	p := d.base + d.next
	d.next += uintptr(size)
	return p, nil
}
func (d *Device) Free(uintptr, ol.AllocType) error { return nil }
func (d *Device) Register(uintptr, uint64) (uintptr, error) {
	return 0, plugin.Unsupported("fake", "register")
}
func (d *Device) Unregister(uintptr) error  { return plugin.Unsupported("fake", "register") }
func (d *Device) IsValidBinary([]byte) bool { return false }

// LoadProgram takes an image "FAKE" followed by the sizes of its globals,
// one byte each: global "g0" is the first, "g1" the second …
func (d *Device) LoadProgram(img []byte) (plugin.Program, error) {
	if len(img) < 4 || string(img[:4]) != "FAKE" {
		return nil, ol.NewError(ol.ErrcInvalidBinary, "not a fake image")
	}
	p := &program{}
	for _, n := range img[4:] {
		a, err := d.Alloc(ol.AllocTypeDevice, uint64(n))
		if err != nil {
			return nil, err
		}
		p.globals = append(p.globals, global{a, uint64(n)})
	}
	return p, nil
}

type global struct {
	addr uintptr
	size uint64
}
type program struct{ globals []global }

func (p *program) Kernel(string) (plugin.Kernel, error) {
	return nil, plugin.Unsupported("fake", "kernels")
}
func (p *program) Global(name string) (uintptr, uint64, error) {
	var i int
	if _, err := fmt.Sscanf(name, "g%d", &i); err != nil || i < 0 || i >= len(p.globals) {
		return 0, 0, ol.Errorf(ol.ErrcNotFound, "no global %q", name)
	}
	return p.globals[i].addr, p.globals[i].size, nil
}
func (p *program) Unload() error { return nil }

// own checks that dev is a device of this platform.
func (d *Device) own(dev plugin.Device) (*Device, error) {
	switch x := dev.(type) {
	case *Device:
		if x.pl == d.pl {
			return x, nil
		}
	case *ownerDevice:
		if x.pl == d.pl {
			return x.Device, nil
		}
	}
	return nil, d.pl.violate("got device %v of another platform", dev.Info().Name.V)
}

// hostBytes views host memory; it refuses device memory of any fake
// platform, which the CPU cannot touch.
func (d *Device) hostBytes(a uintptr, n uint64) ([]byte, error) {
	if isDeviceAddress(a) {
		return nil, d.pl.violate("host memory %#x is device memory of a fake platform", a)
	}
	return unsafe.Slice((*byte)(ptr(a)), n), nil
}

var arenas struct {
	sync.Mutex
	list [][2]uintptr
}

func isDeviceAddress(a uintptr) bool {
	arenas.Lock()
	defer arenas.Unlock()
	for _, r := range arenas.list {
		if a >= r[0] && a < r[1] {
			return true
		}
	}
	return false
}

func (d *Device) NewQueue() (plugin.Queue, error) {
	q := &Queue{dev: d}
	q.cond.L = &q.mu
	return q, nil
}

// Queue runs its work in order on a goroutine of its own while it has work.
type Queue struct {
	dev  *Device
	mu   sync.Mutex
	cond sync.Cond
	ops  []func() error
	busy bool
	err  error

	submitted, completed uint64
	gate                 chan struct{}
}

func (q *Queue) push(op func() error) {
	q.mu.Lock()
	q.ops = append(q.ops, op)
	q.submitted++
	start := !q.busy
	q.busy = true
	q.mu.Unlock()
	if start {
		q.dev.pl.workers.Add(1)
		go q.work()
	}
}

func (q *Queue) work() {
	defer q.dev.pl.workers.Done()
	q.mu.Lock()
	for len(q.ops) > 0 {
		op := q.ops[0]
		q.ops = q.ops[1:]
		q.mu.Unlock()
		err := op()
		q.mu.Lock()
		if err != nil && q.err == nil {
			q.err = err
		}
		q.completed++
		q.cond.Broadcast()
	}
	q.busy = false
	q.mu.Unlock()
}

// Block makes the queue's later work wait until the returned function is
// called.
func (q *Queue) Block() (release func()) {
	ch := make(chan struct{})
	q.push(func() error { <-ch; return nil })
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

func (q *Queue) timed(dir string, f func()) {
	start := time.Now()
	if q.dev.pl.opts.OpDelay > 0 {
		time.Sleep(q.dev.pl.opts.OpDelay)
	}
	f()
	q.dev.pl.mu.Lock()
	q.dev.pl.spans = append(q.dev.pl.spans, span{dir, start, time.Now()})
	q.dev.pl.mu.Unlock()
}

func (q *Queue) CopyToDevice(dst uintptr, dev plugin.Device, src uintptr, size uint64) error {
	dd, err := q.dev.own(dev)
	if err != nil {
		return err
	}
	to, ok := dd.pl.shadow(dst, size)
	if !ok {
		return ol.Errorf(ol.ErrcInvalidArgument, "%#x is not memory of %s", dst, dd.Info().Name.V)
	}
	from, err := q.dev.hostBytes(src, size)
	if err != nil {
		return err
	}
	q.dev.pl.Copies.Add(1)
	q.push(func() error { q.timed("in", func() { copy(to, from) }); return nil })
	return nil
}

func (q *Queue) CopyFromDevice(dst, src uintptr, dev plugin.Device, size uint64) error {
	sd, err := q.dev.own(dev)
	if err != nil {
		return err
	}
	from, ok := sd.pl.shadow(src, size)
	if !ok {
		return ol.Errorf(ol.ErrcInvalidArgument, "%#x is not memory of %s", src, sd.Info().Name.V)
	}
	to, err := q.dev.hostBytes(dst, size)
	if err != nil {
		return err
	}
	q.dev.pl.Copies.Add(1)
	q.push(func() error { q.timed("out", func() { copy(to, from) }); return nil })
	return nil
}

func (q *Queue) CopyDevice(dst uintptr, dstDev plugin.Device, src uintptr, srcDev plugin.Device, size uint64) error {
	dd, err := q.dev.own(dstDev)
	if err != nil {
		return err
	}
	sd, err := q.dev.own(srcDev)
	if err != nil {
		return err
	}
	to, ok1 := dd.pl.shadow(dst, size)
	from, ok2 := sd.pl.shadow(src, size)
	if !ok1 || !ok2 {
		return ol.Errorf(ol.ErrcInvalidArgument, "%#x or %#x is not device memory", dst, src)
	}
	q.dev.pl.Copies.Add(1)
	q.push(func() error { q.timed("dev", func() { copy(to, from) }); return nil })
	return nil
}

func (q *Queue) Fill(p uintptr, pattern unsafe.Pointer, patternSize, size uint64) error {
	to, ok := q.dev.pl.shadow(p, size)
	if !ok {
		return ol.Errorf(ol.ErrcInvalidArgument, "%s: fill of %#x, which is not its device memory", q.dev.pl.opts.Name, p)
	}
	pat := C.GoBytes(pattern, C.int(patternSize))
	q.dev.pl.Fills.Add(1)
	q.push(func() error {
		for i := 0; i < len(to); i += len(pat) {
			copy(to[i:], pat)
		}
		return nil
	})
	return nil
}

func (q *Queue) Launch(plugin.Kernel, []byte, plugin.LaunchSize) error {
	return plugin.Unsupported("fake", "kernels")
}

// HostFunc and HostCall relay to another goroutine (a library thread) and
// hold the queue until it returns, as a GPU backend relays from the
// driver's callback thread.
func (q *Queue) HostFunc(fn, user unsafe.Pointer) error {
	return q.HostCall(func() error { C.fakegpu_call(fn, user); return nil })
}

func (q *Queue) HostCall(fn func() error) error {
	q.dev.pl.HostCalls.Add(1)
	q.push(func() error {
		done := make(chan error)
		go func() { done <- fn() }()
		return <-done
	})
	return nil
}

// Event is a point of a fake queue.
type Event struct {
	q        *Queue
	mark     uint64
	released atomic.Bool
}

func (q *Queue) Record() (plugin.Event, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return &Event{q: q, mark: q.submitted}, nil
}

func (q *Queue) Wait(e plugin.Event) error {
	ev, ok := e.(*Event)
	if !ok || ev.q.dev.pl != q.dev.pl {
		return q.dev.pl.violate("asked to wait for an event of another platform")
	}
	// like a driver, the wait keeps what it needs: the event may be
	// released before the wait runs
	q.dev.pl.Waits.Add(1)
	other, mark := ev.q, ev.mark
	q.push(func() error { other.waitFor(mark); return nil })
	return nil
}

func (q *Queue) waitFor(mark uint64) {
	q.mu.Lock()
	for q.completed < mark {
		q.cond.Wait()
	}
	q.mu.Unlock()
}

func (q *Queue) Sync() error {
	q.mu.Lock()
	for q.completed < q.submitted {
		q.cond.Wait()
	}
	err := q.err
	q.err = nil
	q.mu.Unlock()
	return err
}

func (q *Queue) Empty() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.completed == q.submitted
}

func (q *Queue) Release() error { return nil }

func (e *Event) Sync() error {
	if e.released.Load() {
		return e.q.dev.pl.violate("event used after Release")
	}
	e.q.waitFor(e.mark)
	return nil
}

func (e *Event) Done() bool {
	if e.released.Load() {
		_ = e.q.dev.pl.violate("event used after Release")
		return true
	}
	e.q.mu.Lock()
	defer e.q.mu.Unlock()
	return e.q.completed >= e.mark
}

func (e *Event) Release() error {
	if e.released.Swap(true) {
		return e.q.dev.pl.violate("event released twice")
	}
	return nil
}

// ptr turns an address of C memory into a pointer.
func ptr(a uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }
