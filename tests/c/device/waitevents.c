/* olWaitEvents on the device under test: Fibonacci chains of `sequence` launches
 * across queues, non-blocking waits, and the error cases.
 * SPDX-License-Identifier: Apache-2.0 */
#include "hcheck.h"

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
    hc_failed(__FILE__, line, "Fibonacci sequence wrong in %d places, first out[%d] = %u, wanted %u",
              bad, first, out[first], want[first]);
  else
    olc_pass();
}

/* A host function that sleeps a little before each step makes a missing
 * wait show up as a wrong result. */
static void nap(void *user) {
  (void)user;
  hc_sleep_ms(2);
}

/* variant 0: each queue waits for the previous queue's event
 * variant 1: everything on one queue, waiting on its own events
 * variant 2: each queue waits for the events of all previous queues */
static void run_chain(int variant) {
  uint32_t *out = hc_alloc(OL_ALLOC_TYPE_MANAGED, (STEPS + 2) * sizeof(uint32_t));
  if (!out || !seq_kernel)
    return;
  memset(out, 0, (STEPS + 2) * sizeof(uint32_t));
  out[0] = 0, out[1] = 1;
  ol_queue_handle_t qs[STEPS];
  ol_event_handle_t evs[STEPS];
  for (int i = 0; i < STEPS; i++)
    qs[i] = variant == 1 && i > 0 ? qs[0] : hc_queue();
  ol_kernel_launch_size_args_t l = hc_size1(1, 1);
  for (int i = 0; i < STEPS; i++) {
    if (i > 0) {
      if (variant == 2)
        OK(olWaitEvents(qs[i], evs, (size_t)i));
      else
        OK(olWaitEvents(qs[i], &evs[i - 1], 1));
    }
    OK(olLaunchHostFunction(qs[i], nap, NULL));
    struct sequence_args a = {out, (uint32_t)i + 2};
    OK(olLaunchKernel(qs[i], hc_dev, seq_kernel, &a, sizeof a, &l));
    OK(olCreateEvent(qs[i], &evs[i]));
  }
  OK(olSyncEvent(evs[STEPS - 1]));
  expect_fibonacci(out, __LINE__);
  for (int i = 0; i < STEPS; i++) {
    OK(olDestroyEvent(evs[i]));
    if (variant != 1 || i == 0)
      OK(olDestroyQueue(qs[i]));
  }
  OK(olMemFree(out));
}

static void test_chain_across_queues(void) { run_chain(0); }
static void test_chain_single_queue(void) { run_chain(1); }
static void test_chain_wait_on_all(void) { run_chain(2); }

/* The wait is enqueued: the caller does not block, the waiting queue's
 * later work does. */
static void test_wait_does_not_block_caller(void) {
  ol_queue_handle_t a = hc_queue(), b = hc_queue();
  hc_gate g;
  hc_gate_close(&g, a);
  ol_event_handle_t ea = NULL;
  OK(olCreateEvent(a, &ea));
  double t0 = hc_now_ms();
  OK(olWaitEvents(b, &ea, 1));
  TRUE(hc_now_ms() - t0 < 200);
  uint32_t src = 17, dst = 0;
  OK(olMemcpy(b, &dst, hc_host, &src, hc_host, sizeof src));
  ol_event_handle_t eb = NULL;
  OK(olCreateEvent(b, &eb));
  hc_sleep_ms(200);
  EQ(dst, 0);
  bool flag = true;
  OK(olGetQueueInfo(b, OL_QUEUE_INFO_EMPTY, sizeof flag, &flag));
  TRUE(!flag);
  OK(olGetEventInfo(eb, OL_EVENT_INFO_IS_COMPLETE, sizeof flag, &flag));
  TRUE(!flag);
  hc_gate_open(&g);
  OK(olSyncQueue(b));
  EQ(dst, 17);
  OK(olDestroyEvent(ea));
  OK(olDestroyEvent(eb));
  OK(olDestroyQueue(a));
  OK(olDestroyQueue(b));
}

/* Waiting for completed events, one's own events, and events of a
 * destroyed queue. */
static void test_wait_special_events(void) {
  ol_queue_handle_t a = hc_queue(), b = hc_queue();
  ol_event_handle_t done = NULL, own = NULL;
  OK(olCreateEvent(a, &done)); /* nothing before it: complete */
  OK(olWaitEvents(b, &done, 1));
  OK(olCreateEvent(b, &own));
  OK(olWaitEvents(b, &own, 1));
  OK(olSyncQueue(b));
  /* an event whose queue has been destroyed while still blocked */
  ol_queue_handle_t c = hc_queue();
  hc_gate g;
  hc_gate_close(&g, c);
  ol_event_handle_t ec = NULL;
  OK(olCreateEvent(c, &ec));
  OK(olDestroyQueue(c));
  OK(olWaitEvents(b, &ec, 1));
  uint32_t src = 4, dst = 0;
  OK(olMemcpy(b, &dst, hc_host, &src, hc_host, sizeof src));
  hc_sleep_ms(50);
  EQ(dst, 0);
  hc_gate_open(&g);
  OK(olSyncQueue(b));
  EQ(dst, 4);
  /* zero events: nothing to do */
  OK(olWaitEvents(b, &done, 0));
  OK(olDestroyEvent(done));
  OK(olDestroyEvent(own));
  OK(olDestroyEvent(ec));
  OK(olDestroyQueue(a));
  OK(olDestroyQueue(b));
}

static void test_errors(void) {
  ol_queue_handle_t q = hc_queue();
  ol_event_handle_t e = NULL;
  OK(olCreateEvent(q, &e));
  ol_event_handle_t with_null[3] = {e, NULL, e};
  ERR(olWaitEvents(q, with_null, 3), OL_ERRC_INVALID_NULL_HANDLE,
      "olWaitEvents asked to wait on a NULL event");
  ol_event_handle_t garbage[1] = {(ol_event_handle_t)0x1234};
  ERR(olWaitEvents(q, garbage, 1), OL_ERRC_INVALID_EVENT, NULL);
  ol_event_handle_t gone = NULL;
  OK(olCreateEvent(q, &gone));
  OK(olDestroyEvent(gone));
  ERR(olWaitEvents(q, &gone, 1), OL_ERRC_INVALID_EVENT, "destroyed");
  OK(olSyncQueue(q));
  OK(olDestroyEvent(e));
  OK(olDestroyQueue(q));
}

int main(int argc, char **argv) {
  hc_start(argc, argv);
  while (hc_next_device()) {
    seq_prog = hc_program("sequence");
    seq_kernel = hc_kernel(seq_prog, "sequence");
    RUN(test_chain_across_queues);
    RUN(test_chain_single_queue);
    RUN(test_chain_wait_on_all);
    RUN(test_wait_does_not_block_caller);
    RUN(test_wait_special_events);
    RUN(test_errors);
    hc_name = "cleanup";
    if (seq_prog)
      OK(olDestroyProgram(seq_prog));
  }
  return hc_finish("waitevents");
}
