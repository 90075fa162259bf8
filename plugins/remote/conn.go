package remote

/*
#include <stdint.h>
static void remote_call_host_fn(void *fn, void *user) { ((void (*)(void *))fn)(user); }
// the host function this thread runs (0: none), for CallbackPlatform and
// HostFunctionPlatform
static __thread uint64_t remote_in_host_fn;
static void remote_set_in_host_fn(uint64_t v) { remote_in_host_fn = v; }
static uint64_t remote_get_in_host_fn(void) { return remote_in_host_fn; }
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/cmem"
	"github.com/liboffload-go/liboffload-go/internal/remote/link"
	"github.com/liboffload-go/liboffload-go/internal/remote/wire"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// ids numbers the objects (queues, events, programs, kernels) and the
// tokens (reads, host calls) the client names on proxies, and the
// requests' sequence numbers: never reused in the process, so a late
// answer of an earlier epoch matches nothing.
var ids atomic.Uint64

func nextID() uint64 { return ids.Add(1) }

func ptr(a uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }

// read is where the bytes of a CopyFrom chunk go.
type read struct {
	dst uintptr
	n   uint64
}

// conn is the client's side of one proxy rank.
type conn struct {
	s       *session
	ep      link.Endpoint
	rank    int
	host    string
	timeout time.Duration
	chunk   uint64
	reserve bool // reserve the ranges of allocations here (reserve.go)

	mu        sync.Mutex
	pending   map[uint64]chan wire.Msg // by sequence number
	reads     map[uint64]read          // by token
	hostCalls map[uint64]func() error  // by token
	dead      error                    // set once: every later call fails with it

	heard atomic.Int64 // counts the messages from the proxy (a call's timeout)
	calls sync.WaitGroup

	// Posts wait in out, a Batch being built, until a message that must go
	// now (a call, a large payload) takes them along or goes after them,
	// the batch passes batchBytes, or its first post is batchAge old (on
	// the next post; otherwise by the receiver of a link.Poller, which
	// polls anyway, or without one by the timer aged). omu orders this
	// process's messages to the proxy: it is held while out grows and
	// while a batch and the small message after it are sent.
	omu     sync.Mutex
	out     []byte        // wire.MaxHeader bytes for the Batch's header, then frames
	outN    uint64        // frames in out
	outAt   time.Duration // link.Now at the batch's first post
	since   atomic.Int64  // outAt while outN > 0, else 0 (for the receiver)
	aged    *time.Timer
	agedSet bool
}

// Batching of posts (conn.post).
const (
	batchBytes = 32 << 10 // a batch's frames: then it is sent (one MPI eager message)
	batchFrame = 4 << 10  // a post with more payload goes alone, after the batch
	batchAge   = 50 * time.Microsecond
)

func newConn(s *session, p link.Peer, timeout time.Duration, chunk uint64) *conn {
	c := &conn{s: s, ep: s.ep, rank: p.Rank, host: p.Host, timeout: timeout, chunk: chunk,
		pending: map[uint64]chan wire.Msg{}, reads: map[uint64]read{}, hostCalls: map[uint64]func() error{},
		out: make([]byte, wire.MaxHeader, wire.MaxHeader+batchBytes+batchFrame+256)}
	liveConns.Store(c, struct{}{})
	return c
}

// liveConns are the conns of sessions not closed: at the process's exit
// their batches go before Exit (flushAll).
var liveConns sync.Map

// flushAll sends every live conn's batch (not one that a thread is
// sending now: the process's exit does not wait for it).
func flushAll() {
	liveConns.Range(func(k, _ any) bool {
		c := k.(*conn)
		if c.omu.TryLock() {
			_ = c.flushLocked()
			c.omu.Unlock()
		}
		return true
	})
}

// where names the proxy in errors.
func (c *conn) where() string { return fmt.Sprintf("remote rank %d (host %s)", c.rank, c.host) }

func (c *conn) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead
}

// kill marks the proxy unusable: pending calls end with err.
func (c *conn) kill(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead != nil {
		return
	}
	c.dead = err
	for s, ch := range c.pending {
		close(ch)
		delete(c.pending, s)
	}
}

// copiedBytes counts the bytes of copies between this process and proxies
// (CopyTo and Data payloads): the tests check that a copy between two
// proxies adds none.
var copiedBytes atomic.Uint64

// send sends m now, after the posts waiting in the batch (m goes as the
// batch's last frame where it fits: one message).
func (c *conn) send(m *wire.Msg) error {
	if err := c.failed(); err != nil {
		return err
	}
	if m.Op == wire.OpCopyTo {
		copiedBytes.Add(uint64(len(m.Data)))
	}
	c.omu.Lock()
	if c.outN > 0 && len(m.Data)+len(m.Text) <= batchFrame {
		defer c.omu.Unlock()
		if err := c.appendLocked(m); err != nil {
			return err
		}
		return c.flushLocked()
	}
	if err := c.flushLocked(); err != nil {
		c.omu.Unlock()
		return err
	}
	if len(m.Data)+len(m.Text) >= bigMessage {
		// the later messages of this thread wait for this send anyway;
		// other threads' need not
		c.omu.Unlock()
	} else {
		defer c.omu.Unlock()
	}
	return c.sendNow(m)
}

// sendNow sends m alone.
func (c *conn) sendNow(m *wire.Msg) error {
	if g, ok := c.ep.(link.Gatherer); ok && len(m.Data) >= bigMessage && len(m.Text) == 0 {
		// a copy's bytes go from where they are (no copy into the message)
		var hb [wire.MaxHeader]byte
		head, err := wire.AppendHeader(hb[:0], m, uint64(len(m.Data)))
		if err == nil {
			if err := g.SendParts(c.rank, head, m.Data, c.timeout); err != nil {
				e := ol.Errorf(ol.ErrcBackendFailure, "%s: %v", c.where(), err)
				c.kill(e)
				return e
			}
			return nil
		}
	}
	var b []byte
	if n := uint64(len(m.Data) + len(m.Text) + 16*(wire.MaxArgs+3)); n >= bigMessage {
		cb, err := cmem.Malloc(n, "a remote request's message")
		if err != nil {
			return err
		}
		defer cmem.Free(cb)
		b = unsafe.Slice((*byte)(cb), n)[:0]
	}
	b, err := wire.Append(b, m)
	if err != nil {
		return ol.Errorf(ol.ErrcInvalidArgument, "%s: %v", c.where(), err)
	}
	return c.sendBytes(b)
}

func (c *conn) sendBytes(b []byte) error {
	if err := c.ep.Send(c.rank, b, c.timeout); err != nil {
		e := ol.Errorf(ol.ErrcBackendFailure, "%s: %v", c.where(), err)
		c.kill(e)
		return e
	}
	return nil
}

// post queues a request that is not answered (its errors come at the next
// sync) in the batch: it goes with the next message that must go now, or
// within about batchAge.
func (c *conn) post(op wire.Op, data []byte, args ...uint64) error {
	m := wire.Msg{Op: op, Seq: 0, Data: data}
	copy(m.Args[:], args)
	if len(data) > batchFrame {
		return c.send(&m)
	}
	if err := c.failed(); err != nil {
		return err
	}
	if op == wire.OpCopyTo {
		copiedBytes.Add(uint64(len(data)))
	}
	c.omu.Lock()
	defer c.omu.Unlock()
	if err := c.appendLocked(&m); err != nil {
		return err
	}
	if len(c.out)-wire.MaxHeader >= batchBytes {
		return c.flushLocked()
	}
	now := link.Now()
	if c.outN == 1 {
		c.outAt = now
		c.since.Store(max(int64(now), 1))
		if c.s.poller == nil && !c.agedSet {
			// (a timer costs a wake-up of Go's poller thread per batch:
			// with a Poller the receiver looks instead, flushIfAged)
			c.agedSet = true
			if c.aged == nil {
				c.aged = time.AfterFunc(batchAge, c.flushAged)
			} else {
				c.aged.Reset(batchAge)
			}
		}
	} else if now-c.outAt >= batchAge {
		return c.flushLocked()
	}
	return nil
}

// postNow posts a request and sends it at once, with the batch before it
// (another proxy waits for it).
func (c *conn) postNow(op wire.Op, args ...uint64) error {
	if err := c.post(op, nil, args...); err != nil {
		return err
	}
	c.omu.Lock()
	defer c.omu.Unlock()
	return c.flushLocked()
}

// appendLocked adds m to the batch (under omu).
func (c *conn) appendLocked(m *wire.Msg) error {
	b, err := wire.AppendFrame(c.out, m)
	if err != nil {
		return ol.Errorf(ol.ErrcInvalidArgument, "%s: %v", c.where(), err)
	}
	c.out = b
	c.outN++
	return nil
}

// flushLocked sends the batch (under omu): a lone post as itself, more as
// one Batch message whose header is written just before the frames.
func (c *conn) flushLocked() error {
	if c.outN == 0 {
		return nil
	}
	if c.agedSet && c.aged.Stop() {
		c.agedSet = false
	}
	frames := c.out[wire.MaxHeader:]
	n := c.outN
	c.out, c.outN = c.out[:wire.MaxHeader], 0
	c.since.Store(0)
	if err := c.failed(); err != nil {
		return err
	}
	if n == 1 {
		// the frame's length, then the message
		_, k := binary.Uvarint(frames)
		return c.sendBytes(frames[k:])
	}
	var hb [wire.MaxHeader]byte
	head, err := wire.AppendHeader(hb[:0], &wire.Msg{Op: wire.OpBatch, Args: [wire.MaxArgs]uint64{n}}, uint64(len(frames)))
	if err != nil {
		return ol.Errorf(ol.ErrcInvalidArgument, "%s: %v", c.where(), err)
	}
	start := wire.MaxHeader - len(head)
	copy(c.out[start:wire.MaxHeader], head)
	return c.sendBytes(c.out[start : wire.MaxHeader+len(frames)])
}

// flushIfAged sends the batch if its first post is batchAge old (the
// receiver's check; it reads the clock only while a batch waits).
func (c *conn) flushIfAged() {
	t := c.since.Load()
	if t == 0 {
		return
	}
	if now := link.Now(); int64(now)-t >= int64(batchAge) && c.omu.TryLock() {
		if c.outN > 0 && now-c.outAt >= batchAge {
			_ = c.flushLocked()
		}
		c.omu.Unlock()
	}
}

// flushAged is the timer's: it sends a batch whose first post is
// batchAge old (the application may wait on something that sends
// nothing to the proxy).
func (c *conn) flushAged() {
	c.omu.Lock()
	defer c.omu.Unlock()
	c.agedSet = false
	if c.outN == 0 {
		return
	}
	if wait := batchAge - (link.Now() - c.outAt); wait > 0 {
		c.agedSet = true
		c.aged.Reset(wait)
		return
	}
	_ = c.flushLocked() // a failure kills the conn: the next call or sync reports it
}

// call sends a request and waits for its reply: while the proxy answers
// pings (sent every quarter of the timeout) the wait goes on, so that a
// long kernel is not taken for a dead proxy; timeout without a word from
// the proxy ends it with an error naming the rank and host.
func (c *conn) call(op wire.Op, data []byte, text string, args ...uint64) (wire.Msg, error) {
	return c.callSpin(0, op, data, text, args...)
}

// callSpin is call whose wait polls for the reply for extra longer than
// the spin time (work of known length before the reply).
func (c *conn) callSpin(extra time.Duration, op wire.Op, data []byte, text string, args ...uint64) (wire.Msg, error) {
	m := wire.Msg{Op: op, Seq: nextID(), Data: data, Text: text}
	copy(m.Args[:], args)
	ch := make(chan wire.Msg, 1)
	c.mu.Lock()
	if c.dead != nil {
		c.mu.Unlock()
		return wire.Msg{}, c.dead
	}
	c.pending[m.Seq] = ch
	c.mu.Unlock()
	c.calls.Add(1)
	defer c.calls.Done()
	c.s.callers.Add(1)
	defer c.s.callers.Add(-1)
	if err := c.send(&m); err != nil {
		c.forget(m.Seq)
		return wire.Msg{}, err
	}
	if r, ok, err := c.await(ch, extra); ok {
		return r, err
	}
	// the proxy was last heard from when a tick first saw c.heard change
	// (a count: a message costs no clock read), so a silent proxy is
	// noticed between the timeout and 1.5 times it after its last word
	heardAt, seen := time.Now(), c.heard.Load()
	tick := time.NewTicker(max(c.timeout/4, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case r, ok := <-ch:
			return c.result(r, ok)
		case now := <-tick.C:
			if n := c.heard.Load(); n != seen {
				heardAt, seen = now, n
			}
			if now.Sub(heardAt) > c.timeout {
				c.kill(ol.Errorf(ol.ErrcBackendFailure, "%s has not answered for %v (%s): its devices are no longer usable",
					c.where(), c.timeout.Round(time.Millisecond), EnvTimeout))
				return wire.Msg{}, c.failed()
			}
			_ = c.send(&wire.Msg{Op: wire.OpPing}) // its reply matches no call: it only shows the proxy is alive
		}
	}
}

func (c *conn) result(r wire.Msg, ok bool) (wire.Msg, error) {
	if !ok {
		return wire.Msg{}, c.failed()
	}
	if code := ol.Errc(r.Args[0]); code != ol.ErrcSuccess {
		return r, ol.Errorf(code, "%s: %s", c.where(), r.Text)
	}
	return r, nil
}

// await receives for itself while the reply on ch is awaited (over a
// link.Poller, until the spin time passed since its first empty poll or
// the last message handled): the reply is then handled on this goroutine,
// which never sleeps meanwhile. done is false when the spin time passed
// first (call then waits on ch for the receiver).
func (c *conn) await(ch chan wire.Msg, extra time.Duration) (r wire.Msg, done bool, err error) {
	p := c.s.poller
	if p == nil || p.Spin() <= 0 {
		return r, false, nil
	}
	c.s.waiters.Add(1)
	defer c.s.waiters.Add(-1)
	from, seen := time.Duration(-1), int64(0) // as in link.Backoff
	for spin := p.Spin() + extra; ; {
		select {
		case r, ok := <-ch:
			r, err := c.result(r, ok)
			return r, true, err
		default:
		}
		got, err := c.s.pollOnce(false)
		if err != nil {
			c.s.lost(err)
			continue // ch is closed now
		}
		if !got {
			now := link.Now()
			if n := c.s.handled.Load(); from < 0 || n != seen {
				from, seen = now, n
			}
			idle := now - from
			if idle > spin {
				return r, false, nil
			}
			// the caller may be a C thread's call (a goroutine locked
			// to its thread): no runtime.Gosched, which would hand the
			// thread's processor away and back (two thread wake-ups);
			// and only past HotSpin a sched_yield (a launch + sync
			// took 10.5 µs yielding at every poll, 7.1 µs so)
			if idle > link.HotSpin {
				link.YieldThread()
			}
		}
	}
}

func (c *conn) forget(seq uint64) {
	c.mu.Lock()
	delete(c.pending, seq)
	c.mu.Unlock()
}

// deliver handles one message from the proxy (on the receiver goroutine).
func (c *conn) deliver(b []byte) {
	c.heard.Add(1)
	m, err := wire.Decode(b)
	if err != nil {
		c.kill(ol.Errorf(ol.ErrcBackendFailure, "%s sent a malformed message: %v", c.where(), err))
		return
	}
	switch m.Op {
	case wire.OpReply:
		if len(m.Data) > maxReplyData {
			c.kill(ol.Errorf(ol.ErrcBackendFailure, "%s sent a reply of %d bytes (at most %d)", c.where(), len(m.Data), maxReplyData))
			return
		}
		// the caller reads the reply after b is given back
		m.Data = slices.Clone(m.Data)
		c.mu.Lock()
		ch := c.pending[m.Seq]
		delete(c.pending, m.Seq)
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	case wire.OpData:
		c.mu.Lock()
		r, ok := c.reads[m.Args[0]]
		delete(c.reads, m.Args[0])
		c.mu.Unlock()
		if !ok || m.Args[1] != 0 || uint64(len(m.Data)) != r.n {
			c.kill(ol.Errorf(ol.ErrcBackendFailure, "%s sent %d bytes for copy %d, which expects %d", c.where(), len(m.Data), m.Args[0], r.n))
			return
		}
		copy(unsafe.Slice((*byte)(ptr(r.dst)), r.n), m.Data)
		copiedBytes.Add(r.n)
	case wire.OpCallHost:
		c.mu.Lock()
		fn := c.hostCalls[m.Args[0]]
		delete(c.hostCalls, m.Args[0])
		c.mu.Unlock()
		token := m.Args[0]
		if fn == nil {
			// not from the receiver itself, which must not wait for omu
			c.calls.Add(1)
			go func() {
				defer c.calls.Done()
				_ = c.send(&wire.Msg{Op: wire.OpHostDone, Args: [wire.MaxArgs]uint64{token, uint64(ol.ErrcInvalidArgument)}})
			}()
			return
		}
		// fn may block and call the library (which waits for this
		// receiver): it runs on a goroutine of its own
		c.calls.Add(1)
		go func() {
			defer c.calls.Done()
			err := runHostCall(fn)
			m := wire.Msg{Op: wire.OpHostDone, Args: [wire.MaxArgs]uint64{token}}
			if err != nil {
				code, details := ol.ErrcUnknown, err.Error()
				var oe *ol.Error
				if errors.As(err, &oe) {
					code, details = oe.Code, oe.Details
				}
				m.Args[1], m.Text = uint64(code), details[:min(len(details), wire.MaxText)]
			}
			_ = c.send(&m)
		}()
	}
}

func runHostCall(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = ol.Errorf(ol.ErrcUnknown, "a host call panicked: %v", r)
		}
	}()
	return fn()
}

// hostRun is a host function running now: its queue and operation.
type hostRun struct {
	q  *Queue
	at uint64
}

// runningHostFns holds the host functions running now, by the token in
// their thread's remote_in_host_fn.
var runningHostFns sync.Map

// callHostFn runs a host function, operation at of q, on this goroutine's
// thread, marked as such (InCallback, RunningHostFunction) for the
// runtime's checks of waits and shutdowns.
func callHostFn(q *Queue, at uint64, fn, user unsafe.Pointer) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	token := nextID()
	runningHostFns.Store(token, hostRun{q: q, at: at})
	C.remote_set_in_host_fn(C.uint64_t(token))
	plugin.EnterHostFunction()
	defer func() {
		plugin.LeaveHostFunction()
		C.remote_set_in_host_fn(0)
		runningHostFns.Delete(token)
	}()
	C.remote_call_host_fn(fn, user)
}

func inHostFn() bool { return C.remote_get_in_host_fn() != 0 }

// runningHostFn is the host function this thread runs (ok false: none).
func runningHostFn() (hostRun, bool) {
	token := uint64(C.remote_get_in_host_fn())
	if token == 0 {
		return hostRun{}, false
	}
	r, ok := runningHostFns.Load(token)
	if !ok {
		return hostRun{}, false
	}
	return r.(hostRun), true
}

// maxReplyData bounds a reply's payload (an inventory, a kernel's
// parameters: a few KiB): it is copied into Go memory.
const maxReplyData = 16 << 20

// bigMessage is the size from which a message is encoded in C memory: a
// large copy or fill pattern that does not fit is then OUT_OF_RESOURCES,
// never a Go heap exhaustion, which would end the process.
const bigMessage = 64 << 10
