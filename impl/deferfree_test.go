package impl

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// A platform whose queues' work is a gate the test opens, and whose device
// has room for a fixed number of allocations and logs its frees: enough to
// see when the runtime releases memory.
type dfPlatform struct {
	fakePlatform
	dev *dfDevice
}

func (p *dfPlatform) Devices() []plugin.Device { return []plugin.Device{p.dev} }
func (p *dfPlatform) Deinit() error {
	p.dev.note("deinit")
	return nil
}

type dfPlugin struct{ p *dfPlatform }

func (dfPlugin) Name() string                               { return "df" }
func (f dfPlugin) Init(plugin.Env) (plugin.Platform, error) { return f.p, nil }

type dfDevice struct {
	plugin.Device
	mu    sync.Mutex
	log   []string
	live  map[uintptr]bool
	room  int // allocations it can hold at once
	next  uintptr
	freed chan uintptr
	evRel int // events released
	evNew int
}

func newDFDevice(room int) *dfDevice {
	return &dfDevice{live: map[uintptr]bool{}, room: room, next: 0x10000, freed: make(chan uintptr, 64)}
}

func (d *dfDevice) note(s string) {
	d.mu.Lock()
	d.log = append(d.log, s)
	d.mu.Unlock()
}

func (d *dfDevice) Info() *plugin.DeviceInfo {
	return &plugin.DeviceInfo{Type: plugin.Some(ol.DeviceTypeGpu)}
}
func (d *dfDevice) IsHost() bool { return false }

func (d *dfDevice) Alloc(kind ol.AllocType, size uint64) (uintptr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.live) >= d.room {
		return 0, ol.NewError(ol.ErrcOutOfResources, "df device is full")
	}
	p := d.next
	d.next += 0x10000
	d.live[p] = true
	return p, nil
}

func (d *dfDevice) Free(p uintptr, kind ol.AllocType) error {
	d.mu.Lock()
	ok := d.live[p]
	delete(d.live, p)
	d.log = append(d.log, fmt.Sprintf("free %#x", p))
	d.mu.Unlock()
	if !ok {
		return ol.Errorf(ol.ErrcInvalidArgument, "df: %#x is not live", p)
	}
	d.freed <- p
	return nil
}

func (d *dfDevice) NewQueue() (plugin.Queue, error) {
	return &dfQueue{d: d, work: closedChan()}, nil
}

func closedChan() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// dfQueue's work so far ends when the test closes work (gate).
type dfQueue struct {
	plugin.Queue
	d    *dfDevice
	mu   sync.Mutex
	work chan struct{}
	ops  uint64 // gates submitted (plugin.WaitGraphQueue)
}

func (q *dfQueue) Position() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ops
}

func (q *dfQueue) Waits(uint64, func(plugin.Queue, uint64)) {}

// gate gives the queue work that ends when the returned function is called.
func (q *dfQueue) gate() (open func()) {
	ch := make(chan struct{})
	q.mu.Lock()
	prev := q.work
	q.work = ch
	q.ops++
	q.mu.Unlock()
	return func() { <-prev; close(ch) }
}

func (q *dfQueue) cur() chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.work
}

func (q *dfQueue) Empty() bool {
	select {
	case <-q.cur():
		return true
	default:
		return false
	}
}

func (q *dfQueue) Record() (plugin.Event, error) {
	q.d.mu.Lock()
	q.d.evNew++
	q.d.mu.Unlock()
	return &dfEvent{d: q.d, ch: q.cur()}, nil
}

func (q *dfQueue) Sync() error    { <-q.cur(); return nil }
func (q *dfQueue) Release() error { return nil }

type dfEvent struct {
	d  *dfDevice
	ch chan struct{}
}

func (e *dfEvent) Sync() error { <-e.ch; return nil }
func (e *dfEvent) Done() bool {
	select {
	case <-e.ch:
		return true
	default:
		return false
	}
}
func (e *dfEvent) Release() error {
	e.d.mu.Lock()
	e.d.evRel++
	e.d.mu.Unlock()
	return nil
}

type dfEnv struct {
	t   *testing.T
	c   *Context
	dev *dfDevice
	d   *Device
}

func newDFEnv(t *testing.T, room int) *dfEnv {
	t.Helper()
	pl := &dfPlatform{fakePlatform: fakePlatform{name: "DF"}, dev: newDFDevice(room)}
	c, err := newContext(generations{}, []plugin.Plugin{dfPlugin{pl}})
	if err != nil {
		t.Fatal(err)
	}
	return &dfEnv{t: t, c: c, dev: pl.dev, d: c.deviceList[0]}
}

func (e *dfEnv) alloc() uintptr {
	e.t.Helper()
	var p uintptr
	if err := e.c.callOlMemAlloc(e.d.h, uint32(ol.AllocTypeDevice), 64, unsafe.Pointer(&p)); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *dfEnv) queue() (uintptr, *dfQueue) {
	e.t.Helper()
	var h uintptr
	if err := e.c.callOlCreateQueue(e.d.h, unsafe.Pointer(&h)); err != nil {
		e.t.Fatal(err)
	}
	q, err := e.c.queues.get(h, "Queue")
	if err != nil {
		e.t.Fatal(err)
	}
	return h, q.q.(*dfQueue)
}

func (e *dfEnv) destroyQueue(h uintptr) {
	e.t.Helper()
	if err := e.c.callOlDestroyQueue(h); err != nil {
		e.t.Fatal(err)
	}
}

func (e *dfEnv) free(p uintptr) {
	e.t.Helper()
	if err := e.c.callOlMemFree(ptr(p)); err != nil {
		e.t.Fatalf("olMemFree(%#x): %v", p, err)
	}
}

// freed reports whether p is freed within wait (0: already); no other
// allocation may be.
func (e *dfEnv) freed(p uintptr, wait time.Duration) bool {
	e.t.Helper()
	var got uintptr
	if wait == 0 {
		select {
		case got = <-e.dev.freed:
		default:
			return false
		}
	} else {
		select {
		case got = <-e.dev.freed:
		case <-time.After(wait):
			return false
		}
	}
	if got != p {
		e.t.Fatalf("freed %#x, expected %#x", got, p)
	}
	return true
}

func (e *dfEnv) teardown() {
	e.t.Helper()
	if err := e.c.teardown(); err != nil {
		e.t.Fatalf("teardown: %v", err)
	}
}

// With no queue holding work, olMemFree frees before it returns.
func TestFreeIdleIsImmediate(t *testing.T) {
	e := newDFEnv(t, 4)
	_, _ = e.queue()
	p := e.alloc()
	e.free(p)
	if !e.freed(p, 0) {
		t.Fatal("free with idle queues was deferred")
	}
	if e.c.frees.done != nil {
		t.Fatal("the worker started for an immediate free")
	}
	e.teardown()
}

// Work queued before the free keeps the memory: the allocation leaves the
// API at once, the device frees it only when the work has ended, and a
// marker of each busy queue (live or destroyed) is waited for.
func TestFreeWaitsForQueuedWork(t *testing.T) {
	for _, destroyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("destroyed=%v", destroyed), func(t *testing.T) {
			e := newDFEnv(t, 4)
			h1, q1 := e.queue()
			_, q2 := e.queue()
			_, _ = e.queue() // idle: gets no marker
			p := e.alloc()
			open1, open2 := q1.gate(), q2.gate()
			if destroyed {
				e.destroyQueue(h1)
			}
			e.free(p)
			if _, err := e.c.memInfo(p, ol.MemInfoBase); err == nil {
				t.Fatal("olGetMemInfo of a freed pointer succeeds")
			}
			if err := e.c.callOlMemFree(ptr(p)); err == nil {
				t.Fatal("a second olMemFree succeeds")
			}
			open1()
			if e.freed(p, 50*time.Millisecond) {
				t.Fatal("freed while the second queue's work is pending")
			}
			open2()
			if !e.freed(p, 5*time.Second) {
				t.Fatal("not freed after the work ended")
			}
			e.teardown()
			e.dev.mu.Lock()
			defer e.dev.mu.Unlock()
			if e.dev.evNew != e.dev.evRel || e.dev.evNew != 2 {
				t.Fatalf("%d markers recorded, %d released; want 2 and 2", e.dev.evNew, e.dev.evRel)
			}
		})
	}
}

// An allocation that finds the device full while frees of its memory wait
// for work waits for them, then succeeds.
func TestAllocWaitsForDeferredFrees(t *testing.T) {
	e := newDFEnv(t, 1)
	_, q := e.queue()
	p := e.alloc()
	open := q.gate()
	e.free(p)
	go func() {
		time.Sleep(30 * time.Millisecond)
		open()
	}()
	p2 := e.alloc() // the device holds one: only after the deferred free
	if !e.freed(p, 0) {
		t.Fatal("the allocation succeeded before the free")
	}
	e.free(p2)
	e.teardown()
}

// The final shutdown frees what still waits, after the work ended (the
// teardown syncs every queue first) and before the platform's Deinit;
// the worker is gone afterwards (goleak checks the package).
func TestShutdownFreesPending(t *testing.T) {
	e := newDFEnv(t, 8)
	h, q := e.queue()
	open := q.gate()
	var ps []uintptr
	for i := 0; i < 5; i++ {
		p := e.alloc()
		ps = append(ps, p)
		e.free(p)
	}
	e.destroyQueue(h)
	go func() {
		time.Sleep(30 * time.Millisecond)
		open()
	}()
	e.teardown()
	select {
	case <-e.c.frees.done:
	default:
		t.Fatal("the worker still runs after teardown")
	}
	e.dev.mu.Lock()
	defer e.dev.mu.Unlock()
	var want []string
	for _, p := range ps {
		want = append(want, fmt.Sprintf("free %#x", p))
	}
	want = append(want, "deinit")
	if got := strings.Join(e.dev.log, ", "); got != strings.Join(want, ", ") {
		t.Fatalf("teardown: %s, want %s", got, strings.Join(want, ", "))
	}
	if len(e.dev.live) != 0 || e.dev.evNew != e.dev.evRel {
		t.Fatalf("%d allocations live, %d of %d markers released", len(e.dev.live), e.dev.evRel, e.dev.evNew)
	}
}

// Frees racing each other and queue destruction: every allocation is freed
// exactly once, none before its work, and markers are all released.
func TestDeferredFreesConcurrent(t *testing.T) {
	e := newDFEnv(t, 1<<20)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				var h uintptr
				if err := e.c.callOlCreateQueue(e.d.h, unsafe.Pointer(&h)); err != nil {
					t.Error(err)
					return
				}
				q, _ := e.c.queues.get(h, "Queue")
				open := q.q.(*dfQueue).gate()
				var p uintptr
				if err := e.c.callOlMemAlloc(e.d.h, uint32(ol.AllocTypeDevice), 64, unsafe.Pointer(&p)); err != nil {
					t.Error(err)
					return
				}
				if err := e.c.callOlMemFree(ptr(p)); err != nil {
					t.Error(err)
				}
				if i%2 == 0 {
					_ = e.c.callOlDestroyQueue(h)
					open()
				} else {
					open()
					_ = e.c.callOlDestroyQueue(h)
				}
			}
		}()
	}
	go func() {
		for range e.dev.freed {
		}
	}()
	wg.Wait()
	e.teardown()
	close(e.dev.freed)
	e.dev.mu.Lock()
	defer e.dev.mu.Unlock()
	if len(e.dev.live) != 0 || e.dev.evNew != e.dev.evRel {
		t.Fatalf("%d allocations live, %d of %d markers released", len(e.dev.live), e.dev.evRel, e.dev.evNew)
	}
}

// Frees made while a queue gets no new work share its marker; new work
// gets a new one. All are freed once the work ends.
func TestFreesShareMarkers(t *testing.T) {
	e := newDFEnv(t, 16)
	_, q := e.queue()
	open1 := q.gate()
	var ps []uintptr
	for i := 0; i < 5; i++ {
		p := e.alloc()
		ps = append(ps, p)
		e.free(p)
	}
	open2 := q.gate()
	p := e.alloc()
	ps = append(ps, p)
	e.free(p)
	e.dev.mu.Lock()
	n := e.dev.evNew
	e.dev.mu.Unlock()
	if n != 2 {
		t.Fatalf("%d markers for 6 frees in two positions of one queue, want 2", n)
	}
	open1()
	open2()
	for _, p := range ps {
		if !e.freed(p, 5*time.Second) {
			t.Fatalf("%#x not freed after the work ended", p)
		}
	}
	e.teardown()
	e.dev.mu.Lock()
	defer e.dev.mu.Unlock()
	if e.dev.evRel != 2 {
		t.Fatalf("%d of 2 markers released", e.dev.evRel)
	}
}
