package cuda_test

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/internal/imagetest"
)

// TestProgramImages drives olIsValidBinary and olCreateProgram on the two
// devices of the driver double (sm_80 and sm_90) with every kind of image:
// the ones a device loads are valid (and olCreateProgram reaches the
// plugin, which does not load programs yet); the others are invalid, and
// olCreateProgram says what the image is and what the device needs.
func TestProgramImages(t *testing.T) {
	im := imagetest.Images(t)
	devs := imagetest.CUDA.Start(t, "libcuda-images.so", 2, nil)
	needs := []string{
		"needs PTX for sm_80 or older, a cubin for sm_80 or a fatbin",
		"needs PTX for sm_90 or older, a cubin for sm_90 or a fatbin",
	}
	for _, tc := range []struct {
		name  string
		img   []byte
		valid [2]bool // on sm_80, on sm_90
		is    string  // what a refusal says the image is
	}{
		{"ptx sm_80", im["ptx80"], [2]bool{true, true}, ""},
		{"ptx sm_90a", im["ptx90a"], [2]bool{false, true}, "PTX for sm_90a (PTX ISA 8.0)"},
		{"cubin sm_80", imagetest.Cubin(80, false), [2]bool{true, false}, "a CUDA cubin for sm_80"},
		{"cubin sm_90a", imagetest.Cubin(90, true), [2]bool{false, true}, "a CUDA cubin for sm_90a"},
		{"fatbin", imagetest.Fatbin(), [2]bool{true, true}, ""},
		{"amdgpu", im["gfx90a"], [2]bool{}, "an AMDGPU code object for gfx90a"},
		{"host so", im["so"], [2]bool{}, imagetest.HostDesc()},
		{"bundle", imagetest.Bundle("hipv4-amdgcn-amd-amdhsa--gfx90a"), [2]bool{},
			"a clang offload bundle (1 entry: hipv4-amdgcn-amd-amdhsa--gfx90a)"},
		{"offload binary", imagetest.OffloadBinary(), [2]bool{}, "a truncated LLVM offload binary (8 bytes)"},
		{"junk", []byte("??????????"), [2]bool{}, "not a program image (starts with 3f 3f 3f 3f 3f 3f 3f 3f …)"},
		{"empty", nil, [2]bool{}, "empty (0 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, dev := range devs[:2] {
				if got := imagetest.IsValid(t, dev, tc.img); got != tc.valid[i] && len(tc.img) > 0 {
					t.Errorf("device %d: olIsValidBinary = %v, want %v", i, got, tc.valid[i])
				}
				code, details := imagetest.Create(t, dev, tc.img)
				if tc.valid[i] {
					// accepted by the classifier: the driver was asked (the
					// double cannot JIT PTX, and these cubins and fatbins
					// carry no code)
					if code != ol.ErrcInvalidBinary || !strings.Contains(details, "cuModuleLoadDataEx of ") {
						t.Errorf("device %d: olCreateProgram = %s %q, want the driver's refusal", i, code, details)
					}
					continue
				}
				want := fmt.Sprintf("olCreateProgram: the image is %s; device %#x (Fake CUDA GPU %d) %s", tc.is, dev, i, needs[i])
				if code != ol.ErrcInvalidBinary || details != want {
					t.Errorf("device %d: olCreateProgram = %s %q,\n want INVALID_BINARY %q", i, code, details, want)
				}
			}
		})
	}
	// The host device refuses the GPU images, saying what it needs.
	code, details := imagetest.Create(t, devs[2], im["ptx80"])
	if code != ol.ErrcInvalidBinary || !strings.Contains(details, "the image is PTX for sm_80 (PTX ISA 7.8); device") ||
		!strings.Contains(details, "needs "+imagetest.HostDesc()+" (built with -shared -fPIC)") {
		t.Errorf("host device, PTX: %s %q", code, details)
	}
}

// A cubin or fatbin whose headers point past ProgDataSize is refused
// before the driver reads it, naming the field; olIsValidBinary says no.
func TestDamagedImagesNeverReachTheDriver(t *testing.T) {
	devs := imagetest.CUDA.Start(t, "libcuda-damaged.so", 1, nil)
	le := binary.LittleEndian
	phdrs := imagetest.Cubin(80, false)
	le.PutUint16(phdrs[54:], 56) // e_phentsize
	le.PutUint16(phdrs[56:], 3)  // e_phnum, with e_phoff 0: past the 64 bytes
	shdrs := imagetest.Cubin(80, false)
	le.PutUint64(shdrs[40:], 0xffffffffffffffc0) // e_shoff
	le.PutUint16(shdrs[58:], 64)
	le.PutUint16(shdrs[60:], 1)
	fat := imagetest.Fatbin()
	le.PutUint64(fat[8:], 1<<30) // 1 GiB of entries in 16 bytes
	for _, tc := range []struct {
		name string
		img  []byte
		want string
	}{
		{"program headers", phdrs, "cuda: the image is a CUDA cubin for sm_80, damaged: e_phoff 0x0 + e_phnum 3 × e_phentsize 56 runs past ProgDataSize 64"},
		{"section headers", shdrs, "damaged: e_shoff 0xffffffffffffffc0 + e_shentsize 64 runs past ProgDataSize 64"},
		{"fatbin", fat, "damaged: fatbin header size 16 + entries size 0x40000000 runs past ProgDataSize 16"},
	} {
		if imagetest.IsValid(t, devs[0], tc.img) {
			t.Errorf("%s: olIsValidBinary says true", tc.name)
		}
		if code, details := imagetest.Create(t, devs[0], tc.img); code != ol.ErrcInvalidBinary || !strings.Contains(details, tc.want) {
			t.Errorf("%s: olCreateProgram = %s %q, want INVALID_BINARY %q", tc.name, code, details, tc.want)
		}
	}
}
