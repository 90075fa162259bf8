// Shared by the generated entry points: the public header, the Go exports
// and the guard that refuses calls from a child created by fork().
#ifndef LIBOFFLOAD_GO_SHIM_H
#define LIBOFFLOAD_GO_SHIM_H

#include <stdint.h>

#include "zapi.h"
#include "_cgo_export.h"
#include "zchecks.h"

// The info snapshot (impl/snapshot.h): the info shims of platforms and
// devices, and olIterateDevices, try it first; it answers successes only
// (1, or the number of handles listed), else 0 (-1) and the shim calls Go.
int ol_snap_info(unsigned kind, uint64_t h, uint32_t prop, size_t propSize,
                 void *value) __attribute__((visibility("hidden")));
int ol_snap_size(unsigned kind, uint64_t h, uint32_t prop, size_t *sizeRet)
    __attribute__((visibility("hidden")));
int ol_snap_list(unsigned kind, uint64_t *out, int cap)
    __attribute__((visibility("hidden")));

// The fast paths over the allocation index (impl/allocmap.h): olMemcpy,
// olGetMemInfo and olGetMemInfoSize try them first; they answer successes
// only (1), else 0 and the shim calls Go.
int ol_fast_memcpy(const void *queue, void *dst, const void *dstDev,
                   const void *src, const void *srcDev, size_t size)
    __attribute__((visibility("hidden")));
int ol_fast_meminfo(const void *ptr, uint32_t prop, size_t propSize,
                    void *value) __attribute__((visibility("hidden")));
int ol_fast_meminfo_size(const void *ptr, uint32_t prop, size_t *sizeRet)
    __attribute__((visibility("hidden")));
// The allocation pool's paths (impl/pool.h): olMemAlloc and olMemFree of
// small blocks of a device with a pool.
int ol_fast_alloc(const void *device, uint32_t type, size_t size, void *out) __attribute__((visibility("hidden")));
int ol_fast_free(const void *ptr) __attribute__((visibility("hidden")));
// The fast paths over the queue mirror (impl/queuemirror.h): olSyncQueue
// and olCreateEvent of an idle queue, olLaunchKernel on a queue.
int ol_fast_sync(const void *queue) __attribute__((visibility("hidden")));
int ol_fast_event(const void *queue, void *event) __attribute__((visibility("hidden")));
int ol_fast_event23(const void *queue, uint32_t flags, void *event) __attribute__((visibility("hidden")));
int ol_fast_launch(const void *queue, const void *device, const void *kernel, const void *args, size_t size,
                   const void *launchSize) __attribute__((visibility("hidden")));
int ol_fast_launch23(const void *queue, const void *device, const void *kernel, const void *launchSize,
                     const void *properties, size_t numArgs, void *const *argPtrs, const size_t *argSizes)
    __attribute__((visibility("hidden")));
// The fast paths over the done events (impl/doneevents.h): olSyncEvent,
// olDestroyEvent and olGetEventInfo[Size] of an event made on an idle
// queue, and olWaitEvents of such events.
int ol_fast_sync_event(const void *event) __attribute__((visibility("hidden")));
int ol_fast_destroy_event(const void *event) __attribute__((visibility("hidden")));
int ol_fast_event_info(const void *event, uint32_t prop, size_t propSize, void *value)
    __attribute__((visibility("hidden")));
int ol_fast_event_info_size(const void *event, uint32_t prop, size_t *sizeRet) __attribute__((visibility("hidden")));
int ol_fast_wait_events(const void *queue, const void *events, size_t n) __attribute__((visibility("hidden")));

// Set in the child of a fork(): the Go runtime's threads did not survive it,
// so entering Go could hang. Calls return ol_fork_result instead.
extern volatile int ol_forked_child;
extern const ol_error_struct_t ol_fork_result;

#define OL_FORK_GUARD()                                                        \
  do {                                                                         \
    if (__builtin_expect(ol_forked_child, 0))                                  \
      return &ol_fork_result;                                                  \
  } while (0)

#endif
