package wire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

func TestRoundTrip(t *testing.T) {
	for op := OpHello; op < opCount; op++ {
		l := layouts[op]
		m := Msg{Op: op, Seq: 1<<63 + uint64(op)}
		for i := 0; i < l.args; i++ {
			m.Args[i] = uint64(i+1) << (6 * i)
		}
		if l.data {
			m.Data = bytes.Repeat([]byte{byte(op)}, 300)
		}
		if l.text {
			m.Text = "kernel_name"
		}
		b, err := Encode(&m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("%v: %v", op, err)
		}
		if got.Op != m.Op || got.Seq != m.Seq || got.Args != m.Args || !bytes.Equal(got.Data, m.Data) || got.Text != m.Text {
			t.Fatalf("%v: sent %+v, decoded %+v", op, m, got)
		}
		// every strict prefix is refused
		for n := 0; n < len(b); n++ {
			if _, err := Decode(b[:n]); !errors.Is(err, ErrMalformed) {
				t.Fatalf("%v cut to %d of %d bytes: %v", op, n, len(b), err)
			}
		}
		if _, err := Decode(append(b, 0)); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%v with a trailing byte: %v", op, err)
		}
	}
}

func TestRefused(t *testing.T) {
	for _, b := range [][]byte{
		{0}, {byte(opCount)}, {255},
		// a 65-bit sequence number
		{byte(OpPing), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
		// a payload longer than the message
		{byte(OpCopyTo), 0, 1, 2, 3, 200, 1, 1, 2},
		// a text longer than MaxText
		append([]byte{byte(OpGlobal), 0, 1, 0x81, 0x40}, make([]byte, MaxText+1)...),
	} {
		if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("% x: %v", b, err)
		}
	}
}

func TestParams(t *testing.T) {
	in := [][2]uint64{{0, 8}, {8, 4}, {16, 1 << 40}}
	out, err := DecodeParams(AppendParams(nil, in))
	if err != nil || len(out) != 3 || out[2] != in[2] {
		t.Fatalf("%v %v", out, err)
	}
	if _, err := DecodeParams([]byte{0xff, 0xff, 0xff, 0x7f}); err == nil {
		t.Fatal("a count past the bytes decoded")
	}
}

// FuzzDecode: any bytes decode or are refused with ErrMalformed, never a
// panic; what decodes encodes back to the same bytes (one encoding).
func FuzzDecode(f *testing.F) {
	for op := OpHello; op < opCount; op++ {
		m := Msg{Op: op, Seq: 7, Args: [MaxArgs]uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, Data: []byte("abc"), Text: "k"}
		b, _ := Encode(&m)
		f.Add(b)
	}
	f.Add(batchOf(f, 2, []byte{byte(OpWait), 0, 7, 9}, []byte{byte(OpPing), 5}))
	f.Add(batchOf(f, 1, batchOf(f, 1, []byte{byte(OpPing), 5})))
	f.Fuzz(func(t *testing.T, b []byte) {
		// a header alone (a placed message's, link.Placer)
		if hm, n, err := DecodeHeader(b); err == nil {
			h, err := AppendHeader(nil, &hm, n)
			hm2, n2, err2 := DecodeHeader(h)
			if err != nil || err2 != nil || hm2.Op != hm.Op || hm2.Seq != hm.Seq || hm2.Args != hm.Args || n2 != n {
				t.Fatalf("header %+v (%d bytes of payload) re-encoded decodes as %+v, %d (%v, %v)", hm, n, hm2, n2, err, err2)
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v does not wrap ErrMalformed", err)
		}
		m, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		again, err := Encode(&m)
		if err != nil {
			t.Fatal(err)
		}
		// varints have non-minimal forms: compare decoded values
		m2, err := Decode(again)
		if err != nil || m2.Op != m.Op || m2.Seq != m.Seq || m2.Args != m.Args || !bytes.Equal(m2.Data, m.Data) || m2.Text != m.Text {
			t.Fatalf("re-encoded %+v decodes as %+v (%v)", m, m2, err)
		}
		// a payload placed after AppendHeader is the same message
		if l := layouts[m.Op]; l.data && !l.text {
			h, err := AppendHeader(nil, &m, uint64(len(m.Data)))
			if err != nil || len(h) > MaxHeader || !bytes.Equal(append(h, m.Data...), again) {
				t.Fatalf("%v: header % x (%v) + payload is not % x", m.Op, h, err, again)
			}
		}
		_, _ = DecodeParams(m.Data)
		_, _ = DecodeInventory(m.Data)
		// a batch's frames: each a message Decode accepts alone, none a
		// batch; framed again they are the same batch
		if m.Op == OpBatch {
			ms, err := DecodeBatch(&m, nil)
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("error %v does not wrap ErrMalformed", err)
				}
				return
			}
			var data []byte
			for i := range ms {
				if ms[i].Op == OpBatch || ms[i].Op == OpExit {
					t.Fatalf("frame %d is a %v", i, ms[i].Op)
				}
				if data, err = AppendFrame(data, &ms[i]); err != nil {
					t.Fatal(err)
				}
			}
			m3 := Msg{Op: OpBatch, Args: [MaxArgs]uint64{uint64(len(ms))}, Data: data}
			// (into a reused slice holding other frames: they are not kept)
			ms2, err := DecodeBatch(&m3, []Msg{{Op: OpPing}, {Op: OpExit}, {Op: OpBye}})
			if err != nil || len(ms2) != len(ms) {
				t.Fatalf("re-framed batch of %d: %d frames (%v)", len(ms), len(ms2), err)
			}
			for i := range ms {
				a, b := ms[i], ms2[i]
				if a.Op != b.Op || a.Seq != b.Seq || a.Args != b.Args || !bytes.Equal(a.Data, b.Data) || a.Text != b.Text {
					t.Fatalf("frame %d %+v re-framed decodes as %+v", i, a, b)
				}
			}
		}
	})
}

// AppendHeader and the payload after it are the message Append writes;
// it refuses operations without a payload or with a text.
func TestAppendHeader(t *testing.T) {
	m := Msg{Op: OpPeerData, Seq: 1 << 63, Args: [MaxArgs]uint64{1<<64 - 1, 1 << 40, 5}, Data: bytes.Repeat([]byte{9}, 70000)}
	h, err := AppendHeader(nil, &m, uint64(len(m.Data)))
	if err != nil || len(h) > MaxHeader {
		t.Fatalf("%d bytes, %v", len(h), err)
	}
	want, _ := Encode(&m)
	if !bytes.Equal(append(h, m.Data...), want) {
		t.Fatal("header + payload differ from Encode")
	}
	got, err := Decode(want)
	if err != nil || got.Args != m.Args || !bytes.Equal(got.Data, m.Data) {
		t.Fatalf("%+v %v", got.Args, err)
	}
	// DecodeHeader reads it back, with the payload's length; a header cut
	// short, with bytes after it, or of an operation without a payload is
	// malformed
	hm, n, err := DecodeHeader(h)
	if err != nil || hm.Op != m.Op || hm.Seq != m.Seq || hm.Args != m.Args || n != uint64(len(m.Data)) || hm.Data != nil {
		t.Fatalf("DecodeHeader: %+v, %d, %v", hm, n, err)
	}
	for _, b := range [][]byte{h[:len(h)-1], append(h[:len(h):len(h)], 0), {byte(OpPing), 0}, want[:len(h)+1], nil} {
		if _, _, err := DecodeHeader(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodeHeader(% x): %v, want ErrMalformed", b[:min(len(b), 16)], err)
		}
	}
	for _, op := range []Op{OpInvalid, OpPing, OpReply, OpPeerDone, opCount} {
		if _, err := AppendHeader(nil, &Msg{Op: op}, 1); err == nil {
			t.Errorf("a header of %v", op)
		}
	}
	// the longest header: every argument of 64 bits
	big := Msg{Op: OpLaunch, Seq: 1<<64 - 1}
	for i := range big.Args {
		big.Args[i] = 1<<64 - 1
	}
	if h, _ := AppendHeader(nil, &big, 1<<64-1); len(h) > MaxHeader {
		t.Fatalf("a %d-byte header, more than MaxHeader %d", len(h), MaxHeader)
	}
}

func TestInventory(t *testing.T) {
	info := plugin.DeviceInfo{
		Type:                         plugin.Some(ol.DeviceTypeGpu),
		Name:                         plugin.Some("gfx90a"),
		MaxWorkGroupSizePerDimension: plugin.Some(ol.Dimensions{X: 1024, Y: 1024, Z: 1 << 31}),
		GlobalMemSize:                plugin.Some[uint64](1 << 40),
		HalfFpSupport:                plugin.Some(false),
		DoubleFpSupport:              plugin.Some(true),
	}
	in := Inventory{Host: "gpu1", Platforms: []PlatformDesc{
		{Name: "AMDGPU", Vendor: "AMD", Version: "v1", Backend: 3, Devices: []DeviceDesc{{Index: 0, Info: info}, {Index: 1}}},
		{Name: "Host", Backend: 4},
	}}
	b := AppendInventory(nil, &in)
	out, err := DecodeInventory(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in.Platforms[0].Devices, out.Platforms[0].Devices) || out.Host != "gpu1" || len(out.Platforms) != 2 ||
		out.Platforms[1].Name != "Host" || out.Platforms[0].Backend != 3 {
		t.Fatalf("sent %+v, decoded %+v", in, out)
	}
	for n := 0; n < len(b); n++ {
		if _, err := DecodeInventory(b[:n]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("cut to %d of %d bytes: %v", n, len(b), err)
		}
	}
}

// batchOf encodes frames (each written by hand: its length, then the
// message) as a Batch announcing count frames.
func batchOf(t testing.TB, count uint64, frames ...[]byte) []byte {
	var data []byte
	for _, f := range frames {
		data = append(data, byte(len(f)))
		data = append(data, f...)
	}
	b, err := Encode(&Msg{Op: OpBatch, Args: [MaxArgs]uint64{count}, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBatch(t *testing.T) {
	ping := []byte{byte(OpPing), 5}
	wait := []byte{byte(OpWait), 0, 7, 9}
	m, err := Decode(batchOf(t, 2, wait, ping))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := DecodeBatch(&m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Op != OpWait || ms[0].Args[0] != 7 || ms[0].Args[1] != 9 || ms[1].Op != OpPing || ms[1].Seq != 5 {
		t.Fatalf("decoded %+v", ms)
	}
	// AppendFrame writes what was written by hand above
	var data []byte
	for _, f := range []Msg{{Op: OpWait, Args: [MaxArgs]uint64{7, 9}}, {Op: OpPing, Seq: 5}} {
		if data, err = AppendFrame(data, &f); err != nil {
			t.Fatal(err)
		}
	}
	if want := append(append([]byte{4}, wait...), append([]byte{2}, ping...)...); !bytes.Equal(data, want) {
		t.Fatalf("AppendFrame: % x, want % x", data, want)
	}
	if _, err := AppendFrame(nil, &Msg{Op: OpBatch}); err == nil {
		t.Fatal("a batch was framed into a batch")
	}
	if _, err := AppendFrame(nil, &Msg{Op: OpExit}); err == nil {
		t.Fatal("Exit was framed into a batch")
	}
	inner := batchOf(t, 1, ping)
	huge := Msg{Op: OpBatch, Args: [MaxArgs]uint64{1}, Data: make([]byte, MaxBatch+1)}
	hb, _ := Encode(&huge)
	for name, b := range map[string][]byte{
		"truncated frame":      batchOf(t, 1, wait[:3]),
		"frame past the end":   append(batchOf(t, 1, ping)[:3], 200, byte(OpPing), 5),
		"nested batch":         batchOf(t, 1, inner),
		"exit in a batch":      batchOf(t, 1, []byte{byte(OpExit), 0}),
		"unknown operation":    batchOf(t, 1, []byte{byte(opCount), 0}),
		"more than announced":  batchOf(t, 1, ping, ping),
		"fewer than announced": batchOf(t, 3, ping, ping),
		"empty":                batchOf(t, 0),
		"oversize":             hb,
	} {
		m, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if ms, err := DecodeBatch(&m, nil); !errors.Is(err, ErrMalformed) || ms != nil {
			t.Errorf("%s: %v, %d frames", name, err, len(ms))
		}
	}
}

// BenchmarkDecodeLaunch: the proxy decodes every queued launch.
func BenchmarkDecodeLaunch(b *testing.B) {
	m := Msg{Op: OpLaunch, Args: [MaxArgs]uint64{3, 17, 1, 1, 1, 1, 1, 1, 0, 0}, Data: make([]byte, 16)}
	enc, err := Encode(&m)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}
