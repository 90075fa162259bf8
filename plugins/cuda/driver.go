package cuda

/*
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "shim.h"

// Typed trampolines: each takes an entry-point address obtained with dlsym
// and calls it with the driver's C signature (CUresult and CUdevice are int,
// CUdevice_attribute is an int-sized enum, CUuuid is 16 bytes). A cgo call
// through them costs about as much as a call to a static C function, far
// less than purego.RegisterLibFunc.
typedef int (*lgo_cu_init_t)(unsigned int);
typedef int (*lgo_cu_intp_t)(int *);
typedef int (*lgo_cu_device_get_t)(int *, int);
typedef int (*lgo_cu_device_get_name_t)(char *, int, int);
typedef int (*lgo_cu_device_total_mem_t)(size_t *, int);
typedef int (*lgo_cu_device_get_attribute_t)(int *, int, int);
typedef int (*lgo_cu_device_get_uuid_t)(unsigned char *, int);
typedef int (*lgo_cu_get_error_text_t)(int, const char **);

static int lgo_cu_init(uintptr_t fn, unsigned int flags) {
	return ((lgo_cu_init_t)fn)(flags);
}
static int lgo_cu_intp(uintptr_t fn, int *out) {
	return ((lgo_cu_intp_t)fn)(out);
}
static int lgo_cu_device_get(uintptr_t fn, int *dev, int ordinal) {
	return ((lgo_cu_device_get_t)fn)(dev, ordinal);
}
static int lgo_cu_device_get_name(uintptr_t fn, char *name, int len, int dev) {
	return ((lgo_cu_device_get_name_t)fn)(name, len, dev);
}
static int lgo_cu_device_total_mem(uintptr_t fn, size_t *bytes, int dev) {
	return ((lgo_cu_device_total_mem_t)fn)(bytes, dev);
}
static int lgo_cu_device_get_attribute(uintptr_t fn, int *value, int attr, int dev) {
	return ((lgo_cu_device_get_attribute_t)fn)(value, attr, dev);
}
static int lgo_cu_device_get_uuid(uintptr_t fn, unsigned char *uuid, int dev) {
	return ((lgo_cu_device_get_uuid_t)fn)(uuid, dev);
}
static int lgo_cu_get_error_text(uintptr_t fn, int err, const char **text) {
	*text = NULL;
	return ((lgo_cu_get_error_text_t)fn)(err, text);
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/cmem"
	"github.com/liboffload-go/liboffload-go/plugins/internal/vendorlib"
)

// EnvLibrary names the environment variable that replaces the SONAME search
// with one exact library (a path or a name for dlopen). Tests point it at a
// driver double.
const EnvLibrary = "OFFLOAD_CUDA_LIBRARY"

// sonames are tried in order when EnvLibrary is not set. The versioned
// name comes first: it is what the driver package always installs; the
// unversioned link is usually only in development packages.
var sonames = []string{"libcuda.so.1", "libcuda.so"}

// CUresult values the plugin treats specially.
const (
	cudaSuccess            = 0
	cudaErrorInvalidValue  = 1
	cudaErrorOutOfMemory   = 2
	cudaErrorNoDevice      = 100
	cudaErrorInvalidHandle = 400
	cudaErrorNotReady      = 600

	cudaErrorHostMemoryAlreadyRegistered = 712
	cudaErrorCooperativeLaunchTooLarge   = 720
)

// CUdevice_attribute values read for the device info.
const (
	attrMaxThreadsPerBlock      = 1
	attrMaxBlockDimX            = 2
	attrMaxBlockDimY            = 3
	attrMaxBlockDimZ            = 4
	attrMaxGridDimX             = 5
	attrMaxGridDimY             = 6
	attrMaxGridDimZ             = 7
	attrMaxSharedMemoryPerBlock = 8
	attrClockRate               = 13 // kHz
	attrMultiprocessorCount     = 16
	attrMemoryClockRate         = 36 // kHz
	attrComputeCapabilityMajor  = 75
	attrComputeCapabilityMinor  = 76
	// CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
	attrMaxSharedMemoryPerBlockOptin = 97
	// CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH
	attrCooperativeLaunch = 95
)

// entryPoints are the driver functions the plugin calls, as addresses
// returned by dlsym. They stay valid for the life of the process because
// the library is never closed.
type entryPoints struct {
	cuInit               uintptr
	cuDriverGetVersion   uintptr
	cuDeviceGetCount     uintptr
	cuDeviceGet          uintptr
	cuDeviceGetName      uintptr
	cuDeviceTotalMem     uintptr // cuDeviceTotalMem_v2: the plain name takes an unsigned int *
	cuDeviceGetAttribute uintptr
	cuDeviceGetUuid      uintptr

	// Contexts, memory, streams, events, copies, fills, host functions.
	cuDevicePrimaryCtxRetain  uintptr
	cuDevicePrimaryCtxRelease uintptr // _v2
	cuDeviceCanAccessPeer     uintptr
	cuCtxEnablePeerAccess     uintptr
	cuCtxDisablePeerAccess    uintptr
	run                       C.lgo_cu_fns

	// Optional: only used to name error codes in messages.
	cuGetErrorName   uintptr
	cuGetErrorString uintptr
}

// required lists the symbols without which the platform is absent (as in
// LLVM, where any missing symbol makes the CUDA loader report no devices).
// Later issues add the entry points for memory, queues and programs here.
func (e *entryPoints) required() []vendorlib.Symbol {
	return []vendorlib.Symbol{
		{Name: "cuInit", Addr: &e.cuInit},
		{Name: "cuDriverGetVersion", Addr: &e.cuDriverGetVersion},
		{Name: "cuDeviceGetCount", Addr: &e.cuDeviceGetCount},
		{Name: "cuDeviceGet", Addr: &e.cuDeviceGet},
		{Name: "cuDeviceGetName", Addr: &e.cuDeviceGetName},
		{Name: "cuDeviceTotalMem_v2", Addr: &e.cuDeviceTotalMem},
		{Name: "cuDeviceGetAttribute", Addr: &e.cuDeviceGetAttribute},
		{Name: "cuDeviceGetUuid", Addr: &e.cuDeviceGetUuid},
		{Name: "cuDevicePrimaryCtxRetain", Addr: &e.cuDevicePrimaryCtxRetain},
		{Name: "cuDevicePrimaryCtxRelease_v2", Addr: &e.cuDevicePrimaryCtxRelease},
		{Name: "cuDeviceCanAccessPeer", Addr: &e.cuDeviceCanAccessPeer},
		{Name: "cuCtxEnablePeerAccess", Addr: &e.cuCtxEnablePeerAccess},
		{Name: "cuCtxDisablePeerAccess", Addr: &e.cuCtxDisablePeerAccess},
		{Name: "cuCtxSetCurrent", Addr: addr(&e.run.set_current)},
		{Name: "cuMemAlloc_v2", Addr: addr(&e.run.mem_alloc)},
		{Name: "cuMemFree_v2", Addr: addr(&e.run.mem_free)},
		{Name: "cuMemAllocHost_v2", Addr: addr(&e.run.mem_alloc_host)},
		{Name: "cuMemFreeHost", Addr: addr(&e.run.mem_free_host)},
		{Name: "cuMemAllocManaged", Addr: addr(&e.run.mem_alloc_managed)},
		{Name: "cuMemHostRegister_v2", Addr: addr(&e.run.host_register)},
		{Name: "cuMemHostUnregister", Addr: addr(&e.run.host_unregister)},
		{Name: "cuStreamCreate", Addr: addr(&e.run.stream_create)},
		{Name: "cuStreamDestroy_v2", Addr: addr(&e.run.stream_destroy)},
		{Name: "cuStreamSynchronize", Addr: addr(&e.run.stream_sync)},
		{Name: "cuStreamQuery", Addr: addr(&e.run.stream_query)},
		{Name: "cuStreamWaitEvent", Addr: addr(&e.run.stream_wait_event)},
		{Name: "cuEventCreate", Addr: addr(&e.run.event_create)},
		{Name: "cuEventDestroy_v2", Addr: addr(&e.run.event_destroy)},
		{Name: "cuEventRecord", Addr: addr(&e.run.event_record)},
		{Name: "cuEventQuery", Addr: addr(&e.run.event_query)},
		{Name: "cuEventSynchronize", Addr: addr(&e.run.event_sync)},
		{Name: "cuMemcpyHtoDAsync_v2", Addr: addr(&e.run.copy_htod)},
		{Name: "cuMemcpyDtoHAsync_v2", Addr: addr(&e.run.copy_dtoh)},
		{Name: "cuMemcpyDtoDAsync_v2", Addr: addr(&e.run.copy_dtod)},
		{Name: "cuMemcpyPeerAsync", Addr: addr(&e.run.copy_peer)},
		{Name: "cuMemsetD8Async", Addr: addr(&e.run.memset8)},
		{Name: "cuMemsetD16Async", Addr: addr(&e.run.memset16)},
		{Name: "cuMemsetD32Async", Addr: addr(&e.run.memset32)},
		{Name: "cuLaunchHostFunc", Addr: addr(&e.run.launch_host_func)},
		{Name: "cuModuleLoadDataEx", Addr: addr(&e.run.module_load)},
		{Name: "cuModuleUnload", Addr: addr(&e.run.module_unload)},
		{Name: "cuModuleGetFunction", Addr: addr(&e.run.module_get_function)},
		{Name: "cuModuleGetGlobal_v2", Addr: addr(&e.run.module_get_global)},
		{Name: "cuLaunchKernel", Addr: addr(&e.run.launch_kernel)},
		{Name: "cuFuncGetAttribute", Addr: addr(&e.run.func_get_attribute)},
		{Name: "cuFuncSetAttribute", Addr: addr(&e.run.func_set_attribute)},
		{Name: "cuOccupancyMaxPotentialBlockSize", Addr: addr(&e.run.occupancy_max_block)},
		{Name: "cuPointerGetAttribute", Addr: addr(&e.run.pointer_get_attribute)},
	}
}

// addr views a C uintptr_t field as a Go uintptr for the symbol resolver.
func addr(p *C.uintptr_t) *uintptr { return (*uintptr)(unsafe.Pointer(p)) }

func (e *entryPoints) optional() []vendorlib.Symbol {
	return []vendorlib.Symbol{
		{Name: "cuGetErrorName", Addr: &e.cuGetErrorName},
		{Name: "cuGetErrorString", Addr: &e.cuGetErrorString},
		// R550+: the exact size of a kernel's parameters
		{Name: "cuFuncGetParamInfo", Addr: addr(&e.run.func_get_param_info)},
		// cooperative launches (CooperativeLaunchSupport is false without them)
		{Name: "cuLaunchCooperativeKernel", Addr: addr(&e.run.launch_coop)},
		{Name: "cuOccupancyMaxActiveBlocksPerMultiprocessor", Addr: addr(&e.run.occupancy_active_blocks)},
		// profiling events and prefetch: without them those calls are
		// UNSUPPORTED (timing) or a no-op (prefetch is a hint)
		{Name: "cuEventElapsedTime", Addr: addr(&e.run.event_elapsed)},
		{Name: "cuMemPrefetchAsync", Addr: addr(&e.run.mem_prefetch)},
		{Name: "cuMemPrefetchAsync_v2", Addr: addr(&e.run.mem_prefetch_v2)},
	}
}

// driver is one vendor library as loaded and initialised by this process.
// Its fields are written once, by openDriver, and only read afterwards.
// The embedded Library holds the outcome: the library loaded, why the
// platform is absent, or the failure olInit reports.
type driver struct {
	vendorlib.Library
	fn entryPoints
	// run is fn.run copied to C memory once the library is loaded: the
	// trampolines read the entry points from it.
	run *C.lgo_cu_fns

	// initResult is what cuInit(0) returned (-1 if it was never called).
	initResult int32
	// version is cuDriverGetVersion's value, e.g. 12020 for CUDA 12.2.
	version int32
}

// drivers caches one driver per library request for the whole process
// (see vendorlib.Cache, which also explains the key).
//
// Why once, and why never dlclose: vendor runtimes keep process-wide state
// (threads, device file descriptors, kernel-side contexts) that does not
// survive an unload, and some of them crash or leak when they are loaded
// again: libcuda 535 leaks about 900 bytes per dlopen/cuInit/dlclose cycle
// and does not cache a failed cuInit (each call costs ~10 ms and leaks
// again), and ROCr refuses to initialise after its destructors ran. So a
// library is opened at most once per process, its init result is cached
// (failure included) and it stays mapped until exit; olShutDown/olInit
// cycles reuse it.
//
// drivers.Load returns the process-wide driver for the given names, loading
// and initialising it (openDriver) on first use.
var drivers = vendorlib.NewCache(openDriver)

// openDriver dlopens the first loadable name, resolves the entry points and
// calls cuInit once.
func openDriver(names []string) *driver {
	d := &driver{initResult: -1}
	// A library with a missing symbol stays loaded too (see drivers).
	d.Library = vendorlib.Open("the CUDA driver", names, d.fn.required(), d.fn.optional())
	if d.Absent != "" {
		return d
	}

	d.initResult = int32(C.lgo_cu_init(C.uintptr_t(d.fn.cuInit), 0))
	switch d.initResult {
	case cudaSuccess:
	case cudaErrorNoDevice, cudaErrorInvalidHandle:
		d.Absent = "cuInit: " + d.describe(d.initResult)
		return d
	default:
		d.Err = ol.Errorf(ol.ErrcBackendFailure, "cuInit failed: %s", d.describe(d.initResult))
		return d
	}

	var v C.int
	if r := int32(C.lgo_cu_intp(C.uintptr_t(d.fn.cuDriverGetVersion), &v)); r != cudaSuccess {
		d.Err = d.failure("cuDriverGetVersion", r)
		return d
	}
	d.version = int32(v)
	run, err := cmem.Malloc(uint64(unsafe.Sizeof(d.fn.run)), "the entry points of the CUDA driver")
	if err != nil {
		d.Err = err
		return d
	}
	d.run = (*C.lgo_cu_fns)(run)
	*d.run = d.fn.run // never freed: the driver stays loaded for the process
	return d
}

// versionString renders the driver's CUDA version, 12020 → "12.2".
func (d *driver) versionString() string {
	v := d.version
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

// errorNames are used when the driver cannot name a code itself.
var errorNames = map[int32]string{
	0:   "CUDA_SUCCESS",
	1:   "CUDA_ERROR_INVALID_VALUE",
	2:   "CUDA_ERROR_OUT_OF_MEMORY",
	3:   "CUDA_ERROR_NOT_INITIALIZED",
	4:   "CUDA_ERROR_DEINITIALIZED",
	34:  "CUDA_ERROR_STUB_LIBRARY",
	46:  "CUDA_ERROR_DEVICE_UNAVAILABLE",
	100: "CUDA_ERROR_NO_DEVICE",
	101: "CUDA_ERROR_INVALID_DEVICE",
	201: "CUDA_ERROR_INVALID_CONTEXT",
	200: "CUDA_ERROR_INVALID_IMAGE",
	209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
	218: "CUDA_ERROR_INVALID_PTX",
	221: "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
	222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	300: "CUDA_ERROR_INVALID_SOURCE",
	400: "CUDA_ERROR_INVALID_HANDLE",
	500: "CUDA_ERROR_NOT_FOUND",
	701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	712: "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
	800: "CUDA_ERROR_NOT_PERMITTED",
	801: "CUDA_ERROR_NOT_SUPPORTED",
	802: "CUDA_ERROR_SYSTEM_NOT_READY",
	803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
	999: "CUDA_ERROR_UNKNOWN",
}

// describe renders a CUresult as "<code> <name>" followed by the driver's
// description in parentheses when it has one.
func (d *driver) describe(r int32) string {
	name := d.errorText(d.fn.cuGetErrorName, r)
	if name == "" {
		name = errorNames[r]
	}
	if name == "" {
		name = fmt.Sprintf("CUDA_ERROR_%d", r)
	}
	s := fmt.Sprintf("%d %s", r, name)
	if text := d.errorText(d.fn.cuGetErrorString, r); text != "" {
		s += " (" + text + ")"
	}
	return s
}

// errorText calls cuGetErrorName or cuGetErrorString, copying the result
// (the driver owns the memory).
func (d *driver) errorText(fn uintptr, r int32) string {
	if fn == 0 {
		return ""
	}
	var p *C.char
	if C.lgo_cu_get_error_text(C.uintptr_t(fn), C.int(r), &p) != cudaSuccess || p == nil {
		return ""
	}
	return C.GoString(p)
}

// failure is the error for a failed driver call after cuInit.
func (d *driver) failure(call string, r int32) error {
	return ol.Errorf(ol.ErrcBackendFailure, "%s failed: %s", call, d.describe(r))
}

func (d *driver) deviceCount() (int, error) {
	var n C.int
	if r := int32(C.lgo_cu_intp(C.uintptr_t(d.fn.cuDeviceGetCount), &n)); r != cudaSuccess {
		return 0, d.failure("cuDeviceGetCount", r)
	}
	return int(n), nil
}

func (d *driver) device(ordinal int) (int32, error) {
	var dev C.int
	if r := int32(C.lgo_cu_device_get(C.uintptr_t(d.fn.cuDeviceGet), &dev, C.int(ordinal))); r != cudaSuccess {
		return 0, d.failure(fmt.Sprintf("cuDeviceGet(%d)", ordinal), r)
	}
	return int32(dev), nil
}

func (d *driver) deviceName(dev int32) (string, error) {
	var buf [256]byte
	r := int32(C.lgo_cu_device_get_name(C.uintptr_t(d.fn.cuDeviceGetName),
		(*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)-1), C.int(dev)))
	if r != cudaSuccess {
		return "", d.failure("cuDeviceGetName", r)
	}
	return vendorlib.CString(buf[:]), nil
}

func (d *driver) totalMem(dev int32) (uint64, error) {
	var n C.size_t
	if r := int32(C.lgo_cu_device_total_mem(C.uintptr_t(d.fn.cuDeviceTotalMem), &n, C.int(dev))); r != cudaSuccess {
		return 0, d.failure("cuDeviceTotalMem_v2", r)
	}
	return uint64(n), nil
}

func (d *driver) attribute(dev int32, attr int) (int32, error) {
	var v C.int
	r := int32(C.lgo_cu_device_get_attribute(C.uintptr_t(d.fn.cuDeviceGetAttribute), &v, C.int(attr), C.int(dev)))
	if r != cudaSuccess {
		return 0, d.failure(fmt.Sprintf("cuDeviceGetAttribute(%d)", attr), r)
	}
	return int32(v), nil
}

func (d *driver) uuid(dev int32) ([16]byte, error) {
	var u [16]byte
	r := int32(C.lgo_cu_device_get_uuid(C.uintptr_t(d.fn.cuDeviceGetUuid), (*C.uchar)(unsafe.Pointer(&u[0])), C.int(dev)))
	if r != cudaSuccess {
		return u, d.failure("cuDeviceGetUuid", r)
	}
	return u, nil
}
