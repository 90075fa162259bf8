// Package plugin defines what a backend (host CPU, CUDA, AMDGPU) provides
// to the runtime in impl. The runtime owns handles, validation, the
// allocation map and tracing; a plugin only talks to its device.
//
// Addresses are uintptr values: they are C or device memory, never Go
// memory.
//
// # Threads
//
// Every method may be called from any goroutine, concurrently, and so from
// any OS thread: a C caller's thread (each API call runs on the thread that
// made it), a runtime worker, or a thread running a host function. A
// goroutine may move to another thread between two calls.
//
//   - Per-thread driver state (CUDA's current context is per OS thread) is
//     set on every entry that makes driver calls, on the thread making
//     them: a plugin never assumes a thread still has the context an
//     earlier call set, and never leaves another one current than it found
//     without need (setting the same context again is cheap in the
//     driver). A plugin that wants a fixed thread for its driver calls runs
//     them on its own worker goroutines with runtime.LockOSThread, never on
//     the caller's.
//   - Driver callbacks (CUDA host functions and stream callbacks, HSA
//     signal handlers) run on driver threads where driver calls are not
//     allowed. No interface method is ever called on such a thread, and no
//     user code runs there: the callback only hands over, it records a
//     completion (an atomic, a Go channel send) or passes a host function
//     to a library thread and waits for it to return, which keeps the
//     stream's order. Host functions thus always run on library threads,
//     where they may call back into the API, on every device alike; the
//     runtime's rules for waits from a host function (no wait for the host
//     function's own queue) hold because the library knows which host
//     function a library thread runs.
//   - Queue.HostCall runs runtime code in a queue's order the same way: on
//     a library thread, never on the driver's callback thread.
//   - Completion seen on a driver thread is published to waiters with the
//     memory-ordering of a mutex or atomic; Sync and Done read it.
package plugin

import (
	"sync/atomic"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/image"
)

// Plugin is a backend that can be initialised once per library epoch.
type Plugin interface {
	// Name is the lower-case id used in OFFLOAD_PLUGINS ("host", "cuda", "amdgpu").
	Name() string
	// Init loads the vendor driver (once per process; it is never unloaded)
	// and returns the platform. A missing driver or no device is not an
	// error: Init returns (nil, nil) and the platform is left out.
	Init(env Env) (Platform, error)
}

// AbsentReporter is implemented by plugins that can say why their last
// Init left the platform out (no library, no device); with OFFLOAD_TRACE
// the runtime prints it.
type AbsentReporter interface {
	AbsentReason() string
}

// Env gives a plugin the configuration read at olInit.
type Env interface {
	// Lookup reads an environment variable as the C library sees it now.
	Lookup(name string) (string, bool)
}

// Platform is one initialised backend and its devices.
type Platform interface {
	Name() string
	Vendor() string
	Version() string
	Backend() ol.PlatformBackend
	Devices() []Device
	// Drain waits until the work submitted to every released queue of the
	// platform has ended: work held back behind host functions and waits
	// for events of other queues (of any device of the platform, or bridged
	// from another platform) included. The final olShutDown releases each
	// live queue and then drains every platform before it releases any
	// event, program or allocation, so that work still in flight runs on
	// live memory. Work that waits for another platform's queues ends on
	// its own: no platform's work needs a Drain call to progress. A wait
	// that cannot end (a broken device) is bounded and reported as an
	// error; Drain never releases anything.
	Drain() error
	// Deinit releases everything the platform holds; after it no goroutine
	// or thread of the platform may remain. It is called after Drain.
	Deinit() error
}

// PlatformGroup is implemented by a platform returned from Init that
// stands for several (the remote plugin: one per proxy and backend): the
// runtime adds each of Platforms in its place instead, drains and
// deinitialises each, and never calls the group's own methods.
type PlatformGroup interface {
	Platforms() []Platform
}

// CallbackPlatform is implemented by platforms that run user code (host
// functions) on threads of their own.
type CallbackPlatform interface {
	// InCallback reports whether the calling thread is running such code.
	InCallback() bool
}

// Waits across platforms. A plugin refuses a wait from a host function
// that could never end when the cycle lies within its platform. Waits
// between platforms are the runtime's own (olWaitEvents bridged with
// HostCall, and host functions syncing queues and events), so only the
// runtime can see a cycle through them: it follows its own edges and asks
// each plugin about the edges within its platform, through the three
// optional interfaces below. A queue's operations are numbered from 1 in
// submission order (HostCall included); an event, a host function and a
// wait are placed by that number.

// hostFunctions counts the host functions running now, on every platform.
var hostFunctions atomic.Int32

// EnterHostFunction is called by a plugin (that implements
// HostFunctionPlatform) as a host function starts, and LeaveHostFunction
// as it returns: while none runs, no wait can be made from one, so the
// runtime checks nothing.
func EnterHostFunction() { hostFunctions.Add(1) }

// LeaveHostFunction: see EnterHostFunction.
func LeaveHostFunction() { hostFunctions.Add(-1) }

// HostFunctionsRunning reports whether a host function runs now, on any
// platform (one atomic load).
func HostFunctionsRunning() bool { return hostFunctions.Load() != 0 }

// HostFunctionPlatform is implemented by platforms that can say which
// host function the calling thread runs.
type HostFunctionPlatform interface {
	// RunningHostFunction returns the queue whose host function the
	// calling thread runs and that host function's number; ok is false
	// when the thread runs no host function of this platform.
	RunningHostFunction() (q Queue, at uint64, ok bool)
}

// WaitGraphQueue is implemented by queues whose waits the runtime can
// follow.
type WaitGraphQueue interface {
	// Position is the number of the last operation submitted (0: none).
	Position() uint64
	// Waits calls visit for each wait, within this platform, of the
	// queue's work up to operation at: the queue of this platform waited
	// for and the number of the operation it must reach (olWaitEvents;
	// the host device also reports the waits its running host functions
	// make). Work already complete waits for nothing. No lock of the
	// plugin is held while visit runs. The runtime calls it only for a
	// sync from a host function while it has edges of its own, never on
	// launches or copies.
	Waits(at uint64, visit func(q Queue, at uint64))
}

// PointEvent is implemented by events that can say where they are.
type PointEvent interface {
	// Point returns the event's queue and the number of the operation
	// that completes it (0: it was complete when recorded).
	Point() (q Queue, at uint64)
}

// Opt is a device property that a plugin may leave out: V is its value
// when OK is set. DeviceInfo (generated from api/offload.json) is made of
// them; a plugin sets the properties it answers with Some.
type Opt[T any] struct {
	V  T
	OK bool
}

// Some returns a provided property.
func Some[T any](v T) Opt[T] { return Opt[T]{V: v, OK: true} }

// ParallelHostCopy is the size from which a copy between two places of
// host memory is worth spreading over several threads: a host device
// (IsHost) splits such copies, and the runtime sends its copies of that
// size without a queue to one; smaller ones it makes itself.
const ParallelHostCopy = 8 << 20

// Device is one device of a platform.
type Device interface {
	Info() *DeviceInfo
	// IsHost reports whether the device's memory is the host's own address
	// space (plain pointers can be copied with memcpy).
	IsHost() bool

	Alloc(kind ol.AllocType, size uint64) (uintptr, error)
	Free(ptr uintptr, kind ol.AllocType) error
	Register(ptr uintptr, size uint64) (uintptr, error)
	Unregister(ptr uintptr) error

	// NewQueue returns an in-order queue; it may reuse a released one.
	NewQueue() (Queue, error)

	// IsValidBinary and LoadProgram get the caller's image, valid only
	// during the call: a plugin copies what it keeps.
	IsValidBinary(image []byte) bool
	LoadProgram(image []byte) (Program, error)
}

// ImageDevice is implemented by devices that say which program images they
// load. The runtime classifies an image once (image.Classify) and asks the
// device before IsValidBinary or LoadProgram: a refusal makes
// olIsValidBinary answer false and olCreateProgram fail with
// INVALID_BINARY, "the image is <what it is>; device … needs <need>".
type ImageDevice interface {
	// AcceptsImage reports whether the device can load an image like info
	// (its full validation is still IsValidBinary's and LoadProgram's),
	// and says what the device loads, to follow "needs": "an AMDGPU code
	// object for gfx90a".
	AcceptsImage(info image.Info) (ok bool, need string)
}

// PointerDevice is implemented by devices that can tell whether an
// address is their memory (CUDA's and ROCr's pointer queries). The runtime
// asks them about a pointer that is neither an allocation of its map nor a
// global of a loaded program, before it lets the CPU write there (olMemFill
// without a queue): such a fill is refused when a device that cannot tell
// is present.
type PointerDevice interface {
	OwnsPointer(p uintptr) bool
}

// SyncQueueDevice is implemented by devices that can run a call made
// without a queue on the calling thread. The runtime asks for such a queue
// for olMemcpy, olMemFill and olLaunchKernel with a NULL queue, submits one
// operation, syncs and releases it at once; the work may run only when Sync
// is called.
type SyncQueueDevice interface {
	NewSyncQueue() (Queue, error)
}

// PeerDevice is implemented by devices whose plugin copies between its
// own platforms without the runtime's staging through host memory (the
// remote plugin: each proxy's platforms are platforms of their own, and a
// proxy sends to another proxy directly). Without it, the runtime copies
// between devices of two platforms through host buffers of its own.
type PeerDevice interface {
	// PeerOf reports whether the device's queues copy from it to dst, a
	// device of another platform, with PeerQueue.CopyToPeer.
	PeerOf(dst Device) bool
}

// PeerQueue is implemented by the queues of a PeerDevice.
type PeerQueue interface {
	// CopyToPeer queues a copy of size bytes from src on srcDev (a device
	// of the queue's platform) to dst on dstDev (a device srcDev is
	// PeerOf). It is complete, as the other operations, when the queue's
	// later work may run: the queue's Sync and events cover it, and its
	// errors are the queue's.
	CopyToPeer(dst uintptr, dstDev Device, src uintptr, srcDev Device, size uint64) error
}

// LaunchSize is the grid of a kernel launch.
type LaunchSize struct {
	NumGroups, GroupSize ol.Dimensions
	DynSharedMemory      uint64
}

// Queue runs work in submission order, asynchronously to the caller. Errors
// of asynchronous work are reported by the next Sync.
type Queue interface {
	// Copies. The runtime routes every olMemcpy: a plugin gets only copies
	// whose device memory is on devices of its own platform, with the
	// direction spelled out. Host memory is any memory the CPU can address
	// (the host device's, C heap, registered or host-visible allocations).
	// A platform whose devices' memory is host memory (the host device)
	// gets every copy between two such devices as CopyDevice. The runtime
	// itself answers copies where both sides are host memory (with no
	// queue, or on a queue of another platform), and stages copies between
	// devices of two platforms through host memory.
	//
	// CopyToDevice copies size bytes of host memory at src to dst, in the
	// memory of dev (a device of this platform, not necessarily the queue's).
	CopyToDevice(dst uintptr, dev Device, src uintptr, size uint64) error
	// CopyFromDevice copies size bytes at src, in the memory of dev, to
	// host memory at dst.
	CopyFromDevice(dst, src uintptr, dev Device, size uint64) error
	// CopyDevice copies between the memory of two devices of this platform
	// (possibly the same device).
	CopyDevice(dst uintptr, dstDev Device, src uintptr, srcDev Device, size uint64) error
	// Fill writes size bytes at ptr with copies of the patternSize-byte
	// pattern. ptr is memory of a device of this platform, or a pointer
	// the runtime could not place (not from olMemAlloc, not a global of a
	// loaded program) that the caller filled through this queue. The pattern is the caller's memory, valid only during the
	// call: a queue that runs the fill later copies it (and reports a copy
	// it cannot make as OUT_OF_RESOURCES, never by failing the process).
	Fill(ptr uintptr, pattern unsafe.Pointer, patternSize, size uint64) error
	// Launch gets the caller's argument bytes, valid only during the call:
	// a queue that launches later copies what the kernel reads.
	Launch(k Kernel, args []byte, size LaunchSize) error
	// HostFunc runs fn(user) on a library thread after earlier work.
	HostFunc(fn, user unsafe.Pointer) error
	// HostCall runs fn on a library thread (never a driver callback
	// thread) once the work submitted before it is done; later work waits
	// until fn returns. The runtime uses it for work a platform cannot do
	// itself in the queue's order: waiting for an event of another
	// platform, copies and fills that involve another platform's memory.
	// fn may block and may call any plugin method except Sync of this
	// queue (and waits for events recorded on it after fn). The runtime
	// tells which waits of fn could never end (see WaitGraphQueue). An error it
	// returns is the queue's error, reported by the next Sync. When HostCall
	// returns nil, fn runs exactly once (the runtime frees what it gave fn
	// there); when it returns an error, fn never runs.
	HostCall(fn func() error) error
	// Record returns an event that completes with the work submitted so far.
	Record() (Event, error)
	// Wait makes later work wait for e, an event of a queue of this
	// platform (possibly another queue or device). The runtime bridges
	// events of other platforms with HostCall. The wait is for the point e
	// marks when Wait is called; e may be released right after Wait
	// returns, also while it is still pending or held back, and the wait
	// still ends when that point is reached.
	Wait(e Event) error
	Sync() error
	// Empty reports whether no submitted work is outstanding.
	Empty() bool
	// Release gives the queue back without waiting; submitted work still
	// runs and its events stay valid.
	Release() error
}

// Event marks a point in a queue.
type Event interface {
	Sync() error
	Done() bool
	Release() error
}

// Program is a loaded device image.
type Program interface {
	Kernel(name string) (Kernel, error)
	Global(name string) (addr uintptr, size uint64, err error)
	// Unload is called once no runtime call with the program (Kernel,
	// Global, a Launch or MaxGroupSize of one of its kernels) is in the
	// plugin, on any thread (possibly one that just launched one of its
	// kernels). Launches already queued may still be waiting to run: the
	// plugin keeps the image until they are done (Deinit waits for that).
	Unload() error
}

// Kernel is an entry point of a program.
type Kernel interface {
	// MaxGroupSize suggests a work-group size for the given dynamic group memory.
	MaxGroupSize(dynShared uint64) (uint64, error)
}

// Unsupported is the error for an operation a backend does not offer.
func Unsupported(backend, what string) error {
	return ol.Errorf(ol.ErrcUnsupported, "%s: %s is not supported by this backend", backend, what)
}

// ---- LLVM 23.1 features: optional interfaces ------------------------------
//
// The runtime serves the 23.1 calls through these; a plugin that does not
// implement one gets a clear UNSUPPORTED (or, where 23.1 says so, a no-op).

// Param is one kernel parameter: where its bytes go in the argument buffer
// that Queue.Launch takes, and how many there are.
type Param struct{ Offset, Size uint64 }

// ParamKernel is implemented by kernels whose parameters the device knows
// (the code object's metadata on AMDGPU, cuFuncGetParamInfo on CUDA, the
// kernel descriptor of a host image of ABI 4 and later). The runtime lays
// out olLaunchKernel's ArgPtrs/ArgSizes at these offsets and refuses a
// wrong count or size; where they are not known it takes one argument as
// the whole argument block and refuses several (no layout is guessed).
type ParamKernel interface {
	// Params returns the parameters in order (the kernel's own slice: the
	// caller only reads it); ok is false when the device cannot say.
	Params() (params []Param, ok bool)
}

// CooperativeKernel is implemented by kernels of devices that can run a
// grid whose groups are all resident at once (a grid-wide barrier works).
type CooperativeKernel interface {
	// MaxCooperativeGroups is the most groups of groupSize work-items with
	// dynShared bytes of dynamic group memory the device runs at once.
	MaxCooperativeGroups(groupSize ol.Dimensions, dynShared uint64) (uint32, error)
}

// CooperativeQueue is implemented by queues that launch cooperative grids.
// LaunchCooperative is Launch with every group resident at once; a grid
// larger than MaxCooperativeGroups is refused with INVALID_ARGUMENT (or the
// driver's error) naming both numbers.
type CooperativeQueue interface {
	LaunchCooperative(k Kernel, args []byte, size LaunchSize) error
}

// TimedQueue is implemented by queues that can record profiling events:
// events that also know when the device passed them.
type TimedQueue interface {
	RecordTimed() (TimedEvent, error)
}

// TimedEvent is a profiling event of a TimedQueue.
type TimedEvent interface {
	Event
	// ElapsedSince returns the milliseconds from start (a TimedEvent of
	// the same platform) to this event; both have completed (the runtime
	// syncs them first). Negative when start came later.
	ElapsedSince(start TimedEvent) (float32, error)
}

// PrefetchQueue is implemented by queues that can migrate managed memory
// ahead of its use, in the queue's order.
type PrefetchQueue interface {
	// Prefetch moves size bytes at ptr, managed memory of dev, toward dev
	// (toDevice) or toward the host. It is a hint: memory that cannot move
	// is left where it is, without an error.
	Prefetch(ptr uintptr, dev Device, size uint64, toDevice bool) error
}

// FastQueue is implemented by queues that keep their counters in C memory
// (fastq.h, an ol_fastq; plugins/internal/fastq gives Go the same words),
// so that the runtime's C entry points answer olSyncQueue of an idle queue,
// and submit copies when the queue offers them, without entering Go. The
// ol_fastq stays valid while the queue is not released; the runtime stops
// reading it before it calls Release.
type FastQueue interface {
	Fast() unsafe.Pointer
}

// FastAllocDevice is implemented by devices that give the runtime their
// allocator in C (fastalloc.h, an ol_fastalloc): the runtime then serves
// olMemAlloc of up to 64 KiB of the kinds the struct names from a pool of
// its own (impl/pool.h) over slabs it gets from that allocator, in C
// without entering Go when a free block is at hand, and keeps every
// guarantee of the API on those blocks (olGetMemInfo, range checks,
// deferred frees, the leak report). The device's Alloc and Free still
// serve every other allocation. FastAlloc is called once per
// initialisation; the struct (C memory, never Go memory) must stay valid
// until Platform.Deinit. nil: no pool.
type FastAllocDevice interface {
	FastAlloc() unsafe.Pointer
}

// FastKernel is implemented by kernels that give a C view of themselves,
// which their platform's queues' ol_fastq.launch takes (fastq.h), so that
// olLaunchKernel on such a queue is answered without entering Go. The view
// stays valid while the program is loaded; the runtime stops passing it
// before the program may be unloaded.
type FastKernel interface {
	Fast() unsafe.Pointer
}
