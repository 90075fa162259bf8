package main

import (
	"go/format"
	"strings"
	"testing"

	"github.com/liboffload-go/liboffload-go/api"
)

// Each pointer mark produces its NULL check, conversion and output write
// in the entry layer, and the method gets the typed value.
func TestPointerMarks(t *testing.T) {
	s := spec(t)
	entry := genEntry(s)
	for _, want := range []string{
		// out-handle: NULL refused with the parameter's name, the method returns the handle
		"if queue == nil {\n\t\treturn nullPointer(\"Queue\")\n\t}\n\tv, err := c.olCreateQueue(deviceObj)\n\tif err != nil {\n\t\treturn err\n\t}\n\t*(*uintptr)(queue) = v\n\treturn nil",
		// bytes: a view of the caller's memory, size consumed
		`progDataV, err := userBytes("olCreateProgram", "ProgData", "ProgDataSize", progData, progDataSize)`,
		"v, err := c.olCreateProgram(deviceObj, progDataV)",
		// optional bytes: NULL only with a zero size
		`if argumentsSize > 0 && argumentsData == nil {` + "\n\t\treturn ol.Errorf(ol.ErrcInvalidArgument, \"ArgumentsSize is %d but ArgumentsData is NULL\", argumentsSize)",
		// struct: a typed pointer
		"launchSizeArgsV := (*ol.KernelLaunchSizeArgs)(launchSizeArgs)",
		// string
		"nameV := goString(name, 1<<16)",
		// handles: a view with its count
		`eventsV, err := userHandles("olWaitEvents", "Events", "NumEvents", "NumEvents*8 =", "events", events, numEvents)`,
		// out-value: typed by the pointee
		"*(*bool)(valid) = v",
		"*(*uint64)(groupSize) = v",
		"*(*uintptr)(allocationOut) = v",
		// callback: never NULL; user data passed on
		"if callback == nil {\n\t\treturn nullPointer(\"Callback\")\n\t}\n\treturn c.olIterateDevices(callback, userData)",
		// address: an integer, NULL checked only where nonnull
		"if ptr == nil {\n\t\treturn nullPointer(\"Ptr\")\n\t}\n\treturn c.olMemUnregister(deviceObj, uintptr(ptr))",
		"return c.olMemFree(uintptr(address))",
		// c-bytes: the C pointer, the method checks it
		"return c.olMemFill(queueObj, uintptr(ptr), patternSize, patternPtr, fillSize)",
		// trace printing follows the marks too
		"tb.ptrToPtrIf(events, numEvents > 0)",
		"tb.cstr(name, -1)",
	} {
		if !strings.Contains(entry, want) {
			t.Errorf("entry lacks %q", want)
		}
	}
}

// Every pointer and callback parameter carries a known mark, and the
// size or count a mark names is a parameter of the function.
func TestEveryPointerMarked(t *testing.T) {
	s := spec(t)
	for _, f := range s.Functions {
		names := map[string]bool{}
		for _, p := range f.Params {
			names[p.Name] = true
		}
		for _, p := range f.Params {
			k := s.Classify(p.Type).Kind
			if (k == api.KindPointer || k == api.KindCallback) && !validMark(p.Ptr) {
				t.Errorf("%s.%s: pointer without a known mark (%q)", f.Name, p.Name, p.Ptr)
			}
			if p.Ptr == "bytes" || p.Ptr == "c-bytes" {
				if !names[p.Size] {
					t.Errorf("%s.%s: size %q is not a parameter", f.Name, p.Name, p.Size)
				}
			}
			if p.Ptr == "handles" && !names[p.Count] {
				t.Errorf("%s.%s: count %q is not a parameter", f.Name, p.Name, p.Count)
			}
		}
	}
}

// The marks of 23.1's arguments in the real spec: olInit's versioned
// InitArgs read later through a reference, olLaunchKernel's property list
// and argument ranges, olMemPrefetch's addresses.
func TestMarks23(t *testing.T) {
	entry := genEntry(spec(t))
	for _, want := range []string{
		// versioned on a lifecycle entry: a reference, the trace bound
		"return olInit23(initArgsRef{initArgs}, func(tb *traceBuf) { traceOlInit23(tb, initArgs) }, (*ol.CodeLocation)(loc))",
		"func (r initArgsRef) read() (*initArgsValue, error) { return readInitArgs(\"InitArgs\", r.p) }",
		// its Size covers sizeof(ol_init_args_t) as C lays it out (24 on LP64)
		"if size < 24 {",
		`{{"Size", 8}, {"NumPlatforms", 12}, {"Platforms", 24}}`,
		"less than sizeof(ol_init_args_t) = 24: %s->%s does not fit",
		// the counted array: NULL with a count, a range past the end, each entry an enumerator
		"Platforms []ol.PlatformBackend // NumPlatforms entries",
		"fNumPlatforms := *(*uint32)(unsafe.Add(p, 8))",
		"fPlatforms := *(*unsafe.Pointer)(unsafe.Add(p, 16))",
		`"%s->NumPlatforms is %d but %s->Platforms is NULL"`,
		"uint64(fNumPlatforms) > maxUserRange/4 || a+uint64(fNumPlatforms)*4 < a",
		`"%s->Platforms[%d] is %d, not an ol_platform_backend_t"`,
		// list: walked to its end into a Go slice, data typed by the value
		`propertiesV, err := listKernelLaunchProp("Properties", properties, propertiesBuf[:0])`,
		"case ol.KernelLaunchPropTypeNone:\n\t\t\treturn buf, nil",
		"buf = append(buf, kernelLaunchPropValue{Type: e.Type, Bool: *(*uint8)(e.Data) != 0})",
		`"%s[%d].type is %d, not an ol_kernel_launch_prop_type_t"`,
		// ranges: the pointer array checked first, the entries after the sizes
		`if _, err := userAddrs("olLaunchKernel", "ArgPtrs", "NumArgs", "NumArgs*8 =", "pointers", argPtrs, numArgs); err != nil {`,
		`argPtrsV, err := userRanges("olLaunchKernel", "ArgPtrs", "ArgSizes", argPtrs, argSizesV, argPtrsBuf[:0])`,
		"return c.olLaunchKernel23(queueObj, deviceObj, kernelObj, launchSizeArgsV, propertiesV, argPtrsV, argSizesV)",
		// values of pointers: addresses
		`memsV, err := userAddrs("olMemPrefetch", "Mems", "Count", "Count*8 =", "pointers", mems, count)`,
	} {
		if !strings.Contains(entry, want) {
			t.Errorf("entry lacks %q", want)
		}
	}
}

// The same marks on a scratch spec: a later (optional) field is read only
// when Size covers it, and the minimum is the first release's size; list
// data of other types get fields of their own; what is generated is Go.
func TestMarksScratch(t *testing.T) {
	s, err := api.Parse([]byte(`{"releases":[{"name":"1.0","soname":"l.so.1.0","include":"include","desc":"d"}],
"enums":[{"name":"x_prop_type_t","desc":"d","values":[{"name":"X_PROP_END","value":0,"desc":"d"},{"name":"X_PROP_A","value":1,"desc":"d","data":"uint32_t"},{"name":"X_PROP_B","value":2,"desc":"d","data":"bool"},{"name":"X_PROP_C","value":3,"desc":"d","data":"uint32_t"}]}],
"structs":[
 {"name":"x_args_t","desc":"d","size":"Size","fields":[{"name":"Size","type":"size_t","desc":"d"},{"name":"Count","type":"uint32_t","desc":"d"},{"name":"Items","type":"const uint32_t *","desc":"d","count":"Count"},{"name":"Flag","type":"uint32_t","desc":"d","optional":true},{"name":"Later","type":"size_t","desc":"d","optional":true}]},
 {"name":"x_prop_t","desc":"d","fields":[{"name":"kind","type":"x_prop_type_t","desc":"d"},{"name":"value","type":"void *","desc":"d"}]}],
"functions":[{"name":"olX","desc":"d","checks":[],"params":[
 {"name":"Args","type":"const x_args_t *","dir":"in","desc":"d","optional":true,"ptr":"versioned"},
 {"name":"Props","type":"const x_prop_t *","dir":"in","desc":"d","optional":true,"ptr":"list","end":"X_PROP_END"},
 {"name":"N","type":"size_t","dir":"in","desc":"d"},
 {"name":"Ptrs","type":"void **","dir":"in","desc":"d","optional":true,"ptr":"ranges","count":"N","size":"Sizes"},
 {"name":"Sizes","type":"const size_t *","dir":"in","desc":"d","optional":true,"ptr":"values","count":"N"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	src, err := format.Source([]byte(genEntry(s)))
	if err != nil {
		t.Fatalf("the scratch entry layer is not Go: %v", err)
	}
	entry := string(src)
	for _, want := range []string{
		// first release: Size, Count, Items = 24 bytes; Flag (at 24) and Later (at 32) later
		"if size < 24 {",
		"less than 24, the size of x_args_t in its first release: %s->%s does not fit",
		"var fFlag uint32 // a later field: zero unless the caller has it\n\tif size >= 28 {\n\t\tfFlag = *(*uint32)(unsafe.Add(p, 24))\n\t}",
		"if size >= 40 {\n\t\tfLater = *(*uint64)(unsafe.Add(p, 32))\n\t}",
		"Items []uint32 // Count entries",
		"v.Items = unsafe.Slice((*uint32)(fItems), fCount)",
		// list data by type: one field per C type
		"\tU32  uint32 // the value of a uint32_t * entry\n\tBool bool   // the value of a bool * entry\n}",
		"buf = append(buf, xPropValue{Type: e.Kind, U32: *(*uint32)(e.Value)})",
		`"%s[%d] (C) has a NULL data pointer"`,
		`"%s[%d].kind is %d, not an x_prop_type_t"`,
		// the method gets the Go values, the counts consumed
		"return c.olX(argsV, propsV, ptrsV, sizesV)",
	} {
		if !strings.Contains(entry, want) {
			t.Errorf("scratch entry lacks %q", want)
		}
	}
	if strings.Contains(entry, "Count uint32") {
		t.Error("the count of a counted array is a field of the Go value")
	}
}
