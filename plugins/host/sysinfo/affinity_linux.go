package sysinfo

import (
	"math/bits"
	"runtime"
	"syscall"
	"unsafe"
)

// affinityCPUs counts the CPUs in the calling thread's affinity mask, which
// the kernel initialises from the process's mask. It falls back to
// runtime.NumCPU (the same count taken at program start) if the system
// call is refused.
func affinityCPUs() uint32 {
	// Start with room for 1024 CPUs and grow while the kernel says the
	// buffer is too small (EINVAL), up to 1<<20 CPUs.
	// The mask is handled as bytes so that the count does not depend on
	// the word size or byte order of the platform.
	for size := 1024 / 8; size <= (1<<20)/8; size *= 2 {
		mask := make([]byte, size)
		n, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY,
			0, uintptr(len(mask)), uintptr(unsafe.Pointer(&mask[0])))
		if errno == syscall.EINVAL {
			continue
		}
		if errno != 0 {
			break
		}
		// n is the number of mask bytes the kernel filled in.
		count := 0
		for _, b := range mask[:min(int(n), len(mask))] {
			count += bits.OnesCount8(b)
		}
		if count > 0 {
			return uint32(count)
		}
		break
	}
	return uint32(runtime.NumCPU())
}
