// Package cuda is the backend for NVIDIA GPUs through the CUDA driver API
// (libcuda): it loads the driver, initialises it, describes each GPU, and
// runs memory, queues, events, host functions, programs and kernels on it.
//
// The driver is loaded with purego.Dlopen by SONAME (libcuda.so.1, then
// libcuda.so), or from the path in OFFLOAD_CUDA_LIBRARY, once per process,
// and is never unloaded (see drivers in driver.go). Driver functions are
// called through cgo trampolines on their dlsym'd addresses.
package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/image"
	"github.com/liboffload-go/liboffload-go/plugins/internal/gpu"
	"github.com/liboffload-go/liboffload-go/plugins/internal/pinned"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

const (
	backendName = "cuda"
	// VendorName is the platform's vendor; DeviceVendor the devices', as
	// LLVM 22.1's CUDA plugin names it.
	VendorName   = "NVIDIA Corporation"
	DeviceVendor = "NVIDIA"
	// VendorID is NVIDIA's PCI vendor id.
	VendorID = 0x10de
)

// Plugin is the CUDA backend. Its name and library search come from
// gpu.Backend.
type Plugin struct{ gpu.Backend }

// New returns the CUDA plugin.
func New() *Plugin {
	return &Plugin{gpu.Backend{
		ID: backendName, EnvLibrary: EnvLibrary, Sonames: sonames,
		Platform: gpu.PlatformKind{Name: "CUDA", Vendor: VendorName, Backend: ol.PlatformBackendCuda},
	}}
}

// Init implements plugin.Plugin. A missing library or symbol, and cuInit
// reporting CUDA_ERROR_NO_DEVICE or CUDA_ERROR_INVALID_HANDLE, leave the
// platform out without an error, as does a device count of 0. Any other
// driver failure is an error.
func (pl *Plugin) Init(env plugin.Env) (plugin.Platform, error) {
	d := drivers.Load(pl.LibraryNames(env))
	pl.SetAbsent("")
	if unusable, err := d.Unusable(); unusable {
		pl.SetAbsent(d.Absent)
		return nil, err
	}
	n, err := d.deviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		pl.SetAbsent("the CUDA driver reports no device")
		return nil, nil
	}
	p := &Platform{Platform: pl.NewPlatform(d.versionString())}
	for i := 0; i < n; i++ {
		info, err := d.deviceInfo(i, strconv.Itoa(int(d.version)))
		if err != nil {
			_ = p.Deinit()
			return nil, err
		}
		major, minor, err := d.computeCapability(i)
		if err != nil {
			_ = p.Deinit()
			return nil, err
		}
		dev := &Device{
			Unsupported: pl.Unsupported(), Images: gpu.Images{Target: image.CUDATarget(major, minor)}, info: info,
			drv: d, ordinal: int32(i),
		}
		if err := d.launchLimits(dev); err != nil {
			_ = p.Deinit()
			return nil, err
		}
		// the device's primary context, held for this initialisation
		var ctx C.uintptr_t
		if r := int32(C.lgo_cu_primary_ctx_retain(C.uintptr_t(d.fn.cuDevicePrimaryCtxRetain), &ctx, C.int(i))); r != cudaSuccess {
			_ = p.Deinit()
			return nil, d.failure(fmt.Sprintf("cuDevicePrimaryCtxRetain(%d)", i), r)
		}
		dev.ctx = ctx
		dev.fast = C.lgo_cu_fastalloc_new(d.run, ctx) // nil (out of memory): the device is not pooled
		p.AddDevice(dev)
		p.devices = append(p.devices, dev)
	}
	p.enablePeers()
	return p, nil
}

// enablePeers lets every GPU reach every other one's memory directly where
// the hardware allows (peer copies and kernels then skip the driver's
// staging); a pair that cannot, or whose enabling fails, keeps the staged
// path. What this initialisation enabled, Deinit disables.
func (p *Platform) enablePeers() {
	for _, a := range p.devices {
		for _, b := range p.devices {
			if a == b {
				continue
			}
			var done C.int
			d := a.drv
			if C.lgo_cu_peer(d.run, C.uintptr_t(d.fn.cuDeviceCanAccessPeer), C.uintptr_t(d.fn.cuCtxEnablePeerAccess),
				a.ctx, C.int(a.ordinal), b.ctx, C.int(b.ordinal), 1, &done) == cudaSuccess && done != 0 {
				p.peers = append(p.peers, [2]*Device{a, b})
			}
		}
	}
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
	info := gpu.NewDeviceInfo(VendorID, version)
	info.Name, info.ProductName = plugin.Some(name), plugin.Some(name)
	info.Uid = plugin.Some(formatUUID(uuid))
	info.Vendor = plugin.Some(DeviceVendor)
	info.MaxWorkGroupSize = plugin.Some(clampU32(a[attrMaxThreadsPerBlock]))
	info.MaxWorkGroupSizePerDimension = plugin.Some(ol.Dimensions{
		X: clampU32(block[0]), Y: clampU32(block[1]), Z: clampU32(block[2]),
	})
	// MAX_WORK_SIZE counts work items: the largest group times the most
	// groups along x, clamped to the u32 the API has. Per dimension it is
	// the grid's limits in blocks, as LLVM 22.1's CUDA plugin reports them
	// (2147483647, 65535, 65535 on an H200), since a CUDA grid is bounded
	// in blocks only.
	info.MaxWorkSize = plugin.Some(clampU32(a[attrMaxThreadsPerBlock] * grid[0]))
	info.MaxWorkSizePerDimension = plugin.Some(ol.Dimensions{
		X: clampU32(grid[0]), Y: clampU32(grid[1]), Z: clampU32(grid[2]),
	})
	info.NumComputeUnits = plugin.Some(clampU32(a[attrMultiprocessorCount]))
	info.MaxClockFrequency = plugin.Some(clampU32(a[attrClockRate] / 1000))
	info.MemoryClockRate = plugin.Some(clampU32(a[attrMemoryClockRate] / 1000))
	info.MaxMemAllocSize, info.GlobalMemSize = plugin.Some(mem), plugin.Some(mem)
	info.WorkGroupLocalMemSize = plugin.Some(a[attrMaxSharedMemoryPerBlock])
	return info, nil
}

// launchLimits reads the block and grid limits a launch is checked
// against, and the shared memory a function may opt in to (0 when the
// driver does not say).
func (d *driver) launchLimits(dev *Device) error {
	cu, err := d.device(int(dev.ordinal))
	if err != nil {
		return err
	}
	for i, a := range []int{attrMaxBlockDimX, attrMaxBlockDimY, attrMaxBlockDimZ, attrMaxGridDimX, attrMaxGridDimY, attrMaxGridDimZ} {
		v, err := d.attribute(cu, a)
		if err != nil {
			return err
		}
		if i < 3 {
			dev.blockMax[i] = uint32(max(v, 0))
		} else {
			dev.gridMax[i-3] = uint32(max(v, 0))
		}
	}
	if v, err := d.attribute(cu, attrMaxSharedMemoryPerBlockOptin); err == nil {
		dev.sharedOptIn = uint64(max(v, 0))
	}
	// cooperative launches: the GPU runs them (CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)
	// and the driver has the entry points for them
	coop := false
	if v, err := d.attribute(cu, attrCooperativeLaunch); err == nil {
		coop = v != 0 && d.fn.run.launch_coop != 0 && d.fn.run.occupancy_active_blocks != 0
	}
	dev.info.CooperativeLaunchSupport = plugin.Some(coop)
	if v, err := d.attribute(cu, attrMultiprocessorCount); err == nil {
		dev.sms = uint32(max(v, 0))
	}
	return nil
}

// computeCapability reads the compute capability of the device with the
// given ordinal (8, 0 for sm_80): which PTX and cubins it loads.
func (d *driver) computeCapability(ordinal int) (major, minor int, err error) {
	dev, err := d.device(ordinal)
	if err != nil {
		return 0, 0, err
	}
	maj, err := d.attribute(dev, attrComputeCapabilityMajor)
	if err != nil {
		return 0, 0, err
	}
	min, err := d.attribute(dev, attrComputeCapabilityMinor)
	if err != nil {
		return 0, 0, err
	}
	return int(maj), int(min), nil
}

// formatUUID renders a device UUID as LLVM 22.1's CUDA plugin does:
// "CUDA-" and the 16 bytes as 32 lower-case hex digits.
func formatUUID(u [16]byte) string {
	return fmt.Sprintf("CUDA-%x", u[:])
}

func clampU32(v uint64) uint32 {
	if v > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(v)
}

// Platform is the CUDA platform: the GPUs the driver reported. Its version
// is the driver's CUDA version, e.g. "12.2". For one initialisation it
// holds each device's primary context and the device's streams and events;
// the driver itself stays loaded and initialised for the process (see
// drivers in driver.go).
type Platform struct {
	gpu.Platform
	devices []*Device
	peers   [][2]*Device // peer access this initialisation enabled (from, to)
}

// InCallback implements plugin.CallbackPlatform: whether the calling
// thread runs a host function of a CUDA queue.
func (p *Platform) InCallback() bool { return C.lgo_cu_running_queue() != 0 }

// Drain implements plugin.Platform: waits for the work of every released
// queue of every device. Queues of one device may wait for another's
// events; each waits on its own, so the order does not matter.
func (p *Platform) Drain() error {
	var first error
	for _, d := range p.devices {
		if d.ctx == 0 {
			continue
		}
		if err := d.drain(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Deinit implements plugin.Platform: waits for every stream, destroys the
// streams and events, unregisters the host ranges still registered and
// releases the primary contexts. Failures are
// joined; every context is released anyway.
func (p *Platform) Deinit() error {
	var first error
	for _, pr := range p.peers {
		a, b := pr[0], pr[1]
		var done C.int
		if r := int32(C.lgo_cu_peer(a.drv.run, 0, C.uintptr_t(a.drv.fn.cuCtxDisablePeerAccess), a.ctx, C.int(a.ordinal),
			b.ctx, C.int(b.ordinal), 0, &done)); r != cudaSuccess && first == nil {
			first = a.drv.failure(fmt.Sprintf("cuCtxDisablePeerAccess(%d → %d)", a.ordinal, b.ordinal), r)
		}
	}
	p.peers = nil
	for _, d := range p.devices {
		d.unloads.Wait()
		if err := d.releaseStreams(); err != nil && first == nil {
			first = err
		}
		// after the streams: no copy still reads a range being unlocked
		if err := d.unregisterAll(); err != nil && first == nil {
			first = err
		}
		// the runtime has given back its pool's slabs before Deinit
		C.lgo_cu_fastalloc_free(d.fast)
		d.fast = nil
		if d.ctx == 0 {
			continue
		}
		if r := int32(C.lgo_cu_primary_ctx_release(C.uintptr_t(d.drv.fn.cuDevicePrimaryCtxRelease), C.int(d.ordinal))); r != cudaSuccess && first == nil {
			first = d.drv.failure(fmt.Sprintf("cuDevicePrimaryCtxRelease(%d)", d.ordinal), r)
		}
		d.ctx = 0
	}
	return first
}

// Device is one CUDA GPU. The operations it does not support yet come
// from gpu.Unsupported; which images it loads (PTX, cubins for its compute
// capability, fatbins) from gpu.Images.
type Device struct {
	gpu.Unsupported
	gpu.Images
	info *plugin.DeviceInfo

	drv     *driver
	ordinal int32
	ctx     C.uintptr_t         // the primary context, retained for this initialisation
	pinned  pinned.Ranges[bool] // registered ranges: whether the plugin page-locked each
	fast    *C.ol_fastalloc     // the runtime pool's slabs (FastAlloc); nil: none
	streams streams
	unloads sync.WaitGroup // programs unloading once their launches are done

	blockMax, gridMax [3]uint32
	sharedOptIn       uint64 // shared memory a block may have when a function opts in
	sms               uint32 // multiprocessors
}

var (
	_ plugin.Device           = (*Device)(nil)
	_ plugin.ImageDevice      = (*Device)(nil)
	_ plugin.PointerDevice    = (*Device)(nil)
	_ plugin.CallbackPlatform = (*Platform)(nil)
)

// Info implements plugin.Device.
func (d *Device) Info() *plugin.DeviceInfo { return d.info }

// IsHost implements plugin.Device.
func (*Device) IsHost() bool { return false }
