package cuda

import (
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/internal/cooptest"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// A cooperative launch goes through cuLaunchCooperativeKernel with the
// arguments as kernelParams, and the grid barrier of coop.c holds (the
// double runs every block of such a launch at once, as the GPU holds them
// all resident). The most blocks are the driver's per multiprocessor times
// the multiprocessors; one more is refused naming both numbers.
func TestFakeCooperativeLaunch(t *testing.T) {
	d := newDouble(t, "libcuda-coop.so")
	g := d.Dev[0]
	if !g.Info().CooperativeLaunchSupport.V {
		t.Fatal("the fake GPU says it has no cooperative launch")
	}
	prog, err := g.LoadProgram(fakedriver.FakeCubin(t, "coop"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"coop_phased", "coop_group"} {
		k, err := prog.Kernel(name)
		if err != nil {
			t.Fatal(err)
		}
		// the double's GPU 0: 80 multiprocessors of 32 blocks, 2048
		// threads and 164 KiB of shared memory
		if m := cooptest.Max(t, k, 256, 0); m != 80*8 {
			t.Errorf("%s: MaxCooperativeGroups for blocks of 256 = %d, want 640", name, m)
		}
		if m := cooptest.Max(t, k, 32, 80<<10); m != 80*2 {
			t.Errorf("%s: MaxCooperativeGroups for blocks of 32 with 80 KiB = %d, want 160", name, m)
		}
		cooptest.Check(t, g, k, 1, 32, 2)
		cooptest.Check(t, g, k, 24, 8, 3)
	}
	k, _ := prog.Kernel("coop_phased")
	cooptest.Check(t, g, k, 160, 1, 2) // every block of 1 the first 5 multiprocessors hold
	cooptest.CheckTooLarge(t, g, k, 256, 640, ol.ErrcInvalidArgument, "coop_phased")
	// the double's own limit is the driver's: past it, the driver's error
	q, err := g.NewQueue()
	if err != nil {
		t.Fatal(err)
	}
	s := plugin.LaunchSize{NumGroups: ol.Dimensions{X: 641, Y: 1, Z: 1}, GroupSize: ol.Dimensions{X: 256, Y: 1, Z: 1}}
	err = q.(*Queue).launchNow(k.(*Kernel), cooptest.Args(0, 0, 0), s, true)
	if e, ok := err.(*ol.Error); !ok || e.Code != ol.ErrcInvalidArgument || !contains(e.Details, "720 CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE") {
		t.Errorf("641 blocks of 256 straight to the driver: %v", err)
	}
	if err := q.Sync(); err != nil {
		t.Error(err)
	}
	_ = q.Release()
	if err := prog.Unload(); err != nil {
		t.Error(err)
	}
	d.Deinit()
}

// Without cuLaunchCooperativeKernel the device has no cooperative launch.
func TestFakeNoCooperativeEntryPoint(t *testing.T) {
	lib := fake.Build(t, "libcuda-nocoop.so", "cuLaunchCooperativeKernel")
	t.Setenv(fake.GPUsEnv, "1")
	pl, err := fake.Init(t, lib)
	if err != nil || pl == nil {
		t.Fatalf("Init: %v %v", pl, err)
	}
	g := pl.Devices()[0].(*Device)
	if g.Info().CooperativeLaunchSupport.V {
		t.Error("a driver without cuLaunchCooperativeKernel: CooperativeLaunchSupport is true")
	}
	prog, err := g.LoadProgram(fakedriver.FakeCubin(t, "coop"))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := prog.Kernel("coop_phased")
	if _, err := k.(plugin.CooperativeKernel).MaxCooperativeGroups(ol.Dimensions{X: 32, Y: 1, Z: 1}, 0); err == nil {
		t.Error("MaxCooperativeGroups without the entry point: no error")
	}
	_ = prog.Unload()
	if err := pl.Deinit(); err != nil {
		t.Error(err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
