package main

import (
	"fmt"
	"strings"

	"github.com/liboffload-go/liboffload-go/api"
)

// valueKind maps the C type of an info value to its ol.ValueKind constant.
func valueKind(s *api.Spec, ctype string) string {
	if ctype == "char[]" {
		return "ValueString"
	}
	ti := s.Classify(ctype)
	switch ti.Kind {
	case api.KindHandle:
		return "ValueHandle"
	case api.KindEnum:
		return "ValueEnum"
	case api.KindBool:
		return "ValueBool"
	case api.KindPointer:
		return "ValuePointer"
	case api.KindStruct:
		if strings.TrimPrefix(ctype, "struct ") == "ol_dimensions_t" {
			return "ValueDimensions"
		}
	case api.KindScalar:
		if ti.Size == 8 {
			return "ValueU64"
		}
		return "ValueU32"
	}
	panic("gen: no value kind for " + ctype)
}

// goFieldType is the Go type of a struct member in the mirror structs.
func goFieldType(s *api.Spec, ctype string) string {
	ti := s.Classify(ctype)
	switch ti.Kind {
	case api.KindPointer:
		return "unsafe.Pointer"
	case api.KindEnum, api.KindStruct:
		return goTypeName(ctype)
	case api.KindScalar:
		if ti.Size == 8 {
			return "uint64"
		}
		return "uint32"
	}
	panic("gen: no field type for " + ctype)
}

// genEnums writes package ol: Go names for every enum and struct of the API.
func genEnums(s *api.Spec) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("// %s\n\npackage ol\n\nimport \"unsafe\"\n\n", genLine)
	w("// Version of the API.\nconst (\n\tVersionMajor = %d\n\tVersionMinor = %d\n\tVersionPatch = %d\n)\n\n", s.Version.Major, s.Version.Minor, s.Version.Patch)
	for i := range s.Enums {
		e := &s.Enums[i]
		tn := goTypeName(e.Name)
		w("// %s is %s: %s\ntype %s uint32\n\n", tn, e.Name, strings.TrimSuffix(e.Desc, "."), tn)
		w("// Enumerators of %s.\nconst (\n", e.Name)
		for _, v := range e.Values {
			w("\t%s %s = %d // %s\n", goEnumConst(e, v.Name), tn, v.Value, v.Desc)
		}
		w("\t%sLast %s = %d\n\t%sForceUint32 %s = 0x7fffffff\n)\n\n", tn, tn, e.Last, tn, tn)
		w("// String returns the C enumerator name, or \"unknown enumerator\".\nfunc (v %s) String() string {\n\tswitch v {\n", tn)
		for _, v := range e.Values {
			w("\tcase %d:\n\t\treturn %q\n", v.Value, v.Name)
		}
		w("\t}\n\treturn \"unknown enumerator\"\n}\n\n")
		w("// Valid reports whether v is one of the named enumerators.\nfunc (v %s) Valid() bool { return v.String() != \"unknown enumerator\" }\n\n", tn)
		if e.InfoEnum() {
			w("// Kind tells the type of the value the property returns.\nfunc (v %s) Kind() ValueKind {\n\tswitch v {\n", tn)
			for _, v := range e.Values {
				w("\tcase %s:\n\t\treturn %s\n", goEnumConst(e, v.Name), valueKind(s, v.Type))
			}
			w("\t}\n\treturn ValueNone\n}\n\n")
			w("// ValueType is the C type of the value the property returns.\nfunc (v %s) ValueType() string {\n\tswitch v {\n", tn)
			for _, v := range e.Values {
				w("\tcase %s:\n\t\treturn %q\n", goEnumConst(e, v.Name), v.Type)
			}
			w("\t}\n\treturn \"\"\n}\n\n")
		}
	}
	for _, st := range s.Structs {
		tn := goTypeName(st.Name)
		w("// %s mirrors the C struct %s: %s.\ntype %s struct {\n", tn, st.Name, st.Desc, tn)
		for _, f := range st.Fields {
			w("\t%s %s // %s\n", strings.ToUpper(f.Name[:1])+f.Name[1:], goFieldType(s, f.Type), f.Desc)
		}
		w("}\n\n")
	}
	w("var _ unsafe.Pointer\n")
	return b.String()
}
