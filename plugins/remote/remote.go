// Package remote is the backend for devices of other processes of an MPI
// job: each offload-proxy rank serves the devices of its machine, and this
// plugin offers each proxy's platforms as platforms of their own (one per
// proxy and backend), named "remote rank R (host H): <the proxied
// platform's name>", with the proxied platform's backend, vendor and
// version and every device's own information. Calls are forwarded over the
// remote protocol (internal/remote/wire) on a link.Endpoint; the proxy runs
// them with the same plugins as this library's.
//
// Device memory is the proxy's: an allocation's address is the remote
// address, passed into kernels unchanged. Host and managed allocations and
// olMemRegister on a remote device are UNSUPPORTED.
package remote

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/remote/link"
	"github.com/liboffload-go/liboffload-go/internal/remote/wire"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// Environment variables of the remote platform.
const (
	// EnvRemote: "auto" (or unset) starts the remote platform under an
	// MPI launch with other ranks, "mpi" even where no launch is seen,
	// "off" never; "loopback:N" serves N in-process proxies (a test mode).
	EnvRemote = "OFFLOAD_REMOTE"
	// EnvTimeout bounds the wait for a proxy that sends nothing (seconds,
	// or a Go duration such as "500ms"; default 30 s).
	EnvTimeout = "OFFLOAD_REMOTE_TIMEOUT"
	// EnvChunk is the size in bytes of the pieces a large copy is split
	// into (default 4 MiB).
	EnvChunk = "OFFLOAD_REMOTE_CHUNK"
)

// Defaults of EnvTimeout and EnvChunk.
const (
	DefaultTimeout = 30 * time.Second
	DefaultChunk   = 4 << 20
)

// Connector gives the job's Endpoint, or nil where the process is not part
// of a job with proxies. want is true when OFFLOAD_REMOTE=mpi asks for the
// remote platform whatever the launch looks like. It is called at olInit;
// the Endpoint it returns is kept until the process exits (MPI cannot be
// initialised twice in a process).
type Connector func(env plugin.Env, want bool) (link.Endpoint, error)

var (
	connMu    sync.Mutex
	connector Connector
	endpoint  link.Endpoint
)

// SetConnector sets how the plugin finds its Endpoint (the MPI transport
// registers one; tests give an in-process link.Pipe). It replaces the
// Endpoint kept from an earlier olInit.
func SetConnector(f Connector) {
	connMu.Lock()
	defer connMu.Unlock()
	connector, endpoint = f, nil
}

func getEndpoint(env plugin.Env, want bool) (link.Endpoint, error) {
	connMu.Lock()
	defer connMu.Unlock()
	if endpoint != nil {
		return endpoint, nil
	}
	if connector == nil {
		return nil, nil
	}
	ep, err := connector(env, want)
	if err == nil {
		endpoint = ep
	}
	return ep, err
}

// Plugin is the remote backend.
type Plugin struct{ absent string }

// New returns the remote plugin.
func New() *Plugin { return &Plugin{} }

// Name implements plugin.Plugin.
func (*Plugin) Name() string { return "remote" }

// AbsentReason implements plugin.AbsentReporter.
func (p *Plugin) AbsentReason() string { return p.absent }

func settings(env plugin.Env) (time.Duration, uint64, error) {
	timeout, chunk := DefaultTimeout, uint64(DefaultChunk)
	if v, ok := env.Lookup(EnvTimeout); ok && strings.TrimSpace(v) != "" {
		v = strings.TrimSpace(v)
		d, err := time.ParseDuration(v)
		if err != nil {
			s, err2 := strconv.ParseFloat(v, 64)
			if err2 != nil || s <= 0 {
				return 0, 0, ol.Errorf(ol.ErrcInvalidValue, "%s=%q is neither seconds nor a duration", EnvTimeout, v)
			}
			d = time.Duration(s * float64(time.Second))
		}
		if d <= 0 {
			return 0, 0, ol.Errorf(ol.ErrcInvalidValue, "%s=%q is not a positive time", EnvTimeout, v)
		}
		timeout = d
	}
	if v, ok := env.Lookup(EnvChunk); ok && strings.TrimSpace(v) != "" {
		n, err := strconv.ParseUint(strings.TrimSpace(v), 0, 64)
		if err != nil || n < 4096 || n > 1<<30 {
			return 0, 0, ol.Errorf(ol.ErrcInvalidValue, "%s=%q is not a size from 4096 to 1 GiB", EnvChunk, v)
		}
		chunk = n
	}
	return timeout, chunk, nil
}

// Init implements plugin.Plugin: it asks every proxy for its platforms. A
// proxy that does not answer within the timeout is left out (with
// OFFLOAD_TRACE the runtime says why).
func (p *Plugin) Init(env plugin.Env) (plugin.Platform, error) {
	p.absent = ""
	mode, _ := env.Lookup(EnvRemote)
	mode = strings.ToLower(strings.TrimSpace(mode))
	nLoop, isLoop, err := parseLoopback(mode)
	if err != nil {
		return nil, err
	}
	switch {
	case mode == "off" || mode == "0" || mode == "no":
		p.absent = EnvRemote + "=" + mode
		return nil, nil
	case mode == "" || mode == "auto" || mode == "mpi" || isLoop:
	default:
		return nil, ol.Errorf(ol.ErrcInvalidValue, "%s=%q: expected auto, mpi, off or loopback:N", EnvRemote, mode)
	}
	// the job's Endpoint first, then the settings: once it is open, the
	// process tells the proxies Exit at its exit, so that a client whose
	// settings are refused does not leave them waiting for it
	var ep link.Endpoint
	if isLoop {
		ep, err = loopbackEndpoint(nLoop)
	} else {
		ep, err = getEndpoint(env, mode == "mpi")
	}
	if err != nil {
		return nil, err
	}
	timeout, chunk, err := settings(env)
	if err != nil {
		return nil, err
	}
	if ep == nil {
		p.absent = "the process is not part of an MPI launch with offload-proxy ranks"
		if mode == "mpi" {
			p.absent += fmt.Sprintf(" (%s=mpi, but no MPI transport is built in or found)", EnvRemote)
		}
		return nil, nil
	}
	s := &session{ep: ep, conns: map[int]*conn{}, stop: make(chan struct{}), done: make(chan struct{})}
	s.poller, _ = ep.(link.Poller)
	// the proxies' memory is another address space's, whose ranges are
	// reserved here (reserve.go); an in-process Pipe's is this one's
	_, shared := ep.(interface{ SharedAddressSpace() bool })
	for _, peer := range ep.Proxies() {
		c := newConn(s, peer, timeout, chunk)
		c.reserve = !shared
		s.conns[peer.Rank] = c
	}
	go s.receive()
	type hello struct {
		c   *conn
		inv *wire.Inventory
		err error
	}
	answers := make(chan hello, len(s.conns))
	for _, c := range s.conns {
		go func() {
			r, err := c.call(wire.OpHello, nil, "", wire.Version)
			var inv *wire.Inventory
			if err == nil {
				inv, err = wire.DecodeInventory(r.Data)
			}
			answers <- hello{c, inv, err}
		}()
	}
	got := make([]hello, 0, len(s.conns))
	for range s.conns {
		got = append(got, <-answers)
	}
	// rank order, as the proxies were listed
	var reasons []string
	for _, peer := range ep.Proxies() {
		for _, h := range got {
			if h.c.rank != peer.Rank {
				continue
			}
			if h.err != nil {
				reasons = append(reasons, h.err.Error())
				continue
			}
			if h.inv.Host != "" {
				h.c.host = h.inv.Host
			}
			for _, pd := range h.inv.Platforms {
				if len(pd.Devices) == 0 {
					continue
				}
				pl := &Platform{s: s, c: h.c, desc: pd}
				for _, dd := range pd.Devices {
					pl.devs = append(pl.devs, &Device{p: pl, c: h.c, index: dd.Index, info: dd.Info, sizes: map[uintptr]uint64{}})
				}
				s.platforms = append(s.platforms, pl)
			}
		}
	}
	s.live.Store(int32(len(s.platforms)))
	if len(s.platforms) == 0 {
		p.absent = "no proxy offers a device"
		if len(reasons) > 0 {
			p.absent += ": " + strings.Join(reasons, "; ")
		}
		s.close()
		return nil, nil
	}
	if len(reasons) > 0 {
		fmt.Fprintf(os.Stderr, "liboffload-go: remote platforms left out: %s\n", strings.Join(reasons, "; "))
	}
	return &group{s}, nil
}

// session is one olInit's remote platforms and the goroutine that
// receives their messages.
type session struct {
	ep        link.Endpoint
	conns     map[int]*conn
	platforms []*Platform
	live      atomic.Int32 // platforms not yet Deinit
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	// With a link.Poller (MPI), a goroutine waiting for a reply receives
	// itself (conn.call) and the receiver goroutine stands aside meanwhile:
	// no hand-off between goroutines on the way of a reply. rmu makes one
	// goroutine at a time take and handle a message, so that messages are
	// handled in the order they came (a copy's data before the reply to
	// the sync after it).
	poller  link.Poller
	rmu     sync.Mutex
	waiters atomic.Int32 // goroutines receiving for themselves
	callers atomic.Int32 // calls waiting for their reply
	handled atomic.Int64 // counts the messages handled (link.Backoff.Activity)
}

// pollInterval is how often the receiver looks whether it should stop (it
// shares the Endpoint with the next olInit's, so it does not close it).
const pollInterval = 100 * time.Millisecond

func (s *session) receive() {
	defer close(s.done)
	if s.poller != nil {
		s.receivePolling()
		return
	}
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		src, b, err := s.ep.Recv(pollInterval)
		if errors.Is(err, link.ErrTimeout) || s.dropped(err) {
			continue
		}
		if err != nil {
			s.lost(err)
			return
		}
		if c := s.conns[src]; c != nil {
			c.deliver(b)
		}
		link.Free(s.ep, b)
	}
}

// dropped fails the proxy whose message the transport could not keep (no
// memory for it: a copy's bytes or an answer lost); true if err says so.
func (s *session) dropped(err error) bool {
	var d *link.DroppedError
	if !errors.As(err, &d) {
		return false
	}
	if c := s.conns[d.Src]; c != nil {
		c.kill(ol.Errorf(ol.ErrcOutOfResources, "%s: %v", c.where(), d))
	}
	return true
}

// lost fails every proxy after the Endpoint failed.
func (s *session) lost(err error) {
	for _, c := range s.conns {
		c.kill(ol.Errorf(ol.ErrcBackendFailure, "%s: %v", c.where(), err))
	}
}

// receivePolling is receive over a Poller: it polls (link.Backoff: it
// sleeps when idle), except while a caller receives for itself.
func (s *session) receivePolling() {
	b := link.Backoff{Spin: s.poller.Spin(), Activity: &s.handled, Due: &s.callers}
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		for _, c := range s.conns {
			c.flushIfAged() // batches the application left waiting
		}
		if s.waiters.Load() > 0 {
			// a caller polls and handles every message meanwhile: look
			// again later (a sleep, not a spin: the core is the caller's;
			// a short sleep woke this thread often enough to take the
			// caller's core from it: 50 µs made a launch + sync under
			// MPI 100-300 µs where 1 ms gives 10-15 µs)
			link.Nap(time.Millisecond)
			continue
		}
		got, err := s.pollOnce(true)
		if err != nil {
			s.lost(err)
			return
		}
		if !got {
			b.Pause(time.Time{})
		}
	}
}

// pollOnce takes and handles one message if one is there (with wait,
// after the goroutine handling one now has finished; without, it gives
// up at once).
func (s *session) pollOnce(wait bool) (bool, error) {
	if wait {
		s.rmu.Lock()
	} else if !s.rmu.TryLock() {
		return false, nil
	}
	defer s.rmu.Unlock()
	src, b, ok, err := s.poller.TryRecv()
	if s.dropped(err) {
		return true, nil
	}
	if err != nil || !ok {
		return false, err
	}
	s.handled.Add(1)
	if c := s.conns[src]; c != nil {
		c.deliver(b)
	}
	link.Free(s.ep, b)
	return true, nil
}

func (s *session) close() {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
		for _, c := range s.conns {
			c.kill(ol.Errorf(ol.ErrcUninitialized, "%s: the remote platform was shut down", c.where()))
			c.calls.Wait()
			liveConns.Delete(c)
		}
	})
}

// group holds the platforms of one Init (plugin.PlatformGroup).
type group struct{ s *session }

func (g *group) Platforms() []plugin.Platform {
	out := make([]plugin.Platform, len(g.s.platforms))
	for i, p := range g.s.platforms {
		out[i] = p
	}
	return out
}

func (g *group) Name() string                { return "remote" }
func (g *group) Vendor() string              { return "liboffload-go" }
func (g *group) Version() string             { return "" }
func (g *group) Backend() ol.PlatformBackend { return ol.PlatformBackendUnknown }
func (g *group) Devices() []plugin.Device {
	var out []plugin.Device
	for _, p := range g.s.platforms {
		out = append(out, p.Devices()...)
	}
	return out
}
func (g *group) Drain() error {
	var errs []error
	for _, p := range g.s.platforms {
		errs = append(errs, p.Drain())
	}
	return errors.Join(errs...)
}
func (g *group) Deinit() error {
	var errs []error
	for _, p := range g.s.platforms {
		errs = append(errs, p.Deinit())
	}
	return errors.Join(errs...)
}

// Platform is one platform of one proxy.
type Platform struct {
	s      *session
	c      *conn
	desc   wire.PlatformDesc
	devs   []*Device
	deinit sync.Once
	ended  atomic.Bool
}

// Name implements plugin.Platform.
func (p *Platform) Name() string {
	return fmt.Sprintf("remote rank %d (host %s): %s", p.c.rank, p.c.host, p.desc.Name)
}

// Vendor implements plugin.Platform: the proxied platform's.
func (p *Platform) Vendor() string { return p.desc.Vendor }

// Version implements plugin.Platform: the proxied platform's.
func (p *Platform) Version() string { return p.desc.Version }

// Backend implements plugin.Platform: the proxied platform's, so that a
// client picks images for a remote device as for a local one.
func (p *Platform) Backend() ol.PlatformBackend { return ol.PlatformBackend(p.desc.Backend) }

// Devices implements plugin.Platform.
func (p *Platform) Devices() []plugin.Device {
	out := make([]plugin.Device, len(p.devs))
	for i, d := range p.devs {
		out[i] = d
	}
	return out
}

// InCallback implements plugin.CallbackPlatform: host functions of
// remote queues run on threads of this process that the plugin marks.
func (p *Platform) InCallback() bool { return inHostFn() }

// Drain implements plugin.Platform: the proxy drains its platforms. A
// lost proxy has nothing left to wait for (its loss was reported by the
// calls and syncs that met it), so that olShutDown completes.
func (p *Platform) Drain() error {
	if p.c.failed() != nil {
		return nil
	}
	_, err := p.c.call(wire.OpDrain, nil, "")
	return err
}

// Deinit implements plugin.Platform: the last platform of a proxy says Bye
// (the proxy releases what is left of this client's), the last of the
// session stops its receiver.
func (p *Platform) Deinit() error {
	var err error
	p.deinit.Do(func() {
		last := true
		for _, o := range p.s.platforms {
			if o != p && o.c == p.c && !o.ended.Load() {
				last = false
			}
		}
		p.ended.Store(true)
		if last && p.c.failed() == nil {
			_, err = p.c.call(wire.OpBye, nil, "")
		}
		if p.s.live.Add(-1) == 0 {
			p.s.close()
		}
	})
	return err
}
