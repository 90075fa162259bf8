/* Launches racing olDestroyProgram on the device under test. Destroying a
 * program while another thread launches its kernels is the caller's
 * mistake, but each launch must either run the kernel (the program stays
 * loaded until its queued launches are done) or fail with
 * OL_ERRC_INVALID_ARGUMENT naming the destroyed program or symbol; the
 * device must stay usable. Also: a launch queued behind a held queue still
 * runs correctly when its program is destroyed before the queue moves.
 * SPDX-License-Identifier: Apache-2.0 */
#include "oldevices.h"

#define ITEMS 32 /* foo's grid: 1 group of ITEMS work-items */

/* a result a racing call may have: success, or the program is gone */
static bool acceptable(ol_result_t r, bool not_found_ok) {
  if (r == NULL)
    return true;
  if (not_found_ok && r->Code == OL_ERRC_NOT_FOUND)
    return true;
  /* each destroyed program has messages of its own, and a process keeps
   * at most 4096 distinct ones: past that the details are dropped */
  return r->Code == OL_ERRC_INVALID_ARGUMENT && r->Details &&
         (strstr(r->Details, "destroyed") || strstr(r->Details, "details of this one were dropped"));
}

/* the refusal of a call with a destroyed program's kernel */
static bool refused(ol_result_t r, const char *what, int line) {
  if (r && acceptable(r, false)) {
    olc_pass();
    return true;
  }
  olc_fail(__FILE__, line, "%s -> %s \"%s\", wanted OL_ERRC_INVALID_ARGUMENT saying the program was destroyed",
           what, r ? olc_code_name(r->Code) : "OL_SUCCESS", r && r->Details ? r->Details : "(no details)");
  return false;
}
#define REFUSED(call) refused((call), #call, __LINE__)

enum { LAUNCH_QUEUE, LAUNCH_SYNC, QUERY };

/* programs destroyed one after another in a round: more destroys per
 * second than one program a round, whose setup costs more than its race */
#define NPROG 8

struct racer {
  int mode;
  ol_queue_handle_t q; /* LAUNCH_QUEUE */
  ol_program_handle_t p[NPROG];
  ol_symbol_handle_t k[NPROG];
  uint32_t *out; /* ITEMS words of device memory */
  atomic_int *stop;
  atomic_long *calls;
  long ok, refused;
  char bad[600]; /* the first unacceptable result */
};

static void note_bad(struct racer *r, const char *what, ol_result_t res) {
  if (r->bad[0])
    return;
  snprintf(r->bad, sizeof r->bad, "%s -> %s (%u) \"%s\"", what, res ? olc_code_name(res->Code) : "OL_SUCCESS",
           res ? (unsigned)res->Code : 0u, res && res->Details ? res->Details : "(no details)");
}

/* Calls in a loop, going round the programs, until each has said that it
 * is gone (or stop). */
static void *race(void *arg) {
  struct racer *r = arg;
  ol_kernel_launch_size_args_t l = olc_size1(1, ITEMS);
  bool gone[NPROG] = {false};
  int left = NPROG;
  long made = 0;
  for (long i = 0; left > 0 && made < 10000000 && !atomic_load(r->stop); i++) {
    int j = (int)(i % NPROG);
    if (gone[j])
      continue;
    made++;
    ol_program_handle_t p = r->p[j];
    ol_symbol_handle_t k = r->k[j];
    ol_result_t res;
    const char *what;
    bool nf = false;
    switch (r->mode) {
    case LAUNCH_QUEUE:
      what = "olLaunchKernel(queue)";
      res = olLaunchKernel(r->q, olc_dev, k, &r->out, sizeof r->out, &l);
      if (!res && i % 16 == 15 && (res = olSyncQueue(r->q)) != NULL)
        what = "olSyncQueue"; /* keeps the backlog short: more rounds */
      break;
    case LAUNCH_SYNC:
      what = "olLaunchKernel(NULL queue)";
      res = olLaunchKernel(NULL, olc_dev, k, &r->out, sizeof r->out, &l);
      break;
    default:
      switch (i / NPROG % 4) {
      case 0: {
        size_t gs = 0;
        what = "olCalculateOptimalOccupancy";
        res = olCalculateOptimalOccupancy(olc_dev, k, 0, &gs);
        if (!res && gs == 0)
          note_bad(r, "olCalculateOptimalOccupancy gave 0", NULL);
        break;
      }
      case 1: {
        ol_symbol_handle_t s = NULL;
        what = "olGetSymbol(\"foo\")";
        res = olGetSymbol(p, "foo", OL_SYMBOL_KIND_KERNEL, &s);
        if (!res && s != k)
          note_bad(r, "olGetSymbol(\"foo\") gave another handle", NULL);
        break;
      }
      case 2: {
        ol_symbol_handle_t s = NULL;
        what = "olGetSymbol(\"bar\")"; /* not in the program: a lookup in the plugin each time */
        res = olGetSymbol(p, "bar", OL_SYMBOL_KIND_KERNEL, &s);
        nf = true;
        break;
      }
      default: {
        ol_symbol_kind_t kind = OL_SYMBOL_KIND_GLOBAL_VARIABLE;
        what = "olGetSymbolInfo(KIND)";
        res = olGetSymbolInfo(k, OL_SYMBOL_INFO_KIND, sizeof kind, &kind);
        if (!res && kind != OL_SYMBOL_KIND_KERNEL)
          note_bad(r, "olGetSymbolInfo(KIND) is not KERNEL", NULL);
        break;
      }
      }
    }
    atomic_fetch_add(r->calls, 1);
    if (!acceptable(res, nf)) {
      note_bad(r, what, res);
      break;
    }
    if (res && res->Code == OL_ERRC_INVALID_ARGUMENT) {
      r->refused++;
      gone[j] = true;
      left--;
      continue;
    }
    r->ok++;
  }
  return NULL;
}

/* The device works: a fresh program's kernel runs correctly on q. */
static bool fresh_program_runs(ol_queue_handle_t q, uint32_t *out) {
  ol_program_handle_t p = olc_program("foo");
  ol_symbol_handle_t k = olc_kernel(p, "foo");
  bool ok = false;
  if (k && olc_memset(out, 0, ITEMS * sizeof(uint32_t))) {
    ol_kernel_launch_size_args_t l = olc_size1(1, ITEMS);
    uint32_t got[ITEMS] = {0};
    ok = OLC_OK(olLaunchKernel(q, olc_dev, k, &out, sizeof out, &l)) && OLC_OK(olSyncQueue(q)) && olc_read(got, out, sizeof got);
    if (ok) {
      size_t bad = 0;
      for (uint32_t i = 0; i < ITEMS; i++)
        bad += got[i] != i;
      ok = OLC_EQ(bad, 0);
    }
  }
  if (p)
    ok = OLC_OK(olDestroyProgram(p)) && ok;
  return ok;
}

#ifndef RACE_MS
#define RACE_MS 2500 /* per device */
#endif
#ifndef RACERS
#define RACERS 5
#endif

/* Rounds of: load foo NPROG times, start launchers (on a queue and without
 * one) and a thread of symbol and occupancy queries, destroy the programs
 * one by one while they run, then check that every result was acceptable, that the queues sync,
 * and that a fresh program's kernel runs. Bounded in time; the race is
 * intermittent, so it repeats. */
static void test_launch_races_destroy(void) {
  size_t n = 0;
  void *img = olc_image("foo", &n);
  if (!img)
    return;
  /* The queue launchers share one queue: a launch then often waits for
   * another inside the plugin, past its check of the program, which is
   * where a destroy must not pull the program from under it. */
  static const int modes[] = {LAUNCH_QUEUE, LAUNCH_SYNC, QUERY, LAUNCH_QUEUE, LAUNCH_QUEUE, LAUNCH_QUEUE};
  ol_queue_handle_t q = olc_queue();
  if (!q) {
    free(img);
    return;
  }
  struct racer rs[RACERS];
  memset(rs, 0, sizeof rs);
  for (int i = 0; i < RACERS; i++) {
    rs[i].mode = modes[i];
    rs[i].out = olc_alloc(OL_ALLOC_TYPE_DEVICE, ITEMS * sizeof(uint32_t));
    if (modes[i] == LAUNCH_QUEUE)
      rs[i].q = q;
    if (!rs[i].out)
      goto out;
  }
  long ok = 0, refused = 0;
  int rounds = 0, failed = 0;
  double t0 = olc_now_ms();
  while (rounds < 3 || (rounds < 2000 && olc_now_ms() - t0 < RACE_MS)) {
    rounds++;
    ol_program_handle_t p[NPROG] = {NULL};
    ol_symbol_handle_t k[NPROG] = {NULL};
    int loaded = 0;
    while (loaded < NPROG && OLC_OK(olCreateProgram(olc_dev, img, n, &p[loaded])) &&
           OLC_OK(olGetSymbol(p[loaded], "foo", OL_SYMBOL_KIND_KERNEL, &k[loaded])))
      loaded++;
    if (loaded < NPROG) {
      for (int j = 0; j <= loaded && j < NPROG; j++)
        if (p[j])
          OLC_OK(olDestroyProgram(p[j]));
      failed++;
      break;
    }
    atomic_int stop = 0;
    atomic_long calls = 0;
    pthread_t t[RACERS];
    for (int i = 0; i < RACERS; i++) {
      memcpy(rs[i].p, p, sizeof p);
      memcpy(rs[i].k, k, sizeof k);
      rs[i].stop = &stop, rs[i].calls = &calls;
      rs[i].ok = rs[i].refused = 0;
      pthread_create(&t[i], NULL, race, &rs[i]);
    }
    /* each destroyed after a varying number of calls, while they keep
     * coming */
    for (int j = 0; j < NPROG; j++) {
      long target = atomic_load(&calls) + 1 + (rounds + j) % 24;
      double t1 = olc_now_ms();
      while (atomic_load(&calls) < target && olc_now_ms() - t1 < 2000)
        sched_yield();
      if (!OLC_OK(olDestroyProgram(p[j])))
        atomic_store(&stop, 1);
    }
    for (int i = 0; i < RACERS; i++)
      pthread_join(t[i], NULL);
    for (int i = 0; i < RACERS; i++) {
      ok += rs[i].ok, refused += rs[i].refused;
      if (rs[i].bad[0]) {
        olc_fail(__FILE__, __LINE__, "round %d, racer %d: %s", rounds, i, rs[i].bad);
        rs[i].bad[0] = 0;
        failed++;
      }
    }
    if (!OLC_OK(olSyncQueue(q)))
      failed++;
    if (!fresh_program_runs(q, rs[0].out))
      failed++;
    if (failed)
      break; /* one round's failures say enough */
  }
  /* and every racer heard of every destroy */
  if (OLC_TRUE(failed == 0))
    OLC_EQ(refused, (long)rounds * RACERS * NPROG);
  printf("    %d rounds in %.0f ms: %ld calls succeeded, %ld refused (program destroyed)\n", rounds,
         olc_now_ms() - t0, ok, refused);
out:
  OLC_OK(olDestroyQueue(q));
  for (int i = 0; i < RACERS; i++) {
    if (rs[i].out)
      OLC_OK(olMemFree(rs[i].out));
  }
  free(img);
}

/* Launches queued behind a held queue, then the program destroyed, then
 * another program loaded (which may take the old one's place): when the
 * queue moves, the queued launches run the destroyed program's kernel. */
static void test_queued_launch_then_destroy(void) {
  ol_queue_handle_t q = olc_queue();
  ol_program_handle_t p = olc_program("foo");
  ol_symbol_handle_t k = olc_kernel(p, "foo");
  uint32_t h[4][256];
  memset(h, 0, sizeof h);
  uint32_t *o = olc_buf(h, sizeof h);
  olc_gate g;
  if (!q || !k || !o || !olc_gate_close(&g, q))
    return;
  ol_kernel_launch_size_args_t l = olc_size1(8, 32);
  for (int i = 0; i < 4; i++) {
    uint32_t *part = o + i * 256;
    OLC_OK(olLaunchKernel(q, olc_dev, k, &part, sizeof part, &l));
  }
  OLC_OK(olDestroyProgram(p));
  /* no new launch of the destroyed program's kernel */
  REFUSED(olLaunchKernel(q, olc_dev, k, &o, sizeof o, &l));
  size_t gs = 0;
  REFUSED(olCalculateOptimalOccupancy(olc_dev, k, 0, &gs));
  ol_program_handle_t other = olc_program("bar");
  olc_gate_open(&g);
  OLC_OK(olSyncQueue(q));
  olc_unbuf(h, o, sizeof h);
  for (int j = 0; j < 4; j++) {
    uint32_t *hj = h[j];
    OLC_EQ_ARRAY(hj, 256, i);
  }
  if (other)
    OLC_OK(olDestroyProgram(other));
  OLC_OK(olDestroyQueue(q));
}

/* The same with the queue destroyed too before it moves: an event says
 * when the work is done. */
static void test_queued_launch_then_destroy_all(void) {
  ol_queue_handle_t q = olc_queue();
  ol_program_handle_t p = olc_program("foo");
  ol_symbol_handle_t k = olc_kernel(p, "foo");
  uint32_t h[256];
  memset(h, 0, sizeof h);
  uint32_t *o = olc_buf(h, sizeof h);
  olc_gate g;
  ol_event_handle_t e = NULL;
  if (!q || !k || !o || !olc_gate_close(&g, q))
    return;
  ol_kernel_launch_size_args_t l = olc_size1(8, 32);
  OLC_OK(olLaunchKernel(q, olc_dev, k, &o, sizeof o, &l));
  OLC_OK(olCreateEvent(q, &e));
  OLC_OK(olDestroyProgram(p));
  OLC_OK(olDestroyQueue(q));
  ol_program_handle_t other = olc_program("bar");
  olc_gate_open(&g);
  if (e) {
    OLC_OK(olSyncEvent(e));
    OLC_OK(olDestroyEvent(e));
  }
  olc_unbuf(h, o, sizeof h);
  OLC_EQ_ARRAY(h, 256, i);
  if (other)
    OLC_OK(olDestroyProgram(other));
  /* the device still works */
  ol_queue_handle_t q2 = olc_queue();
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_DEVICE, ITEMS * sizeof(uint32_t));
  if (q2 && out)
    OLC_TRUE(fresh_program_runs(q2, out));
  if (out)
    OLC_OK(olMemFree(out));
  if (q2)
    OLC_OK(olDestroyQueue(q2));
}

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    OLC_RUN(test_queued_launch_then_destroy);
    OLC_RUN(test_queued_launch_then_destroy_all);
    OLC_RUN(test_launch_races_destroy);
  }
  return olc_finish("prograce");
}
