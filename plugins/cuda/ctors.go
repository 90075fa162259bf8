package cuda

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"bytes"
	"debug/elf"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/cmem"
	"github.com/liboffload-go/liboffload-go/plugins/image"
)

// Global constructors and destructors of NVPTX images.
//
// The CUDA driver runs no constructor when it loads a module. clang
// (NVPTXCtorDtorLowering) lowers each constructor of an NVPTX image to a
// constant holding its address, __init_array_object_<name>_<priority>
// (destructors: __fini_array_object_…), and emits a kernel,
// nvptx$device$init (nvptx$device$fini), one thread, that calls the
// addresses from the global __init_array_start up to __init_array_end
// (__fini_array_end down to __fini_array_start). NVPTX has no sections to
// gather these arrays in, so the loader builds them: as LLVM 22.1's CUDA
// plugin does, the plugin finds the objects by name in the image, reads
// their addresses, writes them in priority order to a device buffer, points
// the start and end globals at it and launches the kernel, after loading
// the module (constructors) and before unloading it (destructors).

const (
	initKernel = "nvptx$device$init"
	finiKernel = "nvptx$device$fini"
)

// ctorObjectName matches the names of the lowered constructors and
// destructors in PTX text.
var ctorObjectName = regexp.MustCompile(`__(?:init|fini)_array_object_[A-Za-z0-9_$]*`)

// ctorObjects returns the names of the image's lowered constructors and
// destructors, each list in the order they run (by priority, then as the
// image lists them): from the symbol table of a cubin, from the
// declarations of PTX text. Other images (fatbins) are searched for none.
func ctorObjects(img []byte) (ctors, dtors []string) {
	if !bytes.Contains(img, []byte("_array_object_")) {
		return nil, nil
	}
	var names []string
	switch image.Classify(img).Kind {
	case image.PTX:
		for _, m := range ctorObjectName.FindAll(img, -1) {
			names = append(names, string(m))
		}
	case image.Cubin:
		f, err := elf.NewFile(bytes.NewReader(img))
		if err != nil {
			return nil, nil
		}
		syms, _ := f.Symbols()
		for _, s := range syms {
			names = append(names, s.Name)
		}
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		switch {
		case strings.HasPrefix(n, "__init_array_object_"):
			ctors = append(ctors, n)
		case strings.HasPrefix(n, "__fini_array_object_"):
			dtors = append(dtors, n)
		}
	}
	return byPriority(ctors), byPriority(dtors)
}

// byPriority sorts the names by the priority after their last '_' (names
// without one are left out).
func byPriority(names []string) []string {
	type obj struct {
		name string
		prio uint64
	}
	var objs []obj
	for _, n := range names {
		p, err := strconv.ParseUint(n[strings.LastIndexByte(n, '_')+1:], 10, 16)
		if err == nil {
			objs = append(objs, obj{n, p})
		}
	}
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].prio < objs[j].prio })
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.name
	}
	return out
}

// runCtors runs the program's constructors (init) or destructors on the
// device, and waits for them. A program without any does nothing.
func (p *Program) runCtors(init bool) error {
	names, kernel, start, end := p.ctors, initKernel, "__init_array_start", "__init_array_end"
	if !init {
		names, kernel, start, end = p.dtors, finiKernel, "__fini_array_start", "__fini_array_end"
	}
	if len(names) == 0 {
		return nil
	}
	d := p.d
	var fn C.uintptr_t
	if r := withName(kernel, func(cs *C.char) C.int { return C.lgo_cu_module_get_function(d.drv.run, d.ctx, &fn, p.mod, cs) }); r != cudaSuccess {
		if lookupMissed(r) {
			return nil // objects without the kernel that runs them: nothing to run
		}
		return d.call(fmt.Sprintf("cuModuleGetFunction(%q)", kernel), r)
	}
	startAddr, _, err := p.Global(start)
	if err != nil {
		return err
	}
	endAddr, _, err := p.Global(end)
	if err != nil {
		return err
	}
	n := uint64(len(names))
	// host: the function addresses, then the array's start and end
	host, err := cmem.Malloc(8*(n+2), fmt.Sprintf("cuda: the addresses of the %d %s of a program", n, kernel))
	if err != nil {
		return err
	}
	defer cmem.Free(host)
	words := unsafe.Slice((*uint64)(host), n+2)
	hp := uintptr(host)
	pq, err := d.NewQueue()
	if err != nil {
		return err
	}
	q := pq.(*Queue)
	defer func() { _ = q.Release() }()
	for i, name := range names {
		addr, size, err := p.Global(name)
		if err == nil && size < 8 {
			err = ol.Errorf(ol.ErrcInvalidBinary, "cuda: %s is %d bytes, not a function address", name, size)
		}
		if err == nil {
			err = q.CopyFromDevice(hp+uintptr(8*i), addr, d, 8)
		}
		if err != nil {
			_ = q.Sync()
			return err
		}
	}
	if err := q.Sync(); err != nil {
		return err
	}
	buf, err := d.Alloc(ol.AllocTypeDevice, 8*n)
	if err != nil {
		return err
	}
	defer func() { _ = d.Free(buf, ol.AllocTypeDevice) }()
	words[n], words[n+1] = uint64(buf), uint64(buf)+8*n
	err = q.CopyToDevice(buf, d, hp, 8*n)
	if err == nil {
		err = q.CopyToDevice(startAddr, d, hp+uintptr(8*n), 8)
	}
	if err == nil {
		err = q.CopyToDevice(endAddr, d, hp+uintptr(8*n+8), 8)
	}
	if err == nil {
		q.ops.Add(1)
		if r := C.lgo_cu_launch(d.drv.run, d.ctx, fn, 1, 1, 1, 1, 1, 1, 0, q.s, nil, 0); r != cudaSuccess {
			err = d.call(fmt.Sprintf("cuLaunchKernel(%q)", kernel), r)
		}
		q.subs.Add(1)
	}
	if serr := q.Sync(); err == nil && serr != nil {
		err = ol.Errorf(ol.ErrcBackendFailure, "cuda: running the program's %s: %v", strings.TrimPrefix(kernel, "nvptx$device$"), serr)
	}
	return err
}
