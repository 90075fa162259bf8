package ccb

/*
#include <stdint.h>
void *ccb_gofunc_ptr(void);
*/
import "C"

import (
	"sync"
	"unsafe"
)

var gofuncs struct {
	sync.Mutex
	m    map[uintptr]func()
	next uintptr
}

// GoFunc is a host function that calls a Go function: user code that calls
// back into the library from a library thread, as a C program's host
// function may.
type GoFunc struct{ id uintptr }

// NewGoFunc registers f; Free unregisters it.
func NewGoFunc(f func()) *GoFunc {
	gofuncs.Lock()
	defer gofuncs.Unlock()
	if gofuncs.m == nil {
		gofuncs.m = map[uintptr]func(){}
	}
	gofuncs.next++
	gofuncs.m[gofuncs.next] = f
	return &GoFunc{gofuncs.next}
}

// Callback is the C function pointer to pass to olLaunchHostFunction.
func (*GoFunc) Callback() unsafe.Pointer { return C.ccb_gofunc_ptr() }

// User is the user-data pointer to pass with it (a number, not memory).
func (g *GoFunc) User() unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&g.id)) }

// Free unregisters the function.
func (g *GoFunc) Free() {
	gofuncs.Lock()
	delete(gofuncs.m, g.id)
	gofuncs.Unlock()
}

//export ccbGoFuncCall
func ccbGoFuncCall(id C.uintptr_t) {
	gofuncs.Lock()
	f := gofuncs.m[uintptr(id)]
	gofuncs.Unlock()
	f()
}
