package impl

/*
#cgo noescape ol_qmirror_reserve
#cgo nocallback ol_qmirror_reserve
#cgo noescape ol_qmirror_unreserve
#cgo nocallback ol_qmirror_unreserve
#cgo nocallback ol_qmirror_reserve_room
#cgo nocallback ol_qmirror_set
#cgo nocallback ol_kmirror_set
#include "queuemirror.h"
*/
import "C"

import "github.com/liboffload-go/liboffload-go/plugins/plugin"

// mirrorQueue files a new queue in the queue mirror (queuemirror.h) when
// its plugin keeps its counters in C and the C entry points answer for
// this initialisation (publishFast), so that they may answer for the
// queue; a queue that cannot be filed takes the Go path only.
func (c *Context) mirrorQueue(q *Queue) {
	if fq, ok := q.q.(plugin.FastQueue); ok && c.fast {
		q.mirrored = C.ol_qmirror_set(C.uint64_t(q.h), C.uint64_t(q.device.h), fq.Fast()) != 0
	}
}

// unmirrorQueue takes q out of the mirror and returns once no C path uses
// it, before its plugin queue is released; the reserved events no caller
// got are destroyed.
func (c *Context) unmirrorQueue(q *Queue) {
	if !q.mirrored {
		return
	}
	// one at a time with reserveEvents: a refill that began before the
	// clear is taken back below, one after it finds the queue gone
	q.reserve.Lock()
	defer q.reserve.Unlock()
	C.ol_qmirror_clear(C.uint64_t(q.h))
	var left [C.OL_QMIRROR_EVENTS]C.uint64_t
	n := int(C.ol_qmirror_unreserve(C.uint64_t(q.h), &left[0], C.int(len(left))))
	for _, h := range left[:n] {
		if e, err := c.events.get(uintptr(h), "Event"); err == nil && c.events.remove(e.h) {
			_ = e.releaseRef()
		}
	}
}

// reserveEvents refills q's ring of reserved events after olCreateEvent
// found q idle, so that the next events of the idle queue are made in C.
// Each refill makes twice as many as the last, up to the ring's size: a
// queue that makes one event now and then reserves few.
func (c *Context) reserveEvents(q *Queue) {
	r := &q.reserve
	r.Lock()
	defer r.Unlock()
	n := min(int(C.ol_qmirror_reserve_room(C.uint64_t(q.h))), max(r.next, 2))
	if n <= 0 {
		return
	}
	r.next = min(2*n, C.OL_QMIRROR_EVENTS)
	evs := make([]Event, n)
	for i := range evs {
		// complete events: no plugin event, so no reference count (refs)
		evs[i].device, evs[i].queueH, evs[i].queueID = q.device, q.h, q.id
	}
	var hs [C.OL_QMIRROR_EVENTS]uintptr
	made := c.events.insertAll(evs, hs[:n], func(e *Event, h uintptr) { e.h = h })
	var ch [C.OL_QMIRROR_EVENTS]C.uint64_t
	for i := range made {
		ch[i] = C.uint64_t(hs[i])
	}
	took := 0
	if made > 0 {
		took = int(C.ol_qmirror_reserve(C.uint64_t(q.h), &ch[0], C.int(made)))
	}
	for _, h := range hs[took:made] { // the ring filled meanwhile
		c.events.remove(h)
	}
}

// mirrorKernel files a kernel symbol in the kernel mirror when its plugin
// gives a C view of it, so that olLaunchKernel may be answered in C.
func (c *Context) mirrorKernel(s *Symbol) {
	fk, ok := s.kernel.(plugin.FastKernel)
	if !ok || !c.fast {
		return
	}
	var known C.int
	var n, first C.uint64_t
	first = ^C.uint64_t(0)
	if pk, ok := s.kernel.(plugin.ParamKernel); ok {
		if params, ok := pk.Params(); ok {
			known, n = 1, C.uint64_t(len(params))
			if len(params) > 0 && params[0].Offset == 0 {
				first = C.uint64_t(params[0].Size)
			}
		}
	}
	s.mirrored = C.ol_kmirror_set(C.uint64_t(s.h), C.uint64_t(s.program.device.h), fk.Fast(), known, n, first) != 0
}

// unmirrorKernel takes s out of the kernel mirror and returns once no C
// launch uses it: before its program may be unloaded.
func (c *Context) unmirrorKernel(s *Symbol) {
	if s.mirrored {
		C.ol_kmirror_clear(C.uint64_t(s.h))
	}
}
