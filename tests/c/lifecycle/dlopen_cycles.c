/* Test a: load/unload cycles through dlopen.
 *
 * 3,000 times: dlopen the library (RTLD_NOW | RTLD_LOCAL), look up four entry
 * points, olInit, visit every device and read its TYPE and NAME, olShutDown,
 * dlclose.  Every call must succeed.  Afterwards the memory (VmRSS) and the
 * threads seen half-way are compared with those at the end: RSS may grow by
 * at most 2 MiB; threads that are not the Go runtime's must be exactly as
 * many, and the Go runtime's may rise by at most GOMAXPROCS + 2 (its idle
 * threads are never given back, so their number is a high-water mark that a
 * loaded machine can raise late; see lc_thread_census in lc_api.h).
 *
 * With a GPU every cycle initialises its driver (CUDA: the primary context
 * is made and destroyed), which took 3,000 cycles past a 60 s limit on an
 * H200. So the first PROBE cycles run with every platform, and when the
 * others would take longer than LC_CYCLE_BUDGET_S seconds (default 20) at
 * their pace, they initialise the host platform only (OFFLOAD_PLUGINS=host,
 * read at each real olInit; LLVM's library ignores it): what the many
 * cycles check, that loading, initialising, shutting down and unloading
 * leak nothing, is the library's. The program says which it did.
 *
 * usage: dlopen_cycles /path/to/libLLVMOffload.so.22.1 [cycles]
 */
#include "lc_api.h"

#include <dlfcn.h>
#include <time.h>

#define PROBE 20

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef __typeof__(&olInit) init_fn; /* (void) in 22.1, (const ol_init_args_t *) in 23.1 */
typedef ol_result_t (*shutdown_fn)(void);
typedef ol_result_t (*iterate_fn)(ol_device_iterate_cb_t, void *);
typedef ol_result_t (*devinfo_fn)(ol_device_handle_t, ol_device_info_t, size_t,
                                  void *);

#define MAX_DEVS 64
#define RSS_BOUND_KIB 2048L

struct dev_list {
  size_t count;
  ol_device_handle_t devs[MAX_DEVS];
};

static bool collect(ol_device_handle_t dev, void *user) {
  struct dev_list *list = user;
  if (list->count < MAX_DEVS)
    list->devs[list->count] = dev;
  list->count++;
  return true;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s LIBRARY [cycles]\n", argv[0]);
    return 2;
  }
  const char *path = argv[1];
  long cycles = argc > 2 ? strtol(argv[2], NULL, 10) : 3000;
  /* RSS is compared from half-way on: the Go heap of a c-shared library
   * grows to its minimum collection goal over the first thousand or so
   * cycles (see RATIONALE.md), which is warm-up, not a leak. */
  const long mark = cycles / 2 > 100 ? cycles / 2 : 100;
  if (cycles < mark) {
    fprintf(stderr, "need at least %ld cycles\n", mark);
    return 2;
  }

  long rss_mark = -1, thr_mark = -1;
  struct lc_text text = {0};
  struct lc_census cen_mark = {0, 0, 0};
  long bad_calls = 0;
  size_t first_count = 0;
  long count_from = 1; /* the cycle whose device count the later ones match */
  const char *budget_env = getenv("LC_CYCLE_BUDGET_S");
  const double budget = budget_env ? strtod(budget_env, NULL) : 20;
  double t1 = 0; /* the end of cycle 1, which loads the library and the drivers */

  for (long cycle = 1; cycle <= cycles; cycle++) {
    if (cycle == 2)
      t1 = now_s();
    if (cycle == PROBE + 2 && cycles > PROBE + 1) {
      double each = (now_s() - t1) / PROBE;
      if (each * (double)(cycles - PROBE - 1) > budget && !getenv("OFFLOAD_PLUGINS")) {
        printf("cycles 1-%d with every platform (%.1f ms each after the first); cycles "
               "%d-%ld with the host platform only (OFFLOAD_PLUGINS=host): at that pace they "
               "would take %.3g s, over the %.3g s budget (LC_CYCLE_BUDGET_S)\n",
               PROBE + 1, each * 1e3, PROBE + 2, cycles, each * (double)(cycles - PROBE - 1),
               budget);
        setenv("OFFLOAD_PLUGINS", "host", 1);
        count_from = cycle;
      }
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      OLC_CHECK(false, "cycle %ld: dlopen(%s): %s", cycle, path, dlerror());
      break;
    }
    init_fn p_init = (init_fn)dlsym(lib, "olInit");
    iterate_fn p_iter = (iterate_fn)dlsym(lib, "olIterateDevices");
    devinfo_fn p_info = (devinfo_fn)dlsym(lib, "olGetDeviceInfo");
    shutdown_fn p_shut = (shutdown_fn)dlsym(lib, "olShutDown");
    if (!p_init || !p_iter || !p_info || !p_shut) {
      OLC_CHECK(false, "cycle %ld: dlsym failed (%p %p %p %p)", cycle,
                (void *)p_init, (void *)p_iter, (void *)p_info, (void *)p_shut);
      dlclose(lib);
      break;
    }

    if (cycle == 1) {
      olc_check_library_is((void *)p_init, path);
      text = lc_text_of((void *)p_init); /* stays mapped: NODELETE */
    }

    ol_result_t r = p_init(OLC_INIT_ARG);
    if (r != NULL) {
      bad_calls++;
      OLC_QUIET_CHECK(false, "cycle %ld: olInit -> %u %s", cycle, olc_code(r),
                      olc_details(r));
    }

    struct dev_list list = {0};
    r = p_iter(collect, &list);
    if (r != NULL) {
      bad_calls++;
      OLC_QUIET_CHECK(false, "cycle %ld: olIterateDevices -> %u %s", cycle,
                      olc_code(r), olc_details(r));
    }
    if (cycle == count_from)
      first_count = list.count;
    if (list.count == 0 || list.count != first_count || list.count > MAX_DEVS) {
      bad_calls++;
      OLC_QUIET_CHECK(false, "cycle %ld: %zu devices (first cycle saw %zu)",
                      cycle, list.count, first_count);
    }

    bool saw_host = false;
    for (size_t i = 0; i < list.count && i < MAX_DEVS; i++) {
      ol_device_type_t type = OL_DEVICE_TYPE_FORCE_UINT32;
      r = p_info(list.devs[i], OL_DEVICE_INFO_TYPE, sizeof type, &type);
      if (r != NULL) {
        bad_calls++;
        OLC_QUIET_CHECK(false, "cycle %ld dev %zu: TYPE -> %u %s", cycle, i,
                        olc_code(r), olc_details(r));
      } else if (type == OL_DEVICE_TYPE_HOST) {
        saw_host = true;
      }
      char name[512];
      memset(name, 0x7f, sizeof name);
      r = p_info(list.devs[i], OL_DEVICE_INFO_NAME, sizeof name, name);
      if (r != NULL) {
        bad_calls++;
        OLC_QUIET_CHECK(false, "cycle %ld dev %zu: NAME -> %u %s", cycle, i,
                        olc_code(r), olc_details(r));
      } else if (memchr(name, '\0', sizeof name) == NULL || name[0] == '\0') {
        bad_calls++;
        OLC_QUIET_CHECK(false, "cycle %ld dev %zu: NAME empty or unterminated",
                        cycle, i);
      }
    }
    if (!saw_host) {
      bad_calls++;
      OLC_QUIET_CHECK(false, "cycle %ld: no OL_DEVICE_TYPE_HOST device", cycle);
    }

    r = p_shut();
    if (r != NULL) {
      bad_calls++;
      OLC_QUIET_CHECK(false, "cycle %ld: olShutDown -> %u %s", cycle,
                      olc_code(r), olc_details(r));
    }
    if (dlclose(lib) != 0) {
      bad_calls++;
      OLC_QUIET_CHECK(false, "cycle %ld: dlclose: %s", cycle, dlerror());
    }

    if (cycle == mark) {
      rss_mark = lc_rss_kib();
      thr_mark = lc_threads();
      cen_mark = lc_thread_census(&text);
    }
  }

  long rss_end = lc_rss_kib(), thr_end = lc_threads();
  struct lc_census cen_end = lc_thread_census(&text);
  const long go_bound = lc_go_thread_bound();
  printf("devices per cycle: %zu\n", first_count);
  printf("after cycle %ld: VmRSS %ld kB, Threads %ld\n", mark, rss_mark,
         thr_mark);
  printf("after cycle %ld: VmRSS %ld kB, Threads %ld\n", cycles, rss_end,
         thr_end);
  printf("threads after cycle %ld: %ld Go runtime, %ld others; after cycle "
         "%ld: %ld Go runtime (bound +%ld), %ld others\n", mark, cen_mark.go,
         cen_mark.other, cycles, cen_end.go, go_bound, cen_end.other);

  OLC_CHECK(bad_calls == 0, "%ld failed calls over %ld cycles", bad_calls,
            cycles);
  OLC_CHECK(rss_mark > 0 && rss_end > 0, "could not read VmRSS");
  OLC_CHECK(rss_end - rss_mark <= RSS_BOUND_KIB,
            "VmRSS grew by %ld kB between cycle %ld and %ld (bound %ld kB)",
            rss_end - rss_mark, mark, cycles, RSS_BOUND_KIB);
  OLC_CHECK(thr_mark > 0 && cen_mark.unknown == 0 && cen_end.unknown == 0,
            "could not tell the threads apart (%ld, %ld running throughout)",
            cen_mark.unknown, cen_end.unknown);
  OLC_CHECK(cen_end.other == cen_mark.other,
            "threads not the Go runtime's: %ld after cycle %ld, %ld after "
            "cycle %ld", cen_mark.other, mark, cen_end.other, cycles);
  OLC_CHECK(cen_end.go - cen_mark.go <= go_bound,
            "the Go runtime's threads rose from %ld after cycle %ld to %ld "
            "after cycle %ld (bound +%ld)", cen_mark.go, mark, cen_end.go,
            cycles, go_bound);
  if (cen_end.other != cen_mark.other || cen_end.go - cen_mark.go > go_bound)
    lc_print_threads(&text, stderr);
  return olc_summary(NULL);
}
