package image

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// asCubin is a copy of a host shared object with EM_CUDA and sm_80 in its
// header: the layout of a cubin, as the CUDA driver double loads it.
func asCubin(so []byte) []byte {
	b := bytes.Clone(so)
	binary.LittleEndian.PutUint16(b[18:], uint16(emCUDA))
	binary.LittleEndian.PutUint32(b[48:], 80)
	return b
}

// wrapFatbin puts payloads in a fatbin, as entries of kind (1 PTX, 2 ELF)
// with 64-byte entry headers.
func wrapFatbin(kind uint16, payloads ...[]byte) []byte {
	le := binary.LittleEndian
	var entries []byte
	for _, p := range payloads {
		h := make([]byte, 64)
		le.PutUint16(h, kind)
		le.PutUint16(h[2:], 0x101)
		le.PutUint32(h[4:], 64)
		le.PutUint64(h[8:], uint64(len(p)))
		le.PutUint32(h[28:], 80)
		entries = append(append(entries, h...), p...)
	}
	b := make([]byte, 16)
	le.PutUint32(b, 0xba55ed50)
	le.PutUint16(b[4:], 1)
	le.PutUint16(b[6:], 16)
	le.PutUint64(b[8:], uint64(len(entries)))
	return append(b, entries...)
}

// outOfBounds is what a reader that trusts the headers would read past the
// end of b (or "" if nothing): the ELF header, the program and section
// header tables, each segment's and section's bytes and each section name.
// It is written apart from CheckCUDA, in unbounded arithmetic, as the
// oracle of the tests: an image CheckCUDA accepts must give "".
func outOfBounds(b []byte) string {
	if bytes.HasPrefix(b, fatbinMagic) {
		if len(b) < 16 {
			return "fatbin header"
		}
		le := binary.LittleEndian
		end := new(big.Int).Add(big.NewInt(int64(le.Uint16(b[6:]))), new(big.Int).SetUint64(le.Uint64(b[8:])))
		if end.Cmp(big.NewInt(int64(len(b)))) > 0 {
			return "fatbin entries"
		}
		for off := uint64(le.Uint16(b[6:])); off+16 <= end.Uint64(); {
			h, size := uint64(le.Uint32(b[off+4:])), le.Uint64(b[off+8:])
			e := new(big.Int).Add(new(big.Int).SetUint64(off+h), new(big.Int).SetUint64(size))
			if e.Cmp(end) > 0 {
				return fmt.Sprintf("fatbin entry at %#x", off)
			}
			if h == 0 {
				break
			}
			if p := b[off+h : e.Uint64()]; le.Uint16(b[off:]) == 2 && bytes.HasPrefix(p, elfMagic) {
				if s := outOfBounds(p); s != "" {
					return fmt.Sprintf("fatbin entry at %#x: %s", off, s)
				}
			}
			off = e.Uint64()
		}
		return ""
	}
	if !bytes.HasPrefix(b, elfMagic) || len(b) < 16 || b[4] != 2 || b[5] != 1 {
		return "" // the tests use 64-bit little-endian images only
	}
	n := big.NewInt(int64(len(b)))
	past := func(off, size uint64) bool {
		return new(big.Int).Add(new(big.Int).SetUint64(off), new(big.Int).SetUint64(size)).Cmp(n) > 0
	}
	if len(b) < 64 {
		return "ELF header"
	}
	le := binary.LittleEndian
	phoff, shoff := le.Uint64(b[32:]), le.Uint64(b[40:])
	phent, phnum, shent, shnum, shstrndx := le.Uint16(b[54:]), le.Uint16(b[56:]), le.Uint16(b[58:]), le.Uint16(b[60:]), le.Uint16(b[62:])
	if phnum > 0 && past(phoff, uint64(phnum)*uint64(phent)) {
		return "program header table"
	}
	for i := uint64(0); i < uint64(phnum); i++ {
		p := phoff + i*uint64(phent)
		if past(p, 56) {
			return fmt.Sprintf("program header %d", i)
		}
		if past(le.Uint64(b[p+8:]), le.Uint64(b[p+32:])) {
			return fmt.Sprintf("segment %d", i)
		}
	}
	if shnum == 0 {
		return ""
	}
	if past(shoff, uint64(shnum)*uint64(shent)) {
		return "section header table"
	}
	var names []byte
	for i := uint64(0); i < uint64(shnum); i++ {
		p := shoff + i*uint64(shent)
		if past(p, 64) {
			return fmt.Sprintf("section header %d", i)
		}
		if typ := le.Uint32(b[p+4:]); typ != 0 && typ != 8 && past(le.Uint64(b[p+24:]), le.Uint64(b[p+32:])) {
			return fmt.Sprintf("section %d", i)
		}
		if i == uint64(shstrndx) {
			names = b[le.Uint64(b[p+24:]) : le.Uint64(b[p+24:])+le.Uint64(b[p+32:])]
		}
	}
	if shstrndx == 0 {
		return ""
	}
	if uint64(shstrndx) >= uint64(shnum) {
		return "section name table"
	}
	for i := uint64(0); i < uint64(shnum); i++ {
		name := le.Uint32(b[shoff+i*uint64(shent):])
		if k := bytes.IndexByte(names[min(uint64(name), uint64(len(names))):], 0); k < 0 {
			return fmt.Sprintf("name of section %d", i)
		}
	}
	return ""
}

func TestCheckCUDA(t *testing.T) {
	so := realImages(t)["so"]
	good := asCubin(so)
	le := binary.LittleEndian
	phoff, shoff := le.Uint64(good[32:]), le.Uint64(good[40:])
	if le.Uint64(good[phoff+56+32:]) == 0 || le.Uint64(good[phoff+32:]) == 0 {
		t.Fatal("the test wants a first segment with bytes and a second one")
	}
	set := func(off int, size int, v uint64) []byte {
		b := bytes.Clone(good)
		switch size {
		case 2:
			le.PutUint16(b[off:], uint16(v))
		case 4:
			le.PutUint32(b[off:], uint32(v))
		default:
			le.PutUint64(b[off:], v)
		}
		return b
	}
	n := len(good)
	limit := fmt.Sprintf("ProgDataSize %d", n)
	for _, c := range []struct {
		name string
		img  []byte
		want string // "" when accepted
	}{
		{"cubin", good, ""},
		{"fatbin of two cubins", wrapFatbin(2, good, good), ""},
		{"fatbin of PTX", wrapFatbin(1, []byte(".version 7.8\n.target sm_80\n\x00\x00")), ""},
		{"PTX", []byte(".version 7.8\n.target sm_80\n"), ""},
		{"empty fatbin", wrapFatbin(2), ""},
		{"truncated", good[:n/2], fmt.Sprintf("runs past ProgDataSize %d", n/2)},
		{"header only", good[:40], "the 64-byte ELF header runs past ProgDataSize 40"},
		{"e_phoff", set(32, 8, 0xffffffffffff0000), "e_phoff 0xffffffffffff0000 + e_phnum"},
		{"e_shoff", set(40, 8, uint64(n)), fmt.Sprintf("e_shoff %#x + e_shentsize 64 runs past %s", n, limit)},
		{"e_phentsize", set(54, 2, 0xffff), "e_phentsize 65535 is not the 56 bytes of a program header"},
		{"e_phnum", set(56, 2, 0xffff), fmt.Sprintf("e_phoff %#x + e_phnum 65535 × e_phentsize 56 runs past %s", phoff, limit)},
		{"e_shentsize", set(58, 2, 0xffff), "e_shentsize 65535 is not the 64 bytes of a section header"},
		{"e_shnum", set(60, 2, 0xffff), fmt.Sprintf("e_shoff %#x + e_shnum 65535 × e_shentsize 64 runs past %s", shoff, limit)},
		{"e_shstrndx", set(62, 2, 0x7fff), "e_shstrndx 32767 is not a section"},
		{"e_shstrndx not a string table", set(62, 2, 1), "e_shstrndx 1: section 1 is not a string table"},
		{"segment of 1 GiB", set(int(phoff)+32, 8, 1<<30), fmt.Sprintf("program header 0: p_offset 0x0 + p_filesz 0x40000000 runs past %s", limit)},
		{"segment offset", set(int(phoff)+56+8, 8, 1<<62), "program header 1: p_offset 0x4000000000000000"},
		{"section offset", set(int(shoff)+64+24, 8, uint64(n)), fmt.Sprintf("section 1: sh_offset %#x", n)},
		{"section name", set(int(shoff)+64, 4, 0xfffffff0), "section 1: sh_name 0xfffffff0 runs past the"},
		{"fatbin entries size", func() []byte { b := wrapFatbin(2, good); le.PutUint64(b[8:], 1<<40); return b }(),
			fmt.Sprintf("fatbin header size 16 + entries size 0x10000000000 runs past ProgDataSize %d", n+80)},
		{"fatbin header", wrapFatbin(2, good)[:12], "the 16-byte fatbin header runs past ProgDataSize 12"},
		{"fatbin entry size", func() []byte { b := wrapFatbin(2, good); le.PutUint64(b[24:], uint64(n+1)); return b }(),
			fmt.Sprintf("fatbin entry 0 at 0x10: header size 64 + payload size %#x runs past the end of the entries at %#x", n+1, n+80)},
		{"fatbin entry header size", func() []byte { b := wrapFatbin(2, good); le.PutUint32(b[20:], 4); return b }(),
			"fatbin entry 0 at 0x10: header size 4 is less than 16 bytes"},
		{"cubin in a fatbin", wrapFatbin(2, good, set(56, 2, 0xffff)),
			fmt.Sprintf("fatbin entry 1 at %#x: e_phoff %#x + e_phnum 65535 × e_phentsize 56 runs past the %d-byte payload of fatbin entry 1", 16+64+n, phoff, n)},
		{"PTX without NUL in a fatbin", wrapFatbin(1, []byte(".version 7.8\n.target sm_80\n")), ""},
	} {
		err := CheckCUDA(c.img)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if err == nil {
			if s := outOfBounds(c.img); s != "" {
				t.Errorf("%s: accepted, but its %s runs past the image", c.name, s)
			}
		}
	}
}

// headerFields are the offsets and sizes of the 64-bit ELF header fields a
// loader trusts.
var headerFields = [][2]int{{32, 8}, {40, 8}, {54, 2}, {56, 2}, {58, 2}, {60, 2}, {62, 2}}

// mutate sets a random header field, program header field or section
// header field of b to a random value, an extreme one or a nearby one.
func mutate(r *rand.Rand, b []byte) {
	le := binary.LittleEndian
	var off, size int
	switch r.IntN(3) {
	case 0:
		f := headerFields[r.IntN(len(headerFields))]
		off, size = f[0], f[1]
	case 1: // p_offset or p_filesz of a program header
		ph, num := le.Uint64(b[32:]), int(le.Uint16(b[56:]))
		if num == 0 || !fits(ph, uint64(num)*56, uint64(len(b))) {
			return
		}
		off, size = int(ph)+56*r.IntN(num)+[]int{8, 32}[r.IntN(2)], 8
	default: // sh_name, sh_type, sh_offset, sh_size or sh_link of a section header
		sh, num := le.Uint64(b[40:]), int(le.Uint16(b[60:]))
		if num == 0 || !fits(sh, uint64(num)*64, uint64(len(b))) {
			return
		}
		f := [][2]int{{0, 4}, {4, 4}, {24, 8}, {32, 8}, {40, 4}}[r.IntN(5)]
		off, size = int(sh)+64*r.IntN(num)+f[0], f[1]
	}
	var v uint64
	switch r.IntN(4) {
	case 0:
		v = r.Uint64()
	case 1:
		v = []uint64{0, 0xffff, 0xffffffff, 1 << 30, ^uint64(0)}[r.IntN(5)]
	case 2:
		v = uint64(len(b)) - uint64(r.IntN(64))
	default:
		v = uint64(r.IntN(256))
	}
	for i := 0; i < size; i++ {
		b[off+i] = byte(v >> (8 * i))
	}
}

// Random header mutations of a cubin, alone and in a fatbin: none that
// CheckCUDA accepts makes a trusting reader leave the image.
func TestCheckCUDAMutations(t *testing.T) {
	good := asCubin(realImages(t)["so"])
	r := rand.New(rand.NewPCG(20, 1))
	refused := 0
	for i := 0; i < 3000; i++ {
		b := bytes.Clone(good)
		for k := 1 + r.IntN(3); k > 0; k-- {
			mutate(r, b)
		}
		if i%2 == 1 {
			b = wrapFatbin(2, good, b)
		}
		if err := CheckCUDA(b); err != nil {
			refused++
			continue
		}
		if s := outOfBounds(b); s != "" {
			t.Fatalf("mutation %d accepted, but its %s runs past the image", i, s)
		}
	}
	t.Logf("%d of 3000 refused", refused)
}

// FuzzCheckCUDA gives CheckCUDA any bytes (seeded with a cubin, a fatbin
// and PTX): it never panics, and an image it accepts never makes a reader
// that trusts its headers leave it.
func FuzzCheckCUDA(f *testing.F) {
	good := asCubin(realImages(f)["so"])
	f.Add(good)
	f.Add(wrapFatbin(2, good))
	f.Add(wrapFatbin(1, []byte(".version 7.8\n.target sm_80\n\x00")))
	f.Add(cubin(80, false))
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := CheckCUDA(b); err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		if s := outOfBounds(b); s != "" {
			t.Fatalf("accepted, but its %s runs past the image", s)
		}
	})
}
