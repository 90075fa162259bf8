package host

import (
	"testing"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/internal/contract"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
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
		Register: func() contract.RegisterWant { return contract.RegisterWant{SameAddress: true} },
		Image:    fakedriver.HostKernel,
		Programs: func() contract.ProgramsWant {
			return contract.ProgramsWant{
				TooLargeGroup:     "GroupSize 2048x1x1 exceeds the host device's per-dimension maximum 1024x1024x",
				MaxGroupSize:      64, // a group kernel (barriers): smaller groups
				SharedUnlimited:   "the host device has 1 MiB of group-local memory: 200 KiB fits",
				LaunchAfterUnload: "the host program lives on while a queued launch holds it, so a launch of its kernel still takes a reference (the runtime refuses the destroyed program's kernel handle before the plugin)",
				LastSync:          true,
			}
		},
		Peek: func(_ *testing.T, p uintptr, n int) []byte {
			return append([]byte(nil), unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), n)...)
		},
		Poke: func(_ *testing.T, p uintptr, b []byte) {
			copy(unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), len(b)), b)
		},
	})
}
