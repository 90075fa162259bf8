package tests

import (
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/impl"
)

// 23.1's olInit with a Platforms array that runs past the end of the
// address space is refused with INVALID_SIZE before the array is read
// (it used to panic inside the lifecycle lock, which then stayed held:
// every later olInit and olShutDown hung). The call goes through
// impl.Recover as the C entry point's does.
func TestInitArgsPastAddressSpace(t *testing.T) {
	garbage := ^uintptr(0) - 0xfff // an address no array fits after
	args := ol.InitArgs{
		Size:         uint64(unsafe.Sizeof(ol.InitArgs{})),
		NumPlatforms: 0xffffffff,
		Platforms:    *(*unsafe.Pointer)(unsafe.Pointer(&garbage)),
	}
	res := func() (res uintptr) {
		defer impl.Recover("olInit", &res)
		return impl.OlInit23(unsafe.Pointer(&args), nil)
	}()
	wantErr(t, "olInit with NumPlatforms*4 past the address space", res, ol.ErrcInvalidSize, "InitArgs->NumPlatforms")
	done := make(chan uintptr, 1)
	go func() { done <- impl.OlInit(nil) }()
	select {
	case r := <-done:
		mustOK(t, "olInit after the refused one", r)
		mustOK(t, "olShutDown", impl.OlShutDown(nil))
	case <-time.After(20 * time.Second):
		t.Fatal("olInit after the refused olInit did not return: the lifecycle lock was left held")
	}
	if strings.Contains(impl.ResultDetails(res), "internal error") {
		t.Fatalf("refused by a recovered panic: %s", impl.ResultDetails(res))
	}
}
