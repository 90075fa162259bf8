/* LLVM 23.1's profiling events and queue query: olCreateEvent(Queue, Flags,
 * Event) with OL_EVENT_FLAGS_ENABLE_PROFILING, olGetEventElapsedTime, and
 * olQueryQueue. Built with RELEASE=23.1 only (TESTS23 in the Makefile); in
 * MIXED_TESTS too, where events of two platforms are measured against each
 * other (refused). The 23.1 olCreateEvent is written `(olCreateEvent)(...)`:
 * olrelease.h maps the unbracketed 22.1 spelling.
 * SPDX-License-Identifier: Apache-2.0 */
#include "oldevices.h"

#if OLC_RELEASE < 23
#error "event23.c tests the 23.1 events: build it with RELEASE=23.1"
#endif

static ol_event_handle_t timed_event(ol_queue_handle_t q) {
  ol_event_handle_t e = NULL;
  if (!OLC_OK((olCreateEvent)(q, OL_EVENT_FLAGS_ENABLE_PROFILING, &e)))
    return NULL;
  OLC_TRUE(e != NULL);
  return e;
}

static void sleep_fn(void *user) { olc_sleep_ms((unsigned)(uintptr_t)user); }

/* Around a copy and around a 30 ms host function: elapsed >= 0 from start
 * to end, the reverse not positive, an event to itself 0. */
static void test_elapsed_around_work(void) {
  ol_queue_handle_t q = olc_queue();
  enum { N = 1 << 16 };
  uint32_t *d = olc_alloc(OL_ALLOC_TYPE_DEVICE, N * sizeof(uint32_t));
  uint32_t *h = calloc(N, sizeof(uint32_t));
  if (!q || !d || !h)
    goto out;
  for (uint32_t i = 0; i < N; i++)
    h[i] = i * 7u;
  ol_event_handle_t e0 = timed_event(q);
  OLC_OK(olMemcpy(q, d, olc_dev, h, olc_host, N * sizeof(uint32_t)));
  ol_event_handle_t e1 = timed_event(q);
  OLC_OK(olLaunchHostFunction(q, sleep_fn, (void *)(uintptr_t)30));
  ol_event_handle_t e2 = timed_event(q);
  if (e0 && e1 && e2) {
    float t01 = -1, t12 = -1, t02 = -1, t10 = 1, t00 = 1;
    /* measured once both completed (the call waits for them) */
    OLC_OK(olGetEventElapsedTime(e0, e1, &t01));
    OLC_OK(olGetEventElapsedTime(e1, e2, &t12));
    OLC_OK(olGetEventElapsedTime(e0, e2, &t02));
    OLC_OK(olGetEventElapsedTime(e1, e0, &t10));
    OLC_OK(olGetEventElapsedTime(e0, e0, &t00));
    OLC_CHECK(t01 >= 0, "copy: elapsed %f ms, expected >= 0", t01);
    OLC_CHECK(t12 >= 20, "30 ms host function: elapsed %f ms, expected >= 20", t12);
    OLC_CHECK(t02 >= t12 && t02 >= t01, "start to end %f ms, expected >= its parts %f, %f", t02, t01, t12);
    OLC_CHECK(t10 <= 0, "end to start: %f ms, expected <= 0", t10);
    OLC_CHECK(t00 == 0, "an event to itself: %f ms, expected 0", t00);
    OLC_OK(olSyncEvent(e2));
  }
  OLC_OK(olSyncQueue(q));
  uint32_t back[16];
  if (olc_read(back, d, sizeof back))
    OLC_EQ_ARRAY(back, 16, i * 7u);
  if (e0)
    OLC_OK(olDestroyEvent(e0));
  if (e1)
    OLC_OK(olDestroyEvent(e1));
  if (e2)
    OLC_OK(olDestroyEvent(e2));
out:
  if (d)
    OLC_OK(olMemFree(d));
  free(h);
  if (q)
    OLC_OK(olDestroyQueue(q));
}

struct foo_args {
  uint32_t *out;
};

/* Around a kernel; a profiling event is an event like any other (sync,
 * info, waited for by another queue). */
static void test_elapsed_around_kernel(void) {
  ol_program_handle_t p = olc_program("foo");
  ol_symbol_handle_t k = olc_kernel(p, "foo");
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_DEVICE, 256 * sizeof(uint32_t));
  ol_queue_handle_t q = olc_queue(), q2 = olc_queue();
  if (!k || !out || !q || !q2)
    goto out;
  ol_event_handle_t e0 = timed_event(q);
  struct foo_args a = {out};
  ol_kernel_launch_size_args_t l = olc_size1(4, 64);
  OLC_OK(olLaunchKernel(q, olc_dev, k, &a, sizeof a, &l));
  ol_event_handle_t e1 = timed_event(q);
  if (e0 && e1) {
    ol_queue_handle_t owner = NULL;
    OLC_OK(olGetEventInfo(e1, OL_EVENT_INFO_QUEUE, sizeof owner, &owner));
    OLC_PTR_EQ(owner, q);
    OLC_OK(olWaitEvents(q2, &e1, 1));
    OLC_OK(olSyncQueue(q2));
    bool done = false;
    OLC_OK(olGetEventInfo(e1, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done));
    OLC_TRUE(done);
    float t = -1;
    OLC_OK(olGetEventElapsedTime(e0, e1, &t));
    OLC_CHECK(t >= 0, "kernel: elapsed %f ms, expected >= 0", t);
  }
  OLC_OK(olSyncQueue(q));
  uint32_t h[256];
  if (olc_read(h, out, sizeof h))
    OLC_EQ_ARRAY(h, 256, i);
  if (e0)
    OLC_OK(olDestroyEvent(e0));
  if (e1)
    OLC_OK(olDestroyEvent(e1));
out:
  if (out)
    OLC_OK(olMemFree(out));
  if (q)
    OLC_OK(olDestroyQueue(q));
  if (q2)
    OLC_OK(olDestroyQueue(q2));
  if (p)
    OLC_OK(olDestroyProgram(p));
}

/* Plain events cannot be measured; the NULL and handle checks. */
static void test_elapsed_errors(void) {
  ol_queue_handle_t q = olc_queue();
  ol_event_handle_t plain = NULL, plain2 = NULL;
  OLC_OK((olCreateEvent)(q, OL_EVENT_FLAGS_NONE, &plain));
  OLC_OK(olCreateEvent(q, &plain2)); /* the 22.1 spelling: a plain event */
  float t = 123;
  OLC_ERR_HAS(olGetEventElapsedTime(plain, plain2, &t), OL_ERRC_INVALID_ARGUMENT, "StartEvent");
  OLC_CHECK(t == 123, "a refused call wrote %f", t);
  ol_event_handle_t timed = timed_event(q);
  if (timed) {
    OLC_ERR_HAS(olGetEventElapsedTime(plain, timed, &t), OL_ERRC_INVALID_ARGUMENT, "StartEvent");
    OLC_ERR_HAS(olGetEventElapsedTime(timed, plain, &t), OL_ERRC_INVALID_ARGUMENT, "EndEvent");
    OLC_ERR_CODE(olGetEventElapsedTime(NULL, timed, &t), OL_ERRC_INVALID_NULL_HANDLE);
    OLC_ERR_CODE(olGetEventElapsedTime(timed, NULL, &t), OL_ERRC_INVALID_NULL_HANDLE);
    OLC_ERR_CODE(olGetEventElapsedTime(timed, timed, NULL), OL_ERRC_INVALID_NULL_POINTER);
    ol_event_handle_t gone = timed_event(q);
    if (gone) {
      OLC_OK(olDestroyEvent(gone));
      OLC_ERR_CODE(olGetEventElapsedTime(gone, timed, &t), OL_ERRC_INVALID_EVENT);
      OLC_ERR_CODE(olGetEventElapsedTime(timed, gone, &t), OL_ERRC_INVALID_EVENT);
    }
    OLC_OK(olDestroyEvent(timed));
  }
  OLC_ERR_CODE(olGetEventElapsedTime(NULL, plain, &t), OL_ERRC_INVALID_NULL_HANDLE);
  OLC_ERR_CODE(olGetEventElapsedTime(plain, plain, NULL), OL_ERRC_INVALID_NULL_POINTER);
  OLC_OK(olDestroyEvent(plain));
  OLC_OK(olDestroyEvent(plain2));
  OLC_OK(olDestroyQueue(q));
}

/* Flags that are not an ol_event_flags_t; the NULL checks of olCreateEvent. */
static void test_create_flags(void) {
  ol_queue_handle_t q = olc_queue();
  ol_event_handle_t e = (ol_event_handle_t)0x1;
  OLC_ERR_HAS((olCreateEvent)(q, OL_EVENT_FLAGS_LAST, &e), OL_ERRC_INVALID_ENUMERATION, "Flags");
  OLC_ERR_CODE((olCreateEvent)(q, (ol_event_flags_t)3, &e), OL_ERRC_INVALID_ENUMERATION);
  OLC_ERR_CODE((olCreateEvent)(q, (ol_event_flags_t)OLC_BIG, &e), OL_ERRC_INVALID_ENUMERATION);
  OLC_EQ((uintptr_t)e, 1); /* refused calls leave the handle alone */
  OLC_ERR_CODE((olCreateEvent)(NULL, OL_EVENT_FLAGS_ENABLE_PROFILING, &e), OL_ERRC_INVALID_NULL_HANDLE);
  OLC_ERR_CODE((olCreateEvent)(q, OL_EVENT_FLAGS_ENABLE_PROFILING, NULL), OL_ERRC_INVALID_NULL_POINTER);
  /* the code-location twin */
  ol_code_location_t loc = {"test_create_flags", "event23.c", 1, 1};
  e = NULL;
  if (OLC_OK((olCreateEventWithCodeLoc)(q, OL_EVENT_FLAGS_ENABLE_PROFILING, &e, &loc)))
    OLC_OK(olDestroyEvent(e));
  OLC_ERR_CODE((olCreateEventWithCodeLoc)(q, (ol_event_flags_t)2, &e, &loc), OL_ERRC_INVALID_ENUMERATION);
  OLC_OK(olDestroyQueue(q));
  OLC_ERR_CODE((olCreateEvent)(q, OL_EVENT_FLAGS_ENABLE_PROFILING, &e), OL_ERRC_INVALID_QUEUE);
}

/* Profiling events of devices of two platforms: their clocks differ. */
static void test_elapsed_two_platforms(void) {
  olc_devlist l;
  ol_device_handle_t other = NULL;
  if (OLC_OK(olc_list_devices(&l)))
    for (int i = 0; i < l.n && !other; i++)
      if (l.sel[i].backend != olc_backend)
        other = l.dev[i];
  if (!OLC_NEEDS(other != NULL, "a device of another platform (check-fake-mixed)"))
    return;
  ol_queue_handle_t q = olc_queue(), q2 = NULL;
  OLC_OK(olCreateQueue(other, &q2));
  ol_event_handle_t a = timed_event(q), b = q2 ? timed_event(q2) : NULL;
  float t = 5;
  if (a && b) {
    OLC_ERR_HAS(olGetEventElapsedTime(a, b, &t), OL_ERRC_INVALID_ARGUMENT, "platforms");
    OLC_ERR_HAS(olGetEventElapsedTime(b, a, &t), OL_ERRC_INVALID_ARGUMENT, "platforms");
  }
  if (a)
    OLC_OK(olDestroyEvent(a));
  if (b)
    OLC_OK(olDestroyEvent(b));
  if (q2)
    OLC_OK(olDestroyQueue(q2));
  OLC_OK(olDestroyQueue(q));
}

/* olQueryQueue: true when idle, false while a host function holds the
 * queue, true once it is done; the out-pointer is optional. */
static void test_query_queue(void) {
  ol_queue_handle_t q = olc_queue();
  if (!q)
    return;
  bool done = false;
  OLC_OK(olQueryQueue(q, &done));
  OLC_TRUE(done);
  OLC_OK(olQueryQueue(q, NULL));
  olc_gate g;
  if (olc_gate_close(&g, q)) {
    OLC_TRUE(olc_gate_wait_entered(&g));
    /* and work behind the held function */
    uint32_t a = 9, b = 0;
    OLC_OK(olMemcpy(q, &b, olc_host, &a, olc_host, sizeof a));
    done = true;
    OLC_OK(olQueryQueue(q, &done));
    OLC_TRUE(!done);
    OLC_OK(olQueryQueue(q, NULL));
    done = true;
    OLC_OK(olQueryQueue(q, &done));
    OLC_TRUE(!done);
    olc_gate_open(&g);
    OLC_OK(olSyncQueue(q));
    OLC_EQ(b, 9);
    done = false;
    OLC_OK(olQueryQueue(q, &done));
    OLC_TRUE(done);
  }
  /* polled to completion without a sync */
  if (olc_gate_close(&g, q)) {
    done = true;
    OLC_OK(olQueryQueue(q, &done));
    OLC_TRUE(!done);
    olc_gate_open(&g);
    double t0 = olc_now_ms();
    do {
      OLC_OK(olQueryQueue(q, &done));
    } while (!done && olc_now_ms() - t0 < 5000 && (olc_sleep_ms(1), 1));
    OLC_CHECK(done, "olQueryQueue still false 5 s after the queue's work ended");
  }
  ol_code_location_t loc = {"test_query_queue", "event23.c", 1, 1};
  OLC_OK(olQueryQueueWithCodeLoc(q, &done, &loc));
  OLC_ERR_CODE(olQueryQueue(NULL, &done), OL_ERRC_INVALID_NULL_HANDLE);
  OLC_OK(olDestroyQueue(q));
  OLC_ERR_HAS(olQueryQueue(q, &done), OL_ERRC_INVALID_QUEUE, "destroyed");
}

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    OLC_RUN(test_elapsed_around_work);
    OLC_RUN(test_elapsed_around_kernel);
    OLC_RUN(test_elapsed_errors);
    OLC_RUN(test_create_flags);
    OLC_RUN(test_elapsed_two_platforms);
    OLC_RUN(test_query_queue);
  }
  return olc_finish("event23");
}
