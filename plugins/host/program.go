package host

/*
#include <stdlib.h>
#include "exec.h"
*/
import "C"

import (
	"debug/elf"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/cmem"
	"github.com/liboffload-go/liboffload-go/internal/fault"
	"github.com/liboffload-go/liboffload-go/plugins/host/internal/elfcheck"
	"github.com/liboffload-go/liboffload-go/plugins/image"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// parseImage validates img as an ELF shared object for this CPU: every
// structure the dynamic loader reads or trusts is checked before the loader
// sees the image (see package elfcheck), so a corrupt image is refused here
// instead of ending the process inside the loader.
func parseImage(img []byte) (*elfcheck.Image, error) {
	im, err := elfcheck.Check(img, image.HostMachine())
	if err != nil {
		return nil, ol.Errorf(ol.ErrcInvalidBinary, "invalid program image: %v", err)
	}
	return im, nil
}

// imageTarget is what the host device loads: ELF shared objects for this CPU.
func imageTarget() image.Target { return image.HostTarget(image.HostMachine()) }

// AcceptsImage implements plugin.ImageDevice. Images the classifier does
// not recognise are accepted here so that the validator (parseImage), which
// reads the whole ELF, gives the detailed reason.
func (d *Device) AcceptsImage(info image.Info) (bool, string) {
	t := imageTarget()
	return t.Accepts(info), t.Needs()
}

// IsValidBinary implements plugin.Device: an ELF shared object for this
// CPU that passes the full validation.
func (d *Device) IsValidBinary(img []byte) bool {
	if !imageTarget().Accepts(image.Classify(img)) {
		return false
	}
	_, err := parseImage(img)
	return err == nil
}

// program is a shared object loaded privately into the process.
type program struct {
	dev    *Device
	handle unsafe.Pointer
	fd     C.int
	image  *elfcheck.Image // the validated image
	base   uintptr         // where it was loaded: symbol values are relative to it

	mu     sync.Mutex
	closed bool
	// refs counts the owner plus every queued launch of a kernel of the
	// program; the image is unloaded when it reaches zero, so destroying a
	// program with launches still queued does not pull code from under them.
	refs atomic.Int64
}

// LoadProgram implements plugin.Device: constructors run now. The image is
// copied into a sealed in-memory file first and validated there, so the
// bytes the loader reads are the bytes that were checked even if the
// caller changes its buffer meanwhile.
func (d *Device) LoadProgram(image []byte) (plugin.Program, error) {
	if len(image) == 0 {
		return nil, ol.NewError(ol.ErrcInvalidBinary, "the image is empty")
	}
	var errBuf [512]C.char
	var fd C.int
	staged := C.ol_host_stage(unsafe.Pointer(&image[0]), C.size_t(len(image)), &fd, &errBuf[0], C.size_t(len(errBuf)))
	if staged == nil {
		return nil, ol.Errorf(ol.ErrcOutOfResources, "cannot stage the %d-byte program image: %s", len(image), C.GoString(&errBuf[0]))
	}
	im, err := parseImage(unsafe.Slice((*byte)(staged), len(image)))
	C.ol_host_unstage(staged, C.size_t(len(image)))
	if err != nil {
		C.ol_host_close_fd(fd)
		return nil, err
	}
	var base C.uintptr_t
	h := C.ol_host_open(&fd, &base, &errBuf[0], C.size_t(len(errBuf)))
	if h == nil {
		C.ol_host_close_fd(fd)
		msg := C.GoString(&errBuf[0])
		if i := strings.Index(msg, "/proc/self/fd/"); i >= 0 {
			if j := strings.Index(msg[i:], ":"); j > 0 {
				msg = msg[:i] + "the program image" + msg[i+j:]
			}
		}
		return nil, ol.Errorf(ol.ErrcInvalidBinary, "the loader refused the image: %s", msg)
	}
	p := &program{dev: d, handle: h, fd: fd, image: im, base: uintptr(base)}
	p.refs.Store(1)
	return p, nil
}

func (p *program) sym(name string) unsafe.Pointer {
	return C.ol_host_sym(p.handle, (*C.char)(cmem.CName(name)))
}

// descSize is the size of a kernel descriptor (ol_host_kernel_desc) of
// ABI 4 and later, descSizeV3 that of ABI 2 and 3 (no parameter list);
// paramSize that of each parameter record after it.
const (
	descSize   = uint64(unsafe.Sizeof(C.ol_host_kernel_desc{}))
	descSizeV3 = uint64(unsafe.Offsetof(C.ol_host_kernel_desc{}.num_params))
	paramSize  = uint64(unsafe.Sizeof(C.ol_host_param{}))
)

// maxParams bounds a descriptor's parameter list (kernel.h writes at most
// 32; a GPU kernel's parameters take at most a few KiB).
const maxParams = 4096

// Kernel implements plugin.Program.
func (p *program) Kernel(name string) (plugin.Kernel, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fault.Point()
	if p.closed {
		return nil, ol.NewError(ol.ErrcInvalidArgument, "the program was destroyed")
	}
	descName := "__ol_kernel_" + name
	sym, defined := p.image.Lookup(descName)
	if defined && sym.Type != elf.STT_OBJECT && sym.Type != elf.STT_NOTYPE {
		// not handed to dlsym: it would run an indirect function's resolver
		return nil, ol.Errorf(ol.ErrcInvalidBinary, "kernel %q: its descriptor %s is a %s symbol, not data", name, descName, sym.Type)
	}
	addr := p.sym(descName)
	if addr == nil {
		if p.sym(name) != nil {
			return nil, ol.Errorf(ol.ErrcNotFound, "%q is not a kernel: it was not declared with OL_KERNEL, OL_PHASED_KERNEL or OL_GROUP_KERNEL of <offload/kernel.h>", name)
		}
		return nil, ol.Errorf(ol.ErrcNotFound, "the program has no kernel named %q", name)
	}
	// Nothing the loader returned is read before it is known to be the
	// program's own descriptor, whole inside its loaded segments.
	if err := p.checkSymbolAddr(descName, sym, defined, uintptr(addr)); err != nil {
		return nil, ol.Errorf(ol.ErrcInvalidBinary, "kernel %q: %v", name, err)
	}
	if sym.Section == elf.SHN_ABS || !p.image.Mapped(sym.Value, descSizeV3) {
		return nil, ol.Errorf(ol.ErrcInvalidBinary, "kernel %q: its %d-byte descriptor at %#x is not inside the program's loaded segments", name, descSizeV3, sym.Value)
	}
	d := (*C.ol_host_kernel_desc)(addr)
	if d.magic != C.OL_HOST_KERNEL_MAGIC || d.abi < C.OL_HOST_ABI_OLDEST || d.abi > C.OL_HOST_ABI {
		return nil, ol.Errorf(ol.ErrcInvalidBinary, "kernel %q was built with an unknown <offload/kernel.h> (ABI %d, this library speaks %d to %d)", name, d.abi, C.OL_HOST_ABI_OLDEST, C.OL_HOST_ABI)
	}
	k := &kernel{name: name, desc: d, prog: p}
	if d.abi >= 4 {
		params, err := p.params(sym.Value, d)
		if err != nil {
			return nil, ol.Errorf(ol.ErrcInvalidBinary, "kernel %q has a malformed descriptor: %v", name, err)
		}
		k.params, k.paramsKnown = params, true
	}
	if (d.kind == C.OL_HOST_KERNEL_LOOP && d.loop == nil) || (d.kind == C.OL_HOST_KERNEL_GROUP && d.item == nil) || d.kind > C.OL_HOST_KERNEL_GROUP {
		return nil, ol.Errorf(ol.ErrcInvalidBinary, "kernel %q has a malformed descriptor", name)
	}
	// The entry points must be functions of the program.
	for _, fn := range []struct {
		what string
		ptr  unsafe.Pointer
	}{{"loop", unsafe.Pointer(d.loop)}, {"work-item", unsafe.Pointer(d.item)}} {
		if fn.ptr == nil {
			continue
		}
		if err := p.image.CheckCode(uint64(uintptr(fn.ptr) - p.base)); err != nil {
			return nil, ol.Errorf(ol.ErrcInvalidBinary, "kernel %q has a malformed descriptor: its %s entry point: %v", name, fn.what, err)
		}
	}
	return k, nil
}

// params reads the parameter list of the ABI 4 descriptor d at value (its
// symbol's): inside the program's loaded segments, each parameter inside
// the argument block and after the one before it, as a C struct's members.
func (p *program) params(value uint64, d *C.ol_host_kernel_desc) ([]plugin.Param, error) {
	if !p.image.Mapped(value, descSize) {
		return nil, fmt.Errorf("its %d-byte descriptor is not inside the program's loaded segments", descSize)
	}
	n := uint64(d.num_params)
	if n > maxParams || !p.image.Mapped(value+descSize, n*paramSize) {
		return nil, fmt.Errorf("its list of %d parameters is not inside the program's loaded segments", n)
	}
	recs := unsafe.Slice((*C.ol_host_param)(unsafe.Add(unsafe.Pointer(d), descSize)), n)
	params := make([]plugin.Param, n)
	var end uint64
	for i, r := range recs {
		off, size := uint64(r.offset), uint64(r.size)
		if off < end || off+size > uint64(d.args_size) {
			return nil, fmt.Errorf("parameter %d (%d bytes at offset %d) overlaps the one before it or ends past the %d-byte argument block", i, size, off, d.args_size)
		}
		params[i] = plugin.Param{Offset: off, Size: size}
		end = off + size
	}
	return params, nil
}

// checkSymbolAddr checks that the address the loader gave for name is the
// program's own definition of it.
func (p *program) checkSymbolAddr(name string, sym elfcheck.Symbol, defined bool, addr uintptr) error {
	if !defined {
		return fmt.Errorf("the loader found %s outside the program's dynamic symbol table", name)
	}
	if want := p.base + uintptr(sym.Value); sym.Section != elf.SHN_ABS && addr != want {
		return fmt.Errorf("the loader placed %s at %#x, not at the program's %#x", name, addr, want)
	}
	return nil
}

// Global implements plugin.Program.
func (p *program) Global(name string) (uintptr, uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fault.Point()
	if p.closed {
		return 0, 0, ol.NewError(ol.ErrcInvalidArgument, "the program was destroyed")
	}
	sym, ok := p.image.Lookup(name)
	ok = ok && sym.Type == elf.STT_OBJECT
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
	if err := p.checkSymbolAddr(name, sym, true, uintptr(addr)); err != nil {
		return 0, 0, ol.Errorf(ol.ErrcInvalidBinary, "global variable %q: %v", name, err)
	}
	if sym.Section == elf.SHN_ABS {
		return 0, 0, ol.Errorf(ol.ErrcInvalidBinary, "global variable %q is an absolute symbol, not data of the program", name)
	}
	return uintptr(addr), sym.Size, nil
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
	if !p.close() {
		return nil
	}
	return p.release()
}

// close marks the program unloaded; false: it already was.
func (p *program) close() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	fault.Point()
	if p.closed {
		return false
	}
	p.closed = true
	return true
}
