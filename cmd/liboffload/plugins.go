package main

import (
	"github.com/liboffload-go/liboffload-go/impl"
	"github.com/liboffload-go/liboffload-go/plugins/amdgpu"
	"github.com/liboffload-go/liboffload-go/plugins/cuda"
	"github.com/liboffload-go/liboffload-go/plugins/host"
)

// The backends of this library, in platform order: AMDGPU, then CUDA
// (LLVM 22.1's order), then the host platform last. The runtime knows them
// only through the plugin interface.
func init() { impl.UsePlugins(amdgpu.New(), cuda.New(), host.New()) }
