package host

import (
	"testing"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

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
