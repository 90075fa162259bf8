package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
)

// TestFakeCUDASelfTest builds the CUDA driver double (tests/drivers/
// fake_cuda.c) with warnings as errors, and its C self-test (tests/drivers/
// fake_cuda_selftest.c), which drives the entry points that this plugin
// does not use but LLVM 22.1's CUDA plugin resolves and calls (the double
// runs both libraries: tests/c/conformance check-fake-cuda, make bench):
// primary-context state and flags, the current context's device, context
// limits, synchronous copies, 2D fills, stream-ordered allocation, stream
// callbacks and cuEventDestroy. It proves them independently of either
// library.
func TestFakeCUDASelfTest(t *testing.T) {
	root := fakedriver.ModuleRoot(t)
	dir := t.TempDir()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	build := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", cc, args, err, out)
		}
	}
	lib := filepath.Join(dir, "libcuda.so")
	build("-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-Werror", "-I", filepath.Join(root, "include"),
		filepath.Join(root, "tests", "drivers", "fake_cuda.c"), "-o", lib, "-ldl", "-lpthread")
	bin := filepath.Join(dir, "selftest")
	build("-O1", "-g", "-Wall", "-Wextra", "-Werror",
		filepath.Join(root, "tests", "drivers", "fake_cuda_selftest.c"), "-o", bin, lib,
		"-Wl,-rpath,"+dir, "-lpthread")
	cmd := exec.Command(bin)
	// two GPUs, and none of the double's fault injection
	cmd.Env = []string{"FAKE_CUDA_DEVICES=2"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FAKE_CUDA_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\nPASS (0 failures)\n") {
		t.Fatalf("self-test: %v\n%s", err, out)
	}
	t.Logf("%d checks passed", strings.Count(string(out), "ok   - "))
}
