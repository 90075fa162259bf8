package cuda

import (
	"testing"

	"github.com/liboffload-go/liboffload-go/internal/contract"
)

// TestContract runs the plugin contract suite over the CUDA double.
func TestContract(t *testing.T) { contract.Run(t, fake.Fixture("libcuda-contract.so", "")) }
