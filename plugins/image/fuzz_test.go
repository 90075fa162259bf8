package image

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzClassify gives Classify any bytes: it must return (never panic or
// hang), with a description, and every target must answer Accepts and
// Needs. The seeds are the real images of the unit tests (the PTX cut to
// its first 4 KiB) and the hand-made headers.
func FuzzClassify(f *testing.F) {
	im := realImages(f)
	for _, name := range []string{"so", "obj", "gfx90a", "gfx942", "gfx9g", "amdrel"} {
		b := im[name]
		f.Add(b[:min(len(b), 4096)])
	}
	f.Add(im["ptx"][:min(len(im["ptx"]), 4096)])
	f.Add([]byte(nil))
	f.Add([]byte("/* x\n y */\n  .version 8.5 // c\n.target sm_100f, debug\n"))
	f.Add(cubin(80, false))
	f.Add(cubin(120, true))
	f.Add(fatbin())
	f.Add(bundle("hipv4-amdgcn-amd-amdhsa--gfx90a", "host-x86_64-unknown-linux-gnu"))
	f.Add(offloadBinary(1, 1, "amdgcn-amd-amdhsa", "gfx90a"))
	f.Add([]byte("CCOB\x02\x00\x01\x00"))
	targets := []Target{HostTarget(HostMachine()), CUDATarget(9, 0), AMDGPUTarget("gfx90a"), {}}
	f.Fuzz(func(t *testing.T, b []byte) {
		info := Classify(b)
		if info.Desc == "" || info.Size != len(b) {
			t.Fatalf("Classify(%d bytes) = %+v", len(b), info)
		}
		if !utf8.ValidString(info.Desc) || strings.ContainsAny(info.Desc, "\x00\n") {
			t.Fatalf("description %q is not one printable line", info.Desc)
		}
		if len(info.Desc) > 2048 || len(info.Entries) > maxEntries {
			t.Fatalf("description of %d bytes, %d entries", len(info.Desc), len(info.Entries))
		}
		for _, tg := range targets {
			_ = tg.Accepts(info)
			if tg.Needs() == "" {
				t.Fatalf("%v needs nothing", tg)
			}
		}
	})
}
