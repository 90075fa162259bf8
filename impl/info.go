package impl

import (
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
)

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

// write applies the Info rules: the Size variant reports the byte count;
// otherwise the value is written only if it fits, exactly size() bytes, and
// strings include their terminating NUL.
func (v infoValue) write(propSize uint64, out, sizeRet unsafe.Pointer) error {
	n := v.size()
	if sizeRet != nil {
		*(*uint64)(sizeRet) = n
		return nil
	}
	if out == nil {
		return ol.NewError(ol.ErrcInvalidNullPointer, "value and size outputs are nullptr")
	}
	if propSize < n {
		return ol.NewError(ol.ErrcInvalidSize, "provided size is invalid")
	}
	switch v.kind {
	case ol.ValueString:
		dst := unsafe.Slice((*byte)(out), n)
		copy(dst, v.s)
		dst[n-1] = 0
	case ol.ValueU32, ol.ValueEnum:
		*(*uint32)(out) = uint32(v.u)
	case ol.ValueU64, ol.ValueHandle, ol.ValuePointer:
		*(*uint64)(out) = v.u
	case ol.ValueBool:
		b := uint8(0)
		if v.u != 0 {
			b = 1
		}
		*(*uint8)(out) = b
	case ol.ValueDimensions:
		*(*ol.Dimensions)(out) = v.d
	}
	return nil
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

func (c *Context) olGetPlatformInfo(p *Platform, prop ol.PlatformInfo, size uint64, value unsafe.Pointer) error {
	v, err := c.platformInfo(p, prop)
	if err != nil {
		return err
	}
	return v.write(size, value, nil)
}

func (c *Context) olGetPlatformInfoSize(p *Platform, prop ol.PlatformInfo, sizeRet unsafe.Pointer) error {
	v, err := c.platformInfo(p, prop)
	if err != nil {
		return err
	}
	return v.write(0, nil, sizeRet)
}

func deviceInfo(d *Device, prop ol.DeviceInfo) (infoValue, error) {
	if prop == ol.DeviceInfoPlatform {
		return handleValue(d.platform.h), nil
	}
	i := d.d.Info()
	switch prop {
	case ol.DeviceInfoType:
		return enumValue(uint32(i.Type)), nil
	case ol.DeviceInfoName:
		return str(i.Name), nil
	case ol.DeviceInfoProductName:
		return str(i.ProductName), nil
	case ol.DeviceInfoUid:
		return str(i.UID), nil
	case ol.DeviceInfoVendor:
		return str(i.Vendor), nil
	case ol.DeviceInfoDriverVersion:
		return str(i.DriverVersion), nil
	case ol.DeviceInfoMaxWorkGroupSize:
		return u32(i.MaxWorkGroupSize), nil
	case ol.DeviceInfoMaxWorkGroupSizePerDimension:
		return dims(i.MaxWorkGroupSizePerDim), nil
	case ol.DeviceInfoMaxWorkSize:
		return u32(i.MaxWorkSize), nil
	case ol.DeviceInfoMaxWorkSizePerDimension:
		return dims(i.MaxWorkSizePerDim), nil
	case ol.DeviceInfoVendorId:
		return u32(i.VendorID), nil
	case ol.DeviceInfoNumComputeUnits:
		return u32(i.NumComputeUnits), nil
	case ol.DeviceInfoMaxClockFrequency:
		return u32(i.MaxClockMHz), nil
	case ol.DeviceInfoMemoryClockRate:
		return u32(i.MemoryClockMHz), nil
	case ol.DeviceInfoAddressBits:
		return u32(i.AddressBits), nil
	case ol.DeviceInfoMaxMemAllocSize:
		return u64(i.MaxMemAllocSize), nil
	case ol.DeviceInfoGlobalMemSize:
		return u64(i.GlobalMemSize), nil
	case ol.DeviceInfoWorkGroupLocalMemSize:
		return u64(i.LocalMemSize), nil
	case ol.DeviceInfoSingleFpConfig:
		return u32(i.SingleFPConfig), nil
	case ol.DeviceInfoDoubleFpConfig:
		return u32(i.DoubleFPConfig), nil
	case ol.DeviceInfoHalfFpConfig:
		return u32(i.HalfFPConfig), nil
	case ol.DeviceInfoNativeVectorWidthChar:
		return u32(i.VectorWidthChar), nil
	case ol.DeviceInfoNativeVectorWidthShort:
		return u32(i.VectorWidthShort), nil
	case ol.DeviceInfoNativeVectorWidthInt:
		return u32(i.VectorWidthInt), nil
	case ol.DeviceInfoNativeVectorWidthLong:
		return u32(i.VectorWidthLong), nil
	case ol.DeviceInfoNativeVectorWidthFloat:
		return u32(i.VectorWidthFloat), nil
	case ol.DeviceInfoNativeVectorWidthDouble:
		return u32(i.VectorWidthDouble), nil
	case ol.DeviceInfoNativeVectorWidthHalf:
		return u32(i.VectorWidthHalf), nil
	}
	return infoValue{}, badEnum("getDeviceInfo", uint32(prop))
}

func (c *Context) olGetDeviceInfo(d *Device, prop ol.DeviceInfo, size uint64, value unsafe.Pointer) error {
	v, err := deviceInfo(d, prop)
	if err != nil {
		return err
	}
	return v.write(size, value, nil)
}

func (c *Context) olGetDeviceInfoSize(d *Device, prop ol.DeviceInfo, sizeRet unsafe.Pointer) error {
	v, err := deviceInfo(d, prop)
	if err != nil {
		return err
	}
	return v.write(0, nil, sizeRet)
}
