package image

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Compiler flags of tests/c/device/Makefile (GPU_NVPTX, GPU_AMDGPU).
var (
	nvptxFlags  = []string{"--target=nvptx64-nvidia-cuda", "-nogpulib", "-ffreestanding", "-O2", "-S"}
	amdgpuFlags = []string{"--target=amdgcn-amd-amdhsa", "-nogpulib", "-ffreestanding", "-O2"}
)

// build runs a compiler on tests/c/kernels/foo.c and returns the output. A
// missing compiler fails the test: CI installs gcc and clang-22.
func build(tb testing.TB, out string, cc string, args ...string) []byte {
	tb.Helper()
	if _, err := exec.LookPath(cc); err != nil {
		tb.Fatalf("%s is needed to build the test images: %v", cc, err)
	}
	path := filepath.Join(tb.TempDir(), out)
	args = append(args, "-I../../include", "../../tests/c/kernels/foo.c", "-o", path)
	if msg, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		tb.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, msg)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// images are the real images, built once per test binary.
var (
	imagesOnce sync.Once
	images     map[string][]byte
)

func realImages(tb testing.TB) map[string][]byte {
	tb.Helper()
	imagesOnce.Do(func() {
		m := map[string][]byte{
			"so":     build(tb, "foo.so", "gcc", "-std=gnu17", "-O2", "-fPIC", "-shared"),
			"obj":    build(tb, "foo.o", "gcc", "-std=gnu17", "-O2", "-fPIC", "-c"),
			"ptx":    build(tb, "foo.ptx", "clang-22", append([]string{"-march=sm_80", "-Xclang", "-target-feature", "-Xclang", "+ptx78"}, nvptxFlags...)...),
			"ptx90a": build(tb, "foo90a.ptx", "clang-22", append([]string{"-march=sm_90a", "-Xclang", "-target-feature", "-Xclang", "+ptx80"}, nvptxFlags...)...),
			"gfx90a": build(tb, "foo.gfx90a", "clang-22", append([]string{"-mcpu=gfx90a"}, amdgpuFlags...)...),
			"gfx942": build(tb, "foo.gfx942", "clang-22", append([]string{"-mcpu=gfx942:xnack+"}, amdgpuFlags...)...),
			"gfx9g":  build(tb, "foo.gfx9g", "clang-22", append([]string{"-mcpu=gfx9-generic"}, amdgpuFlags...)...),
			"gfx1100": build(tb, "foo.gfx1100", "clang-22",
				append([]string{"-mcpu=gfx1100"}, amdgpuFlags...)...),
			"amdrel": build(tb, "foo.amdgpu.o", "clang-22", append([]string{"-mcpu=gfx90a", "-c"}, amdgpuFlags...)...),
		}
		images = m
	})
	if images == nil {
		tb.Fatal("the test images were not built")
	}
	return images
}

// elfHeader is a 64-bit little-endian ELF header.
func elfHeader(machine elf.Machine, typ elf.Type, osabi, abiVersion uint8, flags uint32) []byte {
	h := make([]byte, 64)
	copy(h, elf.ELFMAG)
	h[elf.EI_CLASS], h[elf.EI_DATA], h[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), 1
	h[elf.EI_OSABI], h[elf.EI_ABIVERSION] = osabi, abiVersion
	binary.LittleEndian.PutUint16(h[16:], uint16(typ))
	binary.LittleEndian.PutUint16(h[18:], uint16(machine))
	binary.LittleEndian.PutUint32(h[20:], 1)
	binary.LittleEndian.PutUint32(h[48:], flags)
	binary.LittleEndian.PutUint16(h[52:], 64)
	return h
}

// cubin is a cubin header: ABI version 7 keeps the SM in the low byte (and
// 0x400 is 64-bit addressing), version 8 in bits 8-15.
func cubin(sm int, accel bool) []byte {
	if sm >= 100 {
		f := uint32(sm) << 8
		if accel {
			f |= 0x8
		}
		return elfHeader(emCUDA, elf.ET_EXEC, 0x41, 8, f)
	}
	f := uint32(sm) | 0x400 | uint32(sm)<<16
	if accel {
		f |= 0x800
	}
	return elfHeader(emCUDA, elf.ET_EXEC, 0x33, 7, f)
}

func fatbin() []byte {
	b := make([]byte, 16+64)
	binary.LittleEndian.PutUint32(b, 0xba55ed50)
	binary.LittleEndian.PutUint16(b[4:], 1)
	binary.LittleEndian.PutUint16(b[6:], 16)
	binary.LittleEndian.PutUint64(b[8:], 64)
	return b
}

func bundle(triples ...string) []byte {
	b := []byte("__CLANG_OFFLOAD_BUNDLE__")
	b = binary.LittleEndian.AppendUint64(b, uint64(len(triples)))
	for k, t := range triples {
		b = binary.LittleEndian.AppendUint64(b, uint64(4096*(k+1)))
		b = binary.LittleEndian.AppendUint64(b, 0)
		b = binary.LittleEndian.AppendUint64(b, uint64(len(t)))
		b = append(b, t...)
	}
	return b
}

// offloadBinary is an LLVM offload binary with one entry and a string table
// of triple and arch.
func offloadBinary(imageKind, offloadKind uint16, triple, arch string) []byte {
	le := binary.LittleEndian
	b := []byte{0x10, 0xff, 0x10, 0xad}
	b = le.AppendUint32(b, 1)  // version
	b = le.AppendUint64(b, 0)  // size, patched below
	b = le.AppendUint64(b, 32) // entry offset
	b = le.AppendUint64(b, 48) // entry size
	b = le.AppendUint16(b, imageKind)
	b = le.AppendUint16(b, offloadKind)
	b = le.AppendUint32(b, 0)
	b = le.AppendUint64(b, 72) // string table offset
	b = le.AppendUint64(b, 2)
	b = le.AppendUint64(b, 0) // image offset
	b = le.AppendUint64(b, 0) // image size
	strs := 72 + 32
	keys := []string{"triple", "arch"}
	vals := []string{triple, arch}
	var data []byte
	for k := range keys {
		ko := strs + len(data)
		data = append(append(data, keys[k]...), 0)
		vo := strs + len(data)
		data = append(append(data, vals[k]...), 0)
		b = le.AppendUint64(b, uint64(ko))
		b = le.AppendUint64(b, uint64(vo))
	}
	b = append(b, data...)
	le.PutUint64(b[8:], uint64(len(b)))
	return b
}

func TestClassifyRealImages(t *testing.T) {
	im := realImages(t)
	host := MachineName(HostMachine())
	for _, tc := range []struct {
		name string
		kind Kind
		desc string
	}{
		{"so", HostELF, host + " ELF shared object"},
		{"obj", HostELF, "ELF relocatable object for " + host},
		{"ptx", PTX, "PTX for sm_80 (PTX ISA 7.8)"},
		{"ptx90a", PTX, "PTX for sm_90a (PTX ISA 8.0)"},
		{"gfx90a", AMDGPU, "AMDGPU code object for gfx90a"},
		{"gfx942", AMDGPU, "AMDGPU code object for gfx942:xnack+"},
		{"gfx9g", AMDGPU, "AMDGPU code object for gfx9-generic"},
		{"gfx1100", AMDGPU, "AMDGPU code object for gfx1100"},
		{"amdrel", AMDGPU, "AMDGPU relocatable object for gfx90a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(im[tc.name])
			if got.Kind != tc.kind || got.Desc != tc.desc {
				t.Fatalf("Classify = %v %q, want %v %q", got.Kind, got.Desc, tc.kind, tc.desc)
			}
		})
	}
	if got := Classify(im["so"]); got.Machine != HostMachine() || got.Class != elf.ELFCLASS64 || got.Type != elf.ET_DYN {
		t.Errorf("host .so: machine %v class %v type %v", got.Machine, got.Class, got.Type)
	}
	if got := Classify(im["ptx"]); got.SM != 80 || got.SMSuffix != "" || got.PTXVersion != "7.8" {
		t.Errorf("PTX: %+v", got)
	}
	g := Classify(im["gfx942"])
	if g.GFX != "gfx942" || g.Xnack != FeatureOn || g.SRAMECC != FeatureAny {
		t.Errorf("gfx942:xnack+: %+v", g)
	}
	if g := Classify(im["gfx90a"]); g.Xnack != FeatureAny || g.SRAMECC != FeatureAny || g.Phrase() != "an AMDGPU code object for gfx90a" {
		t.Errorf("gfx90a: %+v, phrase %q", g, g.Phrase())
	}
}

func TestClassifyFixtures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		img    []byte
		kind   Kind
		phrase string
	}{
		{"empty", nil, Unknown, "empty (0 bytes)"},
		{"junk", bytes.Repeat([]byte("?"), 100), Unknown, "not a program image (starts with 3f 3f 3f 3f 3f 3f 3f 3f …)"},
		{"short junk", []byte{1, 2}, Unknown, "not a program image (starts with 01 02)"},
		{"elf magic only", []byte("\x7fELF"), Unknown, "a truncated ELF image (4 bytes)"},
		{"elf bad class", append([]byte("\x7fELF\x07\x01\x01"), make([]byte, 60)...), Unknown, "a damaged ELF image (class 7)"},
		{"elf header cut", elfHeader(elf.EM_X86_64, elf.ET_DYN, 0, 0, 0)[:40], Unknown, "a truncated ELF image (40 bytes, less than its 64-byte header)"},
		{"aarch64 so", elfHeader(elf.EM_AARCH64, elf.ET_DYN, 0, 0, 0), HostELF, "an AArch64 ELF shared object"},
		{"riscv exec", elfHeader(elf.EM_RISCV, elf.ET_EXEC, 0, 0, 0), HostELF, "a RISC-V ELF executable"},
		{"x86-64 rel", elfHeader(elf.EM_X86_64, elf.ET_REL, 0, 0, 0), HostELF, "an ELF relocatable object for x86-64"},
		{"cubin sm_80", cubin(80, false), Cubin, "a CUDA cubin for sm_80"},
		{"cubin sm_90a", cubin(90, true), Cubin, "a CUDA cubin for sm_90a"},
		{"cubin sm_100", cubin(100, false), Cubin, "a CUDA cubin for sm_100"},
		{"cubin sm_120a", cubin(120, true), Cubin, "a CUDA cubin for sm_120a"},
		{"fatbin", fatbin(), Fatbin, "a CUDA fatbin (version 1, 16-byte header, 64 bytes of entries)"},
		{"fatbin cut", fatbin()[:10], Fatbin, "a truncated CUDA fatbin (10 bytes)"},
		{"bundle", bundle("hipv4-amdgcn-amd-amdhsa--gfx90a", "host-x86_64-unknown-linux-gnu"), ClangOffloadBundle,
			"a clang offload bundle (2 entries: hipv4-amdgcn-amd-amdhsa--gfx90a, host-x86_64-unknown-linux-gnu)"},
		{"bundle cut", bundle("hipv4-amdgcn-amd-amdhsa--gfx90a")[:30], ClangOffloadBundle, "a truncated clang offload bundle (30 bytes)"},
		{"compressed bundle", append([]byte("CCOB\x02\x00\x01\x00"), make([]byte, 32)...), ClangOffloadBundle,
			"a compressed clang offload bundle (format version 2)"},
		{"offload binary", offloadBinary(1, 1, "amdgcn-amd-amdhsa", "gfx90a"), LLVMOffloadBinary,
			"an LLVM offload binary (OpenMP object for amdgcn-amd-amdhsa gfx90a)"},
		{"offload binary cut", offloadBinary(1, 1, "amdgcn-amd-amdhsa", "gfx90a")[:12], LLVMOffloadBinary,
			"a truncated LLVM offload binary (12 bytes)"},
		{"amdgpu v3 xnack", elfHeader(emAMDGPU, elf.ET_DYN, 64, 1, 0x3f|0x100), AMDGPU, "an AMDGPU code object for gfx90a:sramecc-:xnack+"},
		{"amdgpu pal", elfHeader(emAMDGPU, elf.ET_DYN, 65, 0, 0x41), AMDGPU, "an AMDGPU code object for gfx1100 (PAL ABI)"},
		{"amdgpu unknown mach", elfHeader(emAMDGPU, elf.ET_DYN, 64, 4, 0xee), AMDGPU,
			"an AMDGPU code object for an unknown processor (EF_AMDGPU_MACH 0xee)"},
		{"ptx block comment", []byte("/* x\n y */\n  .version 8.5 // c\n.target sm_100f, debug\n"), PTX, "PTX for sm_100f (PTX ISA 8.5)"},
		{"ptx no target", []byte(".version 6.0\n.address_size 64\n.visible .entry k() {}\n"), PTX, "PTX without a .target (PTX ISA 6.0)"},
		{"not ptx", []byte("// hello\n.versions 7.8\n.target sm_80\n"), Unknown, "not a program image (starts with 2f 2f 20 68 65 6c 6c 6f …)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(tc.img)
			if got.Kind != tc.kind || got.Phrase() != tc.phrase {
				t.Fatalf("Classify = %v %q, want %v %q", got.Kind, got.Phrase(), tc.kind, tc.phrase)
			}
		})
	}
}

func TestTargets(t *testing.T) {
	im := realImages(t)
	host := HostTarget(HostMachine())
	sm80, sm86, sm90 := CUDATarget(8, 0), CUDATarget(8, 6), CUDATarget(9, 0)
	gfx90a, gfx942, gfx906 := AMDGPUTarget("gfx90a"), AMDGPUTarget("gfx942:sramecc+:xnack-"), AMDGPUTarget("gfx906")
	all := []Target{host, sm80, sm86, sm90, gfx90a, gfx942, gfx906}
	for _, tc := range []struct {
		name string
		img  []byte
		want []Target // the targets that accept it
	}{
		{"host so", im["so"], []Target{host}},
		{"host obj (the host validator explains)", im["obj"], []Target{host}},
		{"junk (the host validator explains)", []byte("junk junk"), []Target{host}},
		{"aarch64/x86-64 so of the other machine", elfHeader(otherMachine(), elf.ET_DYN, 0, 0, 0), nil},
		{"ptx sm_80", im["ptx"], []Target{sm80, sm86, sm90}},
		{"ptx sm_90a", im["ptx90a"], []Target{sm90}},
		{"cubin sm_80", cubin(80, false), []Target{sm80, sm86}},
		{"cubin sm_86", cubin(86, false), []Target{sm86}},
		{"cubin sm_90a", cubin(90, true), []Target{sm90}},
		{"cubin sm_100", cubin(100, false), nil},
		{"fatbin", fatbin(), []Target{sm80, sm86, sm90}},
		{"gfx90a", im["gfx90a"], []Target{gfx90a}},
		{"gfx942:xnack+", im["gfx942"], []Target{gfx942}},
		{"gfx9-generic", im["gfx9g"], []Target{gfx906}},
		{"gfx1100", im["gfx1100"], nil},
		{"gfx90a relocatable", im["amdrel"], nil},
		{"bundle", bundle("hipv4-amdgcn-amd-amdhsa--gfx90a"), nil},
		{"offload binary", offloadBinary(1, 1, "amdgcn-amd-amdhsa", "gfx90a"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := Classify(tc.img)
			for _, tg := range all {
				want := false
				for _, w := range tc.want {
					want = want || w == tg
				}
				if got := tg.Accepts(info); got != want {
					t.Errorf("%s.Accepts(%s) = %v, want %v", tg, info.Desc, got, want)
				}
			}
		})
	}
	for _, tc := range []struct {
		t    Target
		need string
	}{
		{HostTarget(elf.EM_X86_64), "an x86-64 ELF shared object (built with -shared -fPIC)"},
		{HostTarget(elf.EM_AARCH64), "an AArch64 ELF shared object (built with -shared -fPIC)"},
		{sm90, "PTX for sm_90 or older, a cubin for sm_90 or a fatbin"},
		{gfx942, "an AMDGPU code object for gfx942"},
	} {
		if got := tc.t.Needs(); got != tc.need {
			t.Errorf("%s.Needs() = %q, want %q", tc.t, got, tc.need)
		}
	}
}

func otherMachine() elf.Machine {
	if HostMachine() == elf.EM_AARCH64 {
		return elf.EM_X86_64
	}
	return elf.EM_AARCH64
}

// TestBoundedWork checks that a huge text image is not read past the PTX
// scan limit: a .version far in is not seen.
func TestBoundedWork(t *testing.T) {
	b := append(bytes.Repeat([]byte("//\n"), ptxScan), ".version 7.8\n.target sm_80\n"...)
	if got := Classify(b); got.Kind != Unknown {
		t.Fatalf("Classify read past %d bytes: %v", ptxScan, got.Desc)
	}
	many := bundle()
	binary.LittleEndian.PutUint64(many[24:], 1<<62)
	if got := Classify(many); got.Kind != ClangOffloadBundle || !strings.Contains(got.Desc, "4611686018427387904 entries") {
		t.Fatalf("bundle with 2^62 entries: %q", got.Desc)
	}
}
