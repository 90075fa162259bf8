package fakegpu_test

import (
	"testing"

	"github.com/liboffload-go/liboffload-go/internal/contract"
	"github.com/liboffload-go/liboffload-go/internal/fakegpu"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// TestContract runs the plugin contract suite over fakegpu with two devices.
func TestContract(t *testing.T) {
	var pl *fakegpu.Platform
	contract.Run(t, &contract.Fixture{
		Open: func(t *testing.T) plugin.Platform {
			fp := fakegpu.New(fakegpu.Options{Name: "fake", Devices: 2})
			p, err := fp.Init(nil)
			if err != nil {
				t.Fatal(err)
			}
			pl = fp.Platform
			return p
		},
		Peek: func(t *testing.T, p uintptr, n int) []byte { return owner(pl, p).Peek(p, uint64(n)) },
		Poke: func(t *testing.T, p uintptr, b []byte) { owner(pl, p).Poke(p, b) },
		Skip: map[contract.Group]string{
			contract.Memory:   "fakegpu allocates device memory only (no host or managed memory)",
			contract.Programs: "fakegpu runs no kernels (its programs have globals only; Kernel and Launch fail)",
			contract.Register: "fakegpu does not register host memory (Register is unsupported)",
			contract.HotPath:  "fakegpu runs no kernels, and allocates host memory for no one (device memory only)",
			contract.Timed:    "fakegpu records no profiling events (no plugin.TimedQueue): it tests the runtime's routing",
		},
		Held: func(t *testing.T) {
			if v := pl.Violations(); len(v) != 0 {
				t.Errorf("fakegpu saw contract violations: %v", v)
			}
		},
	})
}

// owner is the device of pl whose arena holds p.
func owner(pl *fakegpu.Platform, p uintptr) *fakegpu.Device {
	var best *fakegpu.Device
	for _, d := range pl.Devices() {
		if g := d.(*fakegpu.Device); g.Base() <= p && (best == nil || g.Base() > best.Base()) {
			best = g
		}
	}
	return best
}
