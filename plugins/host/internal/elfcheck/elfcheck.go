// Package elfcheck validates an ELF shared object before the system's
// dynamic loader (glibc's ld.so) sees it.
//
// ld.so trusts the images it loads: a wrong offset in a header, a
// relocation that writes outside the object or a hash chain that never ends
// makes it fault or fail an internal assertion, and either ends the
// process. Check reads every structure ld.so reads or trusts when it opens
// a shared object with dlopen(RTLD_NOW) (ELF header, program headers,
// notes, dynamic section, symbol and hash tables, version records,
// relocations, TLS, RELRO and the code pointers it calls) with bounds and
// overflow checks, and refuses what it does not understand. An accepted
// image may still contain any machine code: what a program's own code does,
// constructors included, is the program's business.
//
// Only 64-bit little-endian images are accepted, and only for the machines
// whose relocations this package knows (x86-64; AArch64 untested).
package elfcheck

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"math/bits"
	"os"
	"sort"
)

// Limits on sizes ld.so would accept but no kernel image needs. They keep
// a corrupt value from turning into a huge allocation or a long loop.
const (
	maxPhnum = 256
	maxAddr  = 1 << 47 // user-space addresses on x86-64 and AArch64
	maxSpan  = 1 << 36 // address space one image may cover
	maxTLS   = 1 << 30 // bytes of one thread's TLS block
	maxChain = 1 << 16 // entries of a version record chain
)

// Segment is a PT_LOAD program header. Addresses are relative to the load
// base.
type Segment struct {
	Vaddr, Memsz   uint64
	Offset, Filesz uint64
	Align          uint64
	Flags          elf.ProgFlag
}

func (s *Segment) end() uint64     { return s.Vaddr + s.Memsz }
func (s *Segment) fileEnd() uint64 { return s.Vaddr + s.Filesz }
func (s *Segment) exec() bool      { return s.Flags&elf.PF_X != 0 }
func (s *Segment) write() bool     { return s.Flags&elf.PF_W != 0 }

func (s *Segment) perm() string {
	p := []byte("---")
	if s.Flags&elf.PF_R != 0 {
		p[0] = 'r'
	}
	if s.write() {
		p[1] = 'w'
	}
	if s.exec() {
		p[2] = 'x'
	}
	return string(p)
}

// Symbol is an entry of the dynamic symbol table.
type Symbol struct {
	Name    string
	Value   uint64 // relative to the load base, unless Section is SHN_ABS
	Size    uint64
	Type    elf.SymType
	Bind    elf.SymBind
	Section elf.SectionIndex
	Version uint16 // the DT_VERSYM entry; 0 when the image has none
	other   byte   // st_other
}

// Defined reports whether the image itself defines the symbol.
func (s *Symbol) Defined() bool { return s.Section != elf.SHN_UNDEF }

// Image is a validated shared object.
type Image struct {
	Machine  elf.Machine
	Segments []Segment // PT_LOAD, sorted by address
	syms     []Symbol
	byName   map[string]int // defined, not hidden-versioned symbols
	calls    []Call
	bindings []Binding
	// funcStarts holds the start of every function of the static symbol
	// table (.symtab); nil when the image has none (stripped).
	funcStarts map[uint64]bool
}

// Call is a function the loader calls: DT_INIT, DT_FINI, an entry of
// DT_INIT_ARRAY or DT_FINI_ARRAY, or an indirect function's resolver.
type Call struct {
	What string
	Addr uint64 // relative to the load base
}

// Calls returns the functions the loader calls while loading and
// unloading the image (with the values the relocations give them).
func (im *Image) Calls() []Call { return im.calls }

// Binding is a word the loader sets to a symbol's address.
type Binding struct {
	Slot   uint64 // the word, relative to the load base
	Symbol string
	Value  uint64 // the image's own definition, relative to the load base; 0 if undefined
}

// Bindings returns the words relocated against symbols, by address.
func (im *Image) Bindings() []Binding { return im.bindings }

// Stripped reports whether the image has no static symbol table, so code
// pointers are only checked to lie in an executable segment.
func (im *Image) Stripped() bool { return im.funcStarts == nil }

// Lookup returns the defined dynamic symbol that an unversioned lookup of
// name (dlsym) finds in the image itself.
func (im *Image) Lookup(name string) (Symbol, bool) {
	i, ok := im.byName[name]
	if !ok {
		return Symbol{}, false
	}
	return im.syms[i], true
}

// Symbols returns the defined dynamic symbols.
func (im *Image) Symbols() []Symbol {
	var out []Symbol
	for _, s := range im.syms {
		if s.Defined() {
			out = append(out, s)
		}
	}
	return out
}

// Mapped reports whether [addr, addr+size) (relative to the load base)
// lies inside one loaded segment.
func (im *Image) Mapped(addr, size uint64) bool {
	return segmentFor(im.Segments, addr, size) != nil
}

// CheckCode checks a code pointer (relative to the load base): it must lie
// in the file-backed part of an executable segment and, when the image has
// a static symbol table, be the first instruction of a function there.
func (im *Image) CheckCode(addr uint64) error {
	return checkCode(im.Segments, im.funcStarts, addr)
}

func checkCode(segs []Segment, funcs map[uint64]bool, addr uint64) error {
	s := segmentFor(segs, addr, 1)
	if s == nil || !s.exec() || addr >= s.fileEnd() {
		return fmt.Errorf("%#x is not in the code of an executable segment", addr)
	}
	// A stripped image has nothing to say where functions start: the
	// executable segment is all that can be checked.
	if funcs != nil && !funcs[addr] {
		return fmt.Errorf("%#x is not the start of a function of the static symbol table", addr)
	}
	return nil
}

// segmentFor returns the segment whose memory holds [addr, addr+size).
func segmentFor(segs []Segment, addr, size uint64) *Segment {
	end, ok := add(addr, size)
	if !ok {
		return nil
	}
	i := sort.Search(len(segs), func(i int) bool { return segs[i].end() > addr })
	if i < len(segs) && segs[i].Vaddr <= addr && end <= segs[i].end() {
		return &segs[i]
	}
	// a zero-sized range may sit at a segment's very end
	if size == 0 {
		for k := range segs {
			if segs[k].end() == addr {
				return &segs[k]
			}
		}
	}
	return nil
}

// add returns a+b and whether it did not overflow.
func add(a, b uint64) (uint64, bool) {
	s, c := bits.Add64(a, b, 0)
	return s, c == 0
}

// mul returns a*b and whether it did not overflow.
func mul(a, b uint64) (uint64, bool) {
	hi, lo := bits.Mul64(a, b)
	return lo, hi == 0
}

func isPow2(v uint64) bool { return v != 0 && v&(v-1) == 0 }

var le = binary.LittleEndian

// relocTypes names the relocation types of a machine that the validator
// checks; any other type is refused.
type relocTypes struct {
	none, relative, globDat, jumpSlot, abs64, dtpmod64, dtpoff64 uint32
	name                                                         func(uint32) string
	otherOK                                                      byte // st_other bits allowed besides the visibility
}

var machines = map[elf.Machine]relocTypes{
	elf.EM_X86_64: {
		none: uint32(elf.R_X86_64_NONE), relative: uint32(elf.R_X86_64_RELATIVE),
		globDat: uint32(elf.R_X86_64_GLOB_DAT), jumpSlot: uint32(elf.R_X86_64_JMP_SLOT),
		abs64: uint32(elf.R_X86_64_64), dtpmod64: uint32(elf.R_X86_64_DTPMOD64),
		dtpoff64: uint32(elf.R_X86_64_DTPOFF64),
		name:     func(t uint32) string { return elf.R_X86_64(t).String() },
	},
	// Not exercised by the tests (they run on x86-64).
	elf.EM_AARCH64: {
		none: uint32(elf.R_AARCH64_NONE), relative: uint32(elf.R_AARCH64_RELATIVE),
		globDat: uint32(elf.R_AARCH64_GLOB_DAT), jumpSlot: uint32(elf.R_AARCH64_JUMP_SLOT),
		abs64: uint32(elf.R_AARCH64_ABS64), dtpmod64: uint32(elf.R_AARCH64_TLS_DTPMOD64),
		dtpoff64: uint32(elf.R_AARCH64_TLS_DTPREL64),
		name:     func(t uint32) string { return elf.R_AARCH64(t).String() },
		otherOK:  0x80, // STO_AARCH64_VARIANT_PCS
	},
}

// Check validates img as a shared object for machine, to be loaded with
// dlopen(RTLD_NOW) by glibc on a system with the current page size.
func Check(img []byte, machine elf.Machine) (*Image, error) {
	return CheckPageSize(img, machine, uint64(os.Getpagesize()))
}

// CheckPageSize is Check for a given page size (a power of two).
func CheckPageSize(img []byte, machine elf.Machine, pageSize uint64) (*Image, error) {
	if !isPow2(pageSize) {
		return nil, fmt.Errorf("page size %d is not a power of two", pageSize)
	}
	c := &checker{img: img, machine: machine, page: pageSize}
	if err := c.run(); err != nil {
		return nil, err
	}
	im := &Image{Machine: machine, Segments: c.segs, syms: c.syms, byName: c.byName, funcStarts: c.funcStarts, calls: c.calls}
	for slot, r := range c.rs.symbolic {
		s := &c.syms[r.sym]
		b := Binding{Slot: slot, Symbol: s.Name}
		if s.Defined() {
			b.Value = s.Value
		}
		im.bindings = append(im.bindings, b)
	}
	sort.Slice(im.bindings, func(i, j int) bool { return im.bindings[i].Slot < im.bindings[j].Slot })
	return im, nil
}

// checker holds the state of one validation.
type checker struct {
	img     []byte
	machine elf.Machine
	rel     relocTypes
	page    uint64

	phoff, phnum uint64
	shoff, shnum uint64
	shstrndx     uint64

	segs    []Segment
	dynamic *elf.Prog64
	tls     *elf.Prog64
	relro   *elf.Prog64

	dyn        map[elf.DynTag]uint64
	needed     []uint64 // DT_NEEDED string offsets
	strtab     []byte
	symtab     []byte
	nsyms      uint64
	syms       []Symbol
	byName     map[string]int
	versym     []byte
	verHigh    uint64 // highest version index defined or needed
	verEntries int    // version records read so far
	needName   map[string]bool

	funcStarts map[uint64]bool
	secs       []section // section headers, if any
	// ranges ld.so reads after relocation has begun: no relocation may
	// write into them.
	protected []span
	writes    []write
	rs        *relocs
	calls     []Call
}

// span is a range of addresses relative to the load base.
type span struct {
	start, end uint64
	what       string
}

func (c *checker) protect(start, size uint64, what string) {
	c.protected = append(c.protected, span{start, start + size, what})
}

func (c *checker) run() error {
	if err := c.header(); err != nil {
		return err
	}
	if err := c.programHeaders(); err != nil {
		return err
	}
	if err := c.sections(); err != nil {
		return err
	}
	if err := c.dynamicSection(); err != nil {
		return err
	}
	if err := c.symbols(); err != nil {
		return err
	}
	if err := c.versions(); err != nil {
		return err
	}
	if err := c.relocations(); err != nil {
		return err
	}
	if err := c.crossCheck(); err != nil {
		return err
	}
	return c.codePointers()
}

// header checks the ELF header.
func (c *checker) header() error {
	img := c.img
	if len(img) < 4 || string(img[:4]) != elf.ELFMAG {
		n := min(len(img), 4)
		return fmt.Errorf("not an ELF image (%d bytes, starting %q)", len(img), img[:n])
	}
	if len(img) < 64 {
		return fmt.Errorf("the image is %d bytes long, too short to be an ELF shared object", len(img))
	}
	class := elf.Class(img[elf.EI_CLASS])
	em := elf.Machine(le.Uint16(img[18:]))
	if elf.Data(img[elf.EI_DATA]) == elf.ELFDATA2MSB {
		em = elf.Machine(binary.BigEndian.Uint16(img[18:]))
	}
	if class != elf.ELFCLASS64 || em != c.machine {
		return fmt.Errorf("the image is for %s (%s), not for this %s host", em, class, c.machine)
	}
	if d := elf.Data(img[elf.EI_DATA]); d != elf.ELFDATA2LSB {
		return fmt.Errorf("the image's byte order is %s; only little-endian images are supported", d)
	}
	if t := elf.Type(le.Uint16(img[16:])); t != elf.ET_DYN {
		return fmt.Errorf("the image is an ELF %s, not a shared object (build it with -shared -fPIC)", t)
	}
	rel, ok := machines[c.machine]
	if !ok {
		return fmt.Errorf("images for %s cannot be validated (unknown relocations)", c.machine)
	}
	c.rel = rel
	if v := elf.Version(img[elf.EI_VERSION]); v != elf.EV_CURRENT {
		return fmt.Errorf("ELF identification version %d, want %d", v, elf.EV_CURRENT)
	}
	switch osabi, abiv := elf.OSABI(img[elf.EI_OSABI]), img[elf.EI_ABIVERSION]; {
	case osabi == elf.ELFOSABI_NONE && abiv == 0:
	case osabi == elf.ELFOSABI_LINUX && abiv <= 1: // GNU (unique symbols)
	default:
		return fmt.Errorf("OS ABI %s version %d is not supported (want SYSV or GNU)", osabi, abiv)
	}
	for i := elf.EI_PAD; i < elf.EI_NIDENT; i++ {
		if img[i] != 0 {
			return fmt.Errorf("byte %d of the ELF identification (padding) is %#x, not 0", i, img[i])
		}
	}
	if v := le.Uint32(img[20:]); v != uint32(elf.EV_CURRENT) {
		return fmt.Errorf("ELF version %d, want %d", v, elf.EV_CURRENT)
	}
	if v := le.Uint16(img[52:]); v != 64 {
		return fmt.Errorf("e_ehsize is %d, not 64", v)
	}
	c.phoff = le.Uint64(img[32:])
	c.shoff = le.Uint64(img[40:])
	phentsize := le.Uint16(img[54:])
	c.phnum = uint64(le.Uint16(img[56:]))
	shentsize := le.Uint16(img[58:])
	c.shnum = uint64(le.Uint16(img[60:]))
	c.shstrndx = uint64(le.Uint16(img[62:]))
	if phentsize != 56 {
		return fmt.Errorf("e_phentsize is %d, not 56", phentsize)
	}
	if c.phnum == 0 || c.phnum > maxPhnum {
		return fmt.Errorf("e_phnum is %d (want 1 to %d program headers)", c.phnum, maxPhnum)
	}
	if c.phoff%8 != 0 || c.phoff < 64 {
		return fmt.Errorf("e_phoff %#x is not an 8-byte aligned offset after the ELF header", c.phoff)
	}
	if end, ok := add(c.phoff, c.phnum*56); !ok || end > uint64(len(img)) {
		return fmt.Errorf("the %d program headers at %#x run past the end of the %d-byte image", c.phnum, c.phoff, len(img))
	}
	if c.shnum != 0 && shentsize != 64 {
		return fmt.Errorf("e_shentsize is %d, not 64", shentsize)
	}
	return nil
}

// fileRange checks that [off, off+size) lies inside the image.
func (c *checker) fileRange(off, size uint64) bool {
	end, ok := add(off, size)
	return ok && end <= uint64(len(c.img))
}

// programHeaders checks the program headers.
func (c *checker) programHeaders() error {
	n := uint64(len(c.img))
	var phdr, stack, ehFrame, property *elf.Prog64
	var notes []*elf.Prog64
	for i := uint64(0); i < c.phnum; i++ {
		b := c.img[c.phoff+i*56:]
		p := &elf.Prog64{
			Type: le.Uint32(b), Flags: le.Uint32(b[4:]), Off: le.Uint64(b[8:]), Vaddr: le.Uint64(b[16:]),
			Paddr: le.Uint64(b[24:]), Filesz: le.Uint64(b[32:]), Memsz: le.Uint64(b[40:]), Align: le.Uint64(b[48:]),
		}
		t := elf.ProgType(p.Type)
		where := fmt.Sprintf("program header %d (%s)", i, t)
		once := func(seen **elf.Prog64) error {
			if *seen != nil {
				return fmt.Errorf("%s: a second one", where)
			}
			*seen = p
			return nil
		}
		if t == elf.PT_NULL {
			continue
		}
		if end, ok := add(p.Vaddr, p.Memsz); !ok || end > maxAddr {
			return fmt.Errorf("%s: memory range [%#x, +%#x) is outside the address space", where, p.Vaddr, p.Memsz)
		}
		if p.Filesz > p.Memsz {
			return fmt.Errorf("%s: p_filesz %#x is larger than p_memsz %#x", where, p.Filesz, p.Memsz)
		}
		if !c.fileRange(p.Off, p.Filesz) {
			return fmt.Errorf("%s: file range [%#x, +%#x) runs past the end of the %d-byte image", where, p.Off, p.Filesz, n)
		}
		var err error
		switch t {
		case elf.PT_LOAD:
			err = c.loadSegment(where, p)
		case elf.PT_DYNAMIC:
			err = once(&c.dynamic)
		case elf.PT_TLS:
			err = once(&c.tls)
		case elf.PT_GNU_RELRO:
			err = once(&c.relro)
		case elf.PT_GNU_STACK:
			err = once(&stack)
		case elf.PT_GNU_EH_FRAME:
			err = once(&ehFrame)
		case elf.PT_GNU_PROPERTY:
			err = once(&property)
		case elf.PT_PHDR:
			if len(c.segs) > 0 {
				return fmt.Errorf("%s: PT_PHDR after a PT_LOAD", where)
			}
			err = once(&phdr)
		case elf.PT_NOTE:
			notes = append(notes, p)
		case elf.PT_INTERP:
			return fmt.Errorf("%s: the image names a program interpreter, so it is an executable, not a shared library", where)
		default:
			// ld.so ignores OS- and processor-specific types it does not
			// know; generic ones it does not know are refused.
			if p.Type < uint32(elf.PT_LOOS) || p.Type > uint32(elf.PT_HIPROC) {
				return fmt.Errorf("%s: unsupported segment type %#x", where, p.Type)
			}
		}
		if err != nil {
			return err
		}
	}
	if len(c.segs) == 0 {
		return fmt.Errorf("the image has no PT_LOAD segment")
	}
	if span := c.segs[len(c.segs)-1].end() - c.segs[0].Vaddr; span > maxSpan {
		return fmt.Errorf("the loaded segments span %#x bytes (at most %#x)", span, uint64(maxSpan))
	}
	if stack == nil {
		return fmt.Errorf("no PT_GNU_STACK: the loader would make every thread's stack executable")
	}
	if elf.ProgFlag(stack.Flags)&elf.PF_X != 0 {
		return fmt.Errorf("PT_GNU_STACK asks for an executable stack: the loader would make every thread's stack executable")
	}
	if c.dynamic == nil {
		return fmt.Errorf("the image has no PT_DYNAMIC segment")
	}
	d := c.dynamic
	if d.Filesz == 0 || d.Filesz != d.Memsz || d.Filesz%16 != 0 {
		return fmt.Errorf("PT_DYNAMIC: file size %#x, memory size %#x (want equal, non-zero multiples of 16)", d.Filesz, d.Memsz)
	}
	// ld.so adds the load base to address entries in place.
	if err := c.mappedFile(d, "PT_DYNAMIC", true); err != nil {
		return err
	}
	c.protect(d.Vaddr, d.Memsz, "the dynamic section")
	if phdr != nil {
		if phdr.Off != c.phoff || phdr.Filesz != c.phnum*56 {
			return fmt.Errorf("PT_PHDR: [%#x, +%#x) is not the program header table [%#x, +%#x)", phdr.Off, phdr.Filesz, c.phoff, c.phnum*56)
		}
		if err := c.mappedFile(phdr, "PT_PHDR", false); err != nil {
			return err
		}
		c.protect(phdr.Vaddr, phdr.Memsz, "the program headers")
	} else {
		// ld.so finds the table in the segment that maps it, if any.
		for i := range c.segs {
			s := &c.segs[i]
			if c.phoff >= s.Offset && c.phoff+c.phnum*56 <= s.Offset+s.Filesz {
				c.protect(s.Vaddr+(c.phoff-s.Offset), c.phnum*56, "the program headers")
				break
			}
		}
	}
	if c.tls != nil {
		if err := c.checkTLS(); err != nil {
			return err
		}
	}
	if r := c.relro; r != nil && r.Memsz > 0 {
		s := segmentFor(c.segs, r.Vaddr, r.Memsz)
		if s == nil || !s.write() {
			return fmt.Errorf("PT_GNU_RELRO [%#x, +%#x) is not inside a writable PT_LOAD", r.Vaddr, r.Memsz)
		}
	}
	if ehFrame != nil {
		if err := c.mappedFile(ehFrame, "PT_GNU_EH_FRAME", false); err != nil {
			return err
		}
		c.protect(ehFrame.Vaddr, ehFrame.Memsz, "the unwind table header")
	}
	for i, p := range notes {
		if err := c.checkNotes(fmt.Sprintf("PT_NOTE %d", i), p, false); err != nil {
			return err
		}
	}
	if property != nil {
		if err := c.mappedFile(property, "PT_GNU_PROPERTY", false); err != nil {
			return err
		}
		if err := c.checkNotes("PT_GNU_PROPERTY", property, true); err != nil {
			return err
		}
		c.protect(property.Vaddr, property.Memsz, "the GNU property notes")
	}
	return nil
}

func (c *checker) loadSegment(where string, p *elf.Prog64) error {
	s := Segment{Vaddr: p.Vaddr, Memsz: p.Memsz, Offset: p.Off, Filesz: p.Filesz, Align: p.Align, Flags: elf.ProgFlag(p.Flags)}
	if s.Memsz == 0 {
		return fmt.Errorf("%s: empty segment", where)
	}
	if s.Flags&elf.PF_R == 0 {
		return fmt.Errorf("%s: segment at %#x is not readable", where, s.Vaddr)
	}
	if !isPow2(s.Align) || s.Align < c.page || s.Align > 1<<32 {
		return fmt.Errorf("%s: p_align %#x is not a power of two from the page size %#x to 4 GiB", where, s.Align, c.page)
	}
	if (s.Vaddr-s.Offset)&(s.Align-1) != 0 {
		return fmt.Errorf("%s: p_offset %#x and p_vaddr %#x differ modulo p_align %#x", where, s.Offset, s.Vaddr, s.Align)
	}
	if k := len(c.segs); k > 0 {
		prev := &c.segs[k-1]
		if prevEnd := alignUp(prev.end(), c.page); s.Vaddr&^(c.page-1) < prevEnd {
			return fmt.Errorf("%s: segment at %#x is below or shares a page with the previous PT_LOAD [%#x, %#x)", where, s.Vaddr, prev.Vaddr, prev.end())
		}
	}
	c.segs = append(c.segs, s)
	return nil
}

func alignUp(v, a uint64) uint64 { return (v + a - 1) &^ (a - 1) }

// mappedFile checks that p's memory lies in the file-backed part of one
// PT_LOAD, at the file offset p names, and optionally that it is writable.
func (c *checker) mappedFile(p *elf.Prog64, what string, writable bool) error {
	s := segmentFor(c.segs, p.Vaddr, p.Memsz)
	if s == nil {
		return fmt.Errorf("%s [%#x, +%#x) is not inside a loaded segment", what, p.Vaddr, p.Memsz)
	}
	if p.Vaddr+p.Memsz > s.fileEnd() {
		return fmt.Errorf("%s [%#x, +%#x) runs into the zero-filled part of its segment", what, p.Vaddr, p.Memsz)
	}
	if p.Off != s.Offset+(p.Vaddr-s.Vaddr) {
		return fmt.Errorf("%s: file offset %#x does not match address %#x in its segment", what, p.Off, p.Vaddr)
	}
	if writable && !s.write() {
		return fmt.Errorf("%s [%#x, +%#x) is in a read-only segment, and the loader writes to it", what, p.Vaddr, p.Memsz)
	}
	return nil
}

// mem returns the file bytes that back [addr, addr+size) in memory, from
// one PT_LOAD.
func (c *checker) mem(addr, size uint64, what string) ([]byte, error) {
	s := segmentFor(c.segs, addr, size)
	if s == nil {
		return nil, fmt.Errorf("%s [%#x, +%#x) is not inside a loaded segment", what, addr, size)
	}
	if addr+size > s.fileEnd() {
		return nil, fmt.Errorf("%s [%#x, +%#x) runs into the zero-filled part of its segment", what, addr, size)
	}
	off := s.Offset + (addr - s.Vaddr)
	return c.img[off : off+size : off+size], nil
}

// memFrom returns the file-backed bytes from addr to the end of the file
// part of its segment.
func (c *checker) memFrom(addr uint64, what string) ([]byte, error) {
	s := segmentFor(c.segs, addr, 1)
	if s == nil || addr >= s.fileEnd() {
		return nil, fmt.Errorf("%s at %#x is not inside the file-backed part of a loaded segment", what, addr)
	}
	off := s.Offset + (addr - s.Vaddr)
	end := s.Offset + s.Filesz
	return c.img[off:end:end], nil
}

func (c *checker) checkTLS() error {
	t := c.tls
	if t.Memsz == 0 {
		if t.Filesz != 0 {
			return fmt.Errorf("PT_TLS: empty block with %#x initialised bytes", t.Filesz)
		}
		return nil
	}
	if t.Memsz > maxTLS {
		return fmt.Errorf("PT_TLS: a %#x-byte block per thread (at most %#x)", t.Memsz, uint64(maxTLS))
	}
	if t.Align > 1 && (!isPow2(t.Align) || t.Align > c.page) {
		return fmt.Errorf("PT_TLS: p_align %#x is not a power of two up to the page size", t.Align)
	}
	if t.Filesz > 0 {
		init := *t
		init.Memsz = t.Filesz
		if err := c.mappedFile(&init, "PT_TLS initialisation image", false); err != nil {
			return err
		}
	}
	return nil
}

// checkNotes walks the notes of a PT_NOTE or PT_GNU_PROPERTY segment.
func (c *checker) checkNotes(what string, p *elf.Prog64, property bool) error {
	align := p.Align
	switch {
	case property && align != 8:
		return fmt.Errorf("%s: p_align %d, want 8", what, align)
	case align <= 4:
		align = 4
	case align != 8:
		return fmt.Errorf("%s: p_align %d, want 4 or 8", what, align)
	}
	b := c.img[p.Off : p.Off+p.Filesz]
	if property && p.Filesz != p.Memsz {
		return fmt.Errorf("%s: file size %#x differs from memory size %#x", what, p.Filesz, p.Memsz)
	}
	for pos := uint64(0); pos < uint64(len(b)); {
		if uint64(len(b))-pos < 12 {
			return fmt.Errorf("%s: note at +%#x: truncated header", what, pos)
		}
		namesz, descsz, typ := uint64(le.Uint32(b[pos:])), uint64(le.Uint32(b[pos+4:])), le.Uint32(b[pos+8:])
		name := pos + 12
		desc := alignUp(name+namesz, align)
		next := alignUp(desc+descsz, align)
		if next > uint64(len(b)) {
			return fmt.Errorf("%s: note at +%#x (name %d bytes, descriptor %d bytes) runs past the end of the segment", what, pos, namesz, descsz)
		}
		if property {
			if err := c.checkProperties(what, pos, b[name:name+namesz], typ, b[desc:desc+descsz]); err != nil {
				return err
			}
		}
		pos = next
	}
	return nil
}

// checkProperties checks a NT_GNU_PROPERTY_TYPE_0 note's property array.
func (c *checker) checkProperties(what string, pos uint64, name []byte, typ uint32, desc []byte) error {
	const ntGNUPropertyType0 = 5
	if typ != ntGNUPropertyType0 || string(name) != "GNU\x00" {
		return nil
	}
	if len(desc) < 8 || len(desc)%8 != 0 {
		return fmt.Errorf("%s: property note at +%#x has a %d-byte descriptor (want a non-zero multiple of 8)", what, pos, len(desc))
	}
	last := uint32(0)
	for p := uint64(0); p < uint64(len(desc)); {
		if uint64(len(desc))-p < 8 {
			return fmt.Errorf("%s: property note at +%#x: truncated property at +%#x", what, pos, p)
		}
		pt, sz := le.Uint32(desc[p:]), uint64(le.Uint32(desc[p+4:]))
		if pt < last {
			return fmt.Errorf("%s: property note at +%#x: property types out of order (%#x after %#x)", what, pos, pt, last)
		}
		last = pt
		next := alignUp(p+8+sz, 8)
		if next > uint64(len(desc)) {
			return fmt.Errorf("%s: property note at +%#x: property %#x with %d data bytes runs past the note", what, pos, pt, sz)
		}
		p = next
	}
	return nil
}
