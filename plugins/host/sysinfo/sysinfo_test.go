package sysinfo

import (
	"encoding/binary"
	"runtime"
	"strconv"
	"testing"
	"testing/fstest"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Two-processor Intel server with AVX-512 (flags line abridged).
const intelCPUInfo = `processor	: 0
vendor_id	: GenuineIntel
cpu family	: 6
model		: 85
model name	: Intel(R) Xeon(R) CPU @ 2.20GHz  
stepping	: 7
cpu MHz		: 2199.998
cache size	: 39424 KB
flags		: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr sse sse2 ssse3 fma cx16 sse4_1 sse4_2 avx f16c avx2 avx512f avx512dq avx512cd avx512bw avx512vl
clflush size	: 64
cache_alignment	: 64

processor	: 1
vendor_id	: GenuineIntel
cpu family	: 6
model		: 85
model name	: Intel(R) Xeon(R) CPU @ 2.20GHz
cpu MHz		: 2200.412
flags		: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr sse sse2 ssse3 fma cx16 sse4_1 sse4_2 avx f16c avx2 avx512f avx512dq avx512cd avx512bw avx512vl
`

// Four-processor AMD desktop part with AVX2 but no AVX-512 and no F16C.
const amdCPUInfo = `processor	: 0
vendor_id	: AuthenticAMD
model name	: AMD Ryzen 7 3700X 8-Core Processor
cpu MHz		: 2200.000
flags		: fpu vme de pse sse sse2 ssse3 fma sse4_1 sse4_2 avx avx2 bmi1 bmi2

processor	: 1
vendor_id	: AuthenticAMD
model name	: AMD Ryzen 7 3700X 8-Core Processor
cpu MHz		: 4391.672
flags		: fpu vme de pse sse sse2 ssse3 fma sse4_1 sse4_2 avx avx2 bmi1 bmi2

processor	: 2
vendor_id	: AuthenticAMD
model name	: AMD Ryzen 7 3700X 8-Core Processor
cpu MHz		: 2200.000
flags		: fpu vme de pse sse sse2 ssse3 fma sse4_1 sse4_2 avx avx2 bmi1 bmi2

processor	: 3
vendor_id	: AuthenticAMD
model name	: AMD Ryzen 7 3700X 8-Core Processor
cpu MHz		: 3593.100
flags		: fpu vme de pse sse sse2 ssse3 fma sse4_1 sse4_2 avx avx2 bmi1 bmi2
`

// Modern arm64 kernel output: no model name, no clock, implementer code.
const arm64CPUInfo = `processor	: 0
BogoMIPS	: 50.00
Features	: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs
CPU implementer	: 0x41
CPU architecture: 8
CPU variant	: 0x3
CPU part	: 0xd0c
CPU revision	: 1

processor	: 1
BogoMIPS	: 50.00
Features	: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs
CPU implementer	: 0x41
CPU architecture: 8
CPU variant	: 0x3
CPU part	: 0xd0c
CPU revision	: 1
`

const memInfo16G = `MemTotal:       16384000 kB
MemFree:         1234567 kB
MemAvailable:    8000000 kB
`

func TestParse(t *testing.T) {
	ptr := uint32(strconv.IntSize)
	tests := []struct {
		name string
		src  Sources
		want Info
	}{
		{
			name: "intel avx512",
			src: Sources{
				CPUInfo:       intelCPUInfo,
				MemInfo:       memInfo16G,
				CgroupMemMax:  "max",
				CPUFreqMaxKHz: "3900000\n",
				CacheLineSize: "64",
				Caches: []CacheSource{
					{Level: "1", Type: "Data", Size: "32K"},
					{Level: "1", Type: "Instruction", Size: "32K"},
					{Level: "2", Type: "Unified", Size: "1024K"},
					{Level: "3", Type: "Unified", Size: "39424K"},
				},
				AffinityCPUs: 2,
			},
			want: Info{
				ModelName:   "Intel(R) Xeon(R) CPU @ 2.20GHz",
				Vendor:      "Intel",
				VendorID:    0x8086,
				LogicalCPUs: 2,
				MaxClockMHz: 3900,
				MemTotal:    16384000 * 1024,
				VectorBytes: 64,
				HalfVectors: true,
				AddressBits: ptr,
				CacheLine:   64,
				L2Bytes:     1 << 20,
			},
		},
		{
			name: "amd avx2 with cgroup limit and no cpufreq",
			src: Sources{
				CPUInfo:      amdCPUInfo,
				MemInfo:      memInfo16G,
				CgroupMemMax: "4294967296\n",
				Caches: []CacheSource{
					{Level: "2", Type: "Unified", Size: "512K"},
				},
			},
			want: Info{
				ModelName:   "AMD Ryzen 7 3700X 8-Core Processor",
				Vendor:      "AMD",
				VendorID:    0x1022,
				LogicalCPUs: 4, // counted from cpuinfo: no affinity given
				MaxClockMHz: 4392,
				MemTotal:    4 << 30,
				VectorBytes: 32,
				HalfVectors: false,
				AddressBits: ptr,
				CacheLine:   64,
				L2Bytes:     512 << 10,
			},
		},
		{
			name: "arm64 neoverse",
			src: Sources{
				CPUInfo:       arm64CPUInfo,
				MemInfo:       "MemTotal:        8000000 kB\n",
				CgroupMemMax:  "99999999999999", // larger than RAM: ignored
				CacheLineSize: "128",
				Caches: []CacheSource{
					{Level: "1", Type: "Data", Size: "64K"},
					{Level: "2", Type: "Unified", Size: "1M"},
				},
				AffinityCPUs: 1,
			},
			want: Info{
				ModelName:   "Unknown CPU",
				Vendor:      "ARM",
				VendorID:    0,
				LogicalCPUs: 1,
				MaxClockMHz: 0,
				MemTotal:    8000000 * 1024,
				VectorBytes: 16,
				HalfVectors: true,
				AddressBits: ptr,
				CacheLine:   128,
				L2Bytes:     1 << 20,
			},
		},
		{
			name: "old arm kernel Processor line and unknown implementer",
			src: Sources{
				CPUInfo: "Processor\t: AArch64 Processor rev 4 (aarch64)\nprocessor\t: 0\nFeatures\t: fp asimd\nCPU implementer\t: 0x99\n",
			},
			want: Info{
				ModelName:   "AArch64 Processor rev 4 (aarch64)",
				Vendor:      "0x99",
				LogicalCPUs: 1,
				VectorBytes: 16,
				AddressBits: ptr,
				CacheLine:   64,
			},
		},
		{
			name: "mips cpu model and unrecognised vendor id",
			src: Sources{
				CPUInfo: "system type\t: foo\nprocessor\t: 0\ncpu model\t: MIPS 24Kc V7.4\nvendor_id\t: SomeVendorXY\nflags\t: fpu\n",
			},
			want: Info{
				ModelName:   "MIPS 24Kc V7.4",
				Vendor:      "SomeVendorXY",
				LogicalCPUs: 1,
				VectorBytes: 8,
				AddressBits: ptr,
				CacheLine:   64,
			},
		},
		{
			name: "missing files",
			src:  Sources{},
			want: Info{
				ModelName:   "Unknown CPU",
				Vendor:      "Unknown vendor",
				LogicalCPUs: 1,
				VectorBytes: 8,
				AddressBits: ptr,
				CacheLine:   64,
			},
		},
		{
			name: "garbage values fall back",
			src: Sources{
				CPUInfo:       "model name:\nvendor_id :\ncpu MHz : fast\n",
				MemInfo:       "MemTotal: lots kB\n",
				CgroupMemMax:  "max",
				CPUFreqMaxKHz: "n/a",
				CacheLineSize: "0",
				Caches:        []CacheSource{{Level: "2", Type: "Unified", Size: "big"}},
				AffinityCPUs:  3,
			},
			want: Info{
				ModelName:   "Unknown CPU",
				Vendor:      "Unknown vendor",
				LogicalCPUs: 3,
				VectorBytes: 8,
				AddressBits: ptr,
				CacheLine:   64,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Parse(tt.src); got != tt.want {
				t.Errorf("Parse() =\n  %+v\nwant\n  %+v", got, tt.want)
			}
		})
	}
}

// smbiosMemDevice builds a raw SMBIOS 3.3 type 17 structure (plus the empty
// string table terminator) with the given fields.
func smbiosMemDevice(sizeMB, speed, confSpeed uint16, extConf uint32) []byte {
	const length = 0x5C
	b := make([]byte, length+2)
	b[0], b[1] = 17, length
	binary.LittleEndian.PutUint16(b[0x0C:], sizeMB)
	binary.LittleEndian.PutUint16(b[0x15:], speed)
	binary.LittleEndian.PutUint16(b[0x20:], confSpeed)
	binary.LittleEndian.PutUint32(b[0x58:], extConf)
	return b
}

func TestMemorySpeed(t *testing.T) {
	tests := []struct {
		name    string
		devices [][]byte
		want    uint32
	}{
		{"none", nil, 0},
		{"configured speed", [][]byte{smbiosMemDevice(16384, 3200, 2933, 0)}, 2933},
		{"rated speed when configured unknown", [][]byte{smbiosMemDevice(8192, 2666, 0, 0)}, 2666},
		{"empty slot ignored", [][]byte{smbiosMemDevice(0, 4800, 4800, 0), smbiosMemDevice(8192, 3200, 2400, 0)}, 2400},
		{"extended configured speed", [][]byte{smbiosMemDevice(0x7FFF, 0xFFFF, 0xFFFF, 70000)}, 70000},
		{"highest populated slot wins", [][]byte{smbiosMemDevice(8192, 3200, 2400, 0), smbiosMemDevice(8192, 3200, 3200, 0)}, 3200},
		{"wrong type", [][]byte{append([]byte{16}, smbiosMemDevice(8192, 3200, 3200, 0)[1:]...)}, 0},
		{"truncated SMBIOS 2.3 entry", [][]byte{smbiosMemDevice(8192, 1600, 1333, 0)[:0x1B]}, 1600},
		{"too short", [][]byte{{17, 4}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := memorySpeed(tt.devices); got != tt.want {
				t.Errorf("memorySpeed() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestLoadSources(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	fsys := fstest.MapFS{
		"proc/cpuinfo":     file(intelCPUInfo),
		"proc/meminfo":     file(memInfo16G),
		"proc/self/cgroup": file("0::/system.slice/app.service\n"),
		// The parent's limit is tighter than the leaf's.
		"sys/fs/cgroup/system.slice/app.service/memory.max":            file("max\n"),
		"sys/fs/cgroup/system.slice/memory.max":                        file("2147483648\n"),
		"sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq":         file("3400000\n"),
		"sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size": file("64\n"),
		"sys/devices/system/cpu/cpu0/cache/index0/level":               file("1\n"),
		"sys/devices/system/cpu/cpu0/cache/index0/type":                file("Data\n"),
		"sys/devices/system/cpu/cpu0/cache/index0/size":                file("48K\n"),
		"sys/devices/system/cpu/cpu0/cache/index2/level":               file("2\n"),
		"sys/devices/system/cpu/cpu0/cache/index2/type":                file("Unified\n"),
		"sys/devices/system/cpu/cpu0/cache/index2/size":                file("2048K\n"),
		"sys/firmware/dmi/entries/17-0/raw":                            {Data: smbiosMemDevice(16384, 4800, 4400, 0)},
		"sys/firmware/dmi/entries/17-1/raw":                            {Data: smbiosMemDevice(0, 0, 0, 0)},
	}
	src := LoadSources(fsys)
	if src.CgroupMemMax != "2147483648" {
		t.Errorf("CgroupMemMax = %q, want the parent's limit", src.CgroupMemMax)
	}
	if len(src.Caches) != 2 || len(src.DMIMemoryDevices) != 2 {
		t.Fatalf("got %d caches and %d DMI entries, want 2 and 2", len(src.Caches), len(src.DMIMemoryDevices))
	}
	got := Parse(src)
	want := Info{
		ModelName:   "Intel(R) Xeon(R) CPU @ 2.20GHz",
		Vendor:      "Intel",
		VendorID:    0x8086,
		LogicalCPUs: 2,
		MaxClockMHz: 3400,
		MemClockMHz: 4400,
		MemTotal:    2 << 30,
		VectorBytes: 64,
		HalfVectors: true,
		AddressBits: uint32(strconv.IntSize),
		CacheLine:   64,
		L2Bytes:     2 << 20,
	}
	if got != want {
		t.Errorf("Parse(LoadSources()) =\n  %+v\nwant\n  %+v", got, want)
	}
}

func TestCgroupMemLimit(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{"nothing", fstest.MapFS{}, ""},
		{"namespaced root", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("1073741824\n"),
		}, "1073741824"},
		{"unlimited", fstest.MapFS{
			"proc/self/cgroup":             file("0::/a\n"),
			"sys/fs/cgroup/a/memory.max":   file("max\n"),
			"sys/fs/cgroup/memory.max":     file("max\n"),
			"sys/fs/cgroup/b/memory.max":   file("1\n"), // not ours
			"sys/fs/cgroup/a/b/memory.max": file("1\n"), // not ours either
		}, "max"},
		{"leaf tighter than parent", fstest.MapFS{
			"proc/self/cgroup":             file("0::/a/b\n"),
			"sys/fs/cgroup/a/b/memory.max": file("1000\n"),
			"sys/fs/cgroup/a/memory.max":   file("5000\n"),
		}, "1000"},
		{"path outside namespace", fstest.MapFS{
			"proc/self/cgroup":         file("0::/../../other\n"),
			"sys/fs/cgroup/memory.max": file("7777\n"),
		}, "7777"},
		{"cgroup v1", fstest.MapFS{
			"proc/self/cgroup":                           file("4:memory:/x\n0::/\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("9223372036854771712\n"),
		}, "9223372036854771712"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cgroupMemLimit(tt.fsys); got != tt.want {
				t.Errorf("cgroupMemLimit() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"32K", 32 << 10, true},
		{"1024K\n", 1 << 20, true},
		{"8M", 8 << 20, true},
		{"1G", 1 << 30, true},
		{"4096", 4096, true},
		{"", 0, false},
		{"K", 0, false},
		{"99999999999999999999K", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseSize(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseSize(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestNativeVectorWidth(t *testing.T) {
	avx512 := Info{VectorBytes: 64, HalfVectors: true}
	sse := Info{VectorBytes: 16}
	scalar := Info{VectorBytes: 8}
	tests := []struct {
		name string
		info Info
		elem uint32
		half bool
		want uint32
	}{
		{"avx512 char", avx512, 1, false, 64},
		{"avx512 short", avx512, 2, false, 32},
		{"avx512 int", avx512, 4, false, 16},
		{"avx512 long", avx512, 8, false, 8},
		{"avx512 double", avx512, 8, false, 8},
		{"avx512 half", avx512, 2, true, 32},
		{"sse float", sse, 4, false, 4},
		{"sse half unsupported", sse, 2, true, 0},
		{"scalar double", scalar, 8, false, 1},
		{"element wider than register", scalar, 16, false, 1},
		{"zero element", sse, 0, false, 0},
		{"zero value Info", Info{}, 4, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.info.NativeVectorWidth(tt.elem, tt.half); got != tt.want {
				t.Errorf("NativeVectorWidth(%d, %v) = %d, want %d", tt.elem, tt.half, got, tt.want)
			}
		})
	}
}

func TestReadLiveMachine(t *testing.T) {
	info := Read()
	t.Logf("Read() = %+v", info)
	if got, want := info.LogicalCPUs, uint32(runtime.NumCPU()); got != want {
		t.Errorf("LogicalCPUs = %d, want runtime.NumCPU() = %d", got, want)
	}
	if info.MemTotal == 0 {
		t.Error("MemTotal = 0")
	}
	if info.ModelName == "" {
		t.Error("ModelName is empty")
	}
	if info.Vendor == "" {
		t.Error("Vendor is empty")
	}
	if info.AddressBits != 64 {
		t.Errorf("AddressBits = %d, want 64", info.AddressBits)
	}
	if info.CacheLine == 0 || info.VectorBytes < 8 {
		t.Errorf("CacheLine = %d, VectorBytes = %d; want non-zero and >= 8", info.CacheLine, info.VectorBytes)
	}
	// Two reads of an unchanged machine agree: there is no hidden state.
	if again := Read(); again != info {
		t.Errorf("second Read() = %+v, differs from first", again)
	}
}

func BenchmarkRead(b *testing.B) {
	for b.Loop() {
		_ = Read()
	}
}
