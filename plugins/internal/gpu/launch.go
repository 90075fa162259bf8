package gpu

import (
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
	if threads > uint64(l.KernelGroup) {
		return ol.Errorf(ol.ErrcInvalidSize, "GroupSize %dx%dx%d is %d work-items, more than kernel %q can have on %s (%d)", b[0], b[1], b[2], threads, kernel, device(), l.KernelGroup)
	}
	return nil
}
