package impl

/*
#cgo noescape ol_done_make
#cgo nocallback ol_done_make
#cgo noescape ol_done_get
#cgo nocallback ol_done_get
#cgo nocallback ol_done_destroy
#cgo nocallback ol_done_state
#cgo noescape ol_done_list
#cgo nocallback ol_done_list
#include "doneevents.h"
*/
import "C"

import (
	"github.com/liboffload-go/liboffload-go/api/ol"
)

// The events of idle queues ("done events": complete when made) live in
// C (doneevents.h), where the C entry points make, sync and destroy them
// without entering Go. Their handles are event handles whose slot index
// has doneIndexBit set; the Go event table hands out only indices below
// it. eventTable decodes both kinds, so the generated entry layer and the
// rest of the runtime see one table of events.

const doneIndexBit = C.OL_DONE_INDEX_BIT

// doneevents.h spells the event tag out: these fail to compile when it
// and handles.go differ
const (
	_ uint = uint(C.OL_DONE_EVENT_TAG) - (tagBase | uint(kindEvent))
	_ uint = (tagBase | uint(kindEvent)) - uint(C.OL_DONE_EVENT_TAG)
	_ uint = indexMask - doneIndexBit // the bit lies in the index
)

func isDoneEvent(h uintptr) bool {
	return h>>tagShift == tagBase|uintptr(kindEvent) && h&doneIndexBit != 0
}

// makeDoneEvent makes a done event of q.
func makeDoneEvent(q *Queue) (uintptr, error) {
	var h C.uint64_t
	if C.ol_done_make(C.uint64_t(q.h), C.uint64_t(q.device.h), &h) == 0 {
		return 0, ol.Errorf(ol.ErrcOutOfResources, "too many live events of idle queues (limit %d)", doneIndexBit)
	}
	return uintptr(h), nil
}

// beginDoneEvents starts the store for a new initialisation (its handles
// after every earlier one's); endDoneEvents destroys what is left at its end.
func beginDoneEvents() { C.ol_done_begin() }
func endDoneEvents()   { C.ol_done_end() }

func doneEventLive(h uintptr) bool { return C.ol_done_get(C.uint64_t(h), nil, nil) != 0 }

func destroyDoneEvent(h uintptr) bool { return C.ol_done_destroy(C.uint64_t(h)) != 0 }

// eventTable is the table of events, done events included; devices
// decodes a done event's device.
type eventTable struct {
	*table[Event]
	devices *table[Device]
}

// get decodes an event handle. A done event gets an Event made for the
// call (the store keeps no Go object): complete, of its queue.
func (t eventTable) get(h uintptr, param string) (*Event, error) {
	if !isDoneEvent(h) {
		return t.table.get(h, param)
	}
	var q, d C.uint64_t
	if C.ol_done_get(C.uint64_t(h), &q, &d) == 0 {
		return nil, t.explain(h, param)
	}
	dev, err := t.devices.get(uintptr(d), param)
	if err != nil {
		return nil, err // (devices live as long as the initialisation)
	}
	return &Event{h: h, queueH: uintptr(q), device: dev}, nil
}

// explain says why h is not a live event.
func (t eventTable) explain(h uintptr, param string) error {
	if !isDoneEvent(h) {
		return t.table.explain(h, param)
	}
	if err := t.wrongKind(h, param); err != nil {
		return err
	}
	switch C.ol_done_state(C.uint64_t(h)) {
	case C.OL_DONE_EARLIER:
		return t.gone(h, param, handleEarlier)
	case C.OL_DONE_DESTROYED:
		return t.gone(h, param, handleDestroyed)
	}
	return t.gone(h, param, handleNeverMade)
}

// doneEvents lists the live done events (handle and queue) for the leak report.
func doneEvents() [][2]uintptr {
	n := int(C.ol_done_list(nil, nil, 0))
	for {
		evs, qs := make([]C.uint64_t, n+1), make([]C.uint64_t, n+1)
		got := int(C.ol_done_list(&evs[0], &qs[0], C.int(len(evs))))
		if got <= len(evs) {
			out := make([][2]uintptr, got)
			for i := range out {
				out[i] = [2]uintptr{uintptr(evs[i]), uintptr(qs[i])}
			}
			return out
		}
		n = got
	}
}
