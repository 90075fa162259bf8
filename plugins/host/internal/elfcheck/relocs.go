package elfcheck

import (
	"debug/elf"
	"fmt"
	"sort"
)

// maxWrites bounds the relocated words of one image.
const maxWrites = 1 << 24

// write is an 8-byte store ld.so makes while relocating.
type write struct {
	addr uint64
	what string
}

// relocs holds what the relocation pass learned about code pointer slots.
type relocs struct {
	relative map[uint64]uint64         // slot -> addend of its RELATIVE relocation
	relr     map[uint64]bool           // slots relocated by DT_RELR
	symbolic map[uint64]symReloc       // slot -> relocation against a symbol
	refs     map[uint64]map[uint32]int // symbol -> relocation type -> count
}

type symReloc struct {
	typ         uint32
	sym, addend uint64
}

// relocations checks DT_RELA, DT_JMPREL and DT_RELR: every entry's type,
// symbol and target.
func (c *checker) relocations() error {
	rs := &relocs{relative: map[uint64]uint64{}, relr: map[uint64]bool{}, symbolic: map[uint64]symReloc{}, refs: map[uint64]map[uint32]int{}}
	c.rs = rs
	relaAddr, hasRela := c.dyn[elf.DT_RELA]
	relaSize := c.dyn[elf.DT_RELASZ]
	jmpAddr, hasJmp := c.dyn[elf.DT_JMPREL]
	jmpSize := c.dyn[elf.DT_PLTRELSZ]
	if hasRela {
		if v := c.dyn[elf.DT_RELAENT]; v != 24 {
			return fmt.Errorf("DT_RELAENT is %d, not 24", v)
		}
		if relaSize%24 != 0 {
			return fmt.Errorf("DT_RELASZ %d is not a multiple of 24", relaSize)
		}
		if _, err := c.mem(relaAddr, relaSize, "the relocation table (DT_RELA/DT_RELASZ)"); err != nil {
			return err
		}
		c.protect(relaAddr, relaSize, "the relocation table")
	}
	if hasJmp {
		if v := c.dyn[elf.DT_PLTREL]; v != uint64(elf.DT_RELA) {
			return fmt.Errorf("DT_PLTREL is %d, not DT_RELA (%d)", v, elf.DT_RELA)
		}
		if jmpSize%24 != 0 {
			return fmt.Errorf("DT_PLTRELSZ %d is not a multiple of 24", jmpSize)
		}
		if _, err := c.mem(jmpAddr, jmpSize, "the PLT relocation table (DT_JMPREL/DT_PLTRELSZ)"); err != nil {
			return err
		}
		c.protect(jmpAddr, jmpSize, "the PLT relocation table")
	}
	// ld.so drops a PLT table that is the tail of the DT_RELA table from
	// that table, then runs the two in order (as one when adjacent).
	if hasRela && hasJmp {
		if relaAddr+relaSize == jmpAddr+jmpSize && jmpSize <= relaSize {
			relaSize -= jmpSize
		} else if relaAddr < jmpAddr+jmpSize && jmpAddr < relaAddr+relaSize {
			return fmt.Errorf("the DT_RELA table [%#x, +%#x) and the DT_JMPREL table [%#x, +%#x) overlap", relaAddr, relaSize, jmpAddr, jmpSize)
		}
	}
	nrela := relaSize / 24
	if n, ok := c.dyn[elf.DT_RELACOUNT]; ok && n > nrela {
		return fmt.Errorf("DT_RELACOUNT is %d, but DT_RELA has %d entries", n, nrela)
	}
	if hasRela {
		b, _ := c.mem(relaAddr, relaSize, "")
		if err := c.relaTable("DT_RELA", b, c.dyn[elf.DT_RELACOUNT]); err != nil {
			return err
		}
	}
	if hasJmp {
		b, _ := c.mem(jmpAddr, jmpSize, "")
		if err := c.relaTable("DT_JMPREL", b, 0); err != nil {
			return err
		}
		// The lazy-binding ABI pairs PLT relocation i with word 3+i of the
		// PLT's GOT: a PLT relocation anywhere else leaves a PLT slot
		// unrelocated, and the program's first call through it jumps to
		// an address relative to 0.
		got, ok := c.dyn[elf.DT_PLTGOT]
		if !ok && len(b) > 0 {
			return fmt.Errorf("PLT relocations (DT_JMPREL) without DT_PLTGOT")
		}
		for i := uint64(0); i < uint64(len(b))/24; i++ {
			if off, want := le.Uint64(b[i*24:]), got+24+8*i; off != want {
				return fmt.Errorf("DT_JMPREL relocation %d writes at %#x, not at PLT GOT slot %#x", i, off, want)
			}
		}
	}
	if a, ok := c.dyn[dtRELR]; ok {
		if err := c.relrTable(a, c.dyn[dtRELRSZ]); err != nil {
			return err
		}
	}
	if err := c.crtSlots(); err != nil {
		return err
	}
	return c.checkWrites()
}

// crtWeak lists the weak functions the compiler's start-up and shut-down
// code (crti, crtbegin) calls through its GOT when they are defined:
// profiling, transactional memory and destructor registration.
var crtWeak = []string{"__gmon_start__", "_ITM_registerTMCloneTable", "_ITM_deregisterTMCloneTable", "__cxa_finalize"}

// crtSlots checks the GOT entries that the start-up code calls while the
// image is loaded and unloaded, before any code of the program's own: each
// of these weak symbols has exactly one GOT entry (GLOB_DAT), and only
// __cxa_finalize, a real function, may also have a PLT slot. A GOT entry
// rebound to another symbol shows as a symbol without its entry.
func (c *checker) crtSlots() error {
	for i := uint64(1); i < c.nsyms; i++ {
		s := &c.syms[i]
		if s.Defined() || s.Bind != elf.STB_WEAK {
			continue
		}
		for _, name := range crtWeak {
			if s.Name != name {
				continue
			}
			for typ, n := range c.rs.refs[i] {
				ok := typ == c.rel.globDat && n == 1 || typ == c.rel.jumpSlot && name == "__cxa_finalize"
				if !ok {
					return fmt.Errorf("start-up symbol %q has a %s relocation", name, c.rel.name(typ))
				}
			}
			if c.rs.refs[i][c.rel.globDat] != 1 {
				return fmt.Errorf("start-up symbol %q has no GOT entry (GLOB_DAT relocation)", name)
			}
		}
	}
	return nil
}

func (c *checker) addWrite(addr uint64, what string) error {
	s := segmentFor(c.segs, addr, 8)
	if s == nil {
		return fmt.Errorf("%s: target [%#x, +8) is not inside a loaded segment", what, addr)
	}
	if !s.write() {
		return fmt.Errorf("%s: target %#x is in the read-only (%s) segment at %#x", what, addr, s.perm(), s.Vaddr)
	}
	if len(c.writes) >= maxWrites {
		return fmt.Errorf("%s: more than %d relocated words", what, maxWrites)
	}
	c.writes = append(c.writes, write{addr, what})
	return nil
}

func (c *checker) relaTable(table string, b []byte, nrelative uint64) error {
	r := c.rel
	for i := uint64(0); i < uint64(len(b))/24; i++ {
		e := b[i*24:]
		off, info, addend := le.Uint64(e), le.Uint64(e[8:]), le.Uint64(e[16:])
		typ, sym := uint32(info), info>>32
		what := fmt.Sprintf("%s relocation %d (%s)", table, i, r.name(typ))
		if i < nrelative && typ != r.relative {
			return fmt.Errorf("%s: DT_RELACOUNT says the first %d relocations are relative, this one is not", what, nrelative)
		}
		if sym >= c.nsyms {
			return fmt.Errorf("%s: symbol %d, but the image has %d symbols", what, sym, c.nsyms)
		}
		s := &c.syms[sym]
		switch typ {
		case r.none:
			continue
		case r.relative:
			if sym != 0 {
				return fmt.Errorf("%s: a relative relocation with symbol %d", what, sym)
			}
			c.rs.relative[off] = addend
		case r.globDat, r.jumpSlot, r.abs64:
			if sym == 0 {
				return fmt.Errorf("%s: no symbol", what)
			}
			if s.Type == elf.STT_TLS {
				return fmt.Errorf("%s: against thread-local symbol %q", what, s.Name)
			}
			if typ != r.abs64 {
				// A GOT entry or PLT slot holds the symbol's address:
				// there is no addend, and a linker makes one of each per
				// symbol, PLT slots only for functions.
				if addend != 0 {
					return fmt.Errorf("%s: addend %#x (want 0)", what, addend)
				}
				if c.rs.refs[sym][typ] > 0 {
					return fmt.Errorf("%s: a second one for symbol %q", what, s.Name)
				}
				if typ == r.jumpSlot && s.Type != elf.STT_FUNC && s.Type != elf.STT_NOTYPE && s.Type != elf.STT_GNU_IFUNC {
					return fmt.Errorf("%s: a PLT slot for %s symbol %q", what, s.Type, s.Name)
				}
			}
			c.rs.symbolic[off] = symReloc{typ, sym, addend}
		case r.dtpmod64, r.dtpoff64:
			if sym == 0 {
				if c.tls == nil || c.tls.Memsz == 0 {
					return fmt.Errorf("%s: refers to the image's own TLS block, but it has none", what)
				}
			} else if s.Type != elf.STT_TLS {
				return fmt.Errorf("%s: against %q, which is not a thread-local symbol", what, s.Name)
			}
			c.rs.symbolic[off] = symReloc{typ, sym, addend}
		default:
			return fmt.Errorf("%s: unsupported relocation type %d", what, typ)
		}
		if err := c.addWrite(off, what); err != nil {
			return err
		}
		if c.rs.refs[sym] == nil {
			c.rs.refs[sym] = map[uint32]int{}
		}
		c.rs.refs[sym][typ]++
	}
	return nil
}

// relrTable decodes a DT_RELR table: an even entry is the address of a
// word to relocate, an odd one a bitmap of the 63 words after the last.
func (c *checker) relrTable(addr, size uint64) error {
	if v := c.dyn[dtRELRENT]; v != 8 {
		return fmt.Errorf("DT_RELRENT is %d, not 8", v)
	}
	if size%8 != 0 {
		return fmt.Errorf("DT_RELRSZ %d is not a multiple of 8", size)
	}
	b, err := c.mem(addr, size, "the relative relocation table (DT_RELR/DT_RELRSZ)")
	if err != nil {
		return err
	}
	c.protect(addr, size, "the relative relocation table")
	var where uint64
	have := false
	for i := uint64(0); i < size/8; i++ {
		e := le.Uint64(b[i*8:])
		what := fmt.Sprintf("DT_RELR entry %d", i)
		if e&1 == 0 {
			if err := c.relrSlot(e, what); err != nil {
				return err
			}
			where, have = e+8, true
			continue
		}
		if !have {
			return fmt.Errorf("%s: a bitmap before any address", what)
		}
		for k := uint64(0); e>>(k+1) != 0; k++ {
			if (e>>(k+1))&1 != 0 {
				if err := c.relrSlot(where+8*k, what); err != nil {
					return err
				}
			}
		}
		if where += 63 * 8; where > maxAddr {
			return fmt.Errorf("%s: the bitmap runs past the address space", what)
		}
	}
	return nil
}

func (c *checker) relrSlot(addr uint64, what string) error {
	if err := c.addWrite(addr, what); err != nil {
		return err
	}
	c.rs.relr[addr] = true
	return nil
}

// checkWrites checks that no two relocations write the same bytes and that
// none writes into a structure the loader still reads.
func (c *checker) checkWrites() error {
	w := c.writes
	sort.Slice(w, func(i, j int) bool { return w[i].addr < w[j].addr })
	for i := 1; i < len(w); i++ {
		if w[i].addr < w[i-1].addr+8 {
			return fmt.Errorf("%s and %s both write at %#x", w[i-1].what, w[i].what, w[i].addr)
		}
	}
	p := c.protected
	sort.Slice(p, func(i, j int) bool { return p[i].start < p[j].start })
	maxEnd := make([]uint64, len(p))
	for i := range p {
		maxEnd[i] = p[i].end
		if i > 0 {
			maxEnd[i] = max(maxEnd[i], maxEnd[i-1])
		}
	}
	for _, x := range w {
		j := sort.Search(len(p), func(i int) bool { return p[i].start >= x.addr+8 })
		if j == 0 || maxEnd[j-1] <= x.addr {
			continue
		}
		for k := j - 1; k >= 0; k-- {
			if p[k].end > x.addr {
				return fmt.Errorf("%s: target %#x is inside %s [%#x, %#x), which the loader reads after relocating", x.what, x.addr, p[k].what, p[k].start, p[k].end)
			}
		}
	}
	return nil
}

// codePointers checks every address ld.so calls: DT_INIT, DT_FINI, the
// entries of DT_INIT_ARRAY and DT_FINI_ARRAY (their values after
// relocation) and the resolvers of indirect functions.
func (c *checker) codePointers() error {
	for _, t := range []elf.DynTag{elf.DT_INIT, elf.DT_FINI} {
		if v, ok := c.dyn[t]; ok {
			if err := checkCode(c.segs, c.funcStarts, v); err != nil {
				return fmt.Errorf("%s: %v", t, err)
			}
			c.calls = append(c.calls, Call{t.String(), v})
		}
	}
	for _, t := range [][2]elf.DynTag{{elf.DT_INIT_ARRAY, elf.DT_INIT_ARRAYSZ}, {elf.DT_FINI_ARRAY, elf.DT_FINI_ARRAYSZ}} {
		addr, ok := c.dyn[t[0]]
		if !ok {
			continue
		}
		size := c.dyn[t[1]]
		if size%8 != 0 {
			return fmt.Errorf("%s %d is not a multiple of 8", t[1], size)
		}
		if segmentFor(c.segs, addr, size) == nil {
			return fmt.Errorf("%s [%#x, +%#x) is not inside a loaded segment", t[0], addr, size)
		}
		for k := uint64(0); k < size/8; k++ {
			slot := addr + 8*k
			what := fmt.Sprintf("%s entry %d (at %#x)", t[0], k, slot)
			var v uint64
			if a, ok := c.rs.relative[slot]; ok {
				v = a
			} else if c.rs.relr[slot] {
				b, err := c.mem(slot, 8, what)
				if err != nil {
					return err
				}
				v = le.Uint64(b)
			} else if r, ok := c.rs.symbolic[slot]; ok {
				// An exported constructor: the loader calls the definition
				// its lookup finds, the image's own unless another library
				// interposes one of the same name.
				s := &c.syms[r.sym]
				if r.typ != c.rel.abs64 || !s.Defined() || s.Section == elf.SHN_ABS || (s.Type != elf.STT_FUNC && s.Type != elf.STT_NOTYPE) {
					return fmt.Errorf("%s: relocated against %s symbol %q, so its target cannot be checked", what, s.Type, s.Name)
				}
				v = s.Value + r.addend
			} else {
				return fmt.Errorf("%s: not relocated, so the loader would call an absolute address", what)
			}
			if err := checkCode(c.segs, c.funcStarts, v); err != nil {
				return fmt.Errorf("%s: %v", what, err)
			}
			c.calls = append(c.calls, Call{fmt.Sprintf("%s[%d]", t[0], k), v})
		}
	}
	for i := uint64(1); i < c.nsyms; i++ {
		if s := &c.syms[i]; s.Type == elf.STT_GNU_IFUNC && s.Defined() {
			if err := checkCode(c.segs, c.funcStarts, s.Value); err != nil {
				return fmt.Errorf("dynamic symbol %d (%q): indirect function resolver: %v", i, s.Name, err)
			}
			c.calls = append(c.calls, Call{"resolver of " + s.Name, s.Value})
		}
	}
	return nil
}
