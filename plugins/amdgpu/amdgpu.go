// Package amdgpu is the backend for AMD GPUs through ROCr, the HSA runtime
// (libhsa-runtime64): it loads the runtime, initialises it, describes each
// GPU agent, and runs memory, queues (HSA queues with AQL packets), events
// (signals), host functions, programs (code objects in executables) and
// kernels on it.
//
// The runtime is loaded with purego.Dlopen by SONAME
// (libhsa-runtime64.so.1, then libhsa-runtime64.so), or from the path in
// OFFLOAD_HSA_LIBRARY, once per process, and is never unloaded (see drivers
// in driver.go); each Init calls hsa_init and each Deinit hsa_shut_down.
// Runtime functions are called through cgo trampolines (shim.c) on their
// dlsym'd addresses; the iteration callbacks, the signal handler and the
// queue error callback are cgo exports.
package amdgpu

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/cmem"
	"github.com/liboffload-go/liboffload-go/plugins/image"
	"github.com/liboffload-go/liboffload-go/plugins/internal/gpu"
	"github.com/liboffload-go/liboffload-go/plugins/internal/pinned"
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

// Init implements plugin.Plugin: hsa_init (every time: the runtime counts
// its initialisations), then the agents. A missing library or symbol, any
// hsa_init failure, and a runtime without GPU agents leave the platform out
// without an error. A runtime failure after hsa_init succeeded is an error
// (and the runtime is shut down again).
func (pl *Plugin) Init(env plugin.Env) (plugin.Platform, error) {
	names := pl.LibraryNames(env)
	d := drivers.Load(names)
	pl.SetAbsent("")
	if unusable, err := d.Unusable(); unusable {
		pl.SetAbsent(d.Absent)
		return nil, err
	}
	if why := d.init(slices.Equal(names, sonames)); why != "" {
		pl.SetAbsent(why)
		return nil, nil
	}
	p, err := pl.newPlatform(d)
	if err != nil || p == nil {
		if serr := d.shutDown(); err == nil && serr != nil {
			err = serr
		}
		if err == nil {
			pl.SetAbsent("the HSA runtime reports no GPU agent")
		}
		return nil, err
	}
	return p, nil
}

// newPlatform describes the agents of an initialised runtime; nil without
// a GPU agent.
func (pl *Plugin) newPlatform(d *driver) (*Platform, error) {
	version, err := d.version()
	if err != nil {
		return nil, err
	}
	agents, err := d.agents()
	if err != nil {
		return nil, err
	}
	p := &Platform{Platform: pl.NewPlatform(version), drv: d, run: d.run, freq: d.timestampFrequency()}
	var cpus []uint64
	for _, a := range agents {
		var kind uint32 // hsa_device_type_t
		if err := d.agentInfo(a, agentInfoDevice, unsafe.Pointer(&kind)); err != nil {
			return nil, err
		}
		switch kind {
		case deviceTypeGPU:
			p.gpus = append(p.gpus, a)
		case deviceTypeCPU:
			cpus = append(cpus, a)
		}
	}
	if len(p.gpus) == 0 {
		return nil, nil
	}
	if len(cpus) > 0 {
		p.cpu = cpus[0]
	}
	// Host memory and kernel arguments come from the CPU agents'
	// fine-grained pools (the GPUs' own fine-grained pools if the runtime
	// has none there). The GPUs' pools are kept for newDevice.
	gpuPools := make([][]poolDesc, 0, len(p.gpus))
	for i, a := range append(cpus, p.gpus...) {
		pools, err := d.describePools(a)
		if err != nil {
			return nil, err
		}
		if i >= len(cpus) {
			gpuPools = append(gpuPools, pools)
		}
		for _, pd := range pools {
			if pd.segment != segmentGlobal || pd.flags&globalFlagFineGrained == 0 {
				continue
			}
			if p.hostPool == 0 {
				p.hostPool = pd.handle
			}
			if p.kernargPool == 0 && pd.flags&globalFlagKernargInit != 0 {
				p.kernargPool = pd.handle
			}
		}
	}
	if p.kernargPool == 0 {
		p.kernargPool = p.hostPool
	}
	// every GPU agent, in C memory for hsa_amd_agents_allow_access and
	// hsa_amd_memory_lock
	agentsMem, err := cmem.Malloc(uint64(8*len(p.gpus)), "amdgpu: the list of GPU agents")
	if err != nil {
		return nil, err
	}
	p.agentsC = (*C.uint64_t)(agentsMem)
	copy(unsafe.Slice((*uint64)(unsafe.Pointer(p.agentsC)), len(p.gpus)), p.gpus)
	p.signals.p = p
	p.kernargs.p = p
	p.workers.init()
	for i, a := range p.gpus {
		dev, err := p.newDevice(pl, a, i, gpuPools[i])
		if err != nil {
			_ = p.release()
			return nil, err
		}
		p.AddDevice(dev)
		p.devices = append(p.devices, dev)
	}
	return p, nil
}

// newDevice describes a GPU agent; pools are its memory pools, as read by
// newPlatform.
func (p *Platform) newDevice(pl *Plugin, agent uint64, ordinal int, pools []poolDesc) (*Device, error) {
	d := p.drv
	info, err := d.deviceInfo(agent, p.Version())
	if err != nil {
		return nil, err
	}
	global, group, devPool := memorySizes(pools)
	info.GlobalMemSize, info.MaxMemAllocSize, info.WorkGroupLocalMemSize = plugin.Some(global), plugin.Some(global), plugin.Some(group)
	// a grid that fits on the GPU at once (MaxCooperativeGroups) has every
	// group resident, so ol_grid_barrier() works
	info.CooperativeLaunchSupport = plugin.Some(true)
	dev := &Device{
		Unsupported: pl.Unsupported(), Images: gpu.Images{Target: image.AMDGPUTarget(info.Name.V)},
		p: p, agent: agent, ordinal: ordinal, info: info, devPool: devPool,
	}
	dev.queueSize = defaultQueueSize
	var qmax uint32
	if err := d.agentInfo(agent, agentInfoQueueMaxSize, unsafe.Pointer(&qmax)); err == nil && qmax != 0 && qmax < dev.queueSize {
		dev.queueSize = qmax
	}
	var profile uint32 = 1 // HSA_PROFILE_FULL unless the agent says
	_ = d.agentInfo(agent, agentInfoProfile, unsafe.Pointer(&profile))
	dev.profile = profile
	// the other GPUs that must be allowed to reach this one's memory, in C
	// memory for hsa_amd_agents_allow_access (freed by release)
	var peers []uint64
	for _, other := range p.gpus {
		if other == agent || devPool == 0 {
			continue
		}
		var access C.uint32_t
		if C.lgo_hsa_agent_pool_access(p.run, C.uint64_t(other), C.uint64_t(devPool), &access) == hsaStatusSuccess &&
			access == poolAccessDisallowedByDefault {
			peers = append(peers, other)
		}
	}
	if len(peers) > 0 {
		mem, err := cmem.Malloc(uint64(8*len(peers)), "amdgpu: the list of a GPU's peers")
		if err != nil {
			return nil, err
		}
		dev.peers = (*C.uint64_t)(mem)
		copy(unsafe.Slice((*uint64)(unsafe.Pointer(dev.peers)), len(peers)), peers)
		dev.nPeers = len(peers)
	}
	// nil (out of memory): the device is not pooled
	dev.fast = C.lgo_hsa_fastalloc_new(p.run, C.uint64_t(devPool), dev.peers, C.uint32_t(dev.nPeers),
		C.uint64_t(p.hostPool), p.agentsC, C.uint32_t(len(p.gpus)))
	return dev, nil
}

// deviceInfo reads the properties of a GPU agent (its memory sizes come
// from its pools, see newDevice).
func (d *driver) deviceInfo(agent uint64, version string) (*plugin.DeviceInfo, error) {
	info := gpu.NewDeviceInfo(VendorID, version)
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
	return info, nil
}

// Platform is the AMDGPU platform: the GPU agents of the runtime. Its
// version is the HSA version of the runtime, e.g. "1.1". For one
// initialisation of the runtime it holds the devices' HSA queues, the
// signals, the kernel-argument buffers and the library threads that run
// host functions; Deinit releases them all and shuts the runtime down.
type Platform struct {
	gpu.Platform
	drv     *driver
	run     *C.lgo_hsa_fns
	devices []*Device
	gpus    []uint64    // every GPU agent
	agentsC *C.uint64_t // gpus, in C memory
	// hostPool serves HOST and MANAGED memory (fine-grained system
	// memory); kernargPool kernel arguments.
	hostPool, kernargPool uint64
	freq                  uint64 // timestamp frequency: the unit of wait timeouts
	cpu                   uint64 // the first CPU agent (0: none): where prefetches toward the host go

	signals  signalPool
	kernargs kernargPool
	workers  workers
	unloads  sync.WaitGroup // programs unloading once their launches are done
	tlocks   tempLocks

	deinitOnce sync.Once
	deinitErr  error
}

var (
	_ plugin.Device           = (*Device)(nil)
	_ plugin.ImageDevice      = (*Device)(nil)
	_ plugin.PointerDevice    = (*Device)(nil)
	_ plugin.CallbackPlatform = (*Platform)(nil)
)

// InCallback implements plugin.CallbackPlatform: whether the calling
// thread runs a host function of an AMDGPU queue.
func (p *Platform) InCallback() bool { return C.lgo_hsa_running_queue() != 0 }

// Drain implements plugin.Platform: waits for the work of every released
// queue (bounded, see drainTimeout), host functions and waits for other
// queues' signals included.
func (p *Platform) Drain() error {
	var errs []error
	for _, d := range p.devices {
		errs = append(errs, d.drain())
	}
	return errors.Join(errs...)
}

// Deinit implements plugin.Platform: waits for the queues' work (bounded,
// see drainTimeout), releases queues, signals and buffers, stops the host
// function threads and shuts the runtime down. Failures are joined; the
// runtime is shut down anyway.
func (p *Platform) Deinit() error {
	p.deinitOnce.Do(func() {
		err := p.release()
		if serr := p.drv.shutDown(); serr != nil {
			err = errors.Join(err, serr)
		}
		p.deinitErr = err
	})
	return p.deinitErr
}

// release gives back everything the platform holds, except the runtime's
// initialisation.
func (p *Platform) release() error {
	var errs []error
	p.unloads.Wait()
	for _, d := range p.devices {
		errs = append(errs, d.releaseQueues())
	}
	p.workers.stop()
	for _, d := range p.devices {
		errs = append(errs, d.unlockAll())
	}
	errs = append(errs, p.tlocks.releaseAll(p), p.kernargs.release(), p.signals.release())
	if p.agentsC != nil {
		cmem.Free(unsafe.Pointer(p.agentsC))
		p.agentsC = nil
	}
	for _, d := range p.devices {
		// the runtime has given back its pool's slabs before Deinit
		C.lgo_hsa_fastalloc_free(d.fast)
		d.fast = nil
		if d.peers != nil {
			cmem.Free(unsafe.Pointer(d.peers))
			d.peers, d.nPeers = nil, 0
		}
	}
	return errors.Join(errs...)
}

// Device is one AMD GPU agent. Which images it loads (code objects for its
// gfx processor, the agent's name) comes from gpu.Images.
type Device struct {
	gpu.Unsupported
	gpu.Images
	p       *Platform
	agent   uint64 // hsa_agent_t handle
	ordinal int
	info    *plugin.DeviceInfo
	profile uint32 // hsa_profile_t of the agent

	devPool uint64 // coarse-grained device memory
	// peers are the nPeers GPU agents to allow to reach this one's memory,
	// in C memory (nil: none).
	peers  *C.uint64_t
	nPeers int

	pinned pinned.Ranges[lockedRange] // registered ranges and their agent addresses
	fast   *C.ol_fastalloc            // the runtime pool's slabs (FastAlloc); nil: none

	queues    hwQueues
	queueSize uint32
}

// Info implements plugin.Device.
func (d *Device) Info() *plugin.DeviceInfo { return d.info }

// IsHost implements plugin.Device.
func (*Device) IsHost() bool { return false }

// name is how messages name the device: "gfx90a (device 0)".
func (d *Device) name() string { return fmt.Sprintf("%s (device %d)", d.info.Name.V, d.ordinal) }

// call turns a status into an error naming the call.
func (d *Device) call(what string, st C.uint32_t) error { return d.p.drv.check(what, st) }
