package cuda

import (
	"strings"
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/contract"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// Kernels run over the whole grid with the argument buffer as given, with
// barriers and dynamic shared memory (above the default 48 KiB with
// opt-in); globals have device addresses that copies reach; unloading
// waits for queued launches.
func TestFakeProgramsAndLaunches(t *testing.T) {
	fakedriver.CheckProgramsAndLaunches(t, newDouble(t, "libcuda-programs.so").Double, fakedriver.ProgramsWant{
		TooMuchShared: "DynSharedMemory 204800 exceeds what kernel",
		Kernel: func(q plugin.Queue, k plugin.Kernel, args []byte) {
			if err := q.Launch(k, args, contract.Size1D(8, 128, 64<<10)); err != nil {
				t.Errorf("64 KiB of dynamic shared memory (the device allows 96 with opt-in): %v", err)
			}
			if err := q.Sync(); err != nil {
				t.Fatal(err)
			}
		},
		ProgramKind: "module", LaunchCounter: "fake_cuda_launches", Launches: 4,
	})
}

// A module the driver refuses is INVALID_BINARY with its JIT log.
func TestFakeModuleLoadFailure(t *testing.T) {
	d := newDouble(t, "libcuda-modfail.so")
	t.Setenv("FAKE_CUDA_MODULE_RESULT", "218")
	_, err := d.Dev[1].LoadProgram(fakedriver.FakeCubin(t, "sequence"))
	var oe *ol.Error
	if !asOl(err, &oe) || oe.Code != ol.ErrcInvalidBinary || !strings.Contains(oe.Details, "218 CUDA_ERROR_INVALID_PTX") ||
		!strings.Contains(oe.Details, "JIT log: fake_cuda: module load failure injected") {
		t.Errorf("%v", err)
	}
	d.Deinit()
}

func asOl(err error, oe **ol.Error) bool {
	e, ok := err.(*ol.Error)
	*oe = e
	return ok
}

// The hot path makes no Go allocation: launch, asynchronous copies, a
// fill, record, wait, release of the event and sync.
func TestFakeHotPathAllocatesNothing(t *testing.T) {
	fakedriver.CheckHotPathAllocatesNothing(t, newDouble(t, "libcuda-allocs.so").Double)
}

// Queues are pooled: create, launch and release (unsynchronised) cycles
// keep the driver's streams and events bounded and the process's memory
// flat.
func TestFakeQueueChurnIsFlat(t *testing.T) {
	if raceDetector {
		t.Skip("memory growth is measured without the race detector (make test runs this test so too)")
	}
	fakedriver.CheckQueueChurnIsFlat(t, newDouble(t, "libcuda-churn.so").Double, fakedriver.Churn{
		// released streams still busy when the next queue is made are
		// outstanding: how many depends on the machine's load (a loaded
		// 2-core machine saw up to 168), so the bound is generous; without
		// reuse it would be 100,000
		Warm: 20000, Cycles: 100000, MaxQueues: 4 * maxIdleStreams, RSS: true,
	})
}

// A kernel without parameters is launched without an argument buffer
// whatever bytes the caller passes (the driver refuses a buffer for it with
// CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES), and a block past the function's own
// limit (MAX_THREADS_PER_BLOCK, below the device's when its registers
// bound it) is refused before the driver, naming the limit.
func TestFakeKernelParamsAndLimit(t *testing.T) {
	t.Setenv("FAKE_CUDA_FUNC_MAX_THREADS", "256")
	d := newDouble(t, "libcuda-kernlimit.so")
	g := d.Dev[0]
	prog, err := g.LoadProgram(fakedriver.FakeCubin(t, "noargs"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := prog.Kernel("noargs")
	if err != nil {
		t.Fatal(err)
	}
	q := contract.MustQueue(t, g)
	if err := q.Launch(k, []byte{1, 2, 3, 4, 5, 6, 7, 8}, contract.Size1D(3, 7, 0)); err != nil {
		t.Errorf("a kernel without parameters launched with 8 argument bytes: %v", err)
	}
	if err := q.Launch(k, nil, contract.Size1D(1, 256, 0)); err != nil {
		t.Errorf("a block of the function's 256 work-items: %v", err)
	}
	err = q.Launch(k, nil, contract.Size1D(1, 512, 0))
	var oe *ol.Error
	if !asOl(err, &oe) || oe.Code != ol.ErrcInvalidSize || !strings.Contains(oe.Details, "more than kernel \"noargs\"") || !strings.Contains(oe.Details, "(256)") {
		t.Errorf("a block of 512 work-items, the function allowing 256: %v", err)
	}
	if err := q.Sync(); err != nil {
		t.Error(err)
	}
	_ = q.Release()
	_ = prog.Unload()
	d.Deinit()
}
