/* Test: threads, memory and descriptors stay flat over full library cycles
 * that do GPU work through a driver (the CUDA or HSA double: the Makefile
 * runs it once with each, OFFLOAD_PLUGINS naming the one backend).
 *
 * One cycle: dlopen the library, olInit, find the first GPU, olMemAlloc
 * (DEVICE), olCreateProgram (the kernel image for that GPU), olGetSymbol,
 * two queues; on the first olMemFill, olLaunchKernel and olCreateEvent; on
 * the second olWaitEvents for it, olMemcpy of the result to the host and
 * olLaunchHostFunction; olSyncQueue both, check the result; then, on the
 * first queue, a host function that sleeps 1 ms and a fill of a second
 * allocation, freed at once (the runtime defers the release, with a worker
 * goroutine); destroy the event, queues and program, olMemFree, olShutDown
 * (the final one: it frees the deferred allocation once the fill has run,
 * stops the worker, and the backend shuts its driver down), dlclose.
 *
 * Warm-up: blocks of 100 cycles until two blocks in a row do not raise the
 * highest RSS seen by more than 64 kB (at most 20 blocks; see rss_cycles.c
 * and RATIONALE.md: the Go heap fills up to its minimum goal first).  Then
 * `cycles` measured cycles (600 by default), each followed by a census of
 * the process's threads (lc_thread_census in lc_api.h), VmRSS and the
 * open descriptors.  Every call must succeed, and against the census taken
 * after the warm-up:
 *   - threads that are not the Go runtime's (the driver's, the host's) must
 *     be exactly as many after every cycle: a driver thread that outlives
 *     the final shut down, or one started late and kept, fails at once;
 *   - the Go runtime's threads may rise by at most GOMAXPROCS + 2 over all
 *     the measured cycles: its idle threads park and are never given back,
 *     so their number is a high-water mark that the scheduling of a loaded
 *     machine can raise once, late; a leak of one thread every 100 cycles
 *     or faster exceeds the bound (GOMAXPROCS + 2: 4 on two cores) within
 *     600 cycles (the run prints when the Go threads rose, and every thread
 *     with its system call and program counter when a check fails);
 *   - VmRSS: the highest value over the last third of the measured cycles
 *     may exceed the highest over the first third by at most 2 MiB.  Highest
 *     over 200 cycles, because RSS swings by some 300 kB with the Go heap's
 *     collections; 2 MiB for a one-off step (a new thread's stack, a malloc
 *     arena, a heap goal: 40 runs on a loaded 2-core machine rose by -288 to
 *     +716 kB).  A leak of 64 KiB a cycle rises by 25 MiB;
 *   - the open descriptors must not change.
 *
 * Only for our library (IMPL=ours): the images are the host kernels dressed
 * as cubins or code objects, which only the driver doubles run.
 *
 * usage: driver_cycles /path/to/libLLVMOffload.so.22.1 /path/to/image
 *        [cycles]
 */
#include "lc_api.h"

#include <dirent.h>
#include <dlfcn.h>

#define RSS_BOUND_KIB 2048L
#define WARM_SLACK_KIB 64L
#define WARM_BLOCK 100
#define WARM_MAX_BLOCKS 20
#define GROUPS 4
#define GROUP_SIZE 64
#define N (GROUPS * GROUP_SIZE)
#define SPARE (64 << 10) /* bytes of the allocation freed with work queued */

static const char *lib_path;
static void *image;
static size_t image_size;

struct devs {
  ol_device_handle_t host, gpu;
};

static bool find_devs(ol_device_handle_t dev, void *user) {
  struct devs *d = user;
  ol_device_type_t type = OL_DEVICE_TYPE_FORCE_UINT32;
  if (api.info(dev, OL_DEVICE_INFO_TYPE, sizeof type, &type) != NULL)
    return true;
  if (type == OL_DEVICE_TYPE_HOST && !d->host)
    d->host = dev;
  else if (type == OL_DEVICE_TYPE_GPU && !d->gpu)
    d->gpu = dev;
  return true;
}

struct foo_args {
  uint32_t *out;
};

static void count_call(void *user) { (*(long *)user)++; }

static void pause_1ms(void *user) {
  (void)user;
  struct timespec ts = {0, 1000000};
  nanosleep(&ts, NULL);
}

/* Fill, launch, event, a second queue waiting for it, copy back, host
 * function. */
static void work(struct devs *d, long cycle) {
  uint32_t *out = NULL;
  ol_program_handle_t prog = NULL;
  ol_symbol_handle_t kernel = NULL;
  ol_queue_handle_t q = NULL, q2 = NULL;
  ol_event_handle_t ev = NULL;
  long calls = 0;
  CALL(api.alloc(d->gpu, OL_ALLOC_TYPE_DEVICE, N * sizeof *out, (void **)&out));
  CALL(api.create_program(d->gpu, image, image_size, &prog));
  if (prog)
    CALL(api.symbol(prog, "foo", OL_SYMBOL_KIND_KERNEL, &kernel));
  CALL(api.create_queue(d->gpu, &q));
  CALL(api.create_queue(d->gpu, &q2));
  if (out && kernel && q && q2) {
    static uint32_t host[N];
    memset(host, 0xff, sizeof host);
    uint32_t pattern = 0xdeadbeef;
    ol_kernel_launch_size_args_t size = {1, {GROUPS, 1, 1}, {GROUP_SIZE, 1, 1}, 0};
    struct foo_args args = {out};
    CALL(api.fill(q, out, sizeof pattern, &pattern, N * sizeof *out));
    CALL(LC_LAUNCH(q, d->gpu, kernel, &args, sizeof args, &size));
    CALL(LC_CREATE_EVENT(q, &ev));
    if (ev)
      CALL(api.wait_events(q2, &ev, 1));
    CALL(api.memcpy(q2, host, d->host, out, d->gpu, sizeof host));
    CALL(api.host_function(q2, count_call, &calls));
    CALL(api.sync_queue(q2));
    for (uint32_t i = 0; i < N; i++)
      if (host[i] != i) {
        bad_calls++;
        OLC_QUIET_CHECK(false, "cycle %ld: out[%u] = %u", cycle, i, host[i]);
        break;
      }
    if (calls != 1) {
      bad_calls++;
      OLC_QUIET_CHECK(false, "cycle %ld: the host function ran %ld times", cycle, calls);
    }
    CALL(api.sync_queue(q));
  }
  /* freed while a fill of it is queued: the final olShutDown releases it */
  void *spare = NULL;
  if (q)
    CALL(api.alloc(d->gpu, OL_ALLOC_TYPE_DEVICE, SPARE, &spare));
  if (spare) {
    uint32_t seven = 7;
    CALL(api.host_function(q, pause_1ms, NULL));
    CALL(api.fill(q, spare, sizeof seven, &seven, SPARE));
    CALL(api.free(spare));
  }
  if (ev)
    CALL(api.destroy_event(ev));
  if (q2)
    CALL(api.destroy_queue(q2));
  if (q)
    CALL(api.destroy_queue(q));
  if (prog)
    CALL(api.destroy_program(prog));
  if (out)
    CALL(api.free(out));
}

static void *first_init; /* olInit of the first load: marks the library */

static void cycle(long n) {
  void *lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    bad_calls++;
    OLC_QUIET_CHECK(false, "cycle %ld: dlopen(%s): %s", n, lib_path, dlerror());
    return;
  }
  if (!lookup(lib)) {
    bad_calls++;
    dlclose(lib);
    return;
  }
  if (!first_init)
    first_init = (void *)api.init;
  ol_result_t r = api.init(OLC_INIT_ARG);
  if (r == NULL) {
    struct devs d = {NULL, NULL};
    CALL(api.iterate(find_devs, &d));
    if (d.host && d.gpu) {
      work(&d, n);
    } else {
      bad_calls++;
      OLC_QUIET_CHECK(false, "cycle %ld: no %s device", n, d.gpu ? "host" : "GPU");
    }
    CALL(api.shutdown());
  } else {
    bad_calls++;
    OLC_QUIET_CHECK(false, "cycle %ld: olInit -> %u %s", n, olc_code(r), olc_details(r));
  }
  if (dlclose(lib) != 0) {
    bad_calls++;
    OLC_QUIET_CHECK(false, "cycle %ld: dlclose: %s", n, dlerror());
  }
}

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

/* The highest of v[0..n). */
static long highest(const long *v, long n) {
  long h = 0;
  for (long i = 0; i < n; i++)
    if (v[i] > h)
      h = v[i];
  return h;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s LIBRARY IMAGE [cycles]\n", argv[0]);
    return 2;
  }
  lib_path = argv[1];
  long cycles = argc > 3 ? strtol(argv[3], NULL, 10) : 600;
  if (cycles < 30) {
    fprintf(stderr, "need at least 30 cycles\n");
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

  void *lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    OLC_CHECK(false, "dlopen(%s): %s", lib_path, dlerror());
    return olc_summary(NULL);
  }
  olc_check_library_is(dlsym(lib, "olInit"), lib_path);
  dlclose(lib);

  /* warm-up */
  long peak = lc_rss_kib(), warm = 0;
  for (int flat = 0, blocks = 0; flat < 2 && blocks < WARM_MAX_BLOCKS; blocks++) {
    long high = 0;
    for (int i = 0; i < WARM_BLOCK; i++) {
      cycle(++warm);
      long r = lc_rss_kib();
      if (r > high)
        high = r;
    }
    flat = high <= peak + WARM_SLACK_KIB ? flat + 1 : 0;
    if (high > peak)
      peak = high;
  }

  struct lc_text text = lc_text_of(first_init);
  OLC_CHECK(text.n > 0, "no text segment found for the library");
  const long go_bound = lc_go_thread_bound();
  struct lc_census start = lc_thread_census(&text), end = start;
  long fds_start = open_fds(), fds_end = fds_start;
  long *rss = calloc((size_t)cycles, sizeof *rss);
  if (!rss)
    return 2;
  long go_max = start.go, other_bad = 0, unknown_bad = 0;
  bool printed = false;
  for (long i = 0; i < cycles; i++) {
    cycle(warm + i + 1);
    struct lc_census c = lc_thread_census(&text);
    rss[i] = lc_rss_kib();
    fds_end = open_fds();
    if (c.go > go_max) {
      printf("after measured cycle %ld: %ld Go runtime threads (%+ld)\n", i + 1,
             c.go, c.go - start.go);
      go_max = c.go;
    }
    bool bad = false;
    if (c.other != start.other) {
      other_bad++;
      bad = true;
      OLC_QUIET_CHECK(false, "after measured cycle %ld: %ld threads not the Go "
                      "runtime's, %ld after the warm-up", i + 1, c.other,
                      start.other);
    }
    if (c.unknown != 0) {
      unknown_bad++;
      bad = true;
      OLC_QUIET_CHECK(false, "after measured cycle %ld: %ld threads kept running "
                      "through the census", i + 1, c.unknown);
    }
    if (c.go - start.go > go_bound) {
      bad = true;
      OLC_QUIET_CHECK(false, "after measured cycle %ld: the Go runtime's threads "
                      "rose by %ld (bound %ld)", i + 1, c.go - start.go, go_bound);
    }
    if (bad && !printed) {
      lc_print_threads(&text, stderr);
      printed = true;
    }
    end = c;
  }
  const long third = cycles / 3;
  long rss_first = highest(rss, third), rss_last = highest(rss + cycles - third, third);
  printf("warm-up %ld cycles; %ld measured cycles\n", warm, cycles);
  printf("threads after the warm-up: %ld Go runtime, %ld others; at the end: "
         "%ld Go runtime (highest %ld, bound +%ld), %ld others\n",
         start.go, start.other, end.go, go_max, go_bound, end.other);
  printf("VmRSS highest over the first %ld measured cycles %ld kB, over the "
         "last %ld %ld kB (growth %+ld kB, bound %ld kB); open fds %ld -> %ld\n",
         third, rss_first, third, rss_last, rss_last - rss_first, RSS_BOUND_KIB,
         fds_start, fds_end);
  fflush(stdout);

  OLC_CHECK(bad_calls == 0, "%ld failed calls", bad_calls);
  OLC_CHECK(other_bad == 0, "threads not the Go runtime's changed after %ld of "
            "%ld cycles", other_bad, cycles);
  OLC_CHECK(unknown_bad == 0, "threads could not be told apart after %ld cycles",
            unknown_bad);
  OLC_CHECK(go_max - start.go <= go_bound,
            "the Go runtime's threads rose by %ld over %ld cycles (bound %ld)",
            go_max - start.go, cycles, go_bound);
#ifdef __SANITIZE_ADDRESS__
  /* ASan keeps freed memory in its quarantine, so RSS grows by design
   * (make sanitize); the plain lifecycle runs check the bound. */
  olc_skip(__FILE__, __LINE__, "built with AddressSanitizer: its quarantine of freed memory grows RSS "
           "(the plain runs check the %ld kB bound)", RSS_BOUND_KIB);
#else
  OLC_CHECK(rss_first > 0 && rss_last - rss_first <= RSS_BOUND_KIB,
            "VmRSS grew by %ld kB from the first to the last third of %ld "
            "cycles after warm-up (bound %ld kB)", rss_last - rss_first, cycles,
            RSS_BOUND_KIB);
#endif
  OLC_CHECK(fds_start > 0 && fds_end == fds_start,
            "open file descriptors went from %ld to %ld over %ld cycles",
            fds_start, fds_end, cycles);
  free(rss);
  return olc_summary(NULL);
}
