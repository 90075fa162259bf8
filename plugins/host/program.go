package host

/*
#include <stdlib.h>
#include "exec.h"
*/
import "C"

import (
	"bytes"
	"debug/elf"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/impl/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// hostMachine is the ELF machine this process runs on.
func hostMachine() elf.Machine {
	switch runtime.GOARCH {
	case "amd64":
		return elf.EM_X86_64
	case "arm64":
		return elf.EM_AARCH64
	case "riscv64":
		return elf.EM_RISCV
	case "ppc64le":
		return elf.EM_PPC64
	}
	return elf.EM_NONE
}

// parseImage checks that img is an ELF shared object for this CPU and
// returns the sizes of its data symbols.
func parseImage(img []byte) (map[string]uint64, error) {
	if len(img) < 64 {
		return nil, ol.Errorf(ol.ErrcInvalidBinary, "the image is %d bytes long, too short to be an ELF shared object", len(img))
	}
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		return nil, ol.Errorf(ol.ErrcInvalidBinary, "not an ELF image (%d bytes, starting %q): %v", len(img), img[:4], err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Machine != hostMachine() {
		return nil, ol.Errorf(ol.ErrcInvalidBinary, "the image is for %s (%s), not for this %s host", f.Machine, f.Class, hostMachine())
	}
	if f.Type != elf.ET_DYN {
		return nil, ol.Errorf(ol.ErrcInvalidBinary, "the image is an ELF %s, not a shared object (build it with -shared -fPIC)", f.Type)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		return nil, ol.Errorf(ol.ErrcInvalidBinary, "the image has no dynamic symbol table: %v", err)
	}
	objects := map[string]uint64{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_OBJECT && s.Section != elf.SHN_UNDEF {
			objects[s.Name] = s.Size
		}
	}
	return objects, nil
}

// IsValidBinary implements plugin.Device.
func (d *Device) IsValidBinary(image []byte) bool {
	_, err := parseImage(image)
	return err == nil
}

// program is a shared object loaded privately into the process.
type program struct {
	dev     *Device
	handle  unsafe.Pointer
	fd      C.int
	objects map[string]uint64

	mu     sync.Mutex
	closed bool
	// refs counts the owner plus every queued launch of a kernel of the
	// program; the image is unloaded when it reaches zero, so destroying a
	// program with launches still queued does not pull code from under them.
	refs atomic.Int64
}

// LoadProgram implements plugin.Device: constructors run now.
func (d *Device) LoadProgram(image []byte) (plugin.Program, error) {
	objects, err := parseImage(image)
	if err != nil {
		return nil, err
	}
	var errBuf [512]C.char
	var fd C.int
	h := C.ol_host_load(unsafe.Pointer(&image[0]), C.size_t(len(image)), &fd, &errBuf[0], C.size_t(len(errBuf)))
	if h == nil {
		msg := C.GoString(&errBuf[0])
		if i := strings.Index(msg, "/proc/self/fd/"); i >= 0 {
			if j := strings.Index(msg[i:], ":"); j > 0 {
				msg = msg[:i] + "the program image" + msg[i+j:]
			}
		}
		return nil, ol.Errorf(ol.ErrcInvalidBinary, "the loader refused the image: %s", msg)
	}
	p := &program{dev: d, handle: h, fd: fd, objects: objects}
	p.refs.Store(1)
	return p, nil
}

func (p *program) sym(name string) unsafe.Pointer {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return C.ol_host_sym(p.handle, cs)
}

// Kernel implements plugin.Program.
func (p *program) Kernel(name string) (plugin.Kernel, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ol.NewError(ol.ErrcInvalidArgument, "the program was destroyed")
	}
	d := (*C.ol_host_kernel_desc)(p.sym("__ol_kernel_" + name))
	if d == nil {
		if p.sym(name) != nil {
			return nil, ol.Errorf(ol.ErrcNotFound, "%q is not a kernel: it was not declared with OL_KERNEL or OL_GROUP_KERNEL of <offload/kernel.h>", name)
		}
		return nil, ol.Errorf(ol.ErrcNotFound, "the program has no kernel named %q", name)
	}
	if d.magic != C.OL_HOST_KERNEL_MAGIC || d.abi != C.OL_HOST_ABI {
		return nil, ol.Errorf(ol.ErrcInvalidBinary, "kernel %q was built with an unknown <offload/kernel.h> (ABI %d, this library speaks %d)", name, d.abi, C.OL_HOST_ABI)
	}
	if (d.kind == C.OL_HOST_KERNEL_LOOP && d.loop == nil) || (d.kind == C.OL_HOST_KERNEL_GROUP && d.item == nil) || d.kind > C.OL_HOST_KERNEL_GROUP {
		return nil, ol.Errorf(ol.ErrcInvalidBinary, "kernel %q has a malformed descriptor", name)
	}
	return &kernel{name: name, desc: d, prog: p}, nil
}

// Global implements plugin.Program.
func (p *program) Global(name string) (uintptr, uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, 0, ol.NewError(ol.ErrcInvalidArgument, "the program was destroyed")
	}
	size, ok := p.objects[name]
	if strings.HasPrefix(name, "__ol_kernel_") {
		ok = false // kernel descriptors are the library's, not the program's
	}
	addr := p.sym(name)
	if !ok || addr == nil {
		if addr != nil {
			return 0, 0, ol.Errorf(ol.ErrcNotFound, "%q is not a global variable of the program", name)
		}
		return 0, 0, ol.Errorf(ol.ErrcNotFound, "the program has no global variable named %q", name)
	}
	return uintptr(addr), size, nil
}

// acquire takes a reference for a queued launch; false once destroyed.
func (p *program) acquire() bool {
	for {
		n := p.refs.Load()
		if n <= 0 {
			return false
		}
		if p.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference; the last one unloads the image.
func (p *program) release() error {
	if p.refs.Add(-1) != 0 {
		return nil
	}
	var errBuf [512]C.char
	if C.ol_host_unload(p.handle, p.fd, &errBuf[0], C.size_t(len(errBuf))) != 0 {
		return ol.Errorf(ol.ErrcBackendFailure, "unloading the program failed: %s", C.GoString(&errBuf[0]))
	}
	return nil
}

// Unload implements plugin.Program: destructors run now, or when the last
// queued launch of one of its kernels has run.
func (p *program) Unload() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	return p.release()
}
