/* olcheck.h: the one assertion harness of the C test suites of
 * liboffload-go (tests/c/conformance, tests/c/device, tests/c/lifecycle).
 *
 * Counting. Every check counts once: passed, failed or skipped. A skip is
 * never a pass. olc_summary(area) prints the closing line
 *   <area>: N passed, N failed, N skipped      (or without "<area>: ")
 * and returns the exit status (1 when anything failed). The run scripts
 * add these lines up; they judge that exact format.
 *
 * Reporting. Checks never abort. A failed one prints
 *   FAIL <file>:<line> (<test>) on <target>: <call>: expected ..., got ...
 * with the result code's name and the Details text; a skip prints
 *   SKIP <file>:<line> (<test>) on <target>: <reason>
 * and an expected known difference prints
 *   DIFF <file>:<line> (<test>) on <target>: <reason>
 * <target> is the library under test and the device under test, e.g.
 * "ours host:0" or "llvm cuda:1" (OFFLOAD_TEST_IMPL names the library:
 * ours, the default, or llvm for LLVM 22.1's libLLVMOffload.so.22.1).
 *
 * Checks (each counts one):
 *   OLC_OK(call)                     success (a NULL ol_result_t)
 *   OLC_ERR(call, code, details)     error `code`, Details exactly `details`
 *   OLC_ERR_HAS(call, code, part)    error `code`, Details containing `part`
 *   OLC_ERR_CODE(call, code)         error `code`, any Details
 *   OLC_TRUE(cond), OLC_EQ(got, want), OLC_PTR_EQ(got, want),
 *   OLC_STREQ(got, want), OLC_CHECK(cond, fmt, ...) (own failure text)
 * All return whether they passed.
 *
 * Applicability. A check, or the rest of a test, says where it applies:
 * a set of OLC_OURS / OLC_LLVM (the library) and OLC_HOST / OLC_CUDA /
 * OLC_AMDGPU (the device's backend; OLC_GPU is both GPU backends). A set
 * with no library bit applies to both libraries, one with no backend bit
 * to every backend.
 *   OLC_ONLY(set, reason)     in a test: where `set` does not apply, count
 *                             one skip with the reason and return
 *   OLC_ON(set, reason)       true where `set` applies, else one skip
 *                             with the reason (for one check or a block)
 *   OLC_RUN_ON(fn, set, reason)  run test fn where `set` applies, else
 *                             count one skip with the reason
 *   olc_known_diff(set, reason)  true where `set` applies: the caller then
 *                             checks the known different result; prints a
 *                             DIFF line with the reason (not a skip: the
 *                             check that follows still counts)
 *
 * Needs. A check, or the rest of a test, that needs what a run may lack
 * (a second device of the backend, a device of another platform, a cubin
 * rather than PTX) says so; the reason is a printf format:
 *   OLC_NEEDS(cond, what...)  true when cond holds, else one skip
 *                             "needs <what>"
 *   OLC_PREREQ(cond, what...) a build prerequisite (an image made by a
 *                             tool that may be missing): as OLC_NEEDS, but
 *                             a failure "missing prerequisite: <what>"
 *                             when CI=true
 * These and the applicability declarations are the only ways to skip: a
 * test never calls olc_skip with a reason of its own.
 *
 * Helpers: olc_code(r), olc_details(r), olc_details_has(r, part),
 * olc_code_name(code), olc_backend_name(b), olc_impl_is_llvm().
 * olc_check_library(sym): checks that the ol* function sym comes from the
 * library named by OFFLOAD_EXPECT_LIB (olc_check_library_is: from `want`).
 *
 * Quiet checks, for hot loops: OLC_QUIET_CHECK(cond, fmt, ...) counts a
 * failure (printing the first 20) and nothing when it holds.
 * OLC_EQ_ARRAY(arr, n, expr) compares n elements with expr of the index i
 * (one check for the whole array). OLC_VF(cond) is the Details text of a
 * validation-layer failure, "validation failure: <cond>".
 *
 * Device fixture: oldevices.h (every device found, or those named by
 * OFFLOAD_TEST_DEVICES; olc_start, olc_next_device), which sets olc_backend
 * and olc_index to the device under test.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef TESTS_C_COMMON_OLCHECK_H
#define TESTS_C_COMMON_OLCHECK_H

/* dladdr and realpath (olc_check_library); the Makefiles also pass
 * -D_GNU_SOURCE, for files that include a system header first */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <OffloadAPI.h>

/* both releases from one source (OLC_RELEASE; the 22.1 spellings of the
 * calls 23.1 changed) */
#include "olrelease.h"

/* Counters: atomic, since threads of a test may check too. */
static atomic_long olc_passed, olc_failed, olc_skipped;
/* The test running now (OLC_RUN sets it). */
static const char *olc_test = "-";
/* The device under test: its backend and index among that backend's
 * devices. Suites without a device fixture test the host device. */
static ol_platform_backend_t olc_backend = OL_PLATFORM_BACKEND_HOST;
static unsigned olc_index;

/* ------------------------------------------------------------ names --- */

static inline const char *olc_code_name(unsigned c) {
  static const char *const n[] = {
      "OL_ERRC_SUCCESS",        "OL_ERRC_UNKNOWN",
      "OL_ERRC_HOST_IO",        "OL_ERRC_INVALID_BINARY",
      "OL_ERRC_INVALID_NULL_POINTER", "OL_ERRC_INVALID_ARGUMENT",
      "OL_ERRC_NOT_FOUND",      "OL_ERRC_OUT_OF_RESOURCES",
      "OL_ERRC_INVALID_SIZE",   "OL_ERRC_INVALID_ENUMERATION",
      "OL_ERRC_HOST_TOOL_NOT_FOUND", "OL_ERRC_INVALID_VALUE",
      "OL_ERRC_UNIMPLEMENTED",  "OL_ERRC_UNSUPPORTED",
      "OL_ERRC_ASSEMBLE_FAILURE", "OL_ERRC_COMPILE_FAILURE",
      "OL_ERRC_LINK_FAILURE",   "OL_ERRC_BACKEND_FAILURE",
      "OL_ERRC_UNINITIALIZED",  "OL_ERRC_INVALID_NULL_HANDLE",
      "OL_ERRC_INVALID_PLATFORM", "OL_ERRC_INVALID_DEVICE",
      "OL_ERRC_INVALID_QUEUE",  "OL_ERRC_INVALID_EVENT",
      "OL_ERRC_SYMBOL_KIND"};
  return c < sizeof n / sizeof n[0] ? n[c] : "(unknown code)";
}

static inline const char *olc_backend_name(ol_platform_backend_t b) {
  switch (b) {
  case OL_PLATFORM_BACKEND_HOST:
    return "host";
  case OL_PLATFORM_BACKEND_CUDA:
    return "cuda";
  case OL_PLATFORM_BACKEND_AMDGPU:
    return "amdgpu";
  case OL_PLATFORM_BACKEND_LEVEL_ZERO:
    return "level_zero";
  default:
    return "unknown";
  }
}

/* True when the tests run against LLVM's library (OFFLOAD_TEST_IMPL=llvm). */
static inline bool olc_impl_is_llvm(void) {
  const char *v = getenv("OFFLOAD_TEST_IMPL");
  return v && strcmp(v, "llvm") == 0;
}

static inline unsigned olc_code(ol_result_t r) { return r ? (unsigned)r->Code : 0u; }

static inline const char *olc_details(ol_result_t r) {
  if (!r)
    return "(success, no details)";
  return r->Details ? r->Details : "(NULL details)";
}

/* Whether r is an error whose Details contain part. */
static inline bool olc_details_has(ol_result_t r, const char *part) {
  return r != NULL && r->Details != NULL && strstr(r->Details, part) != NULL;
}

/* ------------------------------------------------------- reporting --- */

static inline void olc_report(const char *kind, const char *file, int line, const char *fmt,
                              va_list ap) {
  /* one printf per line part under a lock, so threads do not interleave */
  static atomic_flag lock = ATOMIC_FLAG_INIT;
  while (atomic_flag_test_and_set(&lock)) {
  }
  printf("%s %s:%d (%s) on %s %s:%u: ", kind, file, line, olc_test,
         olc_impl_is_llvm() ? "llvm" : "ours", olc_backend_name(olc_backend), olc_index);
  vprintf(fmt, ap);
  printf("\n");
  fflush(stdout);
  atomic_flag_clear(&lock);
}

/* Counts a failure and prints it. */
static inline void olc_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  atomic_fetch_add(&olc_failed, 1);
  va_start(ap, fmt);
  olc_report("FAIL", file, line, fmt, ap);
  va_end(ap);
}

/* Counts a skipped check (or the skipped rest of a test) with its reason. */
static inline void olc_skip(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  atomic_fetch_add(&olc_skipped, 1);
  va_start(ap, fmt);
  olc_report("SKIP", file, line, fmt, ap);
  va_end(ap);
}

static inline void olc_pass(void) { atomic_fetch_add(&olc_passed, 1); }

/* ---------------------------------------------------- applicability --- */

enum {
  OLC_OURS = 1u << 0,
  OLC_LLVM = 1u << 1,
  OLC_HOST = 1u << 2,
  OLC_CUDA = 1u << 3,
  OLC_AMDGPU = 1u << 4,
  OLC_GPU = OLC_CUDA | OLC_AMDGPU,
};
#define OLC_IMPL_BITS (OLC_OURS | OLC_LLVM)
#define OLC_BACKEND_BITS (OLC_HOST | OLC_CUDA | OLC_AMDGPU)

static inline unsigned olc_backend_bit(ol_platform_backend_t b) {
  switch (b) {
  case OL_PLATFORM_BACKEND_HOST:
    return OLC_HOST;
  case OL_PLATFORM_BACKEND_CUDA:
    return OLC_CUDA;
  case OL_PLATFORM_BACKEND_AMDGPU:
    return OLC_AMDGPU;
  default:
    return 0;
  }
}

/* Whether `set` applies to the library and device under test. */
/* The device under test is a remote device (docs/remote.md; set by
 * oldevices.h). A remote host device is not OLC_HOST: the checks marked so
 * reach the host device's memory with this process's CPU. */
static bool olc_remote;

static inline bool olc_applies(unsigned set) {
  unsigned impl = olc_impl_is_llvm() ? OLC_LLVM : OLC_OURS;
  if ((set & OLC_IMPL_BITS) && !(set & impl))
    return false;
  unsigned b = olc_backend_bit(olc_backend);
  if (olc_remote && b == OLC_HOST)
    b = 0;
  if ((set & OLC_BACKEND_BITS) && !(set & b))
    return false;
  return true;
}

/* The set as words, e.g. "ours", "host", "ours on cuda, amdgpu". */
static inline const char *olc_set_name(unsigned set, char *buf, size_t n) {
  static const struct {
    unsigned bit;
    const char *name;
  } names[] = {{OLC_OURS, "ours"},   {OLC_LLVM, "llvm"},     {OLC_HOST, "host"},
               {OLC_CUDA, "cuda"},   {OLC_AMDGPU, "amdgpu"}};
  size_t at = 0;
  buf[0] = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if ((set & names[i].bit) && at < n)
      at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? ", " : "", names[i].name);
  return buf;
}

static inline bool olc_only(unsigned set, const char *reason, const char *file, int line) {
  if (olc_applies(set))
    return true;
  char b[64];
  olc_skip(file, line, "only on %s: %s", olc_set_name(set, b, sizeof b), reason);
  return false;
}

static inline bool olc_known_diff_at(unsigned set, const char *reason, const char *file,
                                     int line) {
  if (!olc_applies(set))
    return false;
  char b[64];
  static atomic_flag lock = ATOMIC_FLAG_INIT;
  while (atomic_flag_test_and_set(&lock)) {
  }
  printf("DIFF %s:%d (%s) on %s %s:%u: known difference on %s: %s\n", file, line, olc_test,
         olc_impl_is_llvm() ? "llvm" : "ours", olc_backend_name(olc_backend), olc_index,
         olc_set_name(set, b, sizeof b), reason);
  fflush(stdout);
  atomic_flag_clear(&lock);
  return true;
}

/* Whether CI=true (a missing build prerequisite is then a failure). */
static inline bool olc_ci(void) {
  const char *v = getenv("CI");
  return v && strcmp(v, "true") == 0;
}

static inline bool olc_needs(bool cond, bool prereq, const char *file, int line,
                             const char *fmt, ...) {
  if (cond)
    return true;
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (prereq && olc_ci()) {
    olc_fail(file, line, "missing prerequisite: %s (CI=true requires it)", what);
    return false;
  }
  olc_skip(file, line, "needs %s", what);
  return false;
}

#define OLC_NEEDS(cond, ...) olc_needs((cond), false, __FILE__, __LINE__, __VA_ARGS__)
#define OLC_PREREQ(cond, ...) olc_needs((cond), true, __FILE__, __LINE__, __VA_ARGS__)

/* In a test function: the rest of it applies to `set` only. */
#define OLC_ONLY(set, reason)                                                  \
  do {                                                                         \
    if (!olc_only((set), (reason), __FILE__, __LINE__))                        \
      return;                                                                  \
  } while (0)
#define olc_known_diff(set, reason) olc_known_diff_at((set), (reason), __FILE__, __LINE__)
/* True where `set` applies; elsewhere counts one skip with the reason:
 * `if (OLC_ON(OLC_HOST, "its 1 MiB limit")) ERR(...);` */
#define OLC_ON(set, reason) olc_only((set), (reason), __FILE__, __LINE__)

/* ----------------------------------------------------------- checks --- */

static inline bool olc_ok(ol_result_t r, const char *call, const char *file, int line) {
  if (!r) {
    olc_pass();
    return true;
  }
  olc_fail(file, line, "%s: expected OL_SUCCESS, got %s (%u) \"%s\"", call,
           olc_code_name(olc_code(r)), olc_code(r), olc_details(r));
  return false;
}

/* Error `code` expected; with `details` the Details text must equal it
 * (contains false) or contain it (contains true). */
static inline bool olc_err(ol_result_t r, unsigned code, const char *details, bool contains,
                           const char *call, const char *file, int line) {
  bool ok = r != NULL && olc_code(r) == code;
  if (ok && details) {
    const char *d = r->Details;
    ok = d != NULL && (contains ? strstr(d, details) != NULL : strcmp(d, details) == 0);
  }
  if (ok) {
    olc_pass();
    return true;
  }
  olc_fail(file, line, "%s: expected %s (%u)%s%s%s, got %s (%u) \"%s\"", call,
           olc_code_name(code), code, details ? (contains ? " containing \"" : " \"") : "",
           details ? details : "", details ? "\"" : "", olc_code_name(olc_code(r)),
           olc_code(r), olc_details(r));
  return false;
}

static inline bool olc_true(bool c, const char *what, const char *file, int line) {
  if (c) {
    olc_pass();
    return true;
  }
  olc_fail(file, line, "condition false: %s", what);
  return false;
}

static inline bool olc_eq(uint64_t got, uint64_t want, const char *what, const char *file,
                          int line) {
  if (got == want) {
    olc_pass();
    return true;
  }
  olc_fail(file, line,
           "%s: expected %" PRIu64 " (%#" PRIx64 "), got %" PRIu64 " (%#" PRIx64 ")", what,
           want, want, got, got);
  return false;
}

static inline bool olc_ptr_eq(const void *got, const void *want, const char *what,
                              const char *file, int line) {
  if (got == want) {
    olc_pass();
    return true;
  }
  olc_fail(file, line, "%s: expected pointer %p, got %p", what, want, got);
  return false;
}

static inline bool olc_streq(const char *got, const char *want, const char *what,
                             const char *file, int line) {
  if (got && want && strcmp(got, want) == 0) {
    olc_pass();
    return true;
  }
  olc_fail(file, line, "%s: expected \"%s\", got \"%s\"", what, want ? want : "(null)",
           got ? got : "(null)");
  return false;
}

#define OLC_OK(call) olc_ok((call), #call, __FILE__, __LINE__)
#define OLC_ERR(call, code, details)                                           \
  olc_err((call), (unsigned)(code), (details), false, #call, __FILE__, __LINE__)
#define OLC_ERR_HAS(call, code, part)                                          \
  olc_err((call), (unsigned)(code), (part), true, #call, __FILE__, __LINE__)
#define OLC_ERR_CODE(call, code)                                               \
  olc_err((call), (unsigned)(code), NULL, false, #call, __FILE__, __LINE__)
#define OLC_TRUE(cond) olc_true((cond), #cond, __FILE__, __LINE__)
#define OLC_EQ(got, want)                                                      \
  olc_eq((uint64_t)(got), (uint64_t)(want), #got " == " #want, __FILE__, __LINE__)
#define OLC_PTR_EQ(got, want)                                                  \
  olc_ptr_eq((const void *)(got), (const void *)(want), #got " == " #want, __FILE__, __LINE__)
#define OLC_STREQ(got, want) olc_streq((got), (want), #got " == " #want, __FILE__, __LINE__)
/* A condition with its own failure text (printf format). */
static inline bool olc_check(bool c, const char *file, int line, const char *fmt, ...) {
  if (c) {
    olc_pass();
    return true;
  }
  va_list ap;
  atomic_fetch_add(&olc_failed, 1);
  va_start(ap, fmt);
  olc_report("FAIL", file, line, fmt, ap);
  va_end(ap);
  return false;
}
#define OLC_CHECK(cond, ...) olc_check((cond), __FILE__, __LINE__, __VA_ARGS__)

/* A check that counts only its failures, printing the first 20 of the
 * process (for hot loops, where one pass per iteration would drown the
 * totals). */
#define OLC_QUIET_CHECK(cond, ...)                                             \
  do {                                                                         \
    if (!(cond)) {                                                             \
      if (atomic_load(&olc_failed) < 20)                                       \
        olc_fail(__FILE__, __LINE__, __VA_ARGS__);                             \
      else                                                                     \
        atomic_fetch_add(&olc_failed, 1);                                      \
    }                                                                          \
  } while (0)

/* One check that n elements of arr (uint32_t, uint64_t, ...) equal expr,
 * computed from the index i; a failure names the first bad one. */
#define OLC_EQ_ARRAY(arr, n, expr)                                             \
  do {                                                                         \
    size_t olc_bad_ = 0, olc_first_ = 0;                                       \
    for (size_t i = 0; i < (size_t)(n); i++)                                   \
      if ((uint64_t)(arr)[i] != (uint64_t)(expr)) {                            \
        if (!olc_bad_++)                                                       \
          olc_first_ = i;                                                      \
      }                                                                        \
    if (!olc_bad_) {                                                           \
      olc_pass();                                                              \
    } else {                                                                   \
      size_t i = olc_first_;                                                   \
      olc_fail(__FILE__, __LINE__,                                             \
               "%s[i] != %s at %zu of %zu entries; first at i=%zu: got "       \
               "%" PRIu64 ", wanted %" PRIu64,                                 \
               #arr, #expr, olc_bad_, (size_t)(n), i, (uint64_t)(arr)[i],      \
               (uint64_t)(expr));                                              \
    }                                                                          \
  } while (0)

/* The Details text of a validation-layer failure. */
#define OLC_VF(cond) "validation failure: " cond

/* Checks that `sym` (an ol* function) comes from the library `want` (no
 * check when want is NULL or empty), and prints the library in use. A copy
 * of LLVM's library sits in the default search path
 * (/lib/x86_64-linux-gnu), so a missing or misnamed library directory would
 * otherwise go unnoticed. olc_check_library(sym): want is
 * $OFFLOAD_EXPECT_LIB (set by the lifecycle Makefile). */
static inline void olc_check_library_is(void *sym, const char *want) {
  Dl_info info;
  if (dladdr(sym, &info) == 0 || info.dli_fname == NULL) {
    OLC_CHECK(false, "dladdr found no library for the ol* symbol");
    return;
  }
  char have_real[PATH_MAX], want_real[PATH_MAX];
  if (realpath(info.dli_fname, have_real) == NULL)
    snprintf(have_real, sizeof have_real, "%s", info.dli_fname);
  printf("library in use: %s\n", have_real);
  if (want == NULL || want[0] == '\0')
    return;
  if (realpath(want, want_real) == NULL)
    snprintf(want_real, sizeof want_real, "%s", want);
  OLC_CHECK(strcmp(have_real, want_real) == 0, "library in use is %s, expected %s", have_real,
            want_real);
}

static inline void olc_check_library(void *sym) {
  olc_check_library_is(sym, getenv("OFFLOAD_EXPECT_LIB"));
}

/* Announces a test (flushed, so that the last line before a crash names
 * it) and runs it. No signal handlers: our library is a Go c-shared object
 * whose runtime owns SIGSEGV. */
#define OLC_RUN(fn)                                                            \
  do {                                                                         \
    olc_test = #fn;                                                            \
    printf("  %s\n", #fn);                                                     \
    fflush(stdout);                                                            \
    fn();                                                                      \
    fflush(stdout);                                                            \
  } while (0)
#define OLC_RUN_ON(fn, set, reason)                                            \
  do {                                                                         \
    olc_test = #fn;                                                            \
    if (olc_only((set), (reason), __FILE__, __LINE__))                         \
      OLC_RUN(fn);                                                             \
  } while (0)

/* The closing line; area NULL leaves out "<area>: ". */
static inline int olc_summary(const char *area) {
  long p = atomic_load(&olc_passed), f = atomic_load(&olc_failed),
       s = atomic_load(&olc_skipped);
  if (area)
    printf("%s: ", area);
  printf("%ld passed, %ld failed, %ld skipped\n", p, f, s);
  fflush(stdout);
  return f ? 1 : 0;
}

#endif /* TESTS_C_COMMON_OLCHECK_H */
