package remote

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/fakegpu"
	"github.com/liboffload-go/liboffload-go/internal/remote/link"
	"github.com/liboffload-go/liboffload-go/internal/remote/server"
	"github.com/liboffload-go/liboffload-go/internal/remote/wire"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// two proxies' devices of one client
func twoDevices(t *testing.T, env mapEnv) (*job, *Device, *Device) {
	j := startJob(t, 1, 2)
	g := j.connect(t, 0, env)
	return j, g.Platforms()[0].Devices()[0].(*Device), g.Platforms()[1].Devices()[0].(*Device)
}

// A copy from proxy 1's device to proxy 2's arrives whole, at offsets, in
// chunks of the client's size, and no byte of it passes through the
// client (copiedBytes counts what its transport carries).
func TestCopyBetweenProxies(t *testing.T) {
	for _, chunk := range []string{"", "4096"} {
		_, d1, d2 := twoDevices(t, mapEnv{EnvChunk: chunk})
		const n = 9<<20 + 13
		p1, p2, src, back := copyPair(t, d1, d2, n, func(i int) byte { return byte(i*13 + i>>11) })
		q1, _ := d1.NewQueue()
		q2, _ := d2.NewQueue()
		zero := []byte{0}
		if err := q1.CopyToDevice(p1, d1, addr(src), n); err != nil {
			t.Fatal(err)
		}
		if err := q2.Fill(p2, ptr(addr(zero)), 1, n); err != nil {
			t.Fatal(err)
		}
		if err := q1.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := q2.Sync(); err != nil {
			t.Fatal(err)
		}
		if d1.PeerOf(d1) || !d1.PeerOf(d2) {
			t.Fatal("PeerOf: a device of another proxy only")
		}
		before := copiedBytes.Load()
		const off1, off2, m = 3, 7, n - 20
		if err := q1.(*Queue).CopyToPeer(p2+off2, d2, p1+off1, d1, m); err != nil {
			t.Fatal(err)
		}
		if err := q1.Sync(); err != nil {
			t.Fatal(err)
		}
		if got := copiedBytes.Load() - before; got != 0 {
			t.Fatalf("chunk %q: the client's transport carried %d bytes of a copy between proxies", chunk, got)
		}
		if err := q2.CopyFromDevice(addr(back), p2, d2, n); err != nil {
			t.Fatal(err)
		}
		if err := q2.Sync(); err != nil {
			t.Fatal(err)
		}
		for i := range back {
			want := byte(0)
			if i >= off2 && i < off2+m {
				want = src[i-off2+off1]
			}
			if back[i] != want {
				t.Fatalf("chunk %q: byte %d is %d, want %d", chunk, i, back[i], want)
			}
		}
		q1.Release()
		q2.Release()
		d1.Free(p1, ol.AllocTypeDevice)
		d2.Free(p2, ol.AllocTypeDevice)
	}
}

// Hostile requests of both halves of a copy between proxies are refused
// before any byte moves: memory of the proxy the client did not allocate,
// a peer that is not another proxy, sizes, chunks and timeouts out of
// range, and bytes that do not come from the granted source proxy.
func TestCopyBetweenProxiesHostile(t *testing.T) {
	j, d1, d2 := twoDevices(t, mapEnv{})
	victim := cbuf(t, 64)
	for i := range victim {
		victim[i] = 0xee
	}
	p1, err := d1.Alloc(ol.AllocTypeDevice, 64)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := d2.Alloc(ol.AllocTypeDevice, 64)
	if err != nil {
		t.Fatal(err)
	}
	q2, _ := d2.NewQueue()
	defer q2.Release()
	mark := []byte{0x5a}
	if err := q2.Fill(p2, ptr(addr(mark)), 1, 64); err != nil {
		t.Fatal(err)
	}
	if err := q2.Sync(); err != nil {
		t.Fatal(err)
	}
	v := uint64(addr(victim))
	q1, _ := d1.NewQueue()
	defer q1.Release()
	id := q1.(*Queue).id
	// grants the destination refuses: the source's copy fails with the
	// reason, at the sync of its queue
	for _, args := range [][]uint64{
		{0, v, 64, 1, 100},          // not the client's memory
		{0, uint64(p2), 65, 1, 101}, // past the allocation
		{0, uint64(p2), 0, 1, 102},  // empty
		{0, uint64(p2), server.MaxCopy + 1, 1, 103},
		{7, uint64(p2), 64, 1, 107}, // no such device
	} {
		if err := d2.c.postNow(wire.OpPeerRecv, args...); err != nil {
			t.Fatal(err)
		}
		if err := d1.c.post(wire.OpPeerSend, nil, id, 0, uint64(p1), 64, 2, args[4], 4096, 5000); err != nil {
			t.Fatal(err)
		}
		if err := q1.Sync(); err == nil || !strings.Contains(err.Error(), "refused the copy") {
			t.Errorf("PeerRecv %v: the copy's sync returned %v, want the destination's refusal", args, err)
		}
	}
	// grants naming no other proxy: the client's error, at its next sync there
	for _, args := range [][]uint64{
		{0, uint64(p2), 64, 2, 104},  // itself
		{0, uint64(p2), 64, 0, 105},  // the client
		{0, uint64(p2), 64, 99, 106}, // no such rank
	} {
		if err := d2.c.postNow(wire.OpPeerRecv, args...); err != nil {
			t.Fatal(err)
		}
		if err := q2.Sync(); err == nil || !strings.Contains(err.Error(), "not another proxy") {
			t.Errorf("PeerRecv %v: the next sync returned %v, want the grant's error", args, err)
		}
	}
	// a grant for the sends below that pass the source's checks (the
	// ping: the grant is in before any message below reaches it)
	if err := d2.c.postNow(wire.OpPeerRecv, 0, uint64(p2), 64, 1, 200); err != nil {
		t.Fatal(err)
	}
	if _, err := d2.c.call(wire.OpPing, nil, ""); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]uint64{
		{id, 0, v, 64, 2, 200, 4096, 1000},          // not the client's memory
		{id, 0, uint64(p1), 64, 2, 200, 100, 1000},  // chunk too small
		{id, 0, uint64(p1), 64, 2, 200, 4096, 0},    // no timeout
		{id, 0, uint64(p1), 64, 0, 200, 4096, 1000}, // to the client
		{id, 0, uint64(p1), 64, 1, 200, 4096, 1000}, // to itself
		{id, 0, uint64(p1), 1 << 62, 2, 200, 4096, 1000},
		{id, 3, uint64(p1), 64, 2, 200, 4096, 1000},  // no such device
		{999, 0, uint64(p1), 64, 2, 200, 4096, 1000}, // no such queue
	} {
		if err := d1.c.post(wire.OpPeerSend, nil, args...); err != nil {
			t.Fatal(err)
		}
		if err := q1.Sync(); err == nil {
			t.Errorf("PeerSend %v accepted", args)
		}
	}
	// bytes for the grant from the client itself, or from the source
	// proxy at a wrong offset or past the end: nothing is written
	forge := func(from int, off uint64, data []byte) {
		b, err := wire.Encode(&wire.Msg{Op: wire.OpPeerData, Args: [wire.MaxArgs]uint64{0, 200, off}, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		if err := j.ends[from].Send(2, b, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	forge(0, 0, bytes.Repeat([]byte{1}, 64))
	forge(1, 8, bytes.Repeat([]byte{2}, 8))
	if err := d2.c.postNow(wire.OpPeerRecv, 0, uint64(p2), 64, 1, 201); err != nil {
		t.Fatal(err)
	}
	if _, err := d2.c.call(wire.OpPing, nil, ""); err != nil {
		t.Fatal(err)
	}
	b, _ := wire.Encode(&wire.Msg{Op: wire.OpPeerData, Args: [wire.MaxArgs]uint64{0, 201, 0}, Data: make([]byte, 65)})
	if err := j.ends[1].Send(2, b, time.Second); err != nil {
		t.Fatal(err)
	}
	back := cbuf(t, 64)
	if err := q2.CopyFromDevice(addr(back), p2, d2, 64); err != nil {
		t.Fatal(err)
	}
	if err := q2.Sync(); err != nil {
		t.Fatal(err)
	}
	for i, c := range back {
		if c != 0x5a {
			t.Fatalf("byte %d of the destination is %d: forged bytes were written", i, c)
		}
	}
	if !bytes.Equal(victim, bytes.Repeat([]byte{0xee}, 64)) {
		t.Fatal("a hostile request wrote over memory no client allocated")
	}
	// both proxies still copy
	if err := q1.(*Queue).CopyToPeer(p2, d2, p1, d1, 64); err != nil {
		t.Fatal(err)
	}
	if err := q1.Sync(); err != nil {
		t.Fatal(err)
	}
	d1.Free(p1, ol.AllocTypeDevice)
	d2.Free(p2, ol.AllocTypeDevice)
}

// The client sends the grant (to the destination) and the copy (to the
// source) without waiting in between, so either may arrive first: a
// source that has the copy waits for the destination's PeerReady, and a
// PeerReady that comes first is kept for the copy. A PeerReady from the
// client itself (a refusal it forged) is not the destination's answer.
func TestCopyBetweenProxiesEitherOrder(t *testing.T) {
	j, d1, d2 := twoDevices(t, mapEnv{EnvTimeout: "5s"})
	const n = 1<<20 + 5
	p1, p2, src, back := copyPair(t, d1, d2, n, func(i int) byte { return byte(i*7 + i>>9) })
	q1, _ := d1.NewQueue()
	defer q1.Release()
	q2, _ := d2.NewQueue()
	defer q2.Release()
	id := q1.(*Queue).id
	if err := q1.CopyToDevice(p1, d1, addr(src), n); err != nil {
		t.Fatal(err)
	}
	if err := q1.Sync(); err != nil {
		t.Fatal(err)
	}
	ping := func(d *Device) {
		if _, err := d.c.call(wire.OpPing, nil, ""); err != nil {
			t.Fatal(err)
		}
	}
	grant := func(token uint64) {
		if err := d2.c.postNow(wire.OpPeerRecv, 0, uint64(p2), n, 1, token); err != nil {
			t.Fatal(err)
		}
	}
	send := func(token uint64) {
		if err := d1.c.post(wire.OpPeerSend, nil, id, 0, uint64(p1), n, 2, token, 4096, 5000); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		order func(token uint64)
	}{
		// (a ping's reply comes after the proxy handled what came before it)
		{"copy first", func(token uint64) { send(token); ping(d1); grant(token) }},
		{"grant first", func(token uint64) { grant(token); ping(d2); send(token) }},
		{"forged refusal first", func(token uint64) {
			b, err := wire.Encode(&wire.Msg{Op: wire.OpPeerReady, Args: [wire.MaxArgs]uint64{0, token, uint64(ol.ErrcInvalidArgument)}, Text: "forged"})
			if err != nil {
				t.Fatal(err)
			}
			if err := j.ends[0].Send(1, b, time.Second); err != nil {
				t.Fatal(err)
			}
			ping(d1)
			send(token)
			grant(token)
		}},
	} {
		zero := []byte{0}
		if err := q2.Fill(p2, ptr(addr(zero)), 1, n); err != nil {
			t.Fatal(err)
		}
		if err := q2.Sync(); err != nil {
			t.Fatal(err)
		}
		c.order(nextID())
		if err := q1.Sync(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := q2.CopyFromDevice(addr(back), p2, d2, n); err != nil {
			t.Fatal(err)
		}
		if err := q2.Sync(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back, src) {
			t.Fatalf("%s: the destination does not hold the source's bytes", c.name)
		}
	}
	d1.Free(p1, ol.AllocTypeDevice)
	d2.Free(p2, ol.AllocTypeDevice)
}

// A destination proxy that dies after it accepted a copy: the source's
// queue reports it at the next sync, naming the rank, within the timeout.
func TestCopyToDeadProxy(t *testing.T) {
	j, d1, d2 := twoDevices(t, mapEnv{EnvTimeout: "300ms"})
	p1, err := d1.Alloc(ol.AllocTypeDevice, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := d2.Alloc(ol.AllocTypeDevice, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	q1, _ := d1.NewQueue()
	gate := make(chan struct{})
	q1.HostCall(func() error { <-gate; return nil })
	if err := q1.(*Queue).CopyToPeer(p2, d2, p1, d1, 1<<20); err != nil {
		t.Fatal(err)
	}
	j.ends[2].Close()
	close(gate)
	t0 := time.Now()
	err = q1.Sync()
	if err == nil || !strings.Contains(err.Error(), "remote rank 2 (host pipe)") {
		t.Fatalf("sync after the destination died: %v", err)
	}
	if el := time.Since(t0); el > 3*time.Second {
		t.Fatalf("the sync took %v with a 300 ms timeout", el)
	}
	// proxy 1 keeps working
	if err := q1.Sync(); err != nil {
		t.Fatal(err)
	}
	q1.Release()
	d1.Free(p1, ol.AllocTypeDevice)
	if _, err := d2.Alloc(ol.AllocTypeDevice, 64); err == nil {
		t.Fatal("a dead proxy's device allocated")
	}
}

// Proxies serving devices whose memory the CPU cannot touch (a CPU access
// would fault): the source reads and the destination writes through their
// devices' queues, and neither plugin sees a foreign address.
func TestCopyBetweenProxiesOfGPUs(t *testing.T) {
	ends := link.Pipe(1, 2)
	var fakes []*fakegpu.Plugin
	var done []chan error
	for _, e := range ends[1:] {
		f := fakegpu.New(fakegpu.Options{Name: "fake"})
		pl, err := f.Init(mapEnv{})
		if err != nil {
			t.Fatal(err)
		}
		fakes = append(fakes, f)
		s := server.New(e, []plugin.Platform{pl}, os.Stderr)
		ch := make(chan error, 1)
		done = append(done, ch)
		go func() { ch <- s.Serve(); _ = pl.Deinit() }()
	}
	t.Cleanup(func() {
		for i, ch := range done {
			ends[1+i].Close()
			if err := <-ch; err != nil {
				t.Error(err)
			}
			for _, v := range fakes[i].Platform.Violations() {
				t.Errorf("plugin contract broken: %s", v)
			}
		}
	})
	j := &job{ends: ends, clients: 1}
	g := j.connect(t, 0, mapEnv{EnvChunk: "65536"})
	d1, d2 := g.Platforms()[0].Devices()[0].(*Device), g.Platforms()[1].Devices()[0].(*Device)
	const n = 5<<16 + 4097
	p1, p2, src, back := copyPair(t, d1, d2, n, func(i int) byte { return byte(i*5 + i>>10) })
	q1, _ := d1.NewQueue()
	defer q1.Release()
	if err := q1.CopyToDevice(p1, d1, addr(src), n); err != nil {
		t.Fatal(err)
	}
	before := copiedBytes.Load()
	if err := q1.(*Queue).CopyToPeer(p2, d2, p1, d1, n); err != nil {
		t.Fatal(err)
	}
	if err := q1.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := copiedBytes.Load() - before; got != 0 {
		t.Fatalf("the client's transport carried %d bytes of a copy between proxies", got)
	}
	q2, _ := d2.NewQueue()
	defer q2.Release()
	if err := q2.CopyFromDevice(addr(back), p2, d2, n); err != nil {
		t.Fatal(err)
	}
	if err := q2.Sync(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(src, back) {
		t.Fatal("the copy between the proxies' GPUs differs")
	}
	if fakes[0].Platform.Copies.Load() < 6 || fakes[1].Platform.Copies.Load() < 6 {
		t.Errorf("%d and %d device copies: the chunks did not go through the devices' queues", fakes[0].Platform.Copies.Load(), fakes[1].Platform.Copies.Load())
	}
	d1.Free(p1, ol.AllocTypeDevice)
	d2.Free(p2, ol.AllocTypeDevice)
}

// copyPair allocates n bytes of DEVICE memory on each of d1 and d2, and
// two host buffers of n bytes: src filled by pattern, back for reading
// a copy back.
func copyPair(t *testing.T, d1, d2 *Device, n uint64, pattern func(i int) byte) (p1, p2 uintptr, src, back []byte) {
	t.Helper()
	p1, err := d1.Alloc(ol.AllocTypeDevice, n)
	if err != nil {
		t.Fatal(err)
	}
	p2, err = d2.Alloc(ol.AllocTypeDevice, n)
	if err != nil {
		t.Fatal(err)
	}
	src, back = cbuf(t, n), cbuf(t, n)
	for i := range src {
		src[i] = pattern(i)
	}
	return p1, p2, src, back
}
