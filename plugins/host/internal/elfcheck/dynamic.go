package elfcheck

import (
	"bytes"
	"debug/elf"
	"fmt"
)

// Dynamic tags glibc knows under these names but debug/elf does not.
const (
	dtRELRSZ  elf.DynTag = 35
	dtRELR    elf.DynTag = 36
	dtRELRENT elf.DynTag = 37
)

// dynTagOK lists the dynamic tags the validator understands. Every other
// tag is refused: among them the ones that make ld.so load audit or filter
// libraries (DT_AUDIT, DT_DEPAUDIT, DT_FILTER, DT_AUXILIARY), write to
// code (DT_TEXTREL), run code a shared object must not have
// (DT_PREINIT_ARRAY), skip relocation (DT_GNU_PRELINKED) or take
// relocation kinds not checked here (DT_REL, DT_TLSDESC_*).
var dynTagOK = map[elf.DynTag]bool{
	elf.DT_NEEDED: true, elf.DT_PLTRELSZ: true, elf.DT_PLTGOT: true, elf.DT_HASH: true,
	elf.DT_STRTAB: true, elf.DT_SYMTAB: true, elf.DT_RELA: true, elf.DT_RELASZ: true,
	elf.DT_RELAENT: true, elf.DT_STRSZ: true, elf.DT_SYMENT: true, elf.DT_INIT: true,
	elf.DT_FINI: true, elf.DT_SONAME: true, elf.DT_RPATH: true, elf.DT_SYMBOLIC: true,
	elf.DT_PLTREL: true, elf.DT_DEBUG: true, elf.DT_JMPREL: true, elf.DT_BIND_NOW: true,
	elf.DT_INIT_ARRAY: true, elf.DT_FINI_ARRAY: true, elf.DT_INIT_ARRAYSZ: true,
	elf.DT_FINI_ARRAYSZ: true, elf.DT_RUNPATH: true, elf.DT_FLAGS: true,
	dtRELRSZ: true, dtRELR: true, dtRELRENT: true,
	elf.DT_GNU_HASH: true, elf.DT_VERSYM: true, elf.DT_RELACOUNT: true, elf.DT_FLAGS_1: true,
	elf.DT_VERDEF: true, elf.DT_VERDEFNUM: true, elf.DT_VERNEED: true, elf.DT_VERNEEDNUM: true,
}

// DT_FLAGS and DT_FLAGS_1 bits that are accepted.
const (
	flagsOK  = uint64(elf.DF_ORIGIN | elf.DF_SYMBOLIC | elf.DF_BIND_NOW)
	flags1OK = uint64(elf.DF_1_NOW | elf.DF_1_NODELETE | elf.DF_1_INITFIRST | elf.DF_1_ORIGIN |
		elf.DF_1_NODEFLIB | elf.DF_1_NODUMP)
)

// dynamicSection reads the dynamic array and checks every table it names
// except the symbol-dependent ones (symbols, versions, relocations).
func (c *checker) dynamicSection() error {
	d := c.dynamic
	b := c.img[d.Off : d.Off+d.Filesz]
	c.dyn = map[elf.DynTag]uint64{}
	terminated := false
	for i := 0; i+16 <= len(b); i += 16 {
		tag, val := elf.DynTag(le.Uint64(b[i:])), le.Uint64(b[i+8:])
		if tag == elf.DT_NULL {
			terminated = true
			break
		}
		where := fmt.Sprintf("dynamic entry %d (%s)", i/16, tag)
		switch {
		case tag == elf.DT_TEXTREL:
			return fmt.Errorf("%s: the image has relocations in read-only segments (text relocations); build it with -fPIC", where)
		case tag == elf.DT_PREINIT_ARRAY || tag == elf.DT_PREINIT_ARRAYSZ:
			return fmt.Errorf("%s: a shared object cannot have pre-initialisation functions", where)
		case tag == elf.DT_AUDIT || tag == elf.DT_DEPAUDIT || tag == elf.DT_FILTER || tag == elf.DT_AUXILIARY:
			return fmt.Errorf("%s: audit and filter libraries are not supported", where)
		case !dynTagOK[tag]:
			return fmt.Errorf("%s: unsupported dynamic tag %#x", where, uint64(tag))
		case tag == elf.DT_NEEDED:
			c.needed = append(c.needed, val)
			continue
		}
		if _, dup := c.dyn[tag]; dup {
			return fmt.Errorf("%s: a second %s entry", where, tag)
		}
		c.dyn[tag] = val
	}
	if !terminated {
		return fmt.Errorf("the dynamic section [%#x, +%#x) has no DT_NULL terminator", d.Vaddr, d.Filesz)
	}
	if v, ok := c.dyn[elf.DT_FLAGS]; ok {
		if v&uint64(elf.DF_TEXTREL) != 0 {
			return fmt.Errorf("DT_FLAGS has DF_TEXTREL: the image has text relocations; build it with -fPIC")
		}
		if v&uint64(elf.DF_STATIC_TLS) != 0 {
			return fmt.Errorf("DT_FLAGS has DF_STATIC_TLS: the image uses the initial-exec TLS model and cannot be loaded at run time")
		}
		if v&^flagsOK != 0 {
			return fmt.Errorf("DT_FLAGS has unsupported bits %#x", v&^flagsOK)
		}
	}
	if v, ok := c.dyn[elf.DT_FLAGS_1]; ok {
		if v&uint64(elf.DF_1_PIE) != 0 {
			return fmt.Errorf("DT_FLAGS_1 has DF_1_PIE: the image is a position-independent executable, not a shared library")
		}
		if v&uint64(elf.DF_1_NOOPEN) != 0 {
			return fmt.Errorf("DT_FLAGS_1 has DF_1_NOOPEN: the image refuses to be loaded at run time")
		}
		if v&^flags1OK != 0 {
			return fmt.Errorf("DT_FLAGS_1 has unsupported bits %#x", v&^flags1OK)
		}
	}

	// string table
	strAddr, okA := c.dyn[elf.DT_STRTAB]
	strSize, okS := c.dyn[elf.DT_STRSZ]
	if !okA || !okS {
		return fmt.Errorf("the dynamic section needs both DT_STRTAB and DT_STRSZ")
	}
	var err error
	if c.strtab, err = c.mem(strAddr, strSize, "the string table (DT_STRTAB/DT_STRSZ)"); err != nil {
		return err
	}
	c.protect(strAddr, strSize, "the string table")
	c.needName = map[string]bool{}
	for i, off := range c.needed {
		s, err := c.str(off, fmt.Sprintf("DT_NEEDED %d", i))
		if err != nil {
			return err
		}
		if s == "" {
			return fmt.Errorf("DT_NEEDED %d is an empty name", i)
		}
		c.needName[s] = true
	}
	for _, t := range []elf.DynTag{elf.DT_SONAME, elf.DT_RPATH, elf.DT_RUNPATH} {
		if off, ok := c.dyn[t]; ok {
			if _, err := c.str(off, t.String()); err != nil {
				return err
			}
		}
	}
	if _, ok := c.dyn[elf.DT_SYMTAB]; !ok {
		return fmt.Errorf("the dynamic section has no DT_SYMTAB")
	}
	if v, ok := c.dyn[elf.DT_SYMENT]; ok && v != 24 {
		return fmt.Errorf("DT_SYMENT is %d, not 24", v)
	}
	if v, ok := c.dyn[elf.DT_PLTGOT]; ok {
		if s := segmentFor(c.segs, v, 8); s == nil || !s.write() {
			return fmt.Errorf("DT_PLTGOT %#x is not inside a writable segment", v)
		}
	}
	// Pairs ld.so uses together: one without the other is a NULL pointer
	// dereference in the loader.
	for _, g := range [][]elf.DynTag{
		{elf.DT_RELA, elf.DT_RELASZ, elf.DT_RELAENT},
		{elf.DT_JMPREL, elf.DT_PLTRELSZ, elf.DT_PLTREL},
		{dtRELR, dtRELRSZ, dtRELRENT},
		{elf.DT_INIT_ARRAY, elf.DT_INIT_ARRAYSZ},
		{elf.DT_FINI_ARRAY, elf.DT_FINI_ARRAYSZ},
		{elf.DT_VERDEF, elf.DT_VERDEFNUM},
		{elf.DT_VERNEED, elf.DT_VERNEEDNUM},
	} {
		n := 0
		for _, t := range g {
			if _, ok := c.dyn[t]; ok {
				n++
			}
		}
		if n != 0 && n != len(g) {
			return fmt.Errorf("the dynamic section must have all or none of %v", g)
		}
	}
	if _, ok := c.dyn[elf.DT_RELACOUNT]; ok {
		if _, ok := c.dyn[elf.DT_RELA]; !ok {
			return fmt.Errorf("DT_RELACOUNT without DT_RELA")
		}
	}
	if _, ok := c.dyn[elf.DT_VERSYM]; ok {
		_, d1 := c.dyn[elf.DT_VERDEF]
		_, d2 := c.dyn[elf.DT_VERNEED]
		if !d1 && !d2 {
			return fmt.Errorf("DT_VERSYM without DT_VERDEF or DT_VERNEED")
		}
	}
	return nil
}

// str returns the NUL-terminated string at off in the dynamic string table.
func (c *checker) str(off uint64, what string) (string, error) {
	if off >= uint64(len(c.strtab)) {
		return "", fmt.Errorf("%s: string offset %#x is outside the %d-byte string table", what, off, len(c.strtab))
	}
	i := bytes.IndexByte(c.strtab[off:], 0)
	if i < 0 {
		return "", fmt.Errorf("%s: the string at offset %#x has no terminating NUL inside the string table", what, off)
	}
	return string(c.strtab[off : off+uint64(i)]), nil
}
