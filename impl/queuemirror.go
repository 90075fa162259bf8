package impl

/*
#include "queuemirror.h"
*/
import "C"

import "github.com/liboffload-go/liboffload-go/plugins/plugin"

// mirrorQueue files a new queue in the queue mirror (queuemirror.h) when
// its plugin keeps its counters in C, so that the C entry points may
// answer for it; a queue that cannot be filed takes the Go path only.
func mirrorQueue(q *Queue) {
	if fq, ok := q.q.(plugin.FastQueue); ok {
		C.ol_qmirror_set(C.uint64_t(q.h), C.uint64_t(q.device.h), fq.Fast())
	}
}

// unmirrorQueue takes q out of the mirror and returns once no C path uses
// it: before its plugin queue is released.
func unmirrorQueue(q *Queue) {
	if _, ok := q.q.(plugin.FastQueue); ok {
		C.ol_qmirror_clear(C.uint64_t(q.h))
	}
}
