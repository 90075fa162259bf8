/* olWaitEvents on the device under test: Fibonacci chains of `sequence` launches
 * across queues, non-blocking waits, and the error cases.
 * SPDX-License-Identifier: Apache-2.0 */
#include "oldevices.h"

enum { STEPS = 16 };

struct sequence_args {
  uint32_t *out;
  uint32_t idx;
};

static ol_program_handle_t seq_prog;
static ol_symbol_handle_t seq_kernel;

static void expect_fibonacci(const uint32_t *out, int line) {
  uint32_t want[STEPS + 2] = {0, 1};
  for (int i = 2; i < STEPS + 2; i++)
    want[i] = want[i - 1] + want[i - 2];
  int bad = 0, first = -1;
  for (int i = 0; i < STEPS + 2; i++)
    if (out[i] != want[i] && !bad++)
      first = i;
  if (bad)
    olc_fail(__FILE__, line, "Fibonacci sequence wrong in %d places, first out[%d] = %u, wanted %u",
             bad, first, out[first], want[first]);
  else
    olc_pass();
}

/* A host function that sleeps a little before each step makes a missing
 * wait show up as a wrong result. */
static void nap(void *user) {
  (void)user;
  olc_sleep_ms(2);
}

/* variant 0: each queue waits for the previous queue's event
 * variant 1: everything on one queue, waiting on its own events
 * variant 2: each queue waits for the events of all previous queues */
static void run_chain(int variant) {
  OLC_HOST_VISIBLE();
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_MANAGED, (STEPS + 2) * sizeof(uint32_t));
  if (!out || !seq_kernel)
    return;
  memset(out, 0, (STEPS + 2) * sizeof(uint32_t));
  out[0] = 0, out[1] = 1;
  ol_queue_handle_t qs[STEPS];
  ol_event_handle_t evs[STEPS];
  for (int i = 0; i < STEPS; i++)
    qs[i] = variant == 1 && i > 0 ? qs[0] : olc_queue();
  ol_kernel_launch_size_args_t l = olc_size1(1, 1);
  for (int i = 0; i < STEPS; i++) {
    if (i > 0) {
      if (variant == 2)
        OLC_OK(olWaitEvents(qs[i], evs, (size_t)i));
      else
        OLC_OK(olWaitEvents(qs[i], &evs[i - 1], 1));
    }
    OLC_OK(olLaunchHostFunction(qs[i], nap, NULL));
    struct sequence_args a = {out, (uint32_t)i + 2};
    OLC_OK(olLaunchKernel(qs[i], olc_dev, seq_kernel, &a, sizeof a, &l));
    OLC_OK(olCreateEvent(qs[i], &evs[i]));
  }
  OLC_OK(olSyncEvent(evs[STEPS - 1]));
  expect_fibonacci(out, __LINE__);
  for (int i = 0; i < STEPS; i++) {
    OLC_OK(olDestroyEvent(evs[i]));
    if (variant != 1 || i == 0)
      OLC_OK(olDestroyQueue(qs[i]));
  }
  OLC_OK(olMemFree(out));
}

static void test_chain_across_queues(void) { run_chain(0); }
static void test_chain_single_queue(void) { run_chain(1); }
static void test_chain_wait_on_all(void) { run_chain(2); }

/* The wait is enqueued: the caller does not block, the waiting queue's
 * later work does. */
static void test_wait_does_not_block_caller(void) {
  ol_queue_handle_t a = olc_queue(), b = olc_queue();
  olc_gate g;
  olc_gate_close(&g, a);
  ol_event_handle_t ea = NULL;
  OLC_OK(olCreateEvent(a, &ea));
  double t0 = olc_now_ms();
  OLC_OK(olWaitEvents(b, &ea, 1));
  OLC_TRUE(olc_now_ms() - t0 < 200);
  uint32_t src = 17, dst = 0;
  OLC_OK(olMemcpy(b, &dst, olc_host, &src, olc_host, sizeof src));
  ol_event_handle_t eb = NULL;
  OLC_OK(olCreateEvent(b, &eb));
  olc_sleep_ms(200);
  OLC_EQ(dst, 0);
  bool flag = true;
  OLC_OK(olGetQueueInfo(b, OL_QUEUE_INFO_EMPTY, sizeof flag, &flag));
  OLC_TRUE(!flag);
  OLC_OK(olGetEventInfo(eb, OL_EVENT_INFO_IS_COMPLETE, sizeof flag, &flag));
  OLC_TRUE(!flag);
  olc_gate_open(&g);
  OLC_OK(olSyncQueue(b));
  OLC_EQ(dst, 17);
  OLC_OK(olDestroyEvent(ea));
  OLC_OK(olDestroyEvent(eb));
  OLC_OK(olDestroyQueue(a));
  OLC_OK(olDestroyQueue(b));
}

/* Waiting for completed events, one's own events, and events of a
 * destroyed queue. */
static void test_wait_special_events(void) {
  ol_queue_handle_t a = olc_queue(), b = olc_queue();
  ol_event_handle_t done = NULL, own = NULL;
  OLC_OK(olCreateEvent(a, &done)); /* nothing before it: complete */
  OLC_OK(olWaitEvents(b, &done, 1));
  OLC_OK(olCreateEvent(b, &own));
  OLC_OK(olWaitEvents(b, &own, 1));
  OLC_OK(olSyncQueue(b));
  /* an event whose queue has been destroyed while still blocked */
  ol_queue_handle_t c = olc_queue();
  olc_gate g;
  olc_gate_close(&g, c);
  ol_event_handle_t ec = NULL;
  OLC_OK(olCreateEvent(c, &ec));
  OLC_OK(olDestroyQueue(c));
  OLC_OK(olWaitEvents(b, &ec, 1));
  uint32_t src = 4, dst = 0;
  OLC_OK(olMemcpy(b, &dst, olc_host, &src, olc_host, sizeof src));
  olc_sleep_ms(50);
  OLC_EQ(dst, 0);
  olc_gate_open(&g);
  OLC_OK(olSyncQueue(b));
  OLC_EQ(dst, 4);
  /* zero events: nothing to do */
  OLC_OK(olWaitEvents(b, &done, 0));
  OLC_OK(olDestroyEvent(done));
  OLC_OK(olDestroyEvent(own));
  OLC_OK(olDestroyEvent(ec));
  OLC_OK(olDestroyQueue(a));
  OLC_OK(olDestroyQueue(b));
}

static void test_errors(void) {
  ol_queue_handle_t q = olc_queue();
  ol_event_handle_t e = NULL;
  OLC_OK(olCreateEvent(q, &e));
  ol_event_handle_t with_null[3] = {e, NULL, e};
  OLC_ERR_HAS(olWaitEvents(q, with_null, 3), OL_ERRC_INVALID_NULL_HANDLE,
              "olWaitEvents asked to wait on a NULL event");
  ol_event_handle_t garbage[1] = {(ol_event_handle_t)0x1234};
  OLC_ERR_CODE(olWaitEvents(q, garbage, 1), OL_ERRC_INVALID_EVENT);
  ol_event_handle_t gone = NULL;
  OLC_OK(olCreateEvent(q, &gone));
  OLC_OK(olDestroyEvent(gone));
  OLC_ERR_HAS(olWaitEvents(q, &gone, 1), OL_ERRC_INVALID_EVENT, "destroyed");
  OLC_OK(olSyncQueue(q));
  OLC_OK(olDestroyEvent(e));
  OLC_OK(olDestroyQueue(q));
}

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    seq_prog = olc_program("sequence");
    seq_kernel = olc_kernel(seq_prog, "sequence");
    OLC_RUN(test_chain_across_queues);
    OLC_RUN(test_chain_single_queue);
    OLC_RUN(test_chain_wait_on_all);
    OLC_RUN(test_wait_does_not_block_caller);
    OLC_RUN(test_wait_special_events);
    OLC_RUN(test_errors);
    olc_test = "cleanup";
    if (seq_prog)
      OLC_OK(olDestroyProgram(seq_prog));
  }
  return olc_finish("waitevents");
}
