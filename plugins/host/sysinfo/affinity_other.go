//go:build !linux

package sysinfo

import "runtime"

// affinityCPUs uses the runtime's CPU count, which already respects the
// process affinity where the platform exposes one.
func affinityCPUs() uint32 {
	return uint32(runtime.NumCPU())
}
