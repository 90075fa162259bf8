package main

import (
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
