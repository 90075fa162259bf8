package sysinfo

import (
	"io/fs"
	"os"
	"path"
	"strings"
)

// Sources is the raw material Parse works from. Every field is optional;
// an empty value means "the machine did not say" and selects a fallback.
type Sources struct {
	CPUInfo       string // contents of /proc/cpuinfo
	MemInfo       string // contents of /proc/meminfo
	CgroupMemMax  string // effective cgroup memory limit in bytes, or "max"
	CPUFreqMaxKHz string // cpu0/cpufreq/cpuinfo_max_freq
	CacheLineSize string // cpu0/cache/index0/coherency_line_size

	// Caches lists cpu0's cache descriptions (cpu0/cache/index*).
	Caches []CacheSource

	// DMIMemoryDevices holds raw SMBIOS type 17 structures
	// (/sys/firmware/dmi/entries/17-*/raw); usually readable by root only.
	DMIMemoryDevices [][]byte

	// AffinityCPUs is the size of the process's CPU affinity mask. When 0,
	// Parse counts the processors listed in CPUInfo instead (or assumes 1).
	AffinityCPUs uint32
}

// CacheSource is the text of the level, type and size files of one
// /sys/devices/system/cpu/cpuN/cache/indexM directory.
type CacheSource struct {
	Level string // "1", "2", ...
	Type  string // "Data", "Instruction" or "Unified"
	Size  string // e.g. "1024K"
}

// File locations relative to the file system root.
const (
	cpuInfoPath   = "proc/cpuinfo"
	memInfoPath   = "proc/meminfo"
	selfCgroup    = "proc/self/cgroup"
	cgroupRoot    = "sys/fs/cgroup"
	cgroupV1Limit = "sys/fs/cgroup/memory/memory.limit_in_bytes"
	cpu0Dir       = "sys/devices/system/cpu/cpu0"
	cpuFreqMax    = cpu0Dir + "/cpufreq/cpuinfo_max_freq"
	cacheGlob     = cpu0Dir + "/cache/index*"
	dmiMemGlob    = "sys/firmware/dmi/entries/17-*/raw"
)

// Read describes the live machine. It reads a few small files, makes one
// system call and never fails: whatever cannot be read falls back to the
// defaults documented on Info.
func Read() Info {
	src := LoadSources(os.DirFS("/"))
	src.AffinityCPUs = affinityCPUs()
	return Parse(src)
}

// LoadSources collects the raw inputs for Parse from fsys, which must be
// rooted at "/" of the machine to describe (os.DirFS("/") for the real one;
// a fstest.MapFS in tests). Missing or unreadable files are left empty.
// AffinityCPUs is not filled in, since it is not backed by a file.
func LoadSources(fsys fs.FS) Sources {
	src := Sources{
		CPUInfo:       readText(fsys, cpuInfoPath),
		MemInfo:       readText(fsys, memInfoPath),
		CgroupMemMax:  cgroupMemLimit(fsys),
		CPUFreqMaxKHz: readText(fsys, cpuFreqMax),
	}

	if dirs, err := fs.Glob(fsys, cacheGlob); err == nil {
		// Glob returns sorted names, so index0 comes first.
		for i, dir := range dirs {
			if i == 0 {
				src.CacheLineSize = readText(fsys, dir+"/coherency_line_size")
			}
			src.Caches = append(src.Caches, CacheSource{
				Level: readText(fsys, dir+"/level"),
				Type:  readText(fsys, dir+"/type"),
				Size:  readText(fsys, dir+"/size"),
			})
		}
	}

	if files, err := fs.Glob(fsys, dmiMemGlob); err == nil {
		for _, f := range files {
			if b, err := fs.ReadFile(fsys, f); err == nil && len(b) > 0 {
				src.DMIMemoryDevices = append(src.DMIMemoryDevices, b)
			}
		}
	}
	return src
}

// cgroupMemLimit finds the tightest memory limit that applies to this
// process. On cgroup v2 it walks from the process's own cgroup (as named in
// /proc/self/cgroup) up to the mount root, reading memory.max at each
// level; if no v2 limit file exists it tries the v1 memory controller.
// The result is the smallest number found, "max" when only unlimited
// entries exist, or "" when nothing was readable.
func cgroupMemLimit(fsys fs.FS) string {
	var dirs []string
	for _, line := range strings.Split(readText(fsys, selfCgroup), "\n") {
		rel, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		rel = strings.Trim(rel, "/")
		// A path outside our cgroup namespace shows up with "..";
		// it does not map onto the mounted tree, so skip it.
		if rel != "" && !strings.Contains(rel, "..") {
			for p := rel; p != "." && p != ""; p = path.Dir(p) {
				dirs = append(dirs, cgroupRoot+"/"+p)
			}
		}
		break
	}
	dirs = append(dirs, cgroupRoot)

	result := ""
	var best uint64
	for _, d := range dirs {
		v := readText(fsys, d+"/memory.max")
		if v == "" {
			continue
		}
		if n, ok := parseUint(v); ok {
			if result == "" || result == "max" || n < best {
				best, result = n, v
			}
		} else if result == "" {
			result = v
		}
	}
	if result == "" {
		result = readText(fsys, cgroupV1Limit)
	}
	return result
}

// readText returns the trimmed contents of name, or "" on any error.
func readText(fsys fs.FS, name string) string {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
