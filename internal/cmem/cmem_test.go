package cmem

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
)

// A size malloc cannot give (4 EiB: more than any address space) is an
// OUT_OF_RESOURCES error naming what it was for and the size; cgo's
// C.malloc would have ended the test binary.
func TestRefusedSizeIsAnError(t *testing.T) {
	const huge = uint64(1) << 62
	for name, f := range map[string]func(uint64, string) (unsafe.Pointer, error){
		"Malloc": Malloc, "Calloc": Calloc,
		"Copy": func(n uint64, what string) (unsafe.Pointer, error) {
			var b byte
			return Copy(unsafe.Pointer(&b), n, what)
		},
	} {
		p, err := f(huge, "the test's buffer")
		var oe *ol.Error
		if p != nil || !errors.As(err, &oe) || oe.Code != ol.ErrcOutOfResources ||
			!strings.Contains(oe.Details, "the test's buffer") || !strings.Contains(oe.Details, "4611686018427387904 bytes") {
			t.Errorf("%s(1<<62) = %p, %v; want nil and OUT_OF_RESOURCES naming the buffer and its size", name, p, err)
		}
	}
}

func TestCopyAndZero(t *testing.T) {
	src := []byte("pattern bytes")
	p, err := Copy(unsafe.Pointer(&src[0]), uint64(len(src)), "a copy")
	if err != nil {
		t.Fatal(err)
	}
	defer Free(p)
	if got := string(unsafe.Slice((*byte)(p), len(src))); got != string(src) {
		t.Errorf("Copy gave %q, want %q", got, src)
	}
	z, err := Calloc(4096, "zeros")
	if err != nil {
		t.Fatal(err)
	}
	defer Free(z)
	for i, b := range unsafe.Slice((*byte)(z), 4096) {
		if b != 0 {
			t.Fatalf("Calloc byte %d is %d", i, b)
		}
	}
	// a zero-byte allocation is still a pointer malloc can free
	e, err := Malloc(0, "nothing")
	if err != nil || e == nil {
		t.Errorf("Malloc(0) = %p, %v", e, err)
	}
	Free(e)
}

func TestCNameIsNULTerminated(t *testing.T) {
	p := CName("OFFLOAD_TRACE")
	if got := unsafe.Slice((*byte)(p), len("OFFLOAD_TRACE")+1); string(got) != "OFFLOAD_TRACE\x00" {
		t.Errorf("CName gave %q", got)
	}
}
