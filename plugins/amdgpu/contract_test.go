package amdgpu

import (
	"testing"

	"github.com/liboffload-go/liboffload-go/internal/contract"
)

// TestContract runs the plugin contract suite over the HSA double.
func TestContract(t *testing.T) { contract.Run(t, fake.Fixture("libhsa-contract.so", "signal")) }
