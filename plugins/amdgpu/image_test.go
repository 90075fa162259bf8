package amdgpu_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
	"github.com/liboffload-go/liboffload-go/plugins/internal/imagetest"
)

// TestProgramImages drives olIsValidBinary and olCreateProgram on a gfx90a
// GPU of the driver double with every kind of image: only code objects for
// gfx90a are valid (and olCreateProgram loads them into an executable);
// for the others olCreateProgram says what the image is and what the
// device needs.
func TestProgramImages(t *testing.T) {
	im := imagetest.Images(t)
	devs := imagetest.HSA.Start(t, "libhsa-images.so", 1, nil)
	dev := devs[0]
	for _, tc := range []struct {
		name string
		img  []byte
		is   string // what a refusal says the image is; "" if valid
	}{
		{"gfx90a", im["gfx90a"], ""},
		{"gfx942", im["gfx942:xnack+"], "an AMDGPU code object for gfx942:xnack+"},
		// gfx9-generic covers gfx900 to gfx90c, but not gfx90a.
		{"gfx9-generic", im["gfx9-generic"], "an AMDGPU code object for gfx9-generic"},
		{"ptx", im["ptx80"], "PTX for sm_80 (PTX ISA 7.8)"},
		{"cubin", imagetest.Cubin(80, false), "a CUDA cubin for sm_80"},
		{"fatbin", imagetest.Fatbin(), "a CUDA fatbin (version 1, 16-byte header, 0 bytes of entries)"},
		{"host so", im["so"], imagetest.HostDesc()},
		{"bundle", imagetest.Bundle("hipv4-amdgcn-amd-amdhsa--gfx90a"),
			"a clang offload bundle (1 entry: hipv4-amdgcn-amd-amdhsa--gfx90a)"},
		{"junk", []byte{0x3f, 0x3f}, "not a program image (starts with 3f 3f)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := imagetest.IsValid(t, dev, tc.img); got != (tc.is == "") {
				t.Errorf("olIsValidBinary = %v, want %v", got, tc.is == "")
			}
			code, details := imagetest.Create(t, dev, tc.img)
			if tc.is == "" {
				if code != ol.ErrcSuccess {
					t.Errorf("olCreateProgram = %s %q, want success", code, details)
				}
				return
			}
			want := fmt.Sprintf("olCreateProgram: the image is %s; device %#x (Fake AMD GPU 0, gfx90a) needs an AMDGPU code object for gfx90a", tc.is, dev)
			if code != ol.ErrcInvalidBinary || details != want {
				t.Errorf("olCreateProgram = %s %q,\n want INVALID_BINARY %q", code, details, want)
			}
		})
	}
	// The host device refuses the code object, saying what it is.
	code, details := imagetest.Create(t, devs[1], im["gfx90a"])
	if code != ol.ErrcInvalidBinary || !strings.Contains(details, "the image is an AMDGPU code object for gfx90a; device") {
		t.Errorf("host device, code object: %s %q", code, details)
	}
}

// Code objects clang-22 builds from the kernel sources for gfx90a and
// gfx942 are each valid on an agent of their processor and refused, with
// the reason, on the other; on their own agent they load.
func TestClangCodeObjectsPerTarget(t *testing.T) {
	if _, err := exec.LookPath("clang-22"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("clang-22 is needed (CI installs it)")
		}
		t.Skip("no clang-22")
	}
	root := fakedriver.ModuleRoot(t)
	dir := t.TempDir()
	img := map[string][]byte{}
	for _, gfx := range []string{"gfx90a", "gfx942"} {
		out := filepath.Join(dir, "foo."+gfx+".hsaco")
		cmd := exec.Command("clang-22", "--target=amdgcn-amd-amdhsa", "-mcpu="+gfx, "-nogpulib", "-ffreestanding", "-O2",
			"-I", filepath.Join(root, "include"), filepath.Join(root, "tests", "c", "kernels", "foo.c"), "-o", out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", cmd, err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		img[gfx] = b
	}
	devs := imagetest.HSA.Start(t, "libhsa-targets.so", 2, map[string]string{"FAKE_HSA_GFX": "gfx90a,gfx942"})
	gfx := []string{"gfx90a", "gfx942"}
	for i, dev := range devs[:2] {
		for j, g := range gfx {
			valid := imagetest.IsValid(t, dev, img[g])
			code, details := imagetest.Create(t, dev, img[g])
			if i == j {
				if !valid || code != ol.ErrcSuccess {
					t.Errorf("%s on its own agent: olIsValidBinary %v, olCreateProgram %s %q", g, valid, code, details)
				}
				continue
			}
			want := fmt.Sprintf("olCreateProgram: the image is an AMDGPU code object for %s; device %#x (Fake AMD GPU %d, %s) needs an AMDGPU code object for %s", g, dev, i, gfx[i], gfx[i])
			if valid || code != ol.ErrcInvalidBinary || details != want {
				t.Errorf("%s on %s: olIsValidBinary %v, olCreateProgram %s %q, want INVALID_BINARY %q", g, gfx[i], valid, code, details, want)
			}
		}
	}
}
