package amdgpu

import (
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/internal/cooptest"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// A cooperative launch is an ordinary dispatch of a grid that fits on the
// GPU at once, tagged so that the double runs every group at once; the
// grid barrier of coop.c holds. The most groups are the compute units
// times the groups one holds (wave slots, registers, group memory, at most
// 16); one more is refused naming both numbers.
func TestFakeCooperativeLaunch(t *testing.T) {
	d := newDouble(t, "libhsa-coop.so")
	g := d.Dev[0]
	if !g.Info().CooperativeLaunchSupport.V {
		t.Fatal("the fake GPU says it has no cooperative launch")
	}
	prog, err := g.LoadProgram(fakedriver.FakeHsaco(t, "coop", "gfx90a"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"coop_phased", "coop_group"} {
		k, err := prog.Kernel(name)
		if err != nil {
			t.Fatal(err)
		}
		// the double's GPU 0: 104 CUs of gfx90a (4 SIMDs of 8 wave64
		// slots: the metadata gives no registers), 64 KiB of LDS
		for _, c := range []struct {
			size uint32
			dyn  uint64
			want uint32
		}{{64, 0, 104 * 16}, {256, 0, 104 * 8}, {65, 0, 104 * 16}, {1024, 0, 104 * 2}, {64, 16 << 10, 104 * 4}} {
			if m := cooptest.Max(t, k, c.size, c.dyn); m != c.want {
				t.Errorf("%s: MaxCooperativeGroups(%d, %d) = %d, want %d", name, c.size, c.dyn, m, c.want)
			}
		}
		cooptest.Check(t, g, k, 1, 64, 2)
		cooptest.Check(t, g, k, 24, 8, 3)
	}
	k, _ := prog.Kernel("coop_phased")
	cooptest.Check(t, g, k, 208, 1, 2)
	cooptest.CheckTooLarge(t, g, k, 256, 104*8, ol.ErrcInvalidArgument, "coop_phased")
	if _, err := k.(plugin.CooperativeKernel).MaxCooperativeGroups(ol.Dimensions{X: 2048, Y: 1, Z: 1}, 0); err == nil {
		t.Error("MaxCooperativeGroups for groups of 2048: no error")
	}
	if err := prog.Unload(); err != nil {
		t.Error(err)
	}
	d.Deinit()
}
