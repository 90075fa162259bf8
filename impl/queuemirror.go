package impl

/*
#cgo nocallback ol_qmirror_set
#cgo nocallback ol_qmirror_quiesce
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

// unmirrorQueue takes q out of the mirror: no C path starts a submission
// on it afterwards. One may be under way until quiesceQueue.
func (c *Context) unmirrorQueue(q *Queue) {
	if q.mirrored {
		C.ol_qmirror_clear(C.uint64_t(q.h))
	}
}

// quiesceQueue returns once no C path submits on q, taken out of the
// mirror: called when no Go call uses q any more (a Go submission in
// flight counts too, and may wait in the driver for work of q), before
// the plugin may release q or its pending work is marked.
func (c *Context) quiesceQueue(q *Queue) {
	if q.mirrored {
		C.ol_qmirror_quiesce(q.q.(plugin.FastQueue).Fast())
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
