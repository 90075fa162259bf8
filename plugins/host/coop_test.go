package host

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/internal/cooptest"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// coopKernels loads tests/c/kernels/coop.c on d (unloaded at cleanup).
func coopKernels(t *testing.T, d *Device) (phased, group plugin.Kernel) {
	t.Helper()
	prog, err := d.LoadProgram(buildKernel(t, t.TempDir(), "coop"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Unload() })
	phased, err = prog.Kernel("coop_phased")
	if err != nil {
		t.Fatal(err)
	}
	group, err = prog.Kernel("coop_group")
	if err != nil {
		t.Fatal(err)
	}
	return phased, group
}

// A cooperative launch runs every group at once: the grid barrier of
// coop.c holds in the phased and the group form, up to the most groups
// the device takes; one more group is refused naming both numbers.
func TestCooperativeLaunch(t *testing.T) {
	d := newTestDevice(t)
	if !d.Info().CooperativeLaunchSupport.V {
		t.Fatal("the host device says it has no cooperative launch")
	}
	phased, group := coopKernels(t, d)
	max := cooptest.Max(t, phased, 64, 0)
	if max != MaxCooperativeGroups() || max < 64 {
		t.Fatalf("MaxCooperativeGroups = %d, want %d (at least 64)", max, MaxCooperativeGroups())
	}
	if m := cooptest.Max(t, group, 1024, 4096); m != max {
		t.Errorf("MaxCooperativeGroups for groups of 1024 = %d, want %d", m, max)
	}
	if _, err := phased.(plugin.CooperativeKernel).MaxCooperativeGroups(ol.Dimensions{X: 2048, Y: 1, Z: 1}, 0); err == nil {
		t.Error("MaxCooperativeGroups for groups of 2048 work-items: no error")
	}
	cooptest.Check(t, d, phased, 1, 64, 3)
	cooptest.Check(t, d, phased, 7, 64, 5)
	cooptest.Check(t, d, phased, max, 4, 3)
	cooptest.Check(t, d, group, 5, 16, 4)
	cooptest.Check(t, d, group, 64, 2, 2)
	cooptest.CheckTooLarge(t, d, phased, 4, max, ol.ErrcInvalidArgument, "coop_phased")
}

// ol_grid_barrier() in a launch that is not cooperative cannot wait (the
// groups do not all run at once): the launch fails with INVALID_ARGUMENT
// instead of hanging.
func TestGridBarrierOutsideCooperativeLaunch(t *testing.T) {
	d := newTestDevice(t)
	phased, group := coopKernels(t, d)
	for _, k := range []plugin.Kernel{phased, group} {
		q, err := d.NewQueue()
		if err != nil {
			t.Fatal(err)
		}
		_, err = cooptest.Run(t, d, q, k, 8, 4, 1, q.Launch)
		var oe *ol.Error
		if !errors.As(err, &oe) || oe.Code != ol.ErrcInvalidArgument || !strings.Contains(oe.Details, "ol_grid_barrier() outside a cooperative launch") {
			t.Errorf("%s launched without cooperation: %v", k.(*kernel).name, err)
		}
		_ = q.Release()
	}
}

// A kernel built with the <offload/kernel.h> of ABI 2 (before the grid
// barrier was added at the end of ol_host_launch) still loads and runs.
func TestOlderKernelABIRuns(t *testing.T) {
	d := newTestDevice(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "abi2.c")
	code := `#include <offload/kernel.h>
static void loop(const void *args, const ol_host_launch *l) {
  uint32_t *out = *(uint32_t *const *)args;
  for (uint64_t g = l->group_begin; g < l->group_end; g++) out[g] = (uint32_t)g + 1;
}
OL_EXPORT void abi2(const void *args, const ol_host_launch *l) { loop(args, l); }
OL_EXPORT const ol_host_kernel_desc __ol_kernel_abi2 = {OL_HOST_KERNEL_MAGIC, 2, OL_HOST_KERNEL_LOOP, 8, loop, 0};
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "abi2.so")
	if msg, err := exec.Command("gcc", "-O2", "-fPIC", "-shared", "-I../../include", src, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	img, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := d.LoadProgram(img)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Unload()
	k, err := prog.Kernel("abi2")
	if err != nil {
		t.Fatal(err)
	}
	// its descriptor does not record the parameters (ABI 4 does)
	if params, ok := k.(plugin.ParamKernel).Params(); ok {
		t.Errorf("an ABI 2 kernel's Params() = %v, true", params)
	}
	buf := hostBuf(t, d, 4)
	q, err := d.NewQueue()
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	args := make([]byte, 8)
	binary.LittleEndian.PutUint64(args, uint64(uintptr(unsafe.Pointer(&buf[0]))))
	s := plugin.LaunchSize{NumGroups: ol.Dimensions{X: 4, Y: 1, Z: 1}, GroupSize: ol.Dimensions{X: 1, Y: 1, Z: 1}}
	if err := q.Launch(k, args, s); err != nil {
		t.Fatal(err)
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	for i, v := range buf {
		if v != uint32(i)+1 {
			t.Errorf("out[%d] = %d, want %d", i, v, i+1)
		}
	}
}
