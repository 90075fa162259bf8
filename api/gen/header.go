package main

import (
	"fmt"
	"strings"

	"github.com/liboffload-go/liboffload-go/api"
)

// genForwardHeader writes include/offload.h, the second name of the public
// header: <offload.h> with -I<includedir>. It includes the one generated
// header, include/offload/OffloadAPI.h (LLVM's name: <OffloadAPI.h> with
// -I<includedir>/offload, <offload/OffloadAPI.h> with -I<includedir>); a
// quoted include is looked up next to the including file first, so the pair
// works in the source tree and installed alike.
func genForwardHeader() string {
	var b strings.Builder
	fmt.Fprintf(&b, "// %s\n", genLine)
	b.WriteString("//\n// liboffload-go: <offload.h> is the Offload API's header by a second name;\n")
	b.WriteString("// the header itself is offload/OffloadAPI.h, next to this file.\n")
	b.WriteString("// SPDX-License-Identifier: Apache-2.0\n\n")
	b.WriteString("#include \"offload/OffloadAPI.h\"\n")
	return b.String()
}

// genHeader writes the public C header: self-contained C17 and C++, with the
// names, values, layouts and prototypes of one release's ABI (s is
// ForRelease's view).
func genHeader(s *api.Spec) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("// %s\n", genLine)
	r := s.Releases[0]
	w("//\n// liboffload-go: the C interface of the Offload API, binary compatible with\n")
	w("// LLVM liboffload %s (%s). Valid C17 and C++.\n", r.Name, r.Soname)
	w("// SPDX-License-Identifier: Apache-2.0\n\n")
	w("#ifndef LIBOFFLOAD_GO_OFFLOAD_H\n#define LIBOFFLOAD_GO_OFFLOAD_H\n\n")
	w("#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n\n")
	w("#if defined(__cplusplus)\nextern \"C\" {\n#endif\n\n")
	w("#ifndef OL_APICALL\n#define OL_APICALL\n#endif\n")
	w("#ifndef OL_APIEXPORT\n#define OL_APIEXPORT\n#endif\n\n")
	for _, m := range s.Macros {
		w("/// %s\n#ifndef %s\n#define %s %s\n#endif\n\n", m.Desc, m.Name, m.Name, m.Value)
	}
	for _, h := range s.Handles {
		w("/// Handle of %s.\ntypedef struct %s *%s;\n\n", h.Desc, h.Struct, h.Name)
	}
	for i := range s.Enums {
		e := &s.Enums[i]
		w("/// %s\ntypedef enum %s {\n", e.Desc, e.Name)
		for _, v := range e.Values {
			doc := v.Desc
			if v.Type != "" {
				doc = "[" + v.Type + "] " + doc
			}
			w("  %s = %d, ///< %s\n", v.Name, v.Value, doc)
		}
		w("  %sLAST = %d,\n", e.Prefix(), e.Last)
		w("  %sFORCE_UINT32 = 0x7fffffff\n} %s;\n\n", e.Prefix(), e.Name)
	}
	for _, t := range s.Typedefs {
		w("/// %s\ntypedef %s;\n\n", t.Desc, cDecl(t.Type, t.Name))
	}
	for _, cb := range s.Callbacks {
		var ps []string
		for _, p := range cb.Params {
			ps = append(ps, cDecl(p.Type, p.Name))
		}
		w("/// %s\ntypedef %s (*%s)(%s);\n\n", cb.Desc, cb.Ret, cb.Name, strings.Join(ps, ", "))
	}
	for _, st := range s.Structs {
		w("/// %s\ntypedef struct %s {\n", st.Desc, st.Name)
		for _, f := range st.Fields {
			w("  %s; ///< %s\n", cDecl(f.Type, f.Name), f.Desc)
		}
		w("} %s;\n\n", st.Name)
	}
	for i := range s.Functions {
		f := &s.Functions[i]
		if len(f.Params) > 0 {
			w("/// Pointers to the parameters of a call of %s.\ntypedef struct ol_%s_params_t {\n", f.Name, snake(f.Name))
			for _, p := range f.Params {
				w("  %s;\n", cDecl(p.Type+" *", "p"+p.Name))
			}
			w("} ol_%s_params_t;\n\n", snake(f.Name))
		}
		w("/// %s\n", f.Desc)
		for _, p := range f.Params {
			tag := "[" + p.Dir + "]"
			if p.Optional {
				tag += "[optional]"
			}
			w("/// @param %s %s %s\n", p.Name, tag, p.Desc)
		}
		if len(f.Checks) > 0 {
			w("/// Checked before the call, in this order:\n")
			for _, c := range f.Checks {
				w("///   - %s when `%s`\n", c.Errc, c.Cond)
			}
		}
		w("OL_APIEXPORT ol_result_t OL_APICALL %s(%s);\n\n", f.Name, cParamList(s, f, false))
		w("/// %s, also recording the caller's source location.\n", f.Name)
		w("OL_APIEXPORT ol_result_t OL_APICALL %sWithCodeLoc(%s);\n\n", f.Name, cParamList(s, f, true))
	}
	w("#if defined(__cplusplus)\n} // extern \"C\"\n#endif\n\n#endif // LIBOFFLOAD_GO_OFFLOAD_H\n")
	return b.String()
}
