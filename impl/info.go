package impl

import "github.com/liboffload-go/liboffload-go/api/ol"

// infoValue is the answer to one info query before it is written out.
type infoValue struct {
	kind ol.ValueKind
	u    uint64
	s    string
	d    ol.Dimensions
}

func (v infoValue) size() uint64 {
	if v.kind == ol.ValueString {
		return uint64(len(v.s)) + 1
	}
	return v.kind.Size()
}

func badEnum(prefix string, v uint32) error {
	return ol.Errorf(ol.ErrcInvalidEnumeration, "%s enum '%d' is invalid", prefix, v)
}

func str(s string) infoValue          { return infoValue{kind: ol.ValueString, s: s} }
func u32(v uint32) infoValue          { return infoValue{kind: ol.ValueU32, u: uint64(v)} }
func u64(v uint64) infoValue          { return infoValue{kind: ol.ValueU64, u: v} }
func dims(d ol.Dimensions) infoValue  { return infoValue{kind: ol.ValueDimensions, d: d} }
func enumValue(v uint32) infoValue    { return infoValue{kind: ol.ValueEnum, u: uint64(v)} }
func handleValue(h uintptr) infoValue { return infoValue{kind: ol.ValueHandle, u: uint64(h)} }
func boolValue(b bool) infoValue {
	v := infoValue{kind: ol.ValueBool}
	if b {
		v.u = 1
	}
	return v
}

// notProvided is the answer to a device property the plugin left unset
// (the generated deviceInfo calls it), as LLVM 22.1 gives it.
func notProvided(prop ol.DeviceInfo) (infoValue, error) {
	return infoValue{}, ol.Errorf(ol.ErrcUnimplemented, "%s: plugin did not provide a response for this information", prop)
}

// deviceInfoPlatform answers OL_DEVICE_INFO_PLATFORM, which the runtime
// answers itself (marked runtime in the spec).
func (c *Context) deviceInfoPlatform(d *Device) infoValue { return handleValue(d.platform.h) }

func (c *Context) platformInfo(p *Platform, prop ol.PlatformInfo) (infoValue, error) {
	switch prop {
	case ol.PlatformInfoName:
		return str(p.p.Name()), nil
	case ol.PlatformInfoVendorName:
		return str(p.p.Vendor()), nil
	case ol.PlatformInfoVersion:
		return str(p.p.Version()), nil
	case ol.PlatformInfoBackend:
		return enumValue(uint32(p.p.Backend())), nil
	}
	return infoValue{}, badEnum("getPlatformInfo", uint32(prop))
}
