/* Test: memory stays flat over program and full library cycles.
 *
 * Phase 1, 1,000 full cycles: dlopen the library, olInit, find the host
 * device, olMemAlloc, olCreateProgram (a kernel image), olGetSymbol,
 * olLaunchKernel (on a queue every other cycle, else without one) and check
 * the result, olDestroyProgram, olMemFree, olShutDown, dlclose.
 * Phase 2, 10,000 cycles of olCreateProgram, olGetSymbol, olDestroyProgram
 * within one olInit.
 * Each phase first warms up, then asserts that VmRSS grows by at most 2 MiB
 * over its cycles and that the number of open file descriptors does not
 * change, and prints what it measured.  VmRSS is read 30 times over the
 * cycles, and the growth is the highest reading of the last third against
 * the highest of the first third: RSS swings by a few hundred kB with the
 * Go heap's collections, so two single readings (the first and the last)
 * differed by more than 1 MiB in a loaded run without any leak; thirds
 * rose by -448 to +624 kB in 10 loaded runs.  A leak of 64 KiB a full cycle
 * rises by some 40 MiB.
 *
 * Warm-up: the Go runtime lets its heap fill up to its 4 MiB minimum GC goal
 * with garbage before collecting, and keeps the freed pages for reuse, so
 * RSS rises for the first few hundred program loads (about 5 MiB above the
 * first cycle) and then stays flat.  Each phase therefore runs blocks of
 * cycles until two blocks in a row do not raise the highest RSS seen so far
 * by more than 128 kB (at most 10 blocks), and measures after that.  A leak
 * keeps RSS rising through the warm-up as well; it then shows in the
 * measured cycles.
 *
 * With a GPU every full cycle initialises its driver (CUDA: the primary
 * context is made and destroyed), which took phase 1 past a 60 s limit on
 * an H200. So PROBE full cycles run first with every platform, and when
 * phase 1 would take longer than LC_CYCLE_BUDGET_S seconds (default 20) at
 * their pace, its cycles initialise the host platform only
 * (OFFLOAD_PLUGINS=host, read at each real olInit): the kernels run on the
 * host device anyway, and what the cycles measure is the library's memory.
 * The program says which it did.
 *
 * Only for our library (IMPL=ours): the kernel image uses our kernel ABI
 * (<offload/kernel.h>), which LLVM's host plugin does not run.
 *
 * usage: rss_cycles /path/to/libLLVMOffload.so.22.1 /path/to/foo.so
 *        [full-cycles [program-cycles]]
 */
#include "lc_api.h"

#include <dirent.h>
#include <dlfcn.h>
#include <time.h>

#define RSS_BOUND_KIB 2048L
#define WARM_SLACK_KIB 128L
#ifndef WARM_MAX_BLOCKS
#define WARM_MAX_BLOCKS 10
#endif
#define GROUPS 4
#define GROUP_SIZE 64
#define N (GROUPS * GROUP_SIZE)

static const char *lib_path;
static void *image;
static size_t image_size;

static bool find_host(ol_device_handle_t dev, void *user) {
  ol_device_type_t type = OL_DEVICE_TYPE_FORCE_UINT32;
  if (api.info(dev, OL_DEVICE_INFO_TYPE, sizeof type, &type) == NULL &&
      type == OL_DEVICE_TYPE_HOST) {
    *(ol_device_handle_t *)user = dev;
    return false;
  }
  return true;
}

/* dlopen + lookup + olInit + host device; NULL device on failure. */
static void *open_lib(ol_device_handle_t *host) {
  *host = NULL;
  void *lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    bad_calls++;
    OLC_QUIET_CHECK(false, "dlopen(%s): %s", lib_path, dlerror());
    return NULL;
  }
  if (!lookup(lib)) {
    bad_calls++;
    dlclose(lib);
    return NULL;
  }
  CALL(api.init(OLC_INIT_ARG), dlclose(lib); return NULL);
  CALL(api.iterate(find_host, host));
  if (*host == NULL) {
    bad_calls++;
    OLC_QUIET_CHECK(false, "no host device");
  }
  return lib;
}

static void close_lib(void *lib) {
  CALL(api.shutdown());
  if (dlclose(lib) != 0) {
    bad_calls++;
    OLC_QUIET_CHECK(false, "dlclose: %s", dlerror());
  }
}

struct foo_args {
  uint32_t *out;
};

/* One full cycle: dlopen ... dlclose. */
static void full_cycle(long cycle) {
  ol_device_handle_t host;
  void *lib = open_lib(&host);
  if (!lib)
    return;
  if (!host) {
    close_lib(lib);
    return;
  }
  uint32_t *out = NULL;
  ol_program_handle_t prog = NULL;
  ol_symbol_handle_t kernel = NULL;
  CALL(api.alloc(host, OL_ALLOC_TYPE_MANAGED, N * sizeof *out, (void **)&out));
  CALL(api.create_program(host, image, image_size, &prog));
  if (prog)
    CALL(api.symbol(prog, "foo", OL_SYMBOL_KIND_KERNEL, &kernel));
  if (out && kernel) {
    memset(out, 0xff, N * sizeof *out);
    ol_kernel_launch_size_args_t size = {1, {GROUPS, 1, 1}, {GROUP_SIZE, 1, 1}, 0};
    struct foo_args args = {out};
    if (cycle % 2) {
      ol_queue_handle_t q = NULL;
      CALL(api.create_queue(host, &q));
      if (q) {
        CALL(LC_LAUNCH(q, host, kernel, &args, sizeof args, &size));
        CALL(api.sync_queue(q));
        CALL(api.destroy_queue(q));
      }
    } else {
      CALL(LC_LAUNCH(NULL, host, kernel, &args, sizeof args, &size));
    }
    for (uint32_t i = 0; i < N; i++)
      if (out[i] != i) {
        bad_calls++;
        OLC_QUIET_CHECK(false, "cycle %ld: out[%u] = %u", cycle, i, out[i]);
        break;
      }
  }
  if (prog)
    CALL(api.destroy_program(prog));
  if (out)
    CALL(api.free(out));
  close_lib(lib);
}

static ol_device_handle_t prog_host;

/* One program cycle within an olInit. */
static void program_cycle(long cycle) {
  (void)cycle;
  ol_program_handle_t prog = NULL;
  ol_symbol_handle_t kernel = NULL;
  CALL(api.create_program(prog_host, image, image_size, &prog), return);
  CALL(api.symbol(prog, "foo", OL_SYMBOL_KIND_KERNEL, &kernel));
  CALL(api.destroy_program(prog));
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Open file descriptors (a memfd left open holds its image in memory that
 * VmRSS does not show). */
static long open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d)
    return -1;
  long n = 0;
  while (readdir(d))
    n++;
  closedir(d);
  return n;
}

/* Runs blocks of `block` cycles until two blocks in a row leave the highest
 * RSS seen within WARM_SLACK_KIB; returns the number of cycles run. */
static long warm_up(void (*cycle)(long), long block) {
  long peak = lc_rss_kib(), n = 0;
  int flat = 0, blocks = 0;
  while (flat < 2 && blocks < WARM_MAX_BLOCKS) {
    long high = 0;
    for (long i = 0; i < block; i++) {
      cycle(++n);
      if ((i + 1) % (block / 10) == 0) {
        long r = lc_rss_kib();
        if (r > high)
          high = r;
      }
    }
    blocks++;
    flat = high <= peak + WARM_SLACK_KIB ? flat + 1 : 0;
    if (high > peak)
      peak = high;
  }
  return n;
}

/* Warm-up, then `cycles` measured cycles; checks the RSS growth. */
static void measure(const char *what, void (*cycle)(long), long block,
                    long cycles) {
  double t0 = now_s();
  long rss_first = lc_rss_kib();
  long warm = warm_up(cycle, block);
  long rss_start = lc_rss_kib(), rss_peak = rss_start;
  enum { SAMPLES = 30 };
  long rss_at[SAMPLES] = {0};
  int taken = 0;
  const long step = cycles / SAMPLES > 0 ? cycles / SAMPLES : 1;
  long fds_start = open_fds();
  double t1 = now_s();
  for (long i = 1; i <= cycles; i++) {
    cycle(i);
    if (i % step == 0) {
      long r = lc_rss_kib();
      if (taken < SAMPLES)
        rss_at[taken++] = r;
      if (r > rss_peak)
        rss_peak = r;
    }
  }
  long rss_end = lc_rss_kib();
  long early = 0, late = 0; /* highest of the first and of the last third */
  for (int k = 0; k < taken / 3; k++) {
    if (rss_at[k] > early)
      early = rss_at[k];
    if (rss_at[taken - 1 - k] > late)
      late = rss_at[taken - 1 - k];
  }
  long fds_end = open_fds();
  double t2 = now_s();
  printf("%s: warm-up %ld cycles (%.2f s), VmRSS %ld -> %ld kB\n", what, warm,
         t1 - t0, rss_first, rss_start);
  printf("%s: %ld cycles (%.1f us each), VmRSS %ld -> %ld kB, highest of "
         "the first third %ld kB, of the last %ld kB (growth %+ld kB, peak "
         "%ld kB, bound %ld kB), Threads %ld, open fds %ld -> %ld\n",
         what, cycles, (t2 - t1) / (double)cycles * 1e6, rss_start, rss_end,
         early, late, late - early, rss_peak, RSS_BOUND_KIB, lc_threads(),
         fds_start, fds_end);
  fflush(stdout);
  OLC_CHECK(rss_start > 0 && rss_end > 0 && early > 0,
            "%s: could not read VmRSS", what);
  OLC_CHECK(late - early <= RSS_BOUND_KIB,
            "%s: VmRSS grew by %ld kB from the first to the last third of %ld "
            "cycles after warm-up (bound %ld kB)",
            what, late - early, cycles, RSS_BOUND_KIB);
  OLC_CHECK(fds_start > 0 && fds_end == fds_start,
            "%s: open file descriptors went from %ld to %ld over %ld cycles",
            what, fds_start, fds_end, cycles);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s LIBRARY KERNEL_IMAGE [full-cycles [program-cycles]]\n",
            argv[0]);
    return 2;
  }
  lib_path = argv[1];
  long full_cycles = argc > 3 ? strtol(argv[3], NULL, 10) : 1000;
  long prog_cycles = argc > 4 ? strtol(argv[4], NULL, 10) : 10000;
  if (full_cycles < 20 || prog_cycles < 20) {
    fprintf(stderr, "need at least 20 cycles of each kind\n");
    return 2;
  }

  FILE *f = fopen(argv[2], "rb");
  if (!f || fseek(f, 0, SEEK_END) != 0 || (image_size = (size_t)ftell(f)) == 0 ||
      fseek(f, 0, SEEK_SET) != 0 || !(image = malloc(image_size)) ||
      fread(image, 1, image_size, f) != image_size) {
    fprintf(stderr, "cannot read %s\n", argv[2]);
    return 2;
  }
  fclose(f);

  /* Which library answers (a copy of LLVM's sits in the default path). */
  void *lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    OLC_CHECK(false, "dlopen(%s): %s", lib_path, dlerror());
    return olc_summary(NULL);
  }
  olc_check_library_is(dlsym(lib, "olInit"), lib_path);
  dlclose(lib);

  /* PROBE full cycles with every platform set phase 1's pace (after a
   * first one, which loads the library and the drivers for the process) */
  enum { PROBE = 10 };
  const char *budget_env = getenv("LC_CYCLE_BUDGET_S");
  const double budget = budget_env ? strtod(budget_env, NULL) : 20;
  full_cycle(-1);
  double t0 = now_s();
  for (long i = 1; i <= PROBE; i++)
    full_cycle(-1 - i);
  double each = (now_s() - t0) / PROBE;
  /* the measured cycles and a typical warm-up (three blocks of 100) */
  double estimate = each * (double)(full_cycles + 300);
  bool host_only = estimate > budget && !getenv("OFFLOAD_PLUGINS");
  if (host_only) {
    printf("full cycles: %d with every platform took %.1f ms each; phase 1 would take "
           "%.3g s, over the %.3g s budget (LC_CYCLE_BUDGET_S): its cycles initialise "
           "the host platform only (OFFLOAD_PLUGINS=host)\n",
           PROBE, each * 1e3, estimate, budget);
    setenv("OFFLOAD_PLUGINS", "host", 1);
  }
  measure("full cycles", full_cycle, 100, full_cycles);
  if (host_only)
    unsetenv("OFFLOAD_PLUGINS");

  lib = open_lib(&prog_host);
  if (lib && prog_host)
    measure("program cycles", program_cycle, 1000, prog_cycles);
  if (lib)
    close_lib(lib);

  OLC_CHECK(bad_calls == 0, "%ld failed calls", bad_calls);
  return olc_summary(NULL);
}
