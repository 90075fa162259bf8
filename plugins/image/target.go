package image

import (
	"debug/elf"
	"runtime"
	"slices"
	"strings"
)

// Target is what a device loads. Devices declare one; Accepts tells whether
// an image (as Classify found it) can be for the device at all.
type Target struct {
	kind targetKind
	// machine is a host device's ELF machine.
	machine elf.Machine
	// sm is a CUDA device's compute capability as major*10+minor.
	sm int
	// gfx is an AMDGPU device's processor ("gfx90a").
	gfx string
}

type targetKind uint8

const (
	targetNone targetKind = iota
	targetHost
	targetCUDA
	targetAMDGPU
)

// HostMachine is the ELF machine this process runs on (EM_NONE where the
// library does not know it).
func HostMachine() elf.Machine {
	switch runtime.GOARCH {
	case "amd64":
		return elf.EM_X86_64
	case "arm64":
		return elf.EM_AARCH64
	case "riscv64":
		return elf.EM_RISCV
	case "ppc64le":
		return elf.EM_PPC64
	}
	return elf.EM_NONE
}

// HostTarget is a CPU device that loads 64-bit little-endian ELF shared
// objects for machine.
func HostTarget(machine elf.Machine) Target { return Target{kind: targetHost, machine: machine} }

// CUDATarget is an NVIDIA GPU of compute capability major.minor.
func CUDATarget(major, minor int) Target {
	return Target{kind: targetCUDA, sm: major*10 + minor}
}

// AMDGPUTarget is an AMD GPU whose ISA name is name ("gfx90a"; features
// after a colon, as in "gfx90a:xnack-", are ignored).
func AMDGPUTarget(name string) Target {
	name, _, _ = strings.Cut(name, ":")
	return Target{kind: targetAMDGPU, gfx: name}
}

// String names the target: "x86-64", "sm_90", "gfx90a".
func (t Target) String() string {
	switch t.kind {
	case targetHost:
		return MachineName(t.machine)
	case targetCUDA:
		return smName(t.sm, "")
	case targetAMDGPU:
		return t.gfx
	}
	return "no target"
}

// Needs says what the target loads, to follow "needs": "an x86-64 ELF
// shared object", "PTX, a cubin for sm_90 or a fatbin", "an AMDGPU code
// object for gfx90a".
func (t Target) Needs() string {
	switch t.kind {
	case targetHost:
		d, a := hostELFDesc(&Info{Class: elf.ELFCLASS64, Data: elf.ELFDATA2LSB, Type: elf.ET_DYN, Machine: t.machine})
		return a + " " + d + " (built with -shared -fPIC)"
	case targetCUDA:
		return "PTX for " + t.String() + " or older, a cubin for " + t.String() + " or a fatbin"
	case targetAMDGPU:
		return "an AMDGPU code object for " + t.gfx
	}
	return "nothing"
}

// Accepts reports whether a device of target t can load an image of info's
// kind and architecture. Acceptance is no promise that the image loads: the
// device still validates it in full. A host target also accepts images it
// cannot recognise (Unknown), so that its own ELF validator, which reads
// everything, gives the detailed reason ("not an ELF image", a truncated
// header). Each rule:
//
//   - host: an ELF for its machine, 64-bit little-endian, any type (a
//     relocatable object or executable is refused by the validator with a
//     hint), or Unknown;
//   - CUDA sm_XY: PTX whose .target is at most sm_XY (sm_XYa: exactly
//     sm_XY; sm_XYf: the same major version, at most XY), a cubin of the
//     same major version and at most XY (sm_XYa: exactly), any fatbin;
//   - AMDGPU gfxN: an HSA code object (shared object) for gfxN or a generic
//     target that covers gfxN, whatever its xnack and sramecc settings (the
//     device's are not known).
func (t Target) Accepts(info Info) bool {
	switch t.kind {
	case targetHost:
		switch info.Kind {
		case Unknown:
			return true
		case HostELF:
			return info.Machine == t.machine && info.Class == elf.ELFCLASS64 && info.Data == elf.ELFDATA2LSB
		}
	case targetCUDA:
		switch info.Kind {
		case PTX:
			switch info.SMSuffix {
			case "a":
				return info.SM == t.sm
			case "f":
				return info.SM/10 == t.sm/10 && info.SM <= t.sm
			}
			return info.SM <= t.sm
		case Cubin:
			if info.SM == 0 || info.Class != elf.ELFCLASS64 {
				return false
			}
			if info.SMSuffix == "a" {
				return info.SM == t.sm
			}
			return info.SM/10 == t.sm/10 && info.SM <= t.sm
		case Fatbin:
			return true
		}
	case targetAMDGPU:
		if info.Kind != AMDGPU || info.Type != elf.ET_DYN || info.OSABI != osabiAMDGPUHSA {
			return false
		}
		return info.GFX == t.gfx || slices.Contains(genericMembers[info.GFX], t.gfx)
	}
	return false
}

// SM returns a CUDA target's compute capability as major*10+minor (0 for
// other targets).
func (t Target) SM() int { return t.sm }
