package main

import (
	"fmt"
	"strings"

	"github.com/liboffload-go/liboffload-go/api"
)

// genShims writes the exported C entry points. Each has the exact public
// prototype, refuses to run in a forked child, and forwards to a Go export;
// the info queries of the fixed kinds first try the snapshot
// (impl/snapshot.h), and olMemcpy and olGetMemInfo(Size) their fast paths
// (impl/allocmap.h); both answer only successes.
func genShims(s *api.Spec, constraint string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("// %s\n\n//go:build %s\n\n// The C entry points of libLLVMOffload.so.%s.\n\n#include \"shim.h\"\n\n", genLine, constraint, s.Releases[0].Name)
	for i := range s.Functions {
		f := &s.Functions[i]
		var args []string
		for _, p := range f.Params {
			ti := s.Classify(p.Type)
			switch {
			case ti.Kind == api.KindHandle:
				args = append(args, "(GoUintptr)"+p.Name)
			case ti.Kind == api.KindPointer || ti.Kind == api.KindCallback:
				args = append(args, "(void *)"+p.Name)
			default:
				args = append(args, p.Name)
			}
		}
		for _, loc := range []bool{false, true} {
			name := f.Name
			locArg := "NULL"
			if loc {
				name += "WithCodeLoc"
				locArg = "CodeLocation"
			}
			all := strings.Join(append(append([]string{}, args...), locArg), ", ")
			w("ol_result_t %s(%s) {\n", name, cParamList(s, f, loc))
			w("  OL_FORK_GUARD();\n")
			w("%s", guardFast(s, f, snapFast(s, f)+fastPath(f)))
			w("  return (ol_result_t)go%s(%s);\n}\n\n", f.GoName(), all)
		}
	}
	return b.String()
}

// genExports writes the Go functions the C shims call: they only recover
// panics and hand over to the impl package.
func genExports(s *api.Spec) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("// %s\n\npackage main\n\nimport \"C\"\n\nimport (\n\t\"unsafe\"\n\n\t\"github.com/liboffload-go/liboffload-go/impl\"\n)\n\n", genLine)
	w("// keep unsafe imported even if no function takes a pointer\nvar _ unsafe.Pointer\n\n")
	for i := range s.Functions {
		f := &s.Functions[i]
		ex := "go" + f.GoName()
		var params, args []string
		for _, p := range f.Params {
			params = append(params, goParam(p.Name)+" "+exportGoType(s, p.Type))
			args = append(args, goParam(p.Name))
		}
		params = append(params, "loc unsafe.Pointer")
		args = append(args, "loc")
		w("//export %s\nfunc %s(%s) (res uintptr) {\n", ex, ex, strings.Join(params, ", "))
		w("\tdefer impl.Recover(%q, &res)\n", f.Name)
		w("\treturn impl.%s(%s)\n}\n\n", f.GoName(), strings.Join(args, ", "))
	}
	return b.String()
}

// genExportsMap writes a release's linker version script: its public
// names (each function and its WithCodeLoc twin) at version VERS1.0,
// everything else local.
func genExportsMap(s *api.Spec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "/* %s */\nVERS1.0 {\n  global:\n", genLine)
	for _, f := range s.Functions {
		fmt.Fprintf(&b, "    %s;\n    %sWithCodeLoc;\n", f.Name, f.Name)
	}
	b.WriteString("  local:\n    *;\n};\n")
	return b.String()
}

// genRelease writes the file of cmd/liboffload that its build tag selects
// for release i: it defines the macro by which zapi.h includes that
// release's header.
func genRelease(s *api.Spec, i int) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("// %s\n\n//go:build %s\n\n// This build is the library of LLVM %s (%s).\n\npackage main\n\n", genLine, buildConstraint(s, i), s.Releases[i].Name, s.Releases[i].Soname)
	if i > 0 {
		w("// #cgo CFLAGS: -D%s\n", releaseMacro(s, i))
	}
	w("import \"C\"\n")
	return b.String()
}

// releaseMacro is the C macro defined in the build of release i (i > 0).
func releaseMacro(s *api.Spec, i int) string {
	return "OL_RELEASE_" + strings.ReplaceAll(s.Releases[i].Name, ".", "_")
}

// genReleaseHeader writes cmd/liboffload/zapi.h: the public header of the
// release being built, for the C entry points.
func genReleaseHeader(s *api.Spec) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("// %s\n\n// The public header of the release this build serves.\n", genLine)
	for i := len(s.Releases) - 1; i > 0; i-- {
		kw := "#elif"
		if i == len(s.Releases)-1 {
			kw = "#if"
		}
		w("%s defined(%s)\n#include \"%s/offload/OffloadAPI.h\"\n", kw, releaseMacro(s, i), strings.TrimPrefix(s.Releases[i].Include, "include/"))
	}
	if len(s.Releases) > 1 {
		w("#else\n")
	}
	w("#include \"offload/OffloadAPI.h\"\n")
	if len(s.Releases) > 1 {
		w("#endif\n")
	}
	return b.String()
}
