package tests

import (
	"testing"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/impl"
)

// With validation disabled, every pointer the runtime would read or write
// is still refused when NULL, by the generated entry layer, with a text
// naming the parameter (RATIONALE: the NULL policy).
func TestNullPolicyWithoutValidation(t *testing.T) {
	t.Setenv("OFFLOAD_DISABLE_VALIDATION", "")
	e := newHostEnv(t)
	d := e.dev
	q := e.queue()
	defer impl.OlDestroyQueue(q, nil)
	k := e.symbol(e.prog, "count_items", ol.SymbolKindKernel)
	var h uintptr
	var n uint64
	out := unsafe.Pointer(&h)
	img := unsafe.Pointer(&e.img[0])
	name := []byte("count_items\x00")
	ls := launchArgs([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0)
	null := ol.ErrcInvalidNullPointer
	for _, c := range []struct {
		what string
		r    uintptr
		code ol.Errc
		text string
	}{
		{"olCreateQueue", impl.OlCreateQueue(d, nil, nil), null, "Queue is NULL"},
		{"olCreateEvent", impl.OlCreateEvent(q, nil, nil), null, "Event is NULL"},
		{"olCreateProgram data", impl.OlCreateProgram(d, nil, 4, out, nil), null, "ProgData is NULL"},
		{"olCreateProgram out", impl.OlCreateProgram(d, img, uint64(len(e.img)), nil, nil), null, "Program is NULL"},
		{"olIsValidBinary data", impl.OlIsValidBinary(d, nil, 4, out, nil), null, "ProgData is NULL"},
		{"olIsValidBinary out", impl.OlIsValidBinary(d, img, uint64(len(e.img)), nil, nil), null, "Valid is NULL"},
		{"olGetSymbol name", impl.OlGetSymbol(e.prog, nil, uint32(ol.SymbolKindKernel), out, nil), null, "Name is NULL"},
		{"olGetSymbol out", impl.OlGetSymbol(e.prog, unsafe.Pointer(&name[0]), uint32(ol.SymbolKindKernel), nil, nil), null, "Symbol is NULL"},
		{"olMemAlloc", impl.OlMemAlloc(d, uint32(ol.AllocTypeHost), 16, nil, nil), null, "AllocationOut is NULL"},
		{"olMemRegister ptr", impl.OlMemRegister(d, nil, 8, 0, out, nil), null, "Ptr is NULL"},
		{"olMemRegister out", impl.OlMemRegister(d, unsafe.Pointer(&n), 8, 0, nil, nil), null, "PinnedPtr is NULL"},
		{"olMemUnregister", impl.OlMemUnregister(d, nil, nil), null, "Ptr is NULL"},
		{"olWaitEvents", impl.OlWaitEvents(q, nil, 1, nil), null, "Events is NULL"},
		{"olIterateDevices", impl.OlIterateDevices(nil, nil, nil), null, "Callback is NULL"},
		{"olLaunchHostFunction", impl.OlLaunchHostFunction(q, nil, nil, nil), null, "Callback is NULL"},
		{"olCalculateOptimalOccupancy", impl.OlCalculateOptimalOccupancy(d, k, 0, nil, nil), null, "GroupSize is NULL"},
		{"olLaunchKernel sizes", impl.OlLaunchKernel(0, d, k, nil, 0, nil, nil), null, "LaunchSizeArgs is NULL"},
		{"olLaunchKernel args", impl.OlLaunchKernel(0, d, k, nil, 8, unsafe.Pointer(ls), nil), ol.ErrcInvalidArgument, "ArgumentsSize is 8 but ArgumentsData is NULL"},
		{"olWaitEvents count", impl.OlWaitEvents(q, out, 1<<62, nil), ol.ErrcInvalidSize, "NumEvents"},
		{"olCreateProgram size", impl.OlCreateProgram(d, img, 1<<62, out, nil), ol.ErrcInvalidSize, "ProgDataSize"},
	} {
		wantErr(t, c.what, c.r, c.code, c.text)
	}
}
