package server

import (
	"os"
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
	if err := c.ep.Send(2, b, time.Second); err != nil {
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
