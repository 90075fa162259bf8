/* Test c: olInit/olShutDown from many threads at once.
 *
 * 8 threads each run 1,000 iterations of
 *   olInit, olIterateDevices, olGetDeviceInfo(TYPE) of every device,
 *   olGetPlatformInfo(NAME) of that device's platform, olShutDown
 * with no reference held by the main thread, so the library goes through
 * full 0->1 and 1->0 transitions while other threads are inside it.
 * Every call must succeed.  Afterwards one more olShutDown must report
 * OL_ERRC_UNINITIALIZED: the reference count is back to exactly zero.
 *
 * Every full 0->1 transition initialises every platform: with a real GPU
 * that makes and destroys a driver context each time (about a second's
 * worth of them took an H200 past 60 s), so a thread stops early once the
 * run has taken LC_CYCLE_BUDGET_S seconds (default 20), after at least
 * MIN_ITERATIONS iterations, and the program says how many it made.
 *
 * usage: threads [threads] [iterations]
 */
#include "olcheck.h"

#include <pthread.h>
#include <time.h>

enum { MIN_ITERATIONS = 50 };

static double budget_s = 20, start_s;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct work {
  int id;
  long iterations;
  long done; /* iterations made (fewer when the budget ran out) */
  long bad;
};

struct visit_state {
  struct work *w;
  long iteration;
  size_t count;
};

static bool visit(ol_device_handle_t dev, void *user) {
  struct visit_state *vs = user;
  vs->count++;
  ol_device_type_t type = OL_DEVICE_TYPE_FORCE_UINT32;
  ol_result_t r = olGetDeviceInfo(dev, OL_DEVICE_INFO_TYPE, sizeof type, &type);
  if (r != NULL || type >= OL_DEVICE_TYPE_LAST) {
    vs->w->bad++;
    OLC_QUIET_CHECK(false, "thread %d it %ld: TYPE -> %u %s (type %u)",
                    vs->w->id, vs->iteration, olc_code(r), olc_details(r),
                    (unsigned)type);
  }
  ol_platform_handle_t plat = NULL;
  r = olGetDeviceInfo(dev, OL_DEVICE_INFO_PLATFORM, sizeof plat, &plat);
  if (r != NULL || plat == NULL) {
    vs->w->bad++;
    OLC_QUIET_CHECK(false, "thread %d it %ld: PLATFORM -> %u %s", vs->w->id,
                    vs->iteration, olc_code(r), olc_details(r));
    return true;
  }
  char name[256] = {0};
  r = olGetPlatformInfo(plat, OL_PLATFORM_INFO_NAME, sizeof name, name);
  if (r != NULL || name[0] == '\0') {
    vs->w->bad++;
    OLC_QUIET_CHECK(false, "thread %d it %ld: platform NAME -> %u %s",
                    vs->w->id, vs->iteration, olc_code(r), olc_details(r));
  }
  return true;
}

static void *run(void *arg) {
  struct work *w = arg;
  for (long i = 0; i < w->iterations; i++, w->done = i) {
    if (i >= MIN_ITERATIONS && now_s() - start_s > budget_s)
      break;
    ol_result_t r = olInit();
    if (r != NULL) {
      w->bad++;
      OLC_QUIET_CHECK(false, "thread %d it %ld: olInit -> %u %s", w->id, i,
                      olc_code(r), olc_details(r));
      continue; /* no reference taken */
    }
    struct visit_state vs = {.w = w, .iteration = i};
    r = olIterateDevices(visit, &vs);
    if (r != NULL || vs.count == 0) {
      w->bad++;
      OLC_QUIET_CHECK(false, "thread %d it %ld: olIterateDevices -> %u %s, %zu "
                      "devices", w->id, i, olc_code(r), olc_details(r), vs.count);
    }
    r = olShutDown();
    if (r != NULL) {
      w->bad++;
      OLC_QUIET_CHECK(false, "thread %d it %ld: olShutDown -> %u %s", w->id, i,
                      olc_code(r), olc_details(r));
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  int nthreads = argc > 1 ? atoi(argv[1]) : 8;
  long iterations = argc > 2 ? strtol(argv[2], NULL, 10) : 1000;
  if (nthreads < 1 || nthreads > 256 || iterations < 1) {
    fprintf(stderr, "usage: %s [threads 1..256] [iterations]\n", argv[0]);
    return 2;
  }

  olc_check_library((void *)olInit);

  /* Nothing is initialised yet. */
  ol_result_t r = olShutDown();
  OLC_CHECK(olc_code(r) == OL_ERRC_UNINITIALIZED,
            "olShutDown before any olInit: expected %d, got %u %s",
            (int)OL_ERRC_UNINITIALIZED, olc_code(r), olc_details(r));

  pthread_t tids[256];
  struct work works[256];
  const char *budget_env = getenv("LC_CYCLE_BUDGET_S");
  if (budget_env)
    budget_s = strtod(budget_env, NULL);
  start_s = now_s();
  for (int t = 0; t < nthreads; t++) {
    works[t] = (struct work){.id = t, .iterations = iterations};
    int rc = pthread_create(&tids[t], NULL, run, &works[t]);
    OLC_CHECK(rc == 0, "pthread_create %d: %s", t, strerror(rc));
    if (rc != 0)
      nthreads = t;
  }
  long bad = 0, least = iterations;
  for (int t = 0; t < nthreads; t++) {
    pthread_join(tids[t], NULL);
    bad += works[t].bad;
    if (works[t].done < least)
      least = works[t].done;
  }
  printf("%d threads x %ld iterations: %ld failed calls\n", nthreads,
         iterations, bad);
  if (least < iterations)
    printf("  (the %.3g s budget, LC_CYCLE_BUDGET_S, ran out: at least %ld iterations "
           "per thread)\n", budget_s, least);
  OLC_CHECK(bad == 0, "%ld calls failed in the worker threads", bad);

  r = olShutDown();
  OLC_CHECK(olc_code(r) == OL_ERRC_UNINITIALIZED,
            "extra olShutDown after all threads: expected %d, got %u %s",
            (int)OL_ERRC_UNINITIALIZED, olc_code(r), olc_details(r));

  /* And the library still initialises normally afterwards. */
  r = olInit();
  OLC_CHECK(r == NULL, "olInit after the threads -> %u %s", olc_code(r),
            olc_details(r));
  r = olShutDown();
  OLC_CHECK(r == NULL, "final olShutDown -> %u %s", olc_code(r), olc_details(r));
  r = olShutDown();
  OLC_CHECK(olc_code(r) == OL_ERRC_UNINITIALIZED,
            "olShutDown after the final one: expected %d, got %u %s",
            (int)OL_ERRC_UNINITIALIZED, olc_code(r), olc_details(r));
  return olc_summary(NULL);
}
