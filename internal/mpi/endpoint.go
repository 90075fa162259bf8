package mpi

/*
#include "olmpi.h"
// The polls and sends of every message: their pointer arguments are the
// caller's results (and a copied body), which C keeps past no call, so
// they stay on the Go stack (without this, each poll allocated seven
// values on the heap, each send three). None of them calls back into Go.
#cgo noescape olm_poll_posted
#cgo nocallback olm_poll_posted
#cgo noescape olm_post_copy
#cgo nocallback olm_post_copy
#cgo noescape olm_test
#cgo nocallback olm_test
*/
import "C"

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/internal/cmem"
	"github.com/liboffload-go/liboffload-go/internal/remote/link"
)

// Tags on MPI_COMM_WORLD. Every message starts as one MPI message on
// TagBase (so that a source's messages keep their order); a message too
// large to copy continues on one of the chunk tags (rotating per message,
// so that a receiver never confuses two messages' payloads). All stay at
// or below 32767, the least MPI_TAG_UB MPI allows.
const (
	TagBase      = 0x7F00
	tagChunk0    = TagBase + 0x10
	nChunkTags   = 0xF0
	tagRawBench  = TagBase + 1 // make bench's raw MPI baseline
	inlineMax    = 64 << 10    // payloads up to this are copied into one message
	headerBytes  = 16
	bigHeader    = 32 // a large message's header
	kindData     = 1  // the kinds of wire.go
	kindBig      = 2
	kindHello    = 3
	kindReply    = 4
	maxHostBytes = 255
)

// MaxMessage is the largest message Send takes (the remote protocol
// splits larger copies): a receiver allocates what a header announces.
const MaxMessage = 16 << 30

// chunkBytes is a large message's chunk: MPI's count is an int. A
// variable so that the tests can send many chunks without gigabytes.
var chunkBytes atomic.Int64

func init() { chunkBytes.Store(1 << 30) }

type item struct {
	src int
	msg []byte
}

type dest struct {
	mu       sync.Mutex
	stage    unsafe.Pointer // C memory for the next small message (post)
	flights  []flight       // copies MPI may still be sending
	inFlight int            // their bytes
	seq      uint32
	failed   error // sticky: a send that was never taken
}

type endpoint struct {
	rank, size int
	host       string
	role       link.Role
	opts       Options
	proxies    []link.Peer
	hosts      sync.Map // rank → host, learnt from discovery
	dests      []dest
	// probe is held by the one goroutine probing (a mutex, not a
	// channel token: each poll takes and gives it back, and a channel's
	// lock cost twice a mutex's atomic operation)
	probe     sync.Mutex
	done      chan struct{}
	closed    atomic.Bool
	closeOnce sync.Once
	active    atomic.Int64 // counts the messages sent and received (link.Backoff.Activity)
	due       atomic.Int32 // answers awaited (link.Expecter): naps are short
	// life is read-held by every Send and Recv and write-held by Close,
	// which so waits until none uses MPI any more (each notices done)
	life   sync.RWMutex
	rstage unsafe.Pointer // C memory for the heads of large messages (under probe)
	// pstage is C memory the next message on TagBase is received into,
	// its receive posted between polls (olm_poll_posted); polls counts
	// the polls and stuckSince is when one first saw a message wait
	// behind the posted receive (checkStuck), all under probe
	pstage     unsafe.Pointer
	polls      uint64
	stuckSince time.Duration
	// outs (C memory) holds the results of the hot C calls: entry r
	// those of a send to rank r (under its dest's mu), entry size those
	// of a poll (under probe)
	outs    *C.olm_out
	pending []item // messages received during discovery (under probe)
	nonce   uint64
	replies map[int]link.Peer // discovery answers (under probe)
	place   link.Place        // set before the first Recv (SetPlace)
	held    sync.Map          // C memory of messages Recv returned, until Free
	clients int               // the job's clients, for a proxy (Clients)
}

// Open joins the job's message network as role, initialising MPI if the
// application has not, and finds the job's proxies (docs/remote.md,
// "Discovery"). discovery > 0 overrides OFFLOAD_REMOTE_DISCOVERY_TIMEOUT.
// One Endpoint may be open in a process at a time.
func Open(role link.Role, discovery time.Duration) (link.Endpoint, error) {
	o, err := OptionsFromEnv(Getenv)
	if err != nil {
		return nil, err
	}
	if discovery > 0 {
		o.Discovery = discovery
	}
	return OpenWith(role, o, Getenv)
}

// OpenWith is Open with explicit options and environment (for the
// launcher variables that discovery reads).
func OpenWith(role link.Role, o Options, env Env) (link.Endpoint, error) {
	if role != link.Client && role != link.Proxy {
		return nil, fmt.Errorf("mpi: unknown role %d", role)
	}
	if o.Discovery <= 0 {
		o.Discovery = DefaultDiscovery
	}
	if o.Stall <= 0 {
		o.Stall = DefaultStall
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	if state.open {
		return nil, fmt.Errorf("mpi: an Endpoint is open already in this process (one at a time: both would take the same messages)")
	}
	if err := initLocked(o.Library); err != nil {
		return nil, err
	}
	e := &endpoint{
		rank: state.rank, size: state.size, host: state.host, role: role, opts: o,
		dests: make([]dest, state.size), done: make(chan struct{}),
		nonce: rand.Uint64(), replies: map[int]link.Peer{},
	}
	if len(e.host) > maxHostBytes {
		e.host = e.host[:maxHostBytes]
	}
	var err error
	if e.rstage, err = cmem.Malloc(maxPlaceHead, "mpi: a head buffer"); err != nil {
		return nil, err
	}
	if e.pstage, err = cmem.Malloc(postedBytes, "mpi: receive buffer"); err != nil {
		cmem.Free(e.rstage)
		return nil, err
	}
	outs, err := cmem.Calloc(uint64(e.size+1)*uint64(unsafe.Sizeof(C.olm_out{})), "mpi: call results")
	if err != nil {
		cmem.Free(e.rstage)
		cmem.Free(e.pstage)
		return nil, err
	}
	e.outs = (*C.olm_out)(outs)
	if err := e.discover(env); err != nil {
		e.shut()
		return nil, err
	}
	state.open = true
	return e, nil
}

func (e *endpoint) Rank() int            { return e.rank }
func (e *endpoint) Host() string         { return e.host }
func (e *endpoint) Proxies() []link.Peer { return slices.Clone(e.proxies) }

// peer names a rank for error messages: "rank 2 (host)".
func (e *endpoint) peer(rank int) string {
	if h, ok := e.hosts.Load(rank); ok {
		return fmt.Sprintf("rank %d (%s)", rank, h.(string))
	}
	return fmt.Sprintf("rank %d (host unknown)", rank)
}

// Close returns once no call of the Endpoint uses MPI any more (those in
// progress return ErrClosed within about a millisecond), so that MPI may
// be finalized after it.
func (e *endpoint) Close() error {
	e.closeOnce.Do(func() {
		e.closed.Store(true)
		close(e.done)
		e.life.Lock()
		defer e.life.Unlock()
		e.shut()
		state.mu.Lock()
		state.open = false
		state.mu.Unlock()
	})
	return nil
}

// Flush waits, at most timeout, until MPI has taken every message sent so
// far (a process that exits right after a send, without MPI_Finalize,
// would otherwise lose a message MPI had not yet pushed out).
func (e *endpoint) Flush(timeout time.Duration) {
	e.life.RLock()
	defer e.life.RUnlock()
	deadline := time.Now().Add(timeout)
	for i := range e.dests {
		d := &e.dests[i]
		d.mu.Lock()
		b := e.newBackoff()
		for reap(d) == nil && len(d.flights) > 0 && b.Pause(deadline) {
		}
		d.mu.Unlock()
	}
}

// shut frees what no request can still use (with life held, or before
// Open returned).
func (e *endpoint) shut() {
	if e.rstage != nil {
		cmem.Free(e.rstage)
		e.rstage = nil
	}
	if e.outs != nil && e.unpost() && e.pstage != nil {
		cmem.Free(e.pstage)
	}
	e.pstage = nil
	// copies still being sent get a moment, then are left to MPI
	deadline := time.Now().Add(time.Second)
	for i := range e.dests {
		d := &e.dests[i]
		d.mu.Lock()
		b := e.newBackoff()
		for reap(d) == nil && len(d.flights) > 0 && b.Pause(deadline) {
		}
		for _, f := range d.flights {
			abandon(nil, f.buf)
		}
		d.flights, d.inFlight = nil, 0
		if d.stage != nil {
			cmem.Free(d.stage)
			d.stage = nil
		}
		d.mu.Unlock()
	}
	if e.outs != nil {
		cmem.Free(unsafe.Pointer(e.outs))
		e.outs = nil
	}
}

// ---- waiting ----------------------------------------------------------------

// Polling: Open MPI's blocking calls spin, so nothing here blocks in MPI.
// Every wait is a link.Backoff that spins while messages flow (within
// opts.Spin of the last message sent or received) and sleeps when idle.

// newBackoff is a wait of the Endpoint.
func (e *endpoint) newBackoff() link.Backoff {
	return link.Backoff{Spin: e.opts.Spin, Activity: &e.active, Due: &e.due}
}

// Expect implements link.Expecter.
func (e *endpoint) Expect(delta int32) { e.due.Add(delta) }

// touch notes a message sent or received (the Endpoint is busy): a count,
// not a time, so that a message costs no clock read.
func (e *endpoint) touch() { e.active.Add(1) }

// transferBackoff is the wait for a large message of n bytes to be taken
// or to arrive: it polls without sleeping for the spin time plus the time
// n bytes take at 1 GB/s (at most a second more). A wait that slept
// through a transfer noticed its end up to 1 ms late, and the next piece
// of a copy went out that much later: 4 MiB pieces came 150 µs (median)
// to 0.5 ms apart, 64 MiB ones 0.7 to 2.7 ms (bytes moved at 6-7 GB/s).
// OFFLOAD_REMOTE_SPIN=0 still never spins.
func (e *endpoint) transferBackoff(n int) link.Backoff {
	b := e.newBackoff()
	if b.Spin > 0 {
		b.Spin += min(time.Duration(n), time.Second) // 1 ns a byte
	}
	return b
}

func deadlineOf(timeout time.Duration) time.Time {
	if timeout <= 0 {
		return time.Time{}
	}
	return time.Now().Add(timeout)
}

// waitAll polls requests until all completed (true) or deadline passes;
// a request that completes counts as a message for b.
func waitAll(b link.Backoff, reqs []C.uintptr_t, deadline time.Time, done <-chan struct{}) (bool, error) {
	for {
		all := true
		for i := range reqs {
			if reqs[i] == 0 {
				continue
			}
			var flag C.int
			if rc := C.olm_test(&reqs[i], &flag); rc != 0 {
				return false, mpiError("MPI_Test", rc)
			}
			if flag != 0 {
				reqs[i] = 0
				if b.Activity != nil {
					b.Activity.Add(1)
				}
			} else {
				all = false
			}
		}
		if all {
			return true, nil
		}
		if done != nil {
			select {
			case <-done:
				return false, link.ErrClosed
			default:
			}
		}
		if !b.Pause(deadline) {
			return false, nil
		}
	}
}

// ---- sending ----------------------------------------------------------------

// Messages up to inlineMax bytes are copied into C memory and sent
// without waiting (MPI keeps their order); Send waits only when a
// destination has sendBuffered bytes of them not yet taken. Larger
// messages are sent from the caller's memory, and Send returns once MPI
// has taken them (for the sizes past Open MPI's eager limits: once the
// peer has received them), so the peer must be receiving.
const sendBuffered = 64 << 20

type flight struct {
	req C.uintptr_t
	buf unsafe.Pointer
	n   int
}

func (e *endpoint) Send(rank int, msg []byte, timeout time.Duration) error {
	return e.SendParts(rank, nil, msg, timeout)
}

// SendParts implements link.Gatherer: head and body are sent as one
// message; a large one from where they are, without a copy.
func (e *endpoint) SendParts(rank int, head, body []byte, timeout time.Duration) error {
	e.life.RLock()
	defer e.life.RUnlock()
	if e.closed.Load() {
		return link.ErrClosed
	}
	if rank < 0 || rank >= e.size {
		return fmt.Errorf("mpi: send to rank %d: the job's ranks are 0 to %d", rank, e.size-1)
	}
	d := &e.dests[rank]
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failed != nil {
		return d.failed
	}
	n := len(head) + len(body)
	if n <= inlineMax {
		if len(head) > 0 {
			body = append(head[:len(head):len(head)], body...)
		}
		return e.post(d, rank, kindData, body, timeout)
	}
	if n > MaxMessage {
		return fmt.Errorf("mpi: send of %d bytes to %s: more than the %d a message may hold", n, e.peer(rank), MaxMessage)
	}
	return e.sendBig(d, rank, head, body, timeout)
}

// reap frees the copies MPI has sent (under d.mu), oldest first, up to
// the first not sent yet (MPI sends a destination's messages in order).
func reap(d *dest) error {
	k := 0
	for ; k < len(d.flights); k++ {
		f := &d.flights[k]
		var flag C.int
		if rc := C.olm_test(&f.req, &flag); rc != 0 {
			return mpiError("MPI_Test", rc)
		}
		if flag == 0 {
			break
		}
		cmem.Free(f.buf)
		d.inFlight -= f.n
	}
	if k > 0 {
		n := copy(d.flights, d.flights[k:])
		clear(d.flights[n:])
		d.flights = d.flights[:n]
	}
	return nil
}

// post sends kind followed by body from a copy (under d.mu), first
// waiting, at most timeout, for room among the destination's copies.
func (e *endpoint) post(d *dest, rank int, kind byte, body []byte, timeout time.Duration) error {
	n := 1 + len(body)
	if err := reap(d); err != nil {
		return e.fail(d, rank, err)
	}
	if d.inFlight+n > sendBuffered {
		deadline := deadlineOf(timeout)
		b := e.newBackoff()
		for d.inFlight+n > sendBuffered {
			if e.closed.Load() {
				return link.ErrClosed
			}
			if !b.Pause(deadline) {
				return e.fail(d, rank, fmt.Errorf("%d bytes of messages to it not taken within %v: the peer is treated as lost: %w", d.inFlight, timeout, link.ErrTimeout))
			}
			if err := reap(d); err != nil {
				return e.fail(d, rank, err)
			}
		}
	}
	if len(body) <= stageBody {
		return e.postStaged(d, rank, kind, body)
	}
	buf, err := cmem.Malloc(uint64(n), "mpi: a message's copy")
	if err != nil {
		return err
	}
	c := unsafe.Slice((*byte)(buf), n)
	c[0] = kind
	copy(c[1:], body)
	var req C.uintptr_t
	if rc := C.olm_isend(buf, C.int(n), C.int(rank), TagBase, &req); rc != 0 {
		cmem.Free(buf)
		return e.fail(d, rank, mpiError("MPI_Isend", rc))
	}
	d.flights = append(d.flights, flight{req, buf, n})
	d.inFlight += n
	e.touch()
	return nil
}

// stageBody bounds the messages post sends from the destination's stage.
const stageBody = 4096

// stagedLeft counts the staged sends MPI did not take at once (tests).
var stagedLeft atomic.Int64

// postStaged sends kind and a body of at most stageBody bytes from a copy
// in d.stage (under d.mu), in one C call: a small message over shared
// memory is nearly always taken within MPI_Isend, and its stage is then
// reused, so such a send costs no allocation and one cgo call instead of
// four (a malloc, the send, and later a test and a free). A message MPI
// has not taken keeps the stage as a copy in flight; the next message
// gets a new stage.
func (e *endpoint) postStaged(d *dest, rank int, kind byte, body []byte) error {
	if d.stage == nil {
		var err error
		if d.stage, err = cmem.Malloc(stageBody+1, "mpi: a send buffer"); err != nil {
			return err
		}
	}
	var bp unsafe.Pointer
	if len(body) > 0 {
		bp = unsafe.Pointer(&body[0])
	}
	o := e.out(rank)
	rc := C.olm_post_copy(d.stage, C.uchar(kind), bp, C.int(len(body)), C.int(rank), TagBase, o)
	if rc != 0 && o.step == 1 {
		return e.fail(d, rank, mpiError("MPI_Isend", rc))
	}
	if rc != 0 || o.done == 0 {
		stagedLeft.Add(1)
		// MPI may still read the stage
		n := 1 + len(body)
		d.flights = append(d.flights, flight{o.req, d.stage, n})
		d.inFlight += n
		d.stage = nil
		if rc != 0 {
			return e.fail(d, rank, mpiError("MPI_Test", rc))
		}
	}
	e.touch()
	return nil
}

// out is entry i of e.outs.
func (e *endpoint) out(i int) *C.olm_out {
	return (*C.olm_out)(unsafe.Add(unsafe.Pointer(e.outs), uintptr(i)*unsafe.Sizeof(C.olm_out{})))
}

// fail marks the destination failed (sticky) and returns the error.
func (e *endpoint) fail(d *dest, rank int, err error) error {
	d.failed = fmt.Errorf("mpi: send to %s: %w", e.peer(rank), err)
	return d.failed
}

// sendBig sends a header (a copy), then head and body from their own
// memory (pinned: MPI reads it after the calls return) on the message's
// chunk tag, head as one piece and body in chunks, and waits until MPI has
// taken them all.
func (e *endpoint) sendBig(d *dest, rank int, head, body []byte, timeout time.Duration) error {
	if len(head) > 1<<30 {
		// (never: a protocol header) sent as one contiguous message
		body, head = append(head[:len(head):len(head)], body...), nil
	}
	tag := tagChunk0 + int(d.seq%nChunkTags)
	d.seq++
	chunk := int(chunkBytes.Load())
	n := len(head) + len(body)
	if err := e.post(d, rank, kindBig, bigBody(tag, n, chunk, len(head)), timeout); err != nil {
		return err
	}
	var parts [][]byte
	if len(head) > 0 {
		parts = append(parts, head)
	}
	for off := 0; off < len(body); off += chunk {
		parts = append(parts, body[off:min(len(body), off+chunk)])
	}
	reqs := make([]C.uintptr_t, len(parts))
	pin := new(runtime.Pinner)
	for i, part := range parts {
		pin.Pin(&part[0])
		if rc := C.olm_isend(unsafe.Pointer(&part[0]), C.int(len(part)), C.int(rank), C.int(tag), &reqs[i]); rc != 0 {
			// the header is out: the peer waits for a payload that will
			// not come (until its stall bound)
			abandon(pin, nil)
			return e.fail(d, rank, mpiError("MPI_Isend", rc))
		}
	}
	ok, err := waitAll(e.transferBackoff(n), reqs, deadlineOf(timeout), e.done)
	if ok {
		pin.Unpin()
		return nil
	}
	// MPI may still read the parts: they stay pinned for good
	abandon(pin, nil)
	if err == link.ErrClosed {
		return err
	}
	if err == nil {
		err = fmt.Errorf("a message of %d bytes not taken within %v: the peer is treated as lost: %w", n, timeout, link.ErrTimeout)
	}
	return e.fail(d, rank, err)
}

// ---- receiving --------------------------------------------------------------

// Recv polls with probe held for each probe only, so that a goroutine
// waiting for a reply (TryRecv) can probe itself between them.
func (e *endpoint) Recv(timeout time.Duration) (int, []byte, error) {
	deadline := deadlineOf(timeout)
	e.life.RLock()
	defer e.life.RUnlock()
	b := e.newBackoff()
	for {
		if e.closed.Load() {
			return -1, nil, link.ErrClosed
		}
		src, msg, got, err := e.tryRecv()
		if err != nil || got {
			return src, msg, err
		}
		if !b.Pause(deadline) {
			return -1, nil, link.ErrTimeout
		}
	}
}

// TryRecv implements link.Poller: a message if one is there and no other
// goroutine is probing, without waiting.
func (e *endpoint) TryRecv() (int, []byte, bool, error) {
	e.life.RLock()
	defer e.life.RUnlock()
	if e.closed.Load() {
		return -1, nil, false, link.ErrClosed
	}
	return e.tryRecv()
}

// SetPlace implements link.Placer.
func (e *endpoint) SetPlace(p link.Place) { e.place = p }

// Spin implements link.Poller.
func (e *endpoint) Spin() time.Duration { return e.opts.Spin }

// tryRecv probes (with probe, if no other goroutine holds it) until a
// message of the caller's or none is there.
func (e *endpoint) tryRecv() (int, []byte, bool, error) {
	if !e.probe.TryLock() {
		return -1, nil, false, nil
	}
	held := true
	release := func() {
		if held {
			held = false
			e.probe.Unlock()
		}
	}
	defer release()
	if len(e.pending) > 0 {
		it := e.pending[0]
		e.pending = e.pending[1:]
		return it.src, it.msg, true, nil
	}
	for {
		src, msg, got, err := e.poll(release)
		if src == -2 && !got && err == nil && held {
			continue // a control message was handled: probe again at once
		}
		return src, msg, got, err
	}
}

// poll tests the posted receive once (under probe). got is true for a
// message of the caller; src -2 means a control message was handled. A
// payload received after its header is waited for after release() gives
// probe back.
func (e *endpoint) poll(release func()) (src int, msg []byte, got bool, err error) {
	// (post, test and, now and then, probe in one C call: the usual
	// message is short and already in pstage)
	if e.pstage == nil {
		var err error
		if e.pstage, err = cmem.Malloc(postedBytes, "mpi: receive buffer"); err != nil {
			return -1, nil, false, err
		}
	}
	o := e.out(e.size)
	e.polls++
	check := e.polls%stuckCheck == 0
	rc := C.olm_poll_posted(TagBase, e.pstage, postedBytes, C.int(boolInt(check)), o)
	if rc != 0 {
		call := [...]string{1: "MPI_Irecv", 2: "MPI_Test", 3: "MPI_Iprobe"}[max(min(int(o.step), 3), 1)]
		return -1, nil, false, mpiError(call, rc)
	}
	if o.found == 0 {
		if check {
			return -1, nil, false, e.checkStuck(o.waiting != 0)
		}
		return -1, nil, false, nil
	}
	e.stuckSince = 0
	e.touch()
	src = int(o.src)
	f, ok := parseFrame(unsafe.Slice((*byte)(e.pstage), max(int(o.count), 0)))
	if o.count < 1 || o.count > inlineMax+headerBytes || !ok {
		// not the transport's (another user of the tag; a big header's
		// payload, if any, is left): dropped
		return -2, nil, false, nil
	}
	switch f.kind {
	case kindData:
		return src, slices.Clone(f.data), true, nil
	case kindBig:
		msg, placed, err := e.recvBig(src, f.tag, f.n, f.chunk, f.first, release)
		if placed && err == nil {
			return -2, nil, false, nil // the placer has it
		}
		return src, msg, err == nil, err
	case kindHello:
		e.hosts.Store(src, f.host)
		e.answer(src, f.nonce)
	case kindReply:
		if f.nonce == e.nonce {
			e.hosts.Store(src, f.host)
			e.replies[src] = link.Peer{Rank: src, Host: f.host, Role: f.role}
		}
	}
	return -2, nil, false, nil
}

// postedBytes is the posted receive's buffer: the transport's messages on
// TagBase are at most inlineMax+headerBytes; a larger one (another user
// of the tag) up to postedBytes is received and dropped, and one larger
// still is dropped truncated (MPI_ERR_TRUNCATE), which leaves its
// sender's send never completed (Open MPI 4.1).
const postedBytes = 1 << 20

// stuckCheck: every stuckCheck-th poll that finds nothing also probes
// for a message waiting behind the posted receive.
const stuckCheck = 64

// checkStuck bounds a message that holds the posted receive without fully
// arriving (its sender died mid-message): when a message waits behind the
// posted receive (waiting) for longer than the stall bound, the receive is
// given up (pstage too, if MPI may still write it) and the error returned.
func (e *endpoint) checkStuck(waiting bool) error {
	if !waiting {
		e.stuckSince = 0
		return nil
	}
	now := link.Now()
	if e.stuckSince == 0 {
		e.stuckSince = now
		return nil
	}
	if now-e.stuckSince <= e.opts.Stall {
		return nil
	}
	e.stuckSince = 0
	if !e.unpost() {
		return fmt.Errorf("mpi: a message did not arrive within %v after it started, and its receive could not be given up", e.opts.Stall)
	}
	return fmt.Errorf("mpi: a message did not arrive within %v after it started: %w", e.opts.Stall, link.ErrTimeout)
}

// unpost cancels the posted receive (under probe, or in shut); when MPI
// may still write into pstage, pstage is abandoned and a new one made
// (false if none could be).
func (e *endpoint) unpost() bool {
	o := e.out(e.size)
	if o.posted == 0 {
		return true
	}
	var c C.int
	if C.olm_cancel(&o.posted, &c) == 0 && c != 0 {
		o.posted = 0
		return true
	}
	o.posted = 0
	abandon(nil, e.pstage)
	var err error
	e.pstage, err = cmem.Malloc(postedBytes, "mpi: receive buffer")
	return err == nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// recvBig receives a payload of n bytes from src on tag: its first bytes
// (if first > 0: a head sent apart, SendParts), then the rest in chunks.
// With a placer (SetPlace) and a head of at most maxPlaceHead bytes, the
// head comes first and the placer may name memory for the rest, which
// then goes there (placed true: no message for the caller). Otherwise the
// message goes into C memory that the caller gives back with Free (a Go
// allocation that fails ends the process); without memory for it, it is
// drained and dropped (a link.DroppedError, with its head).
// probe is released once the receives are posted: other goroutines may
// receive meanwhile.
func (e *endpoint) recvBig(src, tag, n, chunk, first int, release func()) (msg []byte, placed bool, err error) {
	var head []byte
	if first > 0 && first <= maxPlaceHead {
		if head, err = e.recvHead(src, tag, first); err != nil {
			return nil, false, err
		}
		if place := e.place; place != nil {
			if dst, done := place(src, head, n-first); dst != nil {
				lost, err := e.recvParts(src, tag, dst, n-first, 0, chunk, release)
				done(err, lost)
				return nil, true, err
			}
		}
	}
	rest, restFirst := n-len(head), first-len(head)
	buf, err := messageMemory(uint64(n))
	if err != nil {
		if derr := e.drain(src, tag, rest, restFirst, chunk, release); derr != nil {
			return nil, false, derr
		}
		return nil, false, &link.DroppedError{Src: src, Size: n, Head: head, Err: err}
	}
	copy(unsafe.Slice((*byte)(buf), len(head)), head)
	lost, err := e.recvParts(src, tag, unsafe.Add(buf, len(head)), rest, restFirst, chunk, release)
	if err != nil {
		if lost {
			abandon(nil, buf)
		} else {
			cmem.Free(buf)
		}
		return nil, false, err
	}
	e.held.Store(uintptr(buf), struct{}{})
	return unsafe.Slice((*byte)(buf), n), false, nil
}

// messageMemory is the C memory of a large message received whole (a
// variable: the tests make it fail).
var messageMemory = func(n uint64) (unsafe.Pointer, error) { return cmem.Malloc(n, "mpi: a received message") }

// Free implements link.Freer.
func (e *endpoint) Free(msg []byte) {
	if len(msg) == 0 {
		return
	}
	p := unsafe.Pointer(&msg[0])
	if _, ok := e.held.LoadAndDelete(uintptr(p)); ok {
		cmem.Free(p)
	}
}

// drain receives the n bytes of a message that cannot be kept (its parts
// as recvParts would) one part at a time into one buffer of the largest
// part's size, and drops them; the stall bound applies to each part.
// (MPI needs a buffer as large as the message it receives: a receive
// truncated into less left Open MPI's sender waiting for good.) Without
// even that buffer, the error is not a link.DroppedError: the stream from
// src cannot go on.
func (e *endpoint) drain(src, tag, n, first, chunk int, release func()) error {
	release()
	parts := splitParts(n, first, chunk)
	most := 0
	for _, p := range parts {
		most = max(most, p.n)
	}
	buf, err := messageMemory(uint64(most))
	if err != nil {
		return fmt.Errorf("mpi: a message of %d bytes from %s: no memory to receive it, nor to drop it: %w", n, e.peer(src), err)
	}
	for _, p := range parts {
		if lost, err := e.recvParts(src, tag, buf, p.n, p.n, p.n, func() {}); err != nil {
			if lost {
				abandon(nil, buf)
			} else {
				cmem.Free(buf)
			}
			return err
		}
	}
	cmem.Free(buf)
	return nil
}

// maxPlaceHead bounds the head of a message offered to a placer (a
// protocol header: a few dozen bytes).
const maxPlaceHead = 4096

// recvHead receives the first bytes of a large message into rstage
// (under probe) and returns a copy of them.
func (e *endpoint) recvHead(src, tag, first int) ([]byte, error) {
	var reqs [1]C.uintptr_t
	if rc := C.olm_irecv(e.rstage, C.int(first), C.int(src), C.int(tag), &reqs[0]); rc != 0 {
		return nil, fmt.Errorf("mpi: receive from %s: %w", e.peer(src), mpiError("MPI_Irecv", rc))
	}
	ok, err := waitAll(e.newBackoff(), reqs[:], time.Now().Add(e.opts.Stall), e.done)
	if !ok {
		// MPI may still write into the buffer: a new one for the next
		abandon(nil, e.rstage)
		e.rstage = nil
		var nerr error
		if e.rstage, nerr = cmem.Malloc(maxPlaceHead, "mpi: a head buffer"); nerr != nil {
			return nil, nerr
		}
		if err == nil {
			err = fmt.Errorf("mpi: the head of a message from %s did not arrive within %v: %w", e.peer(src), e.opts.Stall, link.ErrTimeout)
		}
		return nil, err
	}
	return slices.Clone(unsafe.Slice((*byte)(e.rstage), first)), nil
}

// recvParts receives n bytes from src on tag into dst: the first bytes
// (if first > 0) as one MPI message, the rest in chunks; the stall bound
// restarts with each part that completes. lost is true when a receive
// could not be cancelled after a failure: MPI may still write into dst.
func (e *endpoint) recvParts(src, tag int, dst unsafe.Pointer, n, first, chunk int, release func()) (lost bool, err error) {
	parts := splitParts(n, first, chunk)
	reqs := make([]C.uintptr_t, len(parts))
	for i, p := range parts {
		if rc := C.olm_irecv(unsafe.Add(dst, p.off), C.int(p.n), C.int(src), C.int(tag), &reqs[i]); rc != 0 {
			release()
			return !e.cancel(reqs[:i]), fmt.Errorf("mpi: receive from %s: %w", e.peer(src), mpiError("MPI_Irecv", rc))
		}
	}
	release()
	left := len(parts)
	for {
		ok, err := waitAll(e.transferBackoff(n), reqs, time.Now().Add(e.opts.Stall), e.done)
		if ok {
			return false, nil
		}
		now := 0
		for _, r := range reqs {
			if r != 0 {
				now++
			}
		}
		if err == nil && now < left {
			left = now
			continue
		}
		lost := !e.cancel(reqs)
		if err == nil {
			err = fmt.Errorf("mpi: %d of a %d-byte message from %s did not arrive within %v: %w", now, n, e.peer(src), e.opts.Stall, link.ErrTimeout)
		}
		return lost, err
	}
}

// part is one MPI message of a large message's payload: off and n bytes.
type part struct{ off, n int }

// splitParts is how a payload of n bytes arrives: its first bytes as one
// part (if first > 0), then the rest in chunks (as sendBig sends them).
func splitParts(n, first, chunk int) []part {
	var parts []part
	if first > 0 {
		parts = append(parts, part{0, first})
	}
	for off := first; off < n; off += chunk {
		parts = append(parts, part{off, min(n-off, chunk)})
	}
	return parts
}

// cancel cancels receives; false if one could not be (MPI may still
// write into its memory).
func (e *endpoint) cancel(reqs []C.uintptr_t) bool {
	all := true
	for i := range reqs {
		if reqs[i] == 0 {
			continue
		}
		var c C.int
		if C.olm_cancel(&reqs[i], &c) != 0 || c == 0 {
			all = false
		}
	}
	return all
}

// ---- discovery --------------------------------------------------------------

// answer replies to a hello from src (a copy: it never waits for src).
func (e *endpoint) answer(src int, nonce uint64) {
	d := &e.dests[src]
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failed == nil {
		e.post(d, src, kindReply, helloBody(e.role, nonce, e.host), e.opts.Stall)
	}
}

// discover asks the candidate ranks who they are and waits for those it
// expects (bounded by opts.Discovery); the proxies among all who answered
// are e.proxies. Which ranks, in order of preference:
//   - opts.ProxyRanks (OFFLOAD_REMOTE_PROXY_RANKS): those, each awaited;
//   - Open MPI's application contexts (an MPMD launch): a client asks and
//     awaits every rank outside its own context (its context's other
//     ranks run the same program: clients); a proxy asks every rank and
//     awaits the other ranks of its own context (proxies);
//   - otherwise (srun --multi-prog, other launchers): every other rank,
//     each awaited until the bound.
func (e *endpoint) discover(env Env) error {
	var ask, await []int
	ctxs, own, ok := appContexts(env, e.rank, e.size)
	defer func() { e.clients = clientCount(e.rank, e.size, e.opts.ProxyRanks, ctxs, own, ok, e.proxies) }()
	switch {
	case e.opts.ProxyRanks != nil:
		for _, r := range e.opts.ProxyRanks {
			if r >= e.size {
				return fmt.Errorf("mpi: %s names rank %d; the job's ranks are 0 to %d", EnvProxyRanks, r, e.size-1)
			}
			if r != e.rank && !slices.Contains(ask, r) {
				ask = append(ask, r)
			}
		}
		await = ask
	case ok:
		for r := 0; r < e.size; r++ {
			in := r >= ctxs[own][0] && r < ctxs[own][1]
			if r == e.rank || (e.role == link.Client && in) {
				continue
			}
			ask = append(ask, r)
			if e.role == link.Client || in {
				await = append(await, r)
			}
		}
	default:
		for r := 0; r < e.size; r++ {
			if r != e.rank {
				ask = append(ask, r)
			}
		}
		await = ask
	}
	e.probe.Lock()
	defer e.probe.Unlock()
	for _, r := range ask {
		d := &e.dests[r]
		d.mu.Lock()
		err := e.post(d, r, kindHello, helloBody(e.role, e.nonce, e.host), e.opts.Stall)
		d.mu.Unlock()
		if err != nil {
			return err
		}
	}
	deadline := time.Now().Add(e.opts.Discovery)
	b := e.newBackoff()
	noop := func() {}
	for {
		all := true
		for _, r := range await {
			if _, ok := e.replies[r]; !ok {
				all = false
				break
			}
		}
		if all {
			break
		}
		src, msg, got, err := e.poll(noop)
		if err != nil {
			return err
		}
		if got {
			e.pending = append(e.pending, item{src, msg})
			continue
		}
		if src == -2 {
			continue
		}
		if !b.Pause(deadline) {
			break
		}
	}
	for _, p := range e.replies {
		if p.Role == link.Proxy {
			e.proxies = append(e.proxies, p)
		}
	}
	sort.Slice(e.proxies, func(i, j int) bool { return e.proxies[i].Rank < e.proxies[j].Rank })
	return nil
}

// Clients is how many ranks of a proxy's job are clients (the Exits that
// end the proxy): see clientCount. ep must be an Endpoint of this package
// opened as a proxy.
func Clients(ep link.Endpoint) int {
	if e, ok := ep.(*endpoint); ok {
		return e.clients
	}
	return 0
}

// clientCount counts the clients of the job of the proxy rank, by the
// launch's own word where there is one: the ranks that
// OFFLOAD_REMOTE_PROXY_RANKS does not name, or those outside the proxy's
// application context (less any proxy found there). Only without either
// does it rest on discovery alone (every other rank that did not answer as
// a proxy). A proxy that answered discovery late (a loaded machine) is so
// never counted as a client, whose Exit the proxy would wait for forever.
func clientCount(rank, size int, proxyRanks []int, ctxs [][2]int, own int, haveCtxs bool, proxies []link.Peer) int {
	switch {
	case proxyRanks != nil:
		named := map[int]bool{rank: true}
		for _, r := range proxyRanks {
			if r >= 0 && r < size {
				named[r] = true
			}
		}
		return size - len(named)
	case haveCtxs:
		n := size - (ctxs[own][1] - ctxs[own][0])
		for _, p := range proxies {
			if p.Rank < ctxs[own][0] || p.Rank >= ctxs[own][1] {
				n--
			}
		}
		return max(n, 0)
	default:
		return max(size-1-len(proxies), 0)
	}
}

var (
	_ link.Endpoint = (*endpoint)(nil)
	_ link.Poller   = (*endpoint)(nil)
	_ link.Gatherer = (*endpoint)(nil)
	_ link.Placer   = (*endpoint)(nil)
	_ link.Expecter = (*endpoint)(nil)
	_ link.Freer    = (*endpoint)(nil)
)
