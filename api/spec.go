// Package api holds the machine-readable description of the Offload API
// (offload.json) that every generated file of this repository is derived
// from, and the types used to read it.
package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

//go:embed offload.json
var specJSON []byte

// Spec is the whole API: types first, then functions, each list in the
// order the C header declares them.
type Spec struct {
	// Releases are the LLVM releases whose ABI the library serves, oldest
	// first. An element with In lists the releases it belongs to; one
	// without belongs to all. ForRelease gives one release's view.
	Releases  []Release  `json:"releases"`
	Version   Version    `json:"version"`
	Macros    []Macro    `json:"macros"`
	Handles   []Handle   `json:"handles"`
	Enums     []Enum     `json:"enums"`
	Typedefs  []Typedef  `json:"typedefs"`
	Callbacks []Callback `json:"callbacks"`
	Structs   []Struct   `json:"structs"`
	Functions []Function `json:"functions"`
}

// Release is one LLVM release of the API: one shared library and header.
type Release struct {
	Name   string `json:"name"`   // "22.1"
	Soname string `json:"soname"` // libLLVMOffload.so.22.1
	// Tag is the Go build tag that builds this release's library (""
	// for the default build).
	Tag string `json:"tag,omitempty"`
	// Include is the header directory, relative to the repository:
	// <Include>/offload/OffloadAPI.h and <Include>/offload.h.
	Include string `json:"include"`
	Desc    string `json:"desc"`
	// Unconfirmed says why the soname is not certain (see Function.Unconfirmed).
	Unconfirmed string `json:"unconfirmed,omitempty"`
}

// In lists the releases an element belongs to; empty means every one.
type In []string

// Has reports whether the element is part of release r.
func (in In) Has(r string) bool {
	if len(in) == 0 {
		return true
	}
	for _, x := range in {
		if x == r {
			return true
		}
	}
	return false
}

// Version is the API version published by the OL_VERSION_* macros.
type Version struct {
	Major int `json:"major"`
	Minor int `json:"minor"`
	Patch int `json:"patch"`
}

// Macro is a preprocessor constant of the header.
type Macro struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Desc  string `json:"desc"`
	In    In     `json:"in,omitempty"`
}

// Handle is an opaque object type: a pointer to an incomplete struct in C.
// Fixed marks a kind whose objects exist from olInit to the final
// olShutDown and whose info never changes in between: the library answers
// their info queries from a snapshot taken at initialisation, in C.
type Handle struct {
	Name   string `json:"name"`
	Struct string `json:"struct"`
	Kind   string `json:"kind"`
	Fixed  bool   `json:"fixed,omitempty"`
	Desc   string `json:"desc"`
}

// Enum is a C enumeration. Every enum also gets <PREFIX>_LAST and
// <PREFIX>_FORCE_UINT32 members in the header.
type Enum struct {
	Name   string      `json:"name"`
	Desc   string      `json:"desc"`
	Values []EnumValue `json:"values"`
	// Bitfield enums number their values 1<<i; LAST is then twice the
	// highest value, else one more than it (Last is computed, per release).
	Bitfield bool  `json:"bitfield,omitempty"`
	Last     int64 `json:"-"`
	In       In    `json:"in,omitempty"`
	// Unconfirmed says why a fact is not certain (see Function.Unconfirmed).
	Unconfirmed string `json:"unconfirmed,omitempty"`
}

// EnumValue is one enumerator. Type is set for info-query enums: the C type
// of the value that the query returns ("char[]" for strings). Runtime marks
// a device property that the runtime answers itself (OL_DEVICE_INFO_PLATFORM);
// plugins answer every other one (plugin.DeviceInfo is generated from them).
type EnumValue struct {
	Name    string `json:"name"`
	Value   int64  `json:"value"`
	Desc    string `json:"desc"`
	Type    string `json:"type,omitempty"`
	Runtime bool   `json:"runtime,omitempty"`
	In      In     `json:"in,omitempty"`
	// Data is, for the type field of a list's entries (the list mark), the
	// C type the entry's data pointer points to for this value ("bool").
	Data string `json:"data,omitempty"`
	// Unconfirmed says why a fact is not certain (see Function.Unconfirmed).
	Unconfirmed string `json:"unconfirmed,omitempty"`
}

// Typedef is a plain type alias.
type Typedef struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Desc string `json:"desc"`
	In   In     `json:"in,omitempty"`
	// Unconfirmed says why a fact is not certain (see Function.Unconfirmed).
	Unconfirmed string `json:"unconfirmed,omitempty"`
}

// Callback is a function-pointer type that the library calls.
type Callback struct {
	Name   string  `json:"name"`
	Ret    string  `json:"ret"`
	Desc   string  `json:"desc"`
	Params []Field `json:"params"`
}

// Struct is a C struct passed by the API.
type Struct struct {
	Name   string  `json:"name"`
	Desc   string  `json:"desc"`
	Fields []Field `json:"fields"`
	In     In      `json:"in,omitempty"`
	// Size makes the struct versioned: it names its first field, a size_t
	// in which the caller says how many bytes of the struct it has (its
	// sizeof when it was compiled). The versioned mark reads such a struct.
	Size string `json:"size,omitempty"`
}

// Field is a struct member or a callback parameter. In a versioned struct,
// Count makes a pointer field an array of that many elements (Count names
// a scalar field of the struct), and Optional marks a field added after the
// struct's first release: read when the caller's Size covers it, else zero.
type Field struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Desc     string `json:"desc"`
	Count    string `json:"count,omitempty"`
	Optional bool   `json:"optional,omitempty"`
}

// Function is one entry point. Checks are the validation conditions in the
// order they are evaluated; the first that holds produces the error.
type Function struct {
	Name     string  `json:"name"`
	Desc     string  `json:"desc"`
	Params   []Param `json:"params"`
	Checks   []Check `json:"checks"`
	Creates  string  `json:"creates,omitempty"`
	Destroys string  `json:"destroys,omitempty"`
	// Errors are the failures beyond the checks and the handle rules, for
	// the API reference (docs/api.md); Differs says where the call
	// behaves otherwise than LLVM 22.1.
	Errors  []ErrorDoc `json:"errors,omitempty"`
	Differs []string   `json:"differs,omitempty"`
	// In lists the releases that have this function in this form. A
	// function whose prototype changed between releases is declared once
	// per form; every form but the oldest has a Variant, which suffixes its
	// Go names (OlLaunchKernel23) so that both forms live in one build.
	In      In     `json:"in,omitempty"`
	Variant string `json:"variant,omitempty"`
	// Unconfirmed, on an element of a release whose header could not be
	// read, says which fact is inferred and from what: these are the
	// facts to check first against a real header (docs/api.md lists them).
	Unconfirmed string `json:"unconfirmed,omitempty"`
}

// GoName is the Go name of the function's entry point: OlLaunchKernel,
// or OlLaunchKernel23 for a later form.
func (f *Function) GoName() string {
	return strings.ToUpper(f.Name[:1]) + f.Name[1:] + f.Variant
}

// ErrorDoc is one documented failure of a call: its code and when.
type ErrorDoc struct {
	Errc string `json:"errc"`
	When string `json:"when"`
}

// Param is a function parameter.
type Param struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Dir      string `json:"dir"` // "in" or "out"
	Optional bool   `json:"optional,omitempty"`
	Desc     string `json:"desc"`
	// Ptr says what a pointer (or callback) parameter is, so that the
	// generated entry layer owns every C pointer: it refuses NULL where
	// the mark requires a value, converts the pointer to a typed Go value
	// and writes outputs (see PtrMarks). Size names the size parameter of
	// "bytes", Count the count parameter of "handles". NonNull makes the
	// runtime refuse a NULL "address". End names the enumerator that ends
	// a "list"; Size of "ranges" names the array of the ranges' sizes.
	Ptr     string `json:"ptr,omitempty"`
	Size    string `json:"size,omitempty"`
	Count   string `json:"count,omitempty"`
	End     string `json:"end,omitempty"`
	NonNull bool   `json:"nonnull,omitempty"`
}

// PtrMarks are the values of Param.Ptr with what the runtime method gets:
//   - bytes: a byte range the call reads, with its size parameter: []byte
//     viewing the caller's memory, valid only during the call.
//   - string: a NUL-terminated string: string.
//   - handles: an array of handles with its count parameter: []uintptr
//     viewing the caller's memory, valid only during the call.
//   - values: an array of addresses or sizes with its count parameter:
//     []uintptr (addresses the runtime judges, never reads) or []uint64
//     viewing the caller's memory, valid only during the call (nil when
//     optional and NULL).
//   - ranges: an array of pointers, with its count parameter, each to as
//     many bytes as the same entry of the size_t array Size names (a
//     "values" of the same count): [][]byte, one view per entry (nil for a
//     NULL entry of size 0), every entry checked before the method runs.
//   - struct: a struct the call reads: a typed pointer (nil when optional
//     and NULL).
//   - versioned: a versioned struct (Struct.Size) the call reads: its Size
//     is checked to cover the fields of its first release, only the fields
//     it covers are read, and counted arrays become slices, all into a Go
//     value (nil when optional and NULL). On a lifecycle entry, which may
//     not read it, a reference whose read method does this.
//   - list: an array of structs ending with the entry whose enum field is
//     End, at most 1024 entries: a Go slice of the entries before the end,
//     each entry's data read by the type its enum value names (Data).
//   - out-handle: where a created handle goes: the method returns it.
//   - out-value: where one value goes: the method returns it.
//   - callback: a function the library calls: passed on, never NULL
//     unless optional.
//   - user: opaque data passed back to a callback, never read.
//   - address: memory the runtime judges itself (its allocation map, the
//     owning device), never read by it: uintptr.
//   - c-bytes: a byte range with its size parameter that the runtime hands
//     to a plugin as the C pointer (plugin.Queue.Fill takes one); the
//     method checks it.
//   - info-value, info-size: the outputs of an info query, written by the
//     generated Info rules.
var PtrMarks = []string{"bytes", "string", "handles", "values", "ranges", "struct", "versioned", "list", "out-handle", "out-value", "callback", "user", "address", "c-bytes", "info-value", "info-size"}

// Check is a validation condition written as C. When it holds, the call
// fails with Errc and the Details text "validation failure: <Cond>".
// Ours marks a check that LLVM 22.1 does not make (where it would crash).
type Check struct {
	Errc string `json:"errc"`
	Cond string `json:"cond"`
	Ours bool   `json:"ours,omitempty"`
}

// Load parses and checks the embedded specification.
func Load() (*Spec, error) { return Parse(specJSON) }

// Parse decodes a specification and checks that it is consistent.
func Parse(data []byte) (*Spec, error) {
	var s Spec
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("api spec: %w", err)
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("api spec: %w", err)
	}
	s.computeLast()
	return &s, nil
}

// computeLast sets each enum's LAST from the values it has.
func (s *Spec) computeLast() {
	for i := range s.Enums {
		e := &s.Enums[i]
		var hi int64 = -1
		for _, v := range e.Values {
			hi = max(hi, v.Value)
		}
		e.Last = hi + 1
		if e.Bitfield {
			e.Last = max(hi*2, 1)
		}
	}
}

// Release finds a release by name.
func (s *Spec) Release(name string) *Release {
	for i := range s.Releases {
		if s.Releases[i].Name == name {
			return &s.Releases[i]
		}
	}
	return nil
}

// ForRelease is the API of one release: only the elements it has, with
// each enum's LAST as that release numbers it. The full spec (every form
// of every function, every value) is what the shared Go code is made from.
func (s *Spec) ForRelease(name string) *Spec {
	r := *s
	r.Releases = []Release{*s.Release(name)}
	r.Macros = filter(s.Macros, func(m Macro) bool { return m.In.Has(name) })
	r.Typedefs = filter(s.Typedefs, func(t Typedef) bool { return t.In.Has(name) })
	r.Structs = filter(s.Structs, func(t Struct) bool { return t.In.Has(name) })
	r.Functions = filter(s.Functions, func(f Function) bool { return f.In.Has(name) })
	r.Enums = nil
	for _, e := range s.Enums {
		if !e.In.Has(name) {
			continue
		}
		e.Values = filter(e.Values, func(v EnumValue) bool { return v.In.Has(name) })
		r.Enums = append(r.Enums, e)
	}
	r.computeLast()
	return &r
}

func filter[T any](xs []T, keep func(T) bool) []T {
	var out []T
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// enumValue finds an enumerator by its C name.
func (s *Spec) enumValue(name string) *EnumValue {
	for i := range s.Enums {
		for j := range s.Enums[i].Values {
			if s.Enums[i].Values[j].Name == name {
				return &s.Enums[i].Values[j]
			}
		}
	}
	return nil
}

// EnumValueOf returns the number of an enumerator, and whether it exists.
func (s *Spec) EnumValueOf(name string) (int64, bool) {
	if v := s.enumValue(name); v != nil {
		return v.Value, true
	}
	return 0, false
}

var reIdent = regexp.MustCompile(`[A-Za-z_]\w*`)

// checkMark requires a known mark on every pointer and callback
// parameter, and a size or count parameter where the mark needs one.
func checkMark(s *Spec, fn string, p Param, params map[string]Param) error {
	k := s.Classify(p.Type).Kind
	if k != KindPointer && k != KindCallback {
		if p.Ptr != "" {
			return fmt.Errorf("%s.%s: pointer mark %q on a %s", fn, p.Name, p.Ptr, p.Type)
		}
		return nil
	}
	known := false
	for _, m := range PtrMarks {
		known = known || m == p.Ptr
	}
	if !known {
		return fmt.Errorf("%s.%s: pointer parameter without a known mark (%q)", fn, p.Name, p.Ptr)
	}
	switch p.Ptr {
	case "bytes", "c-bytes":
		if _, ok := params[p.Size]; !ok {
			return fmt.Errorf("%s.%s: size %q is not a parameter", fn, p.Name, p.Size)
		}
	case "handles", "values", "ranges":
		if _, ok := params[p.Count]; !ok {
			return fmt.Errorf("%s.%s: count %q is not a parameter", fn, p.Name, p.Count)
		}
	}
	switch p.Ptr {
	case "ranges":
		sz, ok := params[p.Size]
		if !ok || sz.Ptr != "values" || sz.Count != p.Count || strings.TrimPrefix(s.Classify(sz.Type).Elem, "const ") != "size_t" {
			return fmt.Errorf("%s.%s: size %q is not a size_t values parameter of count %s", fn, p.Name, p.Size, p.Count)
		}
	case "versioned":
		if st := s.StructByName(s.Classify(p.Type).Elem); st == nil || st.Size == "" {
			return fmt.Errorf("%s.%s: %s is not a versioned struct", fn, p.Name, p.Type)
		}
	case "list":
		if _, _, err := s.ListOf(p); err != nil {
			return fmt.Errorf("%s.%s: %w", fn, p.Name, err)
		}
	}
	if p.End != "" && p.Ptr != "list" {
		return fmt.Errorf("%s.%s: end is for lists, not mark %q", fn, p.Name, p.Ptr)
	}
	if p.NonNull && p.Ptr != "address" {
		return fmt.Errorf("%s.%s: nonnull is for addresses; mark %q is never NULL unless optional", fn, p.Name, p.Ptr)
	}
	return nil
}

func (s *Spec) check() error {
	if len(s.Releases) == 0 {
		return fmt.Errorf("no releases")
	}
	releases := map[string]bool{}
	for _, r := range s.Releases {
		releases[r.Name] = true
	}
	// every release has each function at most once, and each form its own Go name
	seen := map[string]bool{}
	goNames := map[string]bool{}
	for _, f := range s.Functions {
		if f.Name == "" {
			return fmt.Errorf("a function has no name")
		}
		for _, r := range f.In {
			if !releases[r] {
				return fmt.Errorf("%s: unknown release %q", f.Name, r)
			}
		}
		for _, r := range s.Releases {
			if f.In.Has(r.Name) {
				if seen[r.Name+" "+f.Name] {
					return fmt.Errorf("function %s declared twice for release %s", f.Name, r.Name)
				}
				seen[r.Name+" "+f.Name] = true
			}
		}
		if goNames[f.GoName()] {
			return fmt.Errorf("function %s: two forms named %s (set variant)", f.Name, f.GoName())
		}
		goNames[f.GoName()] = true
		if f.Desc == "" {
			return fmt.Errorf("%s: no description", f.Name)
		}
		params := map[string]Param{}
		for _, p := range f.Params {
			if p.Dir != "in" && p.Dir != "out" {
				return fmt.Errorf("%s.%s: dir must be in or out, not %q", f.Name, p.Name, p.Dir)
			}
			if s.Classify(p.Type).Kind == KindUnknown {
				return fmt.Errorf("%s.%s: unknown type %q", f.Name, p.Name, p.Type)
			}
			params[p.Name] = p
		}
		for _, p := range f.Params {
			if err := checkMark(s, f.Name, p, params); err != nil {
				return err
			}
		}
		for _, c := range f.Checks {
			if s.ErrcValue(c.Errc) < 0 {
				return fmt.Errorf("%s: check %q: unknown error code %s", f.Name, c.Cond, c.Errc)
			}
			for _, id := range reIdent.FindAllString(c.Cond, -1) {
				if id == "NULL" || s.enumValue(id) != nil {
					continue
				}
				if _, ok := params[id]; !ok {
					return fmt.Errorf("%s: check %q names %s, which is not a parameter", f.Name, c.Cond, id)
				}
			}
		}
		for _, e := range f.Errors {
			if s.ErrcValue(e.Errc) < 0 || e.When == "" {
				return fmt.Errorf("%s: documented error %q: unknown code or no condition", f.Name, e.Errc)
			}
		}
		for _, k := range []string{f.Creates, f.Destroys} {
			if k != "" && s.HandleByKind(k) == nil {
				return fmt.Errorf("%s: unknown handle kind %q", f.Name, k)
			}
		}
	}
	if len(s.Functions) == 0 {
		return fmt.Errorf("no functions")
	}
	for _, st := range s.Structs {
		if err := s.checkStruct(&st); err != nil {
			return err
		}
	}
	for _, e := range s.Enums {
		for _, v := range e.Values {
			if v.Type != "" && v.Type != "char[]" && s.Classify(v.Type).Kind == KindUnknown {
				return fmt.Errorf("%s: unknown value type %q", v.Name, v.Type)
			}
			if v.Runtime && v.Type == "" {
				return fmt.Errorf("%s: runtime is only for info properties", v.Name)
			}
		}
	}
	return nil
}

// checkStruct requires a versioned struct to begin with its size_t Size
// field, and a counted field to be a pointer counted by a scalar field.
func (s *Spec) checkStruct(st *Struct) error {
	fields := map[string]Field{}
	for _, f := range st.Fields {
		fields[f.Name] = f
	}
	if st.Size != "" && (len(st.Fields) == 0 || st.Fields[0].Name != st.Size || st.Fields[0].Type != "size_t") {
		return fmt.Errorf("%s: size %q is not its first field, a size_t", st.Name, st.Size)
	}
	optional := false
	for _, f := range st.Fields {
		if !f.Optional && optional {
			return fmt.Errorf("%s.%s: a field of the first release after an optional one", st.Name, f.Name)
		}
		optional = optional || f.Optional
		if (f.Count != "" || f.Optional) && st.Size == "" {
			return fmt.Errorf("%s.%s: count and optional are for versioned structs", st.Name, f.Name)
		}
		if f.Optional && f.Name == st.Size {
			return fmt.Errorf("%s.%s: the size field is never optional", st.Name, f.Name)
		}
		if f.Count == "" {
			continue
		}
		if c, ok := fields[f.Count]; !ok || s.Classify(f.Type).Kind != KindPointer || s.Classify(c.Type).Kind != KindScalar {
			return fmt.Errorf("%s.%s: count %q is not a scalar field counting a pointer", st.Name, f.Name, f.Count)
		}
	}
	return nil
}

// ListOf gives the entry struct of a list parameter (the list mark) and
// the enum of its type field, whose End value ends the list and whose
// other values each name the type their data points to.
func (s *Spec) ListOf(p Param) (*Struct, *Enum, error) {
	st := s.StructByName(s.Classify(p.Type).Elem)
	if st == nil {
		return nil, nil, fmt.Errorf("%s is not a pointer to an API struct", p.Type)
	}
	var e *Enum
	tags, data := 0, 0
	for _, f := range st.Fields {
		switch k := s.Classify(f.Type); {
		case k.Kind == KindEnum:
			tags++
			e = s.EnumByName(f.Type)
		case k.Kind == KindPointer && k.Elem == "void":
			data++
		}
	}
	if tags != 1 || data != 1 || len(st.Fields) != 2 {
		return nil, nil, fmt.Errorf("list entry %s is not one enum field and one void * field", st.Name)
	}
	end := false
	for _, v := range e.Values {
		switch {
		case v.Name == p.End:
			end = true
		case v.Data != "bool" && v.Data != "uint32_t" && v.Data != "size_t":
			return nil, nil, fmt.Errorf("%s: data type %q is not bool, uint32_t or size_t", v.Name, v.Data)
		}
	}
	if !end {
		return nil, nil, fmt.Errorf("end %q is not a value of %s", p.End, e.Name)
	}
	return st, e, nil
}

// TypeKind classifies C types the way the generators need them.
type TypeKind int

// Type kinds.
const (
	KindUnknown  TypeKind = iota
	KindHandle            // ol_*_handle_t
	KindEnum              // an enum of the spec
	KindScalar            // size_t, uint32_t, uint64_t, a typedef of one
	KindCallback          // a function pointer type of the spec
	KindPointer           // any pointer; Elem is the pointee type
	KindStruct            // a struct of the spec, by value
	KindBool              // bool
	KindFloat             // float (only behind a pointer)
)

// TypeInfo is the classification of a C type.
type TypeInfo struct {
	Kind  TypeKind
	Elem  string // pointee type for pointers ("void", "char", "size_t", ...)
	Const bool   // pointee is const
	Size  int    // size in bytes on LP64 for scalars, enums, handles, bools
}

// Classify tells what kind of type ctype is.
func (s *Spec) Classify(ctype string) TypeInfo {
	t := strings.TrimSpace(ctype)
	if strings.HasSuffix(t, "*") {
		elem := strings.TrimSpace(strings.TrimSuffix(t, "*"))
		cst := false
		if strings.HasPrefix(elem, "const ") {
			cst = true
			elem = strings.TrimSpace(strings.TrimPrefix(elem, "const "))
		}
		return TypeInfo{Kind: KindPointer, Elem: elem, Const: cst, Size: 8}
	}
	t = strings.TrimPrefix(t, "struct ")
	switch t {
	case "size_t", "uint64_t":
		return TypeInfo{Kind: KindScalar, Size: 8}
	case "uint32_t":
		return TypeInfo{Kind: KindScalar, Size: 4}
	case "float":
		return TypeInfo{Kind: KindFloat, Size: 4}
	case "bool":
		return TypeInfo{Kind: KindBool, Size: 1}
	}
	if s.HandleByName(t) != nil {
		return TypeInfo{Kind: KindHandle, Size: 8}
	}
	if s.EnumByName(t) != nil {
		return TypeInfo{Kind: KindEnum, Size: 4}
	}
	for _, td := range s.Typedefs {
		if td.Name == t && (td.Type == "uint32_t" || td.Type == "uint64_t" || td.Type == "size_t") {
			ti := s.Classify(td.Type)
			return ti
		}
	}
	for _, cb := range s.Callbacks {
		if cb.Name == t {
			return TypeInfo{Kind: KindCallback, Size: 8}
		}
	}
	for _, st := range s.Structs {
		if st.Name == t {
			return TypeInfo{Kind: KindStruct}
		}
	}
	return TypeInfo{Kind: KindUnknown}
}

// HandleByName finds a handle type by its C typedef name.
func (s *Spec) HandleByName(name string) *Handle {
	for i := range s.Handles {
		if s.Handles[i].Name == name {
			return &s.Handles[i]
		}
	}
	return nil
}

// HandleByKind finds a handle type by its kind ("device", "queue", ...).
func (s *Spec) HandleByKind(kind string) *Handle {
	for i := range s.Handles {
		if s.Handles[i].Kind == kind {
			return &s.Handles[i]
		}
	}
	return nil
}

// FunctionByName finds a function by its C name.
func (s *Spec) FunctionByName(name string) *Function {
	for i := range s.Functions {
		if s.Functions[i].Name == name {
			return &s.Functions[i]
		}
	}
	return nil
}

// CallbackByName finds a callback type by its C name.
func (s *Spec) CallbackByName(name string) *Callback {
	for i := range s.Callbacks {
		if s.Callbacks[i].Name == name {
			return &s.Callbacks[i]
		}
	}
	return nil
}

// EnumByName finds an enum by its C name.
func (s *Spec) EnumByName(name string) *Enum {
	for i := range s.Enums {
		if s.Enums[i].Name == name {
			return &s.Enums[i]
		}
	}
	return nil
}

// StructByName finds a struct by its C name.
func (s *Spec) StructByName(name string) *Struct {
	name = strings.TrimPrefix(name, "struct ")
	for i := range s.Structs {
		if s.Structs[i].Name == name {
			return &s.Structs[i]
		}
	}
	return nil
}

// ErrcValue returns the numeric value of an OL_ERRC_* name, or -1.
func (s *Spec) ErrcValue(name string) int64 {
	e := s.EnumByName("ol_errc_t")
	if e == nil {
		return -1
	}
	for _, v := range e.Values {
		if v.Name == name {
			return v.Value
		}
	}
	return -1
}

// Prefix returns the common enumerator prefix of an enum, e.g. "OL_DEVICE_INFO_".
func (e *Enum) Prefix() string {
	if len(e.Values) == 0 {
		return ""
	}
	p := e.Values[0].Name
	for _, v := range e.Values[1:] {
		for !strings.HasPrefix(v.Name, p) {
			p = p[:len(p)-1]
		}
	}
	if i := strings.LastIndex(p, "_"); i >= 0 {
		p = p[:i+1]
	}
	return p
}

// InfoEnum reports whether the enum names typed info-query properties.
func (e *Enum) InfoEnum() bool {
	return len(e.Values) > 0 && e.Values[0].Type != ""
}
