package amdgpu

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/internal/vendorlib"
)

// EnvLibrary names the environment variable that replaces the SONAME search
// with one exact library (a path or a name for dlopen). Tests point it at a
// driver double.
const EnvLibrary = "OFFLOAD_HSA_LIBRARY"

// sonames are tried in order when EnvLibrary is not set. The versioned
// name is what the runtime package installs; the unversioned link is only
// in the development package.
var sonames = []string{"libhsa-runtime64.so.1", "libhsa-runtime64.so"}

// hsa_status_t values the plugin uses.
const (
	hsaStatusSuccess = 0
	hsaStatusError   = 0x1000
)

// hsa_system_info_t, hsa_agent_info_t, hsa_amd_agent_info_t and
// hsa_amd_memory_pool_info_t values read for the device info.
const (
	systemInfoVersionMajor = 0 // uint16_t
	systemInfoVersionMinor = 1 // uint16_t

	agentInfoName             = 0      // char[64]
	agentInfoVendorName       = 1      // char[64]
	agentInfoWorkgroupMaxDim  = 7      // uint16_t[3]
	agentInfoWorkgroupMaxSize = 8      // uint32_t
	agentInfoGridMaxDim       = 9      // hsa_dim3_t (3 × uint32_t)
	agentInfoGridMaxSize      = 10     // uint32_t
	agentInfoDevice           = 17     // hsa_device_type_t
	amdAgentInfoComputeUnits  = 0xA002 // uint32_t
	amdAgentInfoMaxClock      = 0xA003 // uint32_t, MHz
	amdAgentInfoMemoryMaxFreq = 0xA008 // uint32_t, MHz
	amdAgentInfoProductName   = 0xA009 // char[64]
	amdAgentInfoUUID          = 0xA011 // char[21]

	deviceTypeGPU = 1 // HSA_DEVICE_TYPE_GPU

	poolInfoSegment     = 0 // hsa_amd_segment_t
	poolInfoGlobalFlags = 1 // uint32_t
	poolInfoSize        = 2 // size_t

	segmentGlobal = 0
	segmentGroup  = 3

	globalFlagCoarseGrained = 4
)

// entryPoints are the driver functions the plugin calls, as addresses
// returned by dlsym. They stay valid for the life of the process because
// the library is never closed.
type entryPoints struct {
	hsaInit                       uintptr
	hsaSystemGetInfo              uintptr
	hsaIterateAgents              uintptr
	hsaAgentGetInfo               uintptr
	hsaAmdAgentIterateMemoryPools uintptr
	hsaAmdMemoryPoolGetInfo       uintptr

	// Optional: only used to describe a status in messages.
	hsaStatusString uintptr
}

// required lists the symbols without which the platform is absent (as in
// LLVM, where any missing symbol makes the HSA loader fail hsa_init and the
// plugin report no devices). Later issues add the entry points for memory,
// queues, signals and executables here.
func (e *entryPoints) required() []vendorlib.Symbol {
	return []vendorlib.Symbol{
		{Name: "hsa_init", Addr: &e.hsaInit},
		{Name: "hsa_system_get_info", Addr: &e.hsaSystemGetInfo},
		{Name: "hsa_iterate_agents", Addr: &e.hsaIterateAgents},
		{Name: "hsa_agent_get_info", Addr: &e.hsaAgentGetInfo},
		{Name: "hsa_amd_agent_iterate_memory_pools", Addr: &e.hsaAmdAgentIterateMemoryPools},
		{Name: "hsa_amd_memory_pool_get_info", Addr: &e.hsaAmdMemoryPoolGetInfo},
	}
}

func (e *entryPoints) optional() []vendorlib.Symbol {
	return []vendorlib.Symbol{{Name: "hsa_status_string", Addr: &e.hsaStatusString}}
}

// driver is one vendor library as loaded and initialised by this process.
// Its fields are written once, by openDriver, and only read afterwards.
// The embedded Library holds the outcome: the library loaded, why the
// platform is absent, or the failure olInit reports.
type driver struct {
	vendorlib.Library
	fn entryPoints

	// initStatus is what hsa_init returned (-1 if it was never called).
	initStatus int64
	// version is the HSA specification version the runtime implements,
	// e.g. "1.1".
	version string
}

// drivers caches one driver per library request for the whole process.
//
// Why once, and why never dlclose: vendor runtimes keep process-wide state
// that does not survive an unload, and some crash or leak when loaded
// again. ROCr refuses to initialise (HSA_STATUS_ERROR_OUT_OF_RESOURCES)
// after its global destructors have run, its thunk libhsakmt is NODELETE
// and keeps KFD state across a reload, and strings it returns point into
// its read-only data. So a library is opened at most once per process,
// hsa_init runs at most once (its result, failure included, is cached),
// and neither hsa_shut_down nor dlclose is ever called: the runtime stays
// initialised until exit and olShutDown/olInit cycles reuse it.
//
// See vendorlib.Cache for the key.
//
// drivers.Load returns the process-wide driver for the given names, loading
// and initialising it (openDriver) on first use.
var drivers = vendorlib.NewCache(openDriver)

// openDriver dlopens the first loadable name, resolves the entry points and
// calls hsa_init once.
func openDriver(names []string) *driver {
	d := &driver{initStatus: -1}
	// A library with a missing symbol stays loaded too (see drivers).
	d.Library = vendorlib.Open("the HSA runtime", names, d.fn.required(), d.fn.optional())
	if d.Absent != "" {
		return d
	}

	st := uint32(C.lgo_hsa_init(C.uintptr_t(d.fn.hsaInit)))
	d.initStatus = int64(st)
	if st != hsaStatusSuccess {
		// Every hsa_init failure means "no usable AMD GPU" (without
		// /dev/kfd ROCr answers HSA_STATUS_ERROR_OUT_OF_RESOURCES).
		d.Absent = "hsa_init: " + d.describe(st)
		return d
	}

	var major, minor uint16
	if st := uint32(C.lgo_hsa_system_get_info(C.uintptr_t(d.fn.hsaSystemGetInfo),
		systemInfoVersionMajor, unsafe.Pointer(&major))); st != hsaStatusSuccess {
		d.Err = d.failure("hsa_system_get_info(VERSION_MAJOR)", st)
		return d
	}
	if st := uint32(C.lgo_hsa_system_get_info(C.uintptr_t(d.fn.hsaSystemGetInfo),
		systemInfoVersionMinor, unsafe.Pointer(&minor))); st != hsaStatusSuccess {
		d.Err = d.failure("hsa_system_get_info(VERSION_MINOR)", st)
		return d
	}
	d.version = fmt.Sprintf("%d.%d", major, minor)
	return d
}

// describe renders a status as "0x<code>" followed by the runtime's text
// when it has one.
func (d *driver) describe(st uint32) string {
	s := fmt.Sprintf("%#x", st)
	if d.fn.hsaStatusString == 0 {
		return s
	}
	var p *C.char
	if C.lgo_hsa_status_string(C.uintptr_t(d.fn.hsaStatusString), C.uint32_t(st), &p) == hsaStatusSuccess && p != nil {
		s += " " + C.GoString(p)
	}
	return s
}

// failure is the error for a failed driver call after hsa_init.
func (d *driver) failure(call string, st uint32) error {
	return ol.Errorf(ol.ErrcBackendFailure, "%s failed: %s", call, d.describe(st))
}

// agents returns every agent the runtime knows (CPUs included).
func (d *driver) agents() ([]uint64, error) {
	fn := C.uintptr_t(d.fn.hsaIterateAgents)
	hs, st := iterate(func(data C.uintptr_t) C.uint32_t { return C.lgo_hsa_iterate_agents(fn, data) })
	if st != hsaStatusSuccess {
		return nil, d.failure("hsa_iterate_agents", st)
	}
	return hs, nil
}

// pools returns the memory pools of an agent.
func (d *driver) pools(agent uint64) ([]uint64, error) {
	fn := C.uintptr_t(d.fn.hsaAmdAgentIterateMemoryPools)
	hs, st := iterate(func(data C.uintptr_t) C.uint32_t {
		return C.lgo_hsa_amd_agent_iterate_memory_pools(fn, C.uint64_t(agent), data)
	})
	if st != hsaStatusSuccess {
		return nil, d.failure("hsa_amd_agent_iterate_memory_pools", st)
	}
	return hs, nil
}

// agentInfo reads one agent attribute into value, which must be at least
// as large as the attribute's type.
func (d *driver) agentInfo(agent uint64, attr uint32, value unsafe.Pointer) error {
	st := uint32(C.lgo_hsa_agent_get_info(C.uintptr_t(d.fn.hsaAgentGetInfo), C.uint64_t(agent), C.uint32_t(attr), value))
	if st != hsaStatusSuccess {
		return d.failure(fmt.Sprintf("hsa_agent_get_info(%#x)", attr), st)
	}
	return nil
}

func (d *driver) agentU32(agent uint64, attr uint32) (uint32, error) {
	var v uint32
	err := d.agentInfo(agent, attr, unsafe.Pointer(&v))
	return v, err
}

// agentString reads a char[64] (or shorter) attribute.
func (d *driver) agentString(agent uint64, attr uint32) (string, error) {
	// Twice the largest documented size, zeroed so a missing NUL is safe.
	var buf [128]byte
	if err := d.agentInfo(agent, attr, unsafe.Pointer(&buf[0])); err != nil {
		return "", err
	}
	return vendorlib.CString(buf[:]), nil
}

func (d *driver) poolInfo(pool uint64, attr uint32, value unsafe.Pointer) error {
	st := uint32(C.lgo_hsa_amd_memory_pool_get_info(C.uintptr_t(d.fn.hsaAmdMemoryPoolGetInfo), C.uint64_t(pool), C.uint32_t(attr), value))
	if st != hsaStatusSuccess {
		return d.failure(fmt.Sprintf("hsa_amd_memory_pool_get_info(%d)", attr), st)
	}
	return nil
}

// memorySizes returns the size of the agent's device memory (its largest
// coarse-grained global pool, else its largest global pool) and of its
// group segment (memory local to a work group).
func (d *driver) memorySizes(agent uint64) (global, group uint64, err error) {
	pools, err := d.pools(agent)
	if err != nil {
		return 0, 0, err
	}
	var coarse, anyGlobal uint64
	for _, p := range pools {
		var segment, flags uint32
		var size uint64 // size_t
		if err := d.poolInfo(p, poolInfoSegment, unsafe.Pointer(&segment)); err != nil {
			return 0, 0, err
		}
		if err := d.poolInfo(p, poolInfoSize, unsafe.Pointer(&size)); err != nil {
			return 0, 0, err
		}
		switch segment {
		case segmentGlobal:
			if err := d.poolInfo(p, poolInfoGlobalFlags, unsafe.Pointer(&flags)); err != nil {
				return 0, 0, err
			}
			anyGlobal = max(anyGlobal, size)
			if flags&globalFlagCoarseGrained != 0 {
				coarse = max(coarse, size)
			}
		case segmentGroup:
			group = max(group, size)
		}
	}
	if coarse != 0 {
		return coarse, group, nil
	}
	return anyGlobal, group, nil
}
