package amdgpu

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/cmem"
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

// statusNames name the hsa_status_t values (hsa.h) for messages when the
// runtime cannot describe one itself.
var statusNames = map[uint32]string{
	0x0: "HSA_STATUS_SUCCESS", 0x1: "HSA_STATUS_INFO_BREAK",
	0x1000: "HSA_STATUS_ERROR", 0x1001: "HSA_STATUS_ERROR_INVALID_ARGUMENT",
	0x1002: "HSA_STATUS_ERROR_INVALID_QUEUE_CREATION", 0x1003: "HSA_STATUS_ERROR_INVALID_ALLOCATION",
	0x1004: "HSA_STATUS_ERROR_INVALID_AGENT", 0x1005: "HSA_STATUS_ERROR_INVALID_REGION",
	0x1006: "HSA_STATUS_ERROR_INVALID_SIGNAL", 0x1007: "HSA_STATUS_ERROR_INVALID_QUEUE",
	0x1008: "HSA_STATUS_ERROR_OUT_OF_RESOURCES", 0x1009: "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT",
	0x100A: "HSA_STATUS_ERROR_RESOURCE_FREE", 0x100B: "HSA_STATUS_ERROR_NOT_INITIALIZED",
	0x100C: "HSA_STATUS_ERROR_REFCOUNT_OVERFLOW", 0x100D: "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS",
	0x100E: "HSA_STATUS_ERROR_INVALID_INDEX", 0x100F: "HSA_STATUS_ERROR_INVALID_ISA",
	0x1010: "HSA_STATUS_ERROR_INVALID_CODE_OBJECT", 0x1011: "HSA_STATUS_ERROR_INVALID_EXECUTABLE",
	0x1012: "HSA_STATUS_ERROR_FROZEN_EXECUTABLE", 0x1013: "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME",
	0x1014: "HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED", 0x1015: "HSA_STATUS_ERROR_VARIABLE_UNDEFINED",
	0x1016: "HSA_STATUS_ERROR_EXCEPTION", 0x1017: "HSA_STATUS_ERROR_INVALID_ISA_NAME",
	0x1018: "HSA_STATUS_ERROR_INVALID_CODE_SYMBOL", 0x1019: "HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL",
	0x1020: "HSA_STATUS_ERROR_INVALID_FILE", 0x1021: "HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER",
	0x1022: "HSA_STATUS_ERROR_INVALID_CACHE", 0x1023: "HSA_STATUS_ERROR_INVALID_WAVEFRONT",
	0x1024: "HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP", 0x1025: "HSA_STATUS_ERROR_INVALID_RUNTIME_STATE",
	0x1026: "HSA_STATUS_ERROR_FATAL",
}

// errcOf maps an hsa_status_t to the error code the API reports for it:
// bad arguments, exhausted resources and unusable code objects have codes
// of their own; any other failure is the runtime's (BACKEND_FAILURE).
func errcOf(st uint32) ol.Errc {
	switch st {
	case 0x1001, 0x1003, 0x1006, 0x100D, 0x100E: // invalid argument, allocation, signal; incompatible arguments; index
		return ol.ErrcInvalidArgument
	case 0x1004: // invalid agent
		return ol.ErrcInvalidDevice
	case 0x1002, 0x1008, 0x100C: // queue creation, out of resources, refcount overflow
		return ol.ErrcOutOfResources
	case 0x100F, 0x1010, 0x1014, 0x1015, 0x1017, 0x1018, 0x1020, 0x1021: // ISA, code object, variables, reader
		return ol.ErrcInvalidBinary
	case 0x1013: // invalid symbol name
		return ol.ErrcNotFound
	case 0x100B: // not initialised
		return ol.ErrcUninitialized
	}
	return ol.ErrcBackendFailure
}

// hsa_system_info_t, hsa_agent_info_t, hsa_amd_agent_info_t and
// hsa_amd_memory_pool_info_t values read for the device info.
const (
	systemInfoVersionMajor       = 0 // uint16_t
	systemInfoVersionMinor       = 1 // uint16_t
	systemInfoTimestampFrequency = 3 // uint64_t, Hz

	agentInfoName             = 0      // char[64]
	agentInfoVendorName       = 1      // char[64]
	agentInfoProfile          = 4      // hsa_profile_t
	agentInfoWorkgroupMaxDim  = 7      // uint16_t[3]
	agentInfoWorkgroupMaxSize = 8      // uint32_t
	agentInfoGridMaxDim       = 9      // hsa_dim3_t (3 × uint32_t)
	agentInfoGridMaxSize      = 10     // uint32_t
	agentInfoQueueMaxSize     = 14     // uint32_t
	agentInfoDevice           = 17     // hsa_device_type_t
	amdAgentInfoComputeUnits  = 0xA002 // uint32_t
	amdAgentInfoMaxClock      = 0xA003 // uint32_t, MHz
	amdAgentInfoMemoryMaxFreq = 0xA008 // uint32_t, MHz
	amdAgentInfoProductName   = 0xA009 // char[64]
	amdAgentInfoUUID          = 0xA011 // char[21]

	deviceTypeCPU = 0 // HSA_DEVICE_TYPE_CPU
	deviceTypeGPU = 1 // HSA_DEVICE_TYPE_GPU

	poolInfoSegment     = 0 // hsa_amd_segment_t
	poolInfoGlobalFlags = 1 // uint32_t
	poolInfoSize        = 2 // size_t

	segmentGlobal = 0
	segmentGroup  = 3

	globalFlagKernargInit   = 1
	globalFlagFineGrained   = 2
	globalFlagCoarseGrained = 4

	// hsa_amd_memory_pool_access_t
	poolAccessDisallowedByDefault = 2
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
	run                           C.lgo_hsa_fns

	// Optional: only used to describe a status in messages.
	hsaStatusString uintptr
}

// required lists the symbols without which the platform is absent (as in
// LLVM, where any missing symbol makes the HSA loader fail hsa_init and the
// plugin report no devices).
func (e *entryPoints) required() []vendorlib.Symbol {
	r := &e.run
	return []vendorlib.Symbol{
		{Name: "hsa_init", Addr: &e.hsaInit},
		{Name: "hsa_shut_down", Addr: addr(&r.shut_down)},
		{Name: "hsa_system_get_info", Addr: &e.hsaSystemGetInfo},
		{Name: "hsa_iterate_agents", Addr: &e.hsaIterateAgents},
		{Name: "hsa_agent_get_info", Addr: &e.hsaAgentGetInfo},
		{Name: "hsa_amd_agent_iterate_memory_pools", Addr: &e.hsaAmdAgentIterateMemoryPools},
		{Name: "hsa_amd_memory_pool_get_info", Addr: &e.hsaAmdMemoryPoolGetInfo},
		{Name: "hsa_amd_agent_memory_pool_get_info", Addr: addr(&r.agent_memory_pool_get_info)},
		{Name: "hsa_amd_memory_pool_allocate", Addr: addr(&r.pool_allocate)},
		{Name: "hsa_amd_memory_pool_free", Addr: addr(&r.pool_free)},
		{Name: "hsa_amd_agents_allow_access", Addr: addr(&r.allow_access)},
		{Name: "hsa_amd_memory_async_copy", Addr: addr(&r.async_copy)},
		{Name: "hsa_amd_memory_fill", Addr: addr(&r.fill)},
		{Name: "hsa_amd_memory_lock", Addr: addr(&r.lock)},
		{Name: "hsa_amd_memory_unlock", Addr: addr(&r.unlock)},
		{Name: "hsa_amd_pointer_info", Addr: addr(&r.pointer_info)},
		{Name: "hsa_signal_create", Addr: addr(&r.signal_create)},
		{Name: "hsa_signal_destroy", Addr: addr(&r.signal_destroy)},
		{Name: "hsa_signal_load_scacquire", Addr: addr(&r.signal_load)},
		{Name: "hsa_signal_store_screlease", Addr: addr(&r.signal_store_screlease)},
		{Name: "hsa_signal_wait_scacquire", Addr: addr(&r.signal_wait)},
		{Name: "hsa_amd_signal_async_handler", Addr: addr(&r.async_handler)},
		{Name: "hsa_queue_create", Addr: addr(&r.queue_create)},
		{Name: "hsa_queue_destroy", Addr: addr(&r.queue_destroy)},
		{Name: "hsa_queue_load_read_index_scacquire", Addr: addr(&r.queue_load_read_index)},
		{Name: "hsa_queue_add_write_index_screlease", Addr: addr(&r.queue_add_write_index)},
		{Name: "hsa_code_object_reader_create_from_memory", Addr: addr(&r.reader_create)},
		{Name: "hsa_code_object_reader_destroy", Addr: addr(&r.reader_destroy)},
		{Name: "hsa_executable_create_alt", Addr: addr(&r.executable_create)},
		{Name: "hsa_executable_load_agent_code_object", Addr: addr(&r.executable_load)},
		{Name: "hsa_executable_freeze", Addr: addr(&r.executable_freeze)},
		{Name: "hsa_executable_get_symbol_by_name", Addr: addr(&r.executable_symbol_by_name)},
		{Name: "hsa_executable_symbol_get_info", Addr: addr(&r.symbol_get_info)},
		{Name: "hsa_executable_destroy", Addr: addr(&r.executable_destroy)},
	}
}

// addr views a C uintptr_t field as a Go uintptr for the symbol resolver.
func addr(p *C.uintptr_t) *uintptr { return (*uintptr)(unsafe.Pointer(p)) }

func (e *entryPoints) optional() []vendorlib.Symbol {
	r := &e.run
	return []vendorlib.Symbol{
		{Name: "hsa_status_string", Addr: &e.hsaStatusString},
		// profiling events and prefetch: without them those calls are
		// UNSUPPORTED (timing) or a no-op (prefetch is a hint)
		{Name: "hsa_amd_profiling_set_profiler_enabled", Addr: addr(&r.profiling_enable)},
		{Name: "hsa_amd_profiling_get_dispatch_time", Addr: addr(&r.dispatch_time)},
		{Name: "hsa_amd_svm_prefetch_async", Addr: addr(&r.svm_prefetch)},
	}
}

// driver is one vendor library as loaded by this process. Its fields are
// written once, by openDriver, and only read afterwards, except initStatus.
// The embedded Library holds the outcome of loading: the library loaded,
// or why the platform is absent.
type driver struct {
	vendorlib.Library
	fn entryPoints
	// run is fn.run copied to C memory once the library is loaded: the
	// trampolines read the entry points from it.
	run *C.lgo_hsa_fns

	// initStatus is what the latest hsa_init returned (-1 if it was never
	// called).
	initStatus atomic.Int64
	// initCalls counts the hsa_init calls made; noKFD is the reason a
	// failed hsa_init of the system runtime gave while /dev/kfd was
	// missing (nil: none), reported again without calling it (see init).
	initCalls  atomic.Int64
	noKFD      atomic.Pointer[string]
	kfdChecked atomic.Int64 // when /dev/kfd was last looked for (UnixNano)
}

// drivers caches one driver per library request for the whole process.
//
// Why once, and why never dlclose: vendor runtimes keep process-wide state
// that does not survive an unload, and some crash or leak when loaded
// again. ROCr refuses to initialise (HSA_STATUS_ERROR_OUT_OF_RESOURCES)
// after its global destructors have run, its thunk libhsakmt is NODELETE
// and keeps KFD state across a reload, and strings it returns point into
// its read-only data. So a library is opened at most once per process and
// never closed. Initialisation is another matter: hsa_init and
// hsa_shut_down are reference counted by the runtime, so every Init calls
// hsa_init and every Deinit hsa_shut_down, and olShutDown/olInit cycles
// re-initialise the runtime (its queues, signals and memory are all
// released at the last hsa_shut_down).
//
// See vendorlib.Cache for the key.
//
// drivers.Load returns the process-wide driver for the given names, loading
// it (openDriver) on first use.
var drivers = vendorlib.NewCache(openDriver)

// openDriver dlopens the first loadable name and resolves the entry points.
func openDriver(names []string) *driver {
	d := &driver{}
	d.initStatus.Store(-1)
	// A library with a missing symbol stays loaded too (see drivers).
	d.Library = vendorlib.Open("the HSA runtime", names, d.fn.required(), d.fn.optional())
	if d.Absent != "" {
		return d
	}
	run, err := cmem.Malloc(uint64(unsafe.Sizeof(d.fn.run)), "the entry points of the HSA runtime")
	if err != nil {
		d.Err = err
		return d
	}
	d.run = (*C.lgo_hsa_fns)(run)
	*d.run = d.fn.run // never freed: the runtime stays loaded for the process
	return d
}

// init calls hsa_init; a failure is returned as the reason the platform is
// absent ("" when it succeeded).
//
// The system's runtime (system true: found by its SONAME) reaches GPUs
// through /dev/kfd. Once its hsa_init has failed without that device node,
// later initialisations do not call it again while the node is still
// missing (looked for at most once a second, instead of a failing
// hsa_init of about 10 µs on every olInit); they report the same reason. A library named by
// OFFLOAD_HSA_LIBRARY is always initialised.
func (d *driver) init(system bool) string {
	if why := d.noKFD.Load(); system && why != nil {
		// look for the node again at most once a second (a stat is a
		// system call, about as dear as the rest of an olInit)
		now := time.Now().UnixNano()
		if now-d.kfdChecked.Load() < int64(time.Second) {
			return *why
		}
		d.kfdChecked.Store(now)
		if _, err := os.Stat(kfdPath); err != nil {
			return *why
		}
		d.noKFD.Store(nil)
	}
	d.initCalls.Add(1)
	st := uint32(C.lgo_hsa_init(C.uintptr_t(d.fn.hsaInit)))
	d.initStatus.Store(int64(st))
	if st != hsaStatusSuccess {
		// Every hsa_init failure means "no usable AMD GPU" (without
		// /dev/kfd ROCr answers HSA_STATUS_ERROR_OUT_OF_RESOURCES).
		why := "hsa_init: " + d.describe(st)
		if _, err := os.Stat(kfdPath); err != nil && system {
			why += " (no " + kfdPath + ")"
			d.kfdChecked.Store(time.Now().UnixNano())
			d.noKFD.Store(&why)
		}
		return why
	}
	return ""
}

// kfdPath is the device node through which ROCr reaches AMD GPUs.
const kfdPath = "/dev/kfd"

// shutDown calls hsa_shut_down, once per successful init.
func (d *driver) shutDown() error {
	if st := uint32(C.lgo_hsa_shut_down(d.run)); st != hsaStatusSuccess {
		return d.failure("hsa_shut_down", st)
	}
	return nil
}

// version reads the HSA specification version the runtime implements,
// e.g. "1.1".
func (d *driver) version() (string, error) {
	var major, minor uint16
	if st := uint32(C.lgo_hsa_system_get_info(C.uintptr_t(d.fn.hsaSystemGetInfo),
		systemInfoVersionMajor, unsafe.Pointer(&major))); st != hsaStatusSuccess {
		return "", d.failure("hsa_system_get_info(VERSION_MAJOR)", st)
	}
	if st := uint32(C.lgo_hsa_system_get_info(C.uintptr_t(d.fn.hsaSystemGetInfo),
		systemInfoVersionMinor, unsafe.Pointer(&minor))); st != hsaStatusSuccess {
		return "", d.failure("hsa_system_get_info(VERSION_MINOR)", st)
	}
	return fmt.Sprintf("%d.%d", major, minor), nil
}

// timestampFrequency is the unit of wait timeouts (Hz); 1 GHz when the
// runtime does not say.
func (d *driver) timestampFrequency() uint64 {
	var f uint64
	if st := uint32(C.lgo_hsa_system_get_info(C.uintptr_t(d.fn.hsaSystemGetInfo),
		systemInfoTimestampFrequency, unsafe.Pointer(&f))); st != hsaStatusSuccess || f == 0 {
		return 1e9
	}
	return f
}

// describe renders a status as "0x<code>" followed by the runtime's text
// (copied at once: it points into the runtime), or the status's name when
// the runtime has no text for it.
func (d *driver) describe(st uint32) string {
	s := fmt.Sprintf("%#x", st)
	if d.fn.hsaStatusString != 0 {
		var p *C.char
		if C.lgo_hsa_status_string(C.uintptr_t(d.fn.hsaStatusString), C.uint32_t(st), &p) == hsaStatusSuccess && p != nil {
			if text := C.GoString(p); text != "" {
				return s + " " + text
			}
		}
	}
	if name, ok := statusNames[st]; ok {
		return s + " " + name
	}
	return s + " (unknown status)"
}

// failure is the error for a failed runtime call: the code from the
// status, the call and the runtime's description of the status in Details.
func (d *driver) failure(call string, st uint32) error {
	return ol.Errorf(errcOf(st), "%s failed: %s", call, d.describe(st))
}

// check is failure for a status that may be success.
func (d *driver) check(call string, st C.uint32_t) error {
	if st == hsaStatusSuccess {
		return nil
	}
	return d.failure(call, uint32(st))
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
// group segment (memory local to a work group), and the pool device
// memory is allocated from (0 if none).
func memorySizes(pools []poolDesc) (global, group, devPool uint64) {
	var coarse, anyGlobal uint64
	for _, p := range pools {
		switch p.segment {
		case segmentGlobal:
			anyGlobal = max(anyGlobal, p.size)
			if p.flags&globalFlagCoarseGrained != 0 && p.size > coarse {
				coarse, devPool = p.size, p.handle
			}
		case segmentGroup:
			group = max(group, p.size)
		}
	}
	if coarse != 0 {
		return coarse, group, devPool
	}
	return anyGlobal, group, 0
}

// poolDesc is what the plugin reads of a memory pool.
type poolDesc struct {
	handle         uint64
	segment, flags uint32
	size           uint64
}

// describePools reads the segment, global flags and size of an agent's
// pools.
func (d *driver) describePools(agent uint64) ([]poolDesc, error) {
	pools, err := d.pools(agent)
	if err != nil {
		return nil, err
	}
	out := make([]poolDesc, 0, len(pools))
	for _, p := range pools {
		pd := poolDesc{handle: p}
		if err := d.poolInfo(p, poolInfoSegment, unsafe.Pointer(&pd.segment)); err != nil {
			return nil, err
		}
		if err := d.poolInfo(p, poolInfoSize, unsafe.Pointer(&pd.size)); err != nil {
			return nil, err
		}
		if pd.segment == segmentGlobal {
			if err := d.poolInfo(p, poolInfoGlobalFlags, unsafe.Pointer(&pd.flags)); err != nil {
				return nil, err
			}
		}
		out = append(out, pd)
	}
	return out, nil
}
