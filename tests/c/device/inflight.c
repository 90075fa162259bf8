/* Work in flight survives olDestroyQueue, olDestroyEvent and the final
 * olShutDown: work held back behind a host function (a gate) still runs,
 * on live memory, in order, and nothing waits forever.
 *
 * Each test makes its own initialisation, since most end with the final
 * olShutDown while work is still held back. The gate is opened by a helper
 * thread while the main thread is inside the call that must wait for the
 * work (olShutDown, olSyncQueue); the helper also bounds that call: if it
 * has not returned WATCHDOG_MS after the gate opened, the test fails and
 * the program ends at once (a hang must not eat the run's time limit).
 * SPDX-License-Identifier: Apache-2.0 */
#include "hcheck.h"

enum {
  N = 100000,        /* elements of each buffer */
  OPEN_MS = 150,     /* the helper opens the gate this long after it starts */
  WATCHDOG_MS = 10000,
};

struct foo_args {
  uint32_t *out;
};

/* ---------------------------------------------------------- helpers --- */

static void fresh_init(void) {
  OK(olInit());
  hc_host = NULL;
  OK(olIterateDevices(hc_find_host, &hc_host));
  TRUE(hc_refind()); /* the device under test, in this initialisation */
}

/* Another device of the backend under test (NULL if it has only one). */
static ol_device_handle_t other_device(void) {
  hc_devlist l;
  hc_list_devices(&l);
  for (int i = 0; i < l.n; i++)
    if (l.sel[i].backend == hc_backend && l.dev[i] != hc_dev)
      return l.dev[i];
  return NULL;
}

/* The helper thread: opens gate after OPEN_MS, then waits for `done`. */
typedef struct opener {
  hc_gate *gate;
  const char *call; /* what the main thread is blocked in, for the message */
  atomic_int done;
  pthread_t t;
} opener;

static void *opener_main(void *arg) {
  opener *o = arg;
  hc_sleep_ms(OPEN_MS);
  hc_gate_open(o->gate);
  double t0 = hc_now_ms();
  while (!atomic_load(&o->done)) {
    if (hc_now_ms() - t0 > WATCHDOG_MS) {
      printf("FAIL %s:%d (%s): %s has not returned %d ms after the gate opened: it waits "
             "forever\n",
             __FILE__, __LINE__, hc_name, o->call, WATCHDOG_MS);
      fflush(stdout);
      _exit(1);
    }
    hc_sleep_ms(5);
  }
  return NULL;
}

static void opener_start(opener *o, hc_gate *g, const char *call) {
  o->gate = g;
  o->call = call;
  atomic_store(&o->done, 0);
  pthread_create(&o->t, NULL, opener_main, o);
}

static void opener_stop(opener *o) {
  atomic_store(&o->done, 1);
  pthread_join(o->t, NULL);
}

static void set_flag(void *user) { atomic_store((atomic_int *)user, 1); }

static uint32_t *host_buf(void) {
  uint32_t *p = malloc(N * sizeof(uint32_t));
  if (p)
    memset(p, 0, N * sizeof(uint32_t));
  return p;
}

/* Fails once (naming the first bad element) unless p[i] == want(i). */
#define EXPECT_ALL(p, want)                                                    \
  do {                                                                         \
    size_t bad_ = 0, first_ = 0;                                               \
    for (size_t i = 0; i < N; i++)                                             \
      if ((p)[i] != (uint32_t)(want) && !bad_++)                               \
        first_ = i;                                                            \
    if (bad_) {                                                                \
      size_t i = first_; /* for want */                                        \
      (void)i;                                                                 \
      hc_failed(__FILE__, __LINE__,                                            \
                "%s: %zu of %d elements wrong, first [%zu] = %u, wanted %u",   \
                #p, bad_, N, first_, (p)[first_], (uint32_t)(want));           \
    } else {                                                                   \
      olc_pass();                                                               \
    }                                                                          \
  } while (0)

/* ------------------------------------------------------------ tests --- */

/* A held queue gets a fill, a kernel, two device→host copies into malloc
 * memory and a host function; it is destroyed, then the final olShutDown
 * runs while the gate is still closed. The shutdown waits for all of it,
 * and frees the memory only afterwards. */
static void test_shutdown_finishes_destroyed_queue(void) {
  fresh_init();
  ol_program_handle_t p = hc_program("foo");
  ol_symbol_handle_t k = p ? hc_kernel(p, "foo") : NULL;
  uint32_t *a = hc_alloc(OL_ALLOC_TYPE_DEVICE, N * sizeof(uint32_t));
  uint32_t *b = hc_alloc(OL_ALLOC_TYPE_DEVICE, N * sizeof(uint32_t));
  uint32_t *ha = host_buf(), *hb = host_buf();
  ol_queue_handle_t q = hc_queue();
  if (!k || !a || !b || !ha || !hb || !q) {
    OK(olShutDown());
    return;
  }
  static atomic_int ran;
  atomic_store(&ran, 0);
  hc_gate g;
  hc_gate_close(&g, q);
  uint32_t seven = 7;
  OK(olMemFill(q, b, sizeof seven, &seven, N * sizeof(uint32_t)));
  struct foo_args fa = {a};
  ol_kernel_launch_size_args_t l = hc_size1(N / 250, 250);
  OK(olLaunchKernel(q, hc_dev, k, &fa, sizeof fa, &l));
  OK(olMemcpy(q, ha, hc_host, a, hc_dev, N * sizeof(uint32_t)));
  OK(olMemcpy(q, hb, hc_host, b, hc_dev, N * sizeof(uint32_t)));
  OK(olLaunchHostFunction(q, set_flag, &ran));
  OK(olDestroyQueue(q));
  opener o;
  opener_start(&o, &g, "the final olShutDown");
  OK(olShutDown());
  opener_stop(&o);
  EQ(atomic_load(&ran), 1);
  EXPECT_ALL(ha, i);
  EXPECT_ALL(hb, 7);
  free(ha);
  free(hb);
}

/* Queue 1 waits for an event of held queue 0 (on the same device or,
 * where there is one, another device of the backend); queue 1 then copies
 * what queue 0 filled and runs a host function.
 * - shutdown: both queues are destroyed and the event is left to the final
 *   olShutDown, which must wait for both queues' work.
 * - otherwise the event is destroyed right after the wait, while still
 *   held back: the wait still holds, and olSyncQueue(q1) returns once
 *   queue 0's work before the event has run.
 * Either way queue 1's copy sees queue 0's fill. */
static void cross_queue_wait(bool across, bool shutdown) {
  fresh_init();
  ol_device_handle_t d1 = across ? other_device() : hc_dev;
  if (!d1) {
    hc_skipped(__FILE__, __LINE__, "the backend has one device");
    OK(olShutDown());
    return;
  }
  uint32_t *a = hc_alloc(OL_ALLOC_TYPE_DEVICE, N * sizeof(uint32_t));
  uint32_t *ha = host_buf();
  ol_queue_handle_t q0 = hc_queue(), q1 = NULL;
  OK(olCreateQueue(d1, &q1));
  if (!a || !ha || !q0 || !q1) {
    OK(olShutDown());
    return;
  }
  static atomic_int ran;
  atomic_store(&ran, 0);
  hc_gate g;
  hc_gate_close(&g, q0);
  uint32_t five = 5;
  OK(olMemFill(q0, a, sizeof five, &five, N * sizeof(uint32_t)));
  ol_event_handle_t e = NULL;
  OK(olCreateEvent(q0, &e));
  OK(olWaitEvents(q1, &e, 1));
  if (!shutdown)
    OK(olDestroyEvent(e));
  OK(olMemcpy(q1, ha, hc_host, a, hc_dev, N * sizeof(uint32_t)));
  OK(olLaunchHostFunction(q1, set_flag, &ran));
  opener o;
  if (shutdown) {
    OK(olDestroyQueue(q1));
    OK(olDestroyQueue(q0));
    opener_start(&o, &g, "the final olShutDown");
    OK(olShutDown());
    opener_stop(&o);
  } else {
    opener_start(&o, &g, "olSyncQueue of the waiting queue");
    OK(olSyncQueue(q1));
    opener_stop(&o);
  }
  EQ(atomic_load(&ran), 1);
  EXPECT_ALL(ha, 5);
  if (!shutdown) {
    OK(olSyncQueue(q0));
    OK(olDestroyQueue(q0));
    OK(olDestroyQueue(q1));
    OK(olMemFree(a));
    OK(olShutDown());
  }
  free(ha);
}

static void test_shutdown_cross_queue_wait(void) { cross_queue_wait(false, true); }
static void test_shutdown_cross_device_wait(void) { cross_queue_wait(true, true); }
static void test_destroy_waited_event(void) { cross_queue_wait(false, false); }
static void test_destroy_waited_event_across_devices(void) { cross_queue_wait(true, false); }

/* A wait that cannot be submitted yet (its queue is held) keeps the point
 * the event had when olWaitEvents was called: destroying the event before
 * the wait is submitted (what it was made of may then be reused) does not
 * break the wait. Queue 0 runs a large kernel so that the event is a real,
 * pending one when it is created. */
static void test_destroy_event_before_wait_submitted(void) {
  fresh_init();
  enum { BIG = 1 << 22 };
  ol_program_handle_t p = hc_program("foo");
  ol_symbol_handle_t k = p ? hc_kernel(p, "foo") : NULL;
  uint32_t *a = hc_alloc(OL_ALLOC_TYPE_DEVICE, N * sizeof(uint32_t));
  uint32_t *big = hc_alloc(OL_ALLOC_TYPE_DEVICE, BIG * sizeof(uint32_t));
  uint32_t *ha = host_buf();
  ol_queue_handle_t q0 = hc_queue(), q1 = hc_queue();
  if (!k || !a || !big || !ha || !q0 || !q1) {
    OK(olShutDown());
    return;
  }
  hc_gate g1;
  hc_gate_close(&g1, q1); /* q1 is held: its wait is submitted later */
  uint32_t five = 5;
  OK(olMemFill(q0, a, sizeof five, &five, N * sizeof(uint32_t)));
  struct foo_args fa = {big};
  ol_kernel_launch_size_args_t l = hc_size1(BIG / 256, 256);
  OK(olLaunchKernel(q0, hc_dev, k, &fa, sizeof fa, &l));
  ol_event_handle_t e = NULL;
  OK(olCreateEvent(q0, &e));
  OK(olWaitEvents(q1, &e, 1));
  OK(olDestroyEvent(e));
  OK(olMemcpy(q1, ha, hc_host, a, hc_dev, N * sizeof(uint32_t)));
  opener o;
  opener_start(&o, &g1, "olSyncQueue of the waiting queue");
  OK(olSyncQueue(q1));
  opener_stop(&o);
  EXPECT_ALL(ha, 5);
  OK(olSyncQueue(q0));
  OK(olDestroyQueue(q0));
  OK(olDestroyQueue(q1));
  OK(olMemFree(a));
  OK(olMemFree(big));
  OK(olDestroyProgram(p));
  free(ha);
  OK(olShutDown());
}

/* INFLIGHT_TEST=<test name> runs only that test (to see one case alone:
 * a hang ends the program). */
#define CASE(fn)                                                               \
  do {                                                                         \
    const char *only_ = getenv("INFLIGHT_TEST");                               \
    if (!only_ || !*only_ || strcmp(only_, #fn) == 0)                          \
      RUN(fn);                                                                 \
  } while (0)

int main(int argc, char **argv) {
  hc_start(argc, argv);
  while (hc_next_device()) {
    /* drop the current reference: each test makes its own initialisation */
    OK(olShutDown());
    CASE(test_shutdown_finishes_destroyed_queue);
    CASE(test_shutdown_cross_queue_wait);
    CASE(test_shutdown_cross_device_wait);
    CASE(test_destroy_waited_event);
    CASE(test_destroy_waited_event_across_devices);
    CASE(test_destroy_event_before_wait_submitted);
    OK(olInit()); /* for the next device and hc_finish's olShutDown */
  }
  return hc_finish("inflight");
}
