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
	case "bytes", "string", "handles", "struct", "out-handle", "out-value":
		return true
	}
	return false
}

// consumed reports whether name is the size or count of a converted
// parameter of f: the Go value carries its length.
func consumed(f *api.Function, name string) bool {
	for _, p := range f.Params {
		if (p.Ptr == "bytes" && p.Size == name) || (p.Ptr == "handles" && p.Count == name) {
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
			fmt.Fprintf(&cv, "\t%sV, err := userHandles(%q, %q, %q, %q, %s, %s)\n\tif err != nil {\n\t\treturn err\n\t}\n", gp, f.Name, p.Name, p.Count, kind+"s", gp, goParam(p.Count))
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
			fmt.Fprintf(&out, "\t*(*%s)(%s) = v\n", outGoType(s, p), gp)
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
// a copy.
func userHandles(fn, ptrName, countName, what string, p unsafe.Pointer, n uint64) ([]uintptr, error) {
	if n > maxUserRange/8 {
		return nil, ol.Errorf(ol.ErrcInvalidSize, "%%s: %%s %%d is more %%s than the address space holds", fn, countName, n, what)
	}
	if err := checkUserRange(fn, ptrName, countName+"*8 =", p, n*8); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	return unsafe.Slice((*uintptr)(p), n), nil
}

`)
}
