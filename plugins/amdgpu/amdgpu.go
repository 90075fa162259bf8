// Package amdgpu is the backend for AMD GPUs through ROCr, the HSA runtime
// (libhsa-runtime64). At this stage it only probes: it loads the runtime,
// initialises it and describes each GPU agent; memory, queues and programs
// are not supported yet.
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

	"github.com/liboffload-go/liboffload-go/impl/ol"
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

// gpuFPConfig is what liboffload reports for single and double precision on
// every GPU: all capabilities except software emulation (127).
const gpuFPConfig = uint32(ol.DeviceFpCapabilityFlagCorrectlyRoundedDivideSqrt | ol.DeviceFpCapabilityFlagRoundToNearest |
	ol.DeviceFpCapabilityFlagRoundToZero | ol.DeviceFpCapabilityFlagRoundToInf | ol.DeviceFpCapabilityFlagInfNan |
	ol.DeviceFpCapabilityFlagDenorm | ol.DeviceFpCapabilityFlagFma)

// Plugin is the AMDGPU backend.
type Plugin struct{}

// New returns the AMDGPU plugin.
func New() *Plugin { return &Plugin{} }

// Name implements plugin.Plugin.
func (*Plugin) Name() string { return backendName }

// libraryNames is what Init tries to load: the override alone if set, else
// the SONAMEs.
func libraryNames(env plugin.Env) []string {
	if env != nil {
		if p, ok := env.Lookup(EnvLibrary); ok && p != "" {
			return []string{p}
		}
	}
	return sonames
}

// Init implements plugin.Plugin. A missing library or symbol, any hsa_init
// failure, and a runtime without GPU agents leave the platform out without
// an error. A runtime failure after hsa_init succeeded is an error.
func (*Plugin) Init(env plugin.Env) (plugin.Platform, error) {
	d := loadDriver(libraryNames(env))
	if d.err != nil {
		return nil, d.err
	}
	if d.absent != "" {
		return nil, nil
	}
	agents, err := d.agents()
	if err != nil {
		return nil, err
	}
	p := &Platform{version: d.version}
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
		p.devices = append(p.devices, &Device{agent: a, info: info})
	}
	if len(p.devices) == 0 {
		return nil, nil
	}
	return p, nil
}

// deviceInfo reads the properties of a GPU agent.
func (d *driver) deviceInfo(agent uint64) (*plugin.DeviceInfo, error) {
	info := &plugin.DeviceInfo{
		Type:              ol.DeviceTypeGpu,
		DriverVersion:     d.version,
		VendorID:          VendorID,
		AddressBits:       64,
		SingleFPConfig:    gpuFPConfig,
		DoubleFPConfig:    gpuFPConfig,
		HalfFPConfig:      0,
		VectorWidthChar:   1,
		VectorWidthShort:  1,
		VectorWidthInt:    1,
		VectorWidthLong:   1,
		VectorWidthFloat:  1,
		VectorWidthDouble: 1,
		VectorWidthHalf:   0,
	}
	strs := []struct {
		attr uint32
		dst  *string
	}{
		{agentInfoName, &info.Name}, // the ISA name, e.g. gfx90a
		{amdAgentInfoProductName, &info.ProductName},
		{agentInfoVendorName, &info.Vendor},
		{amdAgentInfoUUID, &info.UID}, // "GPU-<16 hex digits>", or "GPU-XX" if unknown
	}
	for _, s := range strs {
		v, err := d.agentString(agent, s.attr)
		if err != nil {
			return nil, err
		}
		*s.dst = v
	}
	u32s := []struct {
		attr uint32
		dst  *uint32
	}{
		{agentInfoWorkgroupMaxSize, &info.MaxWorkGroupSize},
		{agentInfoGridMaxSize, &info.MaxWorkSize},
		{amdAgentInfoComputeUnits, &info.NumComputeUnits},
		{amdAgentInfoMaxClock, &info.MaxClockMHz},
		{amdAgentInfoMemoryMaxFreq, &info.MemoryClockMHz},
	}
	for _, s := range u32s {
		v, err := d.agentU32(agent, s.attr)
		if err != nil {
			return nil, err
		}
		*s.dst = v
	}
	var wg [3]uint16
	if err := d.agentInfo(agent, agentInfoWorkgroupMaxDim, unsafe.Pointer(&wg[0])); err != nil {
		return nil, err
	}
	info.MaxWorkGroupSizePerDim = ol.Dimensions{X: uint32(wg[0]), Y: uint32(wg[1]), Z: uint32(wg[2])}
	var grid [3]uint32
	if err := d.agentInfo(agent, agentInfoGridMaxDim, unsafe.Pointer(&grid[0])); err != nil {
		return nil, err
	}
	info.MaxWorkSizePerDim = ol.Dimensions{X: grid[0], Y: grid[1], Z: grid[2]}

	global, group, err := d.memorySizes(agent)
	if err != nil {
		return nil, err
	}
	info.GlobalMemSize, info.MaxMemAllocSize, info.LocalMemSize = global, global, group
	return info, nil
}

// Platform is the AMDGPU platform: the GPU agents of the runtime.
type Platform struct {
	version string
	devices []plugin.Device
}

// Name implements plugin.Platform.
func (*Platform) Name() string { return "AMDGPU" }

// Vendor implements plugin.Platform.
func (*Platform) Vendor() string { return VendorName }

// Version implements plugin.Platform: the HSA version of the runtime, e.g. "1.1".
func (p *Platform) Version() string { return p.version }

// Backend implements plugin.Platform.
func (*Platform) Backend() ol.PlatformBackend { return ol.PlatformBackendAmdgpu }

// Devices implements plugin.Platform.
func (p *Platform) Devices() []plugin.Device { return p.devices }

// Deinit implements plugin.Platform. The platform holds no runtime
// resources yet and starts no goroutine; the runtime itself stays loaded
// and initialised for the process (see drivers in driver.go).
func (*Platform) Deinit() error { return nil }

// Device is one AMD GPU agent.
type Device struct {
	agent uint64 // hsa_agent_t handle
	info  *plugin.DeviceInfo
}

// Info implements plugin.Device.
func (d *Device) Info() *plugin.DeviceInfo { return d.info }

// IsHost implements plugin.Device.
func (*Device) IsHost() bool { return false }

// Alloc implements plugin.Device.
func (*Device) Alloc(kind ol.AllocType, size uint64) (uintptr, error) {
	return 0, plugin.Unsupported(backendName, "olMemAlloc")
}

// Free implements plugin.Device.
func (*Device) Free(ptr uintptr, kind ol.AllocType) error {
	return plugin.Unsupported(backendName, "olMemFree")
}

// Register implements plugin.Device.
func (*Device) Register(ptr uintptr, size uint64) (uintptr, error) {
	return 0, plugin.Unsupported(backendName, "olMemRegister")
}

// Unregister implements plugin.Device.
func (*Device) Unregister(ptr uintptr) error {
	return plugin.Unsupported(backendName, "olMemUnregister")
}

// NewQueue implements plugin.Device.
func (*Device) NewQueue() (plugin.Queue, error) {
	return nil, plugin.Unsupported(backendName, "a queue")
}

// IsValidBinary implements plugin.Device.
func (*Device) IsValidBinary(image []byte) bool { return false }

// LoadProgram implements plugin.Device.
func (*Device) LoadProgram(image []byte) (plugin.Program, error) {
	return nil, plugin.Unsupported(backendName, "loading a program")
}
