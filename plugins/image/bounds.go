package image

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// CheckCUDA checks that every offset and size in the headers of a CUDA
// image lies inside it: the CUDA driver's module load takes no size, so it
// trusts them, and one that points past the end makes it read (or copy)
// memory beyond the image. ELF images (cubins) are checked with CheckELF,
// fatbins with CheckFatbin; anything else is text (PTX), which the caller
// must pass on with a NUL after it. The error names the field and the
// bound it breaks.
func CheckCUDA(b []byte) error {
	switch {
	case bytes.HasPrefix(b, elfMagic):
		return CheckELF(b)
	case bytes.HasPrefix(b, fatbinMagic):
		return CheckFatbin(b)
	}
	return nil
}

// CheckELF checks the ELF header of b, its program and section header
// tables, the file range of every segment and section, the section name
// table and the string tables the symbol tables use: each must lie inside
// b, and the entry sizes must be those of the ELF class. It reads only
// headers and string table ends, so its work is bounded by the number of
// headers.
func CheckELF(b []byte) error {
	return checkELF(b, fmt.Sprintf("ProgDataSize %d", len(b)))
}

// fatbinCompressed is the flag of a compressed fatbin entry.
const fatbinCompressed = 0x2000

// CheckFatbin checks a CUDA fatbin: its header, and for each entry its
// header and payload inside the entries the header declares, which must
// lie inside b; an uncompressed ELF entry is checked with CheckELF. (A PTX
// entry's text is bounded by its size, not by a NUL.)
func CheckFatbin(b []byte) error {
	limit := fmt.Sprintf("ProgDataSize %d", len(b))
	le := binary.LittleEndian
	if len(b) < 16 {
		return fmt.Errorf("the 16-byte fatbin header runs past %s", limit)
	}
	hsize, fat := uint64(le.Uint16(b[6:])), le.Uint64(b[8:])
	if hsize < 16 {
		return fmt.Errorf("fatbin header size %d is less than the 16 bytes of the header", hsize)
	}
	if !fits(hsize, fat, uint64(len(b))) {
		return fmt.Errorf("fatbin header size %d + entries size %#x runs past %s", hsize, fat, limit)
	}
	end := hsize + fat
	for n, off := 0, hsize; off < end; n++ {
		rest := b[off:end]
		if len(rest) < 16 {
			if bytes.Count(rest, []byte{0}) == len(rest) {
				break // padding
			}
			return fmt.Errorf("fatbin entry %d at %#x: its 16-byte header runs past the end of the entries at %#x", n, off, end)
		}
		kind, ehsize, size := le.Uint16(rest), uint64(le.Uint32(rest[4:])), le.Uint64(rest[8:])
		if ehsize < 16 {
			return fmt.Errorf("fatbin entry %d at %#x: header size %d is less than 16 bytes", n, off, ehsize)
		}
		if !fits(ehsize, size, uint64(len(rest))) {
			return fmt.Errorf("fatbin entry %d at %#x: header size %d + payload size %#x runs past the end of the entries at %#x", n, off, ehsize, size, end)
		}
		var flags, compressed uint64
		if ehsize >= 48 {
			compressed, flags = uint64(le.Uint32(rest[16:])), le.Uint64(rest[40:])
		}
		payload := rest[ehsize : ehsize+size]
		switch {
		case flags&fatbinCompressed != 0:
			if compressed > size {
				return fmt.Errorf("fatbin entry %d at %#x: compressed size %#x is more than its payload size %#x", n, off, compressed, size)
			}
		case kind == 2 && bytes.HasPrefix(payload, elfMagic):
			if err := checkELF(payload, fmt.Sprintf("the %d-byte payload of fatbin entry %d at %#x", size, n, off)); err != nil {
				return fmt.Errorf("fatbin entry %d at %#x: %w", n, off, err)
			}
		}
		off += ehsize + size
	}
	return nil
}

// fits says whether [off, off+size) lies inside n bytes, without wrapping.
func fits(off, size, n uint64) bool { return off <= n && size <= n-off }

// elfReader reads the header fields of one ELF class and byte order.
type elfReader struct {
	b     []byte
	o     binary.ByteOrder
	is64  bool
	limit string // the bound, for messages: "ProgDataSize 1234"
}

// word reads a 32-bit (ELFCLASS32) or 64-bit field at off (inside b).
func (r *elfReader) word(off uint64) uint64 {
	if r.is64 {
		return r.o.Uint64(r.b[off:])
	}
	return uint64(r.o.Uint32(r.b[off:]))
}

func checkELF(b []byte, limit string) error {
	n := uint64(len(b))
	if n < elf.EI_NIDENT {
		return fmt.Errorf("the ELF identification (16 bytes) runs past %s", limit)
	}
	r := &elfReader{b: b, limit: limit}
	switch elf.Data(b[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
		r.o = binary.LittleEndian
	case elf.ELFDATA2MSB:
		r.o = binary.BigEndian
	default:
		return fmt.Errorf("EI_DATA %d is not a byte order", b[elf.EI_DATA])
	}
	// sizes of the ELF header, a program header, a section header and a
	// symbol; where e_phoff is and the size of an address or offset
	var ehsize, phsize, shsize, symsize, phoff, ws uint64
	switch elf.Class(b[elf.EI_CLASS]) {
	case elf.ELFCLASS32:
		ehsize, phsize, shsize, symsize, phoff, ws = 52, 32, 40, 16, 28, 4
	case elf.ELFCLASS64:
		ehsize, phsize, shsize, symsize, phoff, ws = 64, 56, 64, 24, 32, 8
		r.is64 = true
	default:
		return fmt.Errorf("EI_CLASS %d is not an ELF class", b[elf.EI_CLASS])
	}
	if n < ehsize {
		return fmt.Errorf("the %d-byte ELF header runs past %s", ehsize, limit)
	}
	eph := r.word(phoff)
	esh := r.word(phoff + ws)
	at := phoff + 2*ws + 4 + 2 // after e_flags and e_ehsize
	u16 := func(i uint64) uint64 { return uint64(r.o.Uint16(b[at+2*i:])) }
	phentsize, phnum, shentsize, shnum, shstrndx := u16(0), u16(1), u16(2), u16(3), u16(4)

	if phnum > 0 {
		if phentsize != phsize {
			return fmt.Errorf("e_phentsize %d is not the %d bytes of a program header", phentsize, phsize)
		}
		if !fits(eph, phnum*phentsize, n) {
			return fmt.Errorf("e_phoff %#x + e_phnum %d × e_phentsize %d runs past %s", eph, phnum, phentsize, limit)
		}
		for i := uint64(0); i < phnum; i++ {
			p := eph + i*phsize
			var off, filesz uint64
			if r.is64 {
				off, filesz = r.o.Uint64(b[p+8:]), r.o.Uint64(b[p+32:])
			} else {
				off, filesz = uint64(r.o.Uint32(b[p+4:])), uint64(r.o.Uint32(b[p+16:]))
			}
			// (an empty segment's offset counts too: a loader may add
			// it to the image's address whatever the size)
			if !fits(off, filesz, n) {
				return fmt.Errorf("program header %d: p_offset %#x + p_filesz %#x runs past %s", i, off, filesz, limit)
			}
		}
	}

	if esh == 0 && shnum == 0 {
		return nil // no section headers
	}
	if esh == 0 {
		return fmt.Errorf("e_shnum %d sections, but e_shoff is 0", shnum)
	}
	if shentsize != shsize {
		return fmt.Errorf("e_shentsize %d is not the %d bytes of a section header", shentsize, shsize)
	}
	if !fits(esh, shsize, n) {
		return fmt.Errorf("e_shoff %#x + e_shentsize %d runs past %s", esh, shentsize, limit)
	}
	// section header fields, of section i
	sh := func(i uint64) (name, typ, off, size, link, entsize uint64) {
		p := esh + i*shsize
		name, typ = uint64(r.o.Uint32(b[p:])), uint64(r.o.Uint32(b[p+4:]))
		q := p + 8 + 2*ws // after sh_flags and sh_addr
		off, size = r.word(q), r.word(q+ws)
		link = uint64(r.o.Uint32(b[q+2*ws:]))
		entsize = r.word(q + 2*ws + 8 + ws)
		return
	}
	count, countName := shnum, "e_shnum"
	if count == 0 { // more sections than e_shnum holds: section 0 has the count
		_, _, _, count, _, _ = sh(0)
		countName = "section 0's sh_size (e_shnum 0)"
		if count == 0 {
			count = 1
		}
	}
	if count > n/shsize || !fits(esh, count*shsize, n) {
		return fmt.Errorf("e_shoff %#x + %s %d × e_shentsize %d runs past %s", esh, countName, count, shentsize, limit)
	}
	// every section's bytes, and the string tables they name
	strtab := func(what string, i uint64) ([]byte, error) {
		_, typ, off, size, _, _ := sh(i)
		if elf.SectionType(typ) != elf.SHT_STRTAB {
			return nil, fmt.Errorf("%s: section %d is not a string table (sh_type %#x)", what, i, typ)
		}
		if size == 0 || b[off+size-1] != 0 {
			return nil, fmt.Errorf("%s: string table section %d does not end with a NUL", what, i)
		}
		return b[off : off+size], nil
	}
	for i := uint64(0); i < count; i++ {
		_, typ, off, size, _, _ := sh(i)
		st := elf.SectionType(typ)
		if st != elf.SHT_NULL && st != elf.SHT_NOBITS && !fits(off, size, n) {
			return fmt.Errorf("section %d: sh_offset %#x + sh_size %#x runs past %s", i, off, size, limit)
		}
	}
	if shstrndx == uint64(elf.SHN_XINDEX) && shnum == 0 { // only with extended numbering
		_, _, _, _, shstrndx, _ = sh(0)
	}
	if shstrndx != uint64(elf.SHN_UNDEF) {
		if shstrndx >= count {
			return fmt.Errorf("e_shstrndx %d is not a section (%d sections)", shstrndx, count)
		}
		names, err := strtab(fmt.Sprintf("e_shstrndx %d", shstrndx), shstrndx)
		if err != nil {
			return err
		}
		for i := uint64(0); i < count; i++ {
			if name, _, _, _, _, _ := sh(i); name >= uint64(len(names)) {
				return fmt.Errorf("section %d: sh_name %#x runs past the %d-byte section name table", i, name, len(names))
			}
		}
	}
	for i := uint64(0); i < count; i++ {
		_, typ, off, size, link, entsize := sh(i)
		st := elf.SectionType(typ)
		if st != elf.SHT_SYMTAB && st != elf.SHT_DYNSYM {
			continue
		}
		if entsize != symsize {
			return fmt.Errorf("symbol table section %d: sh_entsize %d is not the %d bytes of a symbol", i, entsize, symsize)
		}
		if link == 0 || link >= count {
			return fmt.Errorf("symbol table section %d: sh_link %d is not a section (%d sections)", i, link, count)
		}
		names, err := strtab(fmt.Sprintf("symbol table section %d", i), link)
		if err != nil {
			return err
		}
		for s := uint64(0); s+symsize <= size; s += symsize {
			if name := uint64(r.o.Uint32(b[off+s:])); name >= uint64(len(names)) {
				return fmt.Errorf("symbol %d of section %d: st_name %#x runs past its %d-byte string table", s/symsize, i, name, len(names))
			}
		}
	}
	return nil
}
