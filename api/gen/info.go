package main

import (
	"fmt"
	"strings"

	"github.com/liboffload-go/liboffload-go/api"
)

// deviceInfoEnum is the info enum whose properties the plugins answer.
const deviceInfoEnum = "ol_device_info_t"

// infoField names the plugin.DeviceInfo field of a property:
// OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE -> MaxWorkGroupSize.
func infoField(e *api.Enum, value string) string {
	return camel(strings.TrimPrefix(value, e.Prefix()))
}

// infoGoType is the Go type a plugin gives a property of C type ctype.
func infoGoType(s *api.Spec, ctype string) string {
	if ctype == "char[]" {
		return "string"
	}
	switch s.Classify(ctype).Kind {
	case api.KindEnum, api.KindStruct:
		return "ol." + goTypeName(ctype)
	case api.KindBool:
		return "bool"
	case api.KindScalar:
		return goFieldType(s, ctype)
	}
	panic("gen: a plugin cannot answer a property of type " + ctype + " (mark it runtime)")
}

// infoConv is the impl function that turns a value of C type ctype into
// an infoValue.
func infoConv(s *api.Spec, ctype string) string {
	switch valueKind(s, ctype) {
	case "ValueString":
		return "str"
	case "ValueU32":
		return "u32"
	case "ValueU64":
		return "u64"
	case "ValueDimensions":
		return "dims"
	case "ValueBool":
		return "boolValue"
	case "ValueEnum":
		return "enumValue"
	}
	panic("gen: no infoValue conversion for " + ctype)
}

// genPluginDeviceInfo writes plugins/plugin/zdeviceinfo.go: the struct a
// plugin fills, one plugin.Opt field per property the plugins answer.
func genPluginDeviceInfo(s *api.Spec) string {
	e := s.EnumByName(deviceInfoEnum)
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("// %s\n\npackage plugin\n\nimport \"github.com/liboffload-go/liboffload-go/api/ol\"\n\n", genLine)
	var runtime []string
	for _, v := range e.Values {
		if v.Runtime {
			runtime = append(runtime, v.Name)
		}
	}
	w("// DeviceInfo is every property of a device that its plugin answers, one\n")
	w("// field per %s value; the runtime answers %s.\n", deviceInfoEnum, strings.Join(runtime, ", "))
	w("// A plugin fills it once.\n")
	w("// A field the plugin leaves unset (OK false) is not provided: a query for\n")
	w("// it fails with OL_ERRC_UNIMPLEMENTED, as in LLVM.\n")
	w("type DeviceInfo struct {\n")
	for _, v := range e.Values {
		if v.Runtime {
			continue
		}
		w("\t%s Opt[%s] // %s: %s\n", infoField(e, v.Name), infoGoType(s, v.Type), v.Name, v.Desc)
	}
	w("}\n")
	return b.String()
}

// genImplDeviceInfo writes impl/zdeviceinfo.go: the answer to every device
// property, from the plugin's DeviceInfo or, for a property the runtime
// answers, from the hand-written method deviceInfo<Field>.
func genImplDeviceInfo(s *api.Spec) string {
	e := s.EnumByName(deviceInfoEnum)
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("// %s\n\npackage impl\n\nimport \"github.com/liboffload-go/liboffload-go/api/ol\"\n\n", genLine)
	w("// deviceInfo answers one device property.\n")
	w("func (c *Context) deviceInfo(d *Device, prop ol.DeviceInfo) (infoValue, error) {\n\tswitch prop {\n")
	for _, v := range e.Values {
		f := infoField(e, v.Name)
		w("\tcase ol.%s:\n", goEnumConst(e, v.Name))
		if len(v.In) > 0 {
			// a property of later releases is unknown to an older library
			w("\t\tif builtRelease < %s {\n\t\t\tbreak\n\t\t}\n", releaseIdent(s, firstRelease(s, v.In)))
		}
		if v.Runtime {
			w("\t\treturn c.deviceInfo%s(d), nil\n", f)
			continue
		}
		conv := infoConv(s, v.Type)
		expr := conv + "(o.V)"
		if conv == "enumValue" {
			expr = "enumValue(uint32(o.V))"
		}
		w("\t\tif o := d.d.Info().%s; o.OK {\n\t\t\treturn %s, nil\n\t\t}\n", f, expr)
		w("\t\treturn notProvided(prop)\n")
	}
	// LLVM 22.1 names the function this way in the message.
	w("\t}\n\treturn infoValue{}, badEnum(\"getDeviceInfo\", uint32(prop))\n}\n")
	return b.String()
}

// infoPair reports whether f is one half of an olGet<X>Info /
// olGet<X>InfoSize pair, and names the query method both halves share
// (c.<x>Info(object, prop)).
func infoPair(s *api.Spec, f *api.Function) (query string, size bool, ok bool) {
	base := strings.TrimSuffix(f.Name, "Size")
	size = base != f.Name
	if !strings.HasPrefix(base, "olGet") || !strings.HasSuffix(base, "Info") {
		return "", false, false
	}
	n := 0
	for _, g := range s.Functions {
		if g.Name == base || g.Name == base+"Size" {
			n++
		}
	}
	if n != 2 {
		return "", false, false
	}
	q := strings.TrimPrefix(base, "olGet")
	return strings.ToLower(q[:1]) + q[1:], size, true
}

// genImplReleases writes impl/zrelease.go: the releases the runtime knows,
// in order, and the release of each enumerator that not every release
// has, so that a library answers only what its own release defines.
func genImplReleases(s *api.Spec) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("// %s\n\npackage impl\n\n", genLine)
	w("// Release is an LLVM release whose ABI a build of the library serves.\ntype Release int\n\n")
	w("// The releases, oldest first.\nconst (\n")
	for i, r := range s.Releases {
		if i == 0 {
			w("\t%s Release = iota // %s\n", releaseIdent(s, i), r.Soname)
		} else {
			w("\t%s // %s\n", releaseIdent(s, i), r.Soname)
		}
	}
	w(")\n\n// String is the release's name (\"22.1\").\nfunc (r Release) String() string {\n\tswitch r {\n")
	for i, r := range s.Releases {
		w("\tcase %s:\n\t\treturn %q\n", releaseIdent(s, i), r.Name)
	}
	w("\t}\n\treturn \"unknown release\"\n}\n")
	return b.String()
}

// genImplRelease writes the file of impl that release i's build tag
// selects: the release this build serves.
func genImplRelease(s *api.Spec, i int) string {
	return fmt.Sprintf("// %s\n\n//go:build %s\n\npackage impl\n\n// builtRelease is the release this build of the library serves.\nconst builtRelease = %s\n", genLine, buildConstraint(s, i), releaseIdent(s, i))
}

// firstRelease is the index of the first release an element with in
// belongs to.
func firstRelease(s *api.Spec, in api.In) int {
	for i, r := range s.Releases {
		if in.Has(r.Name) {
			return i
		}
	}
	return 0
}
