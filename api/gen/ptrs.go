package main

import (
	"fmt"
	"strings"

	"github.com/liboffload-go/liboffload-go/api"
)

// typedMark reports whether the entry layer converts a parameter of this
// mark to a typed Go value (or writes it, for outputs); the others reach
// the method as the C pointer.
func typedMark(mark string) bool {
	switch mark {
	case "bytes", "string", "handles", "values", "ranges", "struct", "versioned", "list", "out-handle", "out-value":
		return true
	}
	return false
}

// consumed reports whether name is the size or count of a converted
// parameter of f: the Go value carries its length.
func consumed(f *api.Function, name string) bool {
	for _, p := range f.Params {
		if (p.Ptr == "bytes" && p.Size == name) || ((p.Ptr == "handles" || p.Ptr == "values" || p.Ptr == "ranges") && p.Count == name) {
			return true
		}
	}
	return false
}

// mustNotBeNull reports whether the runtime refuses NULL for p even with
// validation disabled: every typed pointer and callback that is not
// optional, and an address marked nonnull.
func mustNotBeNull(p *api.Param) bool {
	switch {
	case p.Optional:
		return false
	case typedMark(p.Ptr), p.Ptr == "callback":
		return true
	}
	return p.Ptr == "address" && p.NonNull
}

// outGoType is the Go type of an out-value, written where the pointer says.
func outGoType(s *api.Spec, p *api.Param) string {
	elem := strings.TrimSpace(s.Classify(p.Type).Elem)
	switch elem {
	case "size_t":
		return "uint64"
	case "bool":
		return "bool"
	case "void *":
		return "uintptr"
	case "uint32_t":
		return "uint32"
	case "float":
		return "float32"
	}
	panic("gen: no out-value type for " + p.Name + " (" + p.Type + ")")
}

type ptrBlocks struct{ checks, convert, out string }

// ptrCode writes what the marks of f ask for, in parameter order: first
// the NULL checks (they hold with validation disabled too), then the
// conversions to typed values, and the write of the output the method
// returns as v.
func ptrCode(s *api.Spec, f *api.Function) ptrBlocks {
	var ck, cv, out, late strings.Builder
	for i := range f.Params {
		p := &f.Params[i]
		gp := goParam(p.Name)
		if p.Ptr != "" && !validMark(p.Ptr) {
			panic("gen: unknown pointer mark " + p.Ptr + " on " + f.Name + "." + p.Name)
		}
		if mustNotBeNull(p) {
			fmt.Fprintf(&ck, "\tif %s == nil {\n\t\treturn nullPointer(%q)\n\t}\n", gp, p.Name)
		}
		switch p.Ptr {
		case "bytes":
			size := goParam(p.Size)
			if p.Optional {
				fmt.Fprintf(&cv, "\tif %s > 0 && %s == nil {\n\t\treturn ol.Errorf(ol.ErrcInvalidArgument, \"%s is %%d but %s is NULL\", %s)\n\t}\n", size, gp, p.Size, p.Name, size)
			}
			fmt.Fprintf(&cv, "\t%sV, err := userBytes(%q, %q, %q, %s, %s)\n\tif err != nil {\n\t\treturn err\n\t}\n", gp, f.Name, p.Name, p.Size, gp, size)
		case "handles":
			kind := handleKind(s, s.Classify(p.Type).Elem)
			if kind == "" {
				panic("gen: " + f.Name + "." + p.Name + " is not an array of handles")
			}
			fmt.Fprintf(&cv, "\t%sV, err := userHandles(%q, %q, %q, %q, %q, %s, %s)\n\tif err != nil {\n\t\treturn err\n\t}\n", gp, f.Name, p.Name, p.Count, p.Count+"*8 =", kind+"s", gp, goParam(p.Count))
		case "values":
			elem := strings.TrimPrefix(strings.TrimSpace(s.Classify(p.Type).Elem), "const ")
			helper, what := "userSizes", "sizes"
			if s.Classify(elem).Kind == api.KindPointer {
				helper, what = "userAddrs", "pointers"
			}
			count := goParam(p.Count)
			if p.Optional {
				fmt.Fprintf(&cv, "\tif %s > 0 && %s == nil {\n\t\treturn ol.Errorf(ol.ErrcInvalidNullPointer, \"%s is %%d but %s is NULL\", %s)\n\t}\n", count, gp, p.Count, p.Name, count)
			}
			fmt.Fprintf(&cv, "\t%sV, err := %s(%q, %q, %q, %q, %q, %s, %s)\n\tif err != nil {\n\t\treturn err\n\t}\n", gp, helper, f.Name, p.Name, p.Count, p.Count+"*8 =", what, gp, count)
		case "ranges":
			// the array now, its entries once the sizes are viewed
			count := goParam(p.Count)
			if p.Optional {
				fmt.Fprintf(&cv, "\tif %s > 0 && %s == nil {\n\t\treturn ol.Errorf(ol.ErrcInvalidNullPointer, \"%s is %%d but %s is NULL\", %s)\n\t}\n", count, gp, p.Count, p.Name, count)
			}
			fmt.Fprintf(&cv, "\tif _, err := userAddrs(%q, %q, %q, %q, %q, %s, %s); err != nil {\n\t\treturn err\n\t}\n", f.Name, p.Name, p.Count, p.Count+"*8 =", "pointers", gp, count)
			fmt.Fprintf(&late, "\tvar %sBuf [8][]byte // the views stay on the stack for up to 8 entries\n", gp)
			fmt.Fprintf(&late, "\t%sV, err := userRanges(%q, %q, %q, %s, %sV, %sBuf[:0])\n\tif err != nil {\n\t\treturn err\n\t}\n", gp, f.Name, p.Name, p.Size, gp, goParam(p.Size), gp)
		case "versioned":
			fmt.Fprintf(&cv, "\t%sV, err := read%s(%q, %s)\n\tif err != nil {\n\t\treturn err\n\t}\n", gp, goTypeName(s.Classify(p.Type).Elem), p.Name, gp)
		case "list":
			tn := goTypeName(s.Classify(p.Type).Elem)
			fmt.Fprintf(&cv, "\tvar %sBuf [4]%sValue\n", gp, lowerFirst(tn))
			fmt.Fprintf(&cv, "\t%sV, err := list%s(%q, %s, %sBuf[:0])\n\tif err != nil {\n\t\treturn err\n\t}\n", gp, tn, p.Name, gp, gp)
		case "string":
			fmt.Fprintf(&cv, "\t%sV := goString(%s, 1<<16)\n", gp, gp)
		case "struct":
			elem := strings.TrimPrefix(strings.TrimSpace(s.Classify(p.Type).Elem), "const ")
			if s.StructByName(elem) == nil {
				panic("gen: " + f.Name + "." + p.Name + " is not a pointer to an API struct")
			}
			fmt.Fprintf(&cv, "\t%sV := (*ol.%s)(%s)\n", gp, goTypeName(elem), gp)
		case "out-handle":
			fmt.Fprintf(&out, "\t*(*uintptr)(%s) = v\n", gp)
		case "out-value":
			if p.Optional {
				fmt.Fprintf(&out, "\tif %s != nil {\n\t\t*(*%s)(%s) = v\n\t}\n", gp, outGoType(s, p), gp)
			} else {
				fmt.Fprintf(&out, "\t*(*%s)(%s) = v\n", outGoType(s, p), gp)
			}
		}
	}
	return ptrBlocks{ck.String(), cv.String() + late.String(), out.String()}
}

func lowerFirst(s string) string { return strings.ToLower(s[:1]) + s[1:] }

func validMark(m string) bool {
	for _, v := range api.PtrMarks {
		if v == m {
			return true
		}
	}
	return false
}

// genPtrHelpers writes the conversions the entry layer shares: views of
// the caller's memory, valid only during the call and never copied.
func genPtrHelpers(w func(string, ...any)) {
	w(`// maxUserRange bounds a buffer the caller hands in by pointer and size:
// no user address range on a 64-bit machine is larger, and a Go slice of
// it could not be made.
const maxUserRange = 1 << 47

// nullPointer refuses a NULL that the runtime would have to dereference:
// it holds with validation disabled too.
func nullPointer(param string) error {
	return ol.NewError(ol.ErrcInvalidNullPointer, param+" is NULL")
}

// checkUserRange refuses a caller's buffer whose size cannot be real: it
// wraps around the address space or exceeds any user address range.
func checkUserRange(fn, ptrName, sizeName string, p unsafe.Pointer, size uint64) error {
	if size == 0 {
		return nil
	}
	if a := uint64(uintptr(p)); a+size < a || size > maxUserRange {
		return ol.Errorf(ol.ErrcInvalidSize, "%%s: %%s %%d at %%s %%p runs past the end of the address space", fn, sizeName, size, ptrName, p)
	}
	return nil
}

// userBytes views size bytes of the caller's memory at p, without a copy.
func userBytes(fn, ptrName, sizeName string, p unsafe.Pointer, size uint64) ([]byte, error) {
	if err := checkUserRange(fn, ptrName, sizeName, p, size); err != nil {
		return nil, err
	}
	if size == 0 {
		return nil, nil
	}
	return unsafe.Slice((*byte)(p), size), nil
}

// userHandles views n handle values of the caller's memory at p, without
// a copy. sizeName names the byte size in messages (a constant: no
// concatenation on the call's path).
func userHandles(fn, ptrName, countName, sizeName, what string, p unsafe.Pointer, n uint64) ([]uintptr, error) {
	if n > maxUserRange/8 {
		return nil, ol.Errorf(ol.ErrcInvalidSize, "%%s: %%s %%d is more %%s than the address space holds", fn, countName, n, what)
	}
	if err := checkUserRange(fn, ptrName, sizeName, p, n*8); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	return unsafe.Slice((*uintptr)(p), n), nil
}

// userAddrs views n addresses of the caller's memory at p, without a
// copy: pointers the runtime judges (its allocation map) and never reads.
func userAddrs(fn, ptrName, countName, sizeName, what string, p unsafe.Pointer, n uint64) ([]uintptr, error) {
	return userHandles(fn, ptrName, countName, sizeName, what, p, n)
}

// userRanges views the byte ranges of the ranges mark: len(sizes)
// pointers at ptrs (an array userAddrs checked), each to sizes[i] bytes.
// Every entry is checked before the method sees any: NULL only with size
// 0 (a nil view), and no range past the end of the address space. The
// views go into buf (the caller's stack) while they fit.
func userRanges(fn, ptrName, sizeName string, ptrs unsafe.Pointer, sizes []uint64, buf [][]byte) ([][]byte, error) {
	if len(sizes) == 0 {
		return nil, nil
	}
	for i, p := range unsafe.Slice((*unsafe.Pointer)(ptrs), len(sizes)) {
		switch a, sz := uint64(uintptr(p)), sizes[i]; {
		case p == nil && sz > 0:
			return nil, ol.Errorf(ol.ErrcInvalidNullPointer, "%%s[%%d] is NULL but %%s[%%d] is %%d", ptrName, i, sizeName, i, sz)
		case a+sz < a || sz > maxUserRange:
			return nil, ol.Errorf(ol.ErrcInvalidSize, "%%s: %%s[%%d] is %%d: %%s[%%d] %%p plus that runs past the end of the address space", fn, sizeName, i, sz, ptrName, i, p)
		case p == nil:
			buf = append(buf, nil)
		default:
			buf = append(buf, unsafe.Slice((*byte)(p), sz))
		}
	}
	return buf, nil
}

// maxListEntries bounds the walk of a list (the list mark) whose end entry
// is missing.
const maxListEntries = 1024

// userSizes views n size_t values of the caller's memory at p, without a copy.
func userSizes(fn, ptrName, countName, sizeName, what string, p unsafe.Pointer, n uint64) ([]uint64, error) {
	if _, err := userHandles(fn, ptrName, countName, sizeName, what, p, n); err != nil || n == 0 {
		return nil, err
	}
	return unsafe.Slice((*uint64)(p), n), nil
}

`)
}

// traceHelpers are the trace printers that read the caller's memory: the
// generated trace functions call them by the marks and types of the
// parameters, so no hand-written code dereferences a C pointer.
const traceHelpers = `// goString copies a C string of at most max bytes ("" for NULL).
func goString(p unsafe.Pointer, max int) string {
	if p == nil {
		return ""
	}
	n := 0
	for n < max && *(*byte)(unsafe.Add(p, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(p), n))
}

// ptr prints a pointer the way the reference prints void pointers.
func (tb *traceBuf) ptr(p unsafe.Pointer) { tb.handle(uintptr(p)) }

// rawPtr prints an address even when it is NULL (0x0).
func (tb *traceBuf) rawPtr(p unsafe.Pointer) { tb.hex(uintptr(p)) }

// cstr prints a C string as its address followed by the text.
func (tb *traceBuf) cstr(p unsafe.Pointer, max int) {
	if p == nil {
		tb.b = append(tb.b, "nullptr"...)
		return
	}
	if max < 0 || max > 1<<16 {
		max = 1 << 16
	}
	tb.hex(uintptr(p))
	tb.b = append(tb.b, " ("...)
	tb.b = append(tb.b, goString(p, max)...)
	tb.b = append(tb.b, ')')
}

func (tb *traceBuf) open(p unsafe.Pointer) bool {
	if p == nil {
		tb.b = append(tb.b, "nullptr"...)
		return false
	}
	tb.hex(uintptr(p))
	tb.b = append(tb.b, " ("...)
	return true
}

// peek copies n (at most 16) bytes of the caller's memory at p to print
// them, after p and " ("; false, with "(unreadable)" printed instead, when
// they cannot be read: a call refused for a bad pointer is traced too, and
// its trace must not fault where the call did not.
func (tb *traceBuf) peek(p unsafe.Pointer, n int) (v [16]byte, ok bool) {
	tb.hex(uintptr(p))
	if !safeRead(v[:n], uintptr(p)) {
		tb.b = append(tb.b, " (unreadable)"...)
		return v, false
	}
	tb.b = append(tb.b, " ("...)
	return v, true
}

func (tb *traceBuf) ptrToU64(p unsafe.Pointer) {
	if p == nil {
		tb.b = append(tb.b, "nullptr"...)
	} else if v, ok := tb.peek(p, 8); ok {
		tb.uint(*(*uint64)(unsafe.Pointer(&v[0])))
		tb.b = append(tb.b, ')')
	}
}

func (tb *traceBuf) ptrToU32(p unsafe.Pointer) {
	if p == nil {
		tb.b = append(tb.b, "nullptr"...)
	} else if v, ok := tb.peek(p, 4); ok {
		tb.uint(uint64(*(*uint32)(unsafe.Pointer(&v[0]))))
		tb.b = append(tb.b, ')')
	}
}

func (tb *traceBuf) ptrToF32(p unsafe.Pointer) {
	if p == nil {
		tb.b = append(tb.b, "nullptr"...)
	} else if v, ok := tb.peek(p, 4); ok {
		tb.b = strconv.AppendFloat(tb.b, float64(*(*float32)(unsafe.Pointer(&v[0]))), 'g', -1, 32)
		tb.b = append(tb.b, ')')
	}
}

func (tb *traceBuf) ptrToBool(p unsafe.Pointer) {
	if p == nil {
		tb.b = append(tb.b, "nullptr"...)
	} else if v, ok := tb.peek(p, 1); ok {
		tb.uint(uint64(v[0]))
		tb.b = append(tb.b, ')')
	}
}

func (tb *traceBuf) ptrToPtr(p unsafe.Pointer) {
	if p == nil {
		tb.b = append(tb.b, "nullptr"...)
	} else if v, ok := tb.peek(p, 8); ok {
		tb.handle(*(*uintptr)(unsafe.Pointer(&v[0])))
		tb.b = append(tb.b, ')')
	}
}

// ptrToPtrIf dereferences only when the array it points to is not empty.
func (tb *traceBuf) ptrToPtrIf(p unsafe.Pointer, nonEmpty bool) {
	if !nonEmpty {
		tb.ptr(p)
		return
	}
	tb.ptrToPtr(p)
}

func (tb *traceBuf) ptrTo(p unsafe.Pointer, print func(*traceBuf, unsafe.Pointer)) {
	if tb.open(p) {
		print(tb, p)
		tb.b = append(tb.b, ')')
	}
}

// valuePrinter prints the value an info query wrote, typed by the property.
type valuePrinter struct {
	size  int // bytes the value takes; 0 for strings
	print func(*traceBuf, unsafe.Pointer)
}

// tagged prints an info output buffer. It reads no more than the caller
// said the buffer holds.
func (tb *traceBuf) tagged(p unsafe.Pointer, propSize uint64, vp valuePrinter) {
	switch {
	case p == nil:
		tb.b = append(tb.b, "nullptr"...)
	case vp.print == nil:
		tb.b = append(tb.b, "unknown enumerator"...)
	case vp.size == 0:
		tb.cstr(p, int(min(propSize, 1<<16)))
	case propSize < uint64(vp.size):
		// The reference prints the full value even from a buffer declared
		// smaller; do the same from a copy that cannot fault.
		var tmp [16]byte
		tb.hex(uintptr(p))
		if !safeRead(tmp[:vp.size], uintptr(p)) {
			tb.b = append(tb.b, " (unreadable)"...)
			return
		}
		tb.b = append(tb.b, " ("...)
		vp.print(tb, unsafe.Pointer(&tmp[0]))
		tb.b = append(tb.b, ')')
	default:
		tb.hex(uintptr(p))
		tb.b = append(tb.b, " ("...)
		vp.print(tb, p)
		tb.b = append(tb.b, ')')
	}
}

func printString(tb *traceBuf, p unsafe.Pointer) { tb.cstr(p, -1) }
func printU32(tb *traceBuf, p unsafe.Pointer)    { tb.uint(uint64(*(*uint32)(p))) }
func printU64(tb *traceBuf, p unsafe.Pointer)    { tb.uint(*(*uint64)(p)) }
func printBool(tb *traceBuf, p unsafe.Pointer)   { tb.uint(uint64(*(*uint8)(p))) }
func printRawPtr(tb *traceBuf, p unsafe.Pointer) { tb.rawPtr(*(*unsafe.Pointer)(p)) }

// printPtrQuirk reproduces how the reference prints a void* info value: the
// inner pointer print is followed by the printer's own NULL result (0x0).
func printPtrQuirk(tb *traceBuf, p unsafe.Pointer) {
	tb.ptrToPtr(p)
	tb.b = append(tb.b, "0x0"...)
}
`

// infoWriter writes an info query's value or size where the caller's
// pointers say: the outputs of the info-value and info-size marks.
const infoWriter = `// write applies the Info rules (the info-value and info-size marks): the Size variant reports the byte count;
// otherwise the value is written only if it fits, exactly size() bytes, and
// strings include their terminating NUL.
func (v infoValue) write(propSize uint64, out, sizeRet unsafe.Pointer) error {
	n := v.size()
	if sizeRet != nil {
		*(*uint64)(sizeRet) = n
		return nil
	}
	if out == nil {
		return ol.NewError(ol.ErrcInvalidNullPointer, "value and size outputs are nullptr")
	}
	if propSize < n {
		return ol.NewError(ol.ErrcInvalidSize, "provided size is invalid")
	}
	switch v.kind {
	case ol.ValueString:
		dst := unsafe.Slice((*byte)(out), n)
		copy(dst, v.s)
		dst[n-1] = 0
	case ol.ValueU32, ol.ValueEnum:
		*(*uint32)(out) = uint32(v.u)
	case ol.ValueU64, ol.ValueHandle, ol.ValuePointer:
		*(*uint64)(out) = v.u
	case ol.ValueBool:
		b := uint8(0)
		if v.u != 0 {
			b = 1
		}
		*(*uint8)(out) = b
	case ol.ValueDimensions:
		*(*ol.Dimensions)(out) = v.d
	}
	return nil
}

// writeWords writes the value, n bytes, at the start of words (the
// snapshot's layout); words must hold n bytes.
func (v infoValue) writeWords(words []uint64, n uint64) error {
	if n > uint64(len(words))*8 {
		return ol.NewError(ol.ErrcInvalidSize, "provided size is invalid")
	}
	return v.write(n, unsafe.Pointer(&words[0]), nil)
}

`

// markedStructs are the structs that versioned and list parameters point
// to, each once, in spec order; lifecycle says which versioned ones a
// lifecycle entry takes (it gets a reference to read later).
func markedStructs(s *api.Spec) (versioned, lists []*api.Struct, listParams map[string]api.Param, lifecycleRefs map[string]string) {
	seen := map[string]bool{}
	listParams, lifecycleRefs = map[string]api.Param{}, map[string]string{}
	for _, f := range s.Functions {
		for _, p := range f.Params {
			if p.Ptr != "versioned" && p.Ptr != "list" {
				continue
			}
			st := s.StructByName(s.Classify(p.Type).Elem)
			if p.Ptr == "versioned" && lifecycle(f.Name) {
				lifecycleRefs[st.Name] = p.Name
			}
			if seen[st.Name] {
				continue
			}
			seen[st.Name] = true
			if p.Ptr == "versioned" {
				versioned = append(versioned, st)
			} else {
				lists = append(lists, st)
				listParams[st.Name] = p
			}
		}
	}
	return versioned, lists, listParams, lifecycleRefs
}

// scalarGoType is the Go type of a scalar or enum field of a struct.
func scalarGoType(s *api.Spec, ctype string) (string, bool) {
	ti := s.Classify(ctype)
	switch ti.Kind {
	case api.KindEnum:
		return "ol." + goTypeName(strings.TrimSpace(ctype)), true
	case api.KindScalar:
		if ti.Size == 8 {
			return "uint64", true
		}
		return "uint32", true
	case api.KindBool:
		return "bool", true
	}
	return "", false
}

// genMarkedTypes writes the Go values and readers of the versioned and
// list marks: for a versioned struct, its value (counted arrays as
// slices, counts consumed), read<Struct> that checks Size and reads the
// fields it covers, and for a lifecycle entry a <struct>Ref to read later;
// for a list, the value of an entry (its data read into the field of its
// type) and list<Struct> that walks the list to its end.
func genMarkedTypes(s *api.Spec, w func(string, ...any)) {
	versioned, lists, listParams, refs := markedStructs(s)
	for _, st := range versioned {
		genVersioned(s, st, refs[st.Name], w)
	}
	for _, st := range lists {
		genList(s, st, listParams[st.Name], w)
	}
}

func genVersioned(s *api.Spec, st *api.Struct, refParam string, w func(string, ...any)) {
	tn := goTypeName(st.Name)
	vt := lowerFirst(tn) + "Value"
	counted := map[string]bool{}
	for _, f := range st.Fields {
		if f.Count != "" {
			counted[f.Count] = true
		}
	}
	// the Go value
	w("// %s is %s as the versioned mark reads it: the fields the caller's\n// %s covers (zero otherwise), counted arrays as views of the caller's\n// memory, valid only during the call.\ntype %s struct {\n", vt, st.Name, st.Size, vt)
	type fieldAt struct {
		f        api.Field
		off, end int
	}
	var fields []fieldAt
	off, align, req, optional := 0, 1, 0, false
	for _, f := range st.Fields {
		fs, fa := layoutOf(s, f.Type)
		off = (off + fa - 1) / fa * fa
		fields = append(fields, fieldAt{f, off, off + fs})
		off += fs
		if !f.Optional {
			align, req = max(align, fa), off
		}
		optional = optional || f.Optional
	}
	// the size of the first release: its fields (the required ones), padded
	firstSize := (req + align - 1) / align * align
	for _, fa := range fields {
		f := fa.f
		if counted[f.Name] {
			continue
		}
		if f.Count != "" {
			et, ok := scalarGoType(s, strings.TrimPrefix(s.Classify(f.Type).Elem, "const "))
			if !ok {
				panic("gen: " + st.Name + "." + f.Name + ": no Go slice for " + f.Type)
			}
			w("\t%s []%s // %s entries: %s\n", exported(f.Name), et, f.Count, f.Desc)
			continue
		}
		gt, ok := scalarGoType(s, f.Type)
		if !ok {
			panic("gen: " + st.Name + "." + f.Name + ": no Go value for " + f.Type)
		}
		w("\t%s %s // %s\n", exported(f.Name), gt, f.Desc)
	}
	w("}\n\n")
	// the reader
	w("// read%s checks and reads the caller's %s at p (the versioned mark):\n// %s must cover the fields of its first release, %d bytes; a larger\n// struct is a later one, read as far as this one goes. name is the\n// parameter's. NULL reads as nil.\n", tn, st.Name, st.Size, firstSize)
	w("func read%s(name string, p unsafe.Pointer) (*%s, error) {\n\tif p == nil {\n\t\treturn nil, nil\n\t}\n", tn, vt)
	w("\tsize := *(*uint64)(p)\n\tif size < %d {\n", firstSize)
	last := ""
	for _, fa := range fields {
		if !fa.f.Optional {
			last = fa.f.Name
		}
	}
	w("\t\tfield := %q // the first field the size leaves out\n", last)
	w("\t\tfor _, f := range [...]struct {\n\t\t\tname string\n\t\t\tend  uint64\n\t\t}{")
	for i, fa := range fields {
		if fa.f.Optional {
			break
		}
		if i > 0 {
			w(", ")
		}
		w("{%q, %d}", fa.f.Name, fa.end)
	}
	w("} {\n\t\t\tif size < f.end {\n\t\t\t\tfield = f.name\n\t\t\t\tbreak\n\t\t\t}\n\t\t}\n")
	what := fmt.Sprintf("sizeof(%s) = %d", st.Name, firstSize)
	if optional {
		what = fmt.Sprintf("%d, the size of %s in its first release", firstSize, st.Name)
	}
	w("\t\treturn nil, ol.Errorf(ol.ErrcInvalidSize, \"%%s->%s is %%d, less than %s: %%s->%%s does not fit\", name, size, name, field)\n\t}\n", st.Size, what)
	w("\tv := &%s{%s: size}\n", vt, exported(st.Size))
	local := func(f api.Field) string { return "f" + exported(f.Name) }
	for _, fa := range fields[1:] {
		f := fa.f
		var read string
		ti := s.Classify(f.Type)
		switch {
		case ti.Kind == api.KindPointer:
			read = fmt.Sprintf("*(*unsafe.Pointer)(unsafe.Add(p, %d))", fa.off)
		case ti.Kind == api.KindEnum:
			read = fmt.Sprintf("%s(*(*uint32)(unsafe.Add(p, %d)))", mustScalar(s, f.Type), fa.off)
		case ti.Kind == api.KindBool:
			read = fmt.Sprintf("*(*uint8)(unsafe.Add(p, %d)) != 0", fa.off)
		default:
			read = fmt.Sprintf("*(*%s)(unsafe.Add(p, %d))", mustScalar(s, f.Type), fa.off)
		}
		lt := "unsafe.Pointer"
		if ti.Kind != api.KindPointer {
			lt = mustScalar(s, f.Type)
		}
		if f.Optional {
			w("\tvar %s %s // a later field: zero unless the caller has it\n", local(f), lt)
			w("\tif size >= %d {\n\t\t%s = %s\n\t}\n", fa.end, local(f), read)
		} else {
			w("\t%s := %s\n", local(f), read)
		}
	}
	for _, fa := range fields[1:] {
		f := fa.f
		if counted[f.Name] {
			continue
		}
		if f.Count == "" {
			w("\tv.%s = %s\n", exported(f.Name), local(f))
			continue
		}
		elem := strings.TrimPrefix(s.Classify(f.Type).Elem, "const ")
		et := mustScalar(s, elem)
		esz, _ := layoutOf(s, elem)
		n := local(api.Field{Name: f.Count})
		w("\tif %s > 0 {\n", n)
		w("\t\tif %s == nil {\n\t\t\treturn nil, ol.Errorf(ol.ErrcInvalidNullPointer, \"%%s->%s is %%d but %%s->%s is NULL\", name, %s, name)\n\t\t}\n", local(f), f.Count, f.Name, n)
		w("\t\tif a := uint64(uintptr(%s)); uint64(%s) > maxUserRange/%d || a+uint64(%s)*%d < a {\n", local(f), n, esz, n, esz)
		w("\t\t\treturn nil, ol.Errorf(ol.ErrcInvalidSize, \"%%s->%s is %%d: %%s->%s %%p plus %%d bytes runs past the end of the address space\", name, %s, name, %s, uint64(%s)*%d)\n\t\t}\n", f.Count, f.Name, n, local(f), n, esz)
		w("\t\tv.%s = unsafe.Slice((*%s)(%s), %s)\n", exported(f.Name), et, local(f), n)
		if s.Classify(elem).Kind == api.KindEnum {
			w("\t\tfor i, e := range v.%s {\n\t\t\tif !e.Valid() {\n\t\t\t\treturn nil, ol.Errorf(ol.ErrcInvalidEnumeration, \"%%s->%s[%%d] is %%d, not an %s\", name, i, uint32(e))\n\t\t\t}\n\t\t}\n", exported(f.Name), f.Name, elem)
		}
		w("\t}\n")
	}
	w("\treturn v, nil\n}\n\n")
	if refParam != "" {
		rt := lowerFirst(tn) + "Ref"
		w("// %s is a caller's %s that a lifecycle entry reads only when it\n// needs it (olInit: at the first reference), with read%s.\ntype %s struct{ p unsafe.Pointer }\n\n", rt, st.Name, tn, rt)
		w("// read checks and reads it (read%s); NULL reads as nil.\nfunc (r %s) read() (*%s, error) { return read%s(%q, r.p) }\n\n", tn, rt, vt, tn, refParam)
	}
}

func mustScalar(s *api.Spec, ctype string) string {
	t, ok := scalarGoType(s, ctype)
	if !ok {
		panic("gen: no Go value for " + ctype)
	}
	return t
}

// listData are the Go types and field names of a list entry's data.
var listData = map[string][2]string{"bool": {"bool", "Bool"}, "uint32_t": {"uint32", "U32"}, "size_t": {"uint64", "U64"}}

func genList(s *api.Spec, st *api.Struct, p api.Param, w func(string, ...any)) {
	_, e, err := s.ListOf(p)
	if err != nil {
		panic("gen: " + err.Error())
	}
	tn := goTypeName(st.Name)
	vt := lowerFirst(tn) + "Value"
	var tag, tagC, data string
	for _, f := range st.Fields {
		if s.Classify(f.Type).Kind == api.KindEnum {
			tag, tagC = exported(f.Name), f.Name
		} else {
			data = exported(f.Name)
		}
	}
	et := "ol." + goTypeName(e.Name)
	w("// %s is one entry before the end of a list of %s (the\n// list mark): its type, and the value its data points to in the field of that\n// value's C type.\ntype %s struct {\n\tType %s\n", vt, st.Name, vt, et)
	have := map[string]bool{}
	for _, v := range e.Values {
		if v.Name == p.End || have[v.Data] {
			continue
		}
		have[v.Data] = true
		w("\t%s %s // the value of a %s entry\n", listData[v.Data][1], listData[v.Data][0], v.Data+" *")
	}
	w("}\n\n")
	w("// list%s reads a list of %s up to its %s entry (at most\n// maxListEntries), appending to buf: a NULL list is empty. An entry of an\n// unknown type or with NULL data is refused, naming it (name is the\n// parameter's).\n", tn, st.Name, p.End)
	w("func list%s(name string, p unsafe.Pointer, buf []%s) ([]%s, error) {\n\tif p == nil {\n\t\treturn nil, nil\n\t}\n", tn, vt, vt)
	w("\tfor i := 0; i < maxListEntries; i++ {\n\t\te := (*ol.%s)(unsafe.Add(p, uintptr(i)*unsafe.Sizeof(ol.%s{})))\n\t\tswitch e.%s {\n", tn, tn, tag)
	for _, v := range e.Values {
		c := "ol." + goEnumConst(e, v.Name)
		if v.Name == p.End {
			w("\t\tcase %s:\n\t\t\treturn buf, nil\n", c)
			continue
		}
		short := strings.TrimPrefix(v.Name, e.Prefix())
		w("\t\tcase %s:\n\t\t\tif e.%s == nil {\n\t\t\t\treturn nil, ol.Errorf(ol.ErrcInvalidNullPointer, \"%%s[%%d] (%s) has a NULL data pointer\", name, i)\n\t\t\t}\n", c, data, short)
		read := fmt.Sprintf("*(*%s)(e.%s)", listData[v.Data][0], data)
		if v.Data == "bool" {
			read = fmt.Sprintf("*(*uint8)(e.%s) != 0", data) // any nonzero byte is true, as in C
		}
		w("\t\t\tbuf = append(buf, %s{Type: e.%s, %s: %s})\n", vt, tag, listData[v.Data][1], read)
	}
	w("\t\tdefault:\n\t\t\treturn nil, ol.Errorf(ol.ErrcInvalidEnumeration, \"%%s[%%d].%s is %%d, not an %s\", name, i, uint32(e.%s))\n\t\t}\n\t}\n", tagC, e.Name, tag)
	w("\treturn nil, ol.Errorf(ol.ErrcInvalidArgument, \"%%s has no %s entry in its first %%d\", name, maxListEntries)\n}\n\n", p.End)
}
