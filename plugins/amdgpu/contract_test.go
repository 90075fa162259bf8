package amdgpu

import (
	"testing"

	"github.com/liboffload-go/liboffload-go/internal/contract"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
)

// TestContract runs the plugin contract suite over the HSA double.
func TestContract(t *testing.T) {
	contract.Run(t, fake.Fixture("libhsa-contract.so", fakedriver.FixtureWant{Bounded: "signal", Register: func(*fakedriver.Double) contract.RegisterWant {
		return contract.RegisterWant{Locked: "lock", SameAddress: true}
	}, Programs: func(*fakedriver.Double) fakedriver.ProgramsWant {
		return fakedriver.ProgramsWant{
			CopyIn:        true,
			TooMuchShared: "DynSharedMemory 204800 and the 0 bytes of group memory",
			ProgramKind:   "executable", LaunchCounter: "fake_hsa_dispatches", Launches: 3, LastSync: true,
		}
	}, Memory: func(d *fakedriver.Double) contract.MemoryWant {
		return contract.MemoryWant{
			FillStage: fillStage, Unknown: true, FillBehindCopy: true,
			AfterCopies: func() {
				if n := d.Live("lock"); n != 0 {
					d.T.Errorf("%d locks left after the copies from C heap memory completed", n)
				}
			},
			AfterRelease: func() {
				if n := d.Live("alloc"); n != 0 {
					d.T.Errorf("%d allocations left: staging buffers are not freed", n)
				}
			},
		}
	}}))
}
