package impl

import (
	"bytes"
	"os"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/internal/cmem"
	"github.com/liboffload-go/liboffload-go/internal/remote/link"
	"github.com/liboffload-go/liboffload-go/internal/remote/server"
	"github.com/liboffload-go/liboffload-go/plugins/host"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
	"github.com/liboffload-go/liboffload-go/plugins/remote"
)

// countingEnd is the application's Endpoint, counting the bytes it carries.
type countingEnd struct {
	*link.PipeEnd
	bytes atomic.Int64
}

func (e *countingEnd) Send(rank int, msg []byte, timeout time.Duration) error {
	e.bytes.Add(int64(len(msg)))
	return e.PipeEnd.Send(rank, msg, timeout)
}

func (e *countingEnd) Recv(timeout time.Duration) (int, []byte, error) {
	src, msg, err := e.PipeEnd.Recv(timeout)
	e.bytes.Add(int64(len(msg)))
	return src, msg, err
}

// cbytes is n bytes of C memory, freed at the test's end.
func cbytes(t *testing.T, n uint64) []byte {
	p, err := cmem.Malloc(n, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmem.Free(p) })
	return unsafe.Slice((*byte)(p), n)
}

type noEnv struct{}

func (noEnv) Lookup(string) (string, bool) { return "", false }

// A copy between devices of two proxies, with no queue and on a queue of
// the source, of the destination and of the host device, arrives whole,
// and the application's own transport carries only control messages: the
// bytes went from proxy to proxy (without the direct path, the runtime
// staged them through the application, and its transport carried each
// byte twice).
func TestCopyBetweenProxiesSkipsTheApplication(t *testing.T) {
	ends := link.Pipe(1, 2)
	app := &countingEnd{PipeEnd: ends[0]}
	var done []chan error
	for _, e := range ends[1:] {
		hp, err := host.New().Init(noEnv{})
		if err != nil {
			t.Fatal(err)
		}
		s := server.New(e, []plugin.Platform{hp}, os.Stderr)
		ch := make(chan error, 1)
		done = append(done, ch)
		go func() { ch <- s.Serve(); _ = hp.Deinit() }()
	}
	defer func() {
		for i, ch := range done {
			ends[1+i].Close()
			if err := <-ch; err != nil {
				t.Error(err)
			}
		}
	}()
	remote.SetConnector(func(plugin.Env, bool) (link.Endpoint, error) { return app, nil })
	defer remote.SetConnector(nil)
	c, err := newContext(generations{}, []plugin.Plugin{host.New(), remote.New()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.teardown(); err != nil {
			t.Errorf("teardown: %v", err)
		}
	}()
	var hostDev *Device
	var rem []*Device
	for _, d := range c.deviceList {
		if d.d.IsHost() {
			hostDev = d
		} else {
			rem = append(rem, d)
		}
	}
	if len(rem) != 2 || rem[0].platform == rem[1].platform {
		t.Fatalf("%d remote devices, want one of each of two proxies", len(rem))
	}
	e := &routeEnv{t: t, c: c}
	const n = 3<<20 + 4097
	a, b := rem[0], rem[1]
	for _, tc := range []struct {
		name string
		qd   *Device
	}{{"none", nil}, {"of the source", a}, {"of the destination", b}, {"of the host device", hostDev}} {
		qd := tc.qd
		s, d := e.alloc(a, n), e.alloc(b, n)
		want := cbytes(t, n)
		copy(want, pattern(n, 5))
		if err := c.callOlMemcpy(0, ptr(s), a.h, unsafe.Pointer(&want[0]), hostDev.h, n); err != nil {
			t.Fatal(err)
		}
		var q uintptr
		if qd != nil {
			q = e.queue(qd)
		}
		before := app.bytes.Load()
		if err := c.callOlMemcpy(q, ptr(d), b.h, ptr(s), a.h, n); err != nil {
			t.Fatal(err)
		}
		if q != 0 {
			if err := c.callOlSyncQueue(q); err != nil {
				t.Fatal(err)
			}
			_ = c.callOlDestroyQueue(q)
		}
		if got := app.bytes.Load() - before; got > 64<<10 {
			t.Errorf("queue %s: the application's transport carried %d bytes for a copy of %d between proxies", tc.name, got, n)
		}
		got := cbytes(t, n)
		if err := c.callOlMemcpy(0, unsafe.Pointer(&got[0]), hostDev.h, ptr(d), b.h, n); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("queue %s: wrong bytes", tc.name)
		}
		_ = c.callOlMemFree(ptr(s))
		_ = c.callOlMemFree(ptr(d))
	}
}
