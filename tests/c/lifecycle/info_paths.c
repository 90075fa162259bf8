/* Test (our library only): the info queries of platforms and devices give
 * the same results whether or not they can be answered without entering Go.
 *
 * With tracing off, the library answers successful olGetDeviceInfo[Size] /
 * olGetPlatformInfo[Size] calls in C from a snapshot taken at olInit; with
 * tracing on (here OFFLOAD_TRACE_FILE=/dev/null) every call goes through
 * Go. This program runs itself twice with "--dump", once each way, and
 * compares the two outputs line by line (then both once more with
 * OFFLOAD_DISABLE_VALIDATION set): for every device and platform and
 * every property number (valid and not), the result code, the whole Details
 * text and the bytes written, for exact, larger, smaller, zero and NULL
 * outputs, then the same calls with NULL, garbage, wrong-kind, changed and
 * stale handles; and olIterateDevices (the handles it visits, stopping
 * after each count, and with a NULL callback). The two runs make the same calls in the same order, so
 * their handle values (and the Details naming them) are the same too.
 *
 * The same comparison covers the fast paths of olMemcpy and
 * olGetMemInfo[Size] (impl/allocmap.h), which answer in C from the
 * allocation index: copies between host buffers and into and past the end
 * of allocations, wrapping ranges, NULL pointers and handles, other
 * devices' memory named as the host's, and every memory property of
 * interior, end and foreign pointers. Addresses differ between the two
 * processes, so Details print every hex number as 0x?, and BASE values
 * as offsets from the allocation.
 *
 * With the CUDA driver double (tests/drivers/fake_cuda.c) named, the
 * comparison runs once more on the host and two fake GPUs (two platforms,
 * three devices).
 *
 * usage: info_paths [FAKE_LIBCUDA.so]   (runs the comparisons)
 *        info_paths --dump              (prints one run)
 */
#include "oldevices.h"

#include <inttypes.h>
#include <unistd.h>

typedef ol_result_t (*info_fn)(void *h, uint32_t prop, size_t size, void *out);
typedef ol_result_t (*size_fn)(void *h, uint32_t prop, size_t *ret);

static ol_result_t dev_info(void *h, uint32_t p, size_t s, void *o) {
  return olGetDeviceInfo(h, (ol_device_info_t)p, s, o);
}
static ol_result_t dev_size(void *h, uint32_t p, size_t *r) {
  return olGetDeviceInfoSize(h, (ol_device_info_t)p, r);
}
static ol_result_t plat_info(void *h, uint32_t p, size_t s, void *o) {
  return olGetPlatformInfo(h, (ol_platform_info_t)p, s, o);
}
static ol_result_t plat_size(void *h, uint32_t p, size_t *r) {
  return olGetPlatformInfoSize(h, (ol_platform_info_t)p, r);
}

static void dump_result(ol_result_t r) {
  printf(" -> %u \"%s\"", olc_code(r), r ? olc_details(r) : "");
}

/* One call of info with a buffer of cap bytes (0xA5 before the call) given
 * as size; prints the result and the whole buffer afterwards. */
static void dump_info(const char *who, info_fn info, void *h, uint32_t p,
                      size_t size, size_t cap, bool null_out) {
  unsigned char buf[1024];
  memset(buf, 0xA5, sizeof buf);
  ol_result_t r = info(h, p, size, null_out ? NULL : buf);
  printf("%s info prop %u size %zu%s", who, p, size, null_out ? " NULL" : "");
  dump_result(r);
  printf(" [");
  for (size_t i = 0; i < cap; i++)
    printf("%02x", buf[i]);
  printf("]\n");
}

/* the devices of the current initialisation (oldevices.h) */
static olc_devlist devs;

/* The Details with every hex number written 0x? (addresses move between
 * the two runs). */
static void dump_result_noaddr(ol_result_t r) {
  printf(" -> %u \"", olc_code(r));
  for (const char *d = r ? olc_details(r) : ""; *d;) {
    if (d[0] == '0' && d[1] == 'x') {
      fputs("0x?", stdout);
      for (d += 2; (*d >= '0' && *d <= '9') || (*d >= 'a' && *d <= 'f'); d++)
        ;
    } else {
      putchar(*d++);
    }
  }
  printf("\"");
}

static unsigned sum_bytes(const unsigned char *p, size_t n) {
  unsigned s = 0;
  for (size_t i = 0; i < n; i++)
    s = s * 31 + p[i];
  return s;
}

/* olMemcpy (NULL queue) of size bytes: the result and the destination's
 * bytes afterwards (cap of them; none when dst is not ours to read). */
static void dump_copy(const char *what, void *dst, void *dd, const void *src,
                      void *sd, size_t size, size_t cap) {
  ol_result_t r = olMemcpy(NULL, dst, dd, src, sd, size);
  printf("copy %s size %zu", what, size);
  dump_result_noaddr(r);
  if (cap)
    printf(" [%08x]", sum_bytes(dst, cap));
  printf("\n");
}

/* Every way of asking memory property p of ptr; BASE values are printed as
 * offsets from base. */
static void dump_mem_prop(const char *who, const void *ptr, uint32_t p,
                          uintptr_t base) {
  size_t n = 0xA5A5;
  ol_result_t r = olGetMemInfoSize(ptr, (ol_mem_info_t)p, &n);
  printf("%s meminfo size prop %u", who, p);
  dump_result_noaddr(r);
  printf(" [%zu]\n", n);
  r = olGetMemInfoSize(ptr, (ol_mem_info_t)p, NULL);
  printf("%s meminfo size prop %u NULL", who, p);
  dump_result_noaddr(r);
  printf("\n");
  size_t sizes[] = {8, 16, 4, 1, 0};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    unsigned char buf[16];
    memset(buf, 0xA5, sizeof buf);
    r = olGetMemInfo(ptr, (ol_mem_info_t)p, sizes[k], buf);
    printf("%s meminfo prop %u size %zu", who, p, sizes[k]);
    dump_result_noaddr(r);
    if (r == NULL && p == OL_MEM_INFO_BASE) {
      uintptr_t v;
      memcpy(&v, buf, sizeof v);
      printf(" base%+td", (ptrdiff_t)(v - base));
      memset(buf, 0xA5, 8);
    }
    printf(" [");
    for (size_t i = 0; i < sizeof buf; i++)
      printf("%02x", buf[i]);
    printf("]\n");
  }
  r = olGetMemInfo(ptr, (ol_mem_info_t)p, 8, NULL);
  printf("%s meminfo prop %u NULL", who, p);
  dump_result_noaddr(r);
  printf("\n");
}

static void dump_mem_all(const char *who, const void *ptr, uintptr_t base) {
  for (uint32_t p = 0; p < OL_MEM_INFO_LAST + 2; p++)
    dump_mem_prop(who, ptr, p, base);
  dump_mem_prop(who, ptr, 0x7fffffff, base);
}

/* The memory calls the fast paths answer, and their failures. */
static void dump_memory(void) {
  void *host = NULL;
  for (size_t i = 0; i < (size_t)devs.n; i++) {
    ol_device_type_t t;
    if (olGetDeviceInfo(devs.dev[i], OL_DEVICE_INFO_TYPE, sizeof t, &t) == NULL &&
        t == OL_DEVICE_TYPE_HOST)
      host = devs.dev[i];
  }
  printf("memory: host device %s\n", host ? "found" : "missing");
  if (!host)
    return;
  static unsigned char m1[4096], m2[4096];
  for (size_t i = 0; i < sizeof m1; i++)
    m2[i] = (unsigned char)(i * 7 + 1);
  unsigned char *a = NULL, *b = NULL;
  if (olMemAlloc(host, OL_ALLOC_TYPE_DEVICE, 64, (void **)&a) != NULL ||
      olMemAlloc(host, OL_ALLOC_TYPE_HOST, 4096, (void **)&b) != NULL) {
    printf("memory: olMemAlloc failed\n");
    return;
  }
  dump_copy("host buffers 64", m1, host, m2, host, 64, 64);
  dump_copy("host buffers 4096", m1, host, m2 + 1, host, 4096 - 1, 4096);
  dump_copy("size 0", m1, host, m2, host, 0, 16);
  dump_copy("NULL dst", NULL, host, m2, host, 64, 0);
  dump_copy("NULL src", m1, host, NULL, host, 64, 16);
  dump_copy("NULL src size 0", m1, host, NULL, host, 0, 16);
  dump_copy("NULL dst device", m1, NULL, m2, host, 64, 16);
  dump_copy("NULL src device", m1, host, m2, NULL, 64, 16);
  dump_copy("garbage device", m1, (void *)0x1234, m2, host, 64, 16);
  dump_copy("into allocation", a, host, m2, host, 64, 64);
  dump_copy("into allocation interior", a + 16, host, m2 + 5, host, 48, 48);
  dump_copy("past allocation end", a + 16, host, m2, host, 49, 48);
  dump_copy("from past allocation end", m1, host, a + 1, host, 64, 64);
  dump_copy("allocation to allocation", b + 100, host, a, host, 64, 200);
  dump_copy("wrapping dst", (void *)(~(uintptr_t)0 - 8), host, m2, host, 64, 0);
  dump_copy("wrapping src", m1, host, (void *)(~(uintptr_t)0 - 8), host, 64, 16);
  for (size_t i = 0; i < (size_t)devs.n; i++) {
    if (devs.dev[i] == host)
      continue;
    char who[64];
    void *g = NULL;
    ol_result_t r = olMemAlloc(devs.dev[i], OL_ALLOC_TYPE_DEVICE, 64, &g);
    printf("memory: alloc on device %zu", i);
    dump_result_noaddr(r);
    printf("\n");
    if (r != NULL)
      continue;
    dump_copy("device memory named as host (dst)", g, host, m2, host, 64, 0);
    dump_copy("device memory named as host (src)", m1, host, g, host, 64, 16);
    dump_copy("to device memory", g, devs.dev[i], m2, host, 64, 0);
    dump_copy("from device memory", m1, host, g, devs.dev[i], 64, 64);
    dump_copy("host device for host memory, other device", m1, devs.dev[i], m2, host, 64, 0);
    snprintf(who, sizeof who, "device %zu memory", i);
    dump_mem_all(who, (unsigned char *)g + 5, (uintptr_t)g);
    olMemFree(g);
  }
  dump_mem_all("allocation start", a, (uintptr_t)a);
  dump_mem_all("allocation interior", a + 17, (uintptr_t)a);
  dump_mem_all("allocation last byte", a + 63, (uintptr_t)a);
  dump_mem_all("host allocation", b + 4000, (uintptr_t)b);
  dump_mem_all("not ours", m1 + 3, 0);
  dump_mem_all("NULL", NULL, 0);
  olMemFree(a);
  olMemFree(b);
  dump_mem_all("freed", a + 1, 0);
}

static void dump_size(const char *who, size_fn sz, void *h, uint32_t p,
                      bool null_ret) {
  size_t n = 0xA5A5;
  ol_result_t r = sz(h, p, null_ret ? NULL : &n);
  printf("%s size prop %u%s", who, p, null_ret ? " NULL" : "");
  dump_result(r);
  printf(" [%zu]\n", n);
}

/* Every way of asking property p of h. */
static void dump_prop(const char *who, info_fn info, size_fn sz, void *h,
                      uint32_t p) {
  dump_size(who, sz, h, p, false);
  dump_size(who, sz, h, p, true);
  size_t n = 0;
  if (sz(h, p, &n) != NULL || n > 512)
    n = 8;
  dump_info(who, info, h, p, n, n + 16, false);      /* exact */
  dump_info(who, info, h, p, n + 16, n + 16, false); /* larger */
  if (n > 1)
    dump_info(who, info, h, p, n - 1, n + 16, false); /* one short */
  dump_info(who, info, h, p, 1, n + 16, false);
  dump_info(who, info, h, p, 0, n + 16, false);
  dump_info(who, info, h, p, n, 0, true);
}

static void dump_all(const char *who, info_fn info, size_fn sz, void *h,
                     uint32_t last) {
  for (uint32_t p = 0; p < last + 3; p++)
    dump_prop(who, info, sz, h, p);
  dump_prop(who, info, sz, h, 0x7fffffff);
  dump_prop(who, info, sz, h, 0xffffffff);
}


/* olIterateDevices, stopping after `stop` devices (0: never): prints the
 * result and the handles visited. */
struct visit {
  size_t stop, seen;
};
static bool print_device(ol_device_handle_t d, void *user) {
  struct visit *v = user;
  printf(" %#" PRIxPTR, (uintptr_t)d);
  return ++v->seen != v->stop;
}
static void dump_iterate(size_t stop) {
  struct visit v = {stop, 0};
  printf("iterate stop %zu:", stop);
  ol_result_t r = olIterateDevices(print_device, &v);
  dump_result(r);
  printf(" seen %zu\n", v.seen);
  r = olIterateDevices(NULL, &v);
  printf("iterate NULL");
  dump_result(r);
  printf("\n");
}

static int dump(void) {
  setvbuf(stdout, NULL, _IOFBF, 1 << 16);
  /* epoch 1: remember a device and a platform, for stale handles */
  if (olInit() != NULL || olc_list_devices(&devs) != NULL || devs.n == 0)
    return 1;
  void *old_dev = devs.dev[0], *old_plat = NULL;
  olGetDeviceInfo(old_dev, OL_DEVICE_INFO_PLATFORM, sizeof old_plat, &old_plat);
  if (olShutDown() != NULL)
    return 1;
  printf("after shutdown:");
  dump_iterate(0);
  dump_prop("stale-uninit dev", dev_info, dev_size, old_dev, 0);
  dump_prop("stale-uninit plat", plat_info, plat_size, old_plat, 0);

  if (olInit() != NULL || olc_list_devices(&devs) != NULL)
    return 1;
  size_t ndev = (size_t)devs.n;
  printf("%zu devices\n", ndev);
  for (size_t stop = 0; stop <= ndev + 1; stop++)
    dump_iterate(stop);
  for (size_t i = 0; i < ndev; i++) {
    char who[64];
    snprintf(who, sizeof who, "device %zu", i);
    dump_all(who, dev_info, dev_size, devs.dev[i], OL_DEVICE_INFO_LAST);
    void *plat = NULL;
    if (olGetDeviceInfo(devs.dev[i], OL_DEVICE_INFO_PLATFORM, sizeof plat, &plat) == NULL) {
      snprintf(who, sizeof who, "platform of device %zu", i);
      dump_all(who, plat_info, plat_size, plat, OL_PLATFORM_INFO_LAST);
      /* wrong kind both ways */
      dump_prop("platform as device", dev_info, dev_size, plat, 0);
      dump_prop("device as platform", plat_info, plat_size, devs.dev[i], 0);
    }
    uintptr_t d = (uintptr_t)devs.dev[i];
    /* another generation of the same slot, another slot, the tag changed */
    dump_prop("next generation", dev_info, dev_size, (void *)(d + (1u << 24)), 0);
    dump_prop("previous generation", dev_info, dev_size, (void *)(d - (1u << 24)), 0);
    dump_prop("other slot", dev_info, dev_size, (void *)(d + 1000), 0);
    dump_prop("queue tag", dev_info, dev_size, (void *)(d + (1ull << 56)), 0);
  }
  dump_memory();
  dump_prop("stale dev", dev_info, dev_size, old_dev, 0);
  dump_prop("stale plat", plat_info, plat_size, old_plat, 0);
  /* the fifth looks like a user-space address (not taken from this process,
   * whose addresses move between the two runs); the sixth has the device
   * tag (0xB2 in the top byte) with generation 0 and slot 0 */
  void *garbage[] = {NULL, (void *)1, (void *)0x1234, (void *)~(uintptr_t)0,
                     (void *)(uintptr_t)0x7ffd12345670ull,
                     (void *)(uintptr_t)0xB200000000000000ull};
  for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
    char who[64];
    snprintf(who, sizeof who, "garbage %zu", i);
    dump_prop(who, dev_info, dev_size, garbage[i], 0);
    dump_prop(who, plat_info, plat_size, garbage[i], 0);
  }
  if (olShutDown() != NULL)
    return 1;
  printf("end\n");
  return 0;
}

/* Runs this program with --dump, with OFFLOAD_DISABLE_VALIDATION set if
 * novalid, tracing to /dev/null if traced and the CUDA backend on two fake
 * GPUs if fake_cuda names the driver double, and returns its whole output
 * (malloc'd) or NULL. */
static char *run_dump(const char *self, bool novalid, bool traced,
                      const char *fake_cuda) {
  if (fake_cuda) {
    setenv("OFFLOAD_CUDA_LIBRARY", fake_cuda, 1);
    setenv("FAKE_CUDA_DEVICES", "2", 1);
    setenv("FAKE_CUDA_CC_MAJOR", "8", 1);
    setenv("OFFLOAD_PLUGINS", "cuda", 1);
  }
  if (novalid)
    setenv("OFFLOAD_DISABLE_VALIDATION", "1", 1);
  if (traced)
    setenv("OFFLOAD_TRACE_FILE", "/dev/null", 1);
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "'%s' --dump", self);
  FILE *p = popen(cmd, "r");
  unsetenv("OFFLOAD_DISABLE_VALIDATION");
  unsetenv("OFFLOAD_TRACE_FILE");
  unsetenv("OFFLOAD_CUDA_LIBRARY");
  unsetenv("FAKE_CUDA_DEVICES");
  unsetenv("FAKE_CUDA_CC_MAJOR");
  unsetenv("OFFLOAD_PLUGINS");
  if (!p)
    return NULL;
  size_t cap = 1 << 20, len = 0;
  char *out = malloc(cap);
  size_t got;
  while (out && (got = fread(out + len, 1, cap - len - 1, p)) > 0) {
    len += got;
    if (cap - len < 4096) {
      cap *= 2;
      out = realloc(out, cap);
    }
  }
  int st = pclose(p);
  if (!out)
    return NULL;
  out[len] = 0;
  if (st != 0) {
    fprintf(stderr, "info_paths --dump exited with status %d\n", st);
    free(out);
    return NULL;
  }
  return out;
}

/* Compares the two dumps line by line, reporting the first differences. */
static void compare(const char *mode, const char *fast, const char *slow) {
  OLC_CHECK(fast && slow, "%s: both runs completed", mode);
  if (!fast || !slow)
    return;
  const char *a = fast, *b = slow;
  long lines = 0, diffs = 0;
  while (*a || *b) {
    const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
    size_t la = ea ? (size_t)(ea - a) : strlen(a);
    size_t lb = eb ? (size_t)(eb - b) : strlen(b);
    lines++;
    if ((la != lb || memcmp(a, b, la) != 0) && diffs++ < 10)
      fprintf(stderr, "FAIL %s: line %ld differs:\n  snapshot: %.*s\n  go path:  %.*s\n",
              mode, lines, (int)la, a, (int)lb, b);
    a += la + (ea != NULL);
    b += lb + (eb != NULL);
  }
  printf("%s: compared %ld lines (%zu bytes)\n", mode, lines, strlen(fast));
  OLC_CHECK(diffs == 0, "%s: %ld of %ld lines differ", mode, diffs, lines);
  OLC_CHECK(lines > 400 && strstr(fast, "\nend\n") != NULL,
            "%s: the dump covers the calls (%ld lines)", mode, lines);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--dump") == 0)
    return dump();
  olc_check_library((void *)olInit);
  unsetenv("OFFLOAD_TRACE");
  unsetenv("OFFLOAD_TRACE_FILE");
  unsetenv("OFFLOAD_DISABLE_VALIDATION");
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  OLC_CHECK(n > 0, "readlink /proc/self/exe");
  if (n <= 0)
    return olc_summary(NULL);
  self[n] = 0;
  const char *fake_cuda = argc > 1 ? argv[1] : NULL;
  for (int cuda = 0; cuda < (fake_cuda ? 2 : 1); cuda++) {
    for (int novalid = 0; novalid < 2; novalid++) {
      char mode[64];
      snprintf(mode, sizeof mode, "%s, validation %s",
               cuda ? "host + 2 fake CUDA GPUs" : "host", novalid ? "off" : "on");
      const char *fc = cuda ? fake_cuda : NULL;
      char *fast = run_dump(self, novalid, false, fc);
      char *slow = run_dump(self, novalid, true, fc);
      compare(mode, fast, slow);
      if (cuda)
        OLC_CHECK(fast && strstr(fast, "\n3 devices\n") != NULL,
                  "%s: the fake GPUs are there (3 devices)", mode);
      free(fast);
      free(slow);
    }
  }
  return olc_summary(NULL);
}
