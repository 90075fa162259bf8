// Package server is offload-proxy's side of the remote protocol: it serves
// the platforms of its machine (initialised by the same plugins as the
// library's, through plugins/plugin) to the clients of a job. Each client
// rank has objects of its own (queues, events, programs, allocations),
// named by numbers the client chooses; Bye or Exit from a client releases
// everything it created. Every message is decoded and every argument
// checked (a known object, a device number, sizes) before the plugins see
// it: a malformed request is answered with an error, or, for a request
// that is not answered, kept as the error of the next sync.
package server

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/cmem"
	"github.com/liboffload-go/liboffload-go/internal/rangeset"
	"github.com/liboffload-go/liboffload-go/internal/remote/link"
	"github.com/liboffload-go/liboffload-go/internal/remote/wire"
	"github.com/liboffload-go/liboffload-go/plugins/image"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// SendTimeout bounds a send to a client (a client that no longer receives).
var SendTimeout = 30 * time.Second

// MaxCopy bounds the size of one CopyFrom or CopyDevice request.
const MaxCopy = 1 << 40

type device struct {
	index    uint32
	platform plugin.Platform
	d        plugin.Device
}

// Server serves platforms over an Endpoint.
type Server struct {
	ep        link.Endpoint
	platforms []plugin.Platform
	devices   []device
	log       io.Writer

	// Clients is how many clients end the job: once that many have sent
	// Exit, Serve returns (0: only when the Endpoint is closed).
	Clients int

	mu      sync.Mutex
	clients map[int]*client
	exited  int
	wg      sync.WaitGroup // requests running on goroutines of their own
	peer    peers          // copies between proxies (peer.go), under mu
	frames  []wire.Msg     // the last batch's requests (Serve's goroutine only)
}

// New returns a server of platforms (initialised, with their devices)
// over ep. log gets a line per client error that cannot be reported to the
// client (nil: none).
func New(ep link.Endpoint, platforms []plugin.Platform, log io.Writer) *Server {
	s := &Server{ep: ep, platforms: platforms, log: log, clients: map[int]*client{}}
	for _, p := range platforms {
		for _, d := range p.Devices() {
			s.devices = append(s.devices, device{uint32(len(s.devices)), p, d})
		}
	}
	if p, ok := ep.(link.Placer); ok {
		p.SetPlace(s.place)
	}
	return s
}

func (s *Server) logf(format string, args ...any) {
	if s.log != nil {
		fmt.Fprintf(s.log, "offload-proxy rank %d: "+format+"\n", append([]any{s.ep.Rank()}, args...)...)
	}
}

// Serve answers messages until the Endpoint is closed or every client
// (Clients) has sent Exit. It waits in Recv without bound: an idle proxy
// does not spin. Then it releases what clients left.
func (s *Server) Serve() error {
	defer s.releaseAll()
	for {
		src, b, err := s.ep.Recv(0)
		if errors.Is(err, link.ErrClosed) {
			return nil
		}
		var dropped *link.DroppedError
		if errors.As(err, &dropped) {
			s.dropped(dropped)
			continue
		}
		if err != nil {
			return err
		}
		m, err := wire.Decode(b)
		if err != nil {
			s.logf("from rank %d: %v", src, err)
			// the sequence number is unknown: an answer could match a
			// wrong request, so none is sent
			link.Free(s.ep, b)
			continue
		}
		if m.Op == wire.OpBatch {
			s.batch(src, &m)
			link.Free(s.ep, b)
			continue
		}
		if m.Op == wire.OpExit {
			link.Free(s.ep, b)
			s.byeClient(src)
			s.mu.Lock()
			s.exited++
			done := s.Clients > 0 && s.exited >= s.Clients
			s.mu.Unlock()
			if done {
				return nil
			}
			continue
		}
		s.handle(src, &m, func() { link.Free(s.ep, b) })
	}
}

// dropped answers a request the transport could not keep (no memory for
// it) with its error, or keeps the error for the client's next sync; the
// request is known by its head (without one, only the log tells).
func (s *Server) dropped(d *link.DroppedError) {
	m, _, herr := wire.DecodeHeader(d.Head)
	if herr != nil {
		s.logf("from rank %d: %v", d.Src, d)
		return
	}
	err := ol.Errorf(ol.ErrcOutOfResources, "the proxy could not receive a %v request of %d bytes: %v", m.Op, d.Size, d.Err)
	if m.Op.WantsReply() {
		s.reply(d.Src, m.Seq, err, wire.Msg{})
		return
	}
	c := s.client(d.Src)
	c.mu.Lock()
	c.errs = append(c.errs, err)
	c.mu.Unlock()
}

// batch handles a Batch's requests in order, each as if it had come
// alone. A malformed batch is refused whole (none of it runs): logged,
// and kept as the client's error for its next sync, since its requests
// are posts whose errors a sync reports (a call in it goes unanswered,
// as a malformed lone call does, and times out).
func (s *Server) batch(src int, m *wire.Msg) {
	ms, err := wire.DecodeBatch(m, s.frames)
	if err != nil {
		s.logf("from rank %d: %v", src, err)
		c := s.client(src)
		c.mu.Lock()
		c.errs = append(c.errs, bad("%v", err))
		c.mu.Unlock()
		return
	}
	s.frames = ms
	for i := range ms {
		s.handle(src, &ms[i], nil)
	}
}

func (s *Server) releaseAll() {
	s.wg.Wait()
	s.mu.Lock()
	ranks := make([]int, 0, len(s.clients))
	for r := range s.clients {
		ranks = append(ranks, r)
	}
	s.mu.Unlock()
	for _, r := range ranks {
		s.byeClient(r)
	}
}

// client is one client rank's objects.
type client struct {
	rank int

	mu       sync.Mutex
	queues   map[uint64]*queue
	events   map[uint64]plugin.Event
	programs map[uint64]plugin.Program
	kernels  map[uint64]kernel
	allocs   map[uint64]alloc
	spans    rangeset.Set // the allocations' ranges, for ownsOn
	globals  []global
	calls    map[uint64]chan error // host calls waiting for HostDone
	errs     []error               // errors of requests without a queue, for the next sync
	gone     bool
}

type queue struct {
	q   plugin.Queue
	dev *device
	err error // the first error of a request that never reached the plugin
}

// kernel is a kernel and the program it belongs to (unloading the program
// forgets its kernels: a launch of one afterwards is an error, not a jump
// into unmapped code).
type kernel struct {
	k       plugin.Kernel
	program uint64
}

type alloc struct {
	dev  *device
	kind ol.AllocType
	size uint64
}

// global is a program global the client looked up: memory it may copy
// to and from.
type global struct {
	program    uint64
	addr, size uint64
}

func (s *Server) client(rank int) *client {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[rank]
	if c == nil {
		c = &client{rank: rank, queues: map[uint64]*queue{}, events: map[uint64]plugin.Event{},
			programs: map[uint64]plugin.Program{}, kernels: map[uint64]kernel{},
			allocs: map[uint64]alloc{}, calls: map[uint64]chan error{}}
		s.clients[rank] = c
	}
	return c
}

func bad(format string, args ...any) error {
	return ol.Errorf(ol.ErrcInvalidArgument, format, args...)
}

func (s *Server) device(i uint64) (*device, error) {
	if i >= uint64(len(s.devices)) {
		return nil, bad("no device %d on this proxy (%d devices)", i, len(s.devices))
	}
	return &s.devices[i], nil
}

func (s *Server) send(rank int, m *wire.Msg) error {
	b, err := wire.Encode(m)
	if err != nil {
		return err
	}
	return s.ep.Send(rank, b, SendTimeout)
}

func (s *Server) reply(rank int, seq uint64, err error, m wire.Msg) {
	m.Op, m.Seq = wire.OpReply, seq
	if err != nil {
		code, details := ol.ErrcUnknown, err.Error()
		var oe *ol.Error
		if errors.As(err, &oe) {
			code, details = oe.Code, oe.Details
		}
		if code == ol.ErrcSuccess {
			code = ol.ErrcUnknown
		}
		if len(details) > wire.MaxText {
			details = details[:wire.MaxText]
		}
		m.Args = [wire.MaxArgs]uint64{uint64(code)}
		m.Text, m.Data = details, nil
	}
	if err := s.send(rank, &m); err != nil {
		s.logf("reply to rank %d: %v", rank, err)
	}
}

// handle runs one request. Queue operations run here, in the order they
// came (the plugins' queue calls do not wait for the work); calls that
// wait (syncs, loads, allocations) run on a goroutine of their own so that
// the loop keeps reading (a HostDone that a sync waits for).
//
// free (nil for a batch's frame) gives the message's memory back to the
// transport; handle calls it once done with m.
func (s *Server) handle(src int, m *wire.Msg, free func()) {
	if m.Op == wire.OpPeerData || m.Op == wire.OpPeerDone || m.Op == wire.OpPeerReady {
		if free != nil {
			defer free()
		}
		s.fromPeer(src, m)
		return
	}
	c := s.client(src)
	if m.Op.WantsReply() && !s.quick(c, m) {
		own := *m // m may be a frame of s.frames, which the next batch reuses
		if free == nil {
			// (a frame's bytes are the batch's, given back after it)
			own.Data = slices.Clone(own.Data)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			var r wire.Msg
			err := s.call(c, &own, &r)
			s.reply(src, own.Seq, err, r)
			if free != nil {
				free()
			}
		}()
		return
	}
	if free != nil {
		defer free()
	}
	a := m.Args
	if m.Op.WantsReply() {
		// answered here, at once: no hand-off to another goroutine
		var r wire.Msg
		err := s.call(c, m, &r)
		s.reply(src, m.Seq, err, r)
		return
	}
	var err error
	var q *queue
	switch m.Op {
	case wire.OpQueueNew:
		err = s.queueNew(c, a[0], a[1])
	case wire.OpHostDone:
		c.mu.Lock()
		ch := c.calls[a[0]]
		delete(c.calls, a[0])
		c.mu.Unlock()
		if ch == nil {
			err = bad("HostDone of unknown host call %d", a[0])
			break
		}
		var herr error
		if a[1] != 0 {
			herr = ol.NewError(ol.Errc(a[1]), m.Text)
		}
		ch <- herr
	case wire.OpQueueRelease, wire.OpCopyTo, wire.OpCopyFrom, wire.OpCopyDevice, wire.OpFill,
		wire.OpLaunch, wire.OpHostCall, wire.OpRecord, wire.OpWait, wire.OpPeerSend:
		q, err = c.queue(a[0])
		if err == nil {
			err = s.queueOp(c, q, m)
			if err != nil {
				c.mu.Lock()
				if q.err == nil {
					q.err = err
				}
				c.mu.Unlock()
				return
			}
		}
	case wire.OpPeerRecv:
		err = s.peerRecv(c, a)
	case wire.OpEventRelease:
		c.mu.Lock()
		e := c.events[a[0]]
		delete(c.events, a[0])
		c.mu.Unlock()
		if e == nil {
			err = bad("release of unknown event %d", a[0])
		} else {
			err = e.Release()
		}
	default:
		err = bad("%v is not a request", m.Op)
	}
	if err != nil {
		c.mu.Lock()
		c.errs = append(c.errs, fmt.Errorf("%v: %w", m.Op, err))
		c.mu.Unlock()
	}
}

// quickWait is how long the loop waits for a queue to finish its work
// before a sync goes to a goroutine of its own: an empty kernel's launch
// just before a sync is then answered from the loop.
const quickWait = 20 * time.Microsecond

// quick says whether a request that wants a reply can be answered without
// waiting: a ping, a question about a queue or event, a sync of a queue
// that is (or within quickWait becomes) idle.
func (s *Server) quick(c *client, m *wire.Msg) bool {
	switch m.Op {
	case wire.OpPing, wire.OpQueueEmpty, wire.OpEventDone:
		return true
	case wire.OpQueueSync:
		q, err := c.queue(m.Args[0])
		if err != nil {
			return true // the error is the answer
		}
		if q.q.Empty() {
			return true
		}
		for start := link.Now(); !q.q.Empty(); {
			waited := link.Now() - start
			if waited > quickWait {
				return false
			}
			// the queue's runner is a goroutine of this process: with
			// one processor (a proxy bound to a core) it runs only when
			// this loop lets it, which runtime.Gosched does without a
			// system call; later also sched_yield, for devices whose
			// work runs on threads of their own (a launch + sync took
			// 7.1 µs yielding at every poll, 4.8 µs so)
			if waited < quickWait/4 {
				runtime.Gosched()
			} else {
				link.Yield()
			}
		}
		return true
	}
	return false
}

// owns checks that [p, p+n) lies in one allocation of the client or one
// global of its programs: copies and fills reach no other memory of the
// proxy (a hostile client cannot write over the proxy's own).
func (c *client) owns(what string, p, n uint64) error { return c.ownsOn(what, nil, p, n) }

func (c *client) queue(id uint64) (*queue, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.queues[id]
	if q == nil {
		return nil, bad("no queue %d", id)
	}
	return q, nil
}

func (s *Server) queueNew(c *client, dev, id uint64) error {
	d, err := s.device(dev)
	if err != nil {
		return err
	}
	c.mu.Lock()
	_, dup := c.queues[id]
	c.mu.Unlock()
	if dup {
		return bad("queue %d exists", id)
	}
	pq, err := d.d.NewQueue()
	if err != nil {
		// the client learns it at the queue's first sync
		c.mu.Lock()
		c.queues[id] = &queue{q: failedQueue{err}, dev: d, err: err}
		c.mu.Unlock()
		return nil
	}
	c.mu.Lock()
	c.queues[id] = &queue{q: pq, dev: d}
	c.mu.Unlock()
	return nil
}

// staging is C memory for a copy's bytes until the queue is past the copy.
func staging(n uint64) (unsafe.Pointer, error) {
	return cmem.Malloc(max(n, 1), "a remote copy's staging buffer")
}

// sameDevicePlatform refuses a device of another platform than the queue's.
func (s *Server) devOf(q *queue, i uint64) (*device, error) {
	d, err := s.device(i)
	if err != nil {
		return nil, err
	}
	if d.platform != q.dev.platform {
		return nil, bad("device %d is not on the platform of the queue's device %d", i, q.dev.index)
	}
	return d, nil
}

func (s *Server) queueOp(c *client, q *queue, m *wire.Msg) error {
	a := m.Args
	switch m.Op {
	case wire.OpQueueRelease:
		c.mu.Lock()
		delete(c.queues, a[0])
		c.mu.Unlock()
		return q.q.Release()
	case wire.OpCopyTo:
		d, err := s.devOf(q, a[1])
		if err != nil {
			return err
		}
		n := uint64(len(m.Data))
		if err := c.owns("copy destination", a[2], n); err != nil {
			return err
		}
		buf, err := staging(n)
		if err != nil {
			return err
		}
		copy(unsafe.Slice((*byte)(buf), n), m.Data)
		if err := q.q.CopyToDevice(uintptr(a[2]), d.d, uintptr(buf), n); err != nil {
			cmem.Free(buf)
			return err
		}
		return s.after(q, func() error { cmem.Free(buf); return nil }, func() { cmem.Free(buf) })
	case wire.OpCopyFrom:
		d, err := s.devOf(q, a[1])
		if err != nil {
			return err
		}
		src, n, token := a[2], a[3], a[4]
		if n > MaxCopy {
			return bad("copy of %d bytes from %#x", n, src)
		}
		if err := c.owns("copy source", src, n); err != nil {
			return err
		}
		buf, err := staging(n)
		if err != nil {
			return err
		}
		if err := q.q.CopyFromDevice(uintptr(buf), uintptr(src), d.d, n); err != nil {
			cmem.Free(buf)
			return err
		}
		return s.after(q, func() error {
			defer cmem.Free(buf)
			data := unsafe.Slice((*byte)(buf), n)
			return s.send(c.rank, &wire.Msg{Op: wire.OpData, Args: [wire.MaxArgs]uint64{token, 0}, Data: data})
		}, func() { cmem.Free(buf) })
	case wire.OpCopyDevice:
		dd, err := s.devOf(q, a[1])
		if err != nil {
			return err
		}
		sd, err := s.devOf(q, a[3])
		if err != nil {
			return err
		}
		if a[5] > MaxCopy {
			return bad("device copy of %d bytes", a[5])
		}
		if err := c.owns("copy destination", a[2], a[5]); err != nil {
			return err
		}
		if err := c.owns("copy source", a[4], a[5]); err != nil {
			return err
		}
		return q.q.CopyDevice(uintptr(a[2]), dd.d, uintptr(a[4]), sd.d, a[5])
	case wire.OpPeerSend:
		return s.peerSend(c, q, a)
	case wire.OpFill:
		ps := uint64(len(m.Data))
		if ps == 0 || a[2]%ps != 0 {
			return bad("fill of %d bytes with a %d-byte pattern", a[2], ps)
		}
		if err := c.owns("fill", a[1], a[2]); err != nil {
			return err
		}
		pat, err := cmem.Copy(unsafe.Pointer(&m.Data[0]), ps, "a fill pattern")
		if err != nil {
			return err
		}
		defer cmem.Free(pat) // the queue copies the pattern it keeps
		return q.q.Fill(uintptr(a[1]), pat, ps, a[2])
	case wire.OpLaunch:
		c.mu.Lock()
		kr, ok := c.kernels[a[1]]
		c.mu.Unlock()
		if !ok {
			return bad("no kernel %d", a[1])
		}
		k := kr.k
		for _, v := range a[2:9] {
			if v > 1<<32-1 {
				return bad("launch size %d does not fit 32 bits", v)
			}
		}
		size := plugin.LaunchSize{
			NumGroups:       ol.Dimensions{X: uint32(a[2]), Y: uint32(a[3]), Z: uint32(a[4])},
			GroupSize:       ol.Dimensions{X: uint32(a[5]), Y: uint32(a[6]), Z: uint32(a[7])},
			DynSharedMemory: a[8],
		}
		switch a[9] {
		case 0:
			return q.q.Launch(k, m.Data, size)
		case 1:
			cq, ok := q.q.(plugin.CooperativeQueue)
			if !ok {
				return plugin.Unsupported(q.dev.platform.Name(), "a cooperative launch")
			}
			return cq.LaunchCooperative(k, m.Data, size)
		}
		return bad("launch mode %d", a[9])
	case wire.OpHostCall:
		token := a[1]
		ch := make(chan error, 1)
		c.mu.Lock()
		if c.gone {
			c.mu.Unlock()
			return errors.New("the client is gone")
		}
		c.calls[token] = ch
		c.mu.Unlock()
		err := q.q.HostCall(func() error {
			if err := s.send(c.rank, &wire.Msg{Op: wire.OpCallHost, Args: [wire.MaxArgs]uint64{token}}); err != nil {
				return err
			}
			return <-ch
		})
		if err != nil {
			c.mu.Lock()
			delete(c.calls, token)
			c.mu.Unlock()
		}
		return err
	case wire.OpRecord:
		c.mu.Lock()
		_, dup := c.events[a[1]]
		c.mu.Unlock()
		if dup {
			return bad("event %d exists", a[1])
		}
		var e plugin.Event
		var err error
		if a[2] != 0 {
			tq, ok := q.q.(plugin.TimedQueue)
			if !ok {
				return plugin.Unsupported(q.dev.platform.Name(), "a profiling event")
			}
			e, err = tq.RecordTimed()
		} else {
			e, err = q.q.Record()
		}
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.events[a[1]] = e
		c.mu.Unlock()
		return nil
	case wire.OpWait:
		c.mu.Lock()
		e := c.events[a[1]]
		c.mu.Unlock()
		if e == nil {
			return bad("wait for unknown event %d", a[1])
		}
		return q.q.Wait(e)
	}
	return bad("%v is not a queue operation", m.Op)
}

// after runs fn once q is past the work submitted so far; undo runs when
// that cannot be arranged.
func (s *Server) after(q *queue, fn func() error, undo func()) error {
	if err := q.q.HostCall(fn); err != nil {
		undo()
		return err
	}
	return nil
}

func boolArg(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// call answers a request that waits for a reply (on a goroutine of its own).
func (s *Server) call(c *client, m *wire.Msg, r *wire.Msg) error {
	a := m.Args
	switch m.Op {
	case wire.OpHello:
		if a[0] != wire.Version {
			return ol.Errorf(ol.ErrcUnsupported, "protocol version %d (this proxy speaks %d)", a[0], wire.Version)
		}
		inv := wire.Inventory{Host: s.ep.Host()}
		for _, p := range s.platforms {
			pd := wire.PlatformDesc{Name: p.Name(), Vendor: p.Vendor(), Version: p.Version(), Backend: uint32(p.Backend())}
			for i := range s.devices {
				if s.devices[i].platform == p {
					pd.Devices = append(pd.Devices, wire.DeviceDesc{Index: s.devices[i].index, Info: *s.devices[i].d.Info()})
				}
			}
			inv.Platforms = append(inv.Platforms, pd)
		}
		r.Data = wire.AppendInventory(nil, &inv)
		return nil
	case wire.OpPing:
		return nil
	case wire.OpBye:
		s.byeClient(c.rank)
		return nil
	case wire.OpAlloc:
		d, err := s.device(a[0])
		if err != nil {
			return err
		}
		kind := ol.AllocType(a[1])
		if a[1] > 1<<31 || !kind.Valid() {
			return bad("allocation kind %d", a[1])
		}
		if a[2] == 0 {
			return bad("allocation of 0 bytes")
		}
		p, err := d.d.Alloc(kind, a[2])
		if err != nil {
			return err
		}
		base, end := uint64(p), uint64(p)+a[2]
		c.mu.Lock()
		clash := end < base || c.spans.Overlaps(base, end)
		if !clash {
			c.allocs[base] = alloc{d, kind, a[2]}
			c.spans.Insert(base, end)
		}
		c.mu.Unlock()
		if clash {
			// (a device that hands out memory twice: the book stays right)
			_ = d.d.Free(p, kind)
			return ol.Errorf(ol.ErrcBackendFailure, "device %d returned %#x..%#x, which overlaps memory this client holds", d.index, base, end)
		}
		r.Args[1] = uint64(p)
		return nil
	case wire.OpFree:
		c.mu.Lock()
		al, ok := c.allocs[a[1]]
		if ok && al.dev.index == uint32(a[0]) {
			delete(c.allocs, a[1])
			c.spans.Remove(a[1])
		}
		c.mu.Unlock()
		if !ok || al.dev.index != uint32(a[0]) || a[0] > 1<<31 {
			return bad("%#x is not an allocation of device %d by this client", a[1], a[0])
		}
		return al.dev.d.Free(uintptr(a[1]), al.kind)
	case wire.OpEventSync, wire.OpEventDone:
		c.mu.Lock()
		e := c.events[a[0]]
		c.mu.Unlock()
		if e == nil {
			return bad("no event %d", a[0])
		}
		if m.Op == wire.OpEventDone {
			r.Args[1] = boolArg(e.Done())
			return nil
		}
		return e.Sync()
	case wire.OpElapsed:
		c.mu.Lock()
		e, st := c.events[a[0]], c.events[a[1]]
		c.mu.Unlock()
		te, ok1 := e.(plugin.TimedEvent)
		ts, ok2 := st.(plugin.TimedEvent)
		if !ok1 || !ok2 {
			return bad("events %d and %d are not both profiling events", a[0], a[1])
		}
		ms, err := te.ElapsedSince(ts)
		r.Args[1] = uint64(math.Float32bits(ms))
		return err
	case wire.OpQueueSync:
		q, err := c.queue(a[0])
		if err != nil {
			return err
		}
		err = q.q.Sync()
		c.mu.Lock()
		if q.err != nil {
			err, q.err = q.err, nil
		}
		if err == nil && len(c.errs) > 0 {
			err = c.errs[0]
			c.errs = c.errs[1:]
		}
		c.mu.Unlock()
		return err
	case wire.OpQueueEmpty:
		q, err := c.queue(a[0])
		if err != nil {
			return err
		}
		r.Args[1] = boolArg(q.q.Empty())
		return nil
	case wire.OpDrain:
		var errs []error
		for _, p := range s.platforms {
			errs = append(errs, p.Drain())
		}
		return errors.Join(errs...)
	case wire.OpValidBinary:
		d, err := s.device(a[0])
		if err != nil {
			return err
		}
		r.Args[1] = boolArg(accepts(d, m.Data) == nil && d.d.IsValidBinary(m.Data))
		return nil
	case wire.OpLoad:
		d, err := s.device(a[0])
		if err != nil {
			return err
		}
		if err := accepts(d, m.Data); err != nil {
			return err
		}
		c.mu.Lock()
		_, dup := c.programs[a[1]]
		c.mu.Unlock()
		if dup {
			return bad("program %d exists", a[1])
		}
		p, err := d.d.LoadProgram(m.Data)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.programs[a[1]] = p
		c.mu.Unlock()
		return nil
	case wire.OpUnload:
		c.mu.Lock()
		p := c.programs[a[0]]
		delete(c.programs, a[0])
		for id, k := range c.kernels {
			if k.program == a[0] {
				delete(c.kernels, id)
			}
		}
		c.globals = slices.DeleteFunc(c.globals, func(g global) bool { return g.program == a[0] })
		c.mu.Unlock()
		if p == nil {
			return bad("unload of unknown program %d", a[0])
		}
		return p.Unload()
	case wire.OpKernel, wire.OpGlobal:
		c.mu.Lock()
		p := c.programs[a[0]]
		c.mu.Unlock()
		if p == nil {
			return bad("no program %d", a[0])
		}
		if m.Op == wire.OpGlobal {
			addr, size, err := p.Global(m.Text)
			r.Args[1], r.Args[2] = uint64(addr), size
			if err == nil {
				c.mu.Lock()
				c.globals = append(c.globals, global{a[0], uint64(addr), size})
				c.mu.Unlock()
			}
			return err
		}
		c.mu.Lock()
		_, dup := c.kernels[a[1]]
		c.mu.Unlock()
		if dup {
			return bad("kernel %d exists", a[1])
		}
		k, err := p.Kernel(m.Text)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.kernels[a[1]] = kernel{k, a[0]}
		c.mu.Unlock()
		if pk, ok := k.(plugin.ParamKernel); ok {
			if ps, ok := pk.Params(); ok {
				pairs := make([][2]uint64, len(ps))
				for i, p := range ps {
					pairs[i] = [2]uint64{p.Offset, p.Size}
				}
				r.Args[1] = 1
				r.Data = wire.AppendParams(nil, pairs)
			}
		}
		if _, ok := k.(plugin.CooperativeKernel); ok {
			r.Args[2] = 1
		}
		return nil
	case wire.OpMaxGroup, wire.OpMaxCoop:
		c.mu.Lock()
		kr, ok := c.kernels[a[0]]
		c.mu.Unlock()
		if !ok {
			return bad("no kernel %d", a[0])
		}
		k := kr.k
		if m.Op == wire.OpMaxGroup {
			n, err := k.MaxGroupSize(a[1])
			r.Args[1] = n
			return err
		}
		ck, ok := k.(plugin.CooperativeKernel)
		if !ok {
			return ol.NewError(ol.ErrcUnsupported, "the kernel's device has no cooperative launches")
		}
		for _, v := range a[1:4] {
			if v > 1<<32-1 {
				return bad("group size %d does not fit 32 bits", v)
			}
		}
		n, err := ck.MaxCooperativeGroups(ol.Dimensions{X: uint32(a[1]), Y: uint32(a[2]), Z: uint32(a[3])}, a[4])
		r.Args[1] = uint64(n)
		return err
	}
	return bad("%v is not a call", m.Op)
}

// accepts asks a device that says which images it loads (as the runtime
// does before IsValidBinary and LoadProgram).
func accepts(d *device, img []byte) error {
	id, ok := d.d.(plugin.ImageDevice)
	if !ok {
		return nil
	}
	info := image.Classify(img)
	if ok, need := id.AcceptsImage(info); !ok {
		return ol.Errorf(ol.ErrcInvalidBinary, "the image is %s; device %d (%s) needs %s", info.Phrase(), d.index, d.d.Info().Name.V, need)
	}
	return nil
}

// byeClient releases everything rank created: its queues' work ends
// first (host calls still waiting are ended with an error), then events,
// programs and allocations go.
func (s *Server) byeClient(rank int) {
	s.mu.Lock()
	c := s.clients[rank]
	delete(s.clients, rank)
	s.mu.Unlock()
	if c == nil {
		return
	}
	c.mu.Lock()
	c.gone = true
	for t, ch := range c.calls {
		ch <- errors.New("the client left")
		delete(c.calls, t)
	}
	queues, events, programs, allocs := c.queues, c.events, c.programs, c.allocs
	// (empty, not nil: a request of this client still running may add to them)
	c.queues, c.events, c.programs = map[uint64]*queue{}, map[uint64]plugin.Event{}, map[uint64]plugin.Program{}
	c.allocs, c.kernels, c.globals = map[uint64]alloc{}, map[uint64]kernel{}, nil
	c.spans = rangeset.Set{}
	c.mu.Unlock()
	s.dropGrants(rank)
	for _, q := range queues {
		_ = q.q.Sync()
		_ = q.q.Release()
	}
	for _, p := range s.platforms {
		_ = p.Drain()
	}
	for _, e := range events {
		_ = e.Release()
	}
	for _, p := range programs {
		_ = p.Unload()
	}
	for p, a := range allocs {
		_ = a.dev.d.Free(uintptr(p), a.kind)
	}
}

// failedQueue stands for a queue the plugin could not make: every use
// reports why.
type failedQueue struct{ err error }

func (f failedQueue) CopyToDevice(uintptr, plugin.Device, uintptr, uint64) error { return f.err }
func (f failedQueue) CopyFromDevice(uintptr, uintptr, plugin.Device, uint64) error {
	return f.err
}
func (f failedQueue) CopyDevice(uintptr, plugin.Device, uintptr, plugin.Device, uint64) error {
	return f.err
}
func (f failedQueue) Fill(uintptr, unsafe.Pointer, uint64, uint64) error { return f.err }
func (f failedQueue) Launch(plugin.Kernel, []byte, plugin.LaunchSize) error {
	return f.err
}
func (f failedQueue) HostFunc(unsafe.Pointer, unsafe.Pointer) error { return f.err }
func (f failedQueue) HostCall(func() error) error                   { return f.err }
func (f failedQueue) Record() (plugin.Event, error)                 { return nil, f.err }
func (f failedQueue) Wait(plugin.Event) error                       { return f.err }
func (f failedQueue) Sync() error                                   { return f.err }
func (f failedQueue) Empty() bool                                   { return true }
func (f failedQueue) Release() error                                { return nil }
