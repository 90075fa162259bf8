package link

import (
	"fmt"
	"sync"
	"time"
)

// Pipe returns the Endpoints of an in-process job: ranks 0..clients-1 are
// clients, the next proxies ranks are proxies (host "pipe"). It carries
// the remote protocol in tests without MPI. Like MPI, a message sent to an
// endpoint that was closed (a proxy that died) is dropped without an error.
func Pipe(clients, proxies int) []*PipeEnd {
	n := clients + proxies
	ends := make([]*PipeEnd, n)
	var peers []Peer
	for r := clients; r < n; r++ {
		peers = append(peers, Peer{Rank: r, Host: "pipe", Role: Proxy})
	}
	for r := range ends {
		ends[r] = &PipeEnd{rank: r, all: ends, ready: make(chan struct{}, 1)}
	}
	for _, e := range ends {
		for _, p := range peers {
			if p.Rank != e.rank {
				e.proxies = append(e.proxies, p)
			}
		}
	}
	return ends
}

type pipeMsg struct {
	src     int
	msg     []byte
	dropped *DroppedError // (Drop) Recv's error instead of msg
}

// PipeEnd is one Endpoint of Pipe.
type PipeEnd struct {
	rank    int
	all     []*PipeEnd
	proxies []Peer

	mu     sync.Mutex
	queue  []pipeMsg
	closed bool
	ready  chan struct{} // one token while queue is not empty or closed
}

// Rank implements Endpoint.
func (e *PipeEnd) Rank() int { return e.rank }

// Host implements Endpoint.
func (e *PipeEnd) Host() string { return "pipe" }

// Proxies implements Endpoint.
func (e *PipeEnd) Proxies() []Peer { return e.proxies }

// Send implements Endpoint.
func (e *PipeEnd) Send(rank int, msg []byte, timeout time.Duration) error {
	if rank < 0 || rank >= len(e.all) {
		return fmt.Errorf("link: no rank %d (pipe of %d)", rank, len(e.all))
	}
	to := e.all[rank]
	to.mu.Lock()
	defer to.mu.Unlock()
	if to.closed {
		return nil
	}
	to.queue = append(to.queue, pipeMsg{src: e.rank, msg: append([]byte(nil), msg...)})
	to.signal()
	return nil
}

// Drop queues d as if a message from d.Src had arrived without memory to
// keep it: Recv returns d in its place, in the order it came (the tests
// of what receivers do with a link.DroppedError).
func (e *PipeEnd) Drop(d *DroppedError) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closed {
		e.queue = append(e.queue, pipeMsg{src: d.Src, dropped: d})
		e.signal()
	}
}

// signal leaves one token in ready (e.mu held).
func (e *PipeEnd) signal() {
	select {
	case e.ready <- struct{}{}:
	default:
	}
}

// Recv implements Endpoint.
func (e *PipeEnd) Recv(timeout time.Duration) (int, []byte, error) {
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	for {
		e.mu.Lock()
		if e.closed {
			e.signal()
			e.mu.Unlock()
			return 0, nil, ErrClosed
		}
		if len(e.queue) > 0 {
			m := e.queue[0]
			e.queue[0] = pipeMsg{}
			e.queue = e.queue[1:]
			if len(e.queue) > 0 {
				e.signal() // for another receiver
			}
			e.mu.Unlock()
			if m.dropped != nil {
				return m.src, nil, m.dropped
			}
			return m.src, m.msg, nil
		}
		e.mu.Unlock()
		select {
		case <-e.ready:
		case <-deadline:
			return 0, nil, ErrTimeout
		}
	}
}

// SharedAddressSpace says that the peers of a Pipe are in this process:
// their memory is this process's memory.
func (e *PipeEnd) SharedAddressSpace() bool { return true }

// Close implements Endpoint; messages sent to it from now on are dropped.
func (e *PipeEnd) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	e.queue = nil
	e.signal()
	return nil
}
