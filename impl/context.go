package impl

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-multierror"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// Context is all the state of one initialisation (refcount 0→1 to 1→0).
type Context struct {
	validate  bool
	leakCheck bool
	trace     *tracer
	// fast: the C entry points answer for this context (publishFast), so
	// its queues are filed in the queue mirror (queuemirror.go)
	fast bool

	platforms *table[Platform]
	devices   *table[Device]
	queues    *table[Queue]
	events    eventTable
	programs  *table[Program]
	symbols   *table[Symbol]

	platformList []*Platform // creation order; the host platform last
	deviceList   []*Device   // iteration order
	mem          *allocMap
	globals      *allocMap     // globals of loaded programs, by address (olGetSymbol)
	queueIDs     atomic.Uint64 // ids that tell queues apart after their handles are gone
	snap         atomic.Uint32 // the info snapshot's state: snapPending, snapPublished, snapGone
	waits        waitGraph     // pending waits between platforms (waitgraph.go)
	frees        deferredFrees // olMemFree's releases waiting for queued work (deferfree.go)
}

// Platform is a backend that found devices.
type Platform struct {
	h       uintptr
	name    string
	p       plugin.Platform
	devices []*Device
}

// Device is a device of a platform.
type Device struct {
	h        uintptr
	platform *Platform
	d        plugin.Device
	// pool: the device's allocation pool (pool.go; nil: none)
	pool poolPtr
}

// generations holds, per kind of handle, the first generation the next
// initialisation hands out (see handles.go).
type generations [kindCount]uint32

func newContext(gens generations, plugins []plugin.Plugin) (*Context, error) {
	env := cEnv{}
	c := &Context{
		platforms: newTable[Platform](kindPlatform, gens[kindPlatform]),
		devices:   newTable[Device](kindDevice, gens[kindDevice]),
		queues:    newTable[Queue](kindQueue, gens[kindQueue]),
		events:    eventTable{table: newTable[Event](kindEvent, gens[kindEvent])},
		programs:  newTable[Program](kindProgram, gens[kindProgram]),
		symbols:   newTable[Symbol](kindSymbol, gens[kindSymbol]),
		mem:       newAllocMap(),
		globals:   newAllocMap(),
	}
	c.events.devices = c.devices
	c.events.limit = doneIndexBit - 1 // the indices above are done events'
	_, noValidation := env.Lookup(EnvDisableValidation)
	c.validate = !noValidation
	_, c.leakCheck = env.Lookup(EnvLeakCheck)
	selected, err := selectPlugins(env, plugins)
	if err != nil {
		return nil, err
	}
	idle, err := poolIdle(env)
	if err != nil {
		return nil, err
	}
	tr, err := newTracer(env)
	if err != nil {
		return nil, err
	}
	c.trace = tr
	var errs *multierror.Error
	for _, p := range selected {
		pl, err := p.Init(env)
		if err != nil {
			code, details := describe(err)
			errs = multierror.Append(errs, ol.Errorf(code, "platform %s: %s", p.Name(), details))
			continue
		}
		members := []plugin.Platform{pl}
		if g, ok := pl.(plugin.PlatformGroup); ok {
			members = g.Platforms()
		}
		for _, pl := range members {
			if err := c.addInitialised(p, pl); err != nil {
				errs = multierror.Append(errs, err)
			}
		}
	}
	c.makePools(idle)
	return c, errs.ErrorOrNil()
}

// addInitialised adds a platform p's Init returned, or leaves it out when
// it has no device.
func (c *Context) addInitialised(p plugin.Plugin, pl plugin.Platform) error {
	if pl == nil || len(pl.Devices()) == 0 {
		if pl != nil {
			// absent, but its Init may have taken something (a driver
			// initialised, a context): give it back now, as no
			// teardown will see this platform
			if err := pl.Deinit(); err != nil && c.trace != nil {
				c.trace.note(fmt.Sprintf("liboffload-go: platform %s without devices failed to shut down: %v\n", p.Name(), err))
			}
		}
		if c.trace != nil {
			reason := "it found no device"
			if r, ok := p.(plugin.AbsentReporter); ok && r.AbsentReason() != "" {
				reason = r.AbsentReason()
			}
			c.trace.note(fmt.Sprintf("liboffload-go: platform %s is absent: %s\n", p.Name(), reason))
		}
		return nil
	}
	return c.addPlatform(pl)
}

// selectPlugins applies OFFLOAD_PLUGINS. The host plugin always runs: the
// API needs the host device for host memory.
func selectPlugins(env cEnv, all []plugin.Plugin) ([]plugin.Plugin, error) {
	list, ok := env.Lookup(EnvPlugins)
	if !ok || strings.TrimSpace(list) == "" {
		return all, nil
	}
	want := map[string]bool{"host": true}
	var known []string
	for _, p := range all {
		known = append(known, p.Name())
	}
	// A registered plugin that 23.1's olInit(InitArgs) left out of `all` is
	// still a known name: OFFLOAD_PLUGINS=cuda with InitArgs listing only
	// the host platform starts the host platform, it is not an unknown
	// plugin (INVALID_VALUE, the library left uninitialised).
	for _, p := range usedPlugins() {
		if !slices.Contains(known, p.Name()) {
			known = append(known, p.Name())
		}
	}
	for _, n := range strings.Split(list, ",") {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "" {
			continue
		}
		found := false
		for _, k := range known {
			found = found || k == n
		}
		if !found {
			return nil, ol.Errorf(ol.ErrcInvalidValue, "%s=%q names unknown plugin %q (known: %s)", EnvPlugins, list, n, strings.Join(known, ", "))
		}
		want[n] = true
	}
	var out []plugin.Plugin
	for _, p := range all {
		if want[p.Name()] {
			out = append(out, p)
		}
	}
	return out, nil
}

func (c *Context) addPlatform(pl plugin.Platform) error {
	p := &Platform{name: pl.Name(), p: pl}
	h, err := c.platforms.insert(p)
	if err != nil {
		return err
	}
	p.h = h
	for _, d := range pl.Devices() {
		dev := &Device{platform: p, d: d}
		if dev.h, err = c.devices.insert(dev); err != nil {
			return err
		}
		p.devices = append(p.devices, dev)
		c.deviceList = append(c.deviceList, dev)
	}
	c.platformList = append(c.platformList, p)
	return nil
}

// nextGenerations is where the next initialisation's handles start: past
// every handle this one gave out, so none of them can match a new one.
func (c *Context) nextGenerations() generations {
	var g generations
	g[kindPlatform] = c.platforms.nextBase()
	g[kindDevice] = c.devices.nextBase()
	g[kindQueue] = c.queues.nextBase()
	g[kindEvent] = c.events.nextBase()
	g[kindProgram] = c.programs.nextBase()
	g[kindSymbol] = c.symbols.nextBase()
	return g
}

// refuseFinalShutdown says why the final olShutDown cannot run on this
// thread: from a host function it would wait for that host function's own
// queue to finish, which never happens.
func (c *Context) refuseFinalShutdown() error {
	for _, p := range c.platformList {
		if cp, ok := p.p.(plugin.CallbackPlatform); ok && cp.InCallback() {
			return ol.Errorf(ol.ErrcUnsupported, "the final olShutDown was called from a host function of platform %s: it waits for every queue to finish, including the one running this host function, so it would wait forever; the library stays initialised (call olShutDown after the host function has returned)", p.name)
		}
	}
	return nil
}

// teardown releases everything of the context, in one order on every
// backend: first all submitted work ends (live queues are synced, every
// platform drains its released queues, work behind host functions and
// waits for other queues included); only then are queues, events,
// programs and allocations released and the platforms de-initialised,
// each even when some fail (handles stay valid until all work has ended).
// Errors are joined.
func (c *Context) teardown() error {
	// out of the queue mirror first, for good (no C path answers for
	// them again)
	c.queues.each(func(h uintptr, q *Queue) {
		c.unmirrorQueue(q)
		c.uncountQueue(q) // (the registry outlives the context)
	})
	if c.leakCheck {
		c.reportLeaks(os.Stderr)
	}
	var errs *multierror.Error
	add := func(what string, err error) {
		if err != nil {
			code, details := describe(err)
			errs = multierror.Append(errs, ol.Errorf(code, "%s: %s", what, details))
		}
	}
	c.queues.each(func(h uintptr, q *Queue) {
		c.quiesceQueue(q) // (a C path that raced the unpublishing)
		add("queue", q.q.Sync())
	})
	// queues destroyed while a call still used them (a call racing the
	// final olShutDown): their work is marked and they are released now
	for _, q := range c.frees.retiringQueues() {
		add("queue", c.finishRetire(q))
	}
	for _, p := range c.platformList {
		add("platform "+p.name, p.p.Drain())
	}
	c.queues.each(func(h uintptr, q *Queue) {
		// again: host functions of released queues may have added work
		add("queue", q.q.Sync())
		add("queue", q.q.Release()) // (out of the mirror since the start)
		c.queues.remove(h)
	})
	c.events.each(func(h uintptr, e *Event) {
		add("event", e.releaseRef())
		c.events.remove(h)
	})
	c.programs.each(func(h uintptr, p *Program) {
		p.unmirror(c)
		add("program", p.p.Unload())
		c.programs.remove(h)
	})
	// frees that waited for work: all of it has ended now
	add("deferred frees", c.frees.shutdown())
	for _, a := range c.mem.drain() {
		if a.slab == nil { // (pooled blocks go with their pool)
			add("allocation", a.device.d.Free(a.deviceBase(), a.kind))
		}
	}
	c.freePools()
	for _, p := range c.platformList {
		add("platform "+p.name, p.p.Deinit())
	}
	c.mem.release()
	c.globals.release()
	return errs.ErrorOrNil()
}

// reportLeaks prints every object still alive, by kind (OFFLOAD_LEAK_CHECK).
func (c *Context) reportLeaks(w *os.File) {
	var lines []string
	nq, ne, np := 0, 0, 0
	c.queues.each(func(h uintptr, q *Queue) {
		nq++
		lines = append(lines, fmt.Sprintf("  queue %#x on device %#x", h, q.device.h))
	})
	c.events.each(func(h uintptr, e *Event) {
		ne++
		lines = append(lines, fmt.Sprintf("  event %#x of queue %#x", h, e.queueH))
	})
	for _, d := range doneEvents() {
		ne++
		lines = append(lines, fmt.Sprintf("  event %#x of queue %#x", d[0], d[1]))
	}
	c.programs.each(func(h uintptr, p *Program) {
		np++
		lines = append(lines, fmt.Sprintf("  program %#x on device %#x (%d bytes of image)", h, p.device.h, p.imageSize))
	})
	allocs := c.mem.snapshot()
	sort.Slice(allocs, func(i, j int) bool { return allocs[i].base < allocs[j].base })
	var bytes uint64
	for _, a := range allocs {
		bytes += a.size
		lines = append(lines, fmt.Sprintf("  allocation %#x, %d bytes, %s, device %#x", a.base, a.size, a.kind, a.device.h))
	}
	total := nq + ne + np + len(allocs)
	if total == 0 {
		fmt.Fprintln(w, "liboffload-go leak check: no objects left alive at olShutDown")
		return
	}
	fmt.Fprintf(w, "liboffload-go leak check: %d objects left alive at olShutDown: %d queues, %d events, %d programs, %d allocations (%d bytes)\n",
		total, nq, ne, np, len(allocs), bytes)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}
