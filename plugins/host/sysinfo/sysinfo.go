// Package sysinfo describes the CPU and memory of the machine the process
// runs on, so that the host device can answer device-info queries with real
// numbers instead of constants.
//
// The package is split into two halves. [LoadSources] gathers the raw text
// of a handful of procfs/sysfs files, and [Parse] turns that text into an
// [Info] without touching the file system, which keeps the parsing logic
// testable with fixture data. [Read] simply chains the two for the live
// machine. Nothing is cached here: callers that query repeatedly should keep
// the returned Info themselves.
package sysinfo

import (
	"bufio"
	"encoding/binary"
	"math"
	"strconv"
	"strings"
)

// Info is a snapshot of the host CPU and memory properties.
type Info struct {
	// ModelName is the marketing name of the processor, for example
	// "Intel(R) Xeon(R) CPU @ 2.20GHz", or "Unknown CPU".
	ModelName string
	// Vendor is a human readable vendor name such as "Intel", "AMD" or
	// "ARM"; the raw identifier when it is not recognised; otherwise
	// "Unknown vendor".
	Vendor string
	// VendorID is the PCI vendor id of the CPU maker (Intel 0x8086,
	// AMD 0x1022) or 0 when there is none we know of.
	VendorID uint32
	// LogicalCPUs is the number of CPUs this process is allowed to run on.
	LogicalCPUs uint32
	// MaxClockMHz is the highest core clock in MHz, 0 when unknown.
	MaxClockMHz uint32
	// MemClockMHz is the configured memory speed reported by SMBIOS,
	// 0 when the firmware tables are absent or unreadable.
	MemClockMHz uint32
	// MemTotal is the usable memory in bytes: physical memory, lowered to
	// the cgroup limit when one is set and smaller.
	MemTotal uint64
	// VectorBytes is the width in bytes of the widest SIMD register the
	// CPU advertises (64, 32, 16), or 8 when no vector unit is known.
	VectorBytes uint32
	// HalfVectors reports hardware support for half-precision floats.
	HalfVectors bool
	// AddressBits is the pointer width of this process in bits.
	AddressBits uint32
	// CacheLine is the L1 data cache line size in bytes (64 if unknown).
	CacheLine uint32
	// L2Bytes is the size in bytes of one unified level-2 cache, 0 if
	// unknown.
	L2Bytes uint64
}

// Fallback values used when the machine does not tell us better.
const (
	UnknownModel  = "Unknown CPU"
	UnknownVendor = "Unknown vendor"

	defaultCacheLine   = 64
	defaultVectorBytes = 8
)

// PCI vendor ids of the CPU makers that also appear as PCI vendors.
const (
	pciVendorIntel = 0x8086
	pciVendorAMD   = 0x1022
)

// x86VendorNames maps the CPUID vendor string (the "vendor_id" line of
// /proc/cpuinfo on x86) to a readable company name.
var x86VendorNames = map[string]string{
	"GenuineIntel": "Intel",
	"AuthenticAMD": "AMD",
	"HygonGenuine": "Hygon",
	"CentaurHauls": "Centaur",
	"Shanghai":     "Zhaoxin",
	"CyrixInstead": "Cyrix",
	"GenuineTMx86": "Transmeta",
	"TransmetaCPU": "Transmeta",
	"NexGenDriven": "NexGen",
	"RiseRiseRise": "Rise",
	"SiS SiS SiS":  "SiS",
	"UMC UMC UMC":  "UMC",
	"VIA VIA VIA":  "VIA",
	"Geode by NSC": "National Semiconductor",
	"Vortex86 SoC": "DM&P",
}

// armImplementers maps the MIDR implementer code ("CPU implementer" in
// /proc/cpuinfo on arm and arm64) to the company name.
var armImplementers = map[uint64]string{
	0x41: "ARM",
	0x42: "Broadcom",
	0x43: "Cavium",
	0x44: "DEC",
	0x46: "Fujitsu",
	0x48: "HiSilicon",
	0x49: "Infineon",
	0x4d: "Motorola",
	0x4e: "NVIDIA",
	0x50: "Applied Micro",
	0x51: "Qualcomm",
	0x53: "Samsung",
	0x56: "Marvell",
	0x61: "Apple",
	0x66: "Faraday",
	0x69: "Intel",
	0x6d: "Microsoft",
	0x70: "Phytium",
	0xc0: "Ampere",
}

// Parse builds an Info from raw file contents. It never fails: anything
// missing or malformed falls back to the documented defaults.
func Parse(src Sources) Info {
	cpu := parseCPUInfo(src.CPUInfo)

	info := Info{
		ModelName:   cpu.modelName(),
		AddressBits: uint32(strconv.IntSize),
		CacheLine:   defaultCacheLine,
	}
	info.Vendor, info.VendorID = cpu.vendor()

	switch {
	case src.AffinityCPUs > 0:
		info.LogicalCPUs = src.AffinityCPUs
	case cpu.processors > 0:
		info.LogicalCPUs = cpu.processors
	default:
		info.LogicalCPUs = 1
	}

	if khz, ok := parseUint(src.CPUFreqMaxKHz); ok && khz > 0 {
		info.MaxClockMHz = clampU32((khz + 500) / 1000)
	} else if cpu.maxMHz > 0 {
		info.MaxClockMHz = clampU32(uint64(math.Round(cpu.maxMHz)))
	}

	info.MemClockMHz = memorySpeed(src.DMIMemoryDevices)
	info.MemTotal = memTotal(src.MemInfo, src.CgroupMemMax)
	info.VectorBytes, info.HalfVectors = cpu.vectorCaps()

	if n, ok := parseUint(src.CacheLineSize); ok && n > 0 {
		info.CacheLine = clampU32(n)
	}
	for _, c := range src.Caches {
		if strings.TrimSpace(c.Level) != "2" || !strings.EqualFold(strings.TrimSpace(c.Type), "Unified") {
			continue
		}
		if n, ok := parseSize(c.Size); ok {
			info.L2Bytes = n
			break
		}
	}
	return info
}

// NativeVectorWidth reports how many elements of elemBytes bytes fit in the
// widest native vector register (the OpenCL-style "native vector width").
// Set half for half-precision floats; the answer is then 0 unless the CPU
// handles half precision in hardware. A zero element size yields 0, and an
// element wider than the register still counts as one lane.
func (i Info) NativeVectorWidth(elemBytes uint32, half bool) uint32 {
	if elemBytes == 0 || i.VectorBytes == 0 {
		return 0
	}
	if half && !i.HalfVectors {
		return 0
	}
	return max(i.VectorBytes/elemBytes, 1)
}

// cpuFacts holds what parseCPUInfo extracted from /proc/cpuinfo. Only the
// first value of per-processor keys is kept; on every supported platform
// the entries describe the same kind of core (hybrid designs aside).
type cpuFacts struct {
	fields     map[string]string // first value seen for each key
	processors uint32            // number of "processor" entries
	maxMHz     float64           // largest "cpu MHz" value
}

func parseCPUInfo(text string) cpuFacts {
	facts := cpuFacts{fields: make(map[string]string)}
	sc := bufio.NewScanner(strings.NewReader(text))
	// Flag lines of modern x86 parts are long; allow generous lines.
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key = strings.TrimSpace(key)
		value = strings.TrimSpace(value)
		switch key {
		case "processor":
			facts.processors++
		case "cpu MHz":
			if mhz, err := strconv.ParseFloat(value, 64); err == nil && mhz > facts.maxMHz {
				facts.maxMHz = mhz
			}
		}
		if _, seen := facts.fields[key]; !seen {
			facts.fields[key] = value
		}
	}
	return facts
}

func (c cpuFacts) modelName() string {
	for _, key := range []string{"model name", "Processor", "cpu model"} {
		if v := c.fields[key]; v != "" {
			return v
		}
	}
	return UnknownModel
}

func (c cpuFacts) vendor() (string, uint32) {
	if raw := c.fields["vendor_id"]; raw != "" {
		name, known := x86VendorNames[raw]
		if !known {
			name = raw
		}
		switch name {
		case "Intel":
			return name, pciVendorIntel
		case "AMD":
			return name, pciVendorAMD
		}
		return name, 0
	}
	if raw := c.fields["CPU implementer"]; raw != "" {
		if code, err := strconv.ParseUint(raw, 0, 32); err == nil {
			if name, ok := armImplementers[code]; ok {
				return name, 0
			}
		}
		return raw, 0
	}
	return UnknownVendor, 0
}

// vectorCaps derives the SIMD register width and half-precision support
// from the x86 "flags" line or the arm "Features" line.
func (c cpuFacts) vectorCaps() (uint32, bool) {
	set := make(map[string]bool)
	for _, key := range []string{"flags", "Features"} {
		for _, f := range strings.Fields(c.fields[key]) {
			set[f] = true
		}
	}
	width := uint32(defaultVectorBytes)
	switch {
	case set["avx512f"]:
		width = 64
	case set["avx2"], set["avx"]:
		width = 32
	case set["sse2"], set["asimd"], set["neon"]:
		width = 16
	}
	half := set["f16c"] || set["avx512fp16"] || set["fphp"] || set["asimdhp"]
	return width, half
}

// memTotal returns MemTotal from /proc/meminfo in bytes, reduced to the
// cgroup limit when that is a number below it.
func memTotal(meminfo, cgroupMax string) uint64 {
	var total uint64
	sc := bufio.NewScanner(strings.NewReader(meminfo))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(key) != "MemTotal" {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) == 0 {
			break
		}
		n, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			break
		}
		unit := uint64(1)
		if len(fields) > 1 && strings.EqualFold(fields[1], "kB") {
			unit = 1024
		}
		if n > math.MaxUint64/unit {
			total = math.MaxUint64
		} else {
			total = n * unit
		}
		break
	}
	if limit, ok := parseUint(cgroupMax); ok && limit > 0 && (total == 0 || limit < total) {
		// With no meminfo the cgroup limit is the best figure we have.
		total = limit
	}
	return total
}

// SMBIOS type 17 ("Memory Device") field offsets, per DMTF DSP0134.
const (
	smbiosMemoryDevice      = 17
	smbiosOffSize           = 0x0C // WORD, 0 means the slot is empty
	smbiosOffSpeed          = 0x15 // WORD, max speed in MT/s (2.3+)
	smbiosOffConfSpeed      = 0x20 // WORD, configured speed (2.7+)
	smbiosOffExtSpeed       = 0x54 // DWORD, used when Speed is 0xFFFF (3.3+)
	smbiosOffExtConfSpeed   = 0x58 // DWORD, used when configured is 0xFFFF
	smbiosSpeedUseExtension = 0xFFFF
)

// memorySpeed scans raw SMBIOS memory-device structures and returns the
// highest configured speed of any populated slot, falling back to the rated
// speed when the configured one is not reported. The figure is what the
// firmware states (MT/s on current SMBIOS versions), as dmidecode prints it.
func memorySpeed(devices [][]byte) uint32 {
	var best uint32
	for _, raw := range devices {
		if len(raw) < 4 || raw[0] != smbiosMemoryDevice {
			continue
		}
		n := int(raw[1]) // formatted length, excludes the string table
		if n > len(raw) {
			n = len(raw)
		}
		s := raw[:n]
		if size, ok := word(s, smbiosOffSize); !ok || size == 0 {
			continue
		}
		speed := speedField(s, smbiosOffConfSpeed, smbiosOffExtConfSpeed)
		if speed == 0 {
			speed = speedField(s, smbiosOffSpeed, smbiosOffExtSpeed)
		}
		best = max(best, speed)
	}
	return best
}

func speedField(s []byte, off, extOff int) uint32 {
	v, ok := word(s, off)
	if !ok {
		return 0
	}
	if v != smbiosSpeedUseExtension {
		return uint32(v)
	}
	if extOff+4 > len(s) {
		return 0
	}
	return binary.LittleEndian.Uint32(s[extOff:]) & 0x7FFFFFFF // bit 31 reserved
}

func word(s []byte, off int) (uint16, bool) {
	if off+2 > len(s) {
		return 0, false
	}
	return binary.LittleEndian.Uint16(s[off:]), true
}

// parseUint reads a decimal number surrounded by optional white space.
func parseUint(s string) (uint64, bool) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	return n, err == nil
}

// parseSize understands the sysfs cache size notation: "32K", "1024K",
// "8M", "1G", or a bare byte count.
func parseSize(s string) (uint64, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	mult := uint64(1)
	switch s[len(s)-1] {
	case 'K', 'k':
		mult = 1 << 10
	case 'M', 'm':
		mult = 1 << 20
	case 'G', 'g':
		mult = 1 << 30
	}
	if mult != 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > math.MaxUint64/mult {
		return 0, false
	}
	return n * mult, true
}

func clampU32(v uint64) uint32 {
	if v > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(v)
}
