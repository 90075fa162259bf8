package host

import (
	"testing"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/internal/contract"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// TestContract runs the plugin contract suite over the host device, whose
// device memory is host memory.
func TestContract(t *testing.T) {
	contract.Run(t, &contract.Fixture{
		Open: func(t *testing.T) plugin.Platform {
			p, err := New().Init(noEnv{})
			if err != nil {
				t.Fatal(err)
			}
			return p
		},
		// fills are not staged on the host device: 4 KiB only sizes the
		// large fill
		Memory: func() contract.MemoryWant {
			return contract.MemoryWant{FillStage: 4096, Unknown: true, FillBehindCopy: true}
		},
		Peek: func(_ *testing.T, p uintptr, n int) []byte {
			return append([]byte(nil), unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), n)...)
		},
		Poke: func(_ *testing.T, p uintptr, b []byte) {
			copy(unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), len(b)), b)
		},
	})
}
