package amdgpu

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/contract"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// The kernarg segment: explicit arguments first, the code object v5
// implicit arguments in the last 256 bytes (offsets of the AMDGPU code
// object v5 metadata: block counts u32 at 0, group sizes u16 at 12,
// remainders u16 at 18, global offsets u64 at 40, grid dimensions u16 at
// 64), everything else zero.
func TestKernargLayout(t *testing.T) {
	args := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24}
	seg := uint64(24 + 256)
	buf := make([]byte, seg+8)
	for i := range buf {
		buf[i] = 0xcd
	}
	s := plugin.LaunchSize{NumGroups: ol.Dimensions{X: 7, Y: 3, Z: 1}, GroupSize: ol.Dimensions{X: 64, Y: 2, Z: 1}}
	writeKernarg(buf, seg, implicitOffset(seg), args, s, gridDims(s))
	want := make([]byte, seg)
	copy(want, args)
	h := want[24:]
	h[0], h[4], h[8] = 7, 3, 1 // hidden_block_count_x/y/z
	h[12], h[14], h[16] = 64, 2, 1
	h[64] = 2 // hidden_grid_dims: x and y
	if string(buf[:seg]) != string(want) {
		t.Errorf("kernarg segment\n got  % x\n want % x", buf[:seg], want)
	}
	if buf[seg] != 0xcd {
		t.Error("written past the segment")
	}
	// a kernel without implicit arguments: the segment is the arguments only
	buf2 := make([]byte, 24)
	writeKernarg(buf2, 24, implicitOffset(24), args, s, gridDims(s))
	if string(buf2) != string(args) {
		t.Errorf("without implicit arguments: % x", buf2)
	}
	for _, tc := range []struct {
		s    plugin.LaunchSize
		dims uint16
	}{
		{contract.Size1D(1, 1, 0), 1},
		{plugin.LaunchSize{NumGroups: ol.Dimensions{X: 1, Y: 1, Z: 2}, GroupSize: ol.Dimensions{X: 1, Y: 1, Z: 1}}, 3},
		{plugin.LaunchSize{NumGroups: ol.Dimensions{X: 1, Y: 1, Z: 1}, GroupSize: ol.Dimensions{X: 1, Y: 4, Z: 1}}, 2},
	} {
		if d := gridDims(tc.s); d != tc.dims {
			t.Errorf("gridDims(%+v) = %d, want %d", tc.s, d, tc.dims)
		}
	}
}

// Status codes map to API error codes, with the runtime's text and the
// failing call.
func TestErrorMapping(t *testing.T) {
	for st, want := range map[uint32]ol.Errc{
		0x1000: ol.ErrcBackendFailure, 0x1001: ol.ErrcInvalidArgument, 0x1004: ol.ErrcInvalidDevice,
		0x1008: ol.ErrcOutOfResources, 0x100F: ol.ErrcInvalidBinary, 0x1010: ol.ErrcInvalidBinary,
		0x1013: ol.ErrcNotFound, 0x100B: ol.ErrcUninitialized, 0x1016: ol.ErrcBackendFailure,
	} {
		if got := errcOf(st); got != want {
			t.Errorf("errcOf(%#x) = %s, want %s", st, got, want)
		}
	}
	d := &driver{} // no hsa_status_string: the names from hsa.h
	err := d.failure("hsa_queue_create", 0x1002)
	var oe *ol.Error
	if !errors.As(err, &oe) || oe.Code != ol.ErrcOutOfResources ||
		oe.Details != "hsa_queue_create failed: 0x1002 HSA_STATUS_ERROR_INVALID_QUEUE_CREATION" {
		t.Errorf("%v", err)
	}
}

// Kernels run over the whole grid with the argument buffer and the
// implicit arguments, with barriers and dynamic group memory, after a
// copy they wait for behind a barrier packet; globals have device
// addresses that copies reach; unloading waits for queued launches.
func TestFakeProgramsAndLaunches(t *testing.T) {
	d := newDouble(t, "libhsa-programs.so")
	fakedriver.CheckProgramsAndLaunches(t, d.Double, fakedriver.ProgramsWant{
		CopyIn:        true,
		TooMuchShared: "DynSharedMemory 204800 and the 0 bytes of group memory",
		Kernel: func(q plugin.Queue, k plugin.Kernel, args []byte) {
			if _, err := k.MaxGroupSize(1 << 20); err == nil || !strings.Contains(err.Error(), "exceed the 65536 bytes of group memory") {
				t.Errorf("MaxGroupSize(1 MiB): %v", err)
			}
		},
		Global: func(gp plugin.Program, addr uintptr) {
			if !d.Dev[0].OwnsPointer(addr) {
				t.Error("a global is not the device's memory")
			}
			if _, _, err := gp.Global("write.kd"); err == nil || !strings.Contains(err.Error(), "is not a global variable") {
				t.Errorf("a kernel as a global: %v", err)
			}
		},
		ProgramKind: "executable", LaunchCounter: "fake_hsa_dispatches", Launches: 3, LastSync: true,
	})
}

// A code object for another processor, or bytes that are none, are
// refused with the runtime's reason.
func TestFakeLoadFailures(t *testing.T) {
	t.Setenv("FAKE_HSA_GFX", "gfx90a,gfx942")
	d := newDouble(t, "libhsa-loadfail.so")
	if n := d.Dev[1].info.Name.V; n != "gfx942" {
		t.Fatalf("device 1 is %s", n)
	}
	_, err := d.Dev[1].LoadProgram(fakedriver.FakeHsaco(t, "foo", "gfx90a"))
	var oe *ol.Error
	if !errors.As(err, &oe) || oe.Code != ol.ErrcInvalidBinary ||
		!strings.Contains(oe.Details, "hsa_executable_load_agent_code_object of an AMDGPU code object for gfx90a for gfx942 (device 1) failed: 0x100f HSA_STATUS_ERROR_INVALID_ISA") {
		t.Errorf("gfx90a on gfx942: %v", err)
	}
	good, err := d.Dev[0].LoadProgram(fakedriver.FakeHsaco(t, "foo", "gfx90a"))
	if err != nil {
		t.Fatalf("gfx90a on gfx90a: %v", err)
	}
	t.Setenv("FAKE_HSA_LOAD_RESULT", "0x1010")
	if _, err := d.Dev[0].LoadProgram(fakedriver.FakeHsaco(t, "foo", "gfx90a")); !errors.As(err, &oe) || oe.Code != ol.ErrcInvalidBinary ||
		!strings.Contains(oe.Details, "0x1010 HSA_STATUS_ERROR_INVALID_CODE_OBJECT") {
		t.Errorf("injected load failure: %v", err)
	}
	if n := d.Live("executable"); n != 1 {
		t.Errorf("%d executables, want 1 (failed loads destroy theirs)", n)
	}
	if n := d.Live("reader"); n != 0 {
		t.Errorf("%d code object readers left", n)
	}
	if err := good.Unload(); err != nil {
		t.Fatal(err)
	}
	d.Deinit()
}

// The hot path makes no Go allocation: launch, asynchronous copies, a
// fill, record, wait, release of the event and sync.
func TestFakeHotPathAllocatesNothing(t *testing.T) {
	fakedriver.CheckHotPathAllocatesNothing(t, newDouble(t, "libhsa-allocs.so").Double)
}

// Queues are pooled: create, launch and release (unsynchronised) cycles
// keep the runtime's queues and signals bounded and the process's memory
// flat. 1,000,000 cycles without the race detector (OFFLOAD_CHURN_CYCLES
// changes it), 20,000 with it.
func TestFakeQueueChurnIsFlat(t *testing.T) {
	warm, cycles := 100000, 1000000
	if raceDetector {
		warm, cycles = 2000, 20000
	}
	if s := os.Getenv("OFFLOAD_CHURN_CYCLES"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			cycles = n
		}
	}
	fakedriver.CheckQueueChurnIsFlat(t, newDouble(t, "libhsa-churn.so").Double, fakedriver.Churn{
		Warm: warm, Cycles: cycles, MaxQueues: maxHWQueues, RSS: !raceDetector, Log: []string{"signal"},
	})
}

// The kernel metadata of code objects clang-22 builds: where the implicit
// arguments start (after the 56 bytes of multiargs' argument struct; 8
// for a kernel with one pointer) and the largest work-group (clang's
// default 1024).
func TestClangKernelMetadata(t *testing.T) {
	if _, err := exec.LookPath("clang-22"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("clang-22 is needed (CI installs it)")
		}
		t.Skip("no clang-22")
	}
	root := fakedriver.ModuleRoot(t)
	for _, tc := range []struct {
		source, kernel string
		base           int64
		args           uint64 // the argument struct's size
	}{{"multiargs", "multiargs", 56, 56}, {"global", "read", 8, 8}} {
		out := filepath.Join(t.TempDir(), tc.source+".hsaco")
		// clang's resource-usage remarks are the reference for the
		// registers the metadata should report
		cmd := exec.Command("clang-22", "--target=amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-nogpulib", "-ffreestanding", "-O2",
			"-Rpass-analysis=kernel-resource-usage",
			"-I", filepath.Join(root, "include"), filepath.Join(root, "tests", "c", "kernels", tc.source+".c"), "-o", out)
		remarks, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", cmd, err, remarks)
		}
		regs := map[string]uint32{}
		inKernel := false
		for _, line := range strings.Split(string(remarks), "\n") {
			if i := strings.Index(line, "Function Name: "); i >= 0 {
				inKernel = strings.HasPrefix(line[i+len("Function Name: "):], tc.kernel+" ")
			}
			for _, key := range []string{"VGPRs", "AGPRs"} {
				if i := strings.Index(line, "remark:     "+key+": "); i >= 0 && inKernel {
					var n uint32
					fmt.Sscanf(line[i+len("remark:     "+key+": "):], "%d", &n)
					regs[key] = n
				}
			}
		}
		if _, ok := regs["VGPRs"]; !ok {
			t.Fatalf("%s: no VGPRs remark for %s:\n%s", tc.source, tc.kernel, remarks)
		}
		img, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		meta := parseKernelMeta(img)
		m, ok := meta[tc.kernel]
		if !ok {
			t.Fatalf("%s: no metadata for kernel %q: %v", tc.source, tc.kernel, meta)
		}
		if m.implicitBase != tc.base || m.maxFlatGroupSize != 1024 || m.argsSize != tc.args {
			t.Errorf("%s: %+v, want implicit arguments at %d, %d bytes of arguments and work-groups up to 1024", tc.kernel, m, tc.base, tc.args)
		}
		if want := []plugin.Param{{Offset: 0, Size: tc.args}}; !m.paramsOK || !reflect.DeepEqual(m.params, want) {
			t.Errorf("%s: parameters %v (ok %v), want %v: the argument struct by value", tc.kernel, m.params, m.paramsOK, want)
		}
		if m.vgprs != regs["VGPRs"] || m.agprs != regs["AGPRs"] || m.wave != 64 {
			t.Errorf("%s: %d vector and %d accumulation registers in wave%d, clang says %v in wave64", tc.kernel, m.vgprs, m.agprs, m.wave, regs)
		}
	}
	// the double's code objects carry a note of the same form
	meta := parseKernelMeta(fakedriver.FakeHsaco(t, "multiargs", "gfx90a"))
	if m, ok := meta["multiargs"]; !ok || m.argsSize != 56 || m.implicitBase != 56 || m.maxFlatGroupSize != 1024 {
		t.Errorf("metadata of the double's code object: %+v", meta)
	}
}

// Damaged metadata never panics: every prefix and byte flip of a real
// note decodes or fails, and deep nesting is refused.
func TestMsgpackDamaged(t *testing.T) {
	good := []byte{0x81, 0xae} // {"amdhsa.kernels": [{".name": "k", ".max_flat_workgroup_size": 256}]}
	good = append(good, "amdhsa.kernels"...)
	good = append(good, 0x91, 0x82, 0xa5)
	good = append(good, ".name"...)
	good = append(good, 0xa1, 'k', 0xb8)
	good = append(good, ".max_flat_workgroup_size"...)
	good = append(good, 0xcd, 0x01, 0x00)
	v, n, err := msgpackDecode(good, 0)
	if err != nil || n != len(good) {
		t.Fatalf("decode: %v %d", err, n)
	}
	if m := kernelsOf(v); m["k"].maxFlatGroupSize != 256 || m["k"].implicitBase != -1 {
		t.Errorf("kernels: %+v", m)
	}
	for i := range good {
		_, _, _ = msgpackDecode(good[:i], 0)
		b := append([]byte(nil), good...)
		b[i] ^= 0xff
		_, _, _ = msgpackDecode(b, 0)
	}
	deep := bytes.Repeat([]byte{0x91}, 100000)
	if _, _, err := msgpackDecode(deep, 0); err == nil {
		t.Error("100000 nested arrays decoded")
	}
}

// The group sizes whose waves fit on one compute unit, worked out by hand
// from the register files AMD documents for each generation: CDNA2/3
// (gfx90a, gfx942) 512 registers per lane in each of 4 SIMDs, at most 8
// waves each; GCN5 (gfx906) 256 and 10 waves; RDNA (gfx1100) 2 SIMD32s
// per CU, 1024 registers per lane in wave32 (512 in wave64), 16 waves.
func TestRegGroupLimit(t *testing.T) {
	for _, tc := range []struct {
		gfx                string
		vgprs, agprs, wave uint32
		want               uint32
	}{
		{"gfx90a", 8, 0, 64, 8 * 4 * 64},       // 512/8 = 64 waves, 8 at most
		{"gfx90a", 128, 0, 64, 4 * 4 * 64},     // 512/128 = 4 waves per SIMD: 1024
		{"gfx942", 129, 0, 64, 3 * 4 * 64},     // 129 -> 136: 512/136 = 3
		{"gfx90a", 126, 130, 64, 1 * 4 * 64},   // 126 -> 128 (+130) -> 264: 1 wave
		{"gfx90a:xnack-", 512, 0, 64, 1 * 256}, // one wave per SIMD
		{"gfx908", 100, 130, 64, 1 * 4 * 64},   // the fuller file: 130 -> 136: 256/136 = 1
		{"gfx906", 100, 0, 64, 2 * 4 * 64},     // 100 -> 104: 256/104 = 2
		{"gfx906", 0, 0, 0, 10 * 4 * 64},       // nothing known: the wave limit
		{"gfx1100", 64, 0, 32, 16 * 2 * 32},    // 1024/64 = 16
		{"gfx1100", 256, 0, 32, 4 * 2 * 32},    // 1024/256 = 4
		{"gfx1100", 256, 0, 64, 2 * 2 * 64},    // wave64: 512/256 = 2
		{"gfx700", 8, 0, 64, 0},                // unknown generation
	} {
		if got := regGroupLimit(tc.gfx, tc.vgprs, tc.agprs, tc.wave); got != tc.want {
			t.Errorf("regGroupLimit(%s, %d, %d, wave%d) = %d, want %d", tc.gfx, tc.vgprs, tc.agprs, tc.wave, got, tc.want)
		}
	}
}

// The explicit arguments end at the largest offset + size of the
// arguments that are not hidden; the hidden ones do not count. They are
// the kernel's parameters, in order; one without an offset or a size
// makes the parameters unknown.
func TestMetadataArgumentsSize(t *testing.T) {
	arg := func(kind string, off, size int64) any {
		return map[string]any{".value_kind": kind, ".offset": off, ".size": size}
	}
	type P = plugin.Param
	for _, tc := range []struct {
		args   []any
		want   uint64
		base   int64
		params []P
		ok     bool
	}{
		{[]any{arg("by_value", 0, 12), arg("hidden_block_count_x", 16, 4), arg("hidden_grid_dims", 80, 2)}, 12, 16, []P{{Offset: 0, Size: 12}}, true},
		{[]any{arg("global_buffer", 0, 8), arg("by_value", 8, 4), arg("by_value", 16, 232), arg("hidden_block_count_y", 252, 4)}, 248, 248,
			[]P{{Offset: 0, Size: 8}, {Offset: 8, Size: 4}, {Offset: 16, Size: 232}}, true},
		{[]any{arg("hidden_block_count_x", 0, 4)}, 0, 0, nil, true},
		{nil, 0, -1, nil, true},
		{[]any{arg("by_value", 0, 4), map[string]any{".value_kind": "by_value", ".offset": int64(8)}}, 4, -1, nil, false},
	} {
		m := kernelsOf(map[string]any{"amdhsa.kernels": []any{map[string]any{".name": "k", ".args": tc.args}}})["k"]
		if m.argsSize != tc.want || m.implicitBase != tc.base {
			t.Errorf("%v: %d bytes of arguments, implicit ones at %d; want %d and %d", tc.args, m.argsSize, m.implicitBase, tc.want, tc.base)
		}
		if m.paramsOK != tc.ok || (tc.ok && !reflect.DeepEqual(m.params, tc.params)) {
			t.Errorf("%v: parameters %v (ok %v), want %v (ok %v)", tc.args, m.params, m.paramsOK, tc.params, tc.ok)
		}
	}
}
