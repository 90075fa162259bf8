/* Minimal assertion harness for the liboffload conformance tests.
 *
 * Every CHECK_* macro counts one assertion.  A failing assertion prints
 *   FAIL <file>:<line> [<test>] <what>: expected ..., got ...
 * to stdout and execution continues.  check_summary() prints the line
 *   <area>: N passed, N failed
 * and returns the process exit status (non-zero when anything failed).
 *
 * The tests work with both LLVM's installed header and ours; with LLVM's
 * header the Makefile force-includes <stdbool.h>.
 */
#ifndef CONFORMANCE_CHECK_H
#define CONFORMANCE_CHECK_H

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <OffloadAPI.h>

static int chk_passed;
static int chk_failed;
static const char *chk_test = "?";

static inline const char *chk_errc_name(unsigned code) {
  static const char *const names[] = {
      "OL_ERRC_SUCCESS",           "OL_ERRC_UNKNOWN",
      "OL_ERRC_HOST_IO",           "OL_ERRC_INVALID_BINARY",
      "OL_ERRC_INVALID_NULL_POINTER", "OL_ERRC_INVALID_ARGUMENT",
      "OL_ERRC_NOT_FOUND",         "OL_ERRC_OUT_OF_RESOURCES",
      "OL_ERRC_INVALID_SIZE",      "OL_ERRC_INVALID_ENUMERATION",
      "OL_ERRC_HOST_TOOL_NOT_FOUND", "OL_ERRC_INVALID_VALUE",
      "OL_ERRC_UNIMPLEMENTED",     "OL_ERRC_UNSUPPORTED",
      "OL_ERRC_ASSEMBLE_FAILURE",  "OL_ERRC_COMPILE_FAILURE",
      "OL_ERRC_LINK_FAILURE",      "OL_ERRC_BACKEND_FAILURE",
      "OL_ERRC_UNINITIALIZED",     "OL_ERRC_INVALID_NULL_HANDLE",
      "OL_ERRC_INVALID_PLATFORM",  "OL_ERRC_INVALID_DEVICE",
      "OL_ERRC_INVALID_QUEUE",     "OL_ERRC_INVALID_EVENT",
      "OL_ERRC_SYMBOL_KIND",
  };
  if (code < sizeof(names) / sizeof(names[0]))
    return names[code];
  return "(unknown code)";
}

static inline unsigned chk_code(ol_result_t r) {
  return r ? (unsigned)r->Code : 0u;
}
static inline const char *chk_details(ol_result_t r) {
  if (!r)
    return "(success, no details)";
  return r->Details ? r->Details : "(NULL details)";
}

static inline void chk_ok(void) { chk_passed++; }
static inline void chk_bad(const char *file, int line) {
  chk_failed++;
  printf("FAIL %s:%d [%s] ", file, line, chk_test);
}

/* Expect success (NULL result). */
static inline void chk_success(ol_result_t r, const char *expr,
                               const char *file, int line) {
  if (r == NULL) {
    chk_ok();
    return;
  }
  chk_bad(file, line);
  printf("%s: expected OL_SUCCESS, got %s (%u) \"%s\"\n", expr,
         chk_errc_name(chk_code(r)), chk_code(r), chk_details(r));
  fflush(stdout);
}

/* Expect error `code`; if `details` is non-NULL the Details text must be
 * exactly equal (contains == false) or contain it (contains == true). */
static inline void chk_error(ol_result_t r, unsigned code, const char *details,
                             bool contains, const char *expr, const char *file,
                             int line) {
  bool ok = r != NULL && chk_code(r) == code;
  if (ok && details) {
    const char *d = r->Details;
    ok = d != NULL && (contains ? strstr(d, details) != NULL
                                : strcmp(d, details) == 0);
  }
  if (ok) {
    chk_ok();
    return;
  }
  chk_bad(file, line);
  printf("%s: expected %s (%u)", expr, chk_errc_name(code), code);
  if (details)
    printf(" %s\"%s\"", contains ? "containing " : "", details);
  printf(", got %s (%u) \"%s\"\n", chk_errc_name(chk_code(r)), chk_code(r),
         chk_details(r));
  fflush(stdout);
}

static inline void chk_true(bool c, const char *expr, const char *file,
                            int line) {
  if (c) {
    chk_ok();
    return;
  }
  chk_bad(file, line);
  printf("condition false: %s\n", expr);
  fflush(stdout);
}

static inline void chk_u64(uint64_t got, uint64_t want, const char *expr,
                           const char *file, int line) {
  if (got == want) {
    chk_ok();
    return;
  }
  chk_bad(file, line);
  printf("%s: expected %" PRIu64 " (0x%" PRIx64 "), got %" PRIu64
         " (0x%" PRIx64 ")\n",
         expr, want, want, got, got);
  fflush(stdout);
}

static inline void chk_ptr(const void *got, const void *want, const char *expr,
                           const char *file, int line) {
  if (got == want) {
    chk_ok();
    return;
  }
  chk_bad(file, line);
  printf("%s: expected pointer %p, got %p\n", expr, want, got);
  fflush(stdout);
}

static inline void chk_str(const char *got, const char *want, const char *expr,
                           const char *file, int line) {
  if (got && want && strcmp(got, want) == 0) {
    chk_ok();
    return;
  }
  chk_bad(file, line);
  printf("%s: expected \"%s\", got \"%s\"\n", expr, want ? want : "(null)",
         got ? got : "(null)");
  fflush(stdout);
}

#define CHECK_SUCCESS(call) chk_success((call), #call, __FILE__, __LINE__)
/* Code and exact Details text. */
#define CHECK_ERR(call, code, details)                                         \
  chk_error((call), (unsigned)(code), (details), false, #call, __FILE__,       \
            __LINE__)
/* Code and a Details substring. */
#define CHECK_ERR_CONTAINS(call, code, part)                                   \
  chk_error((call), (unsigned)(code), (part), true, #call, __FILE__, __LINE__)
/* Code only (Details not specified by the reference). */
#define CHECK_ERR_CODE(call, code)                                             \
  chk_error((call), (unsigned)(code), NULL, false, #call, __FILE__, __LINE__)
#define CHECK(cond) chk_true((cond), #cond, __FILE__, __LINE__)
#define CHECK_EQ(got, want)                                                    \
  chk_u64((uint64_t)(got), (uint64_t)(want), #got " == " #want, __FILE__,      \
          __LINE__)
#define CHECK_PTR_EQ(got, want)                                                \
  chk_ptr((const void *)(got), (const void *)(want), #got " == " #want,        \
          __FILE__, __LINE__)
#define CHECK_STREQ(got, want)                                                 \
  chk_str((got), (want), #got " == " #want, __FILE__, __LINE__)

/* Validation-layer Details texts. */
#define VF(cond) "validation failure: " cond

/* Each test announces itself (flushed) so that a crash inside the library
 * still shows which test was running.  No signal handlers are installed:
 * our library is a Go c-shared object whose runtime owns SIGSEGV/SIGFPE. */
#define RUN_TEST(fn)                                                           \
  do {                                                                         \
    chk_test = #fn;                                                            \
    printf("  %s\n", chk_test);                                              \
    fflush(stdout);                                                            \
    fn();                                                                      \
    fflush(stdout);                                                            \
  } while (0)

/* True when the suite runs against LLVM's library (OFFLOAD_TEST_IMPL=llvm);
 * tests that crash LLVM's library are skipped then. */
static inline bool impl_is_llvm(void) {
  const char *v = getenv("OFFLOAD_TEST_IMPL");
  return v && strcmp(v, "llvm") == 0;
}

static inline int check_summary(const char *area) {
  printf("%s: %d passed, %d failed\n", area, chk_passed, chk_failed);
  fflush(stdout);
  return chk_failed ? 1 : 0;
}

/* ---- helpers shared by the area files ---------------------------------- */

struct chk_devlist {
  ol_device_handle_t devs[64];
  int n;
};

static inline bool chk_collect_cb(ol_device_handle_t d, void *ud) {
  struct chk_devlist *l = (struct chk_devlist *)ud;
  if (l->n < 64)
    l->devs[l->n++] = d;
  return true;
}

/* The host device: the last device olIterateDevices yields.  NULL on error. */
static inline ol_device_handle_t host_device(void) {
  struct chk_devlist l;
  memset(&l, 0, sizeof l);
  if (olIterateDevices(chk_collect_cb, &l) != NULL || l.n == 0)
    return NULL;
  return l.devs[l.n - 1];
}

static inline ol_platform_handle_t platform_of(ol_device_handle_t d) {
  ol_platform_handle_t p = NULL;
  if (olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, sizeof p, &p) != NULL)
    return NULL;
  return p;
}

/* Fresh init for a test; reports (and counts) a failure if olInit fails. */
#define TEST_INIT() CHECK_SUCCESS(olInit())
#define TEST_FINI() CHECK_SUCCESS(olShutDown())

#endif /* CONFORMANCE_CHECK_H */
