package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/liboffload-go/liboffload-go/api"
)

var (
	reGoIdent  = regexp.MustCompile(`[A-Za-z_]\w*`)
	reNullLeft = regexp.MustCompile(`NULL == (\w+)`)
	reNullRite = regexp.MustCompile(`(\w+) == NULL`)
)

// goCond translates a C validation condition into Go over the entry
// point's parameters.
func goCond(s *api.Spec, f *api.Function, cond string) string {
	types := map[string]string{}
	for _, p := range f.Params {
		types[goParam(p.Name)] = exportGoType(s, p.Type)
	}
	out := reGoIdent.ReplaceAllStringFunc(cond, func(id string) string {
		if id == "NULL" {
			return id
		}
		if v, ok := s.EnumValueOf(id); ok {
			return fmt.Sprint(v)
		}
		return goParam(id)
	})
	// C's "x & ~m" is Go's "x &^ m" (a bare ^ of an untyped constant
	// would overflow the unsigned parameter)
	out = regexp.MustCompile(`&\s*~\s*`).ReplaceAllString(out, "&^ ")
	if strings.Contains(out, "~") {
		panic("gen: " + f.Name + ": write ~ only as & ~ in " + cond)
	}
	zero := func(name string) string {
		if types[name] == "unsafe.Pointer" {
			return "nil"
		}
		return "0"
	}
	out = reNullLeft.ReplaceAllStringFunc(out, func(m string) string {
		n := reNullLeft.FindStringSubmatch(m)[1]
		return n + " == " + zero(n)
	})
	out = reNullRite.ReplaceAllStringFunc(out, func(m string) string {
		n := reNullRite.FindStringSubmatch(m)[1]
		return n + " == " + zero(n)
	})
	return out
}

func exported(fn string) string { return strings.ToUpper(fn[:1]) + fn[1:] }

// genEntry writes, for every function, the pipeline the Go export calls:
// initialisation check, validation, handle decoding, the implementation,
// conversion of the error to an ol_result_t, and the trace line.
func genEntry(s *api.Spec) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("// %s\n\npackage impl\n\nimport (\n\t\"strconv\"\n\t\"unsafe\"\n\n\t\"github.com/liboffload-go/liboffload-go/api/ol\"\n)\n\n", genLine)
	w("var _ unsafe.Pointer\n\n")
	for i := range s.Functions {
		f := &s.Functions[i]
		var params, args []string
		for _, p := range f.Params {
			params = append(params, goParam(p.Name)+" "+exportGoType(s, p.Type))
			args = append(args, goParam(p.Name))
		}
		ex := f.GoName()
		implName := f.Name + f.Variant // the hand-written method: olLaunchKernel23
		// trace printer, used by hand-written lifecycle entries too
		w("func trace%s(tb *traceBuf%s) {\n", ex, prefixComma(strings.Join(params, ", ")))
		for j, p := range f.Params {
			w("\ttb.param(%q)\n", p.Name)
			w("\t%s\n", traceExpr(s, f, j))
		}
		w("}\n\n")
		if lifecycle(f.Name) && len(f.Params) > 0 {
			// the method reads its parameters only when it needs them, and
			// gets the printer of its trace line bound to them
			var refs []string
			for _, p := range f.Params {
				if p.Ptr != "versioned" {
					panic("gen: lifecycle entry " + f.Name + " takes " + p.Name + ", which is not versioned")
				}
				refs = append(refs, fmt.Sprintf("%sRef{%s}", lowerFirst(goTypeName(s.Classify(p.Type).Elem)), goParam(p.Name)))
			}
			w("// %s is the entry point of %s: %s\n", ex, f.Name, f.Desc)
			w("func %s(%s) uintptr {\n\treturn %s(%s, func(tb *traceBuf) { trace%s(tb, %s) }, (*ol.CodeLocation)(loc))\n}\n\n", ex, strings.Join(append(append([]string{}, params...), "loc unsafe.Pointer"), ", "),
				implName, strings.Join(refs, ", "), ex, strings.Join(args, ", "))
			continue
		}
		if lifecycle(f.Name) {
			w("// %s is the entry point of %s: %s\n", ex, f.Name, f.Desc)
			w("func %s(%s) uintptr {\n\treturn %s(%s)\n}\n\n", ex, strings.Join(append(append([]string{}, params...), "loc unsafe.Pointer"), ", "),
				implName, strings.Join(append(append([]string{}, args...), "(*ol.CodeLocation)(loc)"), ", "))
			continue
		}
		w("// %s is the entry point of %s: %s\n", ex, f.Name, f.Desc)
		w("func %s(%s) uintptr {\n", ex, strings.Join(append(append([]string{}, params...), "loc unsafe.Pointer"), ", "))
		w("\tc := current()\n\tif c == nil {\n\t\treturn uninitialized()\n\t}\n")
		if snapFast(s, f) != "" {
			// the C entry point found no snapshot to answer from: publish
			// this initialisation's at its first such query
			w("\tc.snapshotOnce()\n")
		}
		w("\tvar res uintptr\n")
		if len(f.Checks) > 0 {
			w("\tif c.validate {\n\t\tres = check%s(%s)\n\t}\n", ex, strings.Join(args, ", "))
		}
		w("\tif res == 0 {\n\t\tres = c.result(c.call%s(%s))\n\t}\n", ex, strings.Join(args, ", "))
		w("\tif c.trace != nil {\n\t\ttb := c.trace.begin(%q)\n\t\ttrace%s(tb%s)\n\t\tc.trace.end(tb, res, (*ol.CodeLocation)(loc))\n\t}\n", f.Name, ex, prefixComma(strings.Join(args, ", ")))
		w("\treturn res\n}\n\n")
		if len(f.Checks) > 0 {
			w("var vf%s = [...]staticResult{\n", ex)
			for _, c := range f.Checks {
				w("\t{code: %d, details: %q},\n", s.ErrcValue(c.Errc), "validation failure: "+c.Cond)
			}
			w("}\n\n")
			w("func check%s(%s) uintptr {\n", ex, strings.Join(params, ", "))
			for j, c := range f.Checks {
				w("\tif %s {\n\t\treturn vf%s[%d].get()\n\t}\n", goCond(s, f, c.Cond), ex, j)
			}
			w("\treturn 0\n}\n\n")
		}
		// handle decoding, the pointer marks, and the call of the
		// hand-written implementation
		w("func (c *Context) call%s(%s) error {\n", ex, strings.Join(params, ", "))
		var implArgs []string
		for _, p := range f.Params {
			gp := goParam(p.Name)
			if k := handleKind(s, p.Type); k != "" {
				lookup := "get"
				if p.Optional {
					lookup = "optional"
				}
				w("\t%sObj, err := c.%ss.%s(%s, %q)\n\tif err != nil {\n\t\treturn err\n\t}\n", gp, k, lookup, gp, p.Name)
				if k == "queue" && f.Name != "olDestroyQueue" {
					// counted while the call uses the queue: a destroy
					// racing it is finished by the last call out
					// (impl/api.go, Queue.enter)
					use := fmt.Sprintf("\tif !%sObj.enter(c) {\n\t\treturn c.queues.explain(%s, %q)\n\t}\n\tdefer %sObj.leave(c)\n", gp, gp, p.Name, gp)
					if p.Optional {
						use = fmt.Sprintf("\tif %sObj != nil {\n%s\t}\n", gp, strings.ReplaceAll(use, "\t", "\t\t"))
					}
					w("%s", use)
				}
				implArgs = append(implArgs, gp+"Obj")
				continue
			}
			if s.Classify(p.Type).Kind == api.KindEnum {
				implArgs = append(implArgs, "ol."+goTypeName(p.Type)+"("+gp+")")
				continue
			}
			if consumed(f, p.Name) {
				continue // the length of a converted byte range or array
			}
			if p.Ptr == "address" {
				implArgs = append(implArgs, "uintptr("+gp+")")
				continue
			}
			if typedMark(p.Ptr) {
				if p.Ptr == "out-handle" || p.Ptr == "out-value" {
					continue // the method returns it
				}
				implArgs = append(implArgs, gp+"V")
				continue
			}
			implArgs = append(implArgs, gp)
		}
		ptrs := ptrCode(s, f)
		b.WriteString(ptrs.checks)
		b.WriteString(ptrs.convert)
		if query, size, ok := infoPair(s, f); ok {
			// both halves of an info pair share one path: query, then the Info rules
			var out string
			switch {
			case size && len(implArgs) == 3:
				out = "0, nil, " + implArgs[2]
			case !size && len(implArgs) == 4:
				out = implArgs[2] + ", " + implArgs[3] + ", nil"
			default:
				panic("gen: " + f.Name + " does not have the parameters of an info query")
			}
			w("\tv, err := c.%s(%s, %s)\n\tif err != nil {\n\t\treturn err\n\t}\n\treturn v.write(%s)\n}\n\n", query, implArgs[0], implArgs[1], out)
			continue
		}
		if ptrs.out == "" {
			w("\treturn c.%s(%s)\n}\n\n", implName, strings.Join(implArgs, ", "))
			continue
		}
		w("\tv, err := c.%s(%s)\n\tif err != nil {\n\t\treturn err\n\t}\n", implName, strings.Join(implArgs, ", "))
		w("%s\treturn nil\n}\n\n", ptrs.out)
	}
	genPtrHelpers(w)
	genMarkedTypes(s, w)
	b.WriteString(traceHelpers)
	b.WriteString(infoWriter)
	genInfoTracers(s, w)
	genStructTracers(s, w)
	return b.String()
}

func prefixComma(s string) string {
	if s == "" {
		return ""
	}
	return ", " + s
}

// traceExpr prints parameter j of f the way the reference trace does.
func traceExpr(s *api.Spec, f *api.Function, j int) string {
	p := f.Params[j]
	gp := goParam(p.Name)
	ti := s.Classify(p.Type)
	switch ti.Kind {
	case api.KindHandle:
		return fmt.Sprintf("tb.handle(%s)", gp)
	case api.KindEnum:
		return fmt.Sprintf("tb.text(ol.%s(%s).String())", goTypeName(p.Type), gp)
	case api.KindScalar:
		return fmt.Sprintf("tb.uint(uint64(%s))", gp)
	}
	// pointers and callbacks print by their mark
	elem := strings.TrimSpace(ti.Elem)
	switch p.Ptr {
	case "callback":
		return fmt.Sprintf("tb.rawPtr(%s)", gp)
	case "bytes", "c-bytes", "user", "address":
		return fmt.Sprintf("tb.ptr(%s)", gp)
	case "string":
		return fmt.Sprintf("tb.cstr(%s, -1)", gp)
	case "info-value":
		for _, q := range f.Params {
			if q.Name == "PropName" {
				return fmt.Sprintf("tb.tagged(%s, propSize, trace%sValue(ol.%s(propName)))", gp, goTypeName(q.Type), goTypeName(q.Type))
			}
		}
	case "handles", "values", "ranges":
		return fmt.Sprintf("tb.ptrToPtrIf(%s, %s > 0)", gp, goParam(p.Count))
	case "out-handle":
		return fmt.Sprintf("tb.ptrToPtr(%s)", gp)
	case "struct", "versioned", "list":
		return fmt.Sprintf("tb.ptrTo(%s, trace%s)", gp, goTypeName(strings.TrimPrefix(elem, "const ")))
	case "out-value", "info-size":
		switch elem {
		case "size_t":
			return fmt.Sprintf("tb.ptrToU64(%s)", gp)
		case "bool":
			return fmt.Sprintf("tb.ptrToBool(%s)", gp)
		case "void *":
			return fmt.Sprintf("tb.ptrToPtr(%s)", gp)
		case "uint32_t":
			return fmt.Sprintf("tb.ptrToU32(%s)", gp)
		case "float":
			return fmt.Sprintf("tb.ptrToF32(%s)", gp)
		}
	}
	panic("gen: cannot trace " + f.Name + "." + p.Name)
}

// genInfoTracers writes one printer per info enum for the PropValue output,
// typed by the property asked for.
func genInfoTracers(s *api.Spec, w func(string, ...any)) {
	for i := range s.Enums {
		e := &s.Enums[i]
		if !e.InfoEnum() {
			continue
		}
		tn := goTypeName(e.Name)
		w("func trace%sValue(v ol.%s) valuePrinter {\n\tswitch v {\n", tn, tn)
		for _, v := range e.Values {
			var pr string
			switch valueKind(s, v.Type) {
			case "ValueString":
				pr = "printString"
			case "ValueEnum":
				pr = fmt.Sprintf("func(tb *traceBuf, p unsafe.Pointer) { tb.text(ol.%s(*(*uint32)(p)).String()) }", goTypeName(v.Type))
			case "ValueU32":
				pr = "printU32"
			case "ValueU64":
				pr = "printU64"
			case "ValueBool":
				pr = "printBool"
			case "ValueHandle":
				pr = "printRawPtr"
			case "ValuePointer":
				pr = "printPtrQuirk"
			case "ValueDimensions":
				pr = "func(tb *traceBuf, p unsafe.Pointer) { traceDimensions(tb, p) }"
			}
			w("\tcase ol.%s:\n\t\treturn valuePrinter{size: %d, print: %s}\n", goEnumConst(e, v.Name), kindSize(s, v.Type), pr)
		}
		w("\t}\n\treturn valuePrinter{}\n}\n\n")
	}
}

func kindSize(s *api.Spec, ctype string) int {
	if ctype == "char[]" {
		return 0
	}
	sz, _ := layoutOf(s, ctype)
	return sz
}

// layoutOf gives size and alignment of a C type on LP64.
func layoutOf(s *api.Spec, ctype string) (size, align int) {
	ti := s.Classify(ctype)
	if ti.Kind == api.KindStruct {
		st := s.StructByName(ctype)
		off, maxAlign := 0, 1
		for _, f := range st.Fields {
			fs, fa := layoutOf(s, f.Type)
			off = (off + fa - 1) / fa * fa
			off += fs
			if fa > maxAlign {
				maxAlign = fa
			}
		}
		return (off + maxAlign - 1) / maxAlign * maxAlign, maxAlign
	}
	return ti.Size, ti.Size
}

// genStructTracers writes printers for the API structs as C compound literals.
func genStructTracers(s *api.Spec, w func(string, ...any)) {
	for _, st := range s.Structs {
		w("func trace%s(tb *traceBuf, p unsafe.Pointer) {\n\ttb.text(\"(struct %s){\")\n", goTypeName(st.Name), st.Name)
		off := 0
		for k, f := range st.Fields {
			fs, fa := layoutOf(s, f.Type)
			off = (off + fa - 1) / fa * fa
			sep := ", "
			if k == 0 {
				sep = ""
			}
			w("\ttb.text(%q)\n", sep+"."+f.Name+" = ")
			at := fmt.Sprintf("unsafe.Add(p, %d)", off)
			ti := s.Classify(f.Type)
			switch ti.Kind {
			case api.KindPointer:
				if strings.TrimPrefix(ti.Elem, "const ") == "char" {
					w("\ttb.cstr(*(*unsafe.Pointer)(%s), -1)\n", at)
				} else {
					w("\ttb.ptr(*(*unsafe.Pointer)(%s))\n", at)
				}
			case api.KindEnum:
				w("\ttb.text(ol.%s(*(*uint32)(%s)).String())\n", goTypeName(f.Type), at)
			case api.KindStruct:
				w("\ttrace%s(tb, %s)\n", goTypeName(f.Type), at)
			case api.KindScalar:
				if fs == 8 {
					w("\ttb.uint(*(*uint64)(%s))\n", at)
				} else {
					w("\ttb.uint(uint64(*(*uint32)(%s)))\n", at)
				}
			}
			off += fs
		}
		w("\ttb.text(\"}\")\n}\n\n")
	}
}
