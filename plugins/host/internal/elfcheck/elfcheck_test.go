package elfcheck

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The repository root, from this package's directory.
const root = "../../../.."

var (
	buildDir  string
	buildMu   sync.Mutex
	buildMemo = map[string][]byte{}
)

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "elfcheck")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	buildDir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

// build compiles a C source (relative to the repository root) into a
// kernel image the way the test suites do, with extra flags, and returns
// its bytes. The compiler missing is a failure: these tests are the
// validator's evidence.
func build(t testing.TB, cc, src string, extra ...string) []byte {
	t.Helper()
	key := cc + " " + src + " " + strings.Join(extra, " ")
	buildMu.Lock()
	defer buildMu.Unlock()
	if b, ok := buildMemo[key]; ok {
		return b
	}
	out := filepath.Join(buildDir, fmt.Sprintf("k%d.so", len(buildMemo)))
	args := append([]string{"-std=gnu17", "-O2", "-fPIC", "-shared", "-I" + filepath.Join(root, "include"), filepath.Join(root, src), "-o", out}, extra...)
	if strings.HasSuffix(src, ".cc") {
		args[0] = "-std=gnu++17"
	}
	if msg, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", cc, args, err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	buildMemo[key] = b
	return b
}

func kernel(t testing.TB, name string, extra ...string) []byte {
	return build(t, "gcc", "tests/c/kernels/"+name+".c", extra...)
}

func stripped(t testing.TB, img []byte) []byte {
	t.Helper()
	in := filepath.Join(t.TempDir(), "in.so")
	out := filepath.Join(t.TempDir(), "out.so")
	if err := os.WriteFile(in, img, 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command("strip", "--strip-all", "-o", out, in).CombinedOutput(); err != nil {
		t.Fatalf("strip: %v\n%s", err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustCheck(t *testing.T, what string, img []byte) *Image {
	t.Helper()
	im, err := Check(img, elf.EM_X86_64)
	if err != nil {
		t.Fatalf("%s refused: %v", what, err)
	}
	return im
}

func TestAcceptsKernels(t *testing.T) {
	srcs, _ := filepath.Glob(filepath.Join(root, "tests/c/kernels/*.c"))
	fx, _ := filepath.Glob(filepath.Join(root, "tests/c/device/fixtures/*.c"))
	if len(srcs) < 10 || len(fx) == 0 {
		t.Fatalf("kernel sources not found (%d, %d)", len(srcs), len(fx))
	}
	for _, s := range append(srcs, fx...) {
		rel, _ := filepath.Rel(root, s)
		img := build(t, "gcc", rel)
		if im := mustCheck(t, rel, img); im.Stripped() {
			t.Fatalf("%s: has a .symtab, reported stripped", rel)
		}
		if im := mustCheck(t, rel+" stripped", stripped(t, img)); !im.Stripped() {
			t.Fatalf("%s: stripped copy not reported stripped", rel)
		}
	}
}

// Link-time variants: other hash tables, packed relative relocations,
// immediate binding, CET property notes, exported constructors, C++, lld.
func TestAcceptsVariants(t *testing.T) {
	for _, flags := range [][]string{
		{"-Wl,--hash-style=both"},
		{"-Wl,--hash-style=sysv"},
		{"-Wl,-z,pack-relative-relocs"},
		{"-Wl,-z,now"},
		{"-fcf-protection=full"},
		{"-fcf-protection=full", "-Wl,-z,ibt,-z,shstk"}, // a PT_GNU_PROPERTY segment
		{"-O0", "-g"},
	} {
		for _, k := range []string{"global_ctor", "localmem_static", "global_dtor"} {
			mustCheck(t, k+" "+strings.Join(flags, " "), kernel(t, k, flags...))
		}
	}
	im := mustCheck(t, "exported constructor", build(t, "gcc", "plugins/host/internal/elfcheck/testdata/exported_ctor.c"))
	if s, ok := im.Lookup("exported_init"); !ok || s.Type != elf.STT_FUNC {
		t.Fatalf("exported_init: %+v %v", s, ok)
	}
	mustCheck(t, "indirect function", build(t, "gcc", "plugins/host/internal/elfcheck/testdata/ifunc.c"))
	for _, cc := range []string{"g++", "clang-22"} {
		if _, err := exec.LookPath(cc); err != nil {
			t.Logf("%s not installed: its variant is not tested", cc)
			continue
		}
		if cc == "g++" {
			mustCheck(t, "C++", build(t, cc, "plugins/host/internal/elfcheck/testdata/cxx.cc"))
			continue
		}
		for _, k := range []string{"global_ctor", "localmem_static"} {
			mustCheck(t, k+" clang+lld", build(t, cc, "tests/c/kernels/"+k+".c", "-fuse-ld=lld"))
			mustCheck(t, k+" clang+lld relr", build(t, cc, "tests/c/kernels/"+k+".c", "-fuse-ld=lld", "-Wl,-z,pack-relative-relocs"))
		}
	}
}

func TestNotImages(t *testing.T) {
	obj := filepath.Join(t.TempDir(), "foo.o")
	if msg, err := exec.Command("gcc", "-c", "-fPIC", "-I"+filepath.Join(root, "include"), filepath.Join(root, "tests/c/kernels/foo.c"), "-o", obj).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	o, _ := os.ReadFile(obj)
	for _, c := range []struct {
		name string
		img  []byte
		want string
	}{
		{"empty", nil, "not an ELF image"},
		{"junk", bytes.Repeat([]byte("junk"), 100), "not an ELF image"},
		{"header only", kernel(t, "foo")[:64], "program headers"},
		{"object", o, "not a shared object"},
	} {
		if _, err := Check(c.img, elf.EM_X86_64); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := Check(kernel(t, "foo"), elf.EM_AARCH64); err == nil || !strings.Contains(err.Error(), "not for this EM_AARCH64 host") {
		t.Errorf("wrong machine: %v", err)
	}
	if _, err := Check(kernel(t, "foo"), elf.EM_RISCV); err == nil {
		t.Errorf("a machine without relocation knowledge accepted")
	}
}

// TestTruncated checks every prefix of an image: each is refused, none
// panics.
func TestTruncated(t *testing.T) {
	img := kernel(t, "global_ctor")
	for n := 0; n < len(img); n++ {
		if n >= 0x1000 && n%7 != 0 {
			continue
		}
		if _, err := Check(img[:n], elf.EM_X86_64); err == nil {
			t.Fatalf("a %d-byte prefix of a %d-byte image accepted", n, len(img))
		}
	}
}

func TestLookupAndCode(t *testing.T) {
	img := kernel(t, "global_ctor")
	im := mustCheck(t, "global_ctor", img)
	f, _ := elf.NewFile(bytes.NewReader(img))
	syms, _ := f.Symbols()
	addr := map[string]uint64{}
	for _, s := range syms {
		addr[s.Name] = s.Value
	}
	d, ok := im.Lookup("__ol_kernel_global_ctor")
	// kernel.h's ABI 4 descriptor: four uint32 fields, two code pointers,
	// num_params and reserved (40 bytes), then the one parameter's record
	// (offset and size: 8 bytes)
	if !ok || d.Type != elf.STT_OBJECT || d.Size != 48 || d.Value != addr["__ol_kernel_global_ctor"] || !im.Mapped(d.Value, 32) {
		t.Fatalf("descriptor: %+v %v", d, ok)
	}
	if g, ok := im.Lookup("global"); !ok || g.Size != 256 {
		t.Fatalf("global: %+v %v", g, ok)
	}
	if _, ok := im.Lookup("getenv"); ok {
		t.Fatal("an undefined symbol found")
	}
	if _, ok := im.Lookup("fill_global"); ok {
		t.Fatal("a static function found in the dynamic symbol table")
	}
	if err := im.CheckCode(addr["global_ctor__ol_loop"]); err != nil {
		t.Fatal(err)
	}
	if err := im.CheckCode(addr["global_ctor__ol_loop"] + 1); err == nil || !strings.Contains(err.Error(), "not the start of a function") {
		t.Fatalf("middle of a function: %v", err)
	}
	if err := im.CheckCode(d.Value); err == nil || !strings.Contains(err.Error(), "executable segment") {
		t.Fatalf("data as code: %v", err)
	}
	// A stripped image has only the segment to go by.
	sim := mustCheck(t, "stripped", stripped(t, img))
	if err := sim.CheckCode(addr["global_ctor__ol_loop"] + 1); err != nil {
		t.Fatalf("stripped, inside code: %v", err)
	}
	if err := sim.CheckCode(d.Value); err == nil {
		t.Fatal("stripped, data as code accepted")
	}
	n := 0
	for _, s := range im.Symbols() {
		if !s.Defined() {
			t.Fatalf("Symbols returned undefined %q", s.Name)
		}
		n++
	}
	if n < 3 {
		t.Fatalf("%d defined symbols", n)
	}
}

// editor changes a copy of a valid image at places found with debug/elf.
type editor struct {
	t   *testing.T
	img []byte
	f   *elf.File
}

func edit(t *testing.T, img []byte) *editor {
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		t.Fatal(err)
	}
	return &editor{t: t, img: bytes.Clone(img), f: f}
}

func (e *editor) put64(off, v uint64) { binary.LittleEndian.PutUint64(e.img[off:], v) }
func (e *editor) put32(off uint64, v uint32) {
	binary.LittleEndian.PutUint32(e.img[off:], v)
}
func (e *editor) put16(off uint64, v uint16) {
	binary.LittleEndian.PutUint16(e.img[off:], v)
}
func (e *editor) get64(off uint64) uint64 { return binary.LittleEndian.Uint64(e.img[off:]) }

// phdr returns the file offset of the first program header of type t.
func (e *editor) phdr(t elf.ProgType) uint64 {
	for i, p := range e.f.Progs {
		if p.Type == t {
			return binary.LittleEndian.Uint64(e.img[32:]) + uint64(i)*56
		}
	}
	e.t.Fatalf("no %s", t)
	return 0
}

// dyn returns the file offset of the dynamic entry with tag t.
func (e *editor) dyn(t elf.DynTag) uint64 {
	d := e.f.Section(".dynamic")
	for off := d.Offset; off < d.Offset+d.Size; off += 16 {
		if elf.DynTag(e.get64(off)) == t {
			return off
		}
	}
	e.t.Fatalf("no %s", t)
	return 0
}

func (e *editor) section(name string) *elf.Section {
	s := e.f.Section(name)
	if s == nil {
		e.t.Fatalf("no section %s", name)
	}
	return s
}

// dynsym returns the file offset of the dynamic symbol called name.
func (e *editor) dynsym(name string) uint64 {
	syms, _ := e.f.DynamicSymbols()
	for i, s := range syms {
		if s.Name == name {
			return e.section(".dynsym").Offset + uint64(i+1)*24
		}
	}
	e.t.Fatalf("no dynamic symbol %s", name)
	return 0
}

// rela returns the file offset of the relocation that writes at addr.
func (e *editor) rela(addr uint64) uint64 {
	for _, n := range []string{".rela.dyn", ".rela.plt"} {
		s := e.f.Section(n)
		if s == nil {
			continue
		}
		for off := s.Offset; off < s.Offset+s.Size; off += 24 {
			if e.get64(off) == addr {
				return off
			}
		}
	}
	e.t.Fatalf("no relocation at %#x", addr)
	return 0
}

func (e *editor) symAddr(name string) uint64 {
	syms, _ := e.f.Symbols()
	for _, s := range syms {
		if s.Name == name {
			return s.Value
		}
	}
	e.t.Fatalf("no symbol %s", name)
	return 0
}

func TestCorruptions(t *testing.T) {
	foo := kernel(t, "foo")
	ctor := kernel(t, "global_ctor")
	tls := kernel(t, "localmem_static")
	relr := kernel(t, "global_ctor", "-Wl,-z,pack-relative-relocs")
	cases := []struct {
		name string
		img  []byte
		edit func(e *editor)
		want string
	}{
		{"PT_LOAD file size past the end (the crash of the bug report)", foo, func(e *editor) {
			e.img[0x9b] ^= 0xe1
		}, "p_filesz"},
		{"PT_LOAD offset past the end", foo, func(e *editor) {
			off := e.phdr(elf.PT_LOAD) + 56*3
			e.put64(off+8, e.get64(off+8)+0x10000)
			e.put64(off+16, e.get64(off+16)+0x10000)
		}, "runs past the end of the"},
		{"code segment moved to other file bytes", foo, func(e *editor) {
			off := e.phdr(elf.PT_LOAD) + 56
			e.put64(off+8, e.get64(off+8)+0x1000)
		}, "is not where the program headers load it"},
		{"PT_LOAD misaligned", foo, func(e *editor) {
			off := e.phdr(elf.PT_LOAD) + 56
			e.put64(off+16, e.get64(off+16)+8)
		}, "differ modulo p_align"},
		{"PT_LOADs overlap", foo, func(e *editor) {
			off := e.phdr(elf.PT_LOAD) + 56
			e.put64(off+40, 0x5000)
		}, "shares a page with the previous"},
		{"PT_DYNAMIC outside the segments", foo, func(e *editor) {
			e.put64(e.phdr(elf.PT_DYNAMIC)+16, 0x100000)
		}, "PT_DYNAMIC [0x100000, +0x150) is not inside a loaded segment"},
		{"PT_DYNAMIC in a read-only segment", foo, func(e *editor) {
			off := e.phdr(elf.PT_DYNAMIC)
			e.put64(off+8, 0x100)
			e.put64(off+16, 0x100)
		}, "read-only segment"},
		{"executable stack", foo, func(e *editor) {
			e.put32(e.phdr(elf.PT_GNU_STACK)+4, uint32(elf.PF_R|elf.PF_W|elf.PF_X))
		}, "executable stack"},
		{"no PT_GNU_STACK", foo, func(e *editor) {
			e.put32(e.phdr(elf.PT_GNU_STACK), uint32(elf.PT_NULL))
		}, "no PT_GNU_STACK"},
		{"PT_INTERP", foo, func(e *editor) {
			e.put32(e.phdr(elf.PT_NOTE), uint32(elf.PT_INTERP))
		}, "interpreter"},
		{"RELRO over a read-only segment", foo, func(e *editor) {
			e.put64(e.phdr(elf.PT_GNU_RELRO)+16, 0x1000)
		}, "PT_GNU_RELRO"},
		{"GNU property runs past its note", kernel(t, "foo", "-fcf-protection=full", "-Wl,-z,ibt,-z,shstk"), func(e *editor) {
			e.put32(e.section(".note.gnu.property").Offset+16+4, 0x40)
		}, "PT_GNU_PROPERTY: property note at +0x0: property 0xc0000002 with 64 data bytes runs past the note"},
		{"GNU property misaligned", kernel(t, "foo", "-fcf-protection=full", "-Wl,-z,ibt,-z,shstk"), func(e *editor) {
			e.put64(e.phdr(elf.PT_GNU_PROPERTY)+48, 4)
		}, "PT_GNU_PROPERTY: p_align 4, want 8"},
		{"note runs past its segment", foo, func(e *editor) {
			e.put32(e.section(".note.gnu.build-id").Offset+4, 0x100)
		}, "runs past the end of the segment"},
		{"no DT_NULL", foo, func(e *editor) {
			n := e.dyn(elf.DT_NULL) - e.section(".dynamic").Offset
			off := e.phdr(elf.PT_DYNAMIC)
			e.put64(off+32, n)
			e.put64(off+40, n)
		}, "no DT_NULL terminator"},
		{"RELACOUNT lie", foo, func(e *editor) {
			off := e.dyn(elf.DT_RELACOUNT)
			e.put64(off+8, e.get64(off+8)+1)
		}, "DT_RELACOUNT says the first 5 relocations are relative"},
		{"RELACOUNT beyond the table", foo, func(e *editor) {
			e.put64(e.dyn(elf.DT_RELACOUNT)+8, 1000)
		}, "DT_RELACOUNT is 1000, but DT_RELA has 8 entries"},
		{"DT_RELAENT", foo, func(e *editor) {
			e.put64(e.dyn(elf.DT_RELAENT)+8, 16)
		}, "DT_RELAENT is 16"},
		{"DT_PLTREL is DT_REL", ctor, func(e *editor) {
			e.put64(e.dyn(elf.DT_PLTREL)+8, uint64(elf.DT_REL))
		}, "DT_PLTREL is 17"},
		{"DT_INIT_ARRAY without its size", foo, func(e *editor) {
			e.put64(e.dyn(elf.DT_INIT_ARRAYSZ), uint64(elf.DT_BIND_NOW))
		}, "all or none"},
		{"DT_TEXTREL", foo, func(e *editor) {
			e.put64(e.dyn(elf.DT_RELACOUNT), uint64(elf.DT_TEXTREL))
		}, "text relocations"},
		{"DT_AUDIT", foo, func(e *editor) {
			e.put64(e.dyn(elf.DT_RELACOUNT), uint64(elf.DT_AUDIT))
		}, "audit"},
		{"PIE", foo, func(e *editor) {
			off := e.dyn(elf.DT_RELACOUNT)
			e.put64(off, uint64(elf.DT_FLAGS_1))
			e.put64(off+8, uint64(elf.DF_1_PIE))
		}, "DF_1_PIE"},
		{"DT_STRTAB past its segment", foo, func(e *editor) {
			e.put64(e.dyn(elf.DT_STRSZ)+8, 0x10000)
		}, "string table (DT_STRTAB/DT_STRSZ)"},
		{"DT_NEEDED name outside the string table", ctor, func(e *editor) {
			e.put64(e.dyn(elf.DT_NEEDED)+8, 0x4000)
		}, "DT_NEEDED 0: string offset 0x4000 is outside"},
		{"relocation into a read-only segment", foo, func(e *editor) {
			e.put64(e.rela(e.symAddr("__ol_kernel_foo")+16), 0x1000)
		}, "read-only (r-x) segment"},
		{"relocation outside the segments", foo, func(e *editor) {
			e.put64(e.rela(e.symAddr("__ol_kernel_foo")+16), 0x7000)
		}, "not inside a loaded segment"},
		{"relocation into the dynamic section", foo, func(e *editor) {
			d := e.section(".dynamic")
			e.put64(e.rela(e.symAddr("__ol_kernel_foo")+16), d.Addr+e.dyn(elf.DT_STRTAB)-d.Offset+8)
		}, "inside the dynamic section"},
		{"two relocations of one word", foo, func(e *editor) {
			e.put64(e.rela(e.symAddr("__ol_kernel_foo")+16), e.symAddr("__dso_handle"))
		}, "both write at"},
		{"relocation symbol out of range", foo, func(e *editor) {
			off := e.section(".rela.dyn").Offset + 24*4 // the first GLOB_DAT
			e.put32(off+12, 200)
		}, "symbol 200, but the image has 7 symbols"},
		{"COPY relocation", foo, func(e *editor) {
			e.put32(e.section(".rela.dyn").Offset+24*4+8, uint32(elf.R_X86_64_COPY))
		}, "unsupported relocation type 5"},
		{"IRELATIVE relocation", foo, func(e *editor) {
			e.put32(e.section(".rela.dyn").Offset+24*4+8, uint32(elf.R_X86_64_IRELATIVE))
		}, "unsupported relocation type 37"},
		{"two GOT entries for one symbol", foo, func(e *editor) {
			off := e.section(".rela.dyn").Offset + 24*4
			e.put32(off+24+12, binary.LittleEndian.Uint32(e.img[off+12:]))
		}, "a second one for symbol"},
		{"symbol name outside the string table", foo, func(e *editor) {
			e.put32(e.dynsym("__ol_kernel_foo"), 0x7fff)
		}, "string offset 0x7fff is outside"},
		{"symbol outside the segments", foo, func(e *editor) {
			e.put64(e.dynsym("__ol_kernel_foo")+8, 0x9000)
		}, "is not inside a loaded segment"},
		{"symbol size past its segment", foo, func(e *editor) {
			e.put64(e.dynsym("__ol_kernel_foo")+16, 0x10000)
		}, "is not inside a loaded segment"},
		{"symbol name changed under its hash", foo, func(e *editor) {
			e.img[e.section(".dynstr").Offset+uint64(binary.LittleEndian.Uint32(e.img[e.dynsym("foo"):]))] = 'g'
		}, "hashes to bucket"},
		{"GNU hash bloom size", foo, func(e *editor) {
			e.put32(e.section(".gnu.hash").Offset+8, 3)
		}, "3 bloom filter words, not a power of two"},
		{"GNU hash without buckets", foo, func(e *editor) {
			e.put32(e.section(".gnu.hash").Offset, 0)
		}, "no buckets"},
		{"GNU hash bucket", foo, func(e *editor) {
			h := e.section(".gnu.hash").Offset
			nbloom := uint64(binary.LittleEndian.Uint32(e.img[h+8:]))
			e.put32(h+16+nbloom*8, 1)
		}, "bucket 0 starts at symbol 1"},
		{"GNU hash chain that does not end", foo, func(e *editor) {
			h := e.section(".gnu.hash")
			for off := h.Offset + h.Size - 8; off < h.Offset+h.Size; off += 4 {
				e.img[off] &^= 1
			}
			for off := e.section(".dynsym").Offset; off < e.section(".dynsym").Offset+e.section(".dynsym").Size; off += 4 {
				e.img[off] &^= 1
			}
		}, "symbol table of 51 symbols"},
		{"DT_HASH chain loop", kernel(t, "foo", "-Wl,--hash-style=sysv"), func(e *editor) {
			h := e.section(".hash").Offset
			nbucket := uint64(binary.LittleEndian.Uint32(e.img[h:]))
			for i := uint64(0); i < nbucket; i++ {
				if k := binary.LittleEndian.Uint32(e.img[h+8+4*i:]); k != 0 {
					e.put32(h+8+4*nbucket+4*uint64(k), k)
					return
				}
			}
		}, "reached twice"},
		{"version need names a file that is not needed", ctor, func(e *editor) {
			vn := e.section(".gnu.version_r").Offset
			e.put32(vn+4, binary.LittleEndian.Uint32(e.img[e.dynsym("global"):]))
		}, "not a DT_NEEDED library"},
		{"version need chain runs away", ctor, func(e *editor) {
			e.put32(e.section(".gnu.version_r").Offset+12, 0x100000)
		}, "longer than DT_VERNEEDNUM"},
		{"version need count", ctor, func(e *editor) {
			e.put16(e.section(".gnu.version_r").Offset+2, 2)
		}, "1 versions, its count says 2"},
		{"version need aux outside", ctor, func(e *editor) {
			e.put32(e.section(".gnu.version_r").Offset+8, 0x100000)
		}, "not inside a loaded segment"},
		{"version need record version", ctor, func(e *editor) {
			e.put16(e.section(".gnu.version_r").Offset, 2)
		}, "version 2, want 1"},
		{"version index too high", ctor, func(e *editor) {
			e.put16(e.section(".gnu.version").Offset+2, 5)
		}, "version index 5"},
		{"init_array into the middle of a function", foo, func(e *editor) {
			off := e.rela(e.section(".init_array").Addr)
			e.put64(off+16, e.get64(off+16)+1)
		}, "DT_INIT_ARRAY entry 0 (at 0x3e30): 0x10f1 is not the start of a function"},
		{"init_array into data", foo, func(e *editor) {
			e.put64(e.rela(e.section(".init_array").Addr)+16, e.symAddr("__ol_kernel_foo"))
		}, "not in the code of an executable segment"},
		{"init_array not relocated", foo, func(e *editor) {
			e.put64(e.rela(e.section(".init_array").Addr), e.symAddr("__dso_handle")+8)
		}, "not relocated"},
		{"fini_array size disagrees with its section", foo, func(e *editor) {
			e.put64(e.dyn(elf.DT_FINI_ARRAYSZ)+8, 16)
		}, "DT_FINI_ARRAY disagrees with the section headers"},
		{"fini_array not relocated (no section headers)", foo, func(e *editor) {
			e.put64(e.dyn(elf.DT_FINI_ARRAYSZ)+8, 16)
			e.noSections()
		}, "DT_FINI_ARRAY entry 1 (at 0x3e40): not relocated"},
		{"PLT relocation moved", ctor, func(e *editor) {
			e.put64(e.section(".rela.plt").Offset+24, e.section(".bss").Addr)
		}, "not at PLT GOT slot"},
		{"PLT relocations cut short", ctor, func(e *editor) {
			e.put64(e.dyn(elf.DT_PLTRELSZ)+8, 0)
		}, "disagree with the relocation sections"},
		{"symbol count disagrees with .dynsym", foo, func(e *editor) {
			s := e.section(".dynsym")
			e.put64(e.shdr(".dynsym")+32, s.Size-24)
		}, "the hash table counts 7 dynamic symbols, the section headers 6"},
		{"DT_INIT into the middle of a function", foo, func(e *editor) {
			off := e.dyn(elf.DT_INIT)
			e.put64(off+8, e.get64(off+8)+4)
		}, "DT_INIT: 0x1004 is not the start of a function"},
		{"TLS relocation without PT_TLS", tls, func(e *editor) {
			e.put32(e.phdr(elf.PT_TLS), uint32(elf.PT_NULL))
		}, "own TLS block, but it has none"},
		{"PT_TLS initialised part larger than the block", tls, func(e *editor) {
			e.put64(e.phdr(elf.PT_TLS)+32, 0x2000)
		}, "p_filesz 0x2000 is larger than p_memsz 0x1000"},
		{"RELR starts with a bitmap", relr, func(e *editor) {
			s := e.section(".relr.dyn").Offset
			e.put64(s, e.get64(s)|1)
		}, "a bitmap before any address"},
		{"RELR writes to code", relr, func(e *editor) {
			e.put64(e.section(".relr.dyn").Offset, 0x1000)
		}, "read-only (r-x) segment"},
		{"section headers past the end", foo, func(e *editor) {
			e.put64(40, uint64(len(e.img)))
		}, "section headers"},
		{"symtab linked to a non-string table", foo, func(e *editor) {
			e.put32(e.shdr(".symtab")+40, 1)
		}, "sh_link 1 is not a string table"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := edit(t, c.img)
			c.edit(e)
			_, err := Check(e.img, elf.EM_X86_64)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
			t.Log(err)
		})
	}
}

// noSections removes the section header table from the ELF header.
func (e *editor) noSections() {
	e.put64(40, 0)
	e.put16(60, 0)
	e.put16(62, 0)
}

// shdr returns the file offset of the section header of name.
func (e *editor) shdr(name string) uint64 {
	for i, s := range e.f.Sections {
		if s.Name == name {
			return binary.LittleEndian.Uint64(e.img[40:]) + uint64(i)*64
		}
	}
	e.t.Fatalf("no section %s", name)
	return 0
}

// In a stripped image a code pointer is only checked against the
// executable segments.
func TestStrippedCodePointers(t *testing.T) {
	img := stripped(t, kernel(t, "foo"))
	e := edit(t, img)
	init := e.get64(e.dyn(elf.DT_INIT_ARRAY) + 8)
	off := e.rela(init)
	e.put64(off+16, e.get64(off+16)+1)
	if _, err := Check(e.img, elf.EM_X86_64); err != nil {
		t.Fatalf("stripped, init_array into the middle of code: %v", err)
	}
	e.put64(off+16, 0x3e40)
	if _, err := Check(e.img, elf.EM_X86_64); err == nil || !strings.Contains(err.Error(), "executable segment") {
		t.Fatalf("stripped, init_array into data: %v", err)
	}
}
