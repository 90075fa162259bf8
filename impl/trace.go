package impl

/*
#define _GNU_SOURCE
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

// Copies n bytes of the caller's memory without faulting: 0 when the range
// is not readable. Used only to trace a buffer the caller declared smaller
// than the value the reference prints from it.
static int ol_safe_read(void *dst, const void *src, size_t n) {
  struct iovec local = {dst, n}, remote = {(void *)src, n};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n;
}
*/
import "C"

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
)

// tracer writes one line (or a few) per API call, in the format of
// OFFLOAD_TRACE in LLVM 22.1. The whole text of a call goes out in a single
// write after the call, so lines of concurrent calls never interleave.
type tracer struct {
	mu   sync.Mutex
	out  *os.File
	file bool      // out is our own file, closed at shutdown
	bufs sync.Pool // *traceBuf
	// notes: OFFLOAD_TRACE=all also prints lines of the library's own
	// (why a platform is absent); any other value keeps LLVM's format
	notes bool
}

func newTracer(env cEnv) (*tracer, error) {
	path, hasFile := env.Lookup(EnvTraceFile)
	level, hasTrace := env.Lookup(EnvTrace)
	notes := strings.EqualFold(strings.TrimSpace(level), "all")
	if hasFile && path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, ol.Errorf(ol.ErrcHostIo, "%s=%q: cannot open the trace file: %v", EnvTraceFile, path, err)
		}
		return &tracer{out: f, file: true, notes: notes}, nil
	}
	if hasTrace {
		return &tracer{out: os.Stderr, notes: notes}, nil
	}
	return nil, nil
}

// note writes a line of the library's own (not a call), e.g. why a
// platform is absent; it starts with "liboffload-go: ".
func (t *tracer) note(line string) {
	if !t.notes {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = t.out.WriteString(line)
}

func (t *tracer) close() {
	if t.file {
		_ = t.out.Close()
	}
}

type traceBuf struct {
	b []byte
	n int
}

func (t *tracer) begin(name string) *traceBuf {
	tb, _ := t.bufs.Get().(*traceBuf)
	if tb == nil {
		tb = &traceBuf{b: make([]byte, 0, 256)}
	}
	tb.b = append(tb.b[:0], "---> "...)
	tb.b = append(tb.b, name...)
	tb.b = append(tb.b, '(')
	tb.n = 0
	return tb
}

// end finishes the line with the result, its details and the caller's
// location, and writes it.
func (t *tracer) end(tb *traceBuf, res uintptr, loc unsafe.Pointer) {
	tb.b = append(tb.b, ")-> "...)
	if res == 0 {
		tb.b = append(tb.b, "OL_SUCCESS\n"...)
	} else {
		tb.b = append(tb.b, ResultCode(res).String()...)
		tb.b = append(tb.b, '\n')
		if d := ResultDetails(res); d != "" {
			tb.b = append(tb.b, "     *Error Details* "...)
			tb.b = append(tb.b, d...)
			tb.b = append(tb.b, " \n"...)
		}
	}
	if loc != nil {
		l := (*ol.CodeLocation)(loc)
		tb.b = append(tb.b, "     *Code Location* "...)
		tb.b = append(tb.b, goString(l.SourceFile, 4096)...)
		tb.b = append(tb.b, ':')
		tb.b = strconv.AppendUint(tb.b, uint64(l.LineNumber), 10)
		tb.b = append(tb.b, ':')
		tb.b = strconv.AppendUint(tb.b, uint64(l.ColumnNumber), 10)
		tb.b = append(tb.b, " ("...)
		tb.b = append(tb.b, goString(l.FunctionName, 4096)...)
		tb.b = append(tb.b, ")\n"...)
	}
	t.mu.Lock()
	_, _ = t.out.Write(tb.b)
	t.mu.Unlock()
	t.bufs.Put(tb)
}

// goString copies a C string of at most max bytes ("" for NULL).
func goString(p unsafe.Pointer, max int) string {
	if p == nil {
		return ""
	}
	n := int(C.strnlen((*C.char)(p), C.size_t(max)))
	return string(unsafe.Slice((*byte)(p), n))
}

func (tb *traceBuf) param(name string) {
	if tb.n > 0 {
		tb.b = append(tb.b, ", "...)
	}
	tb.n++
	tb.b = append(tb.b, '.')
	tb.b = append(tb.b, name...)
	tb.b = append(tb.b, " = "...)
}

func (tb *traceBuf) text(s string) { tb.b = append(tb.b, s...) }
func (tb *traceBuf) uint(v uint64) { tb.b = strconv.AppendUint(tb.b, v, 10) }
func (tb *traceBuf) hex(v uintptr) {
	tb.b = append(tb.b, "0x"...)
	tb.b = strconv.AppendUint(tb.b, uint64(v), 16)
}
func (tb *traceBuf) handle(h uintptr) {
	if h == 0 {
		tb.b = append(tb.b, "nullptr"...)
		return
	}
	tb.hex(h)
}

// ptr prints a pointer the way the reference prints void pointers.
func (tb *traceBuf) ptr(p unsafe.Pointer) { tb.handle(uintptr(p)) }

// rawPtr prints an address even when it is NULL (0x0).
func (tb *traceBuf) rawPtr(p unsafe.Pointer) { tb.hex(uintptr(p)) }

// cstr prints a C string as its address followed by the text.
func (tb *traceBuf) cstr(p unsafe.Pointer, max int) {
	if p == nil {
		tb.b = append(tb.b, "nullptr"...)
		return
	}
	if max < 0 || max > 1<<16 {
		max = 1 << 16
	}
	tb.hex(uintptr(p))
	tb.b = append(tb.b, " ("...)
	tb.b = append(tb.b, goString(p, max)...)
	tb.b = append(tb.b, ')')
}

func (tb *traceBuf) open(p unsafe.Pointer) bool {
	if p == nil {
		tb.b = append(tb.b, "nullptr"...)
		return false
	}
	tb.hex(uintptr(p))
	tb.b = append(tb.b, " ("...)
	return true
}

func (tb *traceBuf) ptrToU64(p unsafe.Pointer) {
	if tb.open(p) {
		tb.uint(*(*uint64)(p))
		tb.b = append(tb.b, ')')
	}
}

func (tb *traceBuf) ptrToBool(p unsafe.Pointer) {
	if tb.open(p) {
		tb.uint(uint64(*(*uint8)(p)))
		tb.b = append(tb.b, ')')
	}
}

func (tb *traceBuf) ptrToPtr(p unsafe.Pointer) {
	if tb.open(p) {
		tb.ptr(*(*unsafe.Pointer)(p))
		tb.b = append(tb.b, ')')
	}
}

// ptrToPtrIf dereferences only when the array it points to is not empty.
func (tb *traceBuf) ptrToPtrIf(p unsafe.Pointer, nonEmpty bool) {
	if !nonEmpty {
		tb.ptr(p)
		return
	}
	tb.ptrToPtr(p)
}

func (tb *traceBuf) ptrTo(p unsafe.Pointer, print func(*traceBuf, unsafe.Pointer)) {
	if tb.open(p) {
		print(tb, p)
		tb.b = append(tb.b, ')')
	}
}

// valuePrinter prints the value an info query wrote, typed by the property.
type valuePrinter struct {
	size  int // bytes the value takes; 0 for strings
	print func(*traceBuf, unsafe.Pointer)
}

// tagged prints an info output buffer. It reads no more than the caller
// said the buffer holds.
func (tb *traceBuf) tagged(p unsafe.Pointer, propSize uint64, vp valuePrinter) {
	switch {
	case p == nil:
		tb.b = append(tb.b, "nullptr"...)
	case vp.print == nil:
		tb.b = append(tb.b, "unknown enumerator"...)
	case vp.size == 0:
		tb.cstr(p, int(min(propSize, 1<<16)))
	case propSize < uint64(vp.size):
		// The reference prints the full value even from a buffer declared
		// smaller; do the same from a copy that cannot fault.
		var tmp [16]byte
		tb.hex(uintptr(p))
		if C.ol_safe_read(unsafe.Pointer(&tmp[0]), p, C.size_t(vp.size)) == 0 {
			tb.b = append(tb.b, " (unreadable)"...)
			return
		}
		tb.b = append(tb.b, " ("...)
		vp.print(tb, unsafe.Pointer(&tmp[0]))
		tb.b = append(tb.b, ')')
	default:
		tb.hex(uintptr(p))
		tb.b = append(tb.b, " ("...)
		vp.print(tb, p)
		tb.b = append(tb.b, ')')
	}
}

func printString(tb *traceBuf, p unsafe.Pointer) { tb.cstr(p, -1) }
func printU32(tb *traceBuf, p unsafe.Pointer)    { tb.uint(uint64(*(*uint32)(p))) }
func printU64(tb *traceBuf, p unsafe.Pointer)    { tb.uint(*(*uint64)(p)) }
func printBool(tb *traceBuf, p unsafe.Pointer)   { tb.uint(uint64(*(*uint8)(p))) }
func printRawPtr(tb *traceBuf, p unsafe.Pointer) { tb.rawPtr(*(*unsafe.Pointer)(p)) }

// printPtrQuirk reproduces how the reference prints a void* info value: the
// inner pointer print is followed by the printer's own NULL result (0x0).
func printPtrQuirk(tb *traceBuf, p unsafe.Pointer) {
	tb.ptrToPtr(p)
	tb.b = append(tb.b, "0x0"...)
}
