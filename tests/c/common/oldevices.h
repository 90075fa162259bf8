/* oldevices.h: the device fixture of the C test suites of liboffload-go,
 * on the checks of olcheck.h. The device suite (tests/c/device) runs its
 * tests once per selected device; the conformance suite finds its device
 * here; the lifecycle tests linked against the library find theirs here.
 *
 * Devices. olc_list_devices: every device in olIterateDevices order, each
 * with its backend and its index among that backend's devices ("host:0",
 * "cuda:1"). olc_select_devices: the devices to test, from
 * OFFLOAD_TEST_DEVICES: a comma list of `backend` (every device of that
 * backend) or `backend:index`, with backend one of host, cuda, amdgpu; or
 * `all`. Unset or empty: every device found. A name that matches no device
 * is a failure ("no device matches ..."), never a skip. olc_host_device:
 * the host device (NULL, and no failure, if none); olc_platform_of: a
 * device's platform. No call is made from inside olIterateDevices.
 *
 * Stepping through them. olc_start(argc, argv) initialises and reads the
 * selection; `while (olc_next_device()) { OLC_RUN(test_x); ... }` runs the
 * tests once per selected device, each announced as
 *   -- device <backend>:<index> (<name>)
 * with olc_dev set to it (and olc_backend, olc_index of olcheck.h, which
 * the FAIL and SKIP lines name); olc_host is always the host device: the
 * "device" of plain host memory in olMemcpy. olc_finish(area) shuts down
 * and prints the closing line.
 *
 * On a device that is not the host device, tests never touch DEVICE
 * allocations with the CPU: they go through olMemcpy (olc_write, olc_read,
 * olc_memset, olc_fetch; olc_put/olc_get/olc_set by allocation type;
 * olc_buf/olc_unbuf for a kernel's output). HOST and MANAGED allocations
 * may be touched. Checks that only make sense on some backends declare it
 * (OLC_ONLY(OLC_HOST, reason), OLC_ON, olcheck.h): elsewhere they count as
 * skipped, with the reason, never as passed.
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
 * To run the device suite on a GPU machine without Go or compilers: `make
 * gpu-check` at the top level packs build/gpu-check/ (library, test
 * programs, the images, run.sh); copy it there and run gpu-check/run.sh.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef TESTS_C_COMMON_OLDEVICES_H
#define TESTS_C_COMMON_OLDEVICES_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "olcheck.h"

/* ---------------------------------------------------- device selection --- */

#define OLC_MAX_DEVICES 64

/* A selected device, by backend and index: handles do not survive a full
 * olShutDown, these do. */
typedef struct olc_devsel {
  ol_platform_backend_t backend;
  unsigned index;
} olc_devsel;

static olc_devsel olc_sel[OLC_MAX_DEVICES];
static int olc_nsel;

/* A device's platform; NULL on error. */
static inline ol_platform_handle_t olc_platform_of(ol_device_handle_t d) {
  ol_platform_handle_t p = NULL;
  if (olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, sizeof p, &p) != NULL)
    return NULL;
  return p;
}

static inline ol_platform_backend_t olc_device_backend(ol_device_handle_t d) {
  ol_platform_handle_t p = olc_platform_of(d);
  ol_platform_backend_t b = OL_PLATFORM_BACKEND_UNKNOWN;
  if (p)
    olGetPlatformInfo(p, OL_PLATFORM_INFO_BACKEND, sizeof b, &b);
  return b;
}

/* Every device in olIterateDevices order, with its backend and index. The
 * callback only records the handles: the properties are queried after the
 * iteration, so that no call is made from inside olIterateDevices (LLVM's
 * trace would interleave the lines of such calls with its own). */
typedef struct olc_devlist {
  int n;
  ol_device_handle_t dev[OLC_MAX_DEVICES];
  olc_devsel sel[OLC_MAX_DEVICES];
} olc_devlist;

static inline bool olc_list_fn(ol_device_handle_t d, void *user) {
  olc_devlist *l = user;
  if (l->n >= OLC_MAX_DEVICES)
    return false;
  l->dev[l->n++] = d;
  return true;
}

/* Lists every device into l; the result of olIterateDevices. */
static inline ol_result_t olc_list_devices(olc_devlist *l) {
  l->n = 0;
  ol_result_t r = olIterateDevices(olc_list_fn, l);
  for (int i = 0; i < l->n; i++) {
    ol_platform_backend_t b = olc_device_backend(l->dev[i]);
    unsigned idx = 0;
    for (int j = 0; j < i; j++)
      idx += l->sel[j].backend == b;
    l->sel[i].backend = b;
    l->sel[i].index = idx;
  }
  return r;
}

/* The host device of a list (the one of type HOST), or NULL. */
static inline ol_device_handle_t olc_host_in(const olc_devlist *l) {
  for (int i = 0; i < l->n; i++) {
    ol_device_type_t t;
    if (olGetDeviceInfo(l->dev[i], OL_DEVICE_INFO_TYPE, sizeof t, &t) == NULL &&
        t == OL_DEVICE_TYPE_HOST)
      return l->dev[i];
  }
  return NULL;
}

static inline bool olc_parse_backend(const char *s, size_t n, ol_platform_backend_t *b) {
  static const ol_platform_backend_t all[] = {OL_PLATFORM_BACKEND_HOST, OL_PLATFORM_BACKEND_CUDA,
                                              OL_PLATFORM_BACKEND_AMDGPU,
                                              OL_PLATFORM_BACKEND_LEVEL_ZERO};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    const char *name = olc_backend_name(all[i]);
    if (strlen(name) == n && strncmp(name, s, n) == 0) {
      *b = all[i];
      return true;
    }
  }
  return false;
}

static inline void olc_select(const olc_devsel *s) {
  for (int i = 0; i < olc_nsel; i++)
    if (olc_sel[i].backend == s->backend && olc_sel[i].index == s->index)
      return;
  if (olc_nsel < OLC_MAX_DEVICES)
    olc_sel[olc_nsel++] = *s;
}

/* Reads OFFLOAD_TEST_DEVICES into olc_sel; an entry that matches no device
 * is a failure. */
static inline void olc_select_devices(void) {
  olc_devlist l;
  olc_list_devices(&l);
  const char *env = getenv("OFFLOAD_TEST_DEVICES");
  olc_nsel = 0;
  olc_test = "device selection";
  if (!env || !*env || strcmp(env, "all") == 0) {
    for (int i = 0; i < l.n; i++)
      olc_select(&l.sel[i]);
    return;
  }
  const char *p = env;
  while (*p) {
    size_t len = strcspn(p, ",");
    char item[64];
    snprintf(item, sizeof item, "%.*s", (int)(len < 63 ? len : 63), p);
    p += len + (p[len] == ',');
    if (!*item)
      continue;
    if (strcmp(item, "all") == 0) {
      for (int i = 0; i < l.n; i++)
        olc_select(&l.sel[i]);
      continue;
    }
    char *colon = strchr(item, ':');
    size_t blen = colon ? (size_t)(colon - item) : strlen(item);
    ol_platform_backend_t b;
    char *end = NULL;
    unsigned long idx = colon ? strtoul(colon + 1, &end, 10) : 0;
    if (!olc_parse_backend(item, blen, &b) || (colon && (end == colon + 1 || *end))) {
      olc_fail(__FILE__, __LINE__,
                "OFFLOAD_TEST_DEVICES: \"%s\" is not backend or backend:index (backends: "
                "host, cuda, amdgpu) or all",
                item);
      continue;
    }
    int found = 0;
    for (int i = 0; i < l.n; i++)
      if (l.sel[i].backend == b && (!colon || l.sel[i].index == idx)) {
        olc_select(&l.sel[i]);
        found++;
      }
    if (!found)
      olc_fail(__FILE__, __LINE__, "OFFLOAD_TEST_DEVICES: no device matches %s", item);
  }
}

/* The host device, or NULL. */
static inline ol_device_handle_t olc_host_device(void) {
  olc_devlist l;
  if (olc_list_devices(&l) != NULL)
    return NULL;
  return olc_host_in(&l);
}

/* Whether d is a remote device: its platform's name starts with "remote". */
static inline bool olc_is_remote(ol_device_handle_t d) {
  ol_platform_handle_t pl = NULL;
  char pname[256] = "";
  return olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, sizeof pl, &pl) == NULL &&
         olGetPlatformInfo(pl, OL_PLATFORM_INFO_NAME, sizeof pname, pname) == NULL &&
         strncmp(pname, "remote", 6) == 0;
}

/* ------------------------------------------- stepping through them --- */

#ifndef KERNEL_DIR
#define KERNEL_DIR "."
#endif

static const char *olc_kernel_dir = KERNEL_DIR;
static ol_device_handle_t olc_dev;  /* the device under test (olc_next_device) */
static ol_device_handle_t olc_host; /* the host device, always present */
static bool olc_on_host;            /* olc_dev is the host device */
static char olc_dev_name[256];      /* olc_dev's OL_DEVICE_INFO_NAME */

#define OLC_BIG 0x7fffffff /* the FORCE_UINT32 value of every enum */

/* ------------------------------------------------------------ helpers --- */

static inline double olc_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline void olc_sleep_ms(unsigned ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static int olc_cur = -1; /* the selection under test (olc_next_device) */

/* Finds the handles of the current selection again (after a new olInit):
 * olc_dev, olc_host and their properties. */
static inline bool olc_refind(void) {
  olc_devlist l;
  olc_list_devices(&l);
  olc_host = olc_host_in(&l);
  if (olc_cur < 0 || olc_cur >= olc_nsel)
    return false;
  olc_dev = NULL;
  for (int i = 0; i < l.n; i++)
    if (l.sel[i].backend == olc_sel[olc_cur].backend && l.sel[i].index == olc_sel[olc_cur].index)
      olc_dev = l.dev[i];
  olc_backend = olc_sel[olc_cur].backend;
  olc_index = olc_sel[olc_cur].index;
  olc_on_host = olc_dev != NULL && olc_dev == olc_host;
  olc_remote = olc_dev != NULL && olc_is_remote(olc_dev);
  olc_dev_name[0] = 0;
  if (olc_dev)
    olGetDeviceInfo(olc_dev, OL_DEVICE_INFO_NAME, sizeof olc_dev_name, olc_dev_name);
  return olc_dev != NULL;
}

/* olInit, then find the host device and read the device selection. */
static inline void olc_start(int argc, char **argv) {
  if (argc > 1)
    olc_kernel_dir = argv[1];
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (!OLC_OK(olInit()))
    exit(2);
  olc_devlist l;
  OLC_OK(olc_list_devices(&l));
  olc_host = olc_host_in(&l);
  if (!OLC_TRUE(olc_host != NULL)) {
    printf("no host device: nothing can be tested\n");
    exit(2);
  }
  olc_select_devices();
  olc_cur = -1;
  olc_dev = NULL;
}

/* Moves to the next selected device: announces it and sets olc_dev.
 * false when all have been done. Use as `while (olc_next_device()) {...}`. */
static inline bool olc_next_device(void) {
  olc_test = "-";
  while (++olc_cur < olc_nsel) {
    if (olc_refind()) {
      printf("-- device %s:%u (%s)\n", olc_backend_name(olc_backend), olc_index, olc_dev_name);
      fflush(stdout);
      return true;
    }
    olc_fail(__FILE__, __LINE__, "device %s:%u is gone", olc_backend_name(olc_sel[olc_cur].backend),
              olc_sel[olc_cur].index);
  }
  olc_dev = olc_host;
  olc_on_host = true;
  olc_remote = false;
  olc_backend = OL_PLATFORM_BACKEND_HOST;
  olc_index = 0;
  return false;
}

static inline int olc_finish(const char *area) {
  olc_test = "shutdown";
  OLC_OK(olShutDown());
  return olc_summary(area);
}

/* Reads a whole file; *size gets its length. NULL (and a FAIL) if missing. */
static inline void *olc_read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    olc_fail(__FILE__, __LINE__, "cannot open %s: %s", path, strerror(errno));
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *buf = malloc(n > 0 ? (size_t)n : 1);
  if (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    olc_fail(__FILE__, __LINE__, "short read of %s", path);
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
static inline bool olc_image_path(const char *name, char *path, size_t size) {
  switch (olc_on_host ? OL_PLATFORM_BACKEND_HOST : olc_backend) {
  case OL_PLATFORM_BACKEND_HOST:
    snprintf(path, size, "%s/%s.so", olc_kernel_dir, name);
    return true;
  case OL_PLATFORM_BACKEND_CUDA: {
    /* OFFLOAD_TEST_CUDA_IMAGE=fakecubin: the CUDA driver double's images
     * (host code dressed as cubins, which it runs) */
    const char *ext = getenv("OFFLOAD_TEST_CUDA_IMAGE");
    snprintf(path, size, "%s/%s.%s", olc_kernel_dir, name, ext && *ext ? ext : "ptx");
    return true;
  }
  case OL_PLATFORM_BACKEND_AMDGPU: {
    /* "gfx90a" or "gfx90a:sramecc+:xnack-": the processor is before any ':';
     * OFFLOAD_TEST_AMDGPU_IMAGE=fakehsaco: the HSA runtime double's images
     * (host code dressed as code objects, which it runs) */
    const char *ext = getenv("OFFLOAD_TEST_AMDGPU_IMAGE");
    size_t n = strcspn(olc_dev_name, ":");
    snprintf(path, size, "%s/%s.%.*s.%s", olc_kernel_dir, name, (int)n, olc_dev_name, ext && *ext ? ext : "hsaco");
    return true;
  }
  default:
    return false;
  }
}

/* The bytes of kernel image <name> for the device under test. A missing
 * image is a FAIL naming the file and how to build it. */
static inline void *olc_image(const char *name, size_t *size) {
  char path[4096];
  if (!olc_image_path(name, path, sizeof path)) {
    olc_fail(__FILE__, __LINE__, "no kernel image format known for device %s:%u (%s)",
              olc_backend_name(olc_backend), olc_index, olc_dev_name);
    return NULL;
  }
  if (access(path, R_OK) != 0) {
    olc_fail(__FILE__, __LINE__,
              "missing prerequisite: no kernel image %s for device %s:%u (%s); GPU images are "
              "built with clang-22 (package clang-22) by make -C tests/c/device kernels",
              path, olc_backend_name(olc_backend), olc_index, olc_dev_name);
    return NULL;
  }
  return olc_read_file(path, size);
}

/* Loads kernel image <name> as a program; NULL (and a FAIL) on error. */
static inline ol_program_handle_t olc_program(const char *name) {
  size_t n = 0;
  void *img = olc_image(name, &n);
  if (!img)
    return NULL;
  ol_program_handle_t p = NULL;
  bool ok = OLC_OK(olCreateProgram(olc_dev, img, n, &p));
  free(img);
  return ok ? p : NULL;
}

static inline ol_symbol_handle_t olc_kernel(ol_program_handle_t p, const char *name) {
  ol_symbol_handle_t s = NULL;
  if (!p || !OLC_OK(olGetSymbol(p, name, OL_SYMBOL_KIND_KERNEL, &s)))
    return NULL;
  return s;
}

static inline ol_symbol_handle_t olc_global(ol_program_handle_t p, const char *name,
                                    void **addr, size_t *size) {
  ol_symbol_handle_t s = NULL;
  if (!p || !OLC_OK(olGetSymbol(p, name, OL_SYMBOL_KIND_GLOBAL_VARIABLE, &s)))
    return NULL;
  if (addr && !OLC_OK(olGetSymbolInfo(s, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS,
                                  sizeof *addr, addr)))
    return NULL;
  if (size && !OLC_OK(olGetSymbolInfo(s, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE,
                                  sizeof *size, size)))
    return NULL;
  return s;
}

static inline ol_kernel_launch_size_args_t olc_size1(uint32_t groups, uint32_t size) {
  ol_kernel_launch_size_args_t l;
  memset(&l, 0, sizeof l);
  l.Dimensions = 1;
  l.NumGroups.x = groups, l.NumGroups.y = 1, l.NumGroups.z = 1;
  l.GroupSize.x = size, l.GroupSize.y = 1, l.GroupSize.z = 1;
  l.DynSharedMemory = 0;
  return l;
}

/* olMemAlloc of `type` on d, where a remote device refuses HOST and
 * MANAGED memory (checked: UNSUPPORTED): false then, and *p is NULL. */
static inline bool olc_alloc_on(ol_device_handle_t d, ol_alloc_type_t type, size_t n, void **p) {
  *p = NULL;
  if (type != OL_ALLOC_TYPE_DEVICE && olc_is_remote(d)) {
    OLC_ERR_CODE(olMemAlloc(d, type, n, p), OL_ERRC_UNSUPPORTED);
    *p = NULL;
    return false;
  }
  return OLC_OK(olMemAlloc(d, type, n, p));
}

/* HOST and MANAGED memory of a remote device (a device of another
 * process's machine) are UNSUPPORTED (docs/remote.md): the CPU of this
 * process cannot reach them. A test that needs them starts with
 * OLC_HOST_VISIBLE(): on a remote device it checks that refusal and counts
 * the rest of the test as skipped. */
static inline bool olc_host_visible_at(const char *file, int line) {
  if (!olc_remote)
    return true;
  void *p = NULL;
  OLC_ERR_CODE(olMemAlloc(olc_dev, OL_ALLOC_TYPE_MANAGED, 64, &p), OL_ERRC_UNSUPPORTED);
  OLC_ERR_CODE(olMemAlloc(olc_dev, OL_ALLOC_TYPE_HOST, 64, &p), OL_ERRC_UNSUPPORTED);
  olc_skip(file, line, "needs HOST, MANAGED or registered memory of the device: UNSUPPORTED on a remote device");
  return false;
}
#define OLC_HOST_VISIBLE()                                                     \
  do {                                                                         \
    if (!olc_host_visible_at(__FILE__, __LINE__))                              \
      return;                                                                  \
  } while (0)

static inline void *olc_alloc(ol_alloc_type_t type, size_t size) {
  void *p = NULL;
  if (!OLC_OK(olMemAlloc(olc_dev, type, size, &p)))
    return NULL;
  return p;
}

static inline ol_queue_handle_t olc_queue(void) {
  ol_queue_handle_t q = NULL;
  OLC_OK(olCreateQueue(olc_dev, &q));
  return q;
}

/* ------------------------------------- device memory through the API --- */

/* DEVICE memory of a device other than the host device is not touched by
 * the CPU: these copy through olMemcpy (synchronous, NULL queue). */
static inline bool olc_write(void *dev_dst, const void *src, size_t n) {
  return OLC_OK(olMemcpy(NULL, dev_dst, olc_dev, src, olc_host, n));
}

static inline bool olc_read(void *dst, const void *dev_src, size_t n) {
  return OLC_OK(olMemcpy(NULL, dst, olc_host, dev_src, olc_dev, n));
}

static inline bool olc_memset(void *dev_dst, int byte, size_t n) {
  uint8_t b = (uint8_t)byte;
  return OLC_OK(olMemFill(NULL, dev_dst, 1, &b, n));
}

/* One uint32_t of device memory (0xdeadbeef, and a FAIL, if unreadable). */
static inline uint32_t olc_read32(const void *dev_src) {
  uint32_t v = 0xdeadbeefu;
  olc_read(&v, dev_src, sizeof v);
  return v;
}

static inline bool olc_write32(void *dev_dst, uint32_t v) { return olc_write(dev_dst, &v, sizeof v); }

/* A host copy of n bytes of device memory, to be freed; zeroed (and a
 * FAIL) if the copy fails. */
static inline void *olc_fetch(const void *dev_src, size_t n) {
  void *h = calloc(1, n ? n : 1);
  if (h && !olc_read(h, dev_src, n))
    memset(h, 0, n);
  return h;
}

/* Runs fn on n threads at once (at most 64), thread i with the argument
 * base + i * stride bytes, and returns the sum of what they return: each
 * thread's count of failures, as (void *)(intptr_t). */
static inline int olc_threads(int n, void *(*fn)(void *), void *base, size_t stride) {
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

/* EQ_ARRAY on n elements of type T in DEVICE memory of olc_dev (or a
 * program global): read directly on the host device, else copied out
 * with olMemcpy first. */
#define OLC_EQ_DARRAY(T, arr, n, expr)                                             \
  do {                                                                         \
    if (olc_on_host) {                                                          \
      OLC_EQ_ARRAY((T *)(arr), (n), (expr));                                       \
    } else {                                                                   \
      T *olc_h_ = olc_fetch((arr), (size_t)(n) * sizeof(T));                     \
      if (olc_h_) {                                                             \
        OLC_EQ_ARRAY(olc_h_, (n), (expr));                                          \
        free(olc_h_);                                                           \
      }                                                                        \
    }                                                                          \
  } while (0)

/* Memory of an allocation of `type` made on olc_dev (program globals count
 * as DEVICE): the CPU touches it directly where it may (anything on the
 * host device; HOST and MANAGED memory anywhere), else through olMemcpy.
 * On the host device these are plain memmove/memset, as the tests always
 * did there. */
static inline bool olc_cpu_ok(ol_alloc_type_t type) {
  return olc_on_host || type != OL_ALLOC_TYPE_DEVICE;
}

static inline void olc_put(ol_alloc_type_t type, void *dst, const void *src, size_t n) {
  if (olc_cpu_ok(type))
    memmove(dst, src, n);
  else
    olc_write(dst, src, n);
}

static inline void olc_get(ol_alloc_type_t type, void *dst, const void *src, size_t n) {
  if (olc_cpu_ok(type))
    memmove(dst, src, n);
  else
    olc_read(dst, src, n);
}

static inline void olc_set(ol_alloc_type_t type, void *dst, int byte, size_t n) {
  if (olc_cpu_ok(type))
    memset(dst, byte, n);
  else
    olc_memset(dst, byte, n);
}

/* A buffer a kernel may write, for a host array `h` of n bytes: `h` itself
 * on the host device; elsewhere a DEVICE allocation holding a copy of it.
 * olc_unbuf copies the buffer back into `h` and frees it. */
static inline void *olc_buf(void *h, size_t n) {
  if (olc_on_host)
    return h;
  void *p = olc_alloc(OL_ALLOC_TYPE_DEVICE, n);
  if (p && !olc_write(p, h, n)) {
    olMemFree(p);
    return NULL;
  }
  return p;
}

static inline void olc_unbuf(void *h, void *p, size_t n) {
  if (!p || p == h)
    return;
  olc_read(h, p, n);
  OLC_OK(olMemFree(p));
}

/* ------------------------------------------------ a blocking host task --- */

/* A host function that spins until released, as a way to hold a queue.
 * olc_gate_close() enqueues it; olc_gate_open() lets it finish. */
typedef struct olc_gate {
  atomic_int open;
  atomic_int entered;
} olc_gate;

static inline void olc_gate_fn(void *user) {
  olc_gate *g = (olc_gate *)user;
  atomic_store(&g->entered, 1);
  while (!atomic_load(&g->open))
    sched_yield();
}

static inline bool olc_gate_close(olc_gate *g, ol_queue_handle_t q) {
  atomic_store(&g->open, 0);
  atomic_store(&g->entered, 0);
  return OLC_OK(olLaunchHostFunction(q, olc_gate_fn, g));
}

static inline void olc_gate_open(olc_gate *g) { atomic_store(&g->open, 1); }

/* Waits (up to 5 s) until the gate's function is running. */
static inline bool olc_gate_wait_entered(olc_gate *g) {
  double t0 = olc_now_ms();
  while (!atomic_load(&g->entered) && olc_now_ms() - t0 < 5000)
    olc_sleep_ms(1);
  return atomic_load(&g->entered) != 0;
}

/* A helper thread for a call that blocks on a gate: it opens the gate
 * open_ms after olc_opener_start, and ends the program if the main thread
 * has not finished the call (named for the message) watchdog_ms after that:
 * a hang must not eat the run's time limit. olc_opener_stop joins it. */
typedef struct olc_opener {
  olc_gate *gate;
  const char *call;
  int open_ms, watchdog_ms;
  atomic_int done;
  pthread_t t;
} olc_opener;

static inline void *olc_opener_main(void *arg) {
  olc_opener *o = (olc_opener *)arg;
  olc_sleep_ms(o->open_ms);
  olc_gate_open(o->gate);
  double t0 = olc_now_ms();
  while (!atomic_load(&o->done)) {
    if (olc_now_ms() - t0 > o->watchdog_ms) {
      printf("FAIL (%s): %s has not returned %d ms after the gate opened: it waits forever\n", olc_test, o->call,
             o->watchdog_ms);
      fflush(stdout);
      _exit(1);
    }
    olc_sleep_ms(5);
  }
  return NULL;
}

static inline void olc_opener_start(olc_opener *o, olc_gate *g, const char *call, int open_ms, int watchdog_ms) {
  o->gate = g;
  o->call = call;
  o->open_ms = open_ms;
  o->watchdog_ms = watchdog_ms;
  atomic_store(&o->done, 0);
  pthread_create(&o->t, NULL, olc_opener_main, o);
}

static inline void olc_opener_stop(olc_opener *o) {
  atomic_store(&o->done, 1);
  pthread_join(o->t, NULL);
}

#endif /* TESTS_C_COMMON_OLDEVICES_H */
