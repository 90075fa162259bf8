package host

import (
	"errors"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// foreignTimed is a profiling event of some other platform.
type foreignTimed struct{ plugin.Event }

func (foreignTimed) ElapsedSince(plugin.TimedEvent) (float32, error) { return 0, nil }

func hostQueue(t *testing.T) (plugin.Device, plugin.Queue) {
	t.Helper()
	p, err := New().Init(noEnv{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Deinit() })
	d := p.Devices()[0]
	q, err := d.NewQueue()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Sync(); q.Release() })
	return d, q
}

func TestTimedEvents(t *testing.T) {
	d, q := hostQueue(t)
	tq := q.(plugin.TimedQueue)
	start, err := tq.RecordTimed()
	if err != nil {
		t.Fatal(err)
	}
	// the stamp is taken when the queue gets there, not when recorded
	time.Sleep(5 * time.Millisecond)
	buf, _ := d.Alloc(ol.AllocTypeDevice, 1<<20)
	defer d.Free(buf, ol.AllocTypeDevice)
	src := make([]byte, 1<<20)
	if err := q.CopyToDevice(buf, d, uintptr(unsafe.Pointer(&src[0])), 1<<20); err != nil {
		t.Fatal(err)
	}
	const nap = 20 * time.Millisecond
	if err := q.HostCall(func() error { time.Sleep(nap); return nil }); err != nil {
		t.Fatal(err)
	}
	end, err := tq.RecordTimed()
	if err != nil {
		t.Fatal(err)
	}
	if err := end.Sync(); err != nil || !start.Done() || !end.Done() {
		t.Fatalf("Sync: %v, done %v %v", err, start.Done(), end.Done())
	}
	runtime.KeepAlive(src)
	ms, err := end.ElapsedSince(start)
	if err != nil {
		t.Fatal(err)
	}
	if ms < float32(nap/time.Millisecond) || ms > 5000 {
		t.Fatalf("elapsed %v ms around a %v host call", ms, nap)
	}
	back, err := start.ElapsedSince(end)
	if err != nil || back != -ms {
		t.Fatalf("reverse elapsed %v, %v; want %v", back, err, -ms)
	}
	// a timed event is an event: another queue can wait for it
	q2, _ := d.NewQueue()
	defer q2.Release()
	if err := q2.Wait(end); err != nil {
		t.Fatal(err)
	}
	if err := q2.Sync(); err != nil {
		t.Fatal(err)
	}
	var oe *ol.Error
	if _, err := end.ElapsedSince(foreignTimed{start}); !errors.As(err, &oe) || oe.Code != ol.ErrcInvalidArgument {
		t.Fatalf("foreign start event: %v", err)
	}
	start.Release()
	end.Release()
}

func TestPrefetchKeepsOrder(t *testing.T) {
	d, q := hostQueue(t)
	buf, _ := d.Alloc(ol.AllocTypeManaged, 4096)
	defer d.Free(buf, ol.AllocTypeManaged)
	pat := uint32(0x5a5a5a5a)
	if err := q.Fill(buf, unsafe.Pointer(&pat), 4, 4096); err != nil {
		t.Fatal(err)
	}
	pq := q.(plugin.PrefetchQueue)
	if err := pq.Prefetch(buf, d, 4096, true); err != nil {
		t.Fatal(err)
	}
	if err := pq.Prefetch(buf, d, 4096, false); err != nil {
		t.Fatal(err)
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	for i, b := range unsafe.Slice((*byte)(ptr(buf)), 4096) {
		if b != 0x5a {
			t.Fatalf("byte %d = %#x", i, b)
		}
	}
}
