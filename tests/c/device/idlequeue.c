/* Calls on an idle queue, which the library may answer without entering
 * Go (impl/queuemirror.h: olSyncQueue, olCreateEvent, and copies on a
 * queue where the plugin takes them from C): they must mean what the slow
 * path means. A sync after an idle sync still waits for new work; an event
 * made on an idle queue is a complete event of that queue, made on a busy
 * one it is not; copies on a queue keep every range check; a handle
 * destroyed while other threads use it gives errors, never a crash.
 * SPDX-License-Identifier: Apache-2.0 */
#include "oldevices.h"

enum { ROUNDS = 20, N = 1 << 14 };

/* Idle syncs, then work behind a closed gate: the next sync waits for the
 * gate and for the copy after it. */
static void test_sync_after_idle_sync_waits(void) {
  ol_queue_handle_t q = olc_queue();
  uint32_t *d = olc_alloc(OL_ALLOC_TYPE_DEVICE, N * sizeof(uint32_t));
  uint32_t *h = calloc(N, sizeof(uint32_t));
  if (!q || !d || !h)
    goto out;
  for (int r = 0; r < ROUNDS; r++) {
    for (int i = 0; i < 100; i++)
      OLC_OK(olSyncQueue(q)); /* idle: answered at once */
    for (uint32_t i = 0; i < N; i++)
      h[i] = i + (uint32_t)r;
    olc_gate g;
    if (!olc_gate_close(&g, q))
      break;
    OLC_OK(olMemcpy(q, d, olc_dev, h, olc_host, N * sizeof(uint32_t)));
    olc_opener o;
    /* (the clock starts before the opener: a main thread delayed after
     * starting it would otherwise see the gate open sooner than 20 ms) */
    double t0 = olc_now_ms();
    olc_opener_start(&o, &g, "olSyncQueue", 20, 10000);
    OLC_OK(olSyncQueue(q));
    double waited = olc_now_ms() - t0;
    olc_opener_stop(&o);
    OLC_CHECK(atomic_load(&g.open), "round %d: olSyncQueue returned before the gate opened (%.1f ms)", r, waited);
    OLC_CHECK(waited >= 10, "round %d: olSyncQueue returned after %.1f ms, before the gate opened at 20 ms", r, waited);
    uint32_t back[64];
    if (olc_read(back, d + N - 64, sizeof back))
      OLC_EQ_ARRAY(back, 64, (uint32_t)(N - 64 + i) + (uint32_t)r);
  }
out:
  if (d)
    OLC_OK(olMemFree(d));
  free(h);
  if (q)
    OLC_OK(olDestroyQueue(q));
}

static bool complete(ol_event_handle_t e) {
  bool done = false;
  OLC_OK(olGetEventInfo(e, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done));
  return done;
}

/* Many events of an idle queue (the library reserves them ahead): each a
 * distinct, complete event of the queue; destroyed once only; one made
 * behind a closed gate is not complete until the gate opens. */
static void test_events_of_an_idle_queue(void) {
  enum { E = 300 };
  ol_queue_handle_t q = olc_queue();
  ol_event_handle_t *ev = calloc(E, sizeof *ev);
  if (!q || !ev)
    goto out;
  OLC_OK(olSyncQueue(q));
  int bad = 0;
  for (int i = 0; i < E; i++) {
    if (!OLC_OK(olCreateEvent(q, &ev[i])))
      goto out;
    ol_queue_handle_t of = NULL;
    OLC_OK(olGetEventInfo(ev[i], OL_EVENT_INFO_QUEUE, sizeof of, &of));
    bad += of != q || ev[i] == NULL || !complete(ev[i]);
    for (int j = 0; j < i; j++)
      bad += ev[j] == ev[i];
  }
  OLC_CHECK(bad == 0, "%d of %d events of an idle queue were not distinct complete events of it", bad, E);
  olc_gate g;
  ol_event_handle_t busy = NULL;
  if (olc_gate_close(&g, q) && OLC_OK(olCreateEvent(q, &busy))) {
    OLC_CHECK(!complete(busy), "an event made behind a closed gate is complete");
    OLC_TRUE(complete(ev[E - 1])); /* made before the gate */
    olc_opener o;
    olc_opener_start(&o, &g, "olSyncEvent", 20, 10000);
    OLC_OK(olSyncEvent(busy));
    olc_opener_stop(&o);
    OLC_TRUE(atomic_load(&g.open) && complete(busy));
    OLC_OK(olDestroyEvent(busy));
  }
  for (int i = 0; i < E; i++) {
    OLC_OK(olSyncEvent(ev[i]));
    OLC_OK(olDestroyEvent(ev[i]));
  }
  OLC_ERR_HAS(olDestroyEvent(ev[E / 2]), OL_ERRC_INVALID_EVENT, "destroyed");
out:
  free(ev);
  if (q)
    OLC_OK(olDestroyQueue(q));
}

/* Events of an idle queue stay usable after the queue is destroyed, and
 * they are not the queue's to take back. */
static void test_idle_events_outlive_the_queue(void) {
  enum { E = 40 };
  ol_queue_handle_t q = olc_queue();
  ol_event_handle_t ev[E] = {0};
  if (!q)
    return;
  for (int i = 0; i < E; i++)
    OLC_OK(olCreateEvent(q, &ev[i]));
  OLC_OK(olDestroyQueue(q));
  OLC_ERR_HAS(olSyncQueue(q), OL_ERRC_INVALID_QUEUE, "destroyed");
  OLC_ERR_HAS(olCreateEvent(q, &ev[0]), OL_ERRC_INVALID_QUEUE, "destroyed");
  /* another queue waits for them: nothing to wait for; a destroyed queue
   * cannot wait */
  ol_queue_handle_t other = olc_queue();
  if (other) {
    OLC_OK(olWaitEvents(other, ev, E));
    OLC_ERR_HAS(olWaitEvents(q, ev, E), OL_ERRC_INVALID_QUEUE, "destroyed");
  }
  /* the sizes of their properties, and a larger buffer than needed */
  size_t sz = 0;
  OLC_OK(olGetEventInfoSize(ev[0], OL_EVENT_INFO_QUEUE, &sz));
  OLC_EQ(sz, sizeof(ol_queue_handle_t));
  OLC_OK(olGetEventInfoSize(ev[0], OL_EVENT_INFO_IS_COMPLETE, &sz));
  OLC_EQ(sz, sizeof(bool));
  uint64_t wide[2] = {~0ull, ~0ull};
  OLC_OK(olGetEventInfo(ev[0], OL_EVENT_INFO_QUEUE, sizeof wide, wide));
  OLC_TRUE(wide[0] == (uint64_t)(uintptr_t)q && wide[1] == ~0ull);
  OLC_ERR_CODE(olGetEventInfo(ev[0], OL_EVENT_INFO_QUEUE, 4, wide), OL_ERRC_INVALID_SIZE);
  OLC_ERR_CODE(olGetEventInfo(ev[0], OL_EVENT_INFO_LAST, sizeof wide, wide), OL_ERRC_INVALID_ENUMERATION);
  for (int i = 0; i < E; i++) {
    ol_queue_handle_t of = NULL;
    OLC_OK(olGetEventInfo(ev[i], OL_EVENT_INFO_QUEUE, sizeof of, &of));
    OLC_TRUE(of == q && complete(ev[i]));
    OLC_OK(olSyncEvent(ev[i]));
    OLC_OK(olDestroyEvent(ev[i]));
  }
  if (other) {
    /* a destroyed one among them is named */
    OLC_ERR_HAS(olWaitEvents(other, ev, E), OL_ERRC_INVALID_EVENT, "Events[0]");
    OLC_ERR_HAS(olGetEventInfo(ev[1], OL_EVENT_INFO_IS_COMPLETE, sizeof wide, wide), OL_ERRC_INVALID_EVENT,
                "destroyed");
    OLC_OK(olDestroyQueue(other));
  }
}

/* Events of idle queues made and destroyed by several threads at once
 * (impl/doneevents.h: a shared store): every event is its own queue's,
 * complete, destroyed exactly once; a destroyed handle keeps failing
 * after its slot is used again, and is never handed out again. */
enum { MAKERS = 4, LIVE = 1500, MAKER_ROUNDS = 6, STALE_EVERY = 150 };

struct maker {
  ol_queue_handle_t q;
  ol_event_handle_t *ev;  /* LIVE live at a time */
  ol_event_handle_t *old; /* the last round's, destroyed */
  int bad, stale_ok, reused;
};

static void *make_events(void *arg) {
  struct maker *m = arg;
  for (int r = 0; r < MAKER_ROUNDS; r++) {
    for (int i = 0; i < LIVE; i++) {
      ol_result_t res = olCreateEvent(m->q, &m->ev[i]);
      ol_queue_handle_t of = NULL;
      bool done = false;
      if (res || olGetEventInfo(m->ev[i], OL_EVENT_INFO_QUEUE, sizeof of, &of) ||
          olGetEventInfo(m->ev[i], OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done) || of != m->q || !done) {
        m->bad++;
        m->ev[i] = NULL;
      }
    }
    for (int i = 0; i < LIVE; i++) {
      if (m->ev[i] && (olSyncEvent(m->ev[i]) || olDestroyEvent(m->ev[i])))
        m->bad++;
      /* last round's handle, destroyed: still an error, whatever reuses
       * its slot (a sample: each error's Details is kept for the process,
       * up to a limit) */
      if (r > 0 && m->old[i] && i % STALE_EVERY == 0) {
        ol_result_t res = olDestroyEvent(m->old[i]);
        m->stale_ok += res != NULL && res->Code == OL_ERRC_INVALID_EVENT && strstr(res->Details, "destroyed");
      }
      m->old[i] = m->ev[i];
    }
  }
  return NULL;
}

static void test_events_from_threads_reused(void) {
  struct maker m[MAKERS] = {0};
  pthread_t t[MAKERS];
  int started = 0;
  for (int k = 0; k < MAKERS; k++) {
    m[k].q = olc_queue();
    m[k].ev = calloc(LIVE, sizeof *m[k].ev);
    m[k].old = calloc(LIVE, sizeof *m[k].old);
    if (!m[k].q || !m[k].ev || !m[k].old)
      goto out;
  }
  for (; started < MAKERS; started++)
    if (pthread_create(&t[started], NULL, make_events, &m[started]) != 0)
      break;
  for (int k = 0; k < started; k++)
    pthread_join(t[k], NULL);
  OLC_EQ(started, MAKERS);
  for (int k = 0; k < started; k++) {
    OLC_CHECK(m[k].bad == 0, "thread %d: %d events were not complete events of its idle queue, or failed", k,
              m[k].bad);
    int stale = (MAKER_ROUNDS - 1) * (LIVE / STALE_EVERY);
    OLC_CHECK(m[k].stale_ok == stale, "thread %d: %d of %d destroyed handles were refused as destroyed", k,
              m[k].stale_ok, stale);
  }
  /* a handle given out twice would show here: the last round's handles
   * of all threads are distinct */
  int dup = 0;
  for (int k = 0; k < started; k++)
    for (int i = 0; i < LIVE; i++)
      for (int j = 0; j < k; j++)
        for (int x = 0; x < LIVE; x++)
          dup += m[k].old[i] && m[k].old[i] == m[j].old[x];
  OLC_CHECK(dup == 0, "%d event handles were given to two threads", dup);
out:
  for (int k = 0; k < MAKERS; k++) {
    free(m[k].ev);
    free(m[k].old);
    if (m[k].q)
      OLC_OK(olDestroyQueue(m[k].q));
  }
}

/* Copies on a queue between memory of the device and the host keep the
 * checks of the slow path, and their data. */
static void test_queue_copies(void) {
  OLC_HOST_VISIBLE();
  ol_queue_handle_t q = olc_queue();
  uint8_t *a = olc_alloc(OL_ALLOC_TYPE_DEVICE, 4096);
  uint8_t *b = olc_alloc(OL_ALLOC_TYPE_DEVICE, 4096);
  uint8_t *pin = olc_alloc(OL_ALLOC_TYPE_HOST, 4096);
  uint8_t *heap = malloc(4096), *back = malloc(4096);
  if (!q || !a || !b || !pin || !heap || !back)
    goto out;
  for (int r = 0; r < ROUNDS; r++) {
    for (int i = 0; i < 4096; i++)
      heap[i] = (uint8_t)(i * 7 + r);
    OLC_OK(olMemcpy(q, a, olc_dev, heap, olc_host, 4096)); /* pageable -> device */
    OLC_OK(olMemcpy(q, b, olc_dev, a, olc_dev, 4096));     /* device -> device */
    OLC_OK(olMemcpy(q, pin, olc_dev, b, olc_dev, 4096));   /* device -> pinned, named with the device */
    OLC_OK(olMemcpy(q, back, olc_host, pin, olc_dev, 4096));
    OLC_OK(olSyncQueue(q));
    OLC_EQ_ARRAY(back, 4096, (uint8_t)(i * 7 + r));
  }
  /* past the end of an allocation, on either side */
  OLC_ERR_HAS(olMemcpy(q, a + 1, olc_dev, b, olc_dev, 4096), OL_ERRC_INVALID_SIZE, "past the end");
  OLC_ERR_HAS(olMemcpy(q, a, olc_dev, b + 4000, olc_dev, 200), OL_ERRC_INVALID_SIZE, "past the end");
  OLC_ERR_HAS(olMemcpy(q, heap, olc_host, pin + 100, olc_dev, 4096), OL_ERRC_INVALID_SIZE, "past the end");
  /* wrapping around the address space */
  OLC_ERR_CODE(olMemcpy(q, a, olc_dev, (void *)(UINTPTR_MAX - 16), olc_host, 64), OL_ERRC_INVALID_SIZE);
  /* NULL pointers */
  OLC_ERR_CODE(olMemcpy(q, NULL, olc_dev, b, olc_dev, 16), OL_ERRC_INVALID_NULL_POINTER);
  /* overlapping ranges of one allocation: a memmove */
  uint8_t pat[256];
  for (int i = 0; i < 256; i++)
    pat[i] = (uint8_t)i;
  OLC_OK(olMemcpy(q, a, olc_dev, pat, olc_host, sizeof pat));
  OLC_OK(olMemcpy(q, a + 16, olc_dev, a, olc_dev, 128));
  OLC_OK(olSyncQueue(q));
  uint8_t got[256];
  if (olc_read(got, a, sizeof got)) {
    OLC_EQ_ARRAY(got, 16, (uint8_t)i);
    OLC_EQ_ARRAY(got + 16, 128, (uint8_t)i);
  }
out:
  free(heap);
  free(back);
  if (a)
    OLC_OK(olMemFree(a));
  if (b)
    OLC_OK(olMemFree(b));
  if (pin)
    OLC_OK(olMemFree(pin));
  if (q)
    OLC_OK(olDestroyQueue(q));
}

struct user {
  ol_queue_handle_t q;
  uint8_t *a, *b;
  atomic_int stop, after;
  int bad;
};

/* Uses the queue until told to stop: each call succeeds or, once the
 * queue is gone, fails with INVALID_QUEUE. */
static void *use_queue(void *arg) {
  struct user *u = arg;
  while (!atomic_load(&u->stop)) {
    ol_result_t r[3];
    ol_event_handle_t e = NULL;
    r[0] = olSyncQueue(u->q);
    r[1] = olCreateEvent(u->q, &e);
    if (!r[1]) {
      /* never an event of another queue (one that took the slot over) */
      ol_queue_handle_t of = NULL;
      u->bad += olGetEventInfo(e, OL_EVENT_INFO_QUEUE, sizeof of, &of) != NULL || of != u->q;
      olDestroyEvent(e);
    }
    r[2] = olMemcpy(u->q, u->a, olc_dev, u->b, olc_dev, 64);
    for (int i = 0; i < 3; i++) {
      if (r[i] && r[i]->Code != OL_ERRC_INVALID_QUEUE)
        u->bad++;
      if (r[i])
        atomic_fetch_add(&u->after, 1);
    }
  }
  return NULL;
}

/* A queue destroyed while two threads use it. */
static void test_destroy_while_used(void) {
  for (int r = 0; r < ROUNDS; r++) {
    struct user u = {.q = olc_queue()};
    u.a = olc_alloc(OL_ALLOC_TYPE_DEVICE, 64);
    u.b = olc_alloc(OL_ALLOC_TYPE_DEVICE, 64);
    if (!u.q || !u.a || !u.b)
      return;
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
      pthread_create(&t[i], NULL, use_queue, &u);
    olc_sleep_ms(2);
    OLC_OK(olDestroyQueue(u.q));
    /* new queues, with events of idle queues, while the old handle is in
     * use: its slot is given to one of them */
    for (int i = 0; i < 150; i++) {
      ol_queue_handle_t n = olc_queue();
      ol_event_handle_t e[4];
      for (int j = 0; n && j < 4; j++)
        if (OLC_OK(olCreateEvent(n, &e[j])))
          OLC_OK(olDestroyEvent(e[j]));
      if (n)
        OLC_OK(olDestroyQueue(n));
    }
    /* until the users have seen the queue gone (a thread may have been off
     * the CPU all along) */
    for (double t0 = olc_now_ms(); !atomic_load(&u.after) && olc_now_ms() - t0 < 5000;)
      olc_sleep_ms(1);
    atomic_store(&u.stop, 1);
    for (int i = 0; i < 2; i++)
      pthread_join(t[i], NULL);
    OLC_CHECK(u.bad == 0,
              "round %d: %d calls on a queue being destroyed failed with another code than INVALID_QUEUE, or gave "
              "an event of another queue",
              r, u.bad);
    OLC_CHECK(atomic_load(&u.after) > 0, "round %d: no call failed within 5 s after the queue was destroyed", r);
    OLC_OK(olMemFree(u.a));
    OLC_OK(olMemFree(u.b));
  }
}

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    OLC_RUN(test_sync_after_idle_sync_waits);
    OLC_RUN(test_events_of_an_idle_queue);
    OLC_RUN(test_idle_events_outlive_the_queue);
    OLC_RUN(test_events_from_threads_reused);
    OLC_RUN(test_queue_copies);
    OLC_RUN(test_destroy_while_used);
  }
  return olc_finish("idlequeue");
}
