package host

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/host/internal/elfcheck"
	"github.com/liboffload-go/liboffload-go/plugins/image"
)

// fuzzImage is a kernel image the fuzz target damages.
type fuzzImage struct {
	name    string // kernel
	global  string // a global variable, or ""
	img     []byte
	targets []uint32 // file offsets outside the executable segments
	clean   *elfcheck.Image
}

// buildKernel compiles tests/c/kernels/<name>.c as the test suites do.
func buildKernel(tb testing.TB, dir, name string, flags ...string) []byte {
	tb.Helper()
	out := filepath.Join(dir, name+".so")
	args := append([]string{"-std=gnu17", "-O2", "-fPIC", "-shared", "-I../../include"}, flags...)
	cmd := exec.Command("gcc", append(args, "../../tests/c/kernels/"+name+".c", "-o", out)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("compiling %s: %v\n%s", name, err, msg)
	}
	img, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	return img
}

// fuzzImages builds the images and lists, for each, the bytes the fuzz
// target may change: every byte outside the file part of the executable
// segments. Changed machine code is a different program, free to do
// whatever a program may do (crash included); that is the program's
// business, not the loader's, so code bytes are left alone.
func fuzzImages(tb testing.TB, dir string) []fuzzImage {
	var out []fuzzImage
	for _, k := range []struct{ name, global string }{
		{"foo", ""}, {"global_ctor", "global"}, {"localmem_static", ""},
	} {
		img := buildKernel(tb, dir, k.name)
		f, err := elf.NewFile(bytes.NewReader(img))
		if err != nil {
			tb.Fatal(err)
		}
		var targets []uint32
		for off := range img {
			code := false
			for _, p := range f.Progs {
				if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && uint64(off) >= p.Off && uint64(off) < p.Off+p.Filesz {
					code = true
				}
			}
			if !code {
				targets = append(targets, uint32(off))
			}
		}
		clean, err := elfcheck.Check(img, image.HostMachine())
		if err != nil {
			tb.Fatalf("%s refused: %v", k.name, err)
		}
		out = append(out, fuzzImage{name: k.name, global: k.global, img: img, targets: targets, clean: clean})
	}
	return out
}

// mutate applies a recipe: its first byte picks the image, then each group
// of 4 bytes is a target index (3 bytes, little-endian, modulo the number
// of targets) and a value XORed into that byte.
func mutate(images []fuzzImage, recipe []byte) (*fuzzImage, []byte) {
	if len(recipe) == 0 {
		return &images[0], bytes.Clone(images[0].img)
	}
	im := &images[int(recipe[0])%len(images)]
	img := bytes.Clone(im.img)
	for r := recipe[1:]; len(r) >= 4 && len(r) <= 4*64; r = r[4:] {
		i := uint32(r[0]) | uint32(r[1])<<8 | uint32(r[2])<<16
		img[im.targets[i%uint32(len(im.targets))]] ^= r[3]
	}
	return im, img
}

// recipeAt builds a recipe that XORs x into the byte at file offset off.
func recipeAt(images []fuzzImage, image int, pairs ...[2]uint32) []byte {
	r := []byte{byte(image)}
	for _, p := range pairs {
		idx := 0
		for i, t := range images[image].targets {
			if t == p[0] {
				idx = i
			}
		}
		r = append(r, byte(idx), byte(idx>>8), byte(idx>>16), byte(p[1]))
	}
	return r
}

// rewired reports whether a damaged image that passes validation is a
// different program: the loader would call other functions of it than the
// intact image's (DT_INIT, constructors, destructors), or bind relocated
// words to other symbols. Each of those functions is a real function of
// the program (validation checks that), but running one that was not
// meant to run is like running changed machine code: the program's
// business. Such images are not loaded.
func rewired(im *fuzzImage, img []byte) bool {
	v, err := elfcheck.Check(img, image.HostMachine())
	if err != nil {
		return false
	}
	return !slices.Equal(v.Calls(), im.clean.Calls()) || !slices.Equal(v.Bindings(), im.clean.Bindings())
}

// FuzzLoadProgram damages valid kernel images outside their machine code
// and loads them: each must be refused with OL_ERRC_INVALID_BINARY and a
// reason, or load, answer symbol queries and unload. Nothing may end the
// process. `make fuzz` runs it for 10,000 inputs; `make test` briefly.
func FuzzLoadProgram(f *testing.F) {
	images := fuzzImages(f, f.TempDir())
	f.Add([]byte{0})
	f.Add([]byte{1})
	f.Add([]byte{2})
	f.Add(recipeAt(images, 0, [2]uint32{0x9b, 0xe1}))      // the crash of the bug report
	f.Add(recipeAt(images, 0, [2]uint32{0x398 + 8, 0x01})) // a relative relocation's type
	f.Add(recipeAt(images, 1, [2]uint32{0x20, 0x10}, [2]uint32{0x18, 0x7f}))
	f.Add([]byte{1, 0x10, 0x02, 0, 0xff, 0x33, 0x01, 0, 0x80, 0x44, 0x04, 0, 0x01})
	f.Add([]byte{2, 0x00, 0x03, 0, 0x01, 0x35, 0x02, 0, 0x10})
	d := &Device{}
	f.Fuzz(func(t *testing.T, recipe []byte) {
		im, img := mutate(images, recipe)
		if rewired(im, img) {
			return
		}
		p, err := d.LoadProgram(img)
		if err != nil {
			var oe *ol.Error
			if !errors.As(err, &oe) || oe.Code != ol.ErrcInvalidBinary || oe.Details == "" {
				t.Fatalf("LoadProgram: %v, want OL_ERRC_INVALID_BINARY with a reason", err)
			}
			return
		}
		defer func() {
			if err := p.Unload(); err != nil {
				t.Fatalf("Unload: %v", err)
			}
		}()
		for _, name := range []string{im.name, "foo", "__ol_kernel_" + im.name, "getenv", ""} {
			if _, err := p.Kernel(name); err != nil {
				var oe *ol.Error
				if !errors.As(err, &oe) || oe.Details == "" {
					t.Fatalf("Kernel(%q): %v", name, err)
				}
			}
		}
		for _, name := range []string{im.global, "global", "__ol_kernel_" + im.name, im.name} {
			if addr, size, err := p.Global(name); err == nil && (addr == 0 || size > 1<<30) {
				t.Fatalf("Global(%q) = %#x, %d", name, addr, size)
			}
		}
	})
}

// A program the loader cannot unload (built with -z nodelete) stays in the
// process after olDestroyProgram, under the path it was loaded by. A later
// program must still be loaded from its own image, not be handed the one
// that stayed because its in-memory file got the same descriptor number.
func TestProgramAfterOneThatStays(t *testing.T) {
	dir := t.TempDir()
	stays := buildKernel(t, dir, "foo", "-Wl,-z,nodelete")
	later := buildKernel(t, dir, "global_ctor")
	d := &Device{}
	for round := range 3 {
		p, err := d.LoadProgram(stays)
		if err != nil {
			t.Fatalf("round %d: loading the -z nodelete program: %v", round, err)
		}
		if _, err := p.Kernel("foo"); err != nil {
			t.Fatalf("round %d: Kernel(foo): %v", round, err)
		}
		if err := p.Unload(); err != nil {
			t.Fatal(err)
		}
		q, err := d.LoadProgram(later)
		if err != nil {
			t.Fatalf("round %d: loading the next program: %v", round, err)
		}
		if _, err := q.Kernel("global_ctor"); err != nil {
			t.Errorf("round %d: the next program's kernel: %v", round, err)
		}
		if _, err := q.Kernel("foo"); err == nil {
			t.Errorf("round %d: the next program answers for the earlier program's kernel foo", round)
		}
		if _, _, err := q.Global("global"); err != nil {
			t.Errorf("round %d: the next program's global: %v", round, err)
		}
		if err := q.Unload(); err != nil {
			t.Fatal(err)
		}
	}
}

// The descriptor's entry points are checked against the image after load.
func TestKernelEntryPointsChecked(t *testing.T) {
	img := buildKernel(t, t.TempDir(), "foo")
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := f.DynamicSymbols()
	var desc uint64
	for _, s := range syms {
		if s.Name == "__ol_kernel_foo" {
			desc = s.Value
		}
	}
	rela := f.Section(".rela.dyn")
	slot := uint64(0)
	for off := rela.Offset; off < rela.Offset+rela.Size; off += 24 {
		if binary.LittleEndian.Uint64(img[off:]) == desc+16 { // the loop entry point
			slot = off
		}
	}
	if desc == 0 || slot == 0 {
		t.Fatal("descriptor or its relocation not found")
	}
	d := &Device{}
	for _, c := range []struct {
		addend uint64
		want   string
	}{
		{binary.LittleEndian.Uint64(img[slot+16:]) + 1, "not the start of a function"},
		{desc, "not in the code of an executable segment"},
	} {
		bad := bytes.Clone(img)
		binary.LittleEndian.PutUint64(bad[slot+16:], c.addend)
		p, err := d.LoadProgram(bad)
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		_, err = p.Kernel("foo")
		var oe *ol.Error
		if !errors.As(err, &oe) || oe.Code != ol.ErrcInvalidBinary || !strings.Contains(oe.Details, c.want) || !strings.Contains(oe.Details, `"foo"`) {
			t.Errorf("Kernel: %v, want INVALID_BINARY naming the kernel with %q", err, c.want)
		}
		if err := p.Unload(); err != nil {
			t.Fatal(err)
		}
	}
	// the intact image still works
	p, err := d.LoadProgram(img)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Kernel("foo"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Kernel("nope"); err == nil || !strings.Contains(err.Error(), "no kernel named") {
		t.Fatalf("missing kernel: %v", err)
	}
	if err := p.Unload(); err != nil {
		t.Fatal(err)
	}
}
