// Package ccb provides C callbacks and C memory for Go tests that drive the
// runtime the way a C program does (test files themselves cannot use cgo).
package ccb

/*
#include <stdbool.h>
#include <stdint.h>
#include <sched.h>
#include <stdlib.h>

typedef struct {
  int count;
  int stop_after;
  uintptr_t devices[64];
} iter_state;

static bool iter_cb(void *device, void *user) {
  iter_state *s = user;
  if (s->count < 64) s->devices[s->count] = (uintptr_t)device;
  s->count++;
  return s->stop_after == 0 || s->count < s->stop_after;
}

static void *iter_cb_ptr(void) { return (void *)iter_cb; }
static iter_state *iter_new(int stop_after) {
  iter_state *s = calloc(1, sizeof *s);
  s->stop_after = stop_after;
  return s;
}
static int iter_count(iter_state *s) { return s->count; }

// A host function that blocks until the test opens a gate.
typedef struct { int gate; int entered; int calls; } gate_state;
static void gate_cb(void *user) {
  gate_state *g = user;
  __atomic_store_n(&g->entered, 1, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&g->gate, __ATOMIC_ACQUIRE)) sched_yield();
  __atomic_add_fetch(&g->calls, 1, __ATOMIC_ACQ_REL);
}
static void *gate_cb_ptr(void) { return (void *)gate_cb; }
static gate_state *gate_new(void) { return calloc(1, sizeof(gate_state)); }
static void gate_open(gate_state *g) { __atomic_store_n(&g->gate, 1, __ATOMIC_RELEASE); }
static int gate_entered(gate_state *g) { return __atomic_load_n(&g->entered, __ATOMIC_ACQUIRE); }
static int gate_calls(gate_state *g) { return __atomic_load_n(&g->calls, __ATOMIC_ACQUIRE); }
static uintptr_t iter_device(iter_state *s, int i) { return s->devices[i]; }
*/
import "C"

import "unsafe"

// Iter is C state for the olIterateDevices callback.
type Iter struct{ s *C.iter_state }

// NewIter allocates callback state; stopAfter > 0 makes the callback
// return false after that many devices.
func NewIter(stopAfter int) *Iter { return &Iter{C.iter_new(C.int(stopAfter))} }

// Callback is the C function pointer to pass as the callback.
func (*Iter) Callback() unsafe.Pointer { return C.iter_cb_ptr() }

// User is the C pointer to pass as user data.
func (it *Iter) User() unsafe.Pointer { return unsafe.Pointer(it.s) }

// Count is how often the callback ran.
func (it *Iter) Count() int { return int(C.iter_count(it.s)) }

// Device returns the handle seen in call i.
func (it *Iter) Device(i int) uintptr { return uintptr(C.iter_device(it.s, C.int(i))) }

// Free releases the state.
func (it *Iter) Free() { C.free(unsafe.Pointer(it.s)) }

// Gate is a host function that blocks until Open is called.
type Gate struct{ g *C.gate_state }

// NewGate allocates a closed gate.
func NewGate() *Gate { return &Gate{C.gate_new()} }

// Callback is the C function pointer to pass to olLaunchHostFunction.
func (*Gate) Callback() unsafe.Pointer { return C.gate_cb_ptr() }

// User is the user-data pointer to pass with it.
func (g *Gate) User() unsafe.Pointer { return unsafe.Pointer(g.g) }

// Open releases every call waiting at the gate.
func (g *Gate) Open() { C.gate_open(g.g) }

// Entered reports whether a call reached the gate.
func (g *Gate) Entered() bool { return C.gate_entered(g.g) != 0 }

// Calls counts the calls that passed the gate.
func (g *Gate) Calls() int { return int(C.gate_calls(g.g)) }

// Free releases the gate.
func (g *Gate) Free() { C.free(unsafe.Pointer(g.g)) }

// Alloc returns n bytes of zeroed C memory.
func Alloc(n int) unsafe.Pointer { return C.calloc(1, C.size_t(n)) }

// Free releases C memory from Alloc.
func Free(p unsafe.Pointer) { C.free(p) }
