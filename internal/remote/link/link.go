// Package link is the message layer under the remote platform: ordered,
// reliable messages between the processes of one job. The remote plugin
// (an application's side) and offload-proxy (a proxy's side) speak the
// remote protocol over an Endpoint; internal/mpi gives the Endpoint of an
// MPI launch, and Pipe gives two in-process Endpoints for tests of the
// protocol without MPI.
package link

import (
	"errors"
	"fmt"
	"time"
	"unsafe"
)

// Role is what a process is in the job.
type Role int

const (
	// Client is a process that uses devices: an application with the library.
	Client Role = iota
	// Proxy is an offload-proxy that serves the devices of its machine.
	Proxy
)

// Peer is another process of the job.
type Peer struct {
	Rank int
	// Host names the machine the process runs on (for error messages and
	// the remote platform's name).
	Host string
	Role Role
}

// ErrClosed is returned by Recv once Close has been called.
var ErrClosed = errors.New("link: endpoint closed")

// Endpoint is one process's end of the job's message network. Its methods
// are safe for concurrent use.
type Endpoint interface {
	// Rank is this process's number in the job.
	Rank() int
	// Host names this process's machine.
	Host() string
	// Proxies lists the job's proxies (not this process), by rank; it is
	// known when the Endpoint is returned and does not change.
	Proxies() []Peer
	// Send delivers msg to rank after every message sent to it before by
	// this process (messages between two processes arrive in order). msg
	// may be reused once Send returns. Send waits at most timeout for the
	// transport to take msg (a large message to a peer that no longer
	// receives may never be taken) and then fails with an error naming the
	// rank and host; timeout <= 0 waits without bound.
	Send(rank int, msg []byte, timeout time.Duration) error
	// Recv returns the next message from any process and its sender's
	// rank, waiting at most timeout (timeout <= 0 waits without bound;
	// ErrTimeout when it passes). The message is the caller's. Recv from
	// several goroutines at once is allowed; each message goes to one.
	Recv(timeout time.Duration) (src int, msg []byte, err error)
	// Close ends the Endpoint: Recv returns ErrClosed. The transport
	// itself (MPI) may stay initialised until the process exits.
	Close() error
}

// ErrTimeout is returned by Recv when its timeout passes without a message.
var ErrTimeout = errors.New("link: timed out")

// Poller is an Endpoint whose messages a goroutine waiting for a reply can
// take itself, without a hand-off through another goroutine (internal/mpi's:
// its Recv polls and sleeps when idle).
type Poller interface {
	// TryRecv returns a message if one has arrived and no other goroutine
	// is receiving at this moment (ok false otherwise), without waiting.
	TryRecv() (src int, msg []byte, ok bool, err error)
	// Spin is how long a waiting goroutine should poll before it sleeps.
	Spin() time.Duration
}

// Expecter is an Endpoint whose waits can be told that an answer is due
// (Backoff.Due): Expect(1) when a wait for one starts, Expect(-1) when it
// ends.
type Expecter interface {
	Expect(delta int32)
}

// Gatherer is an Endpoint that sends a message given in two parts, head
// then body, as Send sends their concatenation, a large body from where it
// is (no copy).
type Gatherer interface {
	SendParts(rank int, head, body []byte, timeout time.Duration) error
}

// Placer is an Endpoint whose receiver may choose where the body of a
// large message sent with SendParts goes, once it has seen the head
// (internal/mpi's: a copy's bytes then arrive where they belong, with no
// copy in between).
type Placer interface {
	// SetPlace installs p; call it before the first Recv.
	SetPlace(p Place)
}

// Freer is an Endpoint that may return a large message in C memory, so
// that no failed allocation of Go's heap ends the process (internal/mpi's:
// a message of more than 64 KiB that no Place took). The receiver gives
// every message back with Free (the Free function) once it is done with
// it, and never uses it after.
type Freer interface {
	// Free releases msg if it is one of the Endpoint's; it ignores any
	// other.
	Free(msg []byte)
}

// Free gives msg back to ep, if ep is a Freer.
func Free(ep Endpoint, msg []byte) {
	if f, ok := ep.(Freer); ok {
		f.Free(msg)
	}
}

// DroppedError is Recv's error for a message the transport received but
// could not keep (no memory for it): the stream stays in order and the
// next message comes as usual. Head is the message's first bytes when they
// were sent apart (a Gatherer's head: the protocol's header), so that the
// receiver can tell its sender what was lost; else nil.
type DroppedError struct {
	Src  int
	Size int
	Head []byte
	Err  error
}

func (e *DroppedError) Error() string {
	return fmt.Sprintf("a message of %d bytes from rank %d was dropped: %v", e.Size, e.Src, e.Err)
}

func (e *DroppedError) Unwrap() error { return e.Err }

// Place is called on the receiving goroutine, within Recv, with a large
// message's sender, head and body size n. It returns nil to have the
// message received whole (Recv returns it as usual), or memory outside
// Go's heap of at least n bytes, valid until done is called, and done.
// The body is then received there and done is called on the same
// goroutine: err nil once all of it arrived; otherwise, lost true when
// the transport may still write into dst (it must never be reused). Recv
// does not return a placed message; a failed one fails Recv as well.
type Place func(src int, head []byte, n int) (dst unsafe.Pointer, done func(err error, lost bool))
