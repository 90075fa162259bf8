// Package impl is the runtime behind the C entry points: lifecycle,
// handles, validation, the allocation map, tracing and the calls into
// plugins. Generated entry points (zentry.go) call the methods of Context.
package impl

import (
	"sync"
	"sync/atomic"

	"github.com/liboffload-go/liboffload-go/api/ol"
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
	life.mu.Lock()
	if life.refs > 0 {
		life.refs++
		c := life.ctx.Load()
		life.mu.Unlock()
		c.traceLifecycle("olInit", params, 0, loc)
		return 0
	}
	ps := usedPlugins()
	if len(ps) == 0 {
		life.mu.Unlock()
		return intern(ol.ErrcUninitialized, "no backends are registered with the runtime (impl.UsePlugins): the library was built without its main package")
	}
	if pick != nil {
		var err error
		if ps, err = pick(ps); err != nil {
			life.mu.Unlock()
			code, details := describe(err)
			return intern(code, details)
		}
	}
	beginDoneEvents()
	c, err := newContext(life.gens, ps)
	if c == nil {
		life.mu.Unlock()
		code, details := describe(err)
		return intern(code, details)
	}
	life.ctx.Store(c)
	c.publishFast()
	life.refs = 1
	life.mu.Unlock()
	// A plugin that failed leaves the library initialised with the other
	// platforms, as in LLVM 22.1: the caller still owes one olShutDown.
	res := c.result(err)
	c.traceLifecycle("olInit", params, res, loc)
	return res
}

// olShutDown is the hand-written entry of olShutDown (see OlShutDown).
func olShutDown(loc *ol.CodeLocation) uintptr {
	life.mu.Lock()
	if life.refs == 0 {
		life.mu.Unlock()
		return uninitialized()
	}
	c := life.ctx.Load()
	if life.refs == 1 {
		if err := c.refuseFinalShutdown(); err != nil {
			life.mu.Unlock()
			res := c.result(err)
			c.traceLifecycle("olShutDown", nil, res, loc)
			return res
		}
	}
	life.refs--
	if life.refs > 0 {
		life.mu.Unlock()
		c.traceLifecycle("olShutDown", nil, 0, loc)
		return 0
	}
	c.unpublishSnapshot()
	unpublishFast()
	life.ctx.Store(nil)
	err := c.teardown()
	endDoneEvents()
	life.gens = c.nextGenerations()
	life.mu.Unlock()
	res := c.result(err)
	c.traceLifecycle("olShutDown", nil, res, loc)
	if c.trace != nil {
		c.trace.close()
	}
	return res
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
