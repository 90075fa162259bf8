package mpi

import (
	"bytes"
	"testing"

	"github.com/liboffload-go/liboffload-go/internal/remote/link"
)

// The framing against the layout written out by hand (wire.go's table).
func TestFrameLayout(t *testing.T) {
	want := []byte{2, 0, 0, 0, 0x15, 0x7F, 0, 0, 0x01, 0x00, 0x01, 0, 0, 0, 0, 0, 0x00, 0x00, 0x10, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0}
	got := append([]byte{kindBig}, bigBody(0x7F15, 0x10001, 1<<20, 7)...)
	if !bytes.Equal(got, want) {
		t.Errorf("big header % x, want % x", got, want)
	}
	f, ok := parseFrame(want)
	if !ok || f.kind != kindBig || f.tag != 0x7F15 || f.n != 0x10001 || f.chunk != 1<<20 || f.first != 7 {
		t.Errorf("parsed %+v %v", f, ok)
	}
	want = []byte{3, 1, 0, 0, 0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1, 'g', 'p', 'u', '1'}
	got = append([]byte{kindHello}, helloBody(link.Proxy, 0x0102030405060708, "gpu1")...)
	if !bytes.Equal(got, want) {
		t.Errorf("hello % x, want % x", got, want)
	}
	f, ok = parseFrame(want)
	if !ok || f.role != link.Proxy || f.nonce != 0x0102030405060708 || f.host != "gpu1" {
		t.Errorf("parsed %+v %v", f, ok)
	}
	for _, bad := range [][]byte{
		nil,
		{0},
		{kindData + 8},
		append([]byte{kindBig}, bigBody(tagChunk0-1, inlineMax+1, 1, 0)...),          // tag below the chunk tags
		append([]byte{kindBig}, bigBody(tagChunk0+nChunkTags, inlineMax+1, 1, 0)...), // above
		append([]byte{kindBig}, bigBody(tagChunk0, inlineMax, 1, 0)...),              // small enough to copy
		append([]byte{kindBig}, bigBody(tagChunk0, MaxMessage+1, 1, 0)...),
		append([]byte{kindBig}, bigBody(tagChunk0, inlineMax+1, 0, 0)...),
		append([]byte{kindBig}, bigBody(tagChunk0, inlineMax+1, 1, inlineMax+2)...), // first piece past the end
		append([]byte{kindBig}, bigBody(tagChunk0, inlineMax+1, 1<<30+1, 0)...),
		append([]byte{kindBig}, bigBody(tagChunk0, inlineMax+1, 1, 0)[:bigHeader-2]...),
		append([]byte{kindHello}, helloBody(2, 1, "h")...), // no such role
		{kindReply, 1, 0, 0, 0, 0, 0, 0, 1},                // short
		append([]byte{kindReply}, bytes.Repeat([]byte{'h'}, headerBytes+maxHostBytes)...),
	} {
		if f, ok := parseFrame(bad); ok {
			t.Errorf("% x accepted as %+v", bad[:min(len(bad), 24)], f)
		}
	}
}

// FuzzFrame: any bytes on the transport's tag decode to a valid frame or
// are refused, never a panic; what is accepted encodes back to the same
// bytes and stays within the bounds a receiver relies on.
func FuzzFrame(f *testing.F) {
	f.Add(append([]byte{kindBig}, bigBody(tagChunk0+3, 1<<24, 1<<30, 40)...))
	f.Add(append([]byte{kindHello}, helloBody(link.Client, 42, "login")...))
	f.Add(append([]byte{kindReply}, helloBody(link.Proxy, 42, "gpu7")...))
	f.Add([]byte{kindData, 1, 2, 3})
	f.Fuzz(func(t *testing.T, in []byte) {
		fr, ok := parseFrame(in)
		if !ok {
			return
		}
		var back []byte
		switch fr.kind {
		case kindData:
			back = append([]byte{kindData}, fr.data...)
		case kindBig:
			if fr.tag < tagChunk0 || fr.tag >= tagChunk0+nChunkTags || fr.n <= inlineMax || fr.n > MaxMessage || fr.chunk < 1 || fr.chunk > 1<<30 || fr.first > fr.n {
				t.Fatalf("out of bounds: %+v", fr)
			}
			back = append([]byte{kindBig}, bigBody(fr.tag, fr.n, fr.chunk, fr.first)...)
		case kindHello, kindReply:
			if fr.role != link.Client && fr.role != link.Proxy || len(fr.host) > maxHostBytes {
				t.Fatalf("out of bounds: %+v", fr)
			}
			back = append([]byte{fr.kind}, helloBody(fr.role, fr.nonce, fr.host)...)
		default:
			t.Fatalf("kind %d accepted", fr.kind)
		}
		if !bytes.Equal(back, in) {
			t.Fatalf("% x reads as %+v, which encodes to % x", in, fr, back)
		}
	})
}
