package gpu

import (
	"math/big"
	"math/bits"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// Limits are what a GPU allows of a launch.
type Limits struct {
	// Group bounds each dimension of a work-group, in work-items.
	Group [3]uint32
	// Grid bounds each dimension of the grid: in work-items (NumGroups ×
	// GroupSize) when GridInItems, as AMDGPU does, else in groups, as CUDA
	// does.
	Grid        [3]uint32
	GridInItems bool
	// Total bounds the whole grid in work-items (MAX_WORK_SIZE), counted
	// without wrapping; 0 when the device does not bound it.
	Total uint64
	// KernelGroup is the most work-items a work-group of the kernel can
	// have.
	KernelGroup uint32
}

// CheckLaunch refuses a launch size beyond the limits, with the value
// named; kernel and device name them in messages. device is called only
// when there is an error, so that an accepted launch formats nothing.
func CheckLaunch(s plugin.LaunchSize, l Limits, kernel string, device func() string) error {
	g, b := [3]uint32{s.NumGroups.X, s.NumGroups.Y, s.NumGroups.Z}, [3]uint32{s.GroupSize.X, s.GroupSize.Y, s.GroupSize.Z}
	threads := uint64(1)
	for i, axis := range "xyz" {
		if g[i] == 0 || b[i] == 0 {
			return ol.Errorf(ol.ErrcInvalidSize, "NumGroups.%c is %d and GroupSize.%c is %d: every dimension needs at least one", axis, g[i], axis, b[i])
		}
		if b[i] > l.Group[i] {
			return ol.Errorf(ol.ErrcInvalidSize, "GroupSize.%c %d exceeds the maximum %d of %s", axis, b[i], l.Group[i], device())
		}
		if l.GridInItems {
			if items := uint64(g[i]) * uint64(b[i]); items > uint64(l.Grid[i]) {
				return ol.Errorf(ol.ErrcInvalidSize, "NumGroups.%c %d × GroupSize.%c %d is %d work-items, more than the maximum %d of %s", axis, g[i], axis, b[i], items, l.Grid[i], device())
			}
		} else if g[i] > l.Grid[i] {
			return ol.Errorf(ol.ErrcInvalidSize, "NumGroups.%c %d exceeds the maximum %d of %s", axis, g[i], l.Grid[i], device())
		}
		threads *= uint64(b[i])
	}
	if l.Total > 0 {
		// each dimension's product fits 64 bits, so only the last
		// multiplication can overflow
		x, y, z := uint64(g[0])*uint64(b[0]), uint64(g[1])*uint64(b[1]), uint64(g[2])*uint64(b[2])
		over, xy := bits.Mul64(x, y)
		hi, total := bits.Mul64(xy, z)
		if over != 0 || hi != 0 || total > l.Total {
			n := new(big.Int).Mul(new(big.Int).Mul(new(big.Int).SetUint64(x), new(big.Int).SetUint64(y)), new(big.Int).SetUint64(z))
			return ol.Errorf(ol.ErrcInvalidSize, "the grid of %dx%dx%d groups of %dx%dx%d work-items has %s work-items in total, more than the maximum %d of %s",
				g[0], g[1], g[2], b[0], b[1], b[2], n, l.Total, device())
		}
	}
	if threads > uint64(l.KernelGroup) {
		return ol.Errorf(ol.ErrcInvalidSize, "GroupSize %dx%dx%d is %d work-items, more than kernel %q can have on %s (%d)", b[0], b[1], b[2], threads, kernel, device(), l.KernelGroup)
	}
	return nil
}
