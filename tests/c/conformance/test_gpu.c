/* Conformance on CUDA GPUs: what both libraries do with a CUDA device,
 * through the API only. The GPUs are those of the CUDA driver double
 * (tests/drivers/fake_cuda.c), which `make check-fake-cuda` puts on the
 * library path of both libraries (CONFORMANCE_DRIVER_DIR) with two fake
 * sm_80 GPUs; its kernels are the host images of tests/c/kernels dressed as
 * sm_80 cubins, in CONFORMANCE_GPU_IMAGES (<kernel>.fakecubin). Without
 * them (plain `make check`) the tests are skipped.
 *
 * `make check-remote-mpi-fake-cuda` runs the same on a proxy's CUDA GPUs
 * (the double in the proxy's process, the application beside it loading no
 * driver): HOST and MANAGED memory of a remote device are UNSUPPORTED
 * (checked), so the memory test stages through this process's memory.
 *
 * Where LLVM 22.1 and ours differ on a GPU, the check says so
 * (olc_known_diff) and checks each library's own answer; the reasons are in
 * the README of this suite.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "oldevices.h"

static struct {
  ol_device_handle_t devs[64];
  int n;
} gpus; /* the CUDA devices, in iteration order */
static ol_device_handle_t hostdev; /* names the host side of copies */
static char images[512];

static bool collect_cuda(ol_device_handle_t d, void *ud) {
  (void)ud;
  ol_platform_handle_t p = olc_platform_of(d);
  ol_platform_backend_t b = OL_PLATFORM_BACKEND_UNKNOWN;
  if (p && olGetPlatformInfo(p, OL_PLATFORM_INFO_BACKEND, sizeof b, &b) == NULL &&
      b == OL_PLATFORM_BACKEND_CUDA && gpus.n < 64)
    gpus.devs[gpus.n++] = d;
  return true;
}

/* Steps through the CUDA devices: olc_backend/olc_index name the one under
 * test in every report. */
#define FOR_EACH_GPU(i, dev)                                                   \
  for (int i = 0; i < gpus.n && (olc_backend = OL_PLATFORM_BACKEND_CUDA, olc_index = (unsigned)i, 1); i++) \
    for (ol_device_handle_t dev = gpus.devs[i]; dev; dev = NULL)

static void *read_image(const char *kernel, size_t *size) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s.fakecubin", images, kernel);
  FILE *f = fopen(path, "rb");
  if (!f) {
    OLC_CHECK(false, "cannot open %s", path);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *b = malloc((size_t)n);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return b;
}

static void str_info(ol_device_handle_t d, ol_device_info_t prop, char *out, size_t n) {
  out[0] = 0;
  size_t size = 0;
  if (!OLC_OK(olGetDeviceInfoSize(d, prop, &size)) || size == 0 || size > n)
    return;
  (void)OLC_OK(olGetDeviceInfo(d, prop, size, out));
  (void)OLC_EQ(strlen(out) + 1, size);
}

static uint64_t num_info(ol_device_handle_t d, ol_device_info_t prop, size_t size) {
  uint64_t v = 0;
  size_t got = 0;
  (void)OLC_OK(olGetDeviceInfoSize(d, prop, &got));
  (void)OLC_EQ(got, size);
  (void)OLC_OK(olGetDeviceInfo(d, prop, size, &v));
  return v;
}

/* What the double's GPU i is (tests/drivers/fake_cuda.c), as each library
 * reports it. */
static void test_gpu_info(void) {
  (void)OLC_EQ(gpus.n, 2);
  /* CONFORMANCE_GPU_REMOTE=1: the GPUs must be a proxy's (and 0: local) */
  const char *remote = getenv("CONFORMANCE_GPU_REMOTE");
  FOR_EACH_GPU(i, d) {
    char s[256], want[256];
    (void)OLC_EQ(olc_is_remote(d), remote != NULL && strcmp(remote, "1") == 0);
    (void)OLC_EQ(num_info(d, OL_DEVICE_INFO_TYPE, 4), OL_DEVICE_TYPE_GPU);
    str_info(d, OL_DEVICE_INFO_NAME, s, sizeof s);
    snprintf(want, sizeof want, "Fake CUDA GPU %d", i);
    (void)OLC_STREQ(s, want);
    str_info(d, OL_DEVICE_INFO_PRODUCT_NAME, s, sizeof s);
    (void)OLC_STREQ(s, want);
    /* CUDA device info follows LLVM 22.1's CUDA plugin (seen on an H200) */
    str_info(d, OL_DEVICE_INFO_VENDOR, s, sizeof s);
    (void)OLC_STREQ(s, "NVIDIA");
    str_info(d, OL_DEVICE_INFO_DRIVER_VERSION, s, sizeof s);
    (void)OLC_STREQ(s, "12040");
    str_info(d, OL_DEVICE_INFO_UID, s, sizeof s);
    snprintf(want, sizeof want, "CUDA-a%d0102030405060708090a0b0c0d0e0f", i);
    (void)OLC_STREQ(s, want);
    (void)OLC_EQ(num_info(d, OL_DEVICE_INFO_VENDOR_ID, 4), 0x10de);
    (void)OLC_EQ(num_info(d, OL_DEVICE_INFO_NUM_COMPUTE_UNITS, 4), 80 + i);
    (void)OLC_EQ(num_info(d, OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE, 4), 1024);
    (void)OLC_EQ(num_info(d, OL_DEVICE_INFO_MAX_CLOCK_FREQUENCY, 4), 1530);
    (void)OLC_EQ(num_info(d, OL_DEVICE_INFO_MEMORY_CLOCK_RATE, 4), 877);
    (void)OLC_EQ(num_info(d, OL_DEVICE_INFO_ADDRESS_BITS, 4), 64);
    (void)OLC_EQ(num_info(d, OL_DEVICE_INFO_GLOBAL_MEM_SIZE, 8), (uint64_t)(i + 1) << 33);
    (void)OLC_EQ(num_info(d, OL_DEVICE_INFO_MAX_MEM_ALLOC_SIZE, 8), (uint64_t)(i + 1) << 33);
    (void)OLC_EQ(num_info(d, OL_DEVICE_INFO_WORK_GROUP_LOCAL_MEM_SIZE, 8), 49152);
    ol_dimensions_t dims = {0, 0, 0};
    (void)OLC_OK(olGetDeviceInfo(d, OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION, sizeof dims, &dims));
    (void)OLC_EQ(dims.x, 1024);
    (void)OLC_EQ(dims.y, 1024);
    (void)OLC_EQ(dims.z, 64);
    (void)OLC_OK(olGetDeviceInfo(d, OL_DEVICE_INFO_MAX_WORK_SIZE_PER_DIMENSION, sizeof dims, &dims));
    (void)OLC_EQ(dims.x, 2147483647u); /* the grid's limits, in groups */
    (void)OLC_EQ(dims.y, 65535);
    (void)OLC_EQ(dims.z, 65535);
    ol_platform_handle_t p = olc_platform_of(d);
    size_t n = 0;
    (void)OLC_OK(olGetPlatformInfoSize(p, OL_PLATFORM_INFO_VENDOR_NAME, &n));
    if (n > 0 && n <= sizeof s) {
      (void)OLC_OK(olGetPlatformInfo(p, OL_PLATFORM_INFO_VENDOR_NAME, n, s));
      if (olc_known_diff(OLC_LLVM, "LLVM 22.1 has no vendor name for its platforms"))
        (void)OLC_STREQ(s, "Unknown platform vendor");
      else
        (void)OLC_STREQ(s, "NVIDIA Corporation");
    }
    (void)OLC_OK(olGetPlatformInfoSize(p, OL_PLATFORM_INFO_VERSION, &n));
    if (n > 0 && n <= sizeof s) {
      (void)OLC_OK(olGetPlatformInfo(p, OL_PLATFORM_INFO_VERSION, n, s));
      if (olc_known_diff(OLC_LLVM, "LLVM 22.1's platforms all answer its own version"))
        (void)OLC_STREQ(s, "v0.0.1");
      else
        (void)OLC_STREQ(s, "12.4");
    }
  }
}

/* DEVICE, HOST and MANAGED memory; copies both ways with and without a
 * queue; fills with 1-, 4- and 8-byte patterns. On a remote GPU, whose HOST
 * and MANAGED memory are UNSUPPORTED (checked), `host` is this process's
 * own memory (named by the host device) and `managed` DEVICE memory, read
 * back with a copy. */
static void test_gpu_memory(void) {
  enum { N = 4096 };
  static unsigned char src[N], dst[N];
  for (int k = 0; k < N; k++)
    src[k] = (unsigned char)(k * 7 + 3);
  FOR_EACH_GPU(i, d) {
    void *dev = NULL, *host = NULL, *managed = NULL;
    ol_queue_handle_t q = NULL;
    const bool remote = olc_is_remote(d);
    ol_device_handle_t hostside = remote ? hostdev : d; /* names `host` in copies */
    (void)OLC_OK(olCreateQueue(d, &q));
    (void)OLC_OK(olMemAlloc(d, OL_ALLOC_TYPE_DEVICE, N, &dev));
    if (remote) {
      void *none = NULL;
      (void)OLC_ERR_CODE(olMemAlloc(d, OL_ALLOC_TYPE_HOST, N, &none), OL_ERRC_UNSUPPORTED);
      (void)OLC_ERR_CODE(olMemAlloc(d, OL_ALLOC_TYPE_MANAGED, N, &none), OL_ERRC_UNSUPPORTED);
      host = malloc(N);
      (void)OLC_OK(olMemAlloc(d, OL_ALLOC_TYPE_DEVICE, N, &managed));
    } else {
      (void)OLC_OK(olMemAlloc(d, OL_ALLOC_TYPE_HOST, N, &host));
      (void)OLC_OK(olMemAlloc(d, OL_ALLOC_TYPE_MANAGED, N, &managed));
    }
    if (!dev || !host || !managed || !q)
      goto out;
    /* NULL queue: done on return */
    memset(dst, 0, N);
    (void)OLC_OK(olMemcpy(NULL, dev, d, src, hostdev, N));
    (void)OLC_OK(olMemcpy(NULL, dst, hostdev, dev, d, N));
    (void)OLC_TRUE(memcmp(src, dst, N) == 0);
    /* on a queue, from and to pinned host memory, device to device */
    memcpy(host, src, N);
    (void)OLC_OK(olMemcpy(q, managed, d, host, hostside, N));
    (void)OLC_OK(olSyncQueue(q));
    if (remote) {
      memset(dst, 0, N);
      (void)OLC_OK(olMemcpy(NULL, dst, hostdev, managed, d, N));
      (void)OLC_TRUE(memcmp(dst, src, N) == 0);
    } else {
      (void)OLC_TRUE(memcmp(managed, src, N) == 0);
    }
    (void)OLC_OK(olMemFill(q, dev, 1, &(uint8_t){0x5a}, N));
    (void)OLC_OK(olMemcpy(q, host, hostside, dev, d, N));
    (void)OLC_OK(olSyncQueue(q));
    bool all = true;
    for (int k = 0; k < N; k++)
      all = all && ((unsigned char *)host)[k] == 0x5a;
    (void)OLC_TRUE(all);
    (void)OLC_OK(olMemFill(q, dev, 4, &(uint32_t){0x01020304}, N));
    (void)OLC_OK(olMemcpy(q, host, hostside, dev, d, N));
    (void)OLC_OK(olSyncQueue(q));
    all = true;
    for (int k = 0; k < N / 4; k++)
      all = all && ((uint32_t *)host)[k] == 0x01020304;
    (void)OLC_TRUE(all);
    uint64_t pat = 0x1122334455667788ull;
    (void)OLC_OK(olMemFill(q, dev, 8, &pat, N));
    (void)OLC_OK(olMemcpy(q, host, hostside, dev, d, N));
    (void)OLC_OK(olSyncQueue(q));
    all = true;
    for (int k = 0; k < N / 8; k++)
      all = all && ((uint64_t *)host)[k] == pat;
    (void)OLC_TRUE(all);
    /* device to device on the same GPU */
    void *dev2 = NULL;
    (void)OLC_OK(olMemAlloc(d, OL_ALLOC_TYPE_DEVICE, N, &dev2));
    if (dev2) {
      (void)OLC_OK(olMemcpy(q, dev2, d, managed, d, N));
      (void)OLC_OK(olMemcpy(q, dst, hostdev, dev2, d, N));
      (void)OLC_OK(olSyncQueue(q));
      (void)OLC_TRUE(memcmp(dst, src, N) == 0);
      (void)OLC_OK(olMemFree(dev2));
    }
    /* what the runtime knows of an allocation */
    ol_device_handle_t owner = NULL;
    size_t size = 0;
    ol_alloc_type_t type = OL_ALLOC_TYPE_FORCE_UINT32;
    (void)OLC_OK(olGetMemInfo(dev, OL_MEM_INFO_DEVICE, sizeof owner, &owner));
    (void)OLC_PTR_EQ(owner, d);
    (void)OLC_OK(olGetMemInfo((char *)dev + 100, OL_MEM_INFO_SIZE, sizeof size, &size));
    (void)OLC_EQ(size, N);
    if (!remote) {
      (void)OLC_OK(olGetMemInfo(host, OL_MEM_INFO_TYPE, sizeof type, &type));
      (void)OLC_EQ(type, OL_ALLOC_TYPE_HOST);
    }
  out:
    if (dev) (void)OLC_OK(olMemFree(dev));
    if (host && remote) free(host);
    else if (host) (void)OLC_OK(olMemFree(host));
    if (managed) (void)OLC_OK(olMemFree(managed));
    if (q) (void)OLC_OK(olDestroyQueue(q));
  }
}

/* Queues and events: an empty queue syncs, an event on it is complete,
 * one queue waits for another's event. */
static void test_gpu_queue_event(void) {
  FOR_EACH_GPU(i, d) {
    ol_queue_handle_t a = NULL, b = NULL;
    ol_event_handle_t e = NULL;
    (void)OLC_OK(olCreateQueue(d, &a));
    (void)OLC_OK(olCreateQueue(d, &b));
    if (!a || !b)
      goto out;
    (void)OLC_OK(olSyncQueue(a));
    ol_device_handle_t qd = NULL;
    (void)OLC_OK(olGetQueueInfo(a, OL_QUEUE_INFO_DEVICE, sizeof qd, &qd));
    (void)OLC_PTR_EQ(qd, d);
    (void)OLC_OK(olCreateEvent(a, &e));
    if (!e)
      goto out;
    (void)OLC_OK(olSyncEvent(e));
    bool done = false;
    (void)OLC_OK(olGetEventInfo(e, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done));
    (void)OLC_TRUE(done);
    ol_queue_handle_t eq = NULL;
    (void)OLC_OK(olGetEventInfo(e, OL_EVENT_INFO_QUEUE, sizeof eq, &eq));
    (void)OLC_PTR_EQ(eq, a);
    (void)OLC_OK(olWaitEvents(b, &e, 1));
    (void)OLC_OK(olSyncQueue(b));
  out:
    if (e) (void)OLC_OK(olDestroyEvent(e));
    if (a) (void)OLC_OK(olDestroyQueue(a));
    if (b) (void)OLC_OK(olDestroyQueue(b));
  }
}

/* A program from a cubin, its kernel launched, its global read and written
 * through its device address. */
static void test_gpu_program(void) {
  size_t fsize = 0, gsize = 0;
  void *foo = read_image("foo", &fsize), *glob = read_image("global", &gsize);
  if (!foo || !glob)
    goto done;
  FOR_EACH_GPU(i, d) {
    bool valid = false;
    (void)OLC_OK(olIsValidBinary(d, foo, fsize, &valid));
    (void)OLC_TRUE(valid);
    /* the same image for sm_90: not for these sm_80 GPUs */
    unsigned char *sm90 = malloc(fsize);
    if (sm90) {
      memcpy(sm90, foo, fsize);
      sm90[48] = 90;
      (void)OLC_OK(olIsValidBinary(d, sm90, fsize, &valid));
      (void)OLC_TRUE(!valid);
      free(sm90);
    }
    ol_program_handle_t p = NULL, g = NULL;
    ol_queue_handle_t q = NULL;
    void *out = NULL;
    uint32_t host[256];
    (void)OLC_OK(olCreateQueue(d, &q));
    (void)OLC_OK(olCreateProgram(d, foo, fsize, &p));
    (void)OLC_OK(olMemAlloc(d, OL_ALLOC_TYPE_DEVICE, sizeof host, &out));
    if (!p || !q || !out)
      goto out;
    ol_symbol_handle_t k = NULL;
    (void)OLC_OK(olGetSymbol(p, "foo", OL_SYMBOL_KIND_KERNEL, &k));
    ol_symbol_handle_t none = NULL;
    (void)OLC_ERR_CODE(olGetSymbol(p, "no_such_kernel", OL_SYMBOL_KIND_KERNEL, &none), OL_ERRC_NOT_FOUND);
    if (k) {
      struct {
        void *out;
      } args = {out};
      ol_kernel_launch_size_args_t ls = {1, {4, 1, 1}, {64, 1, 1}, 0};
      (void)OLC_OK(olLaunchKernel(q, d, k, &args, sizeof args, &ls));
      memset(host, 0xff, sizeof host);
      (void)OLC_OK(olMemcpy(q, host, hostdev, out, d, sizeof host));
      (void)OLC_OK(olSyncQueue(q));
      bool all = true;
      for (uint32_t w = 0; w < 256; w++)
        all = all && host[w] == w;
      (void)OLC_TRUE(all);
      ol_symbol_kind_t kind = OL_SYMBOL_KIND_FORCE_UINT32;
      (void)OLC_OK(olGetSymbolInfo(k, OL_SYMBOL_INFO_KIND, sizeof kind, &kind));
      (void)OLC_EQ(kind, OL_SYMBOL_KIND_KERNEL);
    }
    (void)OLC_OK(olCreateProgram(d, glob, gsize, &g));
    if (g) {
      ol_symbol_handle_t v = NULL, w = NULL;
      (void)OLC_OK(olGetSymbol(g, "global", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &v));
      (void)OLC_OK(olGetSymbol(g, "write", OL_SYMBOL_KIND_KERNEL, &w));
      if (v && w) {
        size_t vs = 0;
        void *addr = NULL;
        (void)OLC_OK(olGetSymbolInfo(v, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, sizeof vs, &vs));
        (void)OLC_EQ(vs, 64 * sizeof(uint32_t));
        (void)OLC_OK(olGetSymbolInfo(v, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof addr, &addr));
        uint32_t unused = 0;
        ol_kernel_launch_size_args_t ls = {1, {1, 1, 1}, {64, 1, 1}, 0};
        (void)OLC_OK(olLaunchKernel(q, d, w, &unused, sizeof unused, &ls));
        memset(host, 0, sizeof host);
        (void)OLC_OK(olMemcpy(q, host, hostdev, addr, d, 64 * sizeof(uint32_t)));
        (void)OLC_OK(olSyncQueue(q));
        bool all = true;
        for (uint32_t x = 0; x < 64; x++)
          all = all && host[x] == 2 * x;
        (void)OLC_TRUE(all);
      }
      (void)OLC_OK(olDestroyProgram(g));
    }
  out:
    if (out) (void)OLC_OK(olMemFree(out));
    if (p) (void)OLC_OK(olDestroyProgram(p));
    if (q) (void)OLC_OK(olDestroyQueue(q));
  }
done:
  free(foo);
  free(glob);
}

int main(void) {
  const char *drivers = getenv("CONFORMANCE_DRIVER_DIR"), *imgs = getenv("CONFORMANCE_GPU_IMAGES");
  if (!OLC_NEEDS(drivers && *drivers && imgs && *imgs, "the CUDA driver double (make check-fake-cuda runs these)"))
    return olc_summary("gpu");
  snprintf(images, sizeof images, "%s", imgs);
  if (!OLC_OK(olInit()))
    return olc_summary("gpu");
  (void)OLC_OK(olIterateDevices(collect_cuda, NULL));
  hostdev = olc_host_device();
  OLC_RUN(test_gpu_info);
  OLC_RUN(test_gpu_memory);
  OLC_RUN(test_gpu_queue_event);
  OLC_RUN(test_gpu_program);
  (void)OLC_OK(olShutDown());
  return olc_summary("gpu");
}
