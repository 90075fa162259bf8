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
		if v != nil {
			t.Fatalf("%#x is not a live handle, but it resolved to %v", h, v)
		}
		wantRefused(t, h, err, ol.ErrcInvalidQueue)
	})
}

// wantRefused checks the error of a lookup of h, not a live handle: code
// (NULL_HANDLE for 0) and a message.
func wantRefused(t *testing.T, h uintptr, err error, code ol.Errc) {
	t.Helper()
	if h == 0 {
		code = ol.ErrcInvalidNullHandle
	}
	if oe, ok := err.(*ol.Error); !ok || oe.Code != code || oe.Details == "" {
		t.Fatalf("%#x is not a live handle: got %v, want code %d and a message", h, err, code)
	}
}

// FuzzEventHandleDecode does the same for the table of events, which also
// decodes the events of idle queues kept in C (doneevents.h): live events
// of either kind resolve to their queue; destroyed ones of either kind,
// and anything else, are errors with the event code.
func FuzzEventHandleDecode(f *testing.F) {
	devices := newTable[Device](kindDevice, 1)
	dev := &Device{}
	var err error
	if dev.h, err = devices.insert(dev); err != nil {
		f.Fatal(err)
	}
	events := eventTable{table: newTable[Event](kindEvent, 0xFFFFFFF0), devices: devices}
	events.limit = doneIndexBit - 1
	queue := &Queue{h: 0xB3 << 56, device: dev}
	live := map[uintptr]uintptr{} // handle: its queue
	var dead []uintptr
	for i := 0; i < 3*(reuseDelay+1); i++ {
		e := &Event{device: dev, queueH: uintptr(i)}
		if e.h, err = events.insert(e); err != nil {
			f.Fatal(err)
		}
		goEvent := e.h
		queue.h++
		done, err := makeDoneEvent(queue)
		if err != nil {
			f.Fatal(err)
		}
		if i%5 == 0 {
			live[goEvent], live[done] = uintptr(i), queue.h
			continue
		}
		events.remove(goEvent)
		destroyDoneEvent(done)
		dead = append(dead, goEvent, done)
	}
	f.Cleanup(func() {
		for h := range live {
			destroyDoneEvent(h)
		}
	})
	for h := range live {
		f.Add(uint64(h))
		f.Add(uint64(h) ^ 1<<30)
	}
	f.Add(uint64(dead[0]))
	f.Add(uint64(dead[1]))
	f.Add(uint64(0))
	f.Add(^uint64(0))
	f.Add(uint64(0xB4)<<56 | doneIndexBit)
	f.Add(uint64(0xB4)<<56 | 0x7fffffff<<24 | indexMask)
	f.Fuzz(func(t *testing.T, raw uint64) {
		h := uintptr(raw)
		e, err := events.get(h, "Event")
		if q, ok := live[h]; ok {
			if err != nil || e.queueH != q || e.h != h || e.device != dev {
				t.Fatalf("live event %#x: %+v, %v", h, e, err)
			}
			return
		}
		if e != nil {
			t.Fatalf("%#x is not a live event, but it resolved to %+v", h, e)
		}
		wantRefused(t, h, err, ol.ErrcInvalidEvent)
	})
}
