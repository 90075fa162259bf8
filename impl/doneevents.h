// Done events: the events olCreateEvent makes on an idle queue, which are
// complete when made, kept in C so that making, syncing and destroying one
// never enters Go (RATIONALE.md, "Why are the events of idle queues made
// in C?").
//
// Their handles are event handles (impl/handles.go) whose slot index has
// OL_DONE_INDEX_BIT set: the Go event table never hands those indices out,
// and decodes them here (impl/doneevents.go). A slot holds its live handle
// (0 when none), the queue and the device of the event. Generations go on
// across initialisations, as the Go tables' do: a handle of an earlier
// one never matches, and is told apart from a destroyed one.
//
// Handles are minted ahead under one lock into a ring that makers take
// from with a compare-and-swap; destroyed slots wait in a FIFO behind
// OL_DONE_REUSE_DELAY others before they are minted again, so one slot's
// generation advances slowly. Slots are in chunks that are never freed.
#ifndef LIBOFFLOAD_GO_DONEEVENTS_H
#define LIBOFFLOAD_GO_DONEEVENTS_H

#include <stddef.h>
#include <stdint.h>

#define OL_DONE_HIDDEN __attribute__((visibility("hidden")))

// the tag byte of event handles (impl/handles.go: tagBase | kindEvent)
#define OL_DONE_EVENT_TAG 0xB4u
#define OL_DONE_INDEX_BIT (1u << 23)
#define OL_DONE_REUSE_DELAY 64

// ol_done_begin starts an initialisation: its handles' generations come
// after every one handed out before, and events left from the last one
// (made by a call that raced its final olShutDown) are gone.
void ol_done_begin(void) OL_DONE_HIDDEN;
// ol_done_end ends it: every live done event is destroyed.
void ol_done_end(void) OL_DONE_HIDDEN;

// ol_done_make makes a live done event of queue (of device dev) into *out:
// 1, or 0 when the store is full or out of memory.
int ol_done_make(uint64_t queue, uint64_t dev, uint64_t *out) OL_DONE_HIDDEN;
// ol_done_get: 1 when e is a live done event of this initialisation, with
// its queue and device (either may be NULL).
int ol_done_get(uint64_t e, uint64_t *queue, uint64_t *dev) OL_DONE_HIDDEN;
// ol_done_destroy destroys live done event e: 1, or 0 when e is not one.
int ol_done_destroy(uint64_t e) OL_DONE_HIDDEN;

// what a handle with OL_DONE_INDEX_BIT that is not live is (ol_done_state)
#define OL_DONE_NEVER 0     // never handed out
#define OL_DONE_DESTROYED 1 // destroyed
#define OL_DONE_EARLIER 2   // of an earlier initialisation
int ol_done_state(uint64_t e) OL_DONE_HIDDEN;

// ol_done_list writes up to cap live done events and their queues to
// events and queues; returns how many are live (for the leak report).
int ol_done_list(uint64_t *events, uint64_t *queues, int cap) OL_DONE_HIDDEN;

// The C entry points' fast paths (cmd/liboffload/shim.h declares them):
// 1 when olSyncEvent, olDestroyEvent, olGetEventInfo[Size] of event
// succeeded here, else 0 and the Go path answers (tracing on, not a live
// done event, a property it does not answer, an error). olWaitEvents of
// done events only: ol_fast_wait_events (queuemirror.h).
int ol_fast_sync_event(const void *event) OL_DONE_HIDDEN;
int ol_fast_destroy_event(const void *event) OL_DONE_HIDDEN;
int ol_fast_event_info(const void *event, uint32_t prop, size_t propSize, void *value) OL_DONE_HIDDEN;
int ol_fast_event_info_size(const void *event, uint32_t prop, size_t *sizeRet) OL_DONE_HIDDEN;

#endif
