package main

import (
	"fmt"
	"strings"
	"testing"
)

// The Python declarations name every function, enum value, struct and info
// property of the spec (the Python tests check the values against the
// library; this checks nothing of the spec is skipped).
func TestPythonCoversSpec(t *testing.T) {
	s := spec(t)
	py := genPython(s)
	if !strings.HasPrefix(py, "# "+genLine+"\n") {
		t.Fatal("line 1 does not say the file is generated")
	}
	want := []string{}
	for _, f := range s.Functions {
		want = append(want, fmt.Sprintf("    %q: (\n", f.Name))
	}
	for _, e := range s.Enums {
		for _, v := range e.Values {
			want = append(want, fmt.Sprintf("\n%s = %s.%s\n", v.Name, pyEnumClass(e.Name), strings.TrimPrefix(v.Name, e.Prefix())))
			if e.InfoEnum() {
				want = append(want, fmt.Sprintf("    %s.%s: InfoType(", pyEnumClass(e.Name), strings.TrimPrefix(v.Name, e.Prefix())))
			}
		}
	}
	for _, st := range s.Structs {
		want = append(want, fmt.Sprintf("\nclass %s(ctypes.Structure):", pyEnumClass(st.Name)))
	}
	for _, w := range want {
		if !strings.Contains(py, w) {
			t.Errorf("_api.py lacks %q", w)
		}
	}
}

func TestPythonTypes(t *testing.T) {
	s := spec(t)
	for ctype, want := range map[string]string{
		"size_t *":                             "ctypes.POINTER(ctypes.c_size_t)",
		"const void *":                         "ctypes.c_void_p",
		"const char *":                         "ctypes.c_char_p",
		"void **":                              "ctypes.POINTER(ctypes.c_void_p)",
		"ol_event_handle_t *":                  "ctypes.POINTER(ol_event_handle_t)",
		"const ol_kernel_launch_size_args_t *": "ctypes.POINTER(KernelLaunchSizeArgs)",
		"ol_errc_t":                            "ctypes.c_uint32",
		"bool *":                               "ctypes.POINTER(ctypes.c_bool)",
		"struct ol_dimensions_t":               "Dimensions",
	} {
		if got := pyCType(s, ctype); got != want {
			t.Errorf("pyCType(%q) = %s, want %s", ctype, got, want)
		}
	}
	if got := pyInfoType(s, "ol_device_fp_capability_flags_t"); !strings.Contains(got, `"flags"`) {
		t.Errorf("a *_flags_t property is %s, want flags", got)
	}
	if got := pyInfoType(s.ForRelease("22.1"), "ol_memory_register_flags_t"); !strings.Contains(got, `"scalar"`) {
		t.Errorf("a *_flags_t without a flag enum is %s, want scalar", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("an unknown type did not panic")
		}
	}()
	pyCType(s, "nonsense_t")
}
