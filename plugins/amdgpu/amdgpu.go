// Package amdgpu is the backend for AMD GPUs through ROCr, the HSA runtime
// (libhsa-runtime64). At this stage it only probes: it loads the runtime,
// initialises it and describes each GPU agent; memory, queues and programs
// are not supported yet, but olIsValidBinary already answers from the
// agent's gfx processor.
//
// The runtime is loaded with purego.Dlopen by SONAME
// (libhsa-runtime64.so.1, then libhsa-runtime64.so), or from the path in
// OFFLOAD_HSA_LIBRARY, once per process, and is never shut down or
// unloaded (see drivers in driver.go). Runtime functions are called through
// cgo trampolines (shim.c) on their dlsym'd addresses; the iteration
// callbacks are a cgo export (collect.go).
package amdgpu

import (
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/image"
	"github.com/liboffload-go/liboffload-go/plugins/internal/gpu"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

const (
	backendName = "amdgpu"
	// VendorName is the platform's vendor. It stays under 24 bytes: LLVM's
	// llvm-offload-device-info reads the platform vendor into a 24-byte buffer.
	VendorName = "Advanced Micro Devices"
	// VendorID is AMD's PCI vendor id.
	VendorID = 0x1002
)

// Plugin is the AMDGPU backend. Its name and library search come from
// gpu.Backend.
type Plugin struct{ gpu.Backend }

// New returns the AMDGPU plugin.
func New() *Plugin {
	return &Plugin{gpu.Backend{
		ID: backendName, EnvLibrary: EnvLibrary, Sonames: sonames,
		Platform: gpu.PlatformKind{Name: "AMDGPU", Vendor: VendorName, Backend: ol.PlatformBackendAmdgpu},
	}}
}

// Init implements plugin.Plugin. A missing library or symbol, any hsa_init
// failure, and a runtime without GPU agents leave the platform out without
// an error. A runtime failure after hsa_init succeeded is an error.
func (pl *Plugin) Init(env plugin.Env) (plugin.Platform, error) {
	d := drivers.Load(pl.LibraryNames(env))
	pl.SetAbsent("")
	if unusable, err := d.Unusable(); unusable {
		pl.SetAbsent(d.Absent)
		return nil, err
	}
	agents, err := d.agents()
	if err != nil {
		return nil, err
	}
	p := &Platform{pl.NewPlatform(d.version)}
	for _, a := range agents {
		var kind uint32 // hsa_device_type_t
		if err := d.agentInfo(a, agentInfoDevice, unsafe.Pointer(&kind)); err != nil {
			return nil, err
		}
		if kind != deviceTypeGPU {
			continue
		}
		info, err := d.deviceInfo(a)
		if err != nil {
			return nil, err
		}
		p.AddDevice(&Device{
			Unsupported: pl.Unsupported(), Images: gpu.Images{Target: image.AMDGPUTarget(info.Name.V)}, agent: a, info: info,
		})
	}
	if len(p.Devices()) == 0 {
		return nil, nil
	}
	return p, nil
}

// deviceInfo reads the properties of a GPU agent.
func (d *driver) deviceInfo(agent uint64) (*plugin.DeviceInfo, error) {
	info := gpu.NewDeviceInfo(VendorID, d.version)
	strs := []struct {
		attr uint32
		dst  *plugin.Opt[string]
	}{
		{agentInfoName, &info.Name}, // the ISA name, e.g. gfx90a
		{amdAgentInfoProductName, &info.ProductName},
		{agentInfoVendorName, &info.Vendor},
		{amdAgentInfoUUID, &info.Uid}, // "GPU-<16 hex digits>", or "GPU-XX" if unknown
	}
	for _, s := range strs {
		v, err := d.agentString(agent, s.attr)
		if err != nil {
			return nil, err
		}
		*s.dst = plugin.Some(v)
	}
	u32s := []struct {
		attr uint32
		dst  *plugin.Opt[uint32]
	}{
		{agentInfoWorkgroupMaxSize, &info.MaxWorkGroupSize},
		{agentInfoGridMaxSize, &info.MaxWorkSize},
		{amdAgentInfoComputeUnits, &info.NumComputeUnits},
		{amdAgentInfoMaxClock, &info.MaxClockFrequency},
		{amdAgentInfoMemoryMaxFreq, &info.MemoryClockRate},
	}
	for _, s := range u32s {
		v, err := d.agentU32(agent, s.attr)
		if err != nil {
			return nil, err
		}
		*s.dst = plugin.Some(v)
	}
	var wg [3]uint16
	if err := d.agentInfo(agent, agentInfoWorkgroupMaxDim, unsafe.Pointer(&wg[0])); err != nil {
		return nil, err
	}
	info.MaxWorkGroupSizePerDimension = plugin.Some(ol.Dimensions{X: uint32(wg[0]), Y: uint32(wg[1]), Z: uint32(wg[2])})
	var grid [3]uint32
	if err := d.agentInfo(agent, agentInfoGridMaxDim, unsafe.Pointer(&grid[0])); err != nil {
		return nil, err
	}
	info.MaxWorkSizePerDimension = plugin.Some(ol.Dimensions{X: grid[0], Y: grid[1], Z: grid[2]})

	global, group, err := d.memorySizes(agent)
	if err != nil {
		return nil, err
	}
	info.GlobalMemSize, info.MaxMemAllocSize, info.WorkGroupLocalMemSize = plugin.Some(global), plugin.Some(global), plugin.Some(group)
	return info, nil
}

// Platform is the AMDGPU platform: the GPU agents of the runtime. Its
// version is the HSA version of the runtime, e.g. "1.1". It holds no
// runtime resources yet and starts no goroutine; the runtime itself stays
// loaded and initialised for the process (see drivers in driver.go).
type Platform struct{ gpu.Platform }

// Device is one AMD GPU agent. The operations it does not support yet come
// from gpu.Unsupported; which images it loads (code objects for its gfx
// processor, the agent's name) from gpu.Images.
type Device struct {
	gpu.Unsupported
	gpu.Images
	agent uint64 // hsa_agent_t handle
	info  *plugin.DeviceInfo
}

var (
	_ plugin.Device      = (*Device)(nil)
	_ plugin.ImageDevice = (*Device)(nil)
)

// Info implements plugin.Device.
func (d *Device) Info() *plugin.DeviceInfo { return d.info }

// IsHost implements plugin.Device.
func (*Device) IsHost() bool { return false }
