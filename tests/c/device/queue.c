/* Queues of the device under test: olCreateQueue, olDestroyQueue, olSyncQueue,
 * olGetQueueInfo(Size), ordering, and destroying a queue with work pending.
 * SPDX-License-Identifier: Apache-2.0 */
#include "oldevices.h"

static void test_create_destroy(void) {
  ol_queue_handle_t q1 = NULL, q2 = NULL;
  OLC_OK(olCreateQueue(olc_dev, &q1));
  OLC_OK(olCreateQueue(olc_dev, &q2));
  OLC_TRUE(q1 != NULL && q2 != NULL);
  OLC_TRUE(q1 != q2);
  OLC_OK(olDestroyQueue(q1));
  OLC_OK(olDestroyQueue(q2));
  /* queues can be made and dropped many times; each is usable */
  int bad = 0;
  for (int i = 0; i < 200; i++) {
    ol_queue_handle_t q = NULL;
    uint32_t v = 0, one = 1;
    bad += olCreateQueue(olc_dev, &q) != NULL;
    bad += olMemcpy(q, &v, olc_host, &one, olc_host, sizeof v) != NULL;
    bad += olSyncQueue(q) != NULL;
    bad += v != 1;
    bad += olDestroyQueue(q) != NULL;
  }
  OLC_EQ(bad, 0);
}

static void test_destroy_errors(void) {
  ol_queue_handle_t q = olc_queue();
  OLC_OK(olDestroyQueue(q));
  OLC_ERR_HAS(olDestroyQueue(q), OL_ERRC_INVALID_QUEUE, "destroyed");
  OLC_ERR_HAS(olSyncQueue(q), OL_ERRC_INVALID_QUEUE, "destroyed");
  /* a device handle is not a queue handle */
  OLC_ERR_HAS(olDestroyQueue((ol_queue_handle_t)olc_dev), OL_ERRC_INVALID_QUEUE, "device");
}

static void test_sync(void) {
  ol_queue_handle_t q = olc_queue();
  OLC_OK(olSyncQueue(q)); /* an empty queue */
  OLC_OK(olSyncQueue(q)); /* again */
  /* sync waits for everything submitted: 1000 small ops */
  enum { N = 1000 };
  static uint32_t dst[N];
  memset(dst, 0, sizeof dst); /* a clean start for each device */
  uint32_t vals[N];
  for (int i = 0; i < N; i++) {
    vals[i] = (uint32_t)i * 3u + 1u;
    OLC_OK(olMemcpy(q, &dst[i], olc_host, &vals[i], olc_host, sizeof(uint32_t)));
  }
  OLC_OK(olSyncQueue(q));
  OLC_EQ_ARRAY(dst, N, (uint32_t)i * 3u + 1u);
  OLC_OK(olDestroyQueue(q));
}

/* Work of one queue runs in submission order, whatever its kind. */
static void append_fn(void *user) {
  uint32_t *log = user;
  log[1 + log[0]] = log[0] * 10u + 5u;
  log[0]++;
}

static void test_in_order(void) {
  OLC_HOST_VISIBLE();
  ol_queue_handle_t q = olc_queue();
  uint32_t *buf = olc_alloc(OL_ALLOC_TYPE_MANAGED, 64 * sizeof(uint32_t));
  if (!buf)
    return;
  memset(buf, 0, 64 * sizeof(uint32_t));
  static uint32_t log[64];
  memset(log, 0, sizeof log);
  uint32_t seven = 7, eight = 8;
  OLC_OK(olMemFill(q, buf, sizeof seven, &seven, 64 * sizeof(uint32_t)));
  OLC_OK(olLaunchHostFunction(q, append_fn, log));
  OLC_OK(olMemcpy(q, buf + 1, olc_dev, buf, olc_dev, sizeof(uint32_t))); /* 7 */
  OLC_OK(olMemFill(q, buf, sizeof eight, &eight, sizeof(uint32_t)));   /* buf[0] = 8 */
  OLC_OK(olMemcpy(q, buf + 2, olc_dev, buf, olc_dev, sizeof(uint32_t))); /* 8 */
  OLC_OK(olLaunchHostFunction(q, append_fn, log));
  OLC_OK(olSyncQueue(q));
  OLC_EQ(buf[0], 8);
  OLC_EQ(buf[1], 7);
  OLC_EQ(buf[2], 8);
  OLC_EQ(buf[3], 7);
  OLC_EQ(log[0], 2);
  OLC_EQ(log[1], 5);
  OLC_EQ(log[2], 15);
  OLC_OK(olMemFree(buf));
  OLC_OK(olDestroyQueue(q));
}

static void test_info(void) {
  ol_queue_handle_t q = olc_queue();
  ol_device_handle_t d = NULL;
  OLC_OK(olGetQueueInfo(q, OL_QUEUE_INFO_DEVICE, sizeof d, &d));
  OLC_EQ((uintptr_t)d, (uintptr_t)olc_dev);
  bool empty = false;
  OLC_OK(olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty));
  OLC_TRUE(empty);
  size_t n = 0;
  OLC_OK(olGetQueueInfoSize(q, OL_QUEUE_INFO_DEVICE, &n));
  OLC_EQ(n, sizeof(ol_device_handle_t));
  OLC_OK(olGetQueueInfoSize(q, OL_QUEUE_INFO_EMPTY, &n));
  OLC_EQ(n, sizeof(bool));

  OLC_ERR_HAS(olGetQueueInfo(q, OL_QUEUE_INFO_DEVICE, 0, &d), OL_ERRC_INVALID_SIZE, "PropSize == 0");
  OLC_ERR_CODE(olGetQueueInfo(q, OL_QUEUE_INFO_DEVICE, sizeof d - 1, &d), OL_ERRC_INVALID_SIZE);
  OLC_ERR_HAS(olGetQueueInfo(q, (ol_queue_info_t)OLC_BIG, sizeof d, &d), OL_ERRC_INVALID_ENUMERATION,
              "olGetQueueInfo enum '2147483647' is invalid");
  OLC_ERR_HAS(olGetQueueInfoSize(q, (ol_queue_info_t)OLC_BIG, &n), OL_ERRC_INVALID_ENUMERATION,
              "olGetQueueInfo enum '2147483647' is invalid");
  OLC_OK(olDestroyQueue(q));
  OLC_ERR_HAS(olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty), OL_ERRC_INVALID_QUEUE,
              "destroyed");
}

/* EMPTY is exact: false while work is held back, true after a sync. */
static void test_empty_exact(void) {
  ol_queue_handle_t q = olc_queue();
  olc_gate g;
  bool empty = true;
  if (!olc_gate_close(&g, q))
    return;
  OLC_OK(olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty));
  OLC_TRUE(!empty);
  OLC_TRUE(olc_gate_wait_entered(&g));
  olc_sleep_ms(20);
  OLC_OK(olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty));
  OLC_TRUE(!empty);
  olc_gate_open(&g);
  OLC_OK(olSyncQueue(q));
  OLC_OK(olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty));
  OLC_TRUE(empty);
  /* and it becomes true without a sync once the work has run */
  uint32_t a = 1, b = 0;
  OLC_OK(olMemcpy(q, &b, olc_host, &a, olc_host, sizeof a));
  double t0 = olc_now_ms();
  ol_result_t r;
  do
    r = olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty);
  while (!r && !empty && olc_now_ms() - t0 < 5000);
  OLC_OK(r);
  OLC_TRUE(empty);
  OLC_EQ(b, 1);
  OLC_OK(olDestroyQueue(q));
}

/* Destroying a queue does not wait for its work; the work still runs and an
 * event recorded before the destroy can still be waited for. */
static atomic_int ran_after_destroy;
static void mark_fn(void *user) {
  (void)user;
  atomic_store(&ran_after_destroy, 1);
}

static void test_destroy_pending(void) {
  ol_queue_handle_t q = olc_queue();
  olc_gate g;
  atomic_store(&ran_after_destroy, 0);
  if (!olc_gate_close(&g, q))
    return;
  uint32_t src = 99, dst = 0;
  OLC_OK(olMemcpy(q, &dst, olc_host, &src, olc_host, sizeof src));
  OLC_OK(olLaunchHostFunction(q, mark_fn, NULL));
  ol_event_handle_t ev = NULL;
  OLC_OK(olCreateEvent(q, &ev));
  double t0 = olc_now_ms();
  OLC_OK(olDestroyQueue(q));
  OLC_TRUE(olc_now_ms() - t0 < 200); /* did not wait for the gate */
  bool done = true;
  OLC_OK(olGetEventInfo(ev, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done));
  OLC_TRUE(!done);
  ol_queue_handle_t owner = NULL;
  OLC_OK(olGetEventInfo(ev, OL_EVENT_INFO_QUEUE, sizeof owner, &owner));
  OLC_EQ((uintptr_t)owner, (uintptr_t)q);
  OLC_EQ(atomic_load(&ran_after_destroy), 0);
  /* a new queue works while the old one is still blocked */
  ol_queue_handle_t q2 = olc_queue();
  uint32_t x = 0, y = 5;
  OLC_OK(olMemcpy(q2, &x, olc_host, &y, olc_host, sizeof x));
  OLC_OK(olSyncQueue(q2));
  OLC_EQ(x, 5);
  olc_gate_open(&g);
  OLC_OK(olSyncEvent(ev));
  OLC_EQ(dst, 99);
  OLC_EQ(atomic_load(&ran_after_destroy), 1);
  OLC_OK(olGetEventInfo(ev, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done));
  OLC_TRUE(done);
  OLC_OK(olDestroyEvent(ev));
  OLC_OK(olDestroyQueue(q2));
}

/* Many threads submitting to their own queues at once. */
static void *own_queue_worker(void *arg) {
  uint32_t *out = arg;
  int bad = 0;
  for (int round = 0; round < 20; round++) {
    ol_queue_handle_t q = NULL;
    bad += olCreateQueue(olc_dev, &q) != NULL;
    uint32_t v = (uint32_t)round;
    bad += olMemFill(q, out, sizeof v, &v, 256 * sizeof(uint32_t)) != NULL;
    bad += olSyncQueue(q) != NULL;
    uint32_t got[256];
    const uint32_t *chk = out;
    if (!olc_on_host) { /* DEVICE memory: read back through the API */
      bad += olMemcpy(NULL, got, olc_host, out, olc_dev, sizeof got) != NULL;
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
  uint32_t *bufs = olc_on_host ? &host_bufs[0][0] : olc_alloc(OL_ALLOC_TYPE_DEVICE, sizeof host_bufs);
  if (!bufs)
    return;
  OLC_EQ(olc_threads(T, own_queue_worker, bufs, 256 * sizeof bufs[0]), 0);
  if (bufs != &host_bufs[0][0])
    OLC_OK(olMemFree(bufs));
}

/* A sync of a queue seen idle returns at once (the runtime may answer it
 * without the plugin); once new work is queued, the next sync must wait for
 * it again: a host function that sleeps, a wait for another queue's held
 * work, a large copy and a large fill, each alone after idle syncs. */
static atomic_int slept_done;
static void sleep_then_mark(void *user) {
  olc_sleep_ms(25);
  atomic_store((atomic_int *)user, 1);
}

typedef struct {
  olc_gate *g;
  atomic_int opened;
} idle_opener;

static void *open_later(void *user) {
  idle_opener *o = user;
  olc_gate_wait_entered(o->g);
  olc_sleep_ms(25);
  atomic_store(&o->opened, 1);
  olc_gate_open(o->g);
  return NULL;
}

static void test_sync_after_idle(void) {
  OLC_HOST_VISIBLE();
  ol_queue_handle_t q = olc_queue(), a = olc_queue();
  enum { BIG = 64 << 20 };
  uint32_t *src = malloc(BIG), *dst = malloc(BIG);
  uint32_t *fillbuf = olc_alloc(OL_ALLOC_TYPE_MANAGED, BIG);
  char *dbuf = olc_alloc(OL_ALLOC_TYPE_DEVICE, BIG);
  OLC_TRUE(src && dst);
  if (!src || !dst || !fillbuf || !dbuf) {
    free(src), free(dst);
    if (fillbuf)
      OLC_OK(olMemFree(fillbuf));
    if (dbuf)
      OLC_OK(olMemFree(dbuf));
    return;
  }
  for (int round = 0; round < 3; round++) {
    OLC_OK(olSyncQueue(q));
    OLC_OK(olSyncQueue(q)); /* idle, and seen idle */

    /* a host function */
    atomic_store(&slept_done, 0);
    OLC_OK(olLaunchHostFunction(q, sleep_then_mark, &slept_done));
    OLC_OK(olSyncQueue(q));
    OLC_EQ(atomic_load(&slept_done), 1);
    OLC_OK(olSyncQueue(q));

    /* a wait for an event of another queue whose host function holds it */
    olc_gate g;
    idle_opener op = {&g, 0};
    if (olc_gate_close(&g, a)) {
      ol_event_handle_t e = NULL;
      OLC_OK(olCreateEvent(a, &e));
      OLC_OK(olWaitEvents(q, &e, 1));
      pthread_t t;
      pthread_create(&t, NULL, open_later, &op);
      OLC_OK(olSyncQueue(q));
      OLC_EQ(atomic_load(&op.opened), 1);
      pthread_join(t, NULL);
      OLC_OK(olSyncQueue(a));
      if (e)
        OLC_OK(olDestroyEvent(e));
    }
    OLC_OK(olSyncQueue(q));

    /* large copies: their last word is there when the sync returns (host
     * to host, which a GPU queue hands to the host, and host to device) */
    uint32_t v = 0x5a5a0000u + (uint32_t)round, got = 0;
    for (size_t i = 0; i < BIG / 4; i += 1024)
      src[i] = v;
    src[BIG / 4 - 1] = v;
    dst[BIG / 4 - 1] = 0;
    OLC_OK(olMemcpy(q, dst, olc_host, src, olc_host, BIG));
    OLC_OK(olSyncQueue(q));
    OLC_EQ(dst[BIG / 4 - 1], v);
    OLC_OK(olSyncQueue(q));
    OLC_OK(olMemcpy(q, dbuf, olc_dev, src, olc_host, BIG));
    OLC_OK(olSyncQueue(q));
    OLC_OK(olMemcpy(NULL, &got, olc_host, dbuf + BIG - 4, olc_dev, sizeof got));
    OLC_EQ(got, v);
    OLC_OK(olSyncQueue(q));
    /* and back */
    dst[BIG / 4 - 1] = 0;
    OLC_OK(olMemcpy(q, dst, olc_host, dbuf, olc_dev, BIG));
    OLC_OK(olSyncQueue(q));
    OLC_EQ(dst[BIG / 4 - 1], v);
    OLC_OK(olSyncQueue(q));

    /* a large fill */
    uint32_t w = 0xc0de0000u + (uint32_t)round;
    fillbuf[BIG / 4 - 1] = 0;
    OLC_OK(olMemFill(q, fillbuf, sizeof w, &w, BIG));
    OLC_OK(olSyncQueue(q));
    OLC_EQ(fillbuf[BIG / 4 - 1], w);
  }
  free(src);
  free(dst);
  OLC_OK(olMemFree(fillbuf));
  OLC_OK(olMemFree(dbuf));
  OLC_OK(olDestroyQueue(a));
  OLC_OK(olDestroyQueue(q));
}

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    OLC_RUN(test_create_destroy);
    OLC_RUN(test_destroy_errors);
    OLC_RUN(test_sync);
    OLC_RUN(test_in_order);
    OLC_RUN(test_info);
    OLC_RUN(test_empty_exact);
    OLC_RUN(test_destroy_pending);
    OLC_RUN(test_threads_own_queues);
    OLC_RUN(test_sync_after_idle);
  }
  return olc_finish("queue");
}
