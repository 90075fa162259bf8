package tests

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/impl"
	"github.com/liboffload-go/liboffload-go/plugins/host"
)

// Tracing does not switch pooling off (issue 30; LLVM's plugins bypass
// their pool while allocations are traced): with OFFLOAD_TRACE_FILE set,
// 64 allocations of 1000 bytes on the host device are blocks of the
// runtime's pool (the device's slab memory rises, by one or two slabs, not
// by 64 allocations), a freed block is handed out again, every call is
// traced, and the final olShutDown gives the slabs back.
func TestTracingKeepsPooling(t *testing.T) {
	// one OS thread: the freed block is in the calling thread's arena
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	path := filepath.Join(t.TempDir(), "trace.txt")
	t.Setenv("OFFLOAD_TRACE_FILE", path)
	start := host.SlabBytes()
	mustOK(t, "olInit", impl.OlInit(nil))
	up := true
	defer func() {
		if up {
			_ = impl.OlShutDown(nil)
		}
	}()
	d := hostDevice(t)
	const n, size = 64, 1000
	ptrs := make([]unsafe.Pointer, n)
	for i := range ptrs {
		mustOK(t, "olMemAlloc", impl.OlMemAlloc(d, uint32(ol.AllocTypeDevice), size, unsafe.Pointer(&ptrs[i]), nil))
	}
	// a slab holds at least 16 blocks and 256 KiB (impl/pool.h)
	if got := host.SlabBytes() - start; got == 0 || got > 2*(256<<10) {
		t.Errorf("with tracing on, %d allocations of %d bytes took %d bytes of pool slabs from the device, want one or two slabs (pooled)", n, size, got)
	}
	freed := ptrs[n/2]
	mustOK(t, "olMemFree", impl.OlMemFree(freed, nil))
	mustOK(t, "olMemAlloc", impl.OlMemAlloc(d, uint32(ol.AllocTypeDevice), size, unsafe.Pointer(&ptrs[n/2]), nil))
	if ptrs[n/2] != freed {
		t.Errorf("with tracing on, the freed block %p was not handed out again (got %p)", freed, ptrs[n/2])
	}
	for _, p := range ptrs {
		mustOK(t, "olMemFree", impl.OlMemFree(p, nil))
	}
	up = false
	mustOK(t, "olShutDown", impl.OlShutDown(nil))
	if got := host.SlabBytes(); got != start {
		t.Errorf("the pool holds %d bytes of the device after the final olShutDown, %d before olInit", got, start)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if a, f := strings.Count(string(b), "---> olMemAlloc("), strings.Count(string(b), "---> olMemFree("); a != n+1 || f != n+1 {
		t.Errorf("the trace has %d olMemAlloc and %d olMemFree lines, want %d each", a, f, n+1)
	}
}
