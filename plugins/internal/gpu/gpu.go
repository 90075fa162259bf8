// Package gpu holds what the GPU plugins (cuda, amdgpu) share above the
// driver: the device properties every GPU reports alike, the platform type
// and the base of a device that does not support an operation yet.
package gpu

import (
	"sync/atomic"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/image"
	"github.com/liboffload-go/liboffload-go/plugins/internal/vendorlib"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// FPConfig is what liboffload reports for single and double precision on
// every GPU: all capabilities except software emulation (127).
const FPConfig = uint32(ol.DeviceFpCapabilityFlagCorrectlyRoundedDivideSqrt | ol.DeviceFpCapabilityFlagRoundToNearest |
	ol.DeviceFpCapabilityFlagRoundToZero | ol.DeviceFpCapabilityFlagRoundToInf | ol.DeviceFpCapabilityFlagInfNan |
	ol.DeviceFpCapabilityFlagDenorm | ol.DeviceFpCapabilityFlagFma)

// NewDeviceInfo returns the properties that do not depend on the GPU: its
// type, the vendor's PCI id, the driver version, 64-bit addresses, the FP
// configurations (none for half precision) and vector widths of 1 (0 for
// half). The plugin fills in the rest from the driver.
func NewDeviceInfo(vendorID uint32, driverVersion string) *plugin.DeviceInfo {
	return &plugin.DeviceInfo{
		Type:                    plugin.Some(ol.DeviceTypeGpu),
		DriverVersion:           plugin.Some(driverVersion),
		VendorId:                plugin.Some(vendorID),
		AddressBits:             plugin.Some[uint32](64),
		SingleFpConfig:          plugin.Some(FPConfig),
		DoubleFpConfig:          plugin.Some(FPConfig),
		HalfFpConfig:            plugin.Some[uint32](0),
		NativeVectorWidthChar:   plugin.Some[uint32](1),
		NativeVectorWidthShort:  plugin.Some[uint32](1),
		NativeVectorWidthInt:    plugin.Some[uint32](1),
		NativeVectorWidthLong:   plugin.Some[uint32](1),
		NativeVectorWidthFloat:  plugin.Some[uint32](1),
		NativeVectorWidthDouble: plugin.Some[uint32](1),
		NativeVectorWidthHalf:   plugin.Some[uint32](0),
		// every GPU the plugins load images for (sm_80 and later, gfx9
		// and later) has single, double and half precision arithmetic
		SingleFpSupport: plugin.Some(true),
		DoubleFpSupport: plugin.Some(true),
		HalfFpSupport:   plugin.Some(true),
	}
}

// Backend is what identifies a GPU plugin and the driver it loads. A
// plugin's Plugin type embeds it.
type Backend struct {
	// ID is the plugin's lower-case name ("cuda", "amdgpu").
	ID string
	// EnvLibrary names the environment variable that replaces the SONAME
	// search with one exact library (a path or a name for dlopen).
	EnvLibrary string
	// Sonames are tried in order when EnvLibrary is not set.
	Sonames []string
	// Platform describes the plugin's platform.
	Platform PlatformKind

	absent atomic.Pointer[string] // why the last Init found no platform
}

// SetAbsent records why Init leaves the platform out ("" when it did not).
func (b *Backend) SetAbsent(reason string) { b.absent.Store(&reason) }

// AbsentReason implements plugin.AbsentReporter.
func (b *Backend) AbsentReason() string {
	if r := b.absent.Load(); r != nil {
		return *r
	}
	return ""
}

// Name implements plugin.Plugin.
func (b *Backend) Name() string { return b.ID }

// LibraryNames is what the plugin's Init tries to load: the override alone
// if set, else the SONAMEs.
func (b *Backend) LibraryNames(env plugin.Env) []string {
	return vendorlib.LibraryNames(env, b.EnvLibrary, b.Sonames)
}

// NewPlatform returns the plugin's platform without devices; version is
// the driver's.
func (b *Backend) NewPlatform(version string) Platform {
	return Platform{kind: b.Platform, version: version}
}

// Unsupported returns the base of the plugin's devices.
func (b *Backend) Unsupported() Unsupported { return Unsupported{Backend: b.ID} }

// PlatformKind is what is fixed about a GPU platform.
type PlatformKind struct {
	Name, Vendor string
	Backend      ol.PlatformBackend
}

// Platform is a GPU platform: the devices a driver reported. A plugin
// embeds it in its own platform type.
type Platform struct {
	kind    PlatformKind
	version string
	devices []plugin.Device
}

// AddDevice appends a device to the platform (only while it is built).
func (p *Platform) AddDevice(d plugin.Device) { p.devices = append(p.devices, d) }

// Name implements plugin.Platform.
func (p *Platform) Name() string { return p.kind.Name }

// Vendor implements plugin.Platform.
func (p *Platform) Vendor() string { return p.kind.Vendor }

// Version implements plugin.Platform.
func (p *Platform) Version() string { return p.version }

// Backend implements plugin.Platform.
func (p *Platform) Backend() ol.PlatformBackend { return p.kind.Backend }

// Devices implements plugin.Platform.
func (p *Platform) Devices() []plugin.Device { return p.devices }

// Drain implements plugin.Platform: a platform without queues has no work
// to wait for.
func (*Platform) Drain() error { return nil }

// Deinit implements plugin.Platform. The platform holds no driver resources
// yet and starts no goroutine; the driver itself stays loaded and
// initialised for the process (see vendorlib.Cache).
func (*Platform) Deinit() error { return nil }

// Unsupported is embedded in a GPU plugin's device type: it implements
// every plugin.Device method except Info, IsHost and IsValidBinary (see
// Images) by reporting that the backend does not support the operation yet.
// When plugin.Device grows a method, only this type needs it; a plugin
// overrides a method here once it implements the operation.
type Unsupported struct {
	// Backend is the plugin's name, which starts the error details.
	Backend string
}

// Alloc implements plugin.Device.
func (u Unsupported) Alloc(kind ol.AllocType, size uint64) (uintptr, error) {
	return 0, plugin.Unsupported(u.Backend, "olMemAlloc")
}

// Free implements plugin.Device.
func (u Unsupported) Free(ptr uintptr, kind ol.AllocType) error {
	return plugin.Unsupported(u.Backend, "olMemFree")
}

// Register implements plugin.Device.
func (u Unsupported) Register(ptr uintptr, size uint64) (uintptr, error) {
	return 0, plugin.Unsupported(u.Backend, "olMemRegister")
}

// Unregister implements plugin.Device.
func (u Unsupported) Unregister(ptr uintptr) error {
	return plugin.Unsupported(u.Backend, "olMemUnregister")
}

// NewQueue implements plugin.Device.
func (u Unsupported) NewQueue() (plugin.Queue, error) {
	return nil, plugin.Unsupported(u.Backend, "a queue")
}

// LoadProgram implements plugin.Device.
func (u Unsupported) LoadProgram(img []byte) (plugin.Program, error) {
	return nil, plugin.Unsupported(u.Backend, "loading a program")
}

// Images is embedded in a GPU plugin's device type: it answers which
// program images the device loads from its image target (the compute
// capability or gfx processor the driver reported), so olIsValidBinary is
// right before loading is implemented.
type Images struct {
	Target image.Target
}

// IsValidBinary implements plugin.Device: whether the image's kind and
// architecture suit the device (the image is not validated further).
func (m Images) IsValidBinary(img []byte) bool { return m.Target.Accepts(image.Classify(img)) }

// AcceptsImage implements plugin.ImageDevice.
func (m Images) AcceptsImage(info image.Info) (bool, string) {
	return m.Target.Accepts(info), m.Target.Needs()
}

// PopLast takes the last entry of a pool, the zero value when it is empty;
// the slot it leaves is cleared so that the pool holds nothing it no
// longer lists.
func PopLast[T any](pool *[]T) T {
	var last T
	if n := len(*pool); n > 0 {
		last = (*pool)[n-1]
		(*pool)[n-1] = *new(T)
		*pool = (*pool)[:n-1]
	}
	return last
}

// Pool is a last-in-first-out pool of idle driver objects kept for reuse
// (streams, HSA queues, events, signals and the Go objects around them);
// the lock of its owner guards it. Get and a Put that fits make no Go
// allocation once the pool has grown.
type Pool[T comparable] struct{ items []T }

// Get takes the object put last, or T's zero value when the pool is empty.
func (p *Pool[T]) Get() T { return PopLast(&p.items) }

// Put keeps x for reuse unless the pool already holds max objects; false
// means it did not, and x is the caller's to destroy.
func (p *Pool[T]) Put(x T, max int) bool {
	if len(p.items) >= max {
		return false
	}
	p.items = append(p.items, x)
	return true
}

// Push keeps x whatever the pool holds (objects reclaimed from elsewhere
// that must not be lost).
func (p *Pool[T]) Push(x T) { p.items = append(p.items, x) }

// Len is how many objects the pool holds.
func (p *Pool[T]) Len() int { return len(p.items) }

// Take empties the pool and returns what it held.
func (p *Pool[T]) Take() []T {
	all := p.items
	p.items = nil
	return all
}
