package cuda

import (
	"testing"

	"github.com/liboffload-go/liboffload-go/internal/contract"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
)

// TestContract runs the plugin contract suite over the CUDA double.
func TestContract(t *testing.T) {
	contract.Run(t, fake.Fixture("libcuda-contract.so", fakedriver.FixtureWant{
		Memory: func(*fakedriver.Double) contract.MemoryWant {
			return contract.MemoryWant{FillStage: fillStage, DoubleFree: "CUDA_ERROR_INVALID_VALUE"}
		},
		Register: func(*fakedriver.Double) contract.RegisterWant { return contract.RegisterWant{Locked: "register"} },
		Programs: func(*fakedriver.Double) fakedriver.ProgramsWant {
			return fakedriver.ProgramsWant{
				TooMuchShared: "DynSharedMemory 204800 exceeds what kernel",
				ProgramKind:   "module", LaunchCounter: "fake_cuda_launches", Launches: 3,
			}
		},
	}))
}
