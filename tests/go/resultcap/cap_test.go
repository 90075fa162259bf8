// Package resultcap checks the bound on the interned error table. It has
// its own test binary because filling the table affects the whole process.
package resultcap

import (
	"strings"
	"testing"
	"unsafe"

	"go.uber.org/goleak"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/impl"
	"github.com/liboffload-go/liboffload-go/plugins/host"
)

func TestMain(m *testing.M) {
	impl.UsePlugins(host.New())
	goleak.VerifyTestMain(m)
}

func TestDistinctErrorsAreBounded(t *testing.T) {
	if r := impl.OlInit(nil); r != 0 {
		t.Fatal(impl.ResultDetails(r))
	}
	defer impl.OlShutDown(nil)
	var v uint32
	seen := map[uintptr]bool{}
	for i := 0; i < impl.MaxDistinctResults+500; i++ {
		// each garbage handle value gives a different Details text
		r := impl.OlGetDeviceInfo(uintptr(0x10000+i), 0, 4, unsafe.Pointer(&v), nil)
		if impl.ResultCode(r) != ol.ErrcInvalidDevice {
			t.Fatalf("code %s", impl.ResultCode(r))
		}
		seen[r] = true
	}
	if len(seen) > impl.MaxDistinctResults+1 {
		t.Fatalf("%d distinct results, bound is %d", len(seen), impl.MaxDistinctResults)
	}
	r := impl.OlGetDeviceInfo(0x99999999, 0, 4, unsafe.Pointer(&v), nil)
	if !strings.Contains(impl.ResultDetails(r), "details of this one were dropped") || impl.ResultCode(r) != ol.ErrcInvalidDevice {
		t.Fatalf("fallback: %s %q", impl.ResultCode(r), impl.ResultDetails(r))
	}
}
