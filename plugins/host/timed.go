package host

import (
	"sync/atomic"
	"time"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

var (
	_ plugin.TimedQueue    = (*queue)(nil)
	_ plugin.TimedEvent    = (*timedEvent)(nil)
	_ plugin.PrefetchQueue = (*queue)(nil)
)

// epoch is the origin of the timestamps: time.Since reads Go's monotonic
// clock, so wall-clock changes do not move them.
var epoch = time.Now()

// timedEvent is an event that also knows when its queue passed it: a stamp
// op in the queue's order writes the time.
type timedEvent struct {
	event
	at atomic.Int64 // nanoseconds since epoch; 0 until the stamp has run
}

// RecordTimed implements plugin.TimedQueue.
func (q *queue) RecordTimed() (plugin.TimedEvent, error) {
	e := &timedEvent{}
	q.push(op{kind: opCall, call: func() error {
		e.at.Store(max(int64(time.Since(epoch)), 1))
		return nil
	}}, nil)
	// the stamp is the last op pushed; the event completes with it (a
	// concurrent push only makes the event later, as with Record)
	e.event = event{q: q, mark: q.submitted.Load()}
	return e, nil
}

// Release implements plugin.Event: timed events are not pooled.
func (e *timedEvent) Release() error { return nil }

// ElapsedSince implements plugin.TimedEvent.
func (e *timedEvent) ElapsedSince(start plugin.TimedEvent) (float32, error) {
	s, ok := start.(*timedEvent)
	if !ok {
		return 0, ol.Errorf(ol.ErrcInvalidArgument, "host: the start event is not a profiling event of the host device")
	}
	a, b := s.at.Load(), e.at.Load()
	if a == 0 || b == 0 {
		return 0, ol.Errorf(ol.ErrcInvalidArgument, "host: a profiling event has not completed")
	}
	return float32(float64(b-a) / 1e6), nil
}

// Prefetch implements plugin.PrefetchQueue: the host device's memory is
// already where its kernels run, so there is nothing to move.
func (q *queue) Prefetch(uintptr, plugin.Device, uint64, bool) error { return nil }
