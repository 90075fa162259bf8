package amdgpu

import (
	"encoding/binary"

	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// implicitArgsSize is the size of the implicit (hidden) kernel arguments
// of code object v5 that follow the explicit ones in the kernarg segment.
const implicitArgsSize = 256

// Offsets of the implicit arguments the plugin sets, from their start
// (AMDGPU code object v5, hidden arguments of the kernel's metadata).
const (
	hiddenBlockCount = 0  // u32 × 3: work-groups per dimension
	hiddenGroupSize  = 12 // u16 × 3: work-items per group
	hiddenRemainder  = 18 // u16 × 3: work-items of the last, partial group (0: whole groups)
	hiddenGlobalOff  = 40 // u64 × 3: global offset (0)
	hiddenGridDims   = 64 // u16: dimensions of the grid
)

// gridDims is the number of dimensions of a launch: the highest dimension
// with more than one work-item.
func gridDims(s plugin.LaunchSize) uint16 {
	switch {
	case uint64(s.NumGroups.Z)*uint64(s.GroupSize.Z) > 1:
		return 3
	case uint64(s.NumGroups.Y)*uint64(s.GroupSize.Y) > 1:
		return 2
	}
	return 1
}

// implicitOffset is where the implicit arguments start in a kernarg
// segment of segSize bytes: the last implicitArgsSize bytes, in every
// segment that holds them (clang's code object v5 kernels have them
// whenever they read their group sizes, which computing a global id
// does), else -1. Argument bytes beyond it are not the kernel's.
func implicitOffset(segSize uint64) int64 {
	if segSize < implicitArgsSize {
		return -1
	}
	return int64(segSize - implicitArgsSize)
}

// writeKernarg fills a kernarg segment (buf, at least segSize bytes): the
// caller's argument bytes at offset 0 (cut to what the segment holds before
// the implicit arguments), zeros after them (the remainders, global offsets
// and every other implicit argument stay 0), and the implicit arguments for
// the launch at off (-1: the kernel has none), of dims dimensions (see
// gridDims). Grids are whole groups, so the remainders are 0.
func writeKernarg(buf []byte, segSize uint64, off int64, args []byte, s plugin.LaunchSize, dims uint16) {
	explicit := segSize
	if off >= 0 {
		explicit = uint64(off)
	}
	n := copy(buf[:explicit], args)
	clear(buf[n:segSize])
	if off < 0 {
		return
	}
	// (a segment may end before the last implicit arguments: those that
	// do not fit are not the kernel's)
	h := buf[off:max(uint64(off), min(uint64(off)+implicitArgsSize, segSize))]
	le := binary.LittleEndian
	if len(h) >= hiddenGroupSize {
		le.PutUint32(h[hiddenBlockCount:], s.NumGroups.X)
		le.PutUint32(h[hiddenBlockCount+4:], s.NumGroups.Y)
		le.PutUint32(h[hiddenBlockCount+8:], s.NumGroups.Z)
	}
	if len(h) >= hiddenRemainder {
		le.PutUint16(h[hiddenGroupSize:], uint16(s.GroupSize.X))
		le.PutUint16(h[hiddenGroupSize+2:], uint16(s.GroupSize.Y))
		le.PutUint16(h[hiddenGroupSize+4:], uint16(s.GroupSize.Z))
	}
	if len(h) >= hiddenGridDims+2 {
		le.PutUint16(h[hiddenGridDims:], dims)
	}
}
