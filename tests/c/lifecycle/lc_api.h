/* What the dlopen-cycle tests of tests/c/lifecycle share (dlopen_cycles,
 * rss_cycles, driver_cycles), on the checks of tests/c/common/olcheck.h:
 * - the entry points they call, looked up with dlsym after each dlopen (the
 *   library is never linked, so it can be unloaded): api, lookup, and CALL,
 *   which counts (bad_calls) and reports a failed call;
 * - what they measure of their own process: RSS, threads, and whose threads
 *   they are (lc_thread_census: the Go runtime's or someone else's).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef LC_API_H
#define LC_API_H

#include <OffloadAPI.h>

#include "olcheck.h"

#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ---- the entry points ---------------------------------------------------- */

/* Not every test calls every one (dlopen_cycles looks up its own four). */
static __attribute__((unused)) struct api {
  __typeof__(&olInit) init;
  __typeof__(&olShutDown) shutdown;
  __typeof__(&olIterateDevices) iterate;
  __typeof__(&olGetDeviceInfo) info;
  __typeof__(&olMemAlloc) alloc;
  __typeof__(&olMemFree) free;
  __typeof__(&olMemcpy) memcpy;
  __typeof__(&olCreateProgram) create_program;
  __typeof__(&olDestroyProgram) destroy_program;
  __typeof__(&olGetSymbol) symbol;
  __typeof__(&olCreateQueue) create_queue;
  __typeof__(&olSyncQueue) sync_queue;
  __typeof__(&olDestroyQueue) destroy_queue;
  __typeof__(&olLaunchKernel) launch;
  __typeof__(&olMemFill) fill;
  __typeof__(&olCreateEvent) create_event;
  __typeof__(&olWaitEvents) wait_events;
  __typeof__(&olDestroyEvent) destroy_event;
  __typeof__(&olLaunchHostFunction) host_function;
} api;

/* The calls 23.1 changed, in their 22.1 form, through the looked-up
 * pointers of either release (olrelease.h does this for the linked names):
 * api.init(OLC_INIT_ARG) starts every platform; LC_LAUNCH passes the
 * argument struct as one argument; LC_CREATE_EVENT makes a plain event. */
#if OLC_RELEASE >= 23
static inline ol_result_t lc_launch(__typeof__(&olLaunchKernel) fn, ol_queue_handle_t q,
                                    ol_device_handle_t d, ol_symbol_handle_t k, const void *args,
                                    size_t size, const ol_kernel_launch_size_args_t *l) {
  void *ptrs[1] = {(void *)args};
  size_t sizes[1] = {size};
  return fn(q, d, k, l, NULL, size ? 1 : 0, ptrs, sizes);
}
#define LC_LAUNCH(q, d, k, args, size, l) lc_launch(api.launch, q, d, k, args, size, l)
#define LC_CREATE_EVENT(q, e) api.create_event(q, OL_EVENT_FLAGS_NONE, e)
#else
#define LC_LAUNCH(q, d, k, args, size, l) api.launch(q, d, k, args, size, l)
#define LC_CREATE_EVENT(q, e) api.create_event(q, e)
#endif

/* Failed calls so far: a cycle test ends with a check that there were none. */
static __attribute__((unused)) long bad_calls;

#define CALL(expr, ...)                                                        \
  do {                                                                         \
    ol_result_t r_ = (expr);                                                   \
    if (r_ != NULL) {                                                          \
      bad_calls++;                                                             \
      OLC_QUIET_CHECK(false, "%s -> %u %s", #expr, olc_code(r_),               \
                      olc_details(r_));                                        \
      __VA_ARGS__;                                                             \
    }                                                                          \
  } while (0)

/* Fills api from lib; false (and a failed check) when a symbol is missing. */
static __attribute__((unused)) bool lookup(void *lib) {
#define SYM(field, name)                                                       \
  api.field = (__typeof__(api.field))dlsym(lib, name);                         \
  if (!api.field) {                                                            \
    OLC_CHECK(false, "dlsym(%s) failed", name);                                \
    return false;                                                              \
  }
  SYM(init, "olInit");
  SYM(shutdown, "olShutDown");
  SYM(iterate, "olIterateDevices");
  SYM(info, "olGetDeviceInfo");
  SYM(alloc, "olMemAlloc");
  SYM(free, "olMemFree");
  SYM(memcpy, "olMemcpy");
  SYM(create_program, "olCreateProgram");
  SYM(destroy_program, "olDestroyProgram");
  SYM(symbol, "olGetSymbol");
  SYM(create_queue, "olCreateQueue");
  SYM(sync_queue, "olSyncQueue");
  SYM(destroy_queue, "olDestroyQueue");
  SYM(launch, "olLaunchKernel");
  SYM(fill, "olMemFill");
  SYM(create_event, "olCreateEvent");
  SYM(wait_events, "olWaitEvents");
  SYM(destroy_event, "olDestroyEvent");
  SYM(host_function, "olLaunchHostFunction");
#undef SYM
  return true;
}

/* ---- the process --------------------------------------------------------- */

/* Reads one "Key:   value kB"-style integer field of /proc/self/status. */
static inline long lc_status_field(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return -1;
  char line[256];
  long value = -1;
  size_t klen = strlen(key);
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
      value = strtol(line + klen + 1, NULL, 10);
      break;
    }
  }
  fclose(f);
  return value;
}

static inline long lc_rss_kib(void) { return lc_status_field("VmRSS"); }
static inline long lc_threads(void) { return lc_status_field("Threads"); }

/* ---- whose threads are they? -------------------------------------------
 *
 * The Go runtime inside our library keeps every OS thread (M) it starts:
 * an idle M parks in a futex, made from the runtime's own code (Go makes its
 * system calls itself, not through libc), and never exits.  So the number
 * of Go threads is a high-water mark of how many the runtime needed at once
 * (GOMAXPROCS running Go code, plus those in calls into C, plus sysmon and
 * the template thread), and it can rise late in a run: under load a call
 * into C takes longer, sysmon hands its P to another M, and if none is idle
 * a new one starts.  That is bounded and happens once; a leak grows with the
 * work.  Every other thread (the host's, a driver's) is created and joined
 * by C code and must come and go exactly.
 *
 * lc_thread_census tells them apart: a thread blocked in a system call made
 * from the text of the library `marker` lies in is the Go runtime's
 * (/proc/self/task/<tid>/syscall names the call and the user program
 * counter); a thread blocked anywhere else is someone else's.  A running
 * thread cannot be told, so the census is taken again (after 1 ms) until
 * no thread other than the caller is running, for at most about a second;
 * what is still running then is counted in `unknown`.  The calling thread is
 * counted as "other".  For a library that is not Go (IMPL=llvm) no thread
 * sleeps in its text unless it makes raw system calls itself, so every
 * thread is "other" and the checks built on the census are exact. */

#define LC_MAX_TEXT 8
struct lc_text {
  uintptr_t marker;
  int n;
  uintptr_t lo[LC_MAX_TEXT], hi[LC_MAX_TEXT];
};

static inline int lc_text_cb(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct lc_text *t = data;
  int mine = 0, n = 0;
  uintptr_t lo[LC_MAX_TEXT], hi[LC_MAX_TEXT];
  for (int i = 0; i < info->dlpi_phnum && n < LC_MAX_TEXT; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
      continue;
    lo[n] = info->dlpi_addr + ph->p_vaddr;
    hi[n] = lo[n] + ph->p_memsz;
    if (t->marker >= lo[n] && t->marker < hi[n])
      mine = 1;
    n++;
  }
  if (!mine)
    return 0;
  memcpy(t->lo, lo, sizeof lo);
  memcpy(t->hi, hi, sizeof hi);
  t->n = n;
  return 1;
}

/* The executable segments of the object that holds `marker` (the address
 * of one of its functions); they stay valid after dlclose, because a Go
 * c-shared library is never unloaded (NODELETE). */
static inline struct lc_text lc_text_of(const void *marker) {
  struct lc_text t = {.marker = (uintptr_t)marker};
  dl_iterate_phdr(lc_text_cb, &t);
  return t;
}

static inline bool lc_in_text(const struct lc_text *t, uintptr_t pc) {
  for (int i = 0; i < t->n; i++)
    if (pc >= t->lo[i] && pc < t->hi[i])
      return true;
  return false;
}

struct lc_census {
  long go;      /* blocked in the library's text: the Go runtime's */
  long other;   /* blocked elsewhere, and the calling thread */
  long unknown; /* still running after the retries */
};

/* Thread tid's state from /proc/self/task/<tid>/syscall: 1 blocked in
 * `t`'s text, 0 blocked elsewhere, -1 running (or gone: -2). */
static inline int lc_thread_kind(const struct lc_text *t, const char *tid) {
  char path[300], line[512];
  snprintf(path, sizeof path, "/proc/self/task/%s/syscall", tid);
  FILE *f = fopen(path, "re");
  if (!f)
    return -2;
  int kind = -1;
  if (fgets(line, sizeof line, f) && strncmp(line, "running", 7) != 0) {
    char *last = strrchr(line, ' ');
    uintptr_t pc = last ? (uintptr_t)strtoull(last + 1, NULL, 16) : 0;
    kind = lc_in_text(t, pc) ? 1 : 0;
  }
  fclose(f);
  return kind;
}

static inline struct lc_census lc_census_once(const struct lc_text *t) {
  struct lc_census c = {0, 0, 0};
  long self = (long)syscall(SYS_gettid);
  DIR *d = opendir("/proc/self/task");
  if (!d) {
    c.unknown = 1;
    return c;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    if (strtol(e->d_name, NULL, 10) == self) {
      c.other++;
      continue;
    }
    switch (lc_thread_kind(t, e->d_name)) {
    case 1: c.go++; break;
    case 0: c.other++; break;
    case -1: c.unknown++; break;
    default: break; /* exited meanwhile */
    }
  }
  closedir(d);
  return c;
}

static inline struct lc_census lc_thread_census(const struct lc_text *t) {
  struct lc_census c = lc_census_once(t);
  for (int i = 0; i < 1000 && c.unknown > 0; i++) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    c = lc_census_once(t);
  }
  return c;
}

/* How far the Go runtime's threads may rise after a warm-up:
 * GOMAXPROCS + 2.  GOMAXPROCS Ms can each be busy (running Go code, or just
 * handing a P over to a goroutine locked to another thread: the caller's,
 * which entered Go from C), and beside them a thread blocked in a call into
 * C and one still spinning before it parks; under load each of those can be
 * the moment the runtime finds no idle M and starts one.  A leak of one
 * thread per cycle, or one per 100 cycles over 1,000, goes past it. */
static inline long lc_go_thread_bound(void) {
  long procs = 0;
  const char *v = getenv("GOMAXPROCS");
  if (v && atol(v) > 0) {
    procs = atol(v);
  } else {
    cpu_set_t set;
    procs = sched_getaffinity(0, sizeof set, &set) == 0
                ? CPU_COUNT(&set)
                : sysconf(_SC_NPROCESSORS_ONLN);
  }
  return procs + 2;
}

/* Prints the threads (the first 64): tid, name, system call and program
 * counter (as an offset into the object it lies in), for a failure report. */
static inline void lc_print_threads(const struct lc_text *t, FILE *out) {
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return;
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    if (++n > 64) {
      fprintf(out, "  ...\n");
      break;
    }
    char path[300], comm[64] = "?", line[512] = "?";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "re");
    if (f) {
      if (fgets(comm, sizeof comm, f))
        comm[strcspn(comm, "\n")] = '\0';
      fclose(f);
    }
    snprintf(path, sizeof path, "/proc/self/task/%s/syscall", e->d_name);
    f = fopen(path, "re");
    if (f) {
      if (fgets(line, sizeof line, f))
        line[strcspn(line, "\n")] = '\0';
      fclose(f);
    }
    char *last = strrchr(line, ' ');
    uintptr_t pc = last ? (uintptr_t)strtoull(last + 1, NULL, 16) : 0;
    Dl_info info;
    const char *where = "?";
    uintptr_t off = pc;
    if (pc && dladdr((void *)pc, &info) && info.dli_fname) {
      where = strrchr(info.dli_fname, '/') ? strrchr(info.dli_fname, '/') + 1
                                           : info.dli_fname;
      off = pc - (uintptr_t)info.dli_fbase;
    }
    fprintf(out, "  thread %s (%s): syscall %.*s, pc %s+%#lx%s\n", e->d_name,
            comm, (int)strcspn(line, " "), line, where, (unsigned long)off,
            lc_in_text(t, pc) ? " [Go runtime]" : "");
  }
  closedir(d);
}

#endif /* LC_API_H */
