package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/liboffload-go/liboffload-go/api"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func spec(t *testing.T) *api.Spec {
	t.Helper()
	s, err := api.Load()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Function counts from the installed 22.1 header and from the 23.1
// reference (liboffload-23-reference.md section 5: 40 functions with
// olMemPrefetch).
func TestSpecShape(t *testing.T) {
	s := spec(t)
	for _, c := range []struct {
		release     string
		funcs       int
		deviceInfos int64
	}{{"22.1", 35, 29}, {"23.1", 40, 33}} {
		r := s.ForRelease(c.release)
		if len(r.Functions) != c.funcs {
			t.Errorf("%s: %d functions, want %d", c.release, len(r.Functions), c.funcs)
		}
		if got := strings.Count(genExportsMap(r), "    ol"); got != 2*c.funcs {
			t.Errorf("%s: version script lists %d names, want %d", c.release, got, 2*c.funcs)
		}
		if e := r.EnumByName("ol_device_info_t"); e.Last != c.deviceInfos {
			t.Errorf("%s: OL_DEVICE_INFO_LAST = %d, want %d", c.release, e.Last, c.deviceInfos)
		}
	}
	// a bit-field enum's LAST is the next bit
	if e := s.ForRelease("23.1").EnumByName("ol_mem_migration_flag_t"); e.Last != 4 {
		t.Errorf("OL_MEM_MIGRATION_FLAG_LAST = %d, want 4", e.Last)
	}
	// the 22.1 view has none of 23.1's types
	for _, name := range []string{"ol_init_args_t", "ol_kernel_launch_prop_t"} {
		if s.ForRelease("22.1").StructByName(name) != nil {
			t.Errorf("22.1 has %s", name)
		}
	}
}

func TestSpecRejectsInconsistency(t *testing.T) {
	const rel = `"releases":[{"name":"1.0","soname":"l.so.1.0","include":"include","desc":"d"}],`
	bad := []string{
		// no release
		`{"functions":[{"name":"olX","desc":"d","params":[],"checks":[]}]}`,
		// an unknown release, one function twice in a release, two forms with one Go name
		`{` + rel + `"functions":[{"name":"olX","desc":"d","params":[],"checks":[],"in":["9.9"]}]}`,
		`{` + rel + `"functions":[{"name":"olX","desc":"d","params":[],"checks":[]},{"name":"olX","desc":"d","params":[],"checks":[],"variant":"2"}]}`,
		`{"releases":[{"name":"1.0","soname":"a","include":"i","desc":"d"},{"name":"2.0","soname":"b","include":"j","desc":"d"}],"functions":[{"name":"olX","desc":"d","params":[],"checks":[],"in":["1.0"]},{"name":"olX","desc":"d","params":[],"checks":[],"in":["2.0"]}]}`,
		`{"functions":[{"name":"olX","desc":"d","params":[{"name":"A","type":"nonsense_t","dir":"in","desc":"d"}],"checks":[]}]}`,
		`{"functions":[{"name":"olX","desc":"d","params":[],"checks":[{"errc":"OL_ERRC_NOPE","cond":"NULL == A"}]}]}`,
		`{"functions":[{"name":"olX","desc":"d","params":[],"checks":[]}],"surprise":1}`,
		`{"functions":[{"name":"olX","desc":"d","params":[],"checks":[]}],"enums":[{"name":"e_t","values":[{"name":"E_A","value":0,"desc":"d","runtime":true}]}]}`,
		// a pointer without a mark, a byte range whose size is not a parameter
		`{"functions":[{"name":"olX","desc":"d","params":[{"name":"A","type":"void *","dir":"in","desc":"d"}],"checks":[]}]}`,
		`{"functions":[{"name":"olX","desc":"d","params":[{"name":"A","type":"void *","dir":"in","desc":"d","ptr":"bytes","size":"N"}],"checks":[]}]}`,
	}
	for i, b := range bad {
		if i >= 4 {
			b = "{" + rel + b[1:] // every later case is wrong only in what it shows
		}
		if _, err := api.Parse([]byte(b)); err == nil {
			t.Errorf("accepted %s", b)
		}
	}
}

func TestNames(t *testing.T) {
	cases := map[string]string{"olGetDeviceInfoSize": "get_device_info_size", "olMemcpy": "memcpy", "olCalculateOptimalOccupancy": "calculate_optimal_occupancy"}
	for in, want := range cases {
		if got := snake(in); got != want {
			t.Errorf("snake(%s) = %s, want %s", in, got, want)
		}
	}
	if goParam("Type") != "typ" || goParam("DstPtr") != "dstPtr" {
		t.Error("goParam")
	}
	s := spec(t)
	e := s.EnumByName("ol_device_info_t")
	if goEnumConst(e, "OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE") != "DeviceInfoMaxWorkGroupSize" {
		t.Error("goEnumConst")
	}
}

func TestConditionsTranslate(t *testing.T) {
	s := spec(t)
	fn := func(name string) *api.Function {
		for i := range s.Functions {
			if s.Functions[i].Name == name {
				return &s.Functions[i]
			}
		}
		t.Fatalf("no %s", name)
		return nil
	}
	cases := []struct{ fn, cond, want string }{
		{"olLaunchKernel", "ArgumentsSize > 0 && ArgumentsData == NULL", "argumentsSize > 0 && argumentsData == nil"},
		{"olMemcpy", "NULL == DstDevice", "dstDevice == 0"},
		{"olMemcpy", "NULL == SrcPtr", "srcPtr == nil"},
		{"olMemFill", "FillSize % PatternSize != 0", "fillSize % patternSize != 0"},
	}
	for _, c := range cases {
		if got := goCond(s, fn(c.fn), c.cond); got != c.want {
			t.Errorf("%s: %q -> %q, want %q", c.fn, c.cond, got, c.want)
		}
	}
}

func TestLayout(t *testing.T) {
	s := spec(t)
	for name, want := range map[string]int{"ol_kernel_launch_size_args_t": 40, "ol_code_location_t": 24, "ol_dimensions_t": 12, "ol_error_struct_t": 16} {
		if got, _ := layoutOf(s, name); got != want {
			t.Errorf("sizeof(%s) = %d, want %d", name, got, want)
		}
	}
}

func TestHeaderIsSelfContained(t *testing.T) {
	h := genHeader(spec(t))
	for _, want := range []string{"#include <stdbool.h>", "OL_ERRC_FORCE_UINT32 = 0x7fffffff", "typedef const struct ol_error_struct_t *ol_result_t;",
		"ol_result_t OL_APICALL olMemcpy(ol_queue_handle_t Queue, void *DstPtr, ol_device_handle_t DstDevice, const void *SrcPtr, ol_device_handle_t SrcDevice, size_t Size);",
		"olInitWithCodeLoc(ol_code_location_t *CodeLocation);"} {
		if !strings.Contains(h, want) {
			t.Errorf("header lacks %q", want)
		}
	}
	if !strings.HasPrefix(h, "// Code generated") {
		t.Error("header does not say it is generated on line 1")
	}
}

// TestGeneratedFilesAreCurrent fails when a committed generated file differs
// from what the spec gives (run make generate).
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	for rel, text := range outputs(spec(t)) {
		got, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if strings.HasSuffix(rel, ".go") {
			if !strings.HasPrefix(string(got), "// Code generated") {
				t.Errorf("%s does not say it is generated", rel)
			}
			continue // formatted by go/format on write; compared by gen -check
		}
		if string(got) != text {
			t.Errorf("%s is out of date: run make generate", rel)
		}
	}
}

// TestDeviceInfoPlumbing checks that every device property is answered:
// one plugin.DeviceInfo field with the spec's type per property a plugin
// answers, a runtime method for the others, and that each info pair
// shares one path.
func TestDeviceInfoPlumbing(t *testing.T) {
	s := spec(t)
	st, impl := genPluginDeviceInfo(s), genImplDeviceInfo(s)
	for _, want := range []string{
		"\tName Opt[string] // OL_DEVICE_INFO_NAME",
		"\tType Opt[ol.DeviceType] // OL_DEVICE_INFO_TYPE",
		"\tMaxWorkGroupSizePerDimension Opt[ol.Dimensions] //",
		"\tGlobalMemSize Opt[uint64] //",
		"\tSingleFpConfig Opt[uint32] //",
	} {
		if !strings.Contains(st, want) {
			t.Errorf("plugin.DeviceInfo lacks %q", want)
		}
	}
	if strings.Contains(st, "Opt[uintptr]") || strings.Contains(st, "\tPlatform ") {
		t.Error("plugin.DeviceInfo has the runtime's PLATFORM property")
	}
	e := s.EnumByName(deviceInfoEnum)
	for _, v := range e.Values {
		if !strings.Contains(impl, "case ol."+goEnumConst(e, v.Name)+":") {
			t.Errorf("deviceInfo does not answer %s", v.Name)
		}
	}
	for _, want := range []string{
		"return c.deviceInfoPlatform(d), nil",
		"if o := d.d.Info().Type; o.OK {\n\t\t\treturn enumValue(uint32(o.V)), nil",
		"if o := d.d.Info().MaxWorkSizePerDimension; o.OK {\n\t\t\treturn dims(o.V), nil",
		"return notProvided(prop)",
		`badEnum("getDeviceInfo", uint32(prop))`,
	} {
		if !strings.Contains(impl, want) {
			t.Errorf("deviceInfo lacks %q", want)
		}
	}
	entry := genEntry(s)
	for _, want := range []string{
		"v, err := c.deviceInfo(deviceObj, ol.DeviceInfo(propName))\n\tif err != nil {\n\t\treturn err\n\t}\n\treturn v.write(propSize, propValue, nil)",
		"v, err := c.deviceInfo(deviceObj, ol.DeviceInfo(propName))\n\tif err != nil {\n\t\treturn err\n\t}\n\treturn v.write(0, nil, propSizeRet)",
		"v, err := c.memInfo(uintptr(ptr), ol.MemInfo(propName))\n\tif err != nil {\n\t\treturn err\n\t}\n\treturn v.write(0, nil, propSizeRet)",
	} {
		if !strings.Contains(entry, want) {
			t.Errorf("entry lacks %q", want)
		}
	}
	if regexp.MustCompile(`c\.olGet\w*Info`).MatchString(entry) {
		t.Error("an info query still calls a hand-written olGet*Info")
	}
}

// The shims that answer from the info snapshot are exactly the info
// queries of platforms and devices and the device iteration, and they test
// the fork guard first.
func TestSnapshotShims(t *testing.T) {
	s := spec(t)
	want := map[string]bool{}
	for _, n := range []string{"olGetDeviceInfo", "olGetDeviceInfoSize", "olGetPlatformInfo", "olGetPlatformInfoSize", "olIterateDevices"} {
		want[n], want[n+"WithCodeLoc"] = true, true
	}
	re := regexp.MustCompile(`(?s)ol_result_t (\w+)\([^)]*\) \{\n(.*?)\n\}\n`)
	got := 0
	for _, m := range re.FindAllStringSubmatch(genShims(s.ForRelease("22.1"), ""), -1) {
		name, body := m[1], m[2]
		fast := strings.Contains(body, "ol_snap_")
		if fast != want[name] {
			t.Errorf("%s: snapshot fast path %v, want %v", name, fast, want[name])
		}
		if fast {
			got++
			if g, f := strings.Index(body, "OL_FORK_GUARD"), strings.Index(body, "ol_snap_"); g < 0 || g > f {
				t.Errorf("%s: the fast path comes before the fork guard", name)
			}
		}
	}
	if got != len(want) {
		t.Errorf("%d shims with the fast path, want %d", got, len(want))
	}
	// a fixed kind needs an info pair to snapshot
	bad := *s
	bad.Handles = append([]api.Handle(nil), s.Handles...)
	for i := range bad.Handles {
		if bad.Handles[i].Kind == "context" {
			bad.Handles[i].Fixed = true
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a fixed context kind (no olGetContextInfo) was accepted")
		}
	}()
	snapKinds(&bad)
}
