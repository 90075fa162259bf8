package impl

/*
#cgo nocallback ol_qmirror_set
#cgo nocallback ol_qmirror_quiesce
#cgo nocallback ol_kmirror_set
#cgo noescape ol_kmirror_set
#include <stdlib.h>
#include <string.h>
#include "queuemirror.h"

// lay_out_copy runs ol_qmirror_lay_out over the n arguments packed one
// after another in blob (NULL where nulls[i]), all in C memory, and
// copies what it gives into out: 1 and *size, or 0.
static int lay_out_copy(uint64_t kparams, const uint64_t *params, size_t n, const size_t *sizes,
                        const unsigned char *blob, size_t blobSize, const unsigned char *nulls,
                        unsigned char *out, size_t *size) {
  unsigned char *mem = malloc(blobSize + 1), buf[OL_QMIRROR_LAYOUT_MAX];
  void **ptrs = malloc(sizeof *ptrs * (n + 1));
  int ok = 0;
  if (mem && ptrs) {
    memcpy(mem, blob, blobSize);
    for (size_t i = 0, off = 0; i < n; off += sizes[i], i++)
      ptrs[i] = nulls[i] ? NULL : mem + off;
    const void *args;
    if ((ok = ol_qmirror_lay_out(kparams, params, n, ptrs, sizes, buf, &args, size)) && *size)
      memcpy(out, args, *size);
  }
  free(mem);
  free(ptrs);
  return ok;
}
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
// gives a C view of it, so that olLaunchKernel may be answered in C; with
// its parameters' offsets and sizes where the device knows them, for
// 23.1's argument arrays.
func (c *Context) mirrorKernel(s *Symbol) {
	fk, ok := s.kernel.(plugin.FastKernel)
	if !ok || !c.fast {
		return
	}
	var known C.int
	var list []C.uint64_t
	if pk, ok := s.kernel.(plugin.ParamKernel); ok {
		if params, ok := pk.Params(); ok {
			known = 1
			list = make([]C.uint64_t, 0, 2*len(params))
			for _, p := range params {
				list = append(list, C.uint64_t(p.Offset), C.uint64_t(p.Size))
			}
		}
	}
	var first *C.uint64_t
	if len(list) > 0 {
		first = &list[0]
	}
	s.mirrored = C.ol_kmirror_set(C.uint64_t(s.h), C.uint64_t(s.program.device.h), fk.Fast(), known, C.uint64_t(len(list)/2), first) != 0
}

// unmirrorKernel takes s out of the kernel mirror and returns once no C
// launch uses it: before its program may be unloaded.
func (c *Context) unmirrorKernel(s *Symbol) {
	if s.mirrored {
		C.ol_kmirror_clear(C.uint64_t(s.h))
	}
}

// layOutInC lays out arguments as the C launch path does, for the tests
// that hold it to layOutArgs: the arguments' bytes one after another in
// blob (sizes), nulls[i] passing argument i as NULL; ok false where C
// leaves the layout to Go. args are the bytes the launch would get.
func layOutInC(params []plugin.Param, known bool, sizes []uint64, blob []byte, nulls []bool) (args []byte, ok bool) {
	kp := C.uint64_t(len(sizes))
	var list []C.uint64_t
	if known {
		kp = C.OL_KMIRROR_KNOWN | C.uint64_t(len(params))
		for _, p := range params {
			list = append(list, C.uint64_t(p.Offset), C.uint64_t(p.Size))
		}
	}
	list = append(list, 0) // (never empty)
	cs := make([]C.size_t, len(sizes)+1)
	cn := make([]C.uchar, len(sizes)+1)
	for i, sz := range sizes {
		cs[i] = C.size_t(sz)
		if nulls[i] {
			cn[i] = 1
		}
	}
	blob = append(blob, 0)
	out := make([]byte, max(C.OL_QMIRROR_LAYOUT_MAX, len(blob))) // (one argument in place: its size)
	var size C.size_t
	if C.lay_out_copy(kp, &list[0], C.size_t(len(sizes)), &cs[0], (*C.uchar)(&blob[0]), C.size_t(len(blob)),
		&cn[0], (*C.uchar)(&out[0]), &size) == 0 {
		return nil, false
	}
	return out[:size], true
}
