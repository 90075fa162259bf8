// Package host is the backend for the host CPU: one device whose memory is
// the process's own. It answers every device property from the machine.
package host

/*
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "exec.h"

// Allocations of HUGE_PAGE bytes or more start on a huge-page boundary and
// ask the kernel for transparent huge pages (one page-table entry per
// 2 MiB instead of 512): a kernel that walks the pages, as MPI's
// single-copy transfer does (process_vm_readv pins each one), moved 256 MiB
// between two ranks at 14 GB/s instead of 7 on the test machine. The
// advice is a hint: where huge pages are off (transparent_hugepage
// "never", prctl PR_SET_THP_DISABLE) or absent, the memory is as before.
#define HUGE_PAGE ((size_t)2 << 20)
static uintptr_t host_alloc(size_t size) {
  if (size > SIZE_MAX - HUGE_PAGE) return 0; // the rounded size would wrap
  if (size < HUGE_PAGE) {
    size_t rounded = (size + 63) & ~(size_t)63;
    return (uintptr_t)aligned_alloc(64, rounded);
  }
  size_t rounded = (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
  void *p = aligned_alloc(HUGE_PAGE, rounded);
  if (p) madvise(p, rounded, MADV_HUGEPAGE); // a refusal leaves small pages
  return (uintptr_t)p;
}
static void host_free(uintptr_t p) { free((void *)p); }

#include "../plugin/fastalloc.h"

// the runtime pool's slabs (plugin.FastAllocDevice): C heap memory, every
// kind the same; host_slab_live counts their bytes (SlabBytes)
static _Atomic uint64_t host_slab_live;
static uint64_t host_slab_alloc(ol_fastalloc *a, uint64_t n, uint32_t kind) {
  (void)a, (void)kind;
  uint64_t p = host_alloc(n);
  if (p)
    __atomic_fetch_add(&host_slab_live, n, __ATOMIC_RELAXED);
  return p;
}
static void host_slab_free(ol_fastalloc *a, uint64_t p, uint64_t n, uint32_t kind) {
  (void)a, (void)kind;
  free((void *)(uintptr_t)p);
  __atomic_fetch_sub(&host_slab_live, n, __ATOMIC_RELAXED);
}
static uint64_t host_slab_bytes(void) { return __atomic_load_n(&host_slab_live, __ATOMIC_RELAXED); }
static ol_fastalloc host_fastalloc = {host_slab_alloc, host_slab_free, 7u, 1u, 64u << 10, NULL};
static void *host_fast_alloc(void) { return &host_fastalloc; }
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/fault"
	"github.com/liboffload-go/liboffload-go/plugins/host/sysinfo"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fastq"
	"github.com/liboffload-go/liboffload-go/plugins/internal/gpu"
	"github.com/liboffload-go/liboffload-go/plugins/internal/pinned"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// Version is the library version the host device reports as its driver.
const Version = "0.1.0"

// Limits of the host device. They are the values the device reports.
const (
	MaxGroupSize  = 1024
	MaxGroupDimZ  = 64
	LocalMemBytes = 1 << 20
	maxU32        = 1<<32 - 1
)

// Plugin is the host backend.
type Plugin struct{}

// New returns the host plugin.
func New() *Plugin { return &Plugin{} }

// Name implements plugin.Plugin.
func (*Plugin) Name() string { return "host" }

// Init implements plugin.Plugin: the host platform always has one device.
func (*Plugin) Init(env plugin.Env) (plugin.Platform, error) {
	return &Platform{dev: &Device{hf: newHostFuncs(), pool: newPool()}}, nil
}

// fpConfig is what IEEE-754 hardware arithmetic gives (no soft float).
const fpConfig = uint32(ol.DeviceFpCapabilityFlagCorrectlyRoundedDivideSqrt | ol.DeviceFpCapabilityFlagRoundToNearest |
	ol.DeviceFpCapabilityFlagRoundToZero | ol.DeviceFpCapabilityFlagRoundToInf | ol.DeviceFpCapabilityFlagInfNan |
	ol.DeviceFpCapabilityFlagDenorm | ol.DeviceFpCapabilityFlagFma)

func deviceInfo(si sysinfo.Info) *plugin.DeviceInfo {
	half := uint32(0)
	if si.HalfVectors {
		half = uint32(ol.DeviceFpCapabilityFlagRoundToNearest | ol.DeviceFpCapabilityFlagInfNan | ol.DeviceFpCapabilityFlagDenorm)
	}
	return &plugin.DeviceInfo{
		Type:                         plugin.Some(ol.DeviceTypeHost),
		Name:                         plugin.Some(si.ModelName),
		ProductName:                  plugin.Some(si.ModelName),
		Uid:                          plugin.Some("HOST"),
		Vendor:                       plugin.Some(si.Vendor),
		DriverVersion:                plugin.Some("liboffload-go " + Version),
		MaxWorkGroupSize:             plugin.Some[uint32](MaxGroupSize),
		MaxWorkGroupSizePerDimension: plugin.Some(ol.Dimensions{X: MaxGroupSize, Y: MaxGroupSize, Z: MaxGroupDimZ}),
		MaxWorkSize:                  plugin.Some[uint32](maxU32),
		MaxWorkSizePerDimension:      plugin.Some(ol.Dimensions{X: maxU32, Y: maxU32, Z: maxU32}),
		VendorId:                     plugin.Some(si.VendorID),
		NumComputeUnits:              plugin.Some(si.LogicalCPUs),
		MaxClockFrequency:            plugin.Some(si.MaxClockMHz),
		MemoryClockRate:              plugin.Some(si.MemClockMHz),
		AddressBits:                  plugin.Some(si.AddressBits),
		MaxMemAllocSize:              plugin.Some(si.MemTotal),
		GlobalMemSize:                plugin.Some(si.MemTotal),
		WorkGroupLocalMemSize:        plugin.Some[uint64](LocalMemBytes),
		SingleFpConfig:               plugin.Some(fpConfig),
		DoubleFpConfig:               plugin.Some(fpConfig),
		HalfFpConfig:                 plugin.Some(half),
		SingleFpSupport:              plugin.Some(true),
		DoubleFpSupport:              plugin.Some(true),
		// half-precision arithmetic where the CPU converts it in hardware
		// (F16C), as the half vector width says
		HalfFpSupport: plugin.Some(si.HalfVectors),
		// every group of a cooperative launch runs on a thread of its own
		CooperativeLaunchSupport: plugin.Some(true),
		NativeVectorWidthChar:    plugin.Some(si.NativeVectorWidth(1, false)),
		NativeVectorWidthShort:   plugin.Some(si.NativeVectorWidth(2, false)),
		NativeVectorWidthInt:     plugin.Some(si.NativeVectorWidth(4, false)),
		NativeVectorWidthLong:    plugin.Some(si.NativeVectorWidth(8, false)),
		NativeVectorWidthFloat:   plugin.Some(si.NativeVectorWidth(4, false)),
		NativeVectorWidthDouble:  plugin.Some(si.NativeVectorWidth(8, false)),
		NativeVectorWidthHalf:    plugin.Some(si.NativeVectorWidth(2, true)),
	}
}

// Platform is the host platform.
type Platform struct{ dev *Device }

// Name implements plugin.Platform.
func (*Platform) Name() string { return "Host" }

// Vendor implements plugin.Platform.
func (*Platform) Vendor() string { return "liboffload-go" }

// Version implements plugin.Platform: the API version, as LLVM reports it.
func (*Platform) Version() string {
	return fmt.Sprintf("v%d.%d.%d", ol.VersionMajor, ol.VersionMinor, ol.VersionPatch)
}

// Backend implements plugin.Platform.
func (*Platform) Backend() ol.PlatformBackend { return ol.PlatformBackendHost }

// InCallback implements plugin.CallbackPlatform: whether the calling
// thread is running a host function.
func (p *Platform) InCallback() bool { return p.dev.hf.current() != 0 }

// RunningHostFunction implements plugin.HostFunctionPlatform.
func (p *Platform) RunningHostFunction() (plugin.Queue, uint64, bool) {
	tok := p.dev.hf.current()
	if tok == 0 {
		return nil, 0, false
	}
	q, at := p.dev.hf.runOf(tok)
	if q == nil {
		return nil, 0, false
	}
	return q, at, true
}

// Devices implements plugin.Platform.
func (p *Platform) Devices() []plugin.Device { return []plugin.Device{p.dev} }

// Drain implements plugin.Platform: it waits until the work of every
// released queue has ended (run here when nobody runs it, as a sync
// would; host functions on their library threads).
func (p *Platform) Drain() error {
	d := p.dev
	busy := func() []*queue {
		d.mu.Lock()
		defer d.mu.Unlock()
		fault.Point()
		busy := make([]*queue, 0, len(d.released))
		for q := range d.released {
			busy = append(busy, q)
		}
		return busy
	}()
	for _, q := range busy {
		q.waitFor(q.submitted.Load())
	}
	d.runners.Wait()
	return nil
}

// Deinit implements plugin.Platform: it joins the device's pool (after
// Drain, so the runners are idle), so that no goroutine of the platform
// remains.
func (p *Platform) Deinit() error {
	d := p.dev
	d.runners.Wait()
	d.pool.close()
	d.mu.Lock()
	defer d.mu.Unlock()
	fault.Point()
	for _, pool := range d.pools {
		C.ol_fiber_pool_free(pool)
	}
	d.pools = nil
	d.free = nil
	d.released = nil
	d.pinned.Reset(nil)
	return nil
}

// machine is what /proc and /sys say about this machine, read on the first
// device query of the process and kept: the facts do not change while the
// process runs, and reading them again at every initialisation costs more
// than the rest of an init/shutdown cycle and its blocking reads make the Go
// runtime start threads. Immutable once set; no API state lives here.
var machine struct {
	once sync.Once
	info *plugin.DeviceInfo
}

// Device is the host CPU.
type Device struct {
	runners sync.WaitGroup // queues handed to the pool's runners, until they are done
	pool    *pool
	hf      *hostFuncs

	mu       sync.Mutex
	free     []*queue        // released, idle queues for reuse
	released map[*queue]bool // released queues whose work has not ended
	pools    []*C.ol_fiber_pool
	pinned   pinned.Ranges[struct{}] // registered ranges (its own lock)
	events   gpu.Pool[*event]        // released events for reuse (under mu): Record allocates nothing
}

const (
	// maxIdleQueues bounds how many released queues are kept for reuse.
	maxIdleQueues = 64
	// maxBusyReleased bounds the released queues whose work has not ended:
	// past it, creating a queue first helps finish that work, so a program
	// that creates and destroys queues without syncing stays in bounded
	// memory.
	maxBusyReleased = 64
	// maxIdleEvents bounds how many released events are kept for reuse.
	maxIdleEvents = 1024
)

// Info implements plugin.Device.
func (d *Device) Info() *plugin.DeviceInfo {
	machine.once.Do(func() { machine.info = deviceInfo(sysinfo.Read()) })
	return machine.info
}

// IsHost implements plugin.Device.
func (*Device) IsHost() bool { return true }

// Alloc implements plugin.Device: every kind is C heap memory aligned to 64
// bytes, and from 2 MiB on to 2 MiB with transparent huge pages asked for.
func (*Device) Alloc(kind ol.AllocType, size uint64) (uintptr, error) {
	p := uintptr(C.host_alloc(C.size_t(size)))
	if p == 0 {
		return 0, ol.Errorf(ol.ErrcOutOfResources, "host: cannot allocate %d bytes of %s memory", size, kind)
	}
	return p, nil
}

// FastAlloc implements plugin.FastAllocDevice: the runtime pools small
// allocations over slabs of the C heap.
func (*Device) FastAlloc() unsafe.Pointer { return C.host_fast_alloc() }

// SlabBytes is the memory the runtime's pool holds from the host device
// now (slabs given and not yet given back), for tests.
func SlabBytes() uint64 { return uint64(C.host_slab_bytes()) }

// Free implements plugin.Device.
func (*Device) Free(ptr uintptr, kind ol.AllocType) error {
	C.host_free(C.uintptr_t(ptr))
	return nil
}

// NewQueue implements plugin.Device: a released queue whose work has
// ended is reused before a new one is made.
func (d *Device) NewQueue() (plugin.Queue, error) { return d.newQueue(false) }

// NewSyncQueue implements plugin.SyncQueueDevice: a call made without a
// queue runs on the calling thread when it syncs, without a goroutine.
func (d *Device) NewSyncQueue() (plugin.Queue, error) { return d.newQueue(true) }

func (d *Device) newQueue(direct bool) (plugin.Queue, error) {
	for {
		q, backlog := d.takeFree()
		if q != nil {
			q.reuse(direct)
			return q, nil
		}
		if backlog == nil {
			q := newQueue(d)
			q.direct = direct
			return q, nil
		}
		if d.hf.current() != 0 {
			// a host function must not wait for other queues' work here:
			// that work may wait for the host function
			q := newQueue(d)
			q.direct = direct
			return q, nil
		}
		backlog.waitFor(backlog.submitted.Load()) // runs it here if nobody does
	}
}

// takeFree returns an idle queue to reuse (q), or else, when too many
// released queues still have work, one of those to run down (backlog).
func (d *Device) takeFree() (q, backlog *queue) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fault.Point()
	if n := len(d.free); n > 0 {
		q := d.free[n-1]
		d.free = d.free[:n-1]
		return q, nil
	}
	if len(d.released) >= maxBusyReleased {
		for q := range d.released {
			return nil, q
		}
	}
	return nil, nil
}

// reuse readies an idle queue for its new owner.
func (q *queue) reuse(direct bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	fault.Point()
	q.released, q.pooled, q.err, q.direct = false, false, nil, direct
	q.f.Go(fastq.Failed)
}

// trackReleased notes a released queue until its work has ended.
func (d *Device) trackReleased(q *queue) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fault.Point()
	if d.released == nil {
		d.released = map[*queue]bool{}
	}
	d.released[q] = true
}

// recycle takes back a released queue whose work has ended.
func (d *Device) recycle(q *queue) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fault.Point()
	delete(d.released, q)
	if len(d.free) < maxIdleQueues {
		d.free = append(d.free, q)
	}
}
