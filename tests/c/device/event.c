/* Events of the device under test: olCreateEvent, olSyncEvent, olDestroyEvent,
 * olGetEventInfo(Size).
 * SPDX-License-Identifier: Apache-2.0 */
#include "oldevices.h"

static void test_create(void) {
  ol_queue_handle_t q = olc_queue();
  ol_event_handle_t e1 = NULL, e2 = NULL;
  /* on an empty queue */
  OLC_OK(olCreateEvent(q, &e1));
  OLC_TRUE(e1 != NULL);
  /* after some work */
  uint32_t a = 3, b = 0;
  OLC_OK(olMemcpy(q, &b, olc_host, &a, olc_host, sizeof a));
  OLC_OK(olCreateEvent(q, &e2));
  OLC_TRUE(e2 != NULL && e2 != e1);
  OLC_OK(olSyncEvent(e2));
  OLC_EQ(b, 3);
  OLC_OK(olSyncEvent(e1));
  OLC_OK(olDestroyEvent(e1));
  OLC_OK(olDestroyEvent(e2));
  OLC_OK(olDestroyQueue(q));
}

static void test_create_errors(void) {
  ol_queue_handle_t q = olc_queue();
  ol_event_handle_t e = (ol_event_handle_t)0x1;
  OLC_OK(olDestroyQueue(q));
  OLC_ERR_HAS(olCreateEvent(q, &e), OL_ERRC_INVALID_QUEUE, "destroyed");
  OLC_EQ((uintptr_t)e, 1); /* a refused call leaves the handle alone */
}

static void test_sync_repeat(void) {
  ol_queue_handle_t q = olc_queue();
  enum { N = 4096 };
  /* memory a queue of any device may fill */
  uint32_t *dst = olc_alloc(OL_ALLOC_TYPE_DEVICE, N * sizeof(uint32_t));
  if (!dst)
    return;
  uint32_t v = 42;
  OLC_OK(olMemFill(q, dst, sizeof v, &v, N * sizeof(uint32_t)));
  ol_event_handle_t e = NULL;
  OLC_OK(olCreateEvent(q, &e));
  for (int i = 0; i < 10; i++)
    OLC_OK(olSyncEvent(e));
  OLC_EQ_DARRAY(uint32_t, dst, N, 42u);
  OLC_OK(olMemFree(dst));
  OLC_OK(olDestroyEvent(e));
  OLC_OK(olDestroyQueue(q));
}

static void test_sync_errors(void) {
  ol_queue_handle_t q = olc_queue();
  ol_event_handle_t e = NULL;
  OLC_OK(olCreateEvent(q, &e));
  OLC_OK(olDestroyEvent(e));
  OLC_ERR_HAS(olSyncEvent(e), OL_ERRC_INVALID_EVENT, "destroyed");
  OLC_ERR_HAS(olSyncEvent((ol_event_handle_t)q), OL_ERRC_INVALID_EVENT, "queue");
  OLC_OK(olDestroyQueue(q));
}

static void test_destroy_errors(void) {
  ol_queue_handle_t q = olc_queue();
  ol_event_handle_t e = NULL;
  OLC_OK(olCreateEvent(q, &e));
  OLC_OK(olDestroyEvent(e));
  OLC_ERR_HAS(olDestroyEvent(e), OL_ERRC_INVALID_EVENT, "destroyed");
  OLC_OK(olDestroyQueue(q));
}

/* An event covers the work submitted before it, not after it. */
static void test_event_covers_prior_work_only(void) {
  ol_queue_handle_t q = olc_queue();
  uint32_t a = 11, b = 0;
  OLC_OK(olMemcpy(q, &b, olc_host, &a, olc_host, sizeof a));
  ol_event_handle_t before = NULL, after = NULL;
  OLC_OK(olCreateEvent(q, &before));
  olc_gate g;
  if (!olc_gate_close(&g, q))
    return;
  OLC_OK(olCreateEvent(q, &after));
  double t0 = olc_now_ms();
  OLC_OK(olSyncEvent(before)); /* must not wait for the gate */
  OLC_TRUE(olc_now_ms() - t0 < 1000);
  OLC_EQ(b, 11);
  bool done = true;
  OLC_OK(olGetEventInfo(before, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done));
  OLC_TRUE(done);
  OLC_OK(olGetEventInfo(after, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done));
  OLC_TRUE(!done);
  olc_gate_open(&g);
  OLC_OK(olSyncEvent(after));
  OLC_OK(olGetEventInfo(after, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done));
  OLC_TRUE(done);
  OLC_OK(olDestroyEvent(before));
  OLC_OK(olDestroyEvent(after));
  OLC_OK(olDestroyQueue(q));
}

/* olSyncEvent blocks until the work is done. */
static void *open_later(void *arg) {
  olc_sleep_ms(300);
  olc_gate_open(arg);
  return NULL;
}

static void test_sync_blocks(void) {
  ol_queue_handle_t q = olc_queue();
  olc_gate g;
  if (!olc_gate_close(&g, q))
    return;
  uint32_t a = 8, b = 0;
  OLC_OK(olMemcpy(q, &b, olc_host, &a, olc_host, sizeof a));
  ol_event_handle_t e = NULL;
  OLC_OK(olCreateEvent(q, &e));
  OLC_TRUE(olc_gate_wait_entered(&g));
  pthread_t t;
  double t0 = olc_now_ms();
  pthread_create(&t, NULL, open_later, &g);
  OLC_OK(olSyncEvent(e));
  double waited = olc_now_ms() - t0;
  OLC_TRUE(waited >= 250);
  OLC_EQ(b, 8);
  pthread_join(t, NULL);
  OLC_OK(olDestroyEvent(e));
  OLC_OK(olDestroyQueue(q));
}

static void test_info(void) {
  ol_queue_handle_t q = olc_queue();
  ol_event_handle_t e = NULL;
  OLC_OK(olCreateEvent(q, &e));
  ol_queue_handle_t owner = NULL;
  OLC_OK(olGetEventInfo(e, OL_EVENT_INFO_QUEUE, sizeof owner, &owner));
  OLC_EQ((uintptr_t)owner, (uintptr_t)q);
  bool done = false;
  double t0 = olc_now_ms();
  ol_result_t r;
  do
    r = olGetEventInfo(e, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done);
  while (!r && !done && olc_now_ms() - t0 < 5000);
  OLC_OK(r);
  OLC_TRUE(done);
  size_t n = 0;
  OLC_OK(olGetEventInfoSize(e, OL_EVENT_INFO_QUEUE, &n));
  OLC_EQ(n, sizeof(ol_queue_handle_t));
  OLC_OK(olGetEventInfoSize(e, OL_EVENT_INFO_IS_COMPLETE, &n));
  OLC_EQ(n, sizeof(bool));

  OLC_ERR_HAS(olGetEventInfo(e, OL_EVENT_INFO_QUEUE, 0, &owner), OL_ERRC_INVALID_SIZE, "PropSize == 0");
  OLC_ERR_CODE(olGetEventInfo(e, OL_EVENT_INFO_QUEUE, sizeof owner - 1, &owner), OL_ERRC_INVALID_SIZE);
  OLC_ERR_HAS(olGetEventInfo(e, (ol_event_info_t)OLC_BIG, sizeof owner, &owner),
              OL_ERRC_INVALID_ENUMERATION, "olGetEventInfo enum '2147483647' is invalid");
  OLC_ERR_HAS(olGetEventInfoSize(e, (ol_event_info_t)OLC_BIG, &n), OL_ERRC_INVALID_ENUMERATION,
              "olGetEventInfo enum '2147483647' is invalid");
  /* QUEUE still answers after the queue is gone */
  OLC_OK(olDestroyQueue(q));
  owner = NULL;
  OLC_OK(olGetEventInfo(e, OL_EVENT_INFO_QUEUE, sizeof owner, &owner));
  OLC_EQ((uintptr_t)owner, (uintptr_t)q);
  OLC_OK(olSyncEvent(e));
  OLC_OK(olDestroyEvent(e));
  OLC_ERR_HAS(olGetEventInfo(e, OL_EVENT_INFO_QUEUE, sizeof owner, &owner), OL_ERRC_INVALID_EVENT,
              "destroyed");
}

/* Events of a queue whose handle was recycled keep their meaning: an event
 * of an old queue does not wait for work of a later one. */
static void test_event_outlives_queue_reuse(void) {
  ol_queue_handle_t q1 = olc_queue();
  uint32_t a = 1, b = 0;
  OLC_OK(olMemcpy(q1, &b, olc_host, &a, olc_host, sizeof a));
  ol_event_handle_t e = NULL;
  OLC_OK(olCreateEvent(q1, &e));
  OLC_OK(olSyncQueue(q1));
  OLC_OK(olDestroyQueue(q1));
  /* likely to get the same underlying queue back */
  ol_queue_handle_t q2 = olc_queue();
  olc_gate g;
  if (!olc_gate_close(&g, q2))
    return;
  bool done = false;
  OLC_OK(olGetEventInfo(e, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done));
  OLC_TRUE(done);
  double t0 = olc_now_ms();
  OLC_OK(olSyncEvent(e));
  OLC_TRUE(olc_now_ms() - t0 < 1000);
  olc_gate_open(&g);
  OLC_OK(olSyncQueue(q2));
  OLC_OK(olDestroyEvent(e));
  OLC_OK(olDestroyQueue(q2));
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
  ol_queue_handle_t q = olc_queue();
  OLC_EQ(olc_threads(8, event_worker, q, 0), 0);
  OLC_OK(olDestroyQueue(q));
}

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    OLC_RUN(test_create);
    OLC_RUN(test_create_errors);
    OLC_RUN(test_sync_repeat);
    OLC_RUN(test_sync_errors);
    OLC_RUN(test_destroy_errors);
    OLC_RUN(test_event_covers_prior_work_only);
    OLC_RUN(test_sync_blocks);
    OLC_RUN(test_info);
    OLC_RUN(test_event_outlives_queue_reuse);
    OLC_RUN(test_events_from_threads);
  }
  return olc_finish("event");
}
