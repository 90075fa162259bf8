package elfcheck

import (
	"bytes"
	"debug/elf"
	"fmt"
	"sort"
	"strings"
)

// sections checks the section header table, which ld.so never reads, and
// collects the function starts of the static symbol table (.symtab) for the
// code pointer checks. An image without .symtab (stripped) leaves
// funcStarts nil.
func (c *checker) sections() error {
	if c.shnum == 0 {
		if c.shoff != 0 || c.shstrndx != 0 {
			return fmt.Errorf("e_shoff %#x and e_shstrndx %d without section headers (extended numbering is not supported)", c.shoff, c.shstrndx)
		}
		return nil
	}
	if !c.fileRange(c.shoff, c.shnum*64) {
		return fmt.Errorf("the %d section headers at %#x run past the end of the %d-byte image", c.shnum, c.shoff, len(c.img))
	}
	secs := make([]section, c.shnum)
	for i := range secs {
		b := c.img[c.shoff+uint64(i)*64:]
		secs[i] = section{name: le.Uint32(b), typ: le.Uint32(b[4:]), flags: le.Uint64(b[8:]), addr: le.Uint64(b[16:]),
			off: le.Uint64(b[24:]), size: le.Uint64(b[32:]), link: le.Uint32(b[40:]), info: le.Uint32(b[44:]), entsize: le.Uint64(b[56:])}
		s := &secs[i]
		if i == 0 {
			if s.typ != uint32(elf.SHT_NULL) || s.size != 0 || s.link != 0 {
				return fmt.Errorf("section 0 is not the null section (extended numbering is not supported)")
			}
			continue
		}
		if s.typ != uint32(elf.SHT_NOBITS) && s.typ != uint32(elf.SHT_NULL) && !c.fileRange(s.off, s.size) {
			return fmt.Errorf("section %d: file range [%#x, +%#x) runs past the end of the %d-byte image", i, s.off, s.size, len(c.img))
		}
	}
	if c.shstrndx >= c.shnum {
		return fmt.Errorf("e_shstrndx %d, but the image has %d sections", c.shstrndx, c.shnum)
	}
	if c.shstrndx != 0 {
		t := &secs[c.shstrndx]
		if t.typ != uint32(elf.SHT_STRTAB) {
			return fmt.Errorf("section %d (e_shstrndx) is not a string table", c.shstrndx)
		}
		names := c.img[t.off : t.off+t.size]
		for i := 1; i < len(secs); i++ {
			if n := uint64(secs[i].name); n >= uint64(len(names)) || bytes.IndexByte(names[n:], 0) < 0 {
				return fmt.Errorf("section %d: name offset %#x is outside the section name table", i, n)
			}
		}
	}
	c.secs = secs
	var symtab *section
	for i := range secs {
		s := &secs[i]
		if s.typ != uint32(elf.SHT_SYMTAB) {
			continue
		}
		where := fmt.Sprintf("section %d (SHT_SYMTAB)", i)
		if symtab != nil {
			return fmt.Errorf("%s: a second static symbol table", where)
		}
		symtab = s
		if s.entsize != 24 || s.size%24 != 0 {
			return fmt.Errorf("%s: entry size %d and size %d (want 24 and a multiple of 24)", where, s.entsize, s.size)
		}
		if uint64(s.link) >= c.shnum || secs[s.link].typ != uint32(elf.SHT_STRTAB) {
			return fmt.Errorf("%s: sh_link %d is not a string table", where, s.link)
		}
		str := c.img[secs[s.link].off : secs[s.link].off+secs[s.link].size]
		c.funcStarts = map[uint64]bool{}
		for k := uint64(0); k < s.size/24; k++ {
			b := c.img[s.off+k*24:]
			if n := uint64(le.Uint32(b)); n >= uint64(len(str)) && n != 0 || n < uint64(len(str)) && bytes.IndexByte(str[n:], 0) < 0 {
				return fmt.Errorf("%s: symbol %d: name offset %#x is outside its string table", where, k, n)
			}
			shndx := elf.SectionIndex(le.Uint16(b[6:]))
			if shndx >= elf.SHN_LORESERVE && shndx != elf.SHN_ABS || shndx < elf.SHN_LORESERVE && uint64(shndx) >= c.shnum {
				return fmt.Errorf("%s: symbol %d: section index %#x", where, k, uint16(shndx))
			}
			t := elf.ST_TYPE(b[4])
			if (t == elf.STT_FUNC || t == elf.STT_GNU_IFUNC) && shndx != elf.SHN_UNDEF && shndx != elf.SHN_ABS {
				c.funcStarts[le.Uint64(b[8:])] = true
			}
		}
	}
	return nil
}

// section is a section header.
type section struct {
	name, typ          uint32
	flags, addr        uint64
	off, size, entsize uint64
	link, info         uint32
}

// Section types debug/elf does not name.
const shtRELR = 19

// crossCheck compares the tables the dynamic section names with the
// section headers, where the image has them: they are two descriptions
// of the same tables, so one damaged field shows as a disagreement. A
// damaged size (say DT_PLTRELSZ) is otherwise well-formed, yet leaves
// words unrelocated that the program then calls.
func (c *checker) crossCheck() error {
	if len(c.secs) == 0 {
		return nil
	}
	// Every allocated section lies in a loaded segment, at the file offset
	// its address maps to; code sections in executable segments. This is
	// what catches a segment moved to other file bytes.
	for i := range c.secs {
		s := &c.secs[i]
		if s.flags&uint64(elf.SHF_ALLOC) == 0 || s.typ == uint32(elf.SHT_NOBITS) || s.size == 0 {
			continue
		}
		seg := segmentFor(c.segs, s.addr, s.size)
		if seg == nil || s.addr+s.size > seg.fileEnd() || s.off != seg.Offset+(s.addr-seg.Vaddr) {
			return fmt.Errorf("section %d ([%#x, +%#x) at file offset %#x) is not where the program headers load it", i, s.addr, s.size, s.off)
		}
		if s.flags&uint64(elf.SHF_EXECINSTR) != 0 && !seg.exec() {
			return fmt.Errorf("section %d ([%#x, +%#x)) holds code but is in the non-executable segment at %#x", i, s.addr, s.size, seg.Vaddr)
		}
	}
	type table struct {
		typ        elf.SectionType
		addr, size elf.DynTag // size 0: compare the start only
	}
	tables := []table{
		{elf.SHT_DYNSYM, elf.DT_SYMTAB, 0},
		{elf.SHT_GNU_HASH, elf.DT_GNU_HASH, 0},
		{elf.SHT_HASH, elf.DT_HASH, 0},
		{elf.SHT_GNU_VERSYM, elf.DT_VERSYM, 0},
		{elf.SHT_GNU_VERNEED, elf.DT_VERNEED, 0},
		{elf.SHT_GNU_VERDEF, elf.DT_VERDEF, 0},
		{elf.SHT_INIT_ARRAY, elf.DT_INIT_ARRAY, elf.DT_INIT_ARRAYSZ},
		{elf.SHT_FINI_ARRAY, elf.DT_FINI_ARRAY, elf.DT_FINI_ARRAYSZ},
		{elf.SHT_PREINIT_ARRAY, elf.DT_PREINIT_ARRAY, elf.DT_PREINIT_ARRAYSZ},
		{shtRELR, dtRELR, dtRELRSZ},
	}
	for _, t := range tables {
		var got []span
		for i := range c.secs {
			s := &c.secs[i]
			if elf.SectionType(s.typ) == t.typ && s.flags&uint64(elf.SHF_ALLOC) != 0 && s.size > 0 {
				got = append(got, span{s.addr, s.addr + s.size, ""})
			}
		}
		var want []span
		if a, ok := c.dyn[t.addr]; ok {
			want = append(want, span{a, a + c.dyn[t.size], ""})
		}
		if t.size == 0 && len(got) == 1 && len(want) == 1 {
			got[0].end, want[0].end = 0, 0
		}
		if !sameSpans(got, want) {
			return fmt.Errorf("%s disagrees with the section headers (%s sections at %v)", t.addr, t.typ, spansString(got))
		}
	}
	// The relocation tables, taken together: linkers differ on whether
	// DT_RELASZ covers the PLT relocations.
	var got, want []span
	for i := range c.secs {
		s := &c.secs[i]
		if elf.SectionType(s.typ) == elf.SHT_RELA && s.flags&uint64(elf.SHF_ALLOC) != 0 && s.size > 0 {
			got = append(got, span{s.addr, s.addr + s.size, ""})
		}
	}
	for _, t := range [][2]elf.DynTag{{elf.DT_RELA, elf.DT_RELASZ}, {elf.DT_JMPREL, elf.DT_PLTRELSZ}} {
		if a, ok := c.dyn[t[0]]; ok && c.dyn[t[1]] > 0 {
			want = append(want, span{a, a + c.dyn[t[1]], ""})
		}
	}
	if !sameSpans(got, want) {
		return fmt.Errorf("DT_RELA/DT_RELASZ and DT_JMPREL/DT_PLTRELSZ %v disagree with the relocation sections %v", spansString(want), spansString(got))
	}
	for i := range c.secs {
		s := &c.secs[i]
		switch elf.SectionType(s.typ) {
		case elf.SHT_DYNSYM:
			if s.size != c.nsyms*24 {
				return fmt.Errorf("the hash table counts %d dynamic symbols, the section headers %d", c.nsyms, s.size/24)
			}
			if str := c.secs[min(uint64(s.link), uint64(len(c.secs)-1))]; s.link == 0 || str.addr != c.dyn[elf.DT_STRTAB] || str.size != c.dyn[elf.DT_STRSZ] {
				return fmt.Errorf("DT_STRTAB/DT_STRSZ disagree with the section headers")
			}
		case elf.SHT_DYNAMIC:
			if s.addr != c.dynamic.Vaddr || s.size != c.dynamic.Memsz {
				return fmt.Errorf("PT_DYNAMIC [%#x, +%#x) disagrees with the dynamic section header [%#x, +%#x)", c.dynamic.Vaddr, c.dynamic.Memsz, s.addr, s.size)
			}
		}
	}
	return nil
}

// sameSpans compares two lists of ranges as sets of addresses.
func sameSpans(a, b []span) bool {
	norm := func(x []span) []span {
		x = append([]span(nil), x...)
		sort.Slice(x, func(i, j int) bool { return x[i].start < x[j].start })
		var out []span
		for _, s := range x {
			if n := len(out); n > 0 && s.start <= out[n-1].end {
				out[n-1].end = max(out[n-1].end, s.end)
				continue
			}
			out = append(out, s)
		}
		return out
	}
	a, b = norm(a), norm(b)
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].start != b[i].start || a[i].end != b[i].end {
			return false
		}
	}
	return true
}

func spansString(s []span) string {
	var b strings.Builder
	b.WriteString("[")
	for i, x := range s {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "[%#x, %#x)", x.start, x.end)
	}
	b.WriteString("]")
	return b.String()
}
