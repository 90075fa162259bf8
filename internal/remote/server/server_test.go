package server

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/remote/link"
	"github.com/liboffload-go/liboffload-go/internal/remote/wire"
	"github.com/liboffload-go/liboffload-go/plugins/host"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type noEnv struct{}

func (noEnv) Lookup(string) (string, bool) { return "", false }

// a raw client: requests written by hand, as a hostile client could
type raw struct {
	t   *testing.T
	ep  *link.PipeEnd
	seq uint64
	to  int // the proxy's rank (0: rank 2, as link.Pipe(2, 1) numbers it)
}

func (c *raw) call(op wire.Op, data []byte, text string, args ...uint64) (wire.Msg, error) {
	c.t.Helper()
	c.seq++
	m := wire.Msg{Op: op, Seq: c.seq, Data: data, Text: text}
	copy(m.Args[:], args)
	c.post(&m)
	for {
		_, b, err := c.ep.Recv(5 * time.Second)
		if err != nil {
			c.t.Fatalf("%v: %v", op, err)
		}
		r, err := wire.Decode(b)
		if err != nil {
			c.t.Fatal(err)
		}
		if r.Op == wire.OpReply && r.Seq == c.seq {
			if r.Args[0] != 0 {
				return r, ol.NewError(ol.Errc(r.Args[0]), r.Text)
			}
			return r, nil
		}
	}
}

func (c *raw) post(m *wire.Msg) {
	b, err := wire.Encode(m)
	if err != nil {
		c.t.Fatal(err)
	}
	to := c.to
	if to == 0 {
		to = 2
	}
	if err := c.ep.Send(to, b, time.Second); err != nil {
		c.t.Fatal(err)
	}
}

// Bye releases what a client made; the other client's objects stay; Exit
// from every client ends Serve.
func TestByeAndExit(t *testing.T) {
	ends := link.Pipe(2, 1)
	hp, err := host.New().Init(noEnv{})
	if err != nil {
		t.Fatal(err)
	}
	defer hp.Deinit()
	s := New(ends[2], []plugin.Platform{hp}, os.Stderr)
	s.Clients = 2
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	a, b := &raw{t: t, ep: ends[0]}, &raw{t: t, ep: ends[1]}
	r, err := a.call(wire.OpHello, nil, "", wire.Version)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := wire.DecodeInventory(r.Data)
	if err != nil || len(inv.Platforms) != 1 || len(inv.Platforms[0].Devices) != 1 {
		t.Fatalf("inventory %+v %v", inv, err)
	}
	ra, err := a.call(wire.OpAlloc, nil, "", 0, uint64(ol.AllocTypeDevice), 4096)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := b.call(wire.OpAlloc, nil, "", 0, uint64(ol.AllocTypeDevice), 4096)
	if err != nil {
		t.Fatal(err)
	}
	a.post(&wire.Msg{Op: wire.OpQueueNew, Args: [wire.MaxArgs]uint64{0, 7}})
	if _, err := a.call(wire.OpQueueSync, nil, "", 7); err != nil {
		t.Fatal(err)
	}
	if _, err := a.call(wire.OpBye, nil, ""); err != nil {
		t.Fatal(err)
	}
	// A's allocation and queue are gone, B's allocation is not
	if _, err := a.call(wire.OpFree, nil, "", 0, ra.Args[1], uint64(ol.AllocTypeDevice)); err == nil || !strings.Contains(err.Error(), "not an allocation") {
		t.Fatalf("free after Bye: %v", err)
	}
	if _, err := a.call(wire.OpQueueSync, nil, "", 7); err == nil {
		t.Fatal("a queue survived Bye")
	}
	if _, err := b.call(wire.OpFree, nil, "", 0, rb.Args[1], uint64(ol.AllocTypeDevice)); err != nil {
		t.Fatalf("the other client's allocation: %v", err)
	}
	a.post(&wire.Msg{Op: wire.OpExit})
	select {
	case <-done:
		t.Fatal("Serve ended after one of two clients' Exit")
	case <-time.After(100 * time.Millisecond):
	}
	b.post(&wire.Msg{Op: wire.OpExit})
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not end after every client's Exit")
	}
}

// frames encodes msgs as a Batch's payload.
func frames(t *testing.T, msgs ...wire.Msg) []byte {
	var data []byte
	for i := range msgs {
		var err error
		if data, err = wire.AppendFrame(data, &msgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return data
}

// readBack copies n bytes of p back through queue 7 (a CopyFrom and a sync).
func (c *raw) readBack(p, n uint64) ([]byte, error) {
	c.t.Helper()
	c.post(&wire.Msg{Op: wire.OpCopyFrom, Args: [wire.MaxArgs]uint64{7, 0, p, n, 99}})
	c.seq++
	c.post(&wire.Msg{Op: wire.OpQueueSync, Seq: c.seq, Args: [wire.MaxArgs]uint64{7}})
	var got []byte
	for {
		_, b, err := c.ep.Recv(5 * time.Second)
		if err != nil {
			c.t.Fatal(err)
		}
		r, err := wire.Decode(b)
		if err != nil {
			c.t.Fatal(err)
		}
		switch {
		case r.Op == wire.OpData && r.Args[0] == 99:
			got = append([]byte(nil), r.Data...)
		case r.Op == wire.OpReply && r.Seq == c.seq:
			if r.Args[0] != 0 {
				return got, ol.NewError(ol.Errc(r.Args[0]), r.Text)
			}
			return got, nil
		}
	}
}

// serveOne starts a proxy serving the host device to one raw client
// (rank 0; the proxy is rank 1), says hello, and ends both when the test
// ends (the client's Exit, then Serve's return).
func serveOne(t *testing.T) *raw {
	t.Helper()
	ends := link.Pipe(1, 1)
	hp, err := host.New().Init(noEnv{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hp.Deinit() })
	s := New(ends[1], []plugin.Platform{hp}, io.Discard)
	s.Clients = 1
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	t.Cleanup(func() {
		ends[0].Send(1, []byte{byte(wire.OpExit), 0}, time.Second)
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	c := &raw{t: t, ep: ends[0], to: 1}
	if _, err := c.call(wire.OpHello, nil, "", wire.Version); err != nil {
		t.Fatal(err)
	}
	return c
}

// A request the transport had no memory for is answered with
// OUT_OF_RESOURCES (a call, known by its head) or is the client's next
// sync's error (a post); one without a head is only logged; the proxy
// goes on serving.
func TestDroppedRequests(t *testing.T) {
	ends := link.Pipe(1, 1)
	hp, err := host.New().Init(noEnv{})
	if err != nil {
		t.Fatal(err)
	}
	defer hp.Deinit()
	ep := ends[1]
	var log bytes.Buffer
	s := New(ep, []plugin.Platform{hp}, &log)
	s.Clients = 1
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	c := &raw{t: t, ep: ends[0], to: 1}
	if _, err := c.call(wire.OpHello, nil, "", wire.Version); err != nil {
		t.Fatal(err)
	}
	c.post(&wire.Msg{Op: wire.OpQueueNew, Args: [wire.MaxArgs]uint64{0, 7}})
	head := func(m wire.Msg, n uint64) []byte {
		h, err := wire.AppendHeader(nil, &m, n)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	const load = 9999
	ep.Drop(&link.DroppedError{Src: 0, Size: 1 << 30, Head: head(wire.Msg{Op: wire.OpLoad, Seq: load, Args: [wire.MaxArgs]uint64{0, 5}}, 1<<30-30), Err: errors.New("no memory here")})
	ep.Drop(&link.DroppedError{Src: 0, Size: 1 << 20, Head: head(wire.Msg{Op: wire.OpCopyTo, Args: [wire.MaxArgs]uint64{7, 0, 4096}}, 1<<20-20), Err: errors.New("no memory here")})
	ep.Drop(&link.DroppedError{Src: 0, Size: 1 << 20, Err: errors.New("no memory here")})
	_, b, err := c.ep.Recv(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := wire.Decode(b); err != nil || r.Op != wire.OpReply || r.Seq != load || ol.Errc(r.Args[0]) != ol.ErrcOutOfResources || !strings.Contains(r.Text, "Load request of 1073741824 bytes") {
		t.Fatalf("the dropped load's answer: %+v %v", r, err)
	}
	if _, err := c.call(wire.OpQueueSync, nil, "", 7); err == nil || !strings.Contains(err.Error(), "CopyTo") || !strings.Contains(err.Error(), "no memory here") {
		t.Fatalf("the sync after a dropped copy: %v", err)
	}
	if _, err := c.call(wire.OpQueueSync, nil, "", 7); err != nil {
		t.Fatalf("the next sync: %v", err)
	}
	c.post(&wire.Msg{Op: wire.OpExit})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "1048576 bytes from rank 0 was dropped") {
		t.Errorf("the headless drop was not logged: %q", log.String())
	}
}

// A call in a batch that waits on a goroutine of its own (a sync of a
// queue held by a host call) is answered as itself after later batches
// reused the proxy's decoded frames.
func TestBatchCallOutlivesBatch(t *testing.T) {
	c := serveOne(t)
	sync := c.seq + 1
	c.seq++
	c.post(&wire.Msg{Op: wire.OpBatch, Args: [wire.MaxArgs]uint64{3}, Data: frames(t,
		wire.Msg{Op: wire.OpQueueNew, Args: [wire.MaxArgs]uint64{0, 7}},
		wire.Msg{Op: wire.OpHostCall, Args: [wire.MaxArgs]uint64{7, 55}},
		wire.Msg{Op: wire.OpQueueSync, Seq: sync, Args: [wire.MaxArgs]uint64{7}})})
	// the host call reaches this client: the sync waits for its HostDone
	for {
		_, b, err := c.ep.Recv(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if m, err := wire.Decode(b); err == nil && m.Op == wire.OpCallHost && m.Args[0] == 55 {
			break
		}
	}
	// later batches overwrite the frames the sync came in
	for i := 0; i < 3; i++ {
		c.seq++
		c.post(&wire.Msg{Op: wire.OpBatch, Args: [wire.MaxArgs]uint64{4}, Data: frames(t,
			wire.Msg{Op: wire.OpQueueNew, Args: [wire.MaxArgs]uint64{0, uint64(100 + i)}},
			wire.Msg{Op: wire.OpQueueNew, Args: [wire.MaxArgs]uint64{0, uint64(200 + i)}},
			wire.Msg{Op: wire.OpQueueNew, Args: [wire.MaxArgs]uint64{0, uint64(300 + i)}},
			wire.Msg{Op: wire.OpPing, Seq: c.seq})})
		_, b, err := c.ep.Recv(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if r, err := wire.Decode(b); err != nil || r.Op != wire.OpReply || r.Seq != c.seq {
			t.Fatalf("the ping of batch %d: %+v %v", i, r, err)
		}
	}
	c.post(&wire.Msg{Op: wire.OpHostDone, Args: [wire.MaxArgs]uint64{55, 0}})
	_, b, err := c.ep.Recv(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := wire.Decode(b); err != nil || r.Op != wire.OpReply || r.Seq != sync || r.Args[0] != 0 {
		t.Fatalf("the sync's reply: %+v %v (want sequence number %d)", r, err, sync)
	}
}

// A batch's requests run in order, a call among them is answered; a
// malformed batch runs none of its requests, is the next sync's error,
// and the proxy goes on serving.
func TestBatches(t *testing.T) {
	c := serveOne(t)
	const n = 4096
	ra, err := c.call(wire.OpAlloc, nil, "", 0, uint64(ol.AllocTypeDevice), n)
	if err != nil {
		t.Fatal(err)
	}
	p := ra.Args[1]
	// the queue, then fills of 64-byte blocks, block k%64 with byte k:
	// in order, block j ends with the last k of it; a call last
	msgs := []wire.Msg{{Op: wire.OpQueueNew, Args: [wire.MaxArgs]uint64{0, 7}}}
	const fills = 1000
	for k := 0; k < fills; k++ {
		msgs = append(msgs, wire.Msg{Op: wire.OpFill, Data: []byte{byte(k)}, Args: [wire.MaxArgs]uint64{7, p + uint64(k%64)*64, 64}})
	}
	c.seq++
	msgs = append(msgs, wire.Msg{Op: wire.OpQueueSync, Seq: c.seq, Args: [wire.MaxArgs]uint64{7}})
	c.post(&wire.Msg{Op: wire.OpBatch, Args: [wire.MaxArgs]uint64{uint64(len(msgs))}, Data: frames(t, msgs...)})
	_, b, err := c.ep.Recv(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := wire.Decode(b); err != nil || r.Op != wire.OpReply || r.Seq != c.seq || r.Args[0] != 0 {
		t.Fatalf("the sync in the batch: %+v %v", r, err)
	}
	got, err := c.readBack(p, n)
	if err != nil || len(got) != n {
		t.Fatalf("read back %d bytes: %v", len(got), err)
	}
	var last [64]byte // block j's byte: the last k with k%64 == j
	for k := 0; k < fills; k++ {
		last[k%64] = byte(k)
	}
	for i := 0; i < n; i++ {
		if got[i] != last[i/64] {
			t.Fatalf("byte %d is %d, want %d", i, got[i], last[i/64])
		}
	}
	// each hostile batch starts with a fill of byte 0xee that must not run
	fill := frames(t, wire.Msg{Op: wire.OpFill, Data: []byte{0xee}, Args: [wire.MaxArgs]uint64{7, p, n}})
	nested, _ := wire.Encode(&wire.Msg{Op: wire.OpBatch, Args: [wire.MaxArgs]uint64{1}, Data: fill})
	for name, data := range map[string][]byte{
		"truncated frame": append(slices.Clone(fill), 3, byte(wire.OpWait), 0),
		"nested batch":    append(append(slices.Clone(fill), byte(len(nested))), nested...),
		"oversize frame":  append(slices.Clone(fill), 0xff, 0x7f, byte(wire.OpPing), 0),
		"exit":            append(slices.Clone(fill), 2, byte(wire.OpExit), 0),
	} {
		c.post(&wire.Msg{Op: wire.OpBatch, Args: [wire.MaxArgs]uint64{2}, Data: data})
		got, err := c.readBack(p, n)
		if err == nil || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("%s: sync after it: %v", name, err)
		}
		if bytes.IndexByte(got, 0xee) >= 0 {
			t.Errorf("%s: a request of a malformed batch ran", name)
		}
	}
	// a batch of more bytes than any the proxy accepts
	huge := make([]byte, 0, wire.MaxBatch+8)
	for len(huge) <= wire.MaxBatch {
		huge = append(huge, fill...)
	}
	c.post(&wire.Msg{Op: wire.OpBatch, Args: [wire.MaxArgs]uint64{uint64(len(huge) / len(fill))}, Data: huge})
	if got, err := c.readBack(p, n); err == nil || bytes.IndexByte(got, 0xee) >= 0 {
		t.Errorf("a batch of %d bytes: %v", len(huge), err)
	}
	// and the proxy still serves
	if _, err := c.readBack(p, n); err != nil {
		t.Fatalf("after the hostile batches: %v", err)
	}
}

// A client's copies are checked against all of its live allocations (an
// ordered index, not a scan): with thousands of allocations of random
// sizes, a third of them freed, a copy is accepted exactly when it lies
// inside one live allocation, as a scan of the live list decides.
func TestCopiesMustLieInOneLiveAllocation(t *testing.T) {
	c := serveOne(t)
	if _, err := c.call(wire.OpAlloc, nil, "", 0, uint64(ol.AllocTypeDevice), 0); err == nil || !strings.Contains(err.Error(), "0 bytes") {
		t.Fatalf("an allocation of 0 bytes: %v", err)
	}
	c.post(&wire.Msg{Op: wire.OpQueueNew, Args: [wire.MaxArgs]uint64{0, 7}})
	rng := rand.New(rand.NewPCG(29, 1))
	type span struct{ base, size uint64 }
	var live, freed []span
	for i := 0; i < 3000; i++ {
		size := 1 + rng.Uint64N(4096)
		r, err := c.call(wire.OpAlloc, nil, "", 0, uint64(ol.AllocTypeDevice), size)
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, span{r.Args[1], size})
	}
	for i := 0; i < 1000; i++ {
		j := rng.IntN(len(live))
		if _, err := c.call(wire.OpFree, nil, "", 0, live[j].base, uint64(ol.AllocTypeDevice)); err != nil {
			t.Fatal(err)
		}
		freed = append(freed, live[j])
		live[j] = live[len(live)-1]
		live = live[:len(live)-1]
	}
	inOne := func(p, n uint64) bool {
		for _, a := range live {
			if a.base <= p && p+n <= a.base+a.size {
				return true
			}
		}
		return false
	}
	accepted := 0
	for i := 0; i < 1500; i++ {
		var p, n uint64
		switch a := live[rng.IntN(len(live))]; i % 3 {
		case 0: // inside
			p = a.base + rng.Uint64N(a.size)
			n = 1 + rng.Uint64N(a.base+a.size-p)
		case 1: // running past the end
			p = a.base + rng.Uint64N(a.size)
			n = a.base + a.size - p + 1 + rng.Uint64N(64)
		default: // in a freed allocation
			f := freed[rng.IntN(len(freed))]
			p, n = f.base+rng.Uint64N(f.size), 1
		}
		got, err := c.readBack(p, n)
		if want := inOne(p, n); (err == nil) != want {
			t.Fatalf("copy of %d bytes from %#x: %v; inside one live allocation: %v", n, p, err, want)
		}
		if err == nil {
			accepted++
			if uint64(len(got)) != n {
				t.Fatalf("copy of %d bytes from %#x gave %d", n, p, len(got))
			}
		} else if !strings.Contains(err.Error(), "not in an allocation") {
			t.Fatalf("copy of %d bytes from %#x: %v", n, p, err)
		}
	}
	if accepted < 500 {
		t.Fatalf("only %d of 1500 copies accepted: the inside cases alone are 500", accepted)
	}
}
