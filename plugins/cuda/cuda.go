// Package cuda is the backend for NVIDIA GPUs through the CUDA driver API
// (libcuda). At this stage it only probes: it loads the driver, initialises
// it and describes each GPU; memory, queues and programs are not supported
// yet.
//
// The driver is loaded with purego.Dlopen by SONAME (libcuda.so.1, then
// libcuda.so), or from the path in OFFLOAD_CUDA_LIBRARY, once per process,
// and is never unloaded (see drivers in driver.go). Driver functions are
// called through cgo trampolines on their dlsym'd addresses.
package cuda

import (
	"fmt"
	"math"

	"github.com/liboffload-go/liboffload-go/impl/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

const (
	backendName = "cuda"
	// VendorName is the platform's and the devices' vendor.
	VendorName = "NVIDIA Corporation"
	// VendorID is NVIDIA's PCI vendor id.
	VendorID = 0x10de
)

// gpuFPConfig is what liboffload reports for single and double precision on
// every GPU: all capabilities except software emulation (127).
const gpuFPConfig = uint32(ol.DeviceFpCapabilityFlagCorrectlyRoundedDivideSqrt | ol.DeviceFpCapabilityFlagRoundToNearest |
	ol.DeviceFpCapabilityFlagRoundToZero | ol.DeviceFpCapabilityFlagRoundToInf | ol.DeviceFpCapabilityFlagInfNan |
	ol.DeviceFpCapabilityFlagDenorm | ol.DeviceFpCapabilityFlagFma)

// Plugin is the CUDA backend.
type Plugin struct{}

// New returns the CUDA plugin.
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

// Init implements plugin.Plugin. A missing library or symbol, and cuInit
// reporting CUDA_ERROR_NO_DEVICE or CUDA_ERROR_INVALID_HANDLE, leave the
// platform out without an error, as does a device count of 0. Any other
// driver failure is an error.
func (*Plugin) Init(env plugin.Env) (plugin.Platform, error) {
	d := loadDriver(libraryNames(env))
	if d.err != nil {
		return nil, d.err
	}
	if d.absent != "" {
		return nil, nil
	}
	n, err := d.deviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	p := &Platform{version: d.versionString()}
	for i := 0; i < n; i++ {
		info, err := d.deviceInfo(i, p.version)
		if err != nil {
			return nil, err
		}
		p.devices = append(p.devices, &Device{info: info})
	}
	return p, nil
}

// deviceInfo reads the properties of the device with the given ordinal.
func (d *driver) deviceInfo(ordinal int, version string) (*plugin.DeviceInfo, error) {
	dev, err := d.device(ordinal)
	if err != nil {
		return nil, err
	}
	name, err := d.deviceName(dev)
	if err != nil {
		return nil, err
	}
	mem, err := d.totalMem(dev)
	if err != nil {
		return nil, err
	}
	uuid, err := d.uuid(dev)
	if err != nil {
		return nil, err
	}
	attrs := []int{
		attrMaxThreadsPerBlock, attrMaxBlockDimX, attrMaxBlockDimY, attrMaxBlockDimZ,
		attrMaxGridDimX, attrMaxGridDimY, attrMaxGridDimZ, attrMultiprocessorCount,
		attrClockRate, attrMemoryClockRate, attrMaxSharedMemoryPerBlock,
	}
	a := make(map[int]uint64, len(attrs))
	for _, id := range attrs {
		v, err := d.attribute(dev, id)
		if err != nil {
			return nil, err
		}
		a[id] = uint64(max(v, 0))
	}
	block := [3]uint64{a[attrMaxBlockDimX], a[attrMaxBlockDimY], a[attrMaxBlockDimZ]}
	grid := [3]uint64{a[attrMaxGridDimX], a[attrMaxGridDimY], a[attrMaxGridDimZ]}
	return &plugin.DeviceInfo{
		Type:             ol.DeviceTypeGpu,
		Name:             name,
		ProductName:      name,
		UID:              formatUUID(uuid),
		Vendor:           VendorName,
		DriverVersion:    version,
		MaxWorkGroupSize: clampU32(a[attrMaxThreadsPerBlock]),
		MaxWorkGroupSizePerDim: ol.Dimensions{
			X: clampU32(block[0]), Y: clampU32(block[1]), Z: clampU32(block[2]),
		},
		// Work sizes count work items: the largest group times the most
		// groups along x (per dimension: that dimension's limits). CUDA's
		// limits exceed 32 bits; they are clamped to the u32 the API has.
		MaxWorkSize: clampU32(a[attrMaxThreadsPerBlock] * grid[0]),
		MaxWorkSizePerDim: ol.Dimensions{
			X: clampU32(block[0] * grid[0]), Y: clampU32(block[1] * grid[1]), Z: clampU32(block[2] * grid[2]),
		},
		VendorID:          VendorID,
		NumComputeUnits:   clampU32(a[attrMultiprocessorCount]),
		MaxClockMHz:       clampU32(a[attrClockRate] / 1000),
		MemoryClockMHz:    clampU32(a[attrMemoryClockRate] / 1000),
		AddressBits:       64,
		MaxMemAllocSize:   mem,
		GlobalMemSize:     mem,
		LocalMemSize:      a[attrMaxSharedMemoryPerBlock],
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
	}, nil
}

// formatUUID renders a device UUID the way nvidia-smi does:
// GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
func formatUUID(u [16]byte) string {
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

func clampU32(v uint64) uint32 {
	if v > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(v)
}

// Platform is the CUDA platform: the GPUs the driver reported.
type Platform struct {
	version string
	devices []plugin.Device
}

// Name implements plugin.Platform.
func (*Platform) Name() string { return "CUDA" }

// Vendor implements plugin.Platform.
func (*Platform) Vendor() string { return VendorName }

// Version implements plugin.Platform: the driver's CUDA version, e.g. "12.2".
func (p *Platform) Version() string { return p.version }

// Backend implements plugin.Platform.
func (*Platform) Backend() ol.PlatformBackend { return ol.PlatformBackendCuda }

// Devices implements plugin.Platform.
func (p *Platform) Devices() []plugin.Device { return p.devices }

// Deinit implements plugin.Platform. The platform holds no driver resources
// yet and starts no goroutine; the driver itself stays loaded and
// initialised for the process (see drivers in driver.go).
func (*Platform) Deinit() error { return nil }

// Device is one CUDA GPU.
type Device struct{ info *plugin.DeviceInfo }

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
