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
#include "oldevices.h"

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
  OLC_OK(olInit());
  olc_devlist l;
  OLC_OK(olc_list_devices(&l));
  olc_host = olc_host_in(&l);
  OLC_TRUE(olc_refind()); /* the device under test, in this initialisation */
}

/* Another device of the backend under test (NULL if it has only one). */
static ol_device_handle_t other_device(void) {
  olc_devlist l;
  olc_list_devices(&l);
  for (int i = 0; i < l.n; i++)
    if (l.sel[i].backend == olc_backend && l.dev[i] != olc_dev)
      return l.dev[i];
  return NULL;
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
      olc_fail(__FILE__, __LINE__,                                            \
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
  ol_program_handle_t p = olc_program("foo");
  ol_symbol_handle_t k = p ? olc_kernel(p, "foo") : NULL;
  uint32_t *a = olc_alloc(OL_ALLOC_TYPE_DEVICE, N * sizeof(uint32_t));
  uint32_t *b = olc_alloc(OL_ALLOC_TYPE_DEVICE, N * sizeof(uint32_t));
  uint32_t *ha = host_buf(), *hb = host_buf();
  ol_queue_handle_t q = olc_queue();
  if (!k || !a || !b || !ha || !hb || !q) {
    OLC_OK(olShutDown());
    return;
  }
  static atomic_int ran;
  atomic_store(&ran, 0);
  olc_gate g;
  olc_gate_close(&g, q);
  uint32_t seven = 7;
  OLC_OK(olMemFill(q, b, sizeof seven, &seven, N * sizeof(uint32_t)));
  struct foo_args fa = {a};
  ol_kernel_launch_size_args_t l = olc_size1(N / 250, 250);
  OLC_OK(olLaunchKernel(q, olc_dev, k, &fa, sizeof fa, &l));
  OLC_OK(olMemcpy(q, ha, olc_host, a, olc_dev, N * sizeof(uint32_t)));
  OLC_OK(olMemcpy(q, hb, olc_host, b, olc_dev, N * sizeof(uint32_t)));
  OLC_OK(olLaunchHostFunction(q, set_flag, &ran));
  OLC_OK(olDestroyQueue(q));
  olc_opener o;
  olc_opener_start(&o, &g, "the final olShutDown", OPEN_MS, WATCHDOG_MS);
  OLC_OK(olShutDown());
  olc_opener_stop(&o);
  OLC_EQ(atomic_load(&ran), 1);
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
  ol_device_handle_t d1 = across ? other_device() : olc_dev;
  if (!OLC_NEEDS(d1 != NULL, "a second device of the backend")) {
    OLC_OK(olShutDown());
    return;
  }
  uint32_t *a = olc_alloc(OL_ALLOC_TYPE_DEVICE, N * sizeof(uint32_t));
  uint32_t *ha = host_buf();
  ol_queue_handle_t q0 = olc_queue(), q1 = NULL;
  OLC_OK(olCreateQueue(d1, &q1));
  if (!a || !ha || !q0 || !q1) {
    OLC_OK(olShutDown());
    return;
  }
  static atomic_int ran;
  atomic_store(&ran, 0);
  olc_gate g;
  olc_gate_close(&g, q0);
  uint32_t five = 5;
  OLC_OK(olMemFill(q0, a, sizeof five, &five, N * sizeof(uint32_t)));
  ol_event_handle_t e = NULL;
  OLC_OK(olCreateEvent(q0, &e));
  OLC_OK(olWaitEvents(q1, &e, 1));
  if (!shutdown)
    OLC_OK(olDestroyEvent(e));
  OLC_OK(olMemcpy(q1, ha, olc_host, a, olc_dev, N * sizeof(uint32_t)));
  OLC_OK(olLaunchHostFunction(q1, set_flag, &ran));
  olc_opener o;
  if (shutdown) {
    OLC_OK(olDestroyQueue(q1));
    OLC_OK(olDestroyQueue(q0));
    olc_opener_start(&o, &g, "the final olShutDown", OPEN_MS, WATCHDOG_MS);
    OLC_OK(olShutDown());
    olc_opener_stop(&o);
  } else {
    olc_opener_start(&o, &g, "olSyncQueue of the waiting queue", OPEN_MS, WATCHDOG_MS);
    OLC_OK(olSyncQueue(q1));
    olc_opener_stop(&o);
  }
  OLC_EQ(atomic_load(&ran), 1);
  EXPECT_ALL(ha, 5);
  if (!shutdown) {
    OLC_OK(olSyncQueue(q0));
    OLC_OK(olDestroyQueue(q0));
    OLC_OK(olDestroyQueue(q1));
    OLC_OK(olMemFree(a));
    OLC_OK(olShutDown());
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
  ol_program_handle_t p = olc_program("foo");
  ol_symbol_handle_t k = p ? olc_kernel(p, "foo") : NULL;
  uint32_t *a = olc_alloc(OL_ALLOC_TYPE_DEVICE, N * sizeof(uint32_t));
  uint32_t *big = olc_alloc(OL_ALLOC_TYPE_DEVICE, BIG * sizeof(uint32_t));
  uint32_t *ha = host_buf();
  ol_queue_handle_t q0 = olc_queue(), q1 = olc_queue();
  if (!k || !a || !big || !ha || !q0 || !q1) {
    OLC_OK(olShutDown());
    return;
  }
  olc_gate g1;
  olc_gate_close(&g1, q1); /* q1 is held: its wait is submitted later */
  uint32_t five = 5;
  OLC_OK(olMemFill(q0, a, sizeof five, &five, N * sizeof(uint32_t)));
  struct foo_args fa = {big};
  ol_kernel_launch_size_args_t l = olc_size1(BIG / 256, 256);
  OLC_OK(olLaunchKernel(q0, olc_dev, k, &fa, sizeof fa, &l));
  ol_event_handle_t e = NULL;
  OLC_OK(olCreateEvent(q0, &e));
  OLC_OK(olWaitEvents(q1, &e, 1));
  OLC_OK(olDestroyEvent(e));
  OLC_OK(olMemcpy(q1, ha, olc_host, a, olc_dev, N * sizeof(uint32_t)));
  olc_opener o;
  olc_opener_start(&o, &g1, "olSyncQueue of the waiting queue", OPEN_MS, WATCHDOG_MS);
  OLC_OK(olSyncQueue(q1));
  olc_opener_stop(&o);
  EXPECT_ALL(ha, 5);
  OLC_OK(olSyncQueue(q0));
  OLC_OK(olDestroyQueue(q0));
  OLC_OK(olDestroyQueue(q1));
  OLC_OK(olMemFree(a));
  OLC_OK(olMemFree(big));
  OLC_OK(olDestroyProgram(p));
  free(ha);
  OLC_OK(olShutDown());
}

/* INFLIGHT_TEST=<test name> runs only that test (to see one case alone:
 * a hang ends the program). */
#define CASE(fn)                                                               \
  do {                                                                         \
    const char *only_ = getenv("INFLIGHT_TEST");                               \
    if (!only_ || !*only_ || strcmp(only_, #fn) == 0)                          \
      OLC_RUN(fn);                                                                 \
  } while (0)

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    /* drop the current reference: each test makes its own initialisation */
    OLC_OK(olShutDown());
    CASE(test_shutdown_finishes_destroyed_queue);
    CASE(test_shutdown_cross_queue_wait);
    CASE(test_shutdown_cross_device_wait);
    CASE(test_destroy_waited_event);
    CASE(test_destroy_waited_event_across_devices);
    CASE(test_destroy_event_before_wait_submitted);
    OLC_OK(olInit()); /* for the next device and olc_finish's olShutDown */
  }
  return olc_finish("inflight");
}
