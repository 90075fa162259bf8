package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/liboffload-go/liboffload-go/api"
)

// The C entry points that answer in C (cFast, snapFast) run the checks of
// the Go entry layer first, in its order, from the same spec: the
// validation conditions (f.Checks), the NULL pointers refused with
// validation disabled too (mustNotBeNull), and the sizes and counts of
// caller buffers that cannot be real (the bytes, handles and values
// marks: what checkUserRange and userHandles refuse). A check that fails
// sends the call to Go, which gives its code and Details; so no C path
// reads the caller's memory before the Go path would have refused it.

// cCheckName is the C function that runs f's checks.
func cCheckName(f *api.Function) string { return "ol_check_" + f.Name + f.Variant }

// cCheckParam is the C type a check function takes a parameter as.
func cCheckParam(s *api.Spec, p *api.Param) string {
	switch s.Classify(p.Type).Kind {
	case api.KindHandle, api.KindPointer, api.KindCallback:
		return "const void *"
	}
	return "uint64_t "
}

var reCIdent = regexp.MustCompile(`[A-Za-z_]\w*`)

// cCond is a validation condition over the check function's parameters
// (enumerators by value: the header has no enums).
func cCond(s *api.Spec, cond string) string {
	return reCIdent.ReplaceAllStringFunc(cond, func(id string) string {
		if v, ok := s.EnumValueOf(id); ok {
			return fmt.Sprintf("%dull", v)
		}
		return id
	})
}

// cChecked reports whether f's C entry point answers some calls in C.
func cChecked(s *api.Spec, f *api.Function) bool {
	_, fast := cFast[f.Name+f.Variant]
	return fast || snapFast(s, f) != ""
}

// cCheckCall is the call of f's check function with the shim's arguments.
func cCheckCall(s *api.Spec, f *api.Function) string {
	var args []string
	for _, p := range f.Params {
		if cCheckParam(s, &p) == "const void *" {
			args = append(args, "(const void *)"+p.Name)
		} else {
			args = append(args, p.Name)
		}
	}
	return cCheckName(f) + "(" + strings.Join(args, ", ") + ")"
}

// genCChecks writes cmd/liboffload/zchecks.h: one check function per
// function whose C entry point has a fast path, over every release.
func genCChecks(s *api.Spec) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("// %s\n\n", genLine)
	w("// The checks of the Go entry layer (impl/zentry.go) for the C entry\n")
	w("// points that answer in C, in the same order: 1 when the arguments pass\n")
	w("// every one, 0 when one fails (the Go path then names it). The shims call\n")
	w("// them before their fast paths (api/gen/cchecks.go).\n")
	w("#ifndef LIBOFFLOAD_GO_ZCHECKS_H\n#define LIBOFFLOAD_GO_ZCHECKS_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n")
	w("// OL_MAX_USER_RANGE is the entry layer's maxUserRange: no caller buffer\n// is larger.\n#define OL_MAX_USER_RANGE (1ull << 47)\n\n")
	w("// ol_check_range: size bytes at p lie inside the address space\n// (checkUserRange).\n")
	w("static inline int ol_check_range(const void *p, uint64_t size) {\n")
	w("  uint64_t a = (uint64_t)(uintptr_t)p;\n  return size == 0 || (a + size >= a && size <= OL_MAX_USER_RANGE);\n}\n\n")
	w("// ol_check_array: n 8-byte elements at p lie inside the address space\n// (userHandles).\n")
	w("static inline int ol_check_array(const void *p, uint64_t n) {\n")
	w("  return n <= OL_MAX_USER_RANGE / 8 && ol_check_range(p, n * 8);\n}\n\n")
	for i := range s.Functions {
		f := &s.Functions[i]
		if !cChecked(s, f) {
			continue
		}
		var params []string
		for j := range f.Params {
			params = append(params, cCheckParam(s, &f.Params[j])+f.Params[j].Name)
		}
		w("static inline int %s(%s) {\n", cCheckName(f), strings.Join(params, ", "))
		for _, p := range f.Params {
			w("  (void)%s;\n", p.Name)
		}
		var conds []string
		for _, c := range f.Checks {
			conds = append(conds, cCond(s, c.Cond))
		}
		for j := range f.Params {
			if p := &f.Params[j]; mustNotBeNull(p) {
				conds = append(conds, p.Name+" == NULL")
			}
		}
		var ranges []api.Param // their entries are checked last, as userRanges does
		for _, p := range f.Params {
			switch p.Ptr {
			case "bytes":
				if p.Optional {
					conds = append(conds, fmt.Sprintf("%s > 0 && %s == NULL", p.Size, p.Name))
				}
				conds = append(conds, fmt.Sprintf("!ol_check_range(%s, %s)", p.Name, p.Size))
			case "handles", "values", "ranges":
				if p.Ptr != "handles" && p.Optional {
					conds = append(conds, fmt.Sprintf("%s > 0 && %s == NULL", p.Count, p.Name))
				}
				conds = append(conds, fmt.Sprintf("!ol_check_array(%s, %s)", p.Name, p.Count))
				if p.Ptr == "ranges" {
					ranges = append(ranges, p)
				}
			}
		}
		for _, c := range conds {
			w("  if (%s)\n    return 0;\n", c)
		}
		for _, p := range ranges {
			// each entry: NULL only with size 0, no range past the end
			w("  for (uint64_t i = 0; i < (uint64_t)%s; i++) {\n", p.Count)
			w("    const void *p = ((const void *const *)%s)[i];\n    uint64_t size = ((const uint64_t *)%s)[i];\n", p.Name, p.Size)
			w("    if ((p == NULL && size > 0) || !ol_check_range(p, size))\n      return 0;\n  }\n")
		}
		w("  return 1;\n}\n\n")
	}
	w("#endif\n")
	return b.String()
}

// guardFast puts f's fast path (the shim's C code that may answer the
// call) behind f's checks.
func guardFast(s *api.Spec, f *api.Function, fast string) string {
	if fast == "" {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  if (%s) {\n", cCheckCall(s, f))
	for _, l := range strings.SplitAfter(strings.TrimSuffix(fast, "\n"), "\n") {
		b.WriteString("  " + l)
	}
	b.WriteString("\n  }\n")
	return b.String()
}
