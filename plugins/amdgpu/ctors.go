package amdgpu

import (
	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// Global constructors and destructors of AMDGPU code objects.
//
// ROCr runs no constructor when it loads a code object. clang
// (AMDGPUCtorDtorLowering) gathers an image's constructors in .init_array
// (destructors: .fini_array) and emits a kernel, amdgcn.device.init
// (amdgcn.device.fini), .max_flat_workgroup_size 1, with only implicit
// arguments, that calls the entries from __init_array_start up to
// __init_array_end (the destructors from __fini_array_end down to
// __fini_array_start); the runtime's loader relocates the arrays. The
// loader of the code object must launch these kernels: as LLVM 22.1's
// AMDGPU plugin does, the plugin launches the init kernel with one
// work-item once the executable is frozen (a failure unloads the program
// and fails the load), and the fini kernel before the executable is
// destroyed. The code object's metadata says whether it has them.

const (
	initKernel = "amdgcn.device.init"
	finiKernel = "amdgcn.device.fini"
)

// runCtors launches the program's amdgcn.device.init (init) or
// amdgcn.device.fini kernel on a queue of its own, one work-item, and
// waits for it. A program whose metadata lists no such kernel does nothing.
func (p *Program) runCtors(init bool) error {
	name, what := initKernel, "constructors"
	if !init {
		name, what = finiKernel, "destructors"
	}
	if _, ok := p.meta[name]; !ok {
		return nil
	}
	pk, err := p.Kernel(name)
	if err != nil {
		return ol.Errorf(ol.ErrcBackendFailure, "amdgpu: the code object's %s kernel %s: %v", what, name, err)
	}
	pq, err := p.d.NewQueue()
	if err != nil {
		return err
	}
	q := pq.(*Queue)
	defer func() { _ = q.Release() }()
	one := plugin.LaunchSize{NumGroups: ol.Dimensions{X: 1, Y: 1, Z: 1}, GroupSize: ol.Dimensions{X: 1, Y: 1, Z: 1}}
	err = q.launch(pk.(*Kernel), nil, one, false, false)
	if serr := q.Sync(); err == nil && serr != nil {
		err = serr
	}
	if err != nil {
		return ol.Errorf(ol.ErrcBackendFailure, "amdgpu: running the program's %s (%s) on %s: %v", what, name, p.d.name(), err)
	}
	return nil
}
