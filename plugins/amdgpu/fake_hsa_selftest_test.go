package amdgpu

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
)

// TestFakeHSASelfTest builds the ROCr double (tests/drivers/fake_hsa.c) with
// warnings as errors, and its C self-test (tests/drivers/
// fake_hsa_selftest.c), which drives the double the way a runtime user
// does: agents and pools, device memory the CPU cannot touch, async copies
// with dependency and completion signals, fills, locks, async handlers,
// AQL queues with barrier-AND and kernel-dispatch packets running kernels
// of tests/c/kernels, implicit-argument checks, fault injection and leak
// counting. It proves the double independently of this plugin.
func TestFakeHSASelfTest(t *testing.T) {
	root := fakedriver.ModuleRoot(t)
	dir := t.TempDir()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	include := filepath.Join(root, "include")
	build := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", cc, args, err, out)
		}
	}
	lib := filepath.Join(dir, "libfakehsa.so")
	build("-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-Werror", "-I", include,
		filepath.Join(root, "tests", "drivers", "fake_hsa.c"), "-o", lib, "-ldl", "-lpthread")
	for _, k := range []string{"multiargs", "localmem_reduction", "global"} {
		build("-O2", "-fPIC", "-shared", "-I", include,
			filepath.Join(root, "tests", "c", "kernels", k+".c"), "-o", filepath.Join(dir, k+".so"))
	}
	bin := filepath.Join(dir, "selftest")
	build("-O1", "-g", "-Wall", "-Wextra", "-Werror", "-I", include,
		filepath.Join(root, "tests", "drivers", "fake_hsa_selftest.c"), "-o", bin, lib,
		"-Wl,-rpath,"+dir, "-lpthread")
	cmd := exec.Command(bin, dir)
	// the self-test sets the double's variables itself; none may leak in
	cmd.Env = []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FAKE_HSA_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\nPASS (0 failures)\n") {
		t.Fatalf("self-test: %v\n%s", err, out)
	}
	t.Logf("%d checks passed", strings.Count(string(out), "\nok   - ")+1)
}
