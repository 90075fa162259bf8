package server

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/cmem"
	"github.com/liboffload-go/liboffload-go/internal/remote/link"
	"github.com/liboffload-go/liboffload-go/internal/remote/wire"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// Copies between two proxies (docs/remote.md, "Copies between proxies").
// The client grants the destination proxy the copy (PeerRecv: one range
// of its own memory, from one proxy rank) and queues PeerSend on a queue
// of the source proxy, without waiting in between. The destination checks
// the grant and tells the source (PeerReady: accepted, or why not). When
// the source's queue reaches the copy and the grant is accepted, the
// source reads the range in chunks and sends each to the destination as
// PeerData, straight after its header in one buffer; the destination
// writes each into its device memory as it comes and answers PeerDone
// once all of it is there, or at its first error. The source's queue is
// held until then, so the client's sync of that queue (or an event
// recorded after the copy) covers the whole copy, and a refused grant is
// that copy's error. The bytes never pass through the client.

// peerKey names one copy: the client that asked for it and its token.
type peerKey struct {
	client int
	token  uint64
}

// grant is a copy a destination proxy accepted. mu is held while a
// chunk is written, so that the client's Bye (dropGrants) waits for the
// write before its memory is freed.
type grant struct {
	mu         sync.Mutex
	dropped    bool
	c          *client
	dev        *device
	dst, size  uint64
	from       int    // the source proxy's rank
	next       uint64 // the offset the next PeerData must have
	q          plugin.Queue
	queueError error
}

// peers is the state of copies between proxies (under mu, made on first use).
type peers struct {
	grants map[peerKey]*grant     // as the destination
	sends  map[peerKey]*peerWaits // as the source
	early  map[peerKey]ready      // as the source: PeerReady before its PeerSend
}

// peerWaits is a source's copy waiting for its destination's PeerReady
// and then its PeerDone (nil, or the destination's error).
type peerWaits struct {
	to    link.Peer
	ready chan ready
	done  chan error
}

// ready is a destination's PeerReady: the grant refused (err), or
// accepted; placed says the destination's transport puts the bytes
// straight into host memory (the copy may then go in pieces of
// wire.HostPiece). An early one came before the client's PeerSend (the
// client sends PeerRecv and PeerSend to two proxies at once).
type ready struct {
	from   int
	placed bool
	err    error
}

// maxEarly bounds the PeerReadys kept for copies not seen yet: a
// destination's answer to a grant whose PeerSend this proxy refused stays
// until the client leaves.
const maxEarly = 4096

// Bounds of PeerSend's chunk and timeout arguments (the client's
// OFFLOAD_REMOTE_CHUNK and OFFLOAD_REMOTE_TIMEOUT).
const (
	minPeerChunk   = 4096
	maxPeerChunk   = 1 << 30
	maxPeerTimeout = time.Hour
)

func (s *Server) peerState() *peers {
	if s.peer.grants == nil {
		s.peer.grants, s.peer.sends, s.peer.early = map[peerKey]*grant{}, map[peerKey]*peerWaits{}, map[peerKey]ready{}
	}
	return &s.peer
}

// proxyPeer returns another proxy of the job.
func (s *Server) proxyPeer(rank uint64) (link.Peer, error) {
	for _, p := range s.ep.Proxies() {
		if uint64(p.Rank) == rank && p.Rank != s.ep.Rank() {
			return p, nil
		}
	}
	return link.Peer{}, bad("rank %d is not another proxy of the job", rank)
}

// ownsOn is owns for memory of device d (nil: any device): an allocation
// of d, or a global. Allocations are found in the client's ordered index
// (O(log n): every request and every piece of a copy is checked).
func (c *client) ownsOn(what string, d *device, p, n uint64) error {
	end := p + n
	if end < p {
		return bad("%s %#x + %d wraps around", what, p, n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if base, aend, ok := c.spans.Floor(p); ok && end <= aend {
		if a := c.allocs[base]; d != nil && a.dev != d {
			return bad("%s %#x..%#x is memory of device %d, not of device %d", what, p, end, a.dev.index, d.index)
		}
		return nil
	}
	for _, g := range c.globals {
		if p >= g.addr && end <= g.addr+g.size {
			return nil
		}
	}
	return bad("%s %#x..%#x is not in an allocation or a global of this client", what, p, end)
}

// peerRecv takes the client's grant of a copy into its memory from
// another proxy (PeerRecv: dev dst size srcRank token) and answers that
// proxy: PeerReady, with the reason if the grant is refused. Only a grant
// naming no other proxy is the client's error (at its next sync).
func (s *Server) peerRecv(c *client, a [wire.MaxArgs]uint64) error {
	from, err := s.proxyPeer(a[3])
	if err != nil {
		return err
	}
	k := peerKey{c.rank, a[4]}
	d, err := s.grant(c, k, from.Rank, a)
	// (with a placer, placePeer takes every chunk of a host device's grant)
	_, placer := s.ep.(link.Placer)
	s.peerAnswer(wire.OpPeerReady, from.Rank, k, err, err == nil && placer && d.d.IsHost())
	return nil
}

// grant checks a PeerRecv and records it; it returns the device.
func (s *Server) grant(c *client, k peerKey, from int, a [wire.MaxArgs]uint64) (*device, error) {
	d, err := s.device(a[0])
	if err != nil {
		return nil, err
	}
	dst, size := a[1], a[2]
	if size == 0 || size > MaxCopy {
		return nil, bad("copy of %d bytes from another proxy", size)
	}
	if err := c.ownsOn("copy destination", d, dst, size); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.peerState()
	if ps.grants[k] != nil {
		return nil, bad("copy %d exists", k.token)
	}
	ps.grants[k] = &grant{c: c, dev: d, dst: dst, size: size, from: from}
	return d, nil
}

// peerSend checks a PeerSend (queue dev src size dstRank token chunk
// timeoutMs) and queues the copy on q.
func (s *Server) peerSend(c *client, q *queue, a [wire.MaxArgs]uint64) error {
	d, err := s.devOf(q, a[1])
	if err != nil {
		return err
	}
	src, size, token, chunk, ms := a[2], a[3], a[5], a[6], a[7]
	if size == 0 || size > MaxCopy {
		return bad("copy of %d bytes to another proxy", size)
	}
	if chunk < minPeerChunk || chunk > maxPeerChunk {
		return bad("copy chunk of %d bytes (%d to %d)", chunk, minPeerChunk, maxPeerChunk)
	}
	timeout := time.Duration(ms) * time.Millisecond
	if ms == 0 || ms > uint64(maxPeerTimeout/time.Millisecond) {
		return bad("copy timeout of %d ms", ms)
	}
	to, err := s.proxyPeer(a[4])
	if err != nil {
		return err
	}
	if err := c.ownsOn("copy source", d, src, size); err != nil {
		return err
	}
	k := peerKey{c.rank, token}
	w := &peerWaits{to: to, ready: make(chan ready, 1), done: make(chan error, 1)}
	s.mu.Lock()
	ps := s.peerState()
	dup := ps.sends[k] != nil
	if !dup {
		ps.sends[k] = w
		if r, ok := ps.early[k]; ok && r.from == to.Rank {
			delete(ps.early, k)
			w.ready <- r
		}
	}
	s.mu.Unlock()
	if dup {
		return bad("copy %d exists", token)
	}
	forget := func() {
		s.mu.Lock()
		delete(s.peerState().sends, k)
		s.mu.Unlock()
	}
	return s.after(q, func() error {
		defer forget()
		err := s.sendToPeer(k, w, d, src, size, chunk, timeout)
		if err != nil {
			var oe *ol.Error
			code := ol.ErrcBackendFailure
			if errors.As(err, &oe) {
				code, err = oe.Code, errors.New(oe.Details)
			}
			return ol.Errorf(code, "copy to remote rank %d (host %s): %v", to.Rank, to.Host, err)
		}
		return nil
	}, forget)
}

// sendToPeer reads [src, src+size) of d in chunks and sends each as
// PeerData, then waits for the destination's PeerDone. A host device's
// memory is read by this thread (it runs in d's queue order); another
// device reads into two buffers on a queue of its own, the next chunk
// while the last one is sent.
func (s *Server) sendToPeer(k peerKey, w *peerWaits, d *device, src, size, chunk uint64, timeout time.Duration) error {
	if ex, ok := s.ep.(link.Expecter); ok {
		ex.Expect(1) // PeerReady, then PeerDone
		defer ex.Expect(-1)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	var r ready
	select {
	case r = <-w.ready:
		if r.err != nil {
			var oe *ol.Error
			if errors.As(r.err, &oe) {
				return ol.Errorf(oe.Code, "the destination refused the copy: %s", oe.Details)
			}
			return fmt.Errorf("the destination refused the copy: %w", r.err)
		}
	case <-t.C:
		return fmt.Errorf("no answer to the copy's grant within %v (OFFLOAD_REMOTE_TIMEOUT): the proxy is treated as lost", timeout)
	}
	// a host device's memory goes from where it is (no copy), MPI reading
	// it within SendParts, on this thread in the queue's order
	gather, _ := s.ep.(link.Gatherer)
	if !d.d.IsHost() {
		gather = nil
	}
	if r.placed && gather != nil {
		// from host memory into host memory: no buffer at either end
		chunk = wire.HostPiece(chunk)
	}
	chunk = min(chunk, size)
	slot := uint64(wire.MaxHeader) + chunk
	var buf unsafe.Pointer
	var bufs []byte
	if gather == nil {
		var err error
		if buf, err = cmem.Malloc(2*slot, "the buffers of a copy to another proxy"); err != nil {
			return err
		}
		defer cmem.Free(buf)
		bufs = unsafe.Slice((*byte)(buf), 2*slot)
	}
	var tq plugin.Queue
	if !d.d.IsHost() {
		var err error
		if tq, err = d.d.NewQueue(); err != nil {
			return err
		}
		defer func() { _ = tq.Sync(); _ = tq.Release() }()
	}
	// read starts reading chunk i into its buffer; the event (nil: the
	// bytes are there) completes when they are
	read := func(i uint64) (plugin.Event, error) {
		off := i * chunk
		m := min(chunk, size-off)
		at := (i%2)*slot + wire.MaxHeader
		if tq == nil {
			if gather != nil {
				return nil, nil // sent from where it is
			}
			copy(bufs[at:at+m], unsafe.Slice((*byte)(unsafe.Add(nil, uintptr(src+off))), m))
			return nil, nil
		}
		if err := tq.CopyFromDevice(uintptr(buf)+uintptr(at), uintptr(src+off), d.d, m); err != nil {
			return nil, err
		}
		return tq.Record()
	}
	var pending []plugin.Event
	defer func() {
		for _, e := range pending {
			if e != nil {
				_ = e.Release()
			}
		}
	}()
	n := (size + chunk - 1) / chunk
	var hdr [wire.MaxHeader]byte
	for i := uint64(0); i < n; i++ {
		for uint64(len(pending)) < min(2, n-i) && (tq != nil || len(pending) == 0) {
			e, err := read(i + uint64(len(pending)))
			if err != nil {
				return err
			}
			pending = append(pending, e)
		}
		if e := pending[0]; e != nil {
			err := e.Sync()
			_ = e.Release()
			if err != nil {
				pending = pending[1:]
				return err
			}
		}
		pending = pending[1:]
		select {
		case err := <-w.done: // the destination gave up early
			if err == nil {
				err = errors.New("the destination ended the copy before all of it was sent")
			}
			return err
		default:
		}
		off := i * chunk
		m := min(chunk, size-off)
		h, _ := wire.AppendHeader(hdr[:0], &wire.Msg{Op: wire.OpPeerData, Args: [wire.MaxArgs]uint64{uint64(k.client), k.token, off}}, m)
		if gather != nil {
			if err := gather.SendParts(w.to.Rank, h, unsafe.Slice((*byte)(unsafe.Add(nil, uintptr(src+off))), m), timeout); err != nil {
				return err
			}
			continue
		}
		at := (i%2)*slot + wire.MaxHeader
		msg := bufs[at-uint64(len(h)) : at+m]
		copy(msg, h)
		if err := s.ep.Send(w.to.Rank, msg, timeout); err != nil {
			return err
		}
	}
	t.Reset(timeout)
	select {
	case err := <-w.done:
		return err
	case <-t.C:
		return fmt.Errorf("no answer within %v (OFFLOAD_REMOTE_TIMEOUT): the proxy is treated as lost", timeout)
	}
}

// fromPeer handles a message of another proxy (on the receive loop): the
// bytes of a copy it was granted, or an answer about one this proxy sends.
func (s *Server) fromPeer(src int, m *wire.Msg) {
	a := m.Args
	k := peerKey{int(min(a[0], 1<<31)), a[1]}
	if m.Op == wire.OpPeerDone || m.Op == wire.OpPeerReady {
		var err error
		if a[2] != 0 {
			err = ol.NewError(ol.Errc(min(a[2], 1<<31)), m.Text)
		}
		if _, perr := s.proxyPeer(uint64(src)); perr != nil {
			s.logf("%v from rank %d, which is not another proxy", m.Op, src)
			return
		}
		r := ready{from: src, placed: m.Op == wire.OpPeerReady && a[3] == 1, err: err}
		s.mu.Lock()
		ps := s.peerState()
		w := ps.sends[k]
		if w == nil && m.Op == wire.OpPeerReady && len(ps.early) < maxEarly {
			// (the client's PeerSend is on its way)
			ps.early[k] = r
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if w == nil || w.to.Rank != src {
			s.logf("%v from rank %d for no copy of its (client %d, copy %d)", m.Op, src, a[0], a[1])
			return
		}
		if m.Op == wire.OpPeerReady {
			select {
			case w.ready <- r:
			default: // one answer per copy
			}
			return
		}
		select {
		case w.done <- err:
		default: // one answer per copy
		}
		return
	}
	s.mu.Lock()
	g := s.peerState().grants[k]
	s.mu.Unlock()
	if g != nil {
		g.mu.Lock()
		defer g.mu.Unlock()
	}
	if g == nil || g.from != src || g.dropped {
		s.peerAnswer(wire.OpPeerDone, src, k, bad("PeerData for no copy (client %d, copy %d) this proxy accepted from rank %d", a[0], a[1], src), false)
		return
	}
	off, n := a[2], uint64(len(m.Data))
	err := g.check(off, n)
	if err == nil {
		err = g.write(g.dst+off, m.Data)
	}
	s.peerWritten(src, k, g, n, err)
}

// check checks that n bytes at offset off are the copy's next chunk, in
// memory the client owns (with g.mu held).
func (g *grant) check(off, n uint64) error {
	if off != g.next || n == 0 || n > g.size-off {
		return bad("%d bytes at offset %d of a %d-byte copy that expects offset %d", n, off, g.size, g.next)
	}
	return g.c.ownsOn("copy destination", g.dev, g.dst+off, n)
}

// peerWritten ends a chunk of n bytes whose write ended with err (with
// g.mu held): after the last chunk or an error the copy is answered.
func (s *Server) peerWritten(src int, k peerKey, g *grant, n uint64, err error) {
	if err == nil {
		g.next += n
		if g.next < g.size {
			return
		}
	}
	s.mu.Lock()
	delete(s.peerState().grants, k)
	s.mu.Unlock()
	g.dropped = true
	if err != nil || g.q == nil {
		if err == nil {
			err = g.queueError
		}
		if g.q != nil {
			_ = g.q.Sync()
			_ = g.q.Release()
			g.q = nil
		}
		s.peerAnswer(wire.OpPeerDone, src, k, err, false)
		return
	}
	// the device's queue ends the writes off the receive loop
	s.wg.Add(1)
	q := g.q
	g.q = nil
	go func() {
		defer s.wg.Done()
		err := q.Sync()
		_ = q.Release()
		s.peerAnswer(wire.OpPeerDone, src, k, err, false)
	}()
}

// write puts b at dst: the CPU writes memory of a device whose memory is
// the host's; another device's queue copies it from a staging buffer.
func (g *grant) write(dst uint64, b []byte) error {
	n := uint64(len(b))
	if g.dev.d.IsHost() {
		copy(unsafe.Slice((*byte)(unsafe.Add(nil, uintptr(dst))), n), b)
		return nil
	}
	if g.q == nil {
		q, err := g.dev.d.NewQueue()
		if err != nil {
			return err
		}
		g.q = q
	}
	buf, err := staging(n)
	if err != nil {
		return err
	}
	copy(unsafe.Slice((*byte)(buf), n), b)
	if err := g.q.CopyToDevice(uintptr(dst), g.dev.d, uintptr(buf), n); err != nil {
		cmem.Free(buf)
		return err
	}
	if err := g.q.HostCall(func() error { cmem.Free(buf); return nil }); err != nil {
		// the queue is broken: the buffer may still be read, so it stays
		g.queueError = err
		return err
	}
	return nil
}

// peerAnswer answers a source proxy about its copy: op is PeerReady (the
// grant; placed: see ready) or PeerDone (the bytes).
func (s *Server) peerAnswer(op wire.Op, to int, k peerKey, err error, placed bool) {
	m := wire.Msg{Op: op, Args: [wire.MaxArgs]uint64{uint64(k.client), k.token}}
	if placed {
		m.Args[3] = 1
	}
	if err != nil {
		code, details := ol.ErrcUnknown, err.Error()
		var oe *ol.Error
		if errors.As(err, &oe) {
			code, details = oe.Code, oe.Details
		}
		if code == ol.ErrcSuccess {
			code = ol.ErrcUnknown
		}
		m.Args[2], m.Text = uint64(code), details[:min(len(details), wire.MaxText)]
	}
	if err := s.send(to, &m); err != nil {
		s.logf("%v to rank %d: %v", op, to, err)
	}
}

// dropGrants forgets the copies a client's rank had accepted here, once
// no chunk of them is being written, and the answers to grants of its
// that no PeerSend took.
func (s *Server) dropGrants(rank int) {
	s.mu.Lock()
	var gs []*grant
	for k, g := range s.peerState().grants {
		if k.client == rank {
			delete(s.peer.grants, k)
			gs = append(gs, g)
		}
	}
	for k := range s.peer.early {
		if k.client == rank {
			delete(s.peer.early, k)
		}
	}
	s.mu.Unlock()
	for _, g := range gs {
		g.mu.Lock()
		g.dropped = true
		if g.q != nil {
			_ = g.q.Sync()
			_ = g.q.Release()
			g.q = nil
		}
		g.mu.Unlock()
	}
}
