package main

import (
	"fmt"
	"strings"

	"github.com/liboffload-go/liboffload-go/api"
)

// Python bindings: python/liboffload/_api.py, the mechanical ctypes layer of
// the Python package (handles, enums, structs, callbacks, every prototype
// and the C type of every info property). The pythonic layer on top of it
// is written by hand.

// pyEnumClass names the Python class of a C enum or struct:
// ol_device_info_t -> DeviceInfo.
func pyEnumClass(cname string) string { return goTypeName(cname) }

// pyFlagEnum returns the flag enum that a *_flags_t typedef is a set of
// (ol_device_fp_capability_flags_t -> ol_device_fp_capability_flag_t), or nil.
func pyFlagEnum(s *api.Spec, ctype string) *api.Enum {
	t := strings.TrimSpace(ctype)
	if !strings.HasSuffix(t, "_flags_t") {
		return nil
	}
	return s.EnumByName(strings.TrimSuffix(t, "_flags_t") + "_flag_t")
}

// pyFlagType reports whether an enum is a set of bit flags.
func pyFlagType(e *api.Enum) bool { return strings.HasSuffix(e.Name, "_flag_t") }

// pyCType is the ctypes expression of a C type.
func pyCType(s *api.Spec, ctype string) string {
	t := strings.TrimSpace(ctype)
	ti := s.Classify(t)
	switch ti.Kind {
	case api.KindHandle:
		return t
	case api.KindEnum:
		return "ctypes.c_uint32"
	case api.KindBool:
		return "ctypes.c_bool"
	case api.KindFloat:
		return "ctypes.c_float"
	case api.KindCallback:
		return t
	case api.KindStruct:
		return pyEnumClass(t)
	case api.KindScalar:
		switch strings.TrimPrefix(t, "struct ") {
		case "size_t":
			return "ctypes.c_size_t"
		case "uint64_t":
			return "ctypes.c_uint64"
		case "uint32_t":
			return "ctypes.c_uint32"
		}
		return t // a typedef of the spec
	case api.KindPointer:
		switch ti.Elem {
		case "void":
			return "ctypes.c_void_p"
		case "char":
			return "ctypes.c_char_p"
		}
		return "ctypes.POINTER(" + pyCType(s, ti.Elem) + ")"
	}
	panic("gen: no ctypes type for " + ctype)
}

// pyInfoType is the InfoType(...) expression of an info property's C type.
func pyInfoType(s *api.Spec, ctype string) string {
	if strings.HasSuffix(ctype, "[]") {
		elem := strings.TrimSuffix(ctype, "[]")
		if elem == "char" {
			return `InfoType("string", ctypes.c_char, None)`
		}
		return fmt.Sprintf(`InfoType("array", %s, None)`, pyCType(s, elem))
	}
	ti := s.Classify(ctype)
	switch ti.Kind {
	case api.KindHandle:
		return fmt.Sprintf(`InfoType("handle", %s, %q)`, ctype, s.HandleByName(ctype).Kind)
	case api.KindEnum:
		return fmt.Sprintf(`InfoType("enum", ctypes.c_uint32, %s)`, pyEnumClass(ctype))
	case api.KindBool:
		return `InfoType("bool", ctypes.c_bool, None)`
	case api.KindPointer:
		return `InfoType("pointer", ctypes.c_void_p, None)`
	case api.KindStruct:
		return fmt.Sprintf(`InfoType("struct", %s, None)`, pyEnumClass(ctype))
	case api.KindScalar:
		if e := pyFlagEnum(s, ctype); e != nil {
			return fmt.Sprintf(`InfoType("flags", %s, %s)`, pyCType(s, ctype), pyEnumClass(e.Name))
		}
		return fmt.Sprintf(`InfoType("scalar", %s, None)`, pyCType(s, ctype))
	}
	panic("gen: no info type for " + ctype)
}

// pyString quotes a Python string literal.
func pyString(v string) string { return fmt.Sprintf("%q", v) }

// genPython writes python/liboffload/_api.py.
func genPython(s *api.Spec) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# %s\n", genLine)
	w(`"""ctypes declarations of the Offload API %d.%d.%d.

Every handle, enum, struct, callback and function of api/offload.json, and
the C type of every info property. The pythonic layer (liboffload) is built
on these; declare(lib) sets argtypes and restype on a loaded library.
"""

import collections
import ctypes
import enum

VERSION = (%d, %d, %d)

`, s.Version.Major, s.Version.Minor, s.Version.Patch, s.Version.Major, s.Version.Minor, s.Version.Patch)

	w("\nclass CEnum(enum.IntEnum):\n")
	w("    \"\"\"An enum of the API; c_name is the C enumerator's name.\"\"\"\n\n")
	w("    @property\n    def c_name(self):\n        return type(self).C_PREFIX + self.name\n\n\n")
	w("class CFlag(enum.IntFlag):\n")
	w("    \"\"\"A set of bit flags of the API.\"\"\"\n\n")
	w("    @property\n    def c_name(self):\n        return \"|\".join(type(self).C_PREFIX + f.name for f in type(self) if f in self)\n\n\n")

	w("# ---- handles (opaque pointers; Python sees them as int or None) ----\n\n")
	var kinds []string
	for _, h := range s.Handles {
		w("%s = ctypes.c_void_p  # %s\n", h.Name, h.Desc)
		kinds = append(kinds, fmt.Sprintf("    %q: %s,\n", h.Kind, h.Name))
	}
	w("\nHANDLE_KINDS = {\n%s}\n\n", strings.Join(kinds, ""))

	w("# ---- enums ----\n")
	for _, e := range s.Enums {
		cls := pyEnumClass(e.Name)
		base := "CEnum"
		if pyFlagType(&e) {
			base = "CFlag"
		}
		w("\n\nclass %s(%s):\n    \"\"\"%s (%s)\"\"\"\n\n", cls, base, e.Desc, e.Name)
		for _, v := range e.Values {
			w("    %s = %d  # %s\n", strings.TrimPrefix(v.Name, e.Prefix()), v.Value, v.Desc)
		}
		w("\n\n%s.C_NAME = %s\n%s.C_PREFIX = %s\n", cls, pyString(e.Name), cls, pyString(e.Prefix()))
		w("%s = %s\n", e.Name, cls)
		for _, v := range e.Values {
			w("%s = %s.%s\n", v.Name, cls, strings.TrimPrefix(v.Name, e.Prefix()))
		}
		w("%sLAST = %d\n%sFORCE_UINT32 = 0x7fffffff\n", e.Prefix(), e.Last, e.Prefix())
	}

	w("\n# ---- typedefs of scalars ----\n\n")
	var later []api.Typedef
	for _, td := range s.Typedefs {
		if s.Classify(td.Type).Kind == api.KindScalar {
			w("%s = %s  # %s\n", td.Name, pyCType(s, td.Type), td.Desc)
		} else {
			later = append(later, td)
		}
	}

	w("\n# ---- structs ----\n")
	for _, st := range s.Structs {
		cls := pyEnumClass(st.Name)
		w("\n\nclass %s(ctypes.Structure):\n    \"\"\"%s (%s)\"\"\"\n\n    _fields_ = [\n", cls, st.Desc, st.Name)
		for _, f := range st.Fields {
			w("        (%q, %s),  # %s\n", f.Name, pyCType(s, f.Type), f.Desc)
		}
		w("    ]\n\n\n%s = %s\n", st.Name, cls)
	}

	w("\n# ---- typedefs of pointers ----\n\n")
	for _, td := range later {
		w("%s = %s  # %s\n", td.Name, pyCType(s, td.Type), td.Desc)
	}

	w("\n# ---- callbacks ----\n\n")
	for _, cb := range s.Callbacks {
		ret := "None"
		if cb.Ret != "void" {
			ret = pyCType(s, cb.Ret)
		}
		var ps []string
		for _, p := range cb.Params {
			ps = append(ps, pyCType(s, p.Type))
		}
		w("# %s\n%s = ctypes.CFUNCTYPE(%s, %s)\n", cb.Desc, cb.Name, ret, strings.Join(ps, ", "))
	}

	w("\n# ---- functions ----\n\n")
	w("Param = collections.namedtuple(\"Param\", \"name ctype dir optional\")\n\n")
	w("# release -> name -> (parameters); every function returns ol_result_t\n")
	w("# (NULL: success). Each also exists as <name>WithCodeLoc with a trailing\n")
	w("# POINTER(CodeLocation) parameter.\n")
	w("RELEASE_FUNCTIONS = {\n")
	for _, r := range s.Releases {
		w("    %q: {\n", r.Name)
		for _, f := range s.ForRelease(r.Name).Functions {
			w("        %q: (\n", f.Name)
			for _, p := range f.Params {
				w("            Param(%q, %s, %q, %s),\n", p.Name, pyCType(s, p.Type), p.Dir, pyBool(p.Optional))
			}
			w("        ),\n")
		}
		w("    },\n")
	}
	w("}\n\n")
	w("# The soname of each release's library.\nSONAMES = {\n")
	for _, r := range s.Releases {
		w("    %q: %q,\n", r.Name, r.Soname)
	}
	w("}\n\n")
	w("# release -> the functions no earlier release has: their presence in a\n# library tells its release.\nNEW_FUNCTIONS = {\n")
	for i, r := range s.Releases {
		if i == 0 {
			continue
		}
		older := map[string]bool{}
		for _, o := range s.Releases[:i] {
			for _, f := range s.ForRelease(o.Name).Functions {
				older[f.Name] = true
			}
		}
		var names []string
		for _, f := range s.ForRelease(r.Name).Functions {
			if !older[f.Name] {
				names = append(names, fmt.Sprintf("%q", f.Name))
			}
		}
		w("    %q: (%s),\n", r.Name, strings.Join(names, ", "))
	}
	w("}\n\n")
	w("# release -> enum class -> the values no earlier release has, in the enums\n# earlier releases have too (an older library refuses them).\nNEW_VALUES = {\n")
	for i, r := range s.Releases {
		if i == 0 {
			continue
		}
		older := map[string]bool{}   // enumerators of earlier releases
		oldEnum := map[string]bool{} // enums of earlier releases
		for _, o := range s.Releases[:i] {
			for _, e := range s.ForRelease(o.Name).Enums {
				oldEnum[e.Name] = true
				for _, v := range e.Values {
					older[v.Name] = true
				}
			}
		}
		w("    %q: {\n", r.Name)
		for _, e := range s.ForRelease(r.Name).Enums {
			if !oldEnum[e.Name] {
				continue
			}
			cls := pyEnumClass(e.Name)
			var names []string
			for _, v := range e.Values {
				if !older[v.Name] {
					names = append(names, cls+"."+strings.TrimPrefix(v.Name, e.Prefix()))
				}
			}
			if len(names) > 0 {
				w("        %s: (%s,),\n", cls, strings.Join(names, ", "))
			}
		}
		w("    },\n")
	}
	w("}\n\n")
	w("# The release of the oldest library, whose functions FUNCTIONS lists.\n")
	w("FUNCTIONS = RELEASE_FUNCTIONS[%q]\n\n", s.Releases[0].Name)
	w(`

def release_of(lib):
    """The release (\"22.1\", \"23.1\") whose ABI lib, a ctypes.CDLL of
    the library, serves: the newest whose new functions it exports."""
    found = next(iter(RELEASE_FUNCTIONS))
    for release, names in NEW_FUNCTIONS.items():
        if all(hasattr(lib, n) for n in names):
            found = release
    return found


def in_release(value, release):
    """Whether enum value (a member of an enum class) is part of release:
    false for the values NEW_VALUES lists for a later release."""
    releases = list(RELEASE_FUNCTIONS)
    for later in releases[releases.index(release) + 1:]:
        if value in NEW_VALUES.get(later, {}).get(type(value), ()):
            return False
    return True


def declare(lib):
    """Set argtypes and restype of every function (and its WithCodeLoc
    variant) of lib's release on lib, a ctypes.CDLL of the library; sets
    lib.ol_release to that release and returns lib."""
    lib.ol_release = release_of(lib)
    for name, params in RELEASE_FUNCTIONS[lib.ol_release].items():
        types = [p.ctype for p in params]
        for fname, argtypes in ((name, types),
                                (name + "WithCodeLoc",
                                 types + [ctypes.POINTER(CodeLocation)])):
            fn = getattr(lib, fname)
            fn.argtypes = argtypes
            fn.restype = ol_result_t
    return lib


`)

	w("# ---- info properties ----\n\n")
	w("# kind: string (NUL-terminated char[]), handle (pytype: the handle kind),\n")
	w("# enum and flags (pytype: the class), bool, pointer, scalar, struct, array;\n")
	w("# ctype: the ctypes type of the value (of one element for string/array).\n")
	w("InfoType = collections.namedtuple(\"InfoType\", \"kind ctype pytype\")\n")
	var infos []string
	for _, e := range s.Enums {
		if !e.InfoEnum() {
			continue
		}
		cls := pyEnumClass(e.Name)
		get := "olGet" + strings.TrimSuffix(cls, "Info") + "Info"
		fget := s.FunctionByName(get)
		if fget == nil {
			panic("gen: no " + get + " for " + e.Name)
		}
		if _, _, ok := infoPair(s, fget); !ok {
			panic("gen: " + get + " has no Size half")
		}
		table := strings.ToUpper(strings.TrimSuffix(strings.TrimPrefix(e.Name, "ol_"), "_t")) + "_TYPES"
		w("\n%s = {\n", table)
		for _, v := range e.Values {
			w("    %s.%s: %s,\n", cls, strings.TrimPrefix(v.Name, e.Prefix()), pyInfoType(s, v.Type))
		}
		w("}\n")
		infos = append(infos, fmt.Sprintf("    %s: (%q, %q, %s),\n", cls, get, get+"Size", table))
	}
	w("\n# info enum -> (get function, size function, property types)\n")
	w("INFO = {\n%s}\n", strings.Join(infos, ""))
	return b.String()
}

func pyBool(v bool) string {
	if v {
		return "True"
	}
	return "False"
}
