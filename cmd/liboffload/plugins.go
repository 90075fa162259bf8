package main

import (
	"github.com/liboffload-go/liboffload-go/impl"
	"github.com/liboffload-go/liboffload-go/plugins/amdgpu"
	"github.com/liboffload-go/liboffload-go/plugins/cuda"
	"github.com/liboffload-go/liboffload-go/plugins/host"
	"github.com/liboffload-go/liboffload-go/plugins/remote"
)

// The backends of this library, in platform order: AMDGPU, then CUDA
// (LLVM 22.1's order), then the host platform, then the devices of other
// machines (offload-proxy ranks of an MPI launch: docs/remote.md), so that
// local devices come first. The runtime knows them only through the plugin
// interface.
func init() { impl.UsePlugins(amdgpu.New(), cuda.New(), host.New(), remote.New()) }
