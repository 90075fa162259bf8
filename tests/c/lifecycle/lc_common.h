/* Shared helpers for the lifecycle tests (tests/c/lifecycle).
 *
 * Every test binary counts its own checks and ends with the line
 *   "<passed> passed, <failed> failed"
 * and exits non-zero if anything failed.  The Makefile adds those lines up.
 */
#ifndef LC_COMMON_H
#define LC_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, realpath, fork, alarm */
#endif

#include <OffloadAPI.h>

#include <dlfcn.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_long lc_passed;
static atomic_long lc_failed;

/* Record one check.  Failures are printed with their location. */
#define LC_CHECK(cond, ...)                                                    \
  do {                                                                         \
    if (cond) {                                                                \
      atomic_fetch_add(&lc_passed, 1);                                         \
    } else {                                                                   \
      atomic_fetch_add(&lc_failed, 1);                                         \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                     \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
    }                                                                          \
  } while (0)

/* Check without counting successes (for hot loops): only failures are
 * counted, and at most the first 20 are printed. */
#define LC_QUIET_CHECK(cond, ...)                                              \
  do {                                                                         \
    if (!(cond)) {                                                             \
      long lc_n_ = atomic_fetch_add(&lc_failed, 1);                            \
      if (lc_n_ < 20) {                                                        \
        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                   \
        fprintf(stderr, __VA_ARGS__);                                          \
        fputc('\n', stderr);                                                   \
      }                                                                        \
    }                                                                          \
  } while (0)

static inline unsigned lc_code(ol_result_t r) {
  return r == NULL ? 0u : (unsigned)r->Code;
}

static inline const char *lc_details(ol_result_t r) {
  if (r == NULL)
    return "(success)";
  return r->Details ? r->Details : "(null Details)";
}

static inline bool lc_details_has(ol_result_t r, const char *needle) {
  return r != NULL && r->Details != NULL && strstr(r->Details, needle) != NULL;
}

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

static inline int lc_finish(void) {
  long p = atomic_load(&lc_passed), f = atomic_load(&lc_failed);
  printf("%ld passed, %ld failed\n", p, f);
  fflush(stdout);
  return f == 0 ? 0 : 1;
}

/* True when the tests run against LLVM's library (ours-only checks skip). */
static inline bool lc_impl_is_llvm(void) {
  const char *v = getenv("OFFLOAD_TEST_IMPL");
  return v != NULL && strcmp(v, "llvm") == 0;
}

/* For the tests linked against the library: checks that `sym` (an ol*
 * function) comes from $OFFLOAD_EXPECT_LIB.  A copy of LLVM's library sits in
 * the default search path (/lib/x86_64-linux-gnu), so a missing or misnamed
 * library directory would otherwise go unnoticed. */
static inline void lc_check_library_is(void *sym, const char *want) {
  Dl_info info;
  if (dladdr(sym, &info) == 0 || info.dli_fname == NULL) {
    LC_CHECK(false, "dladdr found no library for the ol* symbol");
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
  LC_CHECK(strcmp(have_real, want_real) == 0,
           "library in use is %s, expected %s", have_real, want_real);
}

static inline void lc_check_library(void *sym) {
  lc_check_library_is(sym, getenv("OFFLOAD_EXPECT_LIB"));
}

#endif
