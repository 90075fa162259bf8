package server

import (
	"unsafe"

	"github.com/liboffload-go/liboffload-go/internal/cmem"
	"github.com/liboffload-go/liboffload-go/internal/remote/wire"
)

// place is the server's link.Place (docs/remote.md, "Copies without
// copying"): the transport shows it the header of a large CopyTo or
// PeerData before the bytes arrive, and it names where they go. Only a
// message that passes the checks its handler makes (the queue, device
// and memory are the client's, the chunk is the copy's next) is placed;
// anything else is received whole and handled as usual, which reports
// its error. A copy into a host device's memory from a queue with
// nothing queued lands in that memory itself (what the queue would do
// next); any other CopyTo lands in C memory that the queue then copies
// from, instead of a message buffer and a copy of it.
func (s *Server) place(src int, head []byte, n int) (unsafe.Pointer, func(error, bool)) {
	m, dn, err := wire.DecodeHeader(head)
	if err != nil || dn != uint64(n) || n <= 0 {
		return nil, nil
	}
	switch m.Op {
	case wire.OpCopyTo:
		return s.placeCopy(src, &m, uint64(n))
	case wire.OpPeerData:
		return s.placePeer(src, &m, uint64(n))
	}
	return nil, nil
}

func (s *Server) placeCopy(src int, m *wire.Msg, n uint64) (unsafe.Pointer, func(error, bool)) {
	a := m.Args
	c := s.client(src)
	q, err := c.queue(a[0])
	if err != nil {
		return nil, nil
	}
	d, err := s.devOf(q, a[1])
	if err != nil || n > MaxCopy {
		return nil, nil
	}
	fail := func(err error) {
		c.mu.Lock()
		if q.err == nil {
			q.err = err
		}
		c.mu.Unlock()
	}
	// (the receive loop is the only one that queues work: the queue stays
	// empty until done)
	if d.d.IsHost() && q.q.Empty() && c.ownsOn("copy destination", d, a[2], n) == nil {
		return unsafe.Add(nil, uintptr(a[2])), func(err error, _ bool) {
			if err != nil {
				fail(err)
			}
		}
	}
	if c.owns("copy destination", a[2], n) != nil {
		return nil, nil
	}
	buf, err := staging(n)
	if err != nil {
		return nil, nil
	}
	return buf, func(err error, lost bool) {
		if err == nil {
			if err = q.q.CopyToDevice(uintptr(a[2]), d.d, uintptr(buf), n); err == nil {
				if err = s.after(q, func() error { cmem.Free(buf); return nil }, func() { cmem.Free(buf) }); err != nil {
					fail(err)
				}
				return
			}
		}
		if !lost {
			cmem.Free(buf)
		}
		fail(err)
	}
}

// placePeer places a chunk of a copy from another proxy into a host
// device's memory; g.mu is held until the chunk is in.
func (s *Server) placePeer(src int, m *wire.Msg, n uint64) (unsafe.Pointer, func(error, bool)) {
	a := m.Args
	k := peerKey{int(min(a[0], 1<<31)), a[1]}
	s.mu.Lock()
	g := s.peerState().grants[k]
	s.mu.Unlock()
	if g == nil || !g.dev.d.IsHost() {
		return nil, nil
	}
	g.mu.Lock()
	if g.from != src || g.dropped || g.check(a[2], n) != nil {
		g.mu.Unlock()
		return nil, nil
	}
	return unsafe.Add(nil, uintptr(g.dst+a[2])), func(err error, _ bool) {
		defer g.mu.Unlock()
		s.peerWritten(src, k, g, n, err)
	}
}
