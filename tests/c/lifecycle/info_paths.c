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

/* the devices of the current initialisation (oldevices.h) */
static olc_devlist devs;

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
