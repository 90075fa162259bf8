/* Events of the device under test: olCreateEvent, olSyncEvent, olDestroyEvent,
 * olGetEventInfo(Size).
 * SPDX-License-Identifier: Apache-2.0 */
#include "hcheck.h"

static void test_create(void) {
  ol_queue_handle_t q = hc_queue();
  ol_event_handle_t e1 = NULL, e2 = NULL;
  /* on an empty queue */
  OK(olCreateEvent(q, &e1));
  TRUE(e1 != NULL);
  /* after some work */
  uint32_t a = 3, b = 0;
  OK(olMemcpy(q, &b, hc_host, &a, hc_host, sizeof a));
  OK(olCreateEvent(q, &e2));
  TRUE(e2 != NULL && e2 != e1);
  OK(olSyncEvent(e2));
  EQ(b, 3);
  OK(olSyncEvent(e1));
  OK(olDestroyEvent(e1));
  OK(olDestroyEvent(e2));
  OK(olDestroyQueue(q));
}

static void test_create_errors(void) {
  ol_queue_handle_t q = hc_queue();
  ol_event_handle_t e = (ol_event_handle_t)0x1;
  OK(olDestroyQueue(q));
  ERR(olCreateEvent(q, &e), OL_ERRC_INVALID_QUEUE, "destroyed");
  EQ((uintptr_t)e, 1); /* a refused call leaves the handle alone */
}

static void test_sync_repeat(void) {
  ol_queue_handle_t q = hc_queue();
  enum { N = 4096 };
  /* memory a queue of any device may fill */
  uint32_t *dst = hc_alloc(OL_ALLOC_TYPE_DEVICE, N * sizeof(uint32_t));
  if (!dst)
    return;
  uint32_t v = 42;
  OK(olMemFill(q, dst, sizeof v, &v, N * sizeof(uint32_t)));
  ol_event_handle_t e = NULL;
  OK(olCreateEvent(q, &e));
  for (int i = 0; i < 10; i++)
    OK(olSyncEvent(e));
  EQ_DARRAY(uint32_t, dst, N, 42u);
  OK(olMemFree(dst));
  OK(olDestroyEvent(e));
  OK(olDestroyQueue(q));
}

static void test_sync_errors(void) {
  ol_queue_handle_t q = hc_queue();
  ol_event_handle_t e = NULL;
  OK(olCreateEvent(q, &e));
  OK(olDestroyEvent(e));
  ERR(olSyncEvent(e), OL_ERRC_INVALID_EVENT, "destroyed");
  ERR(olSyncEvent((ol_event_handle_t)q), OL_ERRC_INVALID_EVENT, "queue");
  OK(olDestroyQueue(q));
}

static void test_destroy_errors(void) {
  ol_queue_handle_t q = hc_queue();
  ol_event_handle_t e = NULL;
  OK(olCreateEvent(q, &e));
  OK(olDestroyEvent(e));
  ERR(olDestroyEvent(e), OL_ERRC_INVALID_EVENT, "destroyed");
  OK(olDestroyQueue(q));
}

/* An event covers the work submitted before it, not after it. */
static void test_event_covers_prior_work_only(void) {
  ol_queue_handle_t q = hc_queue();
  uint32_t a = 11, b = 0;
  OK(olMemcpy(q, &b, hc_host, &a, hc_host, sizeof a));
  ol_event_handle_t before = NULL, after = NULL;
  OK(olCreateEvent(q, &before));
  hc_gate g;
  if (!hc_gate_close(&g, q))
    return;
  OK(olCreateEvent(q, &after));
  double t0 = hc_now_ms();
  OK(olSyncEvent(before)); /* must not wait for the gate */
  TRUE(hc_now_ms() - t0 < 1000);
  EQ(b, 11);
  bool done = true;
  OK(olGetEventInfo(before, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done));
  TRUE(done);
  OK(olGetEventInfo(after, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done));
  TRUE(!done);
  hc_gate_open(&g);
  OK(olSyncEvent(after));
  OK(olGetEventInfo(after, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done));
  TRUE(done);
  OK(olDestroyEvent(before));
  OK(olDestroyEvent(after));
  OK(olDestroyQueue(q));
}

/* olSyncEvent blocks until the work is done. */
static void *open_later(void *arg) {
  hc_sleep_ms(300);
  hc_gate_open(arg);
  return NULL;
}

static void test_sync_blocks(void) {
  ol_queue_handle_t q = hc_queue();
  hc_gate g;
  if (!hc_gate_close(&g, q))
    return;
  uint32_t a = 8, b = 0;
  OK(olMemcpy(q, &b, hc_host, &a, hc_host, sizeof a));
  ol_event_handle_t e = NULL;
  OK(olCreateEvent(q, &e));
  TRUE(hc_gate_wait_entered(&g));
  pthread_t t;
  double t0 = hc_now_ms();
  pthread_create(&t, NULL, open_later, &g);
  OK(olSyncEvent(e));
  double waited = hc_now_ms() - t0;
  TRUE(waited >= 250);
  EQ(b, 8);
  pthread_join(t, NULL);
  OK(olDestroyEvent(e));
  OK(olDestroyQueue(q));
}

static void test_info(void) {
  ol_queue_handle_t q = hc_queue();
  ol_event_handle_t e = NULL;
  OK(olCreateEvent(q, &e));
  ol_queue_handle_t owner = NULL;
  OK(olGetEventInfo(e, OL_EVENT_INFO_QUEUE, sizeof owner, &owner));
  EQ((uintptr_t)owner, (uintptr_t)q);
  bool done = false;
  double t0 = hc_now_ms();
  ol_result_t r;
  do
    r = olGetEventInfo(e, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done);
  while (!r && !done && hc_now_ms() - t0 < 5000);
  OK(r);
  TRUE(done);
  size_t n = 0;
  OK(olGetEventInfoSize(e, OL_EVENT_INFO_QUEUE, &n));
  EQ(n, sizeof(ol_queue_handle_t));
  OK(olGetEventInfoSize(e, OL_EVENT_INFO_IS_COMPLETE, &n));
  EQ(n, sizeof(bool));

  ERR(olGetEventInfo(e, OL_EVENT_INFO_QUEUE, 0, &owner), OL_ERRC_INVALID_SIZE, "PropSize == 0");
  ERR(olGetEventInfo(e, OL_EVENT_INFO_QUEUE, sizeof owner - 1, &owner), OL_ERRC_INVALID_SIZE, NULL);
  ERR(olGetEventInfo(e, (ol_event_info_t)HC_BIG, sizeof owner, &owner),
      OL_ERRC_INVALID_ENUMERATION, "olGetEventInfo enum '2147483647' is invalid");
  ERR(olGetEventInfoSize(e, (ol_event_info_t)HC_BIG, &n), OL_ERRC_INVALID_ENUMERATION,
      "olGetEventInfo enum '2147483647' is invalid");
  /* QUEUE still answers after the queue is gone */
  OK(olDestroyQueue(q));
  owner = NULL;
  OK(olGetEventInfo(e, OL_EVENT_INFO_QUEUE, sizeof owner, &owner));
  EQ((uintptr_t)owner, (uintptr_t)q);
  OK(olSyncEvent(e));
  OK(olDestroyEvent(e));
  ERR(olGetEventInfo(e, OL_EVENT_INFO_QUEUE, sizeof owner, &owner), OL_ERRC_INVALID_EVENT,
      "destroyed");
}

/* Events of a queue whose handle was recycled keep their meaning: an event
 * of an old queue does not wait for work of a later one. */
static void test_event_outlives_queue_reuse(void) {
  ol_queue_handle_t q1 = hc_queue();
  uint32_t a = 1, b = 0;
  OK(olMemcpy(q1, &b, hc_host, &a, hc_host, sizeof a));
  ol_event_handle_t e = NULL;
  OK(olCreateEvent(q1, &e));
  OK(olSyncQueue(q1));
  OK(olDestroyQueue(q1));
  /* likely to get the same underlying queue back */
  ol_queue_handle_t q2 = hc_queue();
  hc_gate g;
  if (!hc_gate_close(&g, q2))
    return;
  bool done = false;
  OK(olGetEventInfo(e, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done));
  TRUE(done);
  double t0 = hc_now_ms();
  OK(olSyncEvent(e));
  TRUE(hc_now_ms() - t0 < 1000);
  hc_gate_open(&g);
  OK(olSyncQueue(q2));
  OK(olDestroyEvent(e));
  OK(olDestroyQueue(q2));
}

static void *event_worker(void *arg) {
  ol_queue_handle_t q = arg;
  int bad = 0;
  for (int i = 0; i < 200; i++) {
    ol_event_handle_t e = NULL;
    bad += olCreateEvent(q, &e) != NULL;
    bad += olSyncEvent(e) != NULL;
    bool done = false;
    bad += olGetEventInfo(e, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done) != NULL;
    bad += !done;
    bad += olDestroyEvent(e) != NULL;
  }
  return (void *)(intptr_t)bad;
}

static void test_events_from_threads(void) {
  ol_queue_handle_t q = hc_queue();
  EQ(hc_threads(8, event_worker, q, 0), 0);
  OK(olDestroyQueue(q));
}

int main(int argc, char **argv) {
  hc_start(argc, argv);
  while (hc_next_device()) {
    RUN(test_create);
    RUN(test_create_errors);
    RUN(test_sync_repeat);
    RUN(test_sync_errors);
    RUN(test_destroy_errors);
    RUN(test_event_covers_prior_work_only);
    RUN(test_sync_blocks);
    RUN(test_info);
    RUN(test_event_outlives_queue_reuse);
    RUN(test_events_from_threads);
  }
  return hc_finish("event");
}
