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
	case "bytes", "string", "handles", "values", "struct", "out-handle", "out-value":
		return true
	}
	return false
}

// consumed reports whether name is the size or count of a converted
// parameter of f: the Go value carries its length.
func consumed(f *api.Function, name string) bool {
	for _, p := range f.Params {
		if (p.Ptr == "bytes" && p.Size == name) || ((p.Ptr == "handles" || p.Ptr == "values") && p.Count == name) {
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
	var ck, cv, out strings.Builder
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
				helper, what = "userPointers", "pointers"
			}
			count := goParam(p.Count)
			if p.Optional {
				fmt.Fprintf(&cv, "\tif %s > 0 && %s == nil {\n\t\treturn ol.Errorf(ol.ErrcInvalidNullPointer, \"%s is %%d but %s is NULL\", %s)\n\t}\n", count, gp, p.Count, p.Name, count)
			}
			fmt.Fprintf(&cv, "\t%sV, err := %s(%q, %q, %q, %q, %q, %s, %s)\n\tif err != nil {\n\t\treturn err\n\t}\n", gp, helper, f.Name, p.Name, p.Count, p.Count+"*8 =", what, gp, count)
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
	return ptrBlocks{ck.String(), cv.String(), out.String()}
}

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

// userPointers views n pointers of the caller's memory at p, without a copy.
func userPointers(fn, ptrName, countName, sizeName, what string, p unsafe.Pointer, n uint64) ([]unsafe.Pointer, error) {
	if _, err := userHandles(fn, ptrName, countName, sizeName, what, p, n); err != nil || n == 0 {
		return nil, err
	}
	return unsafe.Slice((*unsafe.Pointer)(p), n), nil
}

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
