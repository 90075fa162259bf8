// Package vendorlib holds what the GPU plugins share to load a vendor driver
// (libcuda, libhsa-runtime64): the choice of library names, a process-wide
// load-once cache keyed by those names, and the dlopen of the first
// loadable name with its required and optional symbols resolved by dlsym.
//
// It only finds entry points; calling them stays in each plugin, through
// cgo trampolines on the resolved addresses.
package vendorlib

import (
	"fmt"
	"github.com/liboffload-go/liboffload-go/internal/fault"
	"strings"
	"sync"

	"github.com/ebitengine/purego"

	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// LibraryNames is what a plugin's Init tries to load: the library named by
// the environment variable envLibrary alone if it is set and not empty,
// else the SONAMEs in order.
func LibraryNames(env plugin.Env, envLibrary string, sonames []string) []string {
	if env != nil {
		if p, ok := env.Lookup(envLibrary); ok && p != "" {
			return []string{p}
		}
	}
	return sonames
}

// Cache holds one loaded driver of type T per library request for the
// whole process. A plugin has one, made by NewCache.
//
// Why once, and why never dlclose: vendor runtimes keep process-wide state
// (threads, device file descriptors, kernel-side contexts) that does not
// survive an unload, and some of them crash or leak when they are loaded
// again (each plugin's drivers variable says how its driver does). So a
// library is opened at most once per process and stays mapped until exit;
// olShutDown/olInit cycles reuse it. Whether its initialisation is cached
// too is the plugin's choice (CUDA caches cuInit's result; ROCr counts
// hsa_init and hsa_shut_down, so the AMDGPU plugin calls them at every
// olInit and final olShutDown). Nothing here ever calls dlclose.
//
// The key is the list of names tried (the SONAME list, or the override
// path), so that a test process can still load several distinct driver
// doubles, each under its own path.
type Cache[T any] struct {
	open func(names []string) *T

	mu sync.Mutex
	m  map[string]*entry[T]
}

// NewCache returns a cache that opens (loads and initialises) a driver
// with open.
func NewCache[T any](open func(names []string) *T) *Cache[T] {
	return &Cache[T]{open: open}
}

type entry[T any] struct {
	once sync.Once
	d    *T
}

// Load returns the process-wide driver for the given names. On first use
// it calls open(names), once, however many goroutines ask concurrently,
// and caches the result whatever it says.
func (c *Cache[T]) Load(names []string) *T {
	e := c.entry(strings.Join(names, "\x00"))
	e.once.Do(func() { e.d = c.open(names) })
	return e.d
}

func (c *Cache[T]) entry(key string) *entry[T] {
	c.mu.Lock()
	defer c.mu.Unlock()
	fault.Point()
	if c.m == nil {
		c.m = make(map[string]*entry[T])
	}
	e := c.m[key]
	if e == nil {
		e = &entry[T]{}
		c.m[key] = e
	}
	return e
}

// Symbol is a driver entry point to resolve: dlsym(Name) is stored in *Addr.
type Symbol struct {
	Name string
	Addr *uintptr
}

// Library is a vendor library as loaded by Open and then initialised by
// its plugin. A plugin's driver type embeds it; its fields are written
// once, while the driver is opened, and only read afterwards.
type Library struct {
	// Name is the name or path that dlopen accepted ("" if none did).
	Name   string
	Handle uintptr
	// Absent says why the platform has no devices without that being an
	// error ("" if the driver initialised). Open sets it when no name
	// loads or a required symbol is missing; the plugin when the driver's
	// init reports that there is no device.
	Absent string
	// Err is a driver failure that olInit reports (Open never sets it).
	Err error
}

// Unusable reports whether the platform must be left out, and the error
// to report for it (nil when the driver is merely absent).
func (l *Library) Unusable() (bool, error) {
	return l.Err != nil || l.Absent != "", l.Err
}

// Open dlopens the first loadable of names (RTLD_NOW|RTLD_LOCAL) and
// resolves the required symbols, then the optional ones (an optional
// symbol that is missing stays 0). what names the library in the reason
// given when none loads, e.g. "the CUDA driver".
//
// The handle is never closed, not even when a required symbol is missing:
// such a library stays loaded too (see Cache).
func Open(what string, names []string, required, optional []Symbol) Library {
	var l Library
	var failures []string
	for _, name := range names {
		h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err == nil {
			l.Name, l.Handle = name, h
			break
		}
		failures = append(failures, err.Error())
	}
	if l.Handle == 0 {
		l.Absent = "cannot load " + what + ": " + strings.Join(failures, "; ")
		return l
	}
	for _, s := range required {
		addr, err := purego.Dlsym(l.Handle, s.Name)
		if err != nil || addr == 0 {
			l.Absent = fmt.Sprintf("%s does not export %s", l.Name, s.Name)
			return l
		}
		*s.Addr = addr
	}
	for _, s := range optional {
		if addr, err := purego.Dlsym(l.Handle, s.Name); err == nil {
			*s.Addr = addr
		}
	}
	return l
}

// CString is the text of a NUL-terminated buffer (all of it if it has no
// NUL).
func CString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
