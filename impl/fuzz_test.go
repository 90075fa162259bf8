package impl

import (
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
)

// FuzzHandleDecode looks up arbitrary 64-bit values in a table holding live
// and destroyed objects: only a live handle's exact value finds its object;
// anything else is an error with the queue code (or NULL_HANDLE for 0) and
// a message, never a panic.
func FuzzHandleDecode(f *testing.F) {
	tb := newTable[thing](kindQueue, 0xFFFFFFF0)
	live := map[uintptr]*thing{}
	var dead []uintptr
	for i := 0; i < 3*(reuseDelay+1); i++ {
		v := &thing{i}
		h, err := tb.insert(v)
		if err != nil {
			f.Fatal(err)
		}
		if i%5 == 0 {
			live[h] = v
		} else {
			tb.remove(h)
			dead = append(dead, h)
		}
	}
	for h := range live {
		f.Add(uint64(h))
		f.Add(uint64(h) ^ 1<<30)
		break
	}
	f.Add(uint64(dead[0]))
	f.Add(uint64(0))
	f.Add(^uint64(0))
	f.Add(uint64(0xB3) << 56)
	f.Add(uint64(0xB2)<<56 | 5)
	f.Fuzz(func(t *testing.T, raw uint64) {
		h := uintptr(raw)
		v, err := tb.get(h, "Queue")
		if want, ok := live[h]; ok {
			if err != nil || v != want {
				t.Fatalf("live handle %#x: %v, %v", h, v, err)
			}
			return
		}
		if err == nil || v != nil {
			t.Fatalf("%#x is not a live handle, but it resolved to %v", h, v)
		}
		oe, ok := err.(*ol.Error)
		want := ol.ErrcInvalidQueue
		if h == 0 {
			want = ol.ErrcInvalidNullHandle
		}
		if !ok || oe.Code != want || oe.Details == "" {
			t.Fatalf("%#x: %v", h, err)
		}
	})
}
