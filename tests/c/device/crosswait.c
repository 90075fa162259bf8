/* Waits that could never end, across platforms: a host function on a queue
 * of one platform syncs a queue (or an event) of another platform that
 * waits, through olWaitEvents, for an event recorded after that host
 * function. The library must refuse the sync at once (INVALID_ARGUMENT,
 * "would wait forever"), for every ordered pair of host, CUDA and AMDGPU
 * and for chains through all three; a sync that does not depend on the
 * host function must still work. Two host functions that sync each
 * other's queues (on one platform or two) are the same cycle through the
 * host functions' own waits.
 *
 * A hang is a failure here, never a stuck run: the main thread waits for
 * each host function with a deadline, and an alarm ends the program if
 * anything else hangs. Pairs whose platforms are not present are skipped
 * (make check-fake-mixed has all three). CROSSWAIT_CASE="cuda -> host" (a
 * name as printed) runs that case alone.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <signal.h>

#include "oldevices.h"

#define DEADLINE_MS 10000 /* for a host function that should return at once */
#define WATCHDOG_S 80 /* below run.sh's limit, so that the message says why */

static const ol_platform_backend_t backends[3] = {
    OL_PLATFORM_BACKEND_HOST, OL_PLATFORM_BACKEND_CUDA, OL_PLATFORM_BACKEND_AMDGPU};
static ol_device_handle_t devs[3]; /* by backends[] index; NULL: absent */

static void watchdog(int sig) {
  (void)sig;
  static const char msg[] = "FAIL crosswait: still running after the watchdog's "
                            "limit: a wait across platforms hung\n";
  ssize_t r = write(1, msg, sizeof msg - 1);
  (void)r;
  _exit(3);
}

/* Ends the program after a hang: the blocked host function holds its
 * queues forever, so nothing can be cleaned up. */
static void hung(const char *what) {
  olc_fail(__FILE__, __LINE__, "%s: the host function did not return within %d ms (it hangs "
           "in a wait that could never end, which must be refused)", what, DEADLINE_MS);
  olc_summary("crosswait");
  fflush(stdout);
  _exit(1);
}

/* What the host function does: wait for the go-ahead, then sync each of
 * its targets and keep the results. */
struct probe {
  atomic_int ready, ran;
  ol_queue_handle_t sync_queue[2]; /* must be refused, NULL: none */
  ol_event_handle_t sync_event;    /* must be refused */
  ol_event_handle_t sync_ok;       /* recorded before the wait: must succeed */
  ol_queue_handle_t ok_queue;      /* waits for nothing: must succeed */
  ol_result_t queue_res[2], event_res, ok_res, ok_queue_res;
};

static void probe_fn(void *user) {
  struct probe *p = user;
  double t0 = olc_now_ms();
  while (!atomic_load(&p->ready) && olc_now_ms() - t0 < 10 * DEADLINE_MS)
    sched_yield();
  for (int i = 0; i < 2; i++)
    if (p->sync_queue[i])
      p->queue_res[i] = olSyncQueue(p->sync_queue[i]);
  if (p->sync_event)
    p->event_res = olSyncEvent(p->sync_event);
  if (p->sync_ok)
    p->ok_res = olSyncEvent(p->sync_ok);
  if (p->ok_queue)
    p->ok_queue_res = olSyncQueue(p->ok_queue);
  atomic_store(&p->ran, 1);
}

/* Waits for the host function with a deadline; a hang ends the program. */
static void await_probe(struct probe *p, const char *what) {
  double t0 = olc_now_ms();
  while (!atomic_load(&p->ran)) {
    if (olc_now_ms() - t0 > DEADLINE_MS)
      hung(what);
    olc_sleep_ms(1);
  }
}

static ol_queue_handle_t new_queue(int b) {
  ol_queue_handle_t q = NULL;
  OLC_OK(olCreateQueue(devs[b], &q));
  return q;
}

static ol_event_handle_t new_event(ol_queue_handle_t q) {
  ol_event_handle_t e = NULL;
  OLC_OK(olCreateEvent(q, &e));
  return e;
}

static void fill(ol_queue_handle_t q, void *buf) {
  uint32_t v = 7;
  OLC_OK(olMemFill(q, buf, sizeof v, &v, 256));
}

/* Whether the case is wanted (CROSSWAIT_CASE) and its devices present. */
static bool selected(const char *name) {
  const char *only = getenv("CROSSWAIT_CASE");
  return !only || !*only || strcmp(only, name) == 0;
}

static bool present(int b, const char *name) {
  return OLC_NEEDS(devs[b] != NULL, "a device of backend %s in this run, for %s",
                   olc_backend_name(backends[b]), name);
}

/* Platform a runs the host function; b waits for an event recorded on a
 * after it, b2 (b's platform) waits for an event of b after that, c (a
 * queue of b's platform that does not wait) must stay syncable. */
/* Shows the refusal, so that a log says why. */
static void show(ol_result_t r) {
  if (r && r->Details)
    printf("      %s\n", r->Details);
}

static void pair(int a, int b) {
  char name[64];
  snprintf(name, sizeof name, "%s -> %s", olc_backend_name(backends[a]),
           olc_backend_name(backends[b]));
  if (!selected(name) || !present(a, name) || !present(b, name))
    return;
  printf("    %s\n", name);
  fflush(stdout);
  void *buf = NULL;
  OLC_OK(olMemAlloc(devs[b], OL_ALLOC_TYPE_DEVICE, 1024, &buf));
  ol_queue_handle_t qa = new_queue(a), qb = new_queue(b), qb2 = new_queue(b), qc = new_queue(b);
  struct probe p;
  memset(&p, 0, sizeof p);
  if (!buf || !qa || !qb || !qb2 || !qc) {
    atomic_store(&p.ready, 1);
    return;
  }
  fill(qb, buf);
  p.sync_ok = new_event(qb); /* before qb's wait */
  OLC_OK(olLaunchHostFunction(qa, probe_fn, &p));
  ol_event_handle_t ea = new_event(qa); /* after the host function */
  OLC_OK(olWaitEvents(qb, &ea, 1));
  fill(qb, buf);
  ol_event_handle_t eb = new_event(qb); /* after the wait */
  OLC_OK(olWaitEvents(qb2, &eb, 1));        /* within b's platform */
  fill(qb2, (char *)buf + 256);
  fill(qc, (char *)buf + 512);
  p.sync_queue[0] = qb, p.sync_queue[1] = qb2, p.sync_event = eb, p.ok_queue = qc;
  atomic_store(&p.ready, 1);
  await_probe(&p, name);
  show(p.queue_res[1]);
  OLC_ERR_HAS(p.queue_res[0], OL_ERRC_INVALID_ARGUMENT, "would wait forever");
  OLC_ERR_HAS(p.queue_res[1], OL_ERRC_INVALID_ARGUMENT, "would wait forever");
  OLC_ERR_HAS(p.event_res, OL_ERRC_INVALID_ARGUMENT, "would wait forever");
  OLC_OK(p.ok_res);
  OLC_OK(p.ok_queue_res);
  OLC_OK(olSyncQueue(qa));
  OLC_OK(olSyncQueue(qb));
  OLC_OK(olSyncQueue(qb2));
  OLC_OK(olSyncQueue(qc));
  OLC_OK(olDestroyEvent(ea)), OLC_OK(olDestroyEvent(eb)), OLC_OK(olDestroyEvent(p.sync_ok));
  OLC_OK(olDestroyQueue(qa)), OLC_OK(olDestroyQueue(qb)), OLC_OK(olDestroyQueue(qb2)), OLC_OK(olDestroyQueue(qc));
  OLC_OK(olMemFree(buf));
}

/* a's host function syncs c; c waits for b's event recorded after b's
 * wait for a's event recorded after the host function: a -> b -> c. */
static void chain(int a, int b, int c) {
  char name[64];
  snprintf(name, sizeof name, "%s -> %s -> %s", olc_backend_name(backends[a]),
           olc_backend_name(backends[b]), olc_backend_name(backends[c]));
  if (!selected(name) || !present(a, name) || !present(b, name) || !present(c, name))
    return;
  printf("    %s\n", name);
  fflush(stdout);
  void *bb = NULL, *bc = NULL;
  OLC_OK(olMemAlloc(devs[b], OL_ALLOC_TYPE_DEVICE, 256, &bb));
  OLC_OK(olMemAlloc(devs[c], OL_ALLOC_TYPE_DEVICE, 256, &bc));
  ol_queue_handle_t qa = new_queue(a), qb = new_queue(b), qc = new_queue(c);
  struct probe p;
  memset(&p, 0, sizeof p);
  if (!bb || !bc || !qa || !qb || !qc) {
    atomic_store(&p.ready, 1);
    return;
  }
  OLC_OK(olLaunchHostFunction(qa, probe_fn, &p));
  ol_event_handle_t ea = new_event(qa);
  OLC_OK(olWaitEvents(qb, &ea, 1));
  fill(qb, bb);
  ol_event_handle_t eb = new_event(qb);
  OLC_OK(olWaitEvents(qc, &eb, 1));
  fill(qc, bc);
  ol_event_handle_t ec = new_event(qc);
  p.sync_queue[0] = qc, p.sync_event = ec;
  atomic_store(&p.ready, 1);
  await_probe(&p, name);
  show(p.event_res);
  OLC_ERR_HAS(p.queue_res[0], OL_ERRC_INVALID_ARGUMENT, "would wait forever");
  OLC_ERR_HAS(p.event_res, OL_ERRC_INVALID_ARGUMENT, "would wait forever");
  OLC_OK(olSyncQueue(qa));
  OLC_OK(olSyncQueue(qb));
  OLC_OK(olSyncQueue(qc));
  OLC_OK(olDestroyEvent(ea)), OLC_OK(olDestroyEvent(eb)), OLC_OK(olDestroyEvent(ec));
  OLC_OK(olDestroyQueue(qa)), OLC_OK(olDestroyQueue(qb)), OLC_OK(olDestroyQueue(qc));
  OLC_OK(olMemFree(bb)), OLC_OK(olMemFree(bc));
}

/* Host functions on qa and qb sync each other's queue: whichever syncs
 * second would wait for the first, which waits for it. Exactly one is
 * refused; the other's wait then ends. */
struct mutual {
  atomic_int *go, ran;
  ol_queue_handle_t other;
  ol_result_t r;
};

static void mutual_fn(void *user) {
  struct mutual *m = user;
  double t0 = olc_now_ms();
  while (!atomic_load(m->go) && olc_now_ms() - t0 < 10 * DEADLINE_MS)
    sched_yield();
  m->r = olSyncQueue(m->other);
  atomic_store(&m->ran, 1);
}

static void mutual(int a, int b) {
  char name[64];
  snprintf(name, sizeof name, "%s <-> %s", olc_backend_name(backends[a]),
           olc_backend_name(backends[b]));
  if (!selected(name) || !present(a, name) || !present(b, name))
    return;
  printf("    %s\n", name);
  fflush(stdout);
  ol_queue_handle_t qa = new_queue(a), qb = new_queue(b);
  if (!qa || !qb)
    return;
  atomic_int go = 0;
  struct mutual ma = {&go, 0, qb, NULL}, mb = {&go, 0, qa, NULL};
  OLC_OK(olLaunchHostFunction(qa, mutual_fn, &ma));
  OLC_OK(olLaunchHostFunction(qb, mutual_fn, &mb));
  atomic_store(&go, 1);
  double t0 = olc_now_ms();
  while (!atomic_load(&ma.ran) || !atomic_load(&mb.ran)) {
    if (olc_now_ms() - t0 > DEADLINE_MS)
      hung(name);
    olc_sleep_ms(1);
  }
  ol_result_t refused = ma.r ? ma.r : mb.r, other = ma.r ? mb.r : ma.r;
  show(refused);
  OLC_ERR_HAS(refused, OL_ERRC_INVALID_ARGUMENT, "would wait forever");
  OLC_OK(other);
  OLC_OK(olSyncQueue(qa));
  OLC_OK(olSyncQueue(qb));
  OLC_OK(olDestroyQueue(qa)), OLC_OK(olDestroyQueue(qb));
}

static void test_host_functions_syncing_each_other(void) {
  for (int a = 0; a < 3; a++)
    for (int b = a; b < 3; b++)
      mutual(a, b);
}

static void test_pairs(void) {
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++)
      if (a != b)
        pair(a, b);
}

static void test_chains(void) {
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++)
      if (b != a)
        chain(a, b, 3 - a - b);
}

int main(int argc, char **argv) {
  signal(SIGALRM, watchdog);
  alarm(WATCHDOG_S);
  olc_start(argc, argv);
  olc_backend = OL_PLATFORM_BACKEND_HOST;
  /* the host device always; of each GPU backend the first selected device */
  devs[0] = olc_host;
  olc_devlist l;
  olc_list_devices(&l);
  for (int i = 0; i < olc_nsel; i++)
    for (int b = 1; b < 3; b++)
      if (!devs[b] && olc_sel[i].backend == backends[b])
        for (int j = 0; j < l.n; j++)
          if (l.sel[j].backend == olc_sel[i].backend && l.sel[j].index == olc_sel[i].index)
            devs[b] = l.dev[j];
  for (int b = 0; b < 3; b++)
    if (devs[b]) {
      char n[256] = "";
      olGetDeviceInfo(devs[b], OL_DEVICE_INFO_NAME, sizeof n, n);
      unsigned idx = 0;
      for (int j = 0; j < l.n; j++)
        if (l.dev[j] == devs[b])
          idx = l.sel[j].index;
      printf("-- device %s:%u (%s)\n", olc_backend_name(backends[b]), idx, n);
    }
  OLC_RUN(test_pairs);
  OLC_RUN(test_chains);
  OLC_RUN(test_host_functions_syncing_each_other);
  return olc_finish("crosswait");
}
