package gpu

import (
	"errors"
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

func TestCheckLaunch(t *testing.T) {
	size := func(g, b ol.Dimensions) plugin.LaunchSize { return plugin.LaunchSize{NumGroups: g, GroupSize: b} }
	items := Limits{Group: [3]uint32{256, 256, 4}, Grid: [3]uint32{1024, 16, 16}, GridInItems: true, KernelGroup: 512}
	groups := items
	groups.GridInItems = false
	total := items
	total.Total = 1 << 16
	wide := Limits{Group: [3]uint32{1024, 1024, 1024}, Grid: [3]uint32{1<<32 - 1, 1<<32 - 1, 1<<32 - 1}, GridInItems: true, Total: 1<<32 - 1, KernelGroup: 1024}
	for _, c := range []struct {
		l    Limits
		s    plugin.LaunchSize
		want string // "" when accepted
	}{
		{items, size(ol.Dimensions{X: 4, Y: 1, Z: 1}, ol.Dimensions{X: 256, Y: 1, Z: 1}), ""},
		{items, size(ol.Dimensions{X: 1, Y: 0, Z: 1}, ol.Dimensions{X: 1, Y: 1, Z: 1}), "NumGroups.y is 0 and GroupSize.y is 1: every dimension needs at least one"},
		{items, size(ol.Dimensions{X: 1, Y: 1, Z: 1}, ol.Dimensions{X: 1, Y: 1, Z: 5}), "GroupSize.z 5 exceeds the maximum 4 of dev"},
		{items, size(ol.Dimensions{X: 5, Y: 1, Z: 1}, ol.Dimensions{X: 256, Y: 1, Z: 1}), "NumGroups.x 5 × GroupSize.x 256 is 1280 work-items, more than the maximum 1024 of dev"},
		{groups, size(ol.Dimensions{X: 5, Y: 1, Z: 1}, ol.Dimensions{X: 256, Y: 1, Z: 1}), ""},
		{groups, size(ol.Dimensions{X: 1025, Y: 1, Z: 1}, ol.Dimensions{X: 1, Y: 1, Z: 1}), "NumGroups.x 1025 exceeds the maximum 1024 of dev"},
		{groups, size(ol.Dimensions{X: 1, Y: 1, Z: 1}, ol.Dimensions{X: 256, Y: 1, Z: 4}), `GroupSize 256x1x4 is 1024 work-items, more than kernel "k" can have on dev (512)`},
		{total, size(ol.Dimensions{X: 4, Y: 16, Z: 1}, ol.Dimensions{X: 256, Y: 1, Z: 1}), ""},
		{total, size(ol.Dimensions{X: 4, Y: 16, Z: 5}, ol.Dimensions{X: 256, Y: 1, Z: 1}), "the grid of 4x16x5 groups of 256x1x1 work-items has 81920 work-items in total, more than the maximum 65536 of dev"},
		{wide, size(ol.Dimensions{X: 1 << 16, Y: 1 << 16, Z: 1}, ol.Dimensions{X: 1, Y: 1, Z: 1}), "the grid of 65536x65536x1 groups of 1x1x1 work-items has 4294967296 work-items in total, more than the maximum 4294967295 of dev"},
		{wide, size(ol.Dimensions{X: 1<<32 - 1, Y: 1<<32 - 1, Z: 1<<32 - 1}, ol.Dimensions{X: 1, Y: 1, Z: 1}), "the grid of 4294967295x4294967295x4294967295 groups of 1x1x1 work-items has 79228162458924105385300197375 work-items in total, more than the maximum 4294967295 of dev"},
		{wide, size(ol.Dimensions{X: 1<<32 - 1, Y: 1, Z: 1}, ol.Dimensions{X: 1, Y: 1, Z: 1}), ""},
	} {
		err := CheckLaunch(c.s, c.l, "k", func() string { return "dev" })
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v in items %v: %v", c.s, c.l.GridInItems, err)
			}
			continue
		}
		var e *ol.Error
		if !errors.As(err, &e) || e.Code != ol.ErrcInvalidSize || e.Details != c.want {
			t.Errorf("%+v in items %v: %v, want %q", c.s, c.l.GridInItems, err, c.want)
		}
	}
}
