// Package impl is the runtime behind the C entry points: lifecycle,
// handles, validation, the allocation map, tracing and the calls into
// plugins. Generated entry points (zentry.go) call the methods of Context.
package impl

import (
	"sync"
	"sync/atomic"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/fault"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// backends are the plugins olInit initialises, in platform order, set once
// by the program that links the runtime (cmd/liboffload) before any call.
var backends atomic.Pointer[[]plugin.Plugin]

// UsePlugins sets the backends olInit initialises, in platform order (the
// host platform last). The library's main package calls it at load; tests
// call it with the backends they exercise. It takes effect at the next
// initialisation.
func UsePlugins(ps ...plugin.Plugin) {
	list := append([]plugin.Plugin(nil), ps...)
	backends.Store(&list)
}

func usedPlugins() []plugin.Plugin {
	if p := backends.Load(); p != nil {
		return *p
	}
	return nil
}

// life is the only mutable package state besides the immortal results and
// the backends: the
// reference count, its mutex, where the next initialisation's handle
// generations start (so that stale handles stay recognisable), and the
// published context.
var life struct {
	mu   sync.Mutex
	refs int
	gens generations
	ctx  atomic.Pointer[Context]
}

// current returns the live context, or nil when the library is not
// initialised.
func current() *Context { return life.ctx.Load() }

// olInit is the hand-written entry of olInit (see OlInit).
func olInit(loc *ol.CodeLocation) uintptr { return initLibrary(nil, nil, loc) }

// initLibrary starts the library or adds a reference to it. At the first
// reference, pick (when not nil) chooses the backends to start among the
// registered ones, or refuses the call. params prints the call's
// parameters in its trace line (nil: it has none).
func initLibrary(pick func([]plugin.Plugin) ([]plugin.Plugin, error), params func(*traceBuf), loc *ol.CodeLocation) uintptr {
	c, res := startLibrary(pick)
	if c != nil {
		c.traceLifecycle("olInit", params, res, loc)
	}
	return res
}

// startLibrary is initLibrary's work under the lifecycle lock, which a
// deferred unlock releases on every path: a panic (recovered by the entry
// layer as OL_ERRC_UNKNOWN) must not leave every later olInit and
// olShutDown waiting for it (RATIONALE.md, "Why is every lock released by
// defer?"). c: the context to trace with, nil when there is none.
func startLibrary(pick func([]plugin.Plugin) ([]plugin.Plugin, error)) (c *Context, res uintptr) {
	life.mu.Lock()
	defer life.mu.Unlock()
	fault.Point()
	if life.refs > 0 {
		life.refs++
		return life.ctx.Load(), 0
	}
	ps := usedPlugins()
	if len(ps) == 0 {
		return nil, intern(ol.ErrcUninitialized, "no backends are registered with the runtime (impl.UsePlugins): the library was built without its main package")
	}
	if pick != nil {
		var err error
		if ps, err = pick(ps); err != nil {
			code, details := describe(err)
			return nil, intern(code, details)
		}
	}
	beginDoneEvents()
	c, err := newContext(life.gens, ps)
	if c == nil {
		code, details := describe(err)
		return nil, intern(code, details)
	}
	life.ctx.Store(c)
	life.refs = 1
	c.publishFast()
	// A plugin that failed leaves the library initialised with the other
	// platforms, as in LLVM 22.1: the caller still owes one olShutDown.
	return c, c.result(err)
}

// olShutDown is the hand-written entry of olShutDown (see OlShutDown).
func olShutDown(loc *ol.CodeLocation) uintptr {
	c, res, last := stopLibrary()
	if c == nil {
		return res
	}
	c.traceLifecycle("olShutDown", nil, res, loc)
	if last && c.trace != nil {
		c.trace.close()
	}
	return res
}

// stopLibrary is olShutDown's work under the lifecycle lock (released by
// defer, as in startLibrary). The final reference's teardown runs under
// it too; should it panic, the deferred function still ends the done
// events and moves the handle generations past this initialisation's, so
// that the next olInit starts clean and its handles never match old ones.
// last: this call ended the initialisation.
func stopLibrary() (c *Context, res uintptr, last bool) {
	life.mu.Lock()
	defer life.mu.Unlock()
	fault.Point()
	if life.refs == 0 {
		return nil, uninitialized(), false
	}
	c = life.ctx.Load()
	if life.refs == 1 {
		if err := c.refuseFinalShutdown(); err != nil {
			return c, c.result(err), false
		}
	}
	life.refs--
	if life.refs > 0 {
		return c, 0, false
	}
	c.unpublishSnapshot()
	unpublishFast()
	life.ctx.Store(nil)
	defer func() {
		endDoneEvents()
		life.gens = c.nextGenerations()
	}()
	return c, c.result(c.teardown()), true
}

func (c *Context) traceLifecycle(name string, params func(*traceBuf), res uintptr, loc *ol.CodeLocation) {
	if c.trace != nil {
		tb := c.trace.begin(name)
		if params != nil {
			params(tb)
		}
		c.trace.end(tb, res, loc)
	}
}

// Initialized reports whether the library is initialised (for tests).
func Initialized() bool { return current() != nil }
