package amdgpu_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/amdgpu"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
	"github.com/liboffload-go/liboffload-go/plugins/internal/imagetest"
)

// TestProgramImages drives olIsValidBinary and olCreateProgram on a gfx90a
// GPU of the driver double with every kind of image: only code objects for
// gfx90a are valid (and olCreateProgram reaches the plugin, which does not
// load programs yet); for the others olCreateProgram says what the image
// is and what the device needs.
func TestProgramImages(t *testing.T) {
	lib := (&fakedriver.Driver{Source: "fake_hsa.c"}).Build(t, "libhsa-images.so")
	im := imagetest.Images(t)
	devs := imagetest.Init(t, "amdgpu", map[string]string{amdgpu.EnvLibrary: lib, "FAKE_HSA_GPUS": "1"})
	if len(devs) != 2 {
		t.Fatalf("%d devices, want 1 GPU and the host", len(devs))
	}
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
				if code != ol.ErrcUnsupported || !strings.Contains(details, "loading a program") {
					t.Errorf("olCreateProgram = %s %q, want UNSUPPORTED (loading a program)", code, details)
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
