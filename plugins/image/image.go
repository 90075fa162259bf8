// Package image classifies program images: the bytes given to
// olCreateProgram and olIsValidBinary. Classify looks at an image's header
// (and, for PTX, at its first directives) and says what it is: a host ELF
// shared object and its architecture, PTX text, a CUDA cubin, a CUDA fatbin,
// an AMDGPU code object and its gfx target, a clang offload bundle or an
// LLVM offload binary. A Target says which of those a device loads and
// what to tell the caller when it does not.
//
// Classification reads headers only: it never validates a whole image
// (the host plugin's own validator does that for host images), its work is
// bounded whatever the input, and it never panics.
package image

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Kind is what an image is.
type Kind uint8

// Image kinds.
const (
	// Unknown is anything not recognised, including a damaged ELF header.
	Unknown Kind = iota
	// HostELF is an ELF file for a CPU (any machine but EM_CUDA and EM_AMDGPU).
	HostELF
	// PTX is NVIDIA PTX assembly text.
	PTX
	// Cubin is a CUDA ELF (EM_CUDA) for one SM.
	Cubin
	// Fatbin is a CUDA fat binary container.
	Fatbin
	// AMDGPU is an AMDGPU ELF (EM_AMDGPU) code object.
	AMDGPU
	// ClangOffloadBundle is clang-offload-bundler output (plain or compressed).
	ClangOffloadBundle
	// LLVMOffloadBinary is an LLVM offload binary (clang-offload-packager).
	LLVMOffloadBinary
)

var kindNames = [...]string{"Unknown", "HostELF", "PTX", "Cubin", "Fatbin", "AMDGPU", "ClangOffloadBundle", "LLVMOffloadBinary"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Feature is the setting of an AMDGPU target feature (xnack, sramecc) in a
// code object.
type Feature uint8

// Feature settings, as code object v4 and later encode them.
const (
	FeatureUnsupported Feature = iota // the target has no such feature
	FeatureAny                        // the code runs with the feature on or off
	FeatureOff
	FeatureOn
)

// Info is what Classify found. Only the fields of the image's kind are set.
type Info struct {
	Kind Kind
	// Size is the image's length in bytes.
	Size int

	// ELF header fields (HostELF, Cubin, AMDGPU).
	Class   elf.Class
	Data    elf.Data
	Type    elf.Type
	Machine elf.Machine
	OSABI   elf.OSABI
	// ABIVersion is e_ident[EI_ABIVERSION]; Flags is e_flags.
	ABIVersion uint8
	Flags      uint32

	// SM is the NVIDIA architecture (PTX .target, cubin e_flags) as
	// major*10+minor: 80 for sm_80, 100 for sm_100; 0 if not given.
	// SMSuffix is "a" (architecture-specific) or "f" (family), or "".
	SM       int
	SMSuffix string
	// PTXVersion is the PTX ISA version from .version ("7.8").
	PTXVersion string

	// GFX is the AMDGPU processor ("gfx90a", "gfx9-generic"), Xnack and
	// SRAMECC its features (code object v3 and later).
	GFX            string
	Xnack, SRAMECC Feature

	// Entries are the target triples of a bundle's or offload binary's
	// entries (at most maxEntries, each at most maxString bytes).
	Entries []string

	// Desc describes the image without an article: "AMDGPU code object
	// for gfx90a", "PTX for sm_80 (PTX ISA 7.8)", "x86-64 ELF shared
	// object", "not a program image (starts with 3f 3f …)".
	Desc string
	// article goes before Desc in a sentence ("a", "an" or "").
	article string
}

// String returns Desc.
func (i Info) String() string { return i.Desc }

// Phrase is Desc with its article, to follow "the image is": "an AMDGPU
// code object for gfx90a", "PTX for sm_80 (PTX ISA 7.8)", "not a program
// image (…)".
func (i Info) Phrase() string {
	if i.article == "" {
		return i.Desc
	}
	return i.article + " " + i.Desc
}

// Arch is the SM as a name ("sm_90a"), or "" without one.
func (i Info) Arch() string {
	if i.SM == 0 {
		return ""
	}
	return smName(i.SM, i.SMSuffix)
}

// TargetID is an AMDGPU code object's target id in LLVM's syntax:
// "gfx90a", "gfx90a:sramecc+:xnack-" (features that are on or off only).
func (i Info) TargetID() string {
	id := i.GFX
	for _, f := range []struct {
		name string
		v    Feature
	}{{"sramecc", i.SRAMECC}, {"xnack", i.Xnack}} {
		switch f.v {
		case FeatureOn:
			id += ":" + f.name + "+"
		case FeatureOff:
			id += ":" + f.name + "-"
		}
	}
	return id
}

// Limits that bound the work of Classify.
const (
	// ptxScan is how much of a text image is searched for PTX directives.
	ptxScan = 64 << 10
	// maxEntries is how many bundle or offload binary entries are read.
	maxEntries = 8
	// maxString is the longest triple or string read from a container.
	maxString = 256
)

// Magic numbers.
var (
	bundleMagic           = []byte("__CLANG_OFFLOAD_BUNDLE__")
	compressedBundleMagic = []byte("CCOB")
	offloadBinaryMagic    = []byte{0x10, 0xff, 0x10, 0xad}
	fatbinMagic           = []byte{0x50, 0xed, 0x55, 0xba} // 0xba55ed50, little-endian
	elfMagic              = []byte(elf.ELFMAG)
)

// ELF values debug/elf does not name.
const (
	emCUDA   = elf.Machine(190)
	emAMDGPU = elf.Machine(224)

	osabiAMDGPUHSA    = elf.OSABI(64)
	osabiAMDGPUPAL    = elf.OSABI(65)
	osabiAMDGPUMesa3D = elf.OSABI(66)

	// CUDA e_flags. ABI version 7 (and earlier) keeps the SM in the low
	// byte and marks sm_XXa with 0x800; version 8 (sm_100 onwards) keeps
	// it in bits 8-15 and marks sm_XXa with 0x8.
	cudaABIV2            = 8
	efCUDASM             = 0xff
	efCUDAAcceleratorsV1 = 0x800
	efCUDASMMaskV2       = 0xff00
	efCUDAAcceleratorsV2 = 0x8
	efAMDGPUMach         = 0xff
	efAMDGPUXnackV3      = 0x100
	efAMDGPUSRAMECCV3    = 0x200
	efAMDGPUXnackV4      = 0x300
	efAMDGPUSRAMECCV4    = 0xc00
	amdgpuABIV3          = 1 // code object v3
	amdgpuABIV4          = 2 // code object v4; v5 is 3, v6 is 4
)

// Classify says what b is. It reads at most the first 64 KiB (PTX) or a few
// headers, and never panics.
func Classify(b []byte) Info {
	i := Info{Size: len(b)}
	switch {
	case len(b) == 0:
		i.Desc = "empty (0 bytes)"
	case bytes.HasPrefix(b, elfMagic):
		classifyELF(b, &i)
	case bytes.HasPrefix(b, fatbinMagic):
		classifyFatbin(b, &i)
	case bytes.HasPrefix(b, bundleMagic):
		classifyBundle(b, &i)
	case bytes.HasPrefix(b, compressedBundleMagic) && len(b) >= 8:
		i.Kind = ClangOffloadBundle
		i.article = "a"
		i.Desc = fmt.Sprintf("compressed clang offload bundle (format version %d)", binary.LittleEndian.Uint16(b[4:]))
	case bytes.HasPrefix(b, offloadBinaryMagic):
		classifyOffloadBinary(b, &i)
	default:
		if !classifyPTX(b, &i) {
			i.Desc = "not a program image (" + startsWith(b) + ")"
		}
	}
	return i
}

// startsWith shows the first bytes of b in hex.
func startsWith(b []byte) string {
	const show = 8
	var s strings.Builder
	s.WriteString("starts with")
	for k := 0; k < len(b) && k < show; k++ {
		fmt.Fprintf(&s, " %02x", b[k])
	}
	if len(b) > show {
		s.WriteString(" …")
	}
	return s.String()
}

// u16, u32 and u64 read little- or big-endian values inside b; ok is false
// past its end.
func u16(b []byte, off int, o binary.ByteOrder) (uint16, bool) {
	if off < 0 || off+2 > len(b) {
		return 0, false
	}
	return o.Uint16(b[off:]), true
}

func u32(b []byte, off int, o binary.ByteOrder) (uint32, bool) {
	if off < 0 || off+4 > len(b) {
		return 0, false
	}
	return o.Uint32(b[off:]), true
}

func u64(b []byte, off int, o binary.ByteOrder) (uint64, bool) {
	if off < 0 || off+8 > len(b) {
		return 0, false
	}
	return o.Uint64(b[off:]), true
}

// classifyELF reads the ELF identification and header.
func classifyELF(b []byte, i *Info) {
	if len(b) < elf.EI_NIDENT {
		i.Desc = fmt.Sprintf("truncated ELF image (%d bytes)", len(b))
		i.article = "a"
		return
	}
	i.Class, i.Data = elf.Class(b[elf.EI_CLASS]), elf.Data(b[elf.EI_DATA])
	i.OSABI, i.ABIVersion = elf.OSABI(b[elf.EI_OSABI]), b[elf.EI_ABIVERSION]
	var o binary.ByteOrder
	switch i.Data {
	case elf.ELFDATA2LSB:
		o = binary.LittleEndian
	case elf.ELFDATA2MSB:
		o = binary.BigEndian
	default:
		i.Desc = fmt.Sprintf("damaged ELF image (byte order %d)", b[elf.EI_DATA])
		i.article = "a"
		return
	}
	hdr, flagsOff := 0, 0
	switch i.Class {
	case elf.ELFCLASS32:
		hdr, flagsOff = 52, 36
	case elf.ELFCLASS64:
		hdr, flagsOff = 64, 48
	default:
		i.Desc = fmt.Sprintf("damaged ELF image (class %d)", b[elf.EI_CLASS])
		i.article = "a"
		return
	}
	if len(b) < hdr {
		i.Desc = fmt.Sprintf("truncated ELF image (%d bytes, less than its %d-byte header)", len(b), hdr)
		i.article = "a"
		return
	}
	t, _ := u16(b, 16, o)
	m, _ := u16(b, 18, o)
	i.Flags, _ = u32(b, flagsOff, o)
	i.Type, i.Machine = elf.Type(t), elf.Machine(m)
	switch i.Machine {
	case emCUDA:
		classifyCubin(i)
	case emAMDGPU:
		classifyAMDGPU(i)
	default:
		i.Kind = HostELF
		i.Desc, i.article = hostELFDesc(i)
	}
}

// machineNames are the names used for host machines.
var machineNames = map[elf.Machine]string{
	elf.EM_X86_64:    "x86-64",
	elf.EM_386:       "i386",
	elf.EM_AARCH64:   "AArch64",
	elf.EM_ARM:       "ARM",
	elf.EM_RISCV:     "RISC-V",
	elf.EM_PPC64:     "PowerPC64",
	elf.EM_PPC:       "PowerPC",
	elf.EM_S390:      "s390x",
	elf.EM_MIPS:      "MIPS",
	elf.EM_SPARCV9:   "SPARC V9",
	elf.EM_LOONGARCH: "LoongArch",
	elf.EM_BPF:       "BPF",
}

// MachineName names an ELF machine: "x86-64", "AArch64", or debug/elf's
// name ("EM_VAX") for others.
func MachineName(m elf.Machine) string {
	if n, ok := machineNames[m]; ok {
		return n
	}
	return m.String()
}

// takesAn reports whether a description starts with a sound that takes
// "an": a vowel, "x86", "i386", "s390x", "ELF", "EM_…".
func takesAn(s string) bool {
	return s != "" && (strings.ContainsRune("aeiouAEIOUx", rune(s[0])) || strings.HasPrefix(s, "s390"))
}

func hostELFDesc(i *Info) (desc, article string) {
	arch := MachineName(i.Machine)
	if i.Class == elf.ELFCLASS32 && (i.Machine == elf.EM_X86_64 || i.Machine == elf.EM_AARCH64 ||
		i.Machine == elf.EM_RISCV || i.Machine == elf.EM_PPC64 || i.Machine == elf.EM_SPARCV9) {
		arch = "32-bit " + arch
	} else if i.Class == elf.ELFCLASS64 && (i.Machine == elf.EM_386 || i.Machine == elf.EM_ARM || i.Machine == elf.EM_PPC) {
		arch = "64-bit " + arch
	}
	if i.Data == elf.ELFDATA2MSB && i.Machine != elf.EM_S390 && i.Machine != elf.EM_SPARCV9 {
		arch = "big-endian " + arch
	}
	switch i.Type {
	case elf.ET_DYN:
		desc = arch + " ELF shared object"
	case elf.ET_EXEC:
		desc = arch + " ELF executable"
	case elf.ET_REL:
		desc = "ELF relocatable object for " + arch
	case elf.ET_CORE:
		desc = arch + " ELF core dump"
	default:
		desc = fmt.Sprintf("%s ELF file of type %#x", arch, uint16(i.Type))
	}
	if takesAn(desc) {
		return desc, "an"
	}
	return desc, "a"
}

// smName renders an SM number: 80 → "sm_80", 90 with "a" → "sm_90a".
func smName(sm int, suffix string) string { return "sm_" + strconv.Itoa(sm) + suffix }

func classifyCubin(i *Info) {
	i.Kind = Cubin
	i.article = "a"
	if i.ABIVersion >= cudaABIV2 {
		i.SM = int(i.Flags&efCUDASMMaskV2) >> 8
		if i.Flags&efCUDAAcceleratorsV2 != 0 {
			i.SMSuffix = "a"
		}
	} else {
		i.SM = int(i.Flags & efCUDASM)
		if i.Flags&efCUDAAcceleratorsV1 != 0 {
			i.SMSuffix = "a"
		}
	}
	what := "CUDA cubin"
	if i.Type == elf.ET_REL {
		what = "relocatable CUDA cubin"
	}
	if i.SM == 0 {
		i.Desc = what + " for an unknown SM (e_flags " + fmt.Sprintf("%#x", i.Flags) + ")"
		return
	}
	i.Desc = what + " for " + i.Arch()
}

// amdgpuMachs names the EF_AMDGPU_MACH values (as clang-22 writes them).
var amdgpuMachs = map[uint32]string{
	0x01: "r600", 0x02: "r630", 0x03: "rs880", 0x04: "rv670", 0x05: "rv710", 0x06: "rv730",
	0x07: "rv770", 0x08: "cedar", 0x09: "cypress", 0x0a: "juniper", 0x0b: "redwood",
	0x0c: "sumo", 0x0d: "barts", 0x0e: "caicos", 0x0f: "cayman", 0x10: "turks",
	0x20: "gfx600", 0x21: "gfx601", 0x22: "gfx700", 0x23: "gfx701", 0x24: "gfx702",
	0x25: "gfx703", 0x26: "gfx704", 0x28: "gfx801", 0x29: "gfx802", 0x2a: "gfx803",
	0x2b: "gfx810", 0x2c: "gfx900", 0x2d: "gfx902", 0x2e: "gfx904", 0x2f: "gfx906",
	0x30: "gfx908", 0x31: "gfx909", 0x32: "gfx90c", 0x33: "gfx1010", 0x34: "gfx1011",
	0x35: "gfx1012", 0x36: "gfx1030", 0x37: "gfx1031", 0x38: "gfx1032", 0x39: "gfx1033",
	0x3a: "gfx602", 0x3b: "gfx705", 0x3c: "gfx805", 0x3d: "gfx1035", 0x3e: "gfx1034",
	0x3f: "gfx90a", 0x40: "gfx940", 0x41: "gfx1100", 0x42: "gfx1013", 0x43: "gfx1150",
	0x44: "gfx1103", 0x45: "gfx1036", 0x46: "gfx1101", 0x47: "gfx1102", 0x48: "gfx1200",
	0x49: "gfx1250", 0x4a: "gfx1151", 0x4b: "gfx941", 0x4c: "gfx942", 0x4e: "gfx1201",
	0x4f: "gfx950", 0x51: "gfx9-generic", 0x52: "gfx10-1-generic", 0x53: "gfx10-3-generic",
	0x54: "gfx11-generic", 0x55: "gfx1152", 0x58: "gfx1153", 0x59: "gfx12-generic",
	0x5a: "gfx1251", 0x5f: "gfx9-4-generic",
}

// genericMembers lists the processors a generic target's code runs on.
var genericMembers = map[string][]string{
	"gfx9-generic":    {"gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"},
	"gfx9-4-generic":  {"gfx940", "gfx941", "gfx942", "gfx950"},
	"gfx10-1-generic": {"gfx1010", "gfx1011", "gfx1012", "gfx1013"},
	"gfx10-3-generic": {"gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"},
	"gfx11-generic":   {"gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"},
	"gfx12-generic":   {"gfx1200", "gfx1201"},
}

func classifyAMDGPU(i *Info) {
	i.Kind = AMDGPU
	i.article = "an"
	mach := i.Flags & efAMDGPUMach
	if n, ok := amdgpuMachs[mach]; ok {
		i.GFX = n
	} else {
		i.GFX = fmt.Sprintf("an unknown processor (EF_AMDGPU_MACH %#x)", mach)
	}
	if i.OSABI == osabiAMDGPUHSA {
		switch {
		case i.ABIVersion >= amdgpuABIV4:
			i.Xnack = Feature((i.Flags & efAMDGPUXnackV4) >> 8)
			i.SRAMECC = Feature((i.Flags & efAMDGPUSRAMECCV4) >> 10)
		case i.ABIVersion == amdgpuABIV3:
			i.Xnack, i.SRAMECC = FeatureOff, FeatureOff
			if i.Flags&efAMDGPUXnackV3 != 0 {
				i.Xnack = FeatureOn
			}
			if i.Flags&efAMDGPUSRAMECCV3 != 0 {
				i.SRAMECC = FeatureOn
			}
		}
	}
	what := "AMDGPU code object"
	switch i.Type {
	case elf.ET_DYN:
	case elf.ET_REL:
		what = "AMDGPU relocatable object"
	default:
		what = fmt.Sprintf("AMDGPU ELF file of type %#x", uint16(i.Type))
	}
	i.Desc = what + " for " + i.TargetID()
	switch i.OSABI {
	case osabiAMDGPUHSA:
	case osabiAMDGPUPAL:
		i.Desc += " (PAL ABI)"
	case osabiAMDGPUMesa3D:
		i.Desc += " (Mesa 3D ABI)"
	default:
		i.Desc += fmt.Sprintf(" (OS ABI %d)", uint8(i.OSABI))
	}
}

func classifyFatbin(b []byte, i *Info) {
	i.Kind = Fatbin
	i.article = "a"
	ver, ok1 := u16(b, 4, binary.LittleEndian)
	hsize, ok2 := u16(b, 6, binary.LittleEndian)
	size, ok3 := u64(b, 8, binary.LittleEndian)
	if !ok1 || !ok2 || !ok3 {
		i.Desc = fmt.Sprintf("truncated CUDA fatbin (%d bytes)", len(b))
		return
	}
	i.Desc = fmt.Sprintf("CUDA fatbin (version %d, %d-byte header, %d bytes of entries)", ver, hsize, size)
}

// cString reads a NUL-terminated string at off, at most maxString bytes.
func cString(b []byte, off uint64) (string, bool) {
	if off >= uint64(len(b)) {
		return "", false
	}
	s := b[off:]
	if len(s) > maxString {
		s = s[:maxString]
	}
	n := bytes.IndexByte(s, 0)
	if n < 0 {
		return "", false
	}
	return printable(string(s[:n])), true
}

// printable replaces bytes that are not printable ASCII with '?'.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
}

// classifyBundle reads a clang offload bundle's entry table: the number of
// entries (u64), then for each its offset, size and triple length (u64
// each) and the triple.
func classifyBundle(b []byte, i *Info) {
	i.Kind = ClangOffloadBundle
	i.article = "a"
	off := len(bundleMagic)
	n, ok := u64(b, off, binary.LittleEndian)
	if !ok {
		i.Desc = fmt.Sprintf("truncated clang offload bundle (%d bytes)", len(b))
		return
	}
	off += 8
	for k := uint64(0); k < n && k < maxEntries; k++ {
		tlen, ok := u64(b, off+16, binary.LittleEndian)
		if !ok || tlen > maxString || uint64(off+24)+tlen > uint64(len(b)) {
			break
		}
		i.Entries = append(i.Entries, printable(string(b[off+24:off+24+int(tlen)])))
		off += 24 + int(tlen)
	}
	i.Desc = fmt.Sprintf("clang offload bundle (%s)", entryList(n, i.Entries))
}

// entryList renders "2 entries: a, b" with a "…" for entries not read.
func entryList(n uint64, entries []string) string {
	s := fmt.Sprintf("%d entries", n)
	if n == 1 {
		s = "1 entry"
	}
	if len(entries) > 0 {
		s += ": " + strings.Join(entries, ", ")
		if uint64(len(entries)) < n {
			s += ", …"
		}
	}
	return s
}

// offloadKinds and imageKinds name an LLVM offload binary entry's fields.
var (
	offloadKinds = []string{"", "OpenMP", "CUDA", "HIP", "SYCL"}
	imageKinds   = []string{"", "object", "bitcode", "cubin", "fatbin", "PTX", "SPIR-V"}
)

// classifyOffloadBinary reads an LLVM offload binary: a header (magic,
// version u32, size u64, entry offset u64, entry size u64) and, at the
// entry offset, the first entry (image kind u16, offload kind u16, flags
// u32, string table offset u64, string count u64, image offset u64, image
// size u64); the string table holds key and value offsets (u64 each) of
// NUL-terminated strings ("triple", "arch").
func classifyOffloadBinary(b []byte, i *Info) {
	i.Kind = LLVMOffloadBinary
	i.article = "an"
	le := binary.LittleEndian
	ver, ok1 := u32(b, 4, le)
	entOff, ok2 := u64(b, 16, le)
	if !ok1 || !ok2 || entOff > uint64(len(b)) {
		i.Desc = fmt.Sprintf("truncated LLVM offload binary (%d bytes)", len(b))
		i.article = "a"
		return
	}
	e := int(entOff)
	ik, ok1 := u16(b, e, le)
	ok, ok2 := u16(b, e+2, le)
	strOff, ok3 := u64(b, e+8, le)
	nStr, ok4 := u64(b, e+16, le)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		i.Desc = fmt.Sprintf("LLVM offload binary (version %d, entry past the end)", ver)
		return
	}
	var triple, arch string
	for k := uint64(0); k < nStr && k < maxEntries && strOff <= uint64(len(b)); k++ {
		p := int(strOff) + int(k)*16
		ko, okk := u64(b, p, le)
		vo, okv := u64(b, p+8, le)
		if !okk || !okv {
			break
		}
		key, _ := cString(b, ko)
		val, _ := cString(b, vo)
		switch key {
		case "triple":
			triple = val
		case "arch":
			arch = val
		}
	}
	var parts []string
	if int(ok) < len(offloadKinds) && offloadKinds[ok] != "" {
		parts = append(parts, offloadKinds[ok])
	}
	if int(ik) < len(imageKinds) && imageKinds[ik] != "" {
		parts = append(parts, imageKinds[ik])
	}
	if triple != "" || arch != "" {
		t := strings.TrimSpace(triple + " " + arch)
		i.Entries = []string{t}
		parts = append(parts, "for "+t)
	}
	i.Desc = "LLVM offload binary"
	if len(parts) > 0 {
		i.Desc += " (" + strings.Join(parts, " ") + ")"
	}
}

// classifyPTX recognises PTX text: after blank lines and comments, the
// first directive is .version; .target follows among the next directives.
// Only the first ptxScan bytes are read. A NUL ends the text (PTX given to
// the CUDA driver is NUL-terminated).
func classifyPTX(b []byte, i *Info) bool {
	if len(b) > ptxScan {
		b = b[:ptxScan]
	}
	if n := bytes.IndexByte(b, 0); n >= 0 {
		b = b[:n]
	}
	inComment := false
	seenVersion := false
	for len(b) > 0 {
		var line []byte
		if n := bytes.IndexByte(b, '\n'); n >= 0 {
			line, b = b[:n], b[n+1:]
		} else {
			line, b = b, nil
		}
		s := strings.TrimSpace(string(line))
		if inComment {
			end := strings.Index(s, "*/")
			if end < 0 {
				continue
			}
			inComment = false
			s = strings.TrimSpace(s[end+2:])
		}
		if strings.HasPrefix(s, "/*") {
			if end := strings.Index(s[2:], "*/"); end >= 0 {
				s = strings.TrimSpace(s[2+end+2:])
			} else {
				inComment = true
				continue
			}
		}
		if s == "" || strings.HasPrefix(s, "//") {
			continue
		}
		if c := strings.Index(s, "//"); c >= 0 {
			s = strings.TrimSpace(s[:c])
		}
		f := strings.Fields(s)
		if !seenVersion {
			if len(f) != 2 || f[0] != ".version" || !isVersion(f[1]) {
				return false
			}
			seenVersion = true
			i.PTXVersion = f[1]
			continue
		}
		if !strings.HasPrefix(s, ".") {
			break // code before any .target
		}
		if f[0] == ".target" {
			if len(f) > 1 {
				sm := strings.TrimSuffix(f[1], ",")
				i.SM, i.SMSuffix = parseSM(sm)
			}
			break
		}
	}
	if !seenVersion {
		return false
	}
	i.Kind = PTX
	if i.SM == 0 {
		i.Desc = "PTX without a .target (PTX ISA " + i.PTXVersion + ")"
		return true
	}
	i.Desc = "PTX for " + i.Arch() + " (PTX ISA " + i.PTXVersion + ")"
	return true
}

// isVersion reports whether s is MAJOR.MINOR in decimal.
func isVersion(s string) bool {
	maj, min, ok := strings.Cut(s, ".")
	return ok && isDigits(maj) && isDigits(min) && len(maj) <= 3 && len(min) <= 3
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseSM parses "sm_80", "sm_90a", "sm_100f"; 0 if s is none of those.
func parseSM(s string) (int, string) {
	rest, ok := strings.CutPrefix(s, "sm_")
	if !ok {
		return 0, ""
	}
	suffix := ""
	if strings.HasSuffix(rest, "a") || strings.HasSuffix(rest, "f") {
		suffix, rest = rest[len(rest)-1:], rest[:len(rest)-1]
	}
	if !isDigits(rest) || len(rest) > 4 {
		return 0, ""
	}
	n, _ := strconv.Atoi(rest)
	return n, suffix
}
