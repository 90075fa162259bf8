/* The conformance tests' names for the checks of tests/c/common/olcheck.h
 * (one assertion harness for all C suites), and their helpers.
 *
 * Every CHECK_* macro counts one assertion.  A failing assertion prints
 *   FAIL <file>:<line> (<test>) on <target>: <what>: expected ..., got ...
 * to stdout and execution continues.  check_summary() prints the line
 *   <area>: N passed, N failed, N skipped
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

#include "olcheck.h"

/* The conformance names of the olcheck.h checks. */
#define chk_errc_name olc_code_name
#define chk_code olc_code
#define chk_details olc_details
#define CHECK_SUCCESS(call) ((void)OLC_OK(call))
/* Code and exact Details text. */
#define CHECK_ERR(call, code, details) ((void)OLC_ERR(call, code, details))
/* Code and a Details substring. */
#define CHECK_ERR_CONTAINS(call, code, part) ((void)OLC_ERR_HAS(call, code, part))
/* Code only (Details not specified by the reference). */
#define CHECK_ERR_CODE(call, code) ((void)OLC_ERR_CODE(call, code))
#define CHECK(cond) ((void)OLC_TRUE(cond))
#define CHECK_EQ(got, want) ((void)OLC_EQ(got, want))
#define CHECK_PTR_EQ(got, want) ((void)OLC_PTR_EQ(got, want))
#define CHECK_STREQ(got, want) ((void)OLC_STREQ(got, want))

/* Validation-layer Details texts. */
#define VF(cond) "validation failure: " cond

#define RUN_TEST(fn) OLC_RUN(fn)
/* Tests of our library only (LLVM's differs, lacks it or crashes): a skip
 * with the reason against LLVM's library. */
#define RUN_TEST_OURS(fn, reason) OLC_RUN_ON(fn, OLC_OURS, reason)

#define check_summary(area) olc_summary(area)

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
