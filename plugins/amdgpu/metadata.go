package amdgpu

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"math"
	"strings"

	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// kernelMeta is what the plugin reads of a kernel's entry in the code
// object's metadata (the NT_AMDGPU_METADATA note, MessagePack, code object
// v3 and later).
type kernelMeta struct {
	// implicitBase is the kernarg offset the implicit arguments'
	// standard offsets count from (the explicit arguments end before it);
	// -1 when the kernel takes none.
	implicitBase int64
	// maxFlatGroupSize is the largest work-group the kernel was compiled
	// for (.max_flat_workgroup_size; 0 when not given).
	maxFlatGroupSize uint32
	// vgprs and agprs are the vector and accumulation registers a
	// work-item uses (.vgpr_count, .agpr_count); wave the wavefront size
	// (.wavefront_size). 0 when not given.
	vgprs, agprs, wave uint32
	// argsSize is where the explicit arguments end (the largest .offset +
	// .size of the arguments that are not hidden_*): the least
	// ArgumentsSize a launch must give.
	argsSize uint64
	// params are the explicit arguments in order (.offset, .size);
	// paramsOK is false when one of them lacks either.
	params   []plugin.Param
	paramsOK bool
	// dynamicStack is .uses_dynamic_stack: the kernel's stack size is not
	// known at compile time (calls through pointers, recursion), so its
	// private segment size is not enough (see dynamicStackSize).
	dynamicStack bool
}

// hiddenOffsets are the offsets of the implicit arguments of code object
// v5 from the start of the implicit arguments, by .value_kind.
var hiddenOffsets = map[string]int64{
	"hidden_block_count_x": 0, "hidden_block_count_y": 4, "hidden_block_count_z": 8,
	"hidden_group_size_x": 12, "hidden_group_size_y": 14, "hidden_group_size_z": 16,
	"hidden_remainder_x": 18, "hidden_remainder_y": 20, "hidden_remainder_z": 22,
	"hidden_global_offset_x": 40, "hidden_global_offset_y": 48, "hidden_global_offset_z": 56,
	"hidden_grid_dims": 64,
}

// parseKernelMeta reads the kernels of a code object's metadata note, by
// symbol name without ".kd". An image without the note (or one that does
// not parse) gives no entries: the plugin then goes by the kernarg segment
// size alone.
func parseKernelMeta(img []byte) (meta map[string]kernelMeta) {
	defer func() {
		if recover() != nil { // a damaged image: no metadata
			meta = nil
		}
	}()
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		return nil
	}
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		if desc := amdgpuNote(data); desc != nil {
			v, _, err := msgpackDecode(desc, 0)
			if err != nil {
				return nil
			}
			return kernelsOf(v)
		}
	}
	return nil
}

// amdgpuNote finds the NT_AMDGPU_METADATA (32) note of owner "AMDGPU".
func amdgpuNote(b []byte) []byte {
	le := binary.LittleEndian
	for len(b) >= 12 {
		namesz, descsz, typ := le.Uint32(b), le.Uint32(b[4:]), le.Uint32(b[8:])
		nameEnd := 12 + align4(uint64(namesz))
		descEnd := nameEnd + align4(uint64(descsz))
		if nameEnd > uint64(len(b)) || nameEnd+uint64(descsz) > uint64(len(b)) {
			return nil
		}
		name := string(bytes.TrimRight(b[12:12+namesz], "\x00"))
		if name == "AMDGPU" && typ == 32 {
			return b[nameEnd : nameEnd+uint64(descsz)]
		}
		if descEnd > uint64(len(b)) {
			return nil
		}
		b = b[descEnd:]
	}
	return nil
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

func kernelsOf(v any) map[string]kernelMeta {
	root, _ := v.(map[string]any)
	list, _ := root["amdhsa.kernels"].([]any)
	out := map[string]kernelMeta{}
	for _, x := range list {
		k, _ := x.(map[string]any)
		name, _ := k[".name"].(string)
		if name == "" {
			continue
		}
		m := kernelMeta{implicitBase: -1, paramsOK: true}
		m.dynamicStack, _ = k[".uses_dynamic_stack"].(bool)
		if n, ok := k[".max_flat_workgroup_size"].(int64); ok && n > 0 && n <= math.MaxUint32 {
			m.maxFlatGroupSize = uint32(n)
		}
		for _, f := range []struct {
			key string
			to  *uint32
		}{{".vgpr_count", &m.vgprs}, {".agpr_count", &m.agprs}, {".wavefront_size", &m.wave}} {
			if n, ok := k[f.key].(int64); ok && n > 0 && n <= 1<<16 {
				*f.to = uint32(n)
			}
		}
		args, _ := k[".args"].([]any)
		for _, a := range args {
			am, _ := a.(map[string]any)
			kind, _ := am[".value_kind"].(string)
			off, ok := am[".offset"].(int64)
			if std, known := hiddenOffsets[kind]; known && ok && off >= std && m.implicitBase < 0 {
				m.implicitBase = off - std
			}
			if strings.HasPrefix(kind, "hidden_") {
				continue // the runtime's, not the caller's
			}
			if size, sized := am[".size"].(int64); ok && sized && off >= 0 && size >= 0 && off <= math.MaxUint32 && size <= math.MaxUint32 {
				m.argsSize = max(m.argsSize, uint64(off+size))
				m.params = append(m.params, plugin.Param{Offset: uint64(off), Size: uint64(size)})
			} else {
				m.paramsOK = false
			}
		}
		out[name] = m
	}
	return out
}

var errMsgpack = errors.New("malformed MessagePack")

// msgpackDecode decodes one MessagePack value at b[i:]: maps (string keys),
// arrays, strings, integers (int64), floats, booleans and nil. It returns
// the value and the offset after it.
func msgpackDecode(b []byte, i int) (any, int, error) { return msgpackValue(b, i, 0) }

// maxMsgpackDepth bounds the nesting of a decoded value.
const maxMsgpackDepth = 32

func msgpackValue(b []byte, i, depth int) (any, int, error) {
	if i >= len(b) || depth > maxMsgpackDepth {
		return nil, 0, errMsgpack
	}
	c := b[i]
	i++
	need := func(n int) bool { return n >= 0 && i+n <= len(b) }
	be := func(n int) (uint64, bool) {
		if !need(n) {
			return 0, false
		}
		var v uint64
		for k := 0; k < n; k++ {
			v = v<<8 | uint64(b[i+k])
		}
		i += n
		return v, true
	}
	str := func(n int) (any, int, error) {
		if !need(n) {
			return nil, 0, errMsgpack
		}
		return string(b[i : i+n]), i + n, nil
	}
	switch {
	case c <= 0x7f:
		return int64(c), i, nil
	case c >= 0xe0:
		return int64(int8(c)), i, nil
	case c >= 0x80 && c <= 0x8f:
		return msgpackMap(b, i, int(c&0x0f), depth)
	case c >= 0x90 && c <= 0x9f:
		return msgpackArray(b, i, int(c&0x0f), depth)
	case c >= 0xa0 && c <= 0xbf:
		return str(int(c & 0x1f))
	}
	switch c {
	case 0xc0:
		return nil, i, nil
	case 0xc2:
		return false, i, nil
	case 0xc3:
		return true, i, nil
	case 0xc4, 0xc5, 0xc6, 0xd9, 0xda, 0xdb: // bin and str 8/16/32
		w := map[byte]int{0xc4: 1, 0xc5: 2, 0xc6: 4, 0xd9: 1, 0xda: 2, 0xdb: 4}[c]
		n, ok := be(w)
		if !ok || n > uint64(len(b)) {
			return nil, 0, errMsgpack
		}
		return str(int(n))
	case 0xca:
		v, ok := be(4)
		if !ok {
			return nil, 0, errMsgpack
		}
		return float64(math.Float32frombits(uint32(v))), i, nil
	case 0xcb:
		v, ok := be(8)
		if !ok {
			return nil, 0, errMsgpack
		}
		return math.Float64frombits(v), i, nil
	case 0xcc, 0xcd, 0xce, 0xcf:
		v, ok := be(1 << (c - 0xcc))
		if !ok {
			return nil, 0, errMsgpack
		}
		return int64(v), i, nil
	case 0xd0, 0xd1, 0xd2, 0xd3:
		n := 1 << (c - 0xd0)
		v, ok := be(n)
		if !ok {
			return nil, 0, errMsgpack
		}
		shift := 64 - 8*n
		return int64(v<<shift) >> shift, i, nil
	case 0xdc, 0xdd, 0xde, 0xdf:
		n, ok := be(2 << ((c - 0xdc) % 2))
		if !ok || n > uint64(len(b)) {
			return nil, 0, errMsgpack
		}
		if c <= 0xdd {
			return msgpackArray(b, i, int(n), depth)
		}
		return msgpackMap(b, i, int(n), depth)
	}
	return nil, 0, errMsgpack
}

func msgpackArray(b []byte, i, n, depth int) (any, int, error) {
	if n > len(b)-i {
		return nil, 0, errMsgpack
	}
	out := make([]any, 0, n)
	for k := 0; k < n; k++ {
		v, j, err := msgpackValue(b, i, depth+1)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, v)
		i = j
	}
	return out, i, nil
}

func msgpackMap(b []byte, i, n, depth int) (any, int, error) {
	if n > len(b)-i {
		return nil, 0, errMsgpack
	}
	out := make(map[string]any, n)
	for k := 0; k < n; k++ {
		key, j, err := msgpackValue(b, i, depth+1)
		if err != nil {
			return nil, 0, err
		}
		v, j2, err := msgpackValue(b, j, depth+1)
		if err != nil {
			return nil, 0, err
		}
		if s, ok := key.(string); ok {
			out[s] = v
		}
		i = j2
	}
	return out, i, nil
}

// regGroupLimit is the largest work-group, in work-items, whose waves fit
// on one compute unit at once given the vector registers each work-item
// uses: a CU has simds SIMDs, each with vgprFile registers per lane and
// room for at most maxWaves waves; a wave takes its registers rounded up
// to the allocation granule of 8. 0 when the target is not known.
func regGroupLimit(gfx string, vgprs, agprs, wave uint32) uint32 {
	var simds, vgprFile, maxWaves uint32
	switch {
	case strings.HasPrefix(gfx, "gfx90a"), strings.HasPrefix(gfx, "gfx94"), strings.HasPrefix(gfx, "gfx95"):
		simds, vgprFile, maxWaves = 4, 512, 8 // CDNA2/3: arch and acc registers in one file
		vgprs = (vgprs+3)&^3 + agprs
	case strings.HasPrefix(gfx, "gfx908"):
		simds, vgprFile, maxWaves = 4, 256, 10 // CDNA1: two files of 256, the fuller one counts
		vgprs = max(vgprs, agprs)
	case strings.HasPrefix(gfx, "gfx9"), strings.HasPrefix(gfx, "gfx8"):
		simds, vgprFile, maxWaves = 4, 256, 10
	case strings.HasPrefix(gfx, "gfx10"), strings.HasPrefix(gfx, "gfx11"), strings.HasPrefix(gfx, "gfx12"):
		// a CU of two SIMD32s (a work-group may span the WGP's two CUs in
		// WGP mode; CU mode is the conservative bound): 1024 registers per
		// lane in wave32, half as many wave64 waves
		simds, vgprFile, maxWaves = 2, 1024, 16
		if wave == 64 {
			vgprFile = 512
		}
	default:
		return 0
	}
	wave = waveSize(gfx, wave)
	perSIMD := maxWaves
	if vgprs > 0 {
		perSIMD = min(maxWaves, vgprFile/((vgprs+7)&^7))
	}
	return max(perSIMD, 1) * simds * wave
}

// waveSize is the wavefront size of a kernel for gfx: its metadata's
// (wave), or the processor's default (32 from gfx10 on, 64 before).
func waveSize(gfx string, wave uint32) uint32 {
	if wave != 0 {
		return wave
	}
	if strings.HasPrefix(gfx, "gfx1") && len(gfx) >= 7 {
		return 32
	}
	return 64
}
