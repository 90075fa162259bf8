package elfcheck

import (
	"bytes"
	"debug/elf"
	"testing"
)

// FuzzCheck damages valid kernel images anywhere (code included) and
// validates them: Check must return, never panic or hang, and an accepted
// image must answer every query. The recipe's first byte picks the image,
// the second (if odd) truncates it to the length in the next two bytes;
// then each group of 4 bytes is a file offset (3 bytes, little-endian,
// modulo the image size) and a value XORed into that byte.
func FuzzCheck(f *testing.F) {
	var images [][]byte
	for _, k := range []string{"foo", "global_ctor", "localmem_static"} {
		images = append(images, kernel(f, k))
	}
	images = append(images, kernel(f, "global_ctor", "-Wl,-z,pack-relative-relocs", "-Wl,--hash-style=both"))
	f.Add([]byte{0})
	f.Add([]byte{1, 0})
	f.Add([]byte{2, 0, 0, 0, 0x9b, 0, 0, 0xe1})
	f.Add([]byte{3, 1, 0x00, 0x10})
	f.Add([]byte{1, 0, 0, 0, 0x30, 0x04, 0, 0x01})
	f.Fuzz(func(t *testing.T, recipe []byte) {
		if len(recipe) < 2 || len(recipe) > 4*64 {
			return
		}
		img := bytes.Clone(images[int(recipe[0])%len(images)])
		r := recipe[2:]
		if recipe[1]&1 != 0 && len(r) >= 2 {
			img = img[:(int(r[0])|int(r[1])<<8)%len(img)]
			r = r[2:]
		}
		for ; len(r) >= 4 && len(img) > 0; r = r[4:] {
			i := int(r[0]) | int(r[1])<<8 | int(r[2])<<16
			img[i%len(img)] ^= r[3]
		}
		im, err := Check(img, elf.EM_X86_64)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a reason")
			}
			return
		}
		for _, s := range im.Symbols() {
			if got, ok := im.Lookup(s.Name); ok && got.Name != s.Name {
				t.Fatalf("Lookup(%q) = %q", s.Name, got.Name)
			}
			if s.Section != elf.SHN_ABS && s.Type != elf.STT_TLS && !im.Mapped(s.Value, s.Size) {
				t.Fatalf("symbol %q outside the segments", s.Name)
			}
		}
		for _, c := range im.Calls() {
			if err := im.CheckCode(c.Addr); err != nil {
				t.Fatalf("%s: %v", c.What, err)
			}
		}
		_ = im.Bindings()
	})
}
