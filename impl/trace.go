package impl

/*
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/uio.h>
#include <unistd.h>

// Copies n bytes of the caller's memory without faulting: 0 when the range
// is not readable. Used only to trace a buffer the caller declared smaller
// than the value the reference prints from it.
static int ol_safe_read(void *dst, uintptr_t src, size_t n) {
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
	"github.com/liboffload-go/liboffload-go/internal/fault"
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
	fault.Point()
	_, _ = t.out.WriteString(line)
}

// write writes one whole trace line.
func (t *tracer) write(b []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fault.Point()
	_, _ = t.out.Write(b)
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
func (t *tracer) end(tb *traceBuf, res uintptr, l *ol.CodeLocation) {
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
	if l != nil {
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
	t.write(tb.b)
	t.bufs.Put(tb)
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

// safeRead fills dst from the caller's memory at src, or reports that the
// range is not readable.
func safeRead(dst []byte, src uintptr) bool {
	// unsafe: process_vm_readv writes into dst, a Go array on our stack
	return C.ol_safe_read(unsafe.Pointer(&dst[0]), C.uintptr_t(src), C.size_t(len(dst))) != 0
}
