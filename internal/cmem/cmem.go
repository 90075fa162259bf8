// Package cmem is the library's one way to get C memory: an allocation
// that cannot be made is an OL_ERRC_OUT_OF_RESOURCES error, never the end
// of the process.
//
// cgo's own C.malloc, C.calloc, C.CBytes and C.CString never return NULL:
// when malloc fails they print "runtime: C malloc failed" and abort the
// whole process, so a nil check after them is dead code. The functions
// here call malloc through a C function of this package instead, which
// returns what malloc returned.
//
// A name handed to C only for the length of one call (a symbol to look up,
// an environment variable) needs no C memory at all: CName makes a
// NUL-terminated copy in Go memory, which cgo lets C read during the call.
package cmem

/*
#include <stdlib.h>

// malloc(0) may return NULL: ask for one byte so NULL always means failure.
static void *ol_try_malloc(size_t n) { return malloc(n ? n : 1); }
static void *ol_try_calloc(size_t n) { return calloc(1, n ? n : 1); }
*/
import "C"

import (
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
)

// failed is the error of an allocation of n bytes for what (a phrase such
// as "cuda: the staging copy of an image") that malloc refused.
func failed(n uint64, what string) error {
	return ol.Errorf(ol.ErrcOutOfResources, "%s: no host memory for %d bytes", what, n)
}

// Malloc returns n bytes of uninitialised C memory, freed with Free.
func Malloc(n uint64, what string) (unsafe.Pointer, error) {
	if uint64(C.size_t(n)) != n {
		return nil, failed(n, what)
	}
	p := C.ol_try_malloc(C.size_t(n))
	if p == nil {
		return nil, failed(n, what)
	}
	return p, nil
}

// Calloc is Malloc with the memory zeroed.
func Calloc(n uint64, what string) (unsafe.Pointer, error) {
	if uint64(C.size_t(n)) != n {
		return nil, failed(n, what)
	}
	p := C.ol_try_calloc(C.size_t(n))
	if p == nil {
		return nil, failed(n, what)
	}
	return p, nil
}

// Copy returns a C copy of the n bytes at src (any memory the CPU can
// read), freed with Free.
func Copy(src unsafe.Pointer, n uint64, what string) (unsafe.Pointer, error) {
	p, err := Malloc(n, what)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		copy(unsafe.Slice((*byte)(p), n), unsafe.Slice((*byte)(src), n))
	}
	return p, nil
}

// Free frees memory from Malloc, Calloc or Copy (nil is a no-op).
func Free(p unsafe.Pointer) { C.free(p) }

// CName returns s NUL-terminated in Go memory, for a C call that reads it
// only while it runs (C must not keep the pointer). Like any Go
// allocation, it is bounded by the string the caller already holds.
func CName(s string) unsafe.Pointer {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return unsafe.Pointer(&b[0])
}
