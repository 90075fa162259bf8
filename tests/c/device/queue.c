/* Queues of the device under test: olCreateQueue, olDestroyQueue, olSyncQueue,
 * olGetQueueInfo(Size), ordering, and destroying a queue with work pending.
 * SPDX-License-Identifier: Apache-2.0 */
#include "hcheck.h"

static void test_create_destroy(void) {
  ol_queue_handle_t q1 = NULL, q2 = NULL;
  OK(olCreateQueue(hc_dev, &q1));
  OK(olCreateQueue(hc_dev, &q2));
  TRUE(q1 != NULL && q2 != NULL);
  TRUE(q1 != q2);
  OK(olDestroyQueue(q1));
  OK(olDestroyQueue(q2));
  /* queues can be made and dropped many times; each is usable */
  int bad = 0;
  for (int i = 0; i < 200; i++) {
    ol_queue_handle_t q = NULL;
    uint32_t v = 0, one = 1;
    bad += olCreateQueue(hc_dev, &q) != NULL;
    bad += olMemcpy(q, &v, hc_host, &one, hc_host, sizeof v) != NULL;
    bad += olSyncQueue(q) != NULL;
    bad += v != 1;
    bad += olDestroyQueue(q) != NULL;
  }
  EQ(bad, 0);
}

static void test_destroy_errors(void) {
  ol_queue_handle_t q = hc_queue();
  OK(olDestroyQueue(q));
  ERR(olDestroyQueue(q), OL_ERRC_INVALID_QUEUE, "destroyed");
  ERR(olSyncQueue(q), OL_ERRC_INVALID_QUEUE, "destroyed");
  /* a device handle is not a queue handle */
  ERR(olDestroyQueue((ol_queue_handle_t)hc_dev), OL_ERRC_INVALID_QUEUE, "device");
}

static void test_sync(void) {
  ol_queue_handle_t q = hc_queue();
  OK(olSyncQueue(q)); /* an empty queue */
  OK(olSyncQueue(q)); /* again */
  /* sync waits for everything submitted: 1000 small ops */
  enum { N = 1000 };
  static uint32_t dst[N];
  memset(dst, 0, sizeof dst); /* a clean start for each device */
  uint32_t vals[N];
  for (int i = 0; i < N; i++) {
    vals[i] = (uint32_t)i * 3u + 1u;
    OK(olMemcpy(q, &dst[i], hc_host, &vals[i], hc_host, sizeof(uint32_t)));
  }
  OK(olSyncQueue(q));
  EQ_ARRAY(dst, N, (uint32_t)i * 3u + 1u);
  OK(olDestroyQueue(q));
}

/* Work of one queue runs in submission order, whatever its kind. */
static void append_fn(void *user) {
  uint32_t *log = user;
  log[1 + log[0]] = log[0] * 10u + 5u;
  log[0]++;
}

static void test_in_order(void) {
  ol_queue_handle_t q = hc_queue();
  uint32_t *buf = hc_alloc(OL_ALLOC_TYPE_MANAGED, 64 * sizeof(uint32_t));
  if (!buf)
    return;
  memset(buf, 0, 64 * sizeof(uint32_t));
  static uint32_t log[64];
  memset(log, 0, sizeof log);
  uint32_t seven = 7, eight = 8;
  OK(olMemFill(q, buf, sizeof seven, &seven, 64 * sizeof(uint32_t)));
  OK(olLaunchHostFunction(q, append_fn, log));
  OK(olMemcpy(q, buf + 1, hc_dev, buf, hc_dev, sizeof(uint32_t))); /* 7 */
  OK(olMemFill(q, buf, sizeof eight, &eight, sizeof(uint32_t)));   /* buf[0] = 8 */
  OK(olMemcpy(q, buf + 2, hc_dev, buf, hc_dev, sizeof(uint32_t))); /* 8 */
  OK(olLaunchHostFunction(q, append_fn, log));
  OK(olSyncQueue(q));
  EQ(buf[0], 8);
  EQ(buf[1], 7);
  EQ(buf[2], 8);
  EQ(buf[3], 7);
  EQ(log[0], 2);
  EQ(log[1], 5);
  EQ(log[2], 15);
  OK(olMemFree(buf));
  OK(olDestroyQueue(q));
}

static void test_info(void) {
  ol_queue_handle_t q = hc_queue();
  ol_device_handle_t d = NULL;
  OK(olGetQueueInfo(q, OL_QUEUE_INFO_DEVICE, sizeof d, &d));
  EQ((uintptr_t)d, (uintptr_t)hc_dev);
  bool empty = false;
  OK(olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty));
  TRUE(empty);
  size_t n = 0;
  OK(olGetQueueInfoSize(q, OL_QUEUE_INFO_DEVICE, &n));
  EQ(n, sizeof(ol_device_handle_t));
  OK(olGetQueueInfoSize(q, OL_QUEUE_INFO_EMPTY, &n));
  EQ(n, sizeof(bool));

  ERR(olGetQueueInfo(q, OL_QUEUE_INFO_DEVICE, 0, &d), OL_ERRC_INVALID_SIZE, "PropSize == 0");
  ERR(olGetQueueInfo(q, OL_QUEUE_INFO_DEVICE, sizeof d - 1, &d), OL_ERRC_INVALID_SIZE, NULL);
  ERR(olGetQueueInfo(q, (ol_queue_info_t)HC_BIG, sizeof d, &d), OL_ERRC_INVALID_ENUMERATION,
      "olGetQueueInfo enum '2147483647' is invalid");
  ERR(olGetQueueInfoSize(q, (ol_queue_info_t)HC_BIG, &n), OL_ERRC_INVALID_ENUMERATION,
      "olGetQueueInfo enum '2147483647' is invalid");
  OK(olDestroyQueue(q));
  ERR(olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty), OL_ERRC_INVALID_QUEUE,
      "destroyed");
}

/* EMPTY is exact: false while work is held back, true after a sync. */
static void test_empty_exact(void) {
  ol_queue_handle_t q = hc_queue();
  hc_gate g;
  bool empty = true;
  if (!hc_gate_close(&g, q))
    return;
  OK(olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty));
  TRUE(!empty);
  TRUE(hc_gate_wait_entered(&g));
  hc_sleep_ms(20);
  OK(olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty));
  TRUE(!empty);
  hc_gate_open(&g);
  OK(olSyncQueue(q));
  OK(olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty));
  TRUE(empty);
  /* and it becomes true without a sync once the work has run */
  uint32_t a = 1, b = 0;
  OK(olMemcpy(q, &b, hc_host, &a, hc_host, sizeof a));
  double t0 = hc_now_ms();
  ol_result_t r;
  do
    r = olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty);
  while (!r && !empty && hc_now_ms() - t0 < 5000);
  OK(r);
  TRUE(empty);
  EQ(b, 1);
  OK(olDestroyQueue(q));
}

/* Destroying a queue does not wait for its work; the work still runs and an
 * event recorded before the destroy can still be waited for. */
static atomic_int ran_after_destroy;
static void mark_fn(void *user) {
  (void)user;
  atomic_store(&ran_after_destroy, 1);
}

static void test_destroy_pending(void) {
  ol_queue_handle_t q = hc_queue();
  hc_gate g;
  atomic_store(&ran_after_destroy, 0);
  if (!hc_gate_close(&g, q))
    return;
  uint32_t src = 99, dst = 0;
  OK(olMemcpy(q, &dst, hc_host, &src, hc_host, sizeof src));
  OK(olLaunchHostFunction(q, mark_fn, NULL));
  ol_event_handle_t ev = NULL;
  OK(olCreateEvent(q, &ev));
  double t0 = hc_now_ms();
  OK(olDestroyQueue(q));
  TRUE(hc_now_ms() - t0 < 200); /* did not wait for the gate */
  bool done = true;
  OK(olGetEventInfo(ev, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done));
  TRUE(!done);
  ol_queue_handle_t owner = NULL;
  OK(olGetEventInfo(ev, OL_EVENT_INFO_QUEUE, sizeof owner, &owner));
  EQ((uintptr_t)owner, (uintptr_t)q);
  EQ(atomic_load(&ran_after_destroy), 0);
  /* a new queue works while the old one is still blocked */
  ol_queue_handle_t q2 = hc_queue();
  uint32_t x = 0, y = 5;
  OK(olMemcpy(q2, &x, hc_host, &y, hc_host, sizeof x));
  OK(olSyncQueue(q2));
  EQ(x, 5);
  hc_gate_open(&g);
  OK(olSyncEvent(ev));
  EQ(dst, 99);
  EQ(atomic_load(&ran_after_destroy), 1);
  OK(olGetEventInfo(ev, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done));
  TRUE(done);
  OK(olDestroyEvent(ev));
  OK(olDestroyQueue(q2));
}

/* Many threads submitting to their own queues at once. */
static void *own_queue_worker(void *arg) {
  uint32_t *out = arg;
  int bad = 0;
  for (int round = 0; round < 20; round++) {
    ol_queue_handle_t q = NULL;
    bad += olCreateQueue(hc_dev, &q) != NULL;
    uint32_t v = (uint32_t)round;
    bad += olMemFill(q, out, sizeof v, &v, 256 * sizeof(uint32_t)) != NULL;
    bad += olSyncQueue(q) != NULL;
    uint32_t got[256];
    const uint32_t *chk = out;
    if (!hc_on_host) { /* DEVICE memory: read back through the API */
      bad += olMemcpy(NULL, got, hc_host, out, hc_dev, sizeof got) != NULL;
      chk = got;
    }
    for (int i = 0; i < 256; i++)
      bad += chk[i] != (uint32_t)round;
    bad += olDestroyQueue(q) != NULL;
  }
  return (void *)(intptr_t)bad;
}

static void test_threads_own_queues(void) {
  enum { T = 16 };
  static uint32_t host_bufs[T][256];
  /* plain host memory on the host device, DEVICE memory elsewhere */
  uint32_t *bufs = hc_on_host ? &host_bufs[0][0] : hc_alloc(OL_ALLOC_TYPE_DEVICE, sizeof host_bufs);
  if (!bufs)
    return;
  EQ(hc_threads(T, own_queue_worker, bufs, 256 * sizeof bufs[0]), 0);
  if (bufs != &host_bufs[0][0])
    OK(olMemFree(bufs));
}

int main(int argc, char **argv) {
  hc_start(argc, argv);
  while (hc_next_device()) {
    RUN(test_create_destroy);
    RUN(test_destroy_errors);
    RUN(test_sync);
    RUN(test_in_order);
    RUN(test_info);
    RUN(test_empty_exact);
    RUN(test_destroy_pending);
    RUN(test_threads_own_queues);
  }
  return hc_finish("queue");
}
