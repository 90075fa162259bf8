package elfcheck

import (
	"debug/elf"
	"fmt"
)

// gnuHash is the hash function of DT_GNU_HASH tables.
func gnuHash(name string) uint32 {
	h := uint32(5381)
	for i := 0; i < len(name); i++ {
		h = h*33 + uint32(name[i])
	}
	return h
}

// sysvHash is the hash function of DT_HASH tables.
func sysvHash(name string) uint32 {
	var h uint32
	for i := 0; i < len(name); i++ {
		h = h<<4 + uint32(name[i])
		g := h & 0xf0000000
		h ^= g >> 24
		h &^= g
	}
	return h
}

// gnuTable is a parsed DT_GNU_HASH table.
type gnuTable struct {
	nbuckets, symoffset, shift uint32
	bloom                      []byte // 64-bit words
	buckets                    []byte
	chain                      []byte // entries from symoffset
}

// parseGNUHash checks the structure of the GNU hash table and returns the
// number of symbols it implies.
func (c *checker) parseGNUHash(addr uint64) (*gnuTable, uint64, error) {
	const what = "the GNU hash table (DT_GNU_HASH)"
	b, err := c.memFrom(addr, what)
	if err != nil {
		return nil, 0, err
	}
	if len(b) < 16 {
		return nil, 0, fmt.Errorf("%s at %#x: truncated header", what, addr)
	}
	g := &gnuTable{nbuckets: le.Uint32(b), symoffset: le.Uint32(b[4:]), shift: le.Uint32(b[12:])}
	nbloom := uint64(le.Uint32(b[8:]))
	if g.nbuckets == 0 {
		return nil, 0, fmt.Errorf("%s: no buckets", what)
	}
	if !isPow2(nbloom) {
		return nil, 0, fmt.Errorf("%s: %d bloom filter words, not a power of two", what, nbloom)
	}
	if g.shift >= 32 {
		return nil, 0, fmt.Errorf("%s: bloom filter shift %d (want less than 32)", what, g.shift)
	}
	head := 16 + nbloom*8 + uint64(g.nbuckets)*4
	if head > uint64(len(b)) {
		return nil, 0, fmt.Errorf("%s: %d bloom words and %d buckets run past the file-backed part of their segment", what, nbloom, g.nbuckets)
	}
	g.bloom = b[16 : 16+nbloom*8]
	g.buckets = b[16+nbloom*8 : head]
	chain := b[head:]
	// Symbols are sorted by bucket: the non-empty buckets start at
	// increasing indices, the first at symoffset, and each chain ends
	// (low bit set) just before the next one starts.
	n := uint64(g.symoffset)
	for i := uint64(0); i < uint64(g.nbuckets); i++ {
		start := uint64(le.Uint32(g.buckets[i*4:]))
		if start == 0 {
			continue
		}
		if start != n {
			return nil, 0, fmt.Errorf("%s: bucket %d starts at symbol %d, want %d", what, i, start, n)
		}
		for k := start; ; k++ {
			pos := (k - uint64(g.symoffset)) * 4
			if pos+4 > uint64(len(chain)) {
				return nil, 0, fmt.Errorf("%s: the chain of bucket %d runs past the file-backed part of its segment", what, i)
			}
			if le.Uint32(chain[pos:])&1 != 0 {
				n = k + 1
				break
			}
		}
	}
	g.chain = chain[:(n-uint64(g.symoffset))*4]
	c.protect(addr, head+uint64(len(g.chain)), "the GNU hash table")
	return g, n, nil
}

// sysvTable is a parsed DT_HASH table.
type sysvTable struct {
	buckets, chains []byte
}

func (c *checker) parseSysvHash(addr uint64) (*sysvTable, uint64, error) {
	const what = "the hash table (DT_HASH)"
	b, err := c.memFrom(addr, what)
	if err != nil {
		return nil, 0, err
	}
	if len(b) < 8 {
		return nil, 0, fmt.Errorf("%s at %#x: truncated header", what, addr)
	}
	nbucket, nchain := uint64(le.Uint32(b)), uint64(le.Uint32(b[4:]))
	if nbucket == 0 {
		return nil, 0, fmt.Errorf("%s: no buckets", what)
	}
	size := 8 + 4*(nbucket+nchain)
	if size > uint64(len(b)) {
		return nil, 0, fmt.Errorf("%s: %d buckets and %d chain entries run past the file-backed part of their segment", what, nbucket, nchain)
	}
	t := &sysvTable{buckets: b[8 : 8+4*nbucket], chains: b[8+4*nbucket : size]}
	// Every symbol is on at most one chain, once: this bounds every walk.
	seen := make([]bool, nchain)
	for i := uint64(0); i < nbucket; i++ {
		for k := uint64(le.Uint32(t.buckets[i*4:])); k != 0; k = uint64(le.Uint32(t.chains[k*4:])) {
			if k >= nchain {
				return nil, 0, fmt.Errorf("%s: bucket %d reaches symbol %d of %d", what, i, k, nchain)
			}
			if seen[k] {
				return nil, 0, fmt.Errorf("%s: symbol %d is reached twice (chains loop or merge)", what, k)
			}
			seen[k] = true
		}
	}
	c.protect(addr, size, "the hash table")
	return t, nchain, nil
}

// symbols derives the number of dynamic symbols from the hash tables and
// checks every symbol.
func (c *checker) symbols() error {
	var gnu *gnuTable
	var sysv *sysvTable
	n := uint64(0)
	if a, ok := c.dyn[elf.DT_GNU_HASH]; ok {
		var err error
		if gnu, n, err = c.parseGNUHash(a); err != nil {
			return err
		}
	}
	if a, ok := c.dyn[elf.DT_HASH]; ok {
		t, n2, err := c.parseSysvHash(a)
		if err != nil {
			return err
		}
		if gnu != nil && n2 != n {
			return fmt.Errorf("DT_HASH counts %d symbols, DT_GNU_HASH %d", n2, n)
		}
		sysv, n = t, n2
	}
	if gnu == nil && sysv == nil {
		return fmt.Errorf("the image has no symbol hash table (DT_GNU_HASH or DT_HASH)")
	}
	if n == 0 {
		return fmt.Errorf("the hash table counts no symbols (not even the null symbol)")
	}
	c.nsyms = n
	symAddr := c.dyn[elf.DT_SYMTAB]
	size, ok := mul(n, 24)
	if !ok {
		return fmt.Errorf("%d symbols: too many", n)
	}
	var err error
	if c.symtab, err = c.mem(symAddr, size, fmt.Sprintf("the symbol table of %d symbols (DT_SYMTAB)", n)); err != nil {
		return err
	}
	c.protect(symAddr, size, "the symbol table")
	if a, ok := c.dyn[elf.DT_VERSYM]; ok {
		if c.versym, err = c.mem(a, 2*n, fmt.Sprintf("the version table of %d symbols (DT_VERSYM)", n)); err != nil {
			return err
		}
		c.protect(a, 2*n, "the symbol version table")
	}
	for _, b := range c.symtab[:24] {
		if b != 0 {
			return fmt.Errorf("dynamic symbol 0 is not all zeros")
		}
	}
	c.syms = make([]Symbol, n)
	c.byName = map[string]int{}
	dup := map[string]bool{}
	for i := uint64(1); i < n; i++ {
		b := c.symtab[i*24:]
		name, err := c.str(uint64(le.Uint32(b)), fmt.Sprintf("dynamic symbol %d: name", i))
		if err != nil {
			return err
		}
		s := Symbol{Name: name, Type: elf.ST_TYPE(b[4]), Bind: elf.ST_BIND(b[4]), other: b[5],
			Section: elf.SectionIndex(le.Uint16(b[6:])), Value: le.Uint64(b[8:]), Size: le.Uint64(b[16:])}
		if c.versym != nil {
			s.Version = le.Uint16(c.versym[i*2:])
		}
		if err := c.checkSymbol(&s); err != nil {
			return fmt.Errorf("dynamic symbol %d (%q): %v", i, name, err)
		}
		c.syms[i] = s
		if s.Defined() && s.Version&0x8000 == 0 {
			if _, ok := c.byName[name]; ok {
				dup[name] = true
			}
			c.byName[name] = int(i)
		}
	}
	// Which of two same-named definitions a lookup finds depends on
	// version details: answer neither.
	for name := range dup {
		delete(c.byName, name)
	}
	if gnu != nil {
		if err := c.checkGNUHashes(gnu); err != nil {
			return err
		}
	}
	if sysv != nil {
		return c.checkSysvHashes(sysv)
	}
	return nil
}

func (c *checker) checkSymbol(s *Symbol) error {
	switch s.Bind {
	case elf.STB_LOCAL, elf.STB_GLOBAL, elf.STB_WEAK, elf.STB_LOOS: // STB_LOOS is STB_GNU_UNIQUE
	default:
		return fmt.Errorf("unsupported binding %s", s.Bind)
	}
	switch s.Type {
	case elf.STT_NOTYPE, elf.STT_OBJECT, elf.STT_FUNC, elf.STT_SECTION, elf.STT_FILE, elf.STT_TLS, elf.STT_GNU_IFUNC:
	default:
		return fmt.Errorf("unsupported type %s", s.Type)
	}
	if s.Version&0x7fff > 0 && c.versym == nil {
		return fmt.Errorf("version index without a version table")
	}
	vis := elf.ST_VISIBILITY(s.other)
	if extra := s.other &^ 3 &^ c.rel.otherOK; extra != 0 {
		return fmt.Errorf("unsupported st_other bits %#x", extra)
	}
	if s.Section == elf.SHN_UNDEF {
		// The loader binds a local or non-default undefined symbol to the
		// image itself, at the load base: a linker never makes one.
		if s.Bind != elf.STB_GLOBAL && s.Bind != elf.STB_WEAK {
			return fmt.Errorf("an undefined %s symbol", s.Bind)
		}
		if vis != elf.STV_DEFAULT {
			return fmt.Errorf("an undefined %s symbol", vis)
		}
		switch s.Type {
		case elf.STT_NOTYPE, elf.STT_OBJECT, elf.STT_FUNC, elf.STT_TLS:
		default:
			return fmt.Errorf("an undefined %s symbol", s.Type)
		}
		return nil
	}
	// A linker turns hidden and internal symbols into local ones.
	if vis != elf.STV_DEFAULT && vis != elf.STV_PROTECTED {
		return fmt.Errorf("a defined %s symbol", vis)
	}
	switch sec := s.Section; {
	case sec == elf.SHN_ABS:
		if s.Type == elf.STT_GNU_IFUNC || s.Type == elf.STT_TLS {
			return fmt.Errorf("an absolute %s symbol", s.Type)
		}
		return nil
	case sec >= elf.SHN_LORESERVE:
		return fmt.Errorf("unsupported section index %#x", uint16(sec))
	case c.shnum != 0 && uint64(sec) >= c.shnum:
		return fmt.Errorf("section index %d, but the image has %d sections", sec, c.shnum)
	}
	if s.Type == elf.STT_TLS {
		if c.tls == nil || c.tls.Memsz == 0 {
			return fmt.Errorf("a thread-local symbol in an image without PT_TLS")
		}
		if end, ok := add(s.Value, s.Size); !ok || end > c.tls.Memsz {
			return fmt.Errorf("thread-local [%#x, +%#x) is outside the %#x-byte TLS block", s.Value, s.Size, c.tls.Memsz)
		}
		return nil
	}
	seg := segmentFor(c.segs, s.Value, s.Size)
	if seg == nil {
		return fmt.Errorf("[%#x, +%#x) is not inside a loaded segment", s.Value, s.Size)
	}
	if s.Type == elf.STT_FUNC {
		// Calls bound to it land here: a function of the program.
		if err := checkCode(c.segs, c.funcStarts, s.Value); err != nil {
			return fmt.Errorf("function: %v", err)
		}
	}
	return nil
}

// checkGNUHashes checks that every hashed symbol is in the bucket, chain
// entry and bloom filter bits its name hashes to.
func (c *checker) checkGNUHashes(g *gnuTable) error {
	nbloom := uint64(len(g.bloom) / 8)
	for j := uint64(0); j < uint64(g.nbuckets); j++ {
		start := uint64(le.Uint32(g.buckets[j*4:]))
		if start == 0 {
			continue
		}
		for i := start; ; i++ {
			s := &c.syms[i]
			h := gnuHash(s.Name)
			if uint64(h%g.nbuckets) != j {
				return fmt.Errorf("the GNU hash table: symbol %d (%q) is in bucket %d, its name hashes to bucket %d", i, s.Name, j, h%g.nbuckets)
			}
			e := le.Uint32(g.chain[(i-uint64(g.symoffset))*4:])
			if (e^h)>>1 != 0 {
				return fmt.Errorf("the GNU hash table: the chain entry of symbol %d (%q) does not match its name", i, s.Name)
			}
			w := le.Uint64(g.bloom[((uint64(h)/64)&(nbloom-1))*8:])
			if w&(1<<(h%64)) == 0 || w&(1<<((h>>g.shift)%64)) == 0 {
				return fmt.Errorf("the GNU hash table: the bloom filter does not admit symbol %d (%q)", i, s.Name)
			}
			if e&1 != 0 {
				break
			}
		}
	}
	return nil
}

func (c *checker) checkSysvHashes(t *sysvTable) error {
	nbucket := uint64(len(t.buckets) / 4)
	for i := uint64(0); i < nbucket; i++ {
		for k := uint64(le.Uint32(t.buckets[i*4:])); k != 0; k = uint64(le.Uint32(t.chains[k*4:])) {
			s := &c.syms[k]
			if h := uint64(sysvHash(s.Name)) % nbucket; h != i {
				return fmt.Errorf("the hash table: symbol %d (%q) is in bucket %d, its name hashes to bucket %d", k, s.Name, i, h)
			}
		}
	}
	return nil
}

// versions checks DT_VERNEED and DT_VERDEF and the version index of every
// symbol.
func (c *checker) versions() error {
	if a, ok := c.dyn[elf.DT_VERNEED]; ok {
		if err := c.verneed(a, c.dyn[elf.DT_VERNEEDNUM]); err != nil {
			return err
		}
	}
	if a, ok := c.dyn[elf.DT_VERDEF]; ok {
		if err := c.verdef(a, c.dyn[elf.DT_VERDEFNUM]); err != nil {
			return err
		}
	}
	for i := uint64(1); i < c.nsyms; i++ {
		if v := uint64(c.syms[i].Version & 0x7fff); v > c.verHigh {
			return fmt.Errorf("dynamic symbol %d (%q): version index %d, but the highest defined or needed version is %d", i, c.syms[i].Name, v, c.verHigh)
		}
	}
	return nil
}

// entry returns size bytes at addr+off (all file-backed) and records them as
// read by the loader.
func (c *checker) entry(addr, off, size uint64, what string) (uint64, []byte, error) {
	if c.verEntries++; c.verEntries > maxChain {
		return 0, nil, fmt.Errorf("%s: more than %d version records", what, maxChain)
	}
	a, ok := add(addr, off)
	if !ok {
		return 0, nil, fmt.Errorf("%s: address overflow", what)
	}
	b, err := c.mem(a, size, what)
	if err != nil {
		return 0, nil, err
	}
	c.protect(a, size, what)
	return a, b, nil
}

func (c *checker) verneed(addr, count uint64) error {
	if count == 0 || count > maxChain {
		return fmt.Errorf("DT_VERNEEDNUM is %d", count)
	}
	a, off := addr, uint64(0)
	for n := uint64(0); ; n++ {
		what := fmt.Sprintf("version need record %d", n)
		if n >= count {
			return fmt.Errorf("the version need chain is longer than DT_VERNEEDNUM %d", count)
		}
		var b []byte
		var err error
		if a, b, err = c.entry(a, off, 16, what); err != nil {
			return err
		}
		if v := le.Uint16(b); v != 1 {
			return fmt.Errorf("%s: version %d, want 1", what, v)
		}
		cnt, file, aux := uint64(le.Uint16(b[2:])), uint64(le.Uint32(b[4:])), uint64(le.Uint32(b[8:]))
		name, err := c.str(file, what+": file name")
		if err != nil {
			return err
		}
		what = fmt.Sprintf("%s (%s)", what, name)
		// ld.so asserts that each file named here is a loaded dependency.
		if !c.needName[name] {
			return fmt.Errorf("%s: not a DT_NEEDED library", what)
		}
		x, xoff := a, aux
		for k := uint64(0); ; k++ {
			if k >= cnt {
				return fmt.Errorf("%s: more versions than its count %d", what, cnt)
			}
			awhat := fmt.Sprintf("%s, version %d", what, k)
			var ab []byte
			if x, ab, err = c.entry(x, xoff, 16, awhat); err != nil {
				return err
			}
			if _, err := c.str(uint64(le.Uint32(ab[8:])), awhat+": name"); err != nil {
				return err
			}
			idx := uint64(le.Uint16(ab[6:]) & 0x7fff)
			if idx < 2 {
				return fmt.Errorf("%s: version index %d (0 and 1 are reserved)", awhat, idx)
			}
			c.verHigh = max(c.verHigh, idx)
			if xoff = uint64(le.Uint32(ab[12:])); xoff == 0 {
				if k+1 != cnt {
					return fmt.Errorf("%s: %d versions, its count says %d", what, k+1, cnt)
				}
				break
			}
		}
		if off = uint64(le.Uint32(b[12:])); off == 0 {
			if n+1 != count {
				return fmt.Errorf("the version need chain has %d records, DT_VERNEEDNUM says %d", n+1, count)
			}
			return nil
		}
	}
}

func (c *checker) verdef(addr, count uint64) error {
	if count == 0 || count > maxChain {
		return fmt.Errorf("DT_VERDEFNUM is %d", count)
	}
	a, off := addr, uint64(0)
	for n := uint64(0); ; n++ {
		what := fmt.Sprintf("version definition %d", n)
		if n >= count {
			return fmt.Errorf("the version definition chain is longer than DT_VERDEFNUM %d", count)
		}
		var b []byte
		var err error
		if a, b, err = c.entry(a, off, 20, what); err != nil {
			return err
		}
		if v := le.Uint16(b); v != 1 {
			return fmt.Errorf("%s: version %d, want 1", what, v)
		}
		idx, cnt, aux := uint64(le.Uint16(b[4:])&0x7fff), uint64(le.Uint16(b[6:])), uint64(le.Uint32(b[12:]))
		if idx == 0 {
			return fmt.Errorf("%s: version index 0 is reserved", what)
		}
		if cnt == 0 {
			return fmt.Errorf("%s: no name (vd_cnt is 0)", what)
		}
		c.verHigh = max(c.verHigh, idx)
		x, xoff := a, aux
		for k := uint64(0); ; k++ {
			if k >= cnt {
				return fmt.Errorf("%s: more names than its count %d", what, cnt)
			}
			awhat := fmt.Sprintf("%s, name %d", what, k)
			var ab []byte
			if x, ab, err = c.entry(x, xoff, 8, awhat); err != nil {
				return err
			}
			if _, err := c.str(uint64(le.Uint32(ab)), awhat); err != nil {
				return err
			}
			if xoff = uint64(le.Uint32(ab[4:])); xoff == 0 {
				if k+1 != cnt {
					return fmt.Errorf("%s: %d names, its count says %d", what, k+1, cnt)
				}
				break
			}
		}
		if off = uint64(le.Uint32(b[16:])); off == 0 {
			if n+1 != count {
				return fmt.Errorf("the version definition chain has %d records, DT_VERDEFNUM says %d", n+1, count)
			}
			return nil
		}
	}
}
