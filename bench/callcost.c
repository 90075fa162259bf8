// callcost: per-call cost of the cheapest calls, and of a full
// olInit/olShutDown cycle, for the library given on the command line.
// usage: callcost LIBRARY [KERNELS.so]
// Prints "<key> <ns>" lines, each the median of 7 runs:
//   info_ns, info_size_ns, plat_info_ns, plat_info_size_ns: olGetDeviceInfo
//     (host, TYPE), olGetDeviceInfoSize(host, NAME), olGetPlatformInfo(host
//     platform, NAME) and olGetPlatformInfoSize(host platform, NAME)
//   iterate_ns: olIterateDevices with a callback that keeps the handle
//   memcpy4k_ns: olMemcpy of 4 KiB between two host buffers, NULL queue;
//     memcpy4k_raw_ns: memcpy of the same buffers
//   memcpy64_ns, memcpy64_raw_ns: the same with 64 bytes
//   cycle_ns: olInit + olShutDown (refcount 0->1->0)
// With KERNELS.so (bench/kernels.c; our kernel ABI, so our library only;
// LLVM's library, whose only device without a GPU is its Virtual Host
// Device, cannot create a queue on it):
//   meminfo_ns: olGetMemInfo(BASE) of an interior pointer of a 64-byte
//     olMemAlloc allocation (one of 1,000 live); LLVM's olMemAlloc on its
//     Virtual Host Device crashes
//   allocfree_ns: olMemAlloc + olMemFree of 64 bytes (DEVICE, host device);
//     allocfree_raw_ns: aligned_alloc(64, 64) + free
//   event_ns: olCreateEvent on a queue with no work (destroyed untimed)
//   sync_ns: olSyncQueue of a queue with no work
//   launch_ns: olLaunchKernel of the empty kernel (1x1), 1,000 per olSyncQueue
//     (the sync untimed)
//   probe_ns: olGetDeviceInfoSize(host, TYPE, NULL), which enters Go and
//     fails validation at once: the cost of crossing from C into Go and back
//   memcpy4k_share, event_share, sync_share, launch_share: probe_ns over
//     that call's cost, in percent (from this process's medians)
#include "common.h"

#include <dlfcn.h>
#include <stdbool.h>

typedef const void *res_t;
typedef res_t (*init_fn)(void);
typedef res_t (*iter_fn)(bool (*)(void *, void *), void *);
typedef res_t (*info_fn)(void *, uint32_t, size_t, void *);
typedef res_t (*size_fn)(void *, uint32_t, size_t *);
typedef res_t (*memcpy_fn)(void *, void *, void *, const void *, void *, size_t);
typedef res_t (*create_fn)(void *, void **);
typedef res_t (*handle_fn)(void *);
typedef res_t (*program_fn)(void *, const void *, size_t, void **);
typedef res_t (*symbol_fn)(void *, const char *, uint32_t, void **);
typedef res_t (*alloc_fn)(void *, uint32_t, size_t, void **);
typedef res_t (*free_fn)(void *);
typedef res_t (*meminfo_fn)(const void *, uint32_t, size_t, void *);
typedef res_t (*launch_fn)(void *, void *, void *, const void *, size_t, const void *);

static void *host_dev;
static bool last_device(void *d, void *u) { (void)u; host_dev = d; return true; }

enum { CALLS = 1000000, CYCLES = 2000, BATCH = 1000 };

static void *h;
static void *sym(const char *name) {
  void *f = dlsym(h, name);
  if (!f) { fprintf(stderr, "callcost: %s missing\n", name); exit(1); }
  return f;
}

#define CK(x)                                                                  \
  do {                                                                         \
    if ((x) != NULL) { fprintf(stderr, "callcost: %s failed\n", #x); exit(1); } \
  } while (0)

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: callcost LIBRARY [KERNELS.so]\n"); return 2; }
  h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  init_fn olInit = (init_fn)sym("olInit"), olShutDown = (init_fn)sym("olShutDown");
  iter_fn olIterateDevices = (iter_fn)sym("olIterateDevices");
  info_fn olGetDeviceInfo = (info_fn)sym("olGetDeviceInfo");
  size_fn olGetDeviceInfoSize = (size_fn)sym("olGetDeviceInfoSize");
  info_fn olGetPlatformInfo = (info_fn)sym("olGetPlatformInfo");
  size_fn olGetPlatformInfoSize = (size_fn)sym("olGetPlatformInfoSize");
  memcpy_fn olMemcpy = (memcpy_fn)sym("olMemcpy");
  create_fn olCreateQueue = (create_fn)sym("olCreateQueue");
  create_fn olCreateEvent = (create_fn)sym("olCreateEvent");
  handle_fn olDestroyEvent = (handle_fn)sym("olDestroyEvent");
  handle_fn olDestroyQueue = (handle_fn)sym("olDestroyQueue");
  handle_fn olSyncQueue = (handle_fn)sym("olSyncQueue");

  CK(olInit());
  olIterateDevices(last_device, NULL);
  void *dev = host_dev, *plat = NULL;
  CK(olGetDeviceInfo(dev, 1 /* PLATFORM */, sizeof plat, &plat));
  uint32_t type = 0;
  size_t n = 0;
  char name[256];
  BENCH_MEDIAN("info_ns", CALLS, for (int i = 0; i < CALLS; i++) CK(olGetDeviceInfo(dev, 0, 4, &type)));
  BENCH_MEDIAN("info_size_ns", CALLS, for (int i = 0; i < CALLS; i++) CK(olGetDeviceInfoSize(dev, 2, &n)));
  BENCH_MEDIAN("plat_info_ns", CALLS, for (int i = 0; i < CALLS; i++) CK(olGetPlatformInfo(plat, 0, sizeof name, name)));
  BENCH_MEDIAN("plat_info_size_ns", CALLS, for (int i = 0; i < CALLS; i++) CK(olGetPlatformInfoSize(plat, 0, &n)));
  BENCH_MEDIAN("iterate_ns", CALLS, for (int i = 0; i < CALLS; i++) CK(olIterateDevices(last_device, NULL)));

  static char src[4096], dst[4096];
  memset(src, 7, sizeof src);
  enum { COPIES = CALLS / 10 };
  double memcpy4k = BENCH_MEDIAN("memcpy4k_ns", COPIES, for (int i = 0; i < COPIES; i++) CK(olMemcpy(NULL, dst, dev, src, dev, sizeof src)));
  BENCH_MEDIAN("memcpy4k_raw_ns", COPIES, for (int i = 0; i < COPIES; i++) {
    memcpy(dst, src, sizeof src);
    __asm__ volatile("" ::"r"(dst) : "memory");
  });

  static char src64[64], dst64[64];
  BENCH_MEDIAN("memcpy64_ns", COPIES, for (int i = 0; i < COPIES; i++) CK(olMemcpy(NULL, dst64, dev, src64, dev, sizeof src64)));
  BENCH_MEDIAN("memcpy64_raw_ns", COPIES, for (int i = 0; i < COPIES; i++) {
    memcpy(dst64, src64, sizeof src64);
    __asm__ volatile("" ::"r"(dst64) : "memory");
  });

  if (argc > 2) {
    alloc_fn olMemAlloc = (alloc_fn)sym("olMemAlloc");
    free_fn olMemFree = (free_fn)sym("olMemFree");
    meminfo_fn olGetMemInfo = (meminfo_fn)sym("olGetMemInfo");
    enum { LIVE = 1000 };
    static void *live[LIVE];
    for (int i = 0; i < LIVE; i++) CK(olMemAlloc(dev, 1 /* DEVICE */, 64, &live[i]));
    void *base = NULL;
    BENCH_MEDIAN("meminfo_ns", COPIES, for (int i = 0; i < COPIES; i++) {
      CK(olGetMemInfo((char *)live[(i * 7) % LIVE] + 17, 1 /* BASE */, sizeof base, &base));
    });
    if (base != live[((COPIES - 1) * 7) % LIVE]) { fprintf(stderr, "callcost: olGetMemInfo BASE wrong\n"); exit(1); }
    for (int i = 0; i < LIVE; i++) CK(olMemFree(live[i]));
    enum { ALLOCS = CALLS / 10 };
    BENCH_MEDIAN("allocfree_ns", ALLOCS, for (int i = 0; i < ALLOCS; i++) {
      void *p = NULL;
      CK(olMemAlloc(dev, 1 /* DEVICE */, 64, &p));
      CK(olMemFree(p));
    });
    BENCH_MEDIAN("allocfree_raw_ns", ALLOCS, for (int i = 0; i < ALLOCS; i++) {
      void *p = aligned_alloc(64, 64);
      __asm__ volatile("" ::"r"(p) : "memory");
      free(p);
    });

    void *q = NULL;
    CK(olCreateQueue(dev, &q));
    static void *ev[BATCH];
    enum { EVENTS = 100 * BATCH };
    // only the creations are timed: each batch's destruction is subtracted
    double event = BENCH_MEDIAN("event_ns", EVENTS, for (int b = 0; b < EVENTS / BATCH; b++) {
      for (int i = 0; i < BATCH; i++) CK(olCreateEvent(q, &ev[i]));
      BENCH_SKIP(for (int i = 0; i < BATCH; i++) CK(olDestroyEvent(ev[i])));
    });
    double sync = BENCH_MEDIAN("sync_ns", CALLS, for (int i = 0; i < CALLS; i++) CK(olSyncQueue(q)));

    program_fn olCreateProgram = (program_fn)sym("olCreateProgram");
    symbol_fn olGetSymbol = (symbol_fn)sym("olGetSymbol");
    launch_fn olLaunchKernel = (launch_fn)sym("olLaunchKernel");
    handle_fn olDestroyProgram = (handle_fn)sym("olDestroyProgram");
    FILE *f = fopen(argv[2], "rb");
    if (!f) { perror(argv[2]); return 1; }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    char *img = malloc((size_t)len);
    if (fread(img, 1, (size_t)len, f) != (size_t)len) { perror(argv[2]); return 1; }
    fclose(f);
    void *prog = NULL, *k = NULL;
    CK(olCreateProgram(dev, img, (size_t)len, &prog));
    free(img);
    CK(olGetSymbol(prog, "empty", 0 /* KERNEL */, &k));
    // ol_kernel_launch_size_args_t
    struct { size_t dims; uint32_t groups[3], items[3]; size_t shared; } ls = {1, {1, 1, 1}, {1, 1, 1}, 0};
    enum { LAUNCHES = 100 * BATCH };
    double launch = BENCH_MEDIAN("launch_ns", LAUNCHES, for (int b = 0; b < LAUNCHES / BATCH; b++) {
      for (int i = 0; i < BATCH; i++) CK(olLaunchKernel(q, dev, k, NULL, 0, &ls));
      BENCH_SKIP(CK(olSyncQueue(q)));
    });
    CK(olDestroyProgram(prog));
    double probe = BENCH_MEDIAN("probe_ns", CALLS, for (int i = 0; i < CALLS; i++) olGetDeviceInfoSize(dev, 0, NULL));
    printf("memcpy4k_share %.0f\nevent_share %.0f\nsync_share %.0f\nlaunch_share %.0f\n",
           100 * probe / memcpy4k, 100 * probe / event, 100 * probe / sync, 100 * probe / launch);
    CK(olDestroyQueue(q));
  }
  CK(olShutDown());

  BENCH_MEDIAN("cycle_ns", CYCLES, for (int i = 0; i < CYCLES; i++) {
    CK(olInit());
    CK(olShutDown());
  });
  return 0;
}
