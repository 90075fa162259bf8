/* Test harness for the host-CPU-device suite of liboffload-go.
 *
 * Assertions never abort: a failed one prints
 *   FAIL <file>:<line> (<test>): <what>
 * and the test goes on (a test may return early when later steps would only
 * crash).  hc_finish() prints "<area>: N passed, N failed" and returns the
 * exit status.  Each test is announced before it runs, so the last line
 * printed before a crash or a hang names the culprit.
 *
 * Kernels are loaded from KERNEL_DIR (a -D from the Makefile), or from the
 * directory given as argv[1].
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOST_TESTS_HCHECK_H
#define HOST_TESTS_HCHECK_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <OffloadAPI.h>

#ifndef KERNEL_DIR
#define KERNEL_DIR "."
#endif

static int hc_pass, hc_fail;
static const char *hc_name = "-";
static const char *hc_kernel_dir = KERNEL_DIR;
static ol_device_handle_t hc_dev; /* the host device, set by hc_start */

#define HC_BIG 0x7fffffff /* the FORCE_UINT32 value of every enum */

static inline const char *hc_code_name(unsigned c) {
  static const char *n[] = {
      "SUCCESS",        "UNKNOWN",          "HOST_IO",
      "INVALID_BINARY", "INVALID_NULL_POINTER", "INVALID_ARGUMENT",
      "NOT_FOUND",      "OUT_OF_RESOURCES", "INVALID_SIZE",
      "INVALID_ENUMERATION", "HOST_TOOL_NOT_FOUND", "INVALID_VALUE",
      "UNIMPLEMENTED",  "UNSUPPORTED",      "ASSEMBLE_FAILURE",
      "COMPILE_FAILURE", "LINK_FAILURE",    "BACKEND_FAILURE",
      "UNINITIALIZED",  "INVALID_NULL_HANDLE", "INVALID_PLATFORM",
      "INVALID_DEVICE", "INVALID_QUEUE",    "INVALID_EVENT",
      "SYMBOL_KIND"};
  return c < sizeof n / sizeof n[0] ? n[c] : "?";
}

static inline void hc_failed(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  hc_fail++;
  printf("FAIL %s:%d (%s): ", file, line, hc_name);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
}

/* Success expected. Returns true when it was. */
static inline bool hc_ok(ol_result_t r, const char *what, const char *file, int line) {
  if (!r) {
    hc_pass++;
    return true;
  }
  hc_failed(file, line, "%s -> OL_ERRC_%s (%u) \"%s\", wanted success", what,
            hc_code_name(r->Code), (unsigned)r->Code,
            r->Details ? r->Details : "(no details)");
  return false;
}

/* Error `code` expected; `part` (if not NULL) must occur in the Details. */
static inline bool hc_err(ol_result_t r, unsigned code, const char *part,
                   const char *what, const char *file, int line) {
  if (r && r->Code == code &&
      (!part || (r->Details && strstr(r->Details, part)))) {
    hc_pass++;
    return true;
  }
  if (!r)
    hc_failed(file, line, "%s -> success, wanted OL_ERRC_%s%s%s%s", what,
              hc_code_name(code), part ? " with \"" : "", part ? part : "",
              part ? "\"" : "");
  else
    hc_failed(file, line,
              "%s -> OL_ERRC_%s \"%s\", wanted OL_ERRC_%s%s%s%s", what,
              hc_code_name(r->Code), r->Details ? r->Details : "(no details)",
              hc_code_name(code), part ? " with \"" : "", part ? part : "",
              part ? "\"" : "");
  return false;
}

static inline bool hc_true(bool c, const char *what, const char *file, int line) {
  if (c) {
    hc_pass++;
    return true;
  }
  hc_failed(file, line, "not true: %s", what);
  return false;
}

static inline bool hc_eq(uint64_t got, uint64_t want, const char *what,
                  const char *file, int line) {
  if (got == want) {
    hc_pass++;
    return true;
  }
  hc_failed(file, line, "%s: got %" PRIu64 " (%#" PRIx64 "), wanted %" PRIu64
            " (%#" PRIx64 ")", what, got, got, want, want);
  return false;
}

#define OK(call) hc_ok((call), #call, __FILE__, __LINE__)
#define ERR(call, code, part)                                                  \
  hc_err((call), (unsigned)(code), (part), #call, __FILE__, __LINE__)
#define TRUE(cond) hc_true((cond), #cond, __FILE__, __LINE__)
#define EQ(got, want)                                                          \
  hc_eq((uint64_t)(got), (uint64_t)(want), #got " == " #want, __FILE__,        \
        __LINE__)
/* Compare n uint32_t with an expected value computed from the index i. */
#define EQ_ARRAY(arr, n, expr)                                                 \
  do {                                                                         \
    size_t hc_bad_ = 0, hc_first_ = 0;                                         \
    for (size_t i = 0; i < (size_t)(n); i++)                                   \
      if ((uint64_t)(arr)[i] != (uint64_t)(expr)) {                            \
        if (!hc_bad_++)                                                        \
          hc_first_ = i;                                                       \
      }                                                                        \
    if (!hc_bad_) {                                                            \
      hc_pass++;                                                               \
    } else {                                                                   \
      size_t i = hc_first_;                                                    \
      hc_failed(__FILE__, __LINE__,                                            \
                "%s[i] != %s at %zu of %zu entries; first at i=%zu: got "      \
                "%" PRIu64 ", wanted %" PRIu64,                                \
                #arr, #expr, hc_bad_, (size_t)(n), i, (uint64_t)(arr)[i],      \
                (uint64_t)(expr));                                             \
    }                                                                          \
  } while (0)

#define RUN(fn)                                                                \
  do {                                                                         \
    hc_name = #fn;                                                             \
    printf("  %s\n", #fn);                                                     \
    fflush(stdout);                                                            \
    fn();                                                                      \
  } while (0)

/* ------------------------------------------------------------ helpers --- */

static inline double hc_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline void hc_sleep_ms(unsigned ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static inline bool hc_find_host(ol_device_handle_t d, void *user) {
  ol_device_type_t t;
  if (olGetDeviceInfo(d, OL_DEVICE_INFO_TYPE, sizeof t, &t) == NULL &&
      t == OL_DEVICE_TYPE_HOST) {
    *(ol_device_handle_t *)user = d;
    return false;
  }
  return true;
}

/* olInit, then find the host device. */
static inline void hc_start(int argc, char **argv) {
  if (argc > 1)
    hc_kernel_dir = argv[1];
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (!OK(olInit()))
    exit(2);
  hc_dev = NULL;
  OK(olIterateDevices(hc_find_host, &hc_dev));
  if (!TRUE(hc_dev != NULL)) {
    printf("no host device: nothing can be tested\n");
    exit(2);
  }
}

static inline int hc_finish(const char *area) {
  hc_name = "shutdown";
  OK(olShutDown());
  printf("%s: %d passed, %d failed\n", area, hc_pass, hc_fail);
  fflush(stdout);
  return hc_fail ? 1 : 0;
}

/* Reads a whole file; *size gets its length. NULL (and a FAIL) if missing. */
static inline void *hc_read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    hc_failed(__FILE__, __LINE__, "cannot open %s: %s", path, strerror(errno));
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *buf = malloc(n > 0 ? (size_t)n : 1);
  if (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    hc_failed(__FILE__, __LINE__, "short read of %s", path);
    free(buf);
    fclose(f);
    return NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return buf;
}

/* The bytes of kernel image <name>.so. */
static inline void *hc_image(const char *name, size_t *size) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.so", hc_kernel_dir, name);
  return hc_read_file(path, size);
}

/* Loads kernel image <name>.so as a program; NULL (and a FAIL) on error. */
static inline ol_program_handle_t hc_program(const char *name) {
  size_t n = 0;
  void *img = hc_image(name, &n);
  if (!img)
    return NULL;
  ol_program_handle_t p = NULL;
  bool ok = OK(olCreateProgram(hc_dev, img, n, &p));
  free(img);
  return ok ? p : NULL;
}

static inline ol_symbol_handle_t hc_kernel(ol_program_handle_t p, const char *name) {
  ol_symbol_handle_t s = NULL;
  if (!p || !OK(olGetSymbol(p, name, OL_SYMBOL_KIND_KERNEL, &s)))
    return NULL;
  return s;
}

static inline ol_symbol_handle_t hc_global(ol_program_handle_t p, const char *name,
                                    void **addr, size_t *size) {
  ol_symbol_handle_t s = NULL;
  if (!p || !OK(olGetSymbol(p, name, OL_SYMBOL_KIND_GLOBAL_VARIABLE, &s)))
    return NULL;
  if (addr && !OK(olGetSymbolInfo(s, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS,
                                  sizeof *addr, addr)))
    return NULL;
  if (size && !OK(olGetSymbolInfo(s, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE,
                                  sizeof *size, size)))
    return NULL;
  return s;
}

static inline ol_kernel_launch_size_args_t hc_size1(uint32_t groups, uint32_t size) {
  ol_kernel_launch_size_args_t l;
  memset(&l, 0, sizeof l);
  l.Dimensions = 1;
  l.NumGroups.x = groups, l.NumGroups.y = 1, l.NumGroups.z = 1;
  l.GroupSize.x = size, l.GroupSize.y = 1, l.GroupSize.z = 1;
  l.DynSharedMemory = 0;
  return l;
}

static inline void *hc_alloc(ol_alloc_type_t type, size_t size) {
  void *p = NULL;
  if (!OK(olMemAlloc(hc_dev, type, size, &p)))
    return NULL;
  return p;
}

static inline ol_queue_handle_t hc_queue(void) {
  ol_queue_handle_t q = NULL;
  OK(olCreateQueue(hc_dev, &q));
  return q;
}

/* ------------------------------------------------ a blocking host task --- */

/* A host function that spins until released, as a way to hold a queue.
 * hc_gate_close() enqueues it; hc_gate_open() lets it finish. */
typedef struct hc_gate {
  atomic_int open;
  atomic_int entered;
} hc_gate;

static inline void hc_gate_fn(void *user) {
  hc_gate *g = (hc_gate *)user;
  atomic_store(&g->entered, 1);
  while (!atomic_load(&g->open))
    sched_yield();
}

static inline bool hc_gate_close(hc_gate *g, ol_queue_handle_t q) {
  atomic_store(&g->open, 0);
  atomic_store(&g->entered, 0);
  return OK(olLaunchHostFunction(q, hc_gate_fn, g));
}

static inline void hc_gate_open(hc_gate *g) { atomic_store(&g->open, 1); }

/* Waits (up to 5 s) until the gate's function is running. */
static inline bool hc_gate_wait_entered(hc_gate *g) {
  double t0 = hc_now_ms();
  while (!atomic_load(&g->entered) && hc_now_ms() - t0 < 5000)
    hc_sleep_ms(1);
  return atomic_load(&g->entered) != 0;
}

#endif /* HOST_TESTS_HCHECK_H */
