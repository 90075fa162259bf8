package impl

import (
	"github.com/liboffload-go/liboffload-go/plugins/amdgpu"
	"github.com/liboffload-go/liboffload-go/plugins/cuda"
	"github.com/liboffload-go/liboffload-go/plugins/host"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// builtinPlugins lists the backends in platform order: AMDGPU, then CUDA
// (LLVM 22.1's order), then the host platform last.
func builtinPlugins() []plugin.Plugin {
	return []plugin.Plugin{amdgpu.New(), cuda.New(), host.New()}
}
