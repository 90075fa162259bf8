package main

import (
	"fmt"
	"strings"

	"github.com/liboffload-go/liboffload-go/api"
)

// genABILayout writes a C program that prints every enum value, type size
// and struct member offset of the API. The ABI test compiles it once with
// our header and once with LLVM's and requires identical output.
func genABILayout(s *api.Spec) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("// %s\n\n#include <stdbool.h>\n#include <stddef.h>\n#include <stdio.h>\n#include <OffloadAPI.h>\n\n", genLine)
	w("#define V(x) printf(\"%%s %%lld\\n\", #x, (long long)(x))\n\nint main(void) {\n")
	for i := range s.Enums {
		e := &s.Enums[i]
		for _, v := range e.Values {
			w("  V(%s);\n", v.Name)
		}
		w("  V(%sLAST);\n  V(%sFORCE_UINT32);\n  V(sizeof(%s));\n", e.Prefix(), e.Prefix(), e.Name)
	}
	for _, h := range s.Handles {
		w("  V(sizeof(%s));\n", h.Name)
	}
	for _, t := range s.Typedefs {
		w("  V(sizeof(%s));\n", t.Name)
	}
	for _, cb := range s.Callbacks {
		w("  V(sizeof(%s));\n", cb.Name)
	}
	for _, st := range s.Structs {
		w("  V(sizeof(%s));\n  V(_Alignof(%s));\n", st.Name, st.Name)
		for _, f := range st.Fields {
			w("  V(offsetof(%s, %s));\n", st.Name, f.Name)
		}
	}
	for _, f := range s.Functions {
		if len(f.Params) == 0 {
			continue
		}
		n := "ol_" + snake(f.Name) + "_params_t"
		w("  V(sizeof(%s));\n", n)
		for _, p := range f.Params {
			w("  V(offsetof(%s, p%s));\n", n, p.Name)
		}
	}
	for _, m := range s.Macros {
		if m.Name != "OL_SUCCESS" && !strings.HasPrefix(m.Value, "{") { // initialisers are not numbers
			w("  V(%s);\n", m.Name)
		}
	}
	w("  printf(\"OL_SUCCESS %%d\\n\", OL_SUCCESS == NULL);\n  return 0;\n}\n")
	return b.String()
}

// genABIFunctionList lists the 70 exported names, one a line.
func genABIFunctionList(s *api.Spec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", genLine)
	for _, f := range s.Functions {
		fmt.Fprintf(&b, "%s\n%sWithCodeLoc\n", f.Name, f.Name)
	}
	return b.String()
}
