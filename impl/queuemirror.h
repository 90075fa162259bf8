// The queue mirror: for each live queue whose plugin keeps its counters in
// C memory (plugin.FastQueue, plugins/plugin/fastq.h), its handle, device
// and ol_fastq, by the handle's slot index, so that the C entry points
// answer olSyncQueue and olCreateEvent of an idle queue and submit copies
// on it without entering Go (RATIONALE.md, "Why do idle-queue syncs,
// events and GPU copies not enter Go?").
//
// A C path that submits on a queue counts the submission as begun in the
// queue's ol_fastq, then checks that the slot still holds its handle;
// ol_qmirror_clear takes the handle out, and before the plugin releases
// the queue the runtime waits until begun == handed (ol_qmirror_quiesce),
// so the driver stream behind it stays valid while any C path uses it,
// also when a caller destroys a queue while another thread still uses its
// handle. A kernel's slot counts its C users, and ol_kmirror_clear waits
// for them. Slots are in chunks that are never freed.
#ifndef LIBOFFLOAD_GO_QUEUEMIRROR_H
#define LIBOFFLOAD_GO_QUEUEMIRROR_H

#include <stddef.h>
#include <stdint.h>

#include "allocmap.h"

#define OL_QMIRROR_HIDDEN __attribute__((visibility("hidden")))

// the tag bytes of queue and symbol handles (impl/handles.go: tagBase |
// kindQueue, kindSymbol)
#define OL_QMIRROR_QUEUE_TAG 0xB3u
#define OL_QMIRROR_SYMBOL_TAG 0xB6u

// ol_qmirror_set files queue h of device dev with its ol_fastq (created, or
// not used by any C path yet); 0 when out of memory (the queue then takes
// the Go path only). ol_qmirror_clear takes h out: no C path submits on
// it after ol_qmirror_quiesce(fastq) has returned, which the runtime calls
// when no Go call uses the queue any more, before the plugin releases it.
int ol_qmirror_set(uint64_t h, uint64_t dev, void *fastq) OL_QMIRROR_HIDDEN;
void ol_qmirror_clear(uint64_t h) OL_QMIRROR_HIDDEN;
void ol_qmirror_quiesce(void *fastq) OL_QMIRROR_HIDDEN;

// ol_fast_sync returns 1 when olSyncQueue(queue) would return success at
// once (a live mirrored queue, idle, nothing to report); else 0 and the
// Go path answers. The shims declare it themselves (cmd/liboffload/shim.h).
int ol_fast_sync(const void *queue) OL_QMIRROR_HIDDEN;

// ol_qmirror_copy submits olMemcpy on queue through its plugin's C copy
// when the Go path would submit the same copy to the same plugin call: the
// two devices are the queue's device, or one of them the host device; the
// ranges do not wrap or overlap; a side named with the queue's device lies
// inside one allocation of that device, and a side named with the host
// device inside one pinned or managed allocation of a GPU (other host
// memory may make the driver wait). These are sides the Go path's
// sideDevice (impl/route.go) copies as named; a pointer named with a
// device it does not belong to never passes them, and Go refuses it or
// copies it through its own device. 1 when submitted; else 0, having done
// nothing.
int ol_qmirror_copy(const ol_fast_state *st, uint64_t queue, uint64_t dst, uint64_t dstDev, uint64_t src,
                    uint64_t srcDev, size_t size) OL_QMIRROR_HIDDEN;

// olCreateEvent of an idle queue (no profiling): a done event of the queue
// (doneevents.h), the event Go would make there, complete at once.
int ol_fast_event(const void *queue, void *event) OL_QMIRROR_HIDDEN;
int ol_fast_event23(const void *queue, uint32_t flags, void *event) OL_QMIRROR_HIDDEN;
// olWaitEvents on a live mirrored queue of events that are all done events
// (complete): nothing to wait for.
int ol_fast_wait_events(const void *queue, const void *events, size_t n) OL_QMIRROR_HIDDEN;

// Kernels. A kernel symbol whose plugin gives a C view of it
// (plugin.FastKernel) is filed by its handle in a second table, cleared
// (waiting for its C users) before its program is unloaded.
// ol_fast_launch submits olLaunchKernel (22.1's form) through the queue's
// ol_fastq.launch when the queue and the kernel are mirrored, of the named
// device, and the plugin's checks pass: 1 when submitted; else 0, having
// done nothing.
// known: the kernel's parameters are known: nparams of them, params
// holding each one's offset and size in turn (copied).
int ol_kmirror_set(uint64_t h, uint64_t dev, void *kernel, int known, uint64_t nparams,
                   const uint64_t *params) OL_QMIRROR_HIDDEN;
#define OL_KMIRROR_KNOWN (1ull << 63)
#define OL_KMIRROR_COUNT 0xffffffffull
void ol_kmirror_clear(uint64_t h) OL_QMIRROR_HIDDEN;
int ol_fast_launch(const void *queue, const void *device, const void *kernel, const void *args, size_t size,
                   const void *launchSize) OL_QMIRROR_HIDDEN;
// ol_fast_launch23: 23.1's olLaunchKernel, with no launch property; its
// arguments laid out in C up to 4 KiB (more are laid out by Go).
int ol_fast_launch23(const void *queue, const void *device, const void *kernel, const void *launchSize,
                     const void *properties, size_t numArgs, void *const *argPtrs,
                     const size_t *argSizes) OL_QMIRROR_HIDDEN;
// argument buffers up to this size only (the Go path checks larger ones)
#define OL_QMIRROR_MAX_ARGS (1u << 20)
// ol_qmirror_lay_out lays 23.1's nargs arguments out as impl/release23.go
// layOutArgs does, for a kernel whose kparams are OL_KMIRROR_KNOWN | count
// (with params: each one's offset and size in turn) or 0 | count (unknown):
// 1 with *args, *size what to launch with (buf, of OL_QMIRROR_LAYOUT_MAX
// bytes, or the one argument in place); 0 when Go is to lay them out (more
// bytes, or an error for Go to name: a count or size that does not match,
// several arguments of a kernel whose parameters are unknown).
#define OL_QMIRROR_LAYOUT_MAX 4096u
int ol_qmirror_lay_out(uint64_t kparams, const uint64_t *params, size_t nargs, void *const *ptrs, const size_t *sizes,
                       unsigned char *buf, const void **args, size_t *size) OL_QMIRROR_HIDDEN;

#endif
