/* Device fixture and helpers of the device conformance suite of
 * liboffload-go, on the checks and counters of tests/c/common/olcheck.h
 * (OK, ERR, TRUE, EQ are its OLC_OK, OLC_ERR_HAS, OLC_TRUE, OLC_EQ).
 *
 * Every test program runs its tests once per selected device. The devices
 * come from the environment variable OFFLOAD_TEST_DEVICES: a comma list of
 * `backend` (every device of that backend) or `backend:index` (the index-th
 * device of that backend, counted in olIterateDevices order), with backend
 * one of host, cuda, amdgpu; or `all`. Unset or empty: every device found.
 * A name that matches no device is a failure ("no device matches ..."),
 * never a skip. Each device is announced as
 *   -- device <backend>:<index> (<name>)
 * and the tests run with hc_dev set to it. hc_host is always the host
 * device: the "device" of plain host memory in olMemcpy.
 *
 * On a device that is not the host device, tests never touch DEVICE
 * allocations with the CPU: they go through olMemcpy (hc_write, hc_read,
 * hc_memset). HOST and MANAGED allocations may be touched. Checks that only
 * make sense on the host device (its own image format, ELF damage, host
 * threads and limits) start with HOST_ONLY("reason") (OLC_ONLY(OLC_HOST,
 * reason); OLC_ONLY takes any set of backends): elsewhere they count as
 * skipped, with the reason, never as passed. Validation-layer cases (NULL
 * handles and pointers, garbage handles) are not repeated here: they do not
 * depend on the device, and tests/c/conformance checks them once.
 *
 * Assertions never abort: a failed one prints
 *   FAIL <file>:<line> (<test>) on <impl> <backend>:<index>: <what>
 * and the test goes on (a test may return early when later steps would only
 * crash). A skip prints
 *   SKIP <file>:<line> (<test>) on <impl> <backend>:<index>: <reason>
 * hc_finish() prints "<area>: N passed, N failed, N skipped" and returns the
 * exit status. Each test is announced before it runs, so the last line
 * printed before a crash or a hang names the culprit.
 *
 * Kernel images are loaded from KERNEL_DIR (a -D from the Makefile), or
 * from the directory given as argv[1]: <name>.so for the host device,
 * <name>.ptx for CUDA devices, <name>.<gfx>.hsaco for AMDGPU devices (gfx
 * from OL_DEVICE_INFO_NAME). A missing image is a failure that names the
 * file: it is a missing prerequisite of the suite. Against the driver
 * doubles, OFFLOAD_TEST_CUDA_IMAGE=fakecubin and
 * OFFLOAD_TEST_AMDGPU_IMAGE=fakehsaco replace the ptx and hsaco extensions
 * (host code dressed as GPU images, which the doubles run).
 *
 * To run the suite on a GPU machine without Go or compilers: `make
 * gpu-check` at the top level packs build/gpu-check/ (library, these
 * programs, the images, run.sh); copy it there and run gpu-check/run.sh.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef DEVICE_TESTS_HCHECK_H
#define DEVICE_TESTS_HCHECK_H

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

#include "olcheck.h"
#include "oldevices.h"

#ifndef KERNEL_DIR
#define KERNEL_DIR "."
#endif

/* The checks and counters are those of tests/c/common/olcheck.h; these
 * are the device suite's names for them. */
#define hc_pass olc_passed
#define hc_fail olc_failed
#define hc_skip olc_skipped
#define hc_name olc_test
#define hc_backend olc_backend /* hc_dev's backend */
#define hc_index olc_index     /* hc_dev's index among its backend's devices */
#define hc_failed olc_fail
#define hc_skipped olc_skip
#define hc_backend_name olc_backend_name
static const char *hc_kernel_dir = KERNEL_DIR;
static ol_device_handle_t hc_dev;  /* the device under test (hc_next_device) */
static ol_device_handle_t hc_host; /* the host device, always present */
static bool hc_on_host;            /* hc_dev is the host device */
static char hc_dev_name[256];      /* hc_dev's OL_DEVICE_INFO_NAME */

#define HC_BIG 0x7fffffff /* the FORCE_UINT32 value of every enum */

/* The result code's name without "OL_ERRC_". */
static inline const char *hc_code_name(unsigned c) {
  const char *n = olc_code_name(c);
  return strncmp(n, "OL_ERRC_", 8) == 0 ? n + 8 : "?";
}

/* At the start of a test: the rest of it runs on the host device only
 * (OLC_ONLY(OLC_HOST, reason): elsewhere one skip with the reason). */
#define HOST_ONLY(reason) OLC_ONLY(OLC_HOST, reason)

#define OK(call) OLC_OK(call)
/* Error `code`; `part` (if not NULL) must occur in the Details. */
#define ERR(call, code, part)                                                  \
  olc_err((call), (unsigned)(code), (part), true, #call, __FILE__, __LINE__)
#define TRUE(cond) OLC_TRUE(cond)
#define EQ(got, want) OLC_EQ(got, want)
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

#define RUN(fn) OLC_RUN(fn)

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

/* The device fixture is tests/c/common/oldevices.h; its names here. */
#define HC_MAX_DEVICES OLC_MAX_DEVICES
#define hc_find_host olc_find_host
#define hc_devsel olc_devsel
#define hc_devlist olc_devlist
#define hc_sel olc_sel
#define hc_nsel olc_nsel
static int hc_cur = -1; /* the selection under test (hc_next_device) */
#define hc_device_backend olc_device_backend
#define hc_list_devices olc_list_devices
#define hc_select_devices olc_select_devices

/* Finds the handles of the current selection again (after a new olInit):
 * hc_dev, hc_host and their properties. */
static inline bool hc_refind(void) {
  hc_host = NULL;
  olIterateDevices(hc_find_host, &hc_host);
  if (hc_cur < 0 || hc_cur >= hc_nsel)
    return false;
  hc_devlist l;
  hc_list_devices(&l);
  hc_dev = NULL;
  for (int i = 0; i < l.n; i++)
    if (l.sel[i].backend == hc_sel[hc_cur].backend && l.sel[i].index == hc_sel[hc_cur].index)
      hc_dev = l.dev[i];
  hc_backend = hc_sel[hc_cur].backend;
  hc_index = hc_sel[hc_cur].index;
  hc_on_host = hc_dev != NULL && hc_dev == hc_host;
  hc_dev_name[0] = 0;
  if (hc_dev)
    olGetDeviceInfo(hc_dev, OL_DEVICE_INFO_NAME, sizeof hc_dev_name, hc_dev_name);
  return hc_dev != NULL;
}

/* olInit, then find the host device and read the device selection. */
static inline void hc_start(int argc, char **argv) {
  if (argc > 1)
    hc_kernel_dir = argv[1];
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (!OK(olInit()))
    exit(2);
  hc_host = NULL;
  OK(olIterateDevices(hc_find_host, &hc_host));
  if (!TRUE(hc_host != NULL)) {
    printf("no host device: nothing can be tested\n");
    exit(2);
  }
  hc_select_devices();
  hc_cur = -1;
  hc_dev = NULL;
}

/* Moves to the next selected device: announces it and sets hc_dev.
 * false when all have been done. Use as `while (hc_next_device()) {...}`. */
static inline bool hc_next_device(void) {
  hc_name = "-";
  while (++hc_cur < hc_nsel) {
    if (hc_refind()) {
      printf("-- device %s:%u (%s)\n", hc_backend_name(hc_backend), hc_index, hc_dev_name);
      fflush(stdout);
      return true;
    }
    hc_failed(__FILE__, __LINE__, "device %s:%u is gone", hc_backend_name(hc_sel[hc_cur].backend),
              hc_sel[hc_cur].index);
  }
  hc_dev = hc_host;
  hc_on_host = true;
  hc_backend = OL_PLATFORM_BACKEND_HOST;
  hc_index = 0;
  return false;
}

static inline int hc_finish(const char *area) {
  hc_name = "shutdown";
  OK(olShutDown());
  return olc_summary(area);
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

/* The path of kernel image <name> for the device under test: <name>.so on
 * the host device, <name>.ptx on CUDA, <name>.<gfx>.hsaco on AMDGPU. */
static inline bool hc_image_path(const char *name, char *path, size_t size) {
  switch (hc_on_host ? OL_PLATFORM_BACKEND_HOST : hc_backend) {
  case OL_PLATFORM_BACKEND_HOST:
    snprintf(path, size, "%s/%s.so", hc_kernel_dir, name);
    return true;
  case OL_PLATFORM_BACKEND_CUDA: {
    /* OFFLOAD_TEST_CUDA_IMAGE=fakecubin: the CUDA driver double's images
     * (host code dressed as cubins, which it runs) */
    const char *ext = getenv("OFFLOAD_TEST_CUDA_IMAGE");
    snprintf(path, size, "%s/%s.%s", hc_kernel_dir, name, ext && *ext ? ext : "ptx");
    return true;
  }
  case OL_PLATFORM_BACKEND_AMDGPU: {
    /* "gfx90a" or "gfx90a:sramecc+:xnack-": the processor is before any ':';
     * OFFLOAD_TEST_AMDGPU_IMAGE=fakehsaco: the HSA runtime double's images
     * (host code dressed as code objects, which it runs) */
    const char *ext = getenv("OFFLOAD_TEST_AMDGPU_IMAGE");
    size_t n = strcspn(hc_dev_name, ":");
    snprintf(path, size, "%s/%s.%.*s.%s", hc_kernel_dir, name, (int)n, hc_dev_name, ext && *ext ? ext : "hsaco");
    return true;
  }
  default:
    return false;
  }
}

/* The bytes of kernel image <name> for the device under test. A missing
 * image is a FAIL naming the file and how to build it. */
static inline void *hc_image(const char *name, size_t *size) {
  char path[4096];
  if (!hc_image_path(name, path, sizeof path)) {
    hc_failed(__FILE__, __LINE__, "no kernel image format known for device %s:%u (%s)",
              hc_backend_name(hc_backend), hc_index, hc_dev_name);
    return NULL;
  }
  if (access(path, R_OK) != 0) {
    hc_failed(__FILE__, __LINE__,
              "missing prerequisite: no kernel image %s for device %s:%u (%s); GPU images are "
              "built with clang-22 (package clang-22) by make -C tests/c/device kernels",
              path, hc_backend_name(hc_backend), hc_index, hc_dev_name);
    return NULL;
  }
  return hc_read_file(path, size);
}

/* Loads kernel image <name> as a program; NULL (and a FAIL) on error. */
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

/* ------------------------------------- device memory through the API --- */

/* DEVICE memory of a device other than the host device is not touched by
 * the CPU: these copy through olMemcpy (synchronous, NULL queue). */
static inline bool hc_write(void *dev_dst, const void *src, size_t n) {
  return OK(olMemcpy(NULL, dev_dst, hc_dev, src, hc_host, n));
}

static inline bool hc_read(void *dst, const void *dev_src, size_t n) {
  return OK(olMemcpy(NULL, dst, hc_host, dev_src, hc_dev, n));
}

static inline bool hc_memset(void *dev_dst, int byte, size_t n) {
  uint8_t b = (uint8_t)byte;
  return OK(olMemFill(NULL, dev_dst, 1, &b, n));
}

/* One uint32_t of device memory (0xdeadbeef, and a FAIL, if unreadable). */
static inline uint32_t hc_read32(const void *dev_src) {
  uint32_t v = 0xdeadbeefu;
  hc_read(&v, dev_src, sizeof v);
  return v;
}

static inline bool hc_write32(void *dev_dst, uint32_t v) { return hc_write(dev_dst, &v, sizeof v); }

/* A host copy of n bytes of device memory, to be freed; zeroed (and a
 * FAIL) if the copy fails. */
static inline void *hc_fetch(const void *dev_src, size_t n) {
  void *h = calloc(1, n ? n : 1);
  if (h && !hc_read(h, dev_src, n))
    memset(h, 0, n);
  return h;
}

/* Runs fn on n threads at once (at most 64), thread i with the argument
 * base + i * stride bytes, and returns the sum of what they return: each
 * thread's count of failures, as (void *)(intptr_t). */
static inline int hc_threads(int n, void *(*fn)(void *), void *base, size_t stride) {
  pthread_t t[64];
  if (n > 64)
    n = 64;
  for (int i = 0; i < n; i++)
    pthread_create(&t[i], NULL, fn, (char *)base + (size_t)i * stride);
  int bad = 0;
  for (int i = 0; i < n; i++) {
    void *r;
    pthread_join(t[i], &r);
    bad += (int)(intptr_t)r;
  }
  return bad;
}

/* EQ_ARRAY on n elements of type T in DEVICE memory of hc_dev (or a
 * program global): read directly on the host device, else copied out
 * with olMemcpy first. */
#define EQ_DARRAY(T, arr, n, expr)                                             \
  do {                                                                         \
    if (hc_on_host) {                                                          \
      EQ_ARRAY((T *)(arr), (n), (expr));                                       \
    } else {                                                                   \
      T *hc_h_ = hc_fetch((arr), (size_t)(n) * sizeof(T));                     \
      if (hc_h_) {                                                             \
        EQ_ARRAY(hc_h_, (n), (expr));                                          \
        free(hc_h_);                                                           \
      }                                                                        \
    }                                                                          \
  } while (0)

/* Memory of an allocation of `type` made on hc_dev (program globals count
 * as DEVICE): the CPU touches it directly where it may (anything on the
 * host device; HOST and MANAGED memory anywhere), else through olMemcpy.
 * On the host device these are plain memmove/memset, as the tests always
 * did there. */
static inline bool hc_cpu_ok(ol_alloc_type_t type) {
  return hc_on_host || type != OL_ALLOC_TYPE_DEVICE;
}

static inline void hc_put(ol_alloc_type_t type, void *dst, const void *src, size_t n) {
  if (hc_cpu_ok(type))
    memmove(dst, src, n);
  else
    hc_write(dst, src, n);
}

static inline void hc_get(ol_alloc_type_t type, void *dst, const void *src, size_t n) {
  if (hc_cpu_ok(type))
    memmove(dst, src, n);
  else
    hc_read(dst, src, n);
}

static inline void hc_set(ol_alloc_type_t type, void *dst, int byte, size_t n) {
  if (hc_cpu_ok(type))
    memset(dst, byte, n);
  else
    hc_memset(dst, byte, n);
}

/* A buffer a kernel may write, for a host array `h` of n bytes: `h` itself
 * on the host device; elsewhere a DEVICE allocation holding a copy of it.
 * hc_unbuf copies the buffer back into `h` and frees it. */
static inline void *hc_buf(void *h, size_t n) {
  if (hc_on_host)
    return h;
  void *p = hc_alloc(OL_ALLOC_TYPE_DEVICE, n);
  if (p && !hc_write(p, h, n)) {
    olMemFree(p);
    return NULL;
  }
  return p;
}

static inline void hc_unbuf(void *h, void *p, size_t n) {
  if (!p || p == h)
    return;
  hc_read(h, p, n);
  OK(olMemFree(p));
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

#endif /* DEVICE_TESTS_HCHECK_H */
