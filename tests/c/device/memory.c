/* Memory of the device under test: olMemAlloc, olMemFree, olGetMemInfo(Size),
 * olMemcpy, olMemFill, olMemRegister, olMemUnregister.
 * SPDX-License-Identifier: Apache-2.0 */
#include "oldevices.h"

static const ol_alloc_type_t all_types[] = {OL_ALLOC_TYPE_HOST, OL_ALLOC_TYPE_DEVICE,
                                            OL_ALLOC_TYPE_MANAGED};

/* ------------------------------------------------------------ olMemAlloc */

static void test_alloc_each_type(void) {
  OLC_HOST_VISIBLE();
  for (int t = 0; t < 3; t++) {
    void *p = NULL;
    if (!OLC_OK(olMemAlloc(olc_dev, all_types[t], 1024, &p)))
      continue;
    OLC_TRUE(p != NULL);
    OLC_EQ((uintptr_t)p % 64, 0);
    /* every byte is usable (on the host device it is ordinary memory;
     * elsewhere DEVICE memory is reached through olMemcpy) */
    olc_set(all_types[t], p, 0x5a, 1024);
    unsigned char last = 0;
    olc_get(all_types[t], &last, (unsigned char *)p + 1023, 1);
    OLC_EQ(last, 0x5a);
    OLC_OK(olMemFree(p));
  }
}

static void test_alloc_odd_sizes(void) {
  static const size_t sizes[] = {1, 3, 63, 65, 4097, 1u << 20, (8u << 20) + 1};
  void *ptrs[7];
  for (int i = 0; i < 7; i++) {
    ptrs[i] = olc_alloc(OL_ALLOC_TYPE_DEVICE, sizes[i]);
    OLC_TRUE(ptrs[i] != NULL);
    if (ptrs[i]) {
      OLC_EQ((uintptr_t)ptrs[i] % 64, 0);
      olc_set(OL_ALLOC_TYPE_DEVICE, ptrs[i], i, sizes[i]);
    }
  }
  /* the allocations do not overlap: each still holds its own byte */
  for (int i = 0; i < 7; i++)
    if (ptrs[i]) {
      unsigned char first = 0, last = 0;
      olc_get(OL_ALLOC_TYPE_DEVICE, &first, ptrs[i], 1);
      olc_get(OL_ALLOC_TYPE_DEVICE, &last, (unsigned char *)ptrs[i] + sizes[i] - 1, 1);
      OLC_EQ(first, i);
      OLC_EQ(last, i);
      size_t got = 0;
      OLC_OK(olGetMemInfo(ptrs[i], OL_MEM_INFO_SIZE, sizeof got, &got));
      OLC_EQ(got, sizes[i]);
      OLC_OK(olMemFree(ptrs[i]));
    }
}

static void test_alloc_many(void) {
  OLC_HOST_VISIBLE();
  enum { N = 500 };
  static void *p[N];
  int made = 0;
  for (int i = 0; i < N; i++)
    if (olMemAlloc(olc_dev, all_types[i % 3], 32 + (size_t)i, &p[i]) == NULL) {
      made++;
      uint32_t v = (uint32_t)i;
      olc_put(all_types[i % 3], p[i], &v, sizeof v);
    } else {
      p[i] = NULL;
    }
  OLC_EQ(made, N);
  int intact = 0;
  for (int i = 0; i < N; i++)
    if (p[i]) {
      uint32_t v = 0;
      olc_get(all_types[i % 3], &v, p[i], sizeof v);
      intact += v == (uint32_t)i;
      OLC_OK(olMemFree(p[i]));
    }
  OLC_EQ(intact, N);
}

/* Sizes around every boundary where a small-allocation pool would change
 * its block size (64 B steps to 256 B, then four steps per doubling to
 * 64 KiB, and past it), all live at once: each is 64-byte aligned, holds
 * its own bytes, and olGetMemInfo finds it from its first, middle and last
 * byte with its exact size; a byte past its end is not in it. */
static void test_alloc_class_edges(void) {
  enum { MAXN = 200 };
  static size_t sizes[MAXN];
  static unsigned char *p[MAXN];
  int n = 0;
  for (size_t step = 64, from = 64; from <= (128u << 10); from += step) {
    if (from >= 512 && (from & (from - 1)) == 0)
      step = from / 4;
    sizes[n++] = from - 1;
    sizes[n++] = from;
    sizes[n++] = from + 1;
  }
  for (int i = 0; i < n; i++) {
    p[i] = olc_alloc(OL_ALLOC_TYPE_DEVICE, sizes[i]);
    OLC_TRUE(p[i] != NULL);
    if (!p[i])
      continue;
    OLC_EQ((uintptr_t)p[i] % 64, 0);
    olc_set(OL_ALLOC_TYPE_DEVICE, p[i], (unsigned char)i, sizes[i]);
  }
  for (int i = 0; i < n; i++) {
    if (!p[i])
      continue;
    unsigned char first = 0, last = 0;
    olc_get(OL_ALLOC_TYPE_DEVICE, &first, p[i], 1);
    olc_get(OL_ALLOC_TYPE_DEVICE, &last, p[i] + sizes[i] - 1, 1);
    OLC_EQ(first, (unsigned char)i);
    OLC_EQ(last, (unsigned char)i);
    unsigned char *where[] = {p[i], p[i] + sizes[i] / 2, p[i] + sizes[i] - 1};
    for (int w = 0; w < 3; w++) {
      void *base = NULL;
      size_t size = 0;
      OLC_OK(olGetMemInfo(where[w], OL_MEM_INFO_BASE, sizeof base, &base));
      OLC_EQ((uintptr_t)base, (uintptr_t)p[i]);
      OLC_OK(olGetMemInfo(where[w], OL_MEM_INFO_SIZE, sizeof size, &size));
      OLC_EQ(size, sizes[i]);
    }
    /* past the end: no allocation, or another one */
    void *base = NULL;
    ol_result_t r = olGetMemInfo(p[i] + sizes[i], OL_MEM_INFO_BASE, sizeof base, &base);
    OLC_TRUE(r != NULL ? r->Code == OL_ERRC_NOT_FOUND : base == p[i] + sizes[i]);
  }
  for (int i = 0; i < n; i++)
    if (p[i])
      OLC_OK(olMemFree(p[i]));
}

/* A freed small block stays freed for the API until it is handed out
 * again: olGetMemInfo does not find it, a second olMemFree and a free of
 * an interior address are refused, a copy that starts in a live
 * neighbour and runs into it is refused. */
static void test_freed_small_block(void) {
  for (size_t size = 16; size <= (64u << 10); size *= 4) {
    unsigned char *a = olc_alloc(OL_ALLOC_TYPE_DEVICE, size);
    unsigned char *b = olc_alloc(OL_ALLOC_TYPE_DEVICE, size);
    if (!a || !b)
      return;
    OLC_ERR_CODE(olMemFree(b + 1), OL_ERRC_INVALID_ARGUMENT);
    OLC_OK(olMemFree(b));
    void *base = NULL;
    OLC_ERR_CODE(olGetMemInfo(b, OL_MEM_INFO_BASE, sizeof base, &base), OL_ERRC_NOT_FOUND);
    OLC_ERR_CODE(olGetMemInfo(b + size - 1, OL_MEM_INFO_BASE, sizeof base, &base), OL_ERRC_NOT_FOUND);
    OLC_ERR_CODE(olMemFree(b), OL_ERRC_INVALID_ARGUMENT);
    unsigned char src[32] = {0};
    OLC_ERR_CODE(olMemcpy(NULL, a + size - 1, olc_dev, src, olc_host, 2), OL_ERRC_INVALID_SIZE);
    OLC_OK(olMemFree(a));
    OLC_ERR_CODE(olMemFree(a), OL_ERRC_INVALID_ARGUMENT);
  }
}

/* Threads allocating and freeing small blocks at once, each checking that
 * its blocks keep their bytes and are found by olGetMemInfo. */
static void *alloc_worker(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  enum { LIVE = 64, STEPS = 3000 };
  unsigned char *live[LIVE] = {0};
  size_t sizes[LIVE] = {0};
  uint64_t s = 0x9e3779b97f4a7c15ull * (id + 1);
  intptr_t bad = 0;
  for (int k = 0; k < STEPS; k++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    int i = (int)(s % LIVE);
    if (live[i]) {
      unsigned char got = 0;
      bad += olMemcpy(NULL, &got, olc_host, live[i] + sizes[i] - 1, olc_dev, 1) != NULL;
      bad += got != (unsigned char)(id * 31 + i);
      void *base = NULL;
      bad += olGetMemInfo(live[i] + sizes[i] / 2, OL_MEM_INFO_BASE, sizeof base, &base) != NULL;
      bad += base != live[i];
      bad += olMemFree(live[i]) != NULL;
      live[i] = NULL;
    } else {
      sizes[i] = 1 + (size_t)(s >> 20) % (70u << 10);
      if (olMemAlloc(olc_dev, OL_ALLOC_TYPE_DEVICE, sizes[i], (void **)&live[i]) != NULL) {
        bad++;
        live[i] = NULL;
        continue;
      }
      unsigned char v = (unsigned char)(id * 31 + i);
      bad += olMemcpy(NULL, live[i] + sizes[i] - 1, olc_dev, &v, olc_host, 1) != NULL;
    }
  }
  for (int i = 0; i < LIVE; i++)
    if (live[i])
      bad += olMemFree(live[i]) != NULL;
  return (void *)bad;
}

static void test_alloc_threads(void) { OLC_EQ(olc_threads(4, alloc_worker, NULL, 1), 0); }

static void test_alloc_errors(void) {
  void *p = (void *)0x1;
  /* the queue handle is not a device handle */
  ol_queue_handle_t q = olc_queue();
  OLC_ERR_HAS(olMemAlloc((ol_device_handle_t)q, OL_ALLOC_TYPE_DEVICE, 1024, &p), OL_ERRC_INVALID_DEVICE,
              "queue");
  OLC_EQ((uintptr_t)p, 1); /* a refused call leaves the result alone */
  OLC_OK(olDestroyQueue(q));
  /* far more than the machine has */
  p = NULL;
  ol_result_t r = olMemAlloc(olc_dev, OL_ALLOC_TYPE_DEVICE, (size_t)1 << 62, &p);
  OLC_TRUE(r != NULL);
  if (r)
    OLC_EQ(r->Code, OL_ERRC_OUT_OF_RESOURCES);
  else
    olMemFree(p);
}

/* ------------------------------------------------------------- olMemFree */

static void test_free_errors(void) {
  OLC_HOST_VISIBLE();
  void *p = olc_alloc(OL_ALLOC_TYPE_HOST, 256);
  if (!p)
    return;
  /* only the base frees */
  OLC_ERR_CODE(olMemFree((char *)p + 16), OL_ERRC_INVALID_ARGUMENT);
  OLC_OK(olMemFree(p));
  /* a second free is refused */
  OLC_ERR_CODE(olMemFree(p), OL_ERRC_INVALID_ARGUMENT);
}

/* ---------------------------------------------------------- olGetMemInfo */

static void test_mem_info(void) {
  OLC_HOST_VISIBLE();
  for (int t = 0; t < 3; t++) {
    char *p = olc_alloc(all_types[t], 1024);
    if (!p)
      continue;
    char *where[] = {p, p + 123, p + 1023};
    for (int w = 0; w < 3; w++) {
      ol_device_handle_t d = NULL;
      void *base = NULL;
      size_t size = 0;
      ol_alloc_type_t type = OL_ALLOC_TYPE_LAST;
      OLC_OK(olGetMemInfo(where[w], OL_MEM_INFO_DEVICE, sizeof d, &d));
      OLC_EQ((uintptr_t)d, (uintptr_t)olc_dev);
      OLC_OK(olGetMemInfo(where[w], OL_MEM_INFO_BASE, sizeof base, &base));
      OLC_EQ((uintptr_t)base, (uintptr_t)p);
      OLC_OK(olGetMemInfo(where[w], OL_MEM_INFO_SIZE, sizeof size, &size));
      OLC_EQ(size, 1024);
      OLC_OK(olGetMemInfo(where[w], OL_MEM_INFO_TYPE, sizeof type, &type));
      OLC_EQ(type, all_types[t]);
    }
    /* one past the end is not part of the allocation */
    void *base = NULL;
    OLC_ERR_CODE(olGetMemInfo(p + 1024, OL_MEM_INFO_BASE, sizeof base, &base), OL_ERRC_NOT_FOUND);
    OLC_OK(olMemFree(p));
    /* a freed allocation is forgotten */
    OLC_ERR_CODE(olGetMemInfo(p, OL_MEM_INFO_BASE, sizeof base, &base), OL_ERRC_NOT_FOUND);
  }
}

static void test_mem_info_errors(void) {
  char *p = olc_alloc(OL_ALLOC_TYPE_DEVICE, 1024);
  if (!p)
    return;
  void *base = NULL;
  OLC_ERR_HAS(olGetMemInfo(p, OL_MEM_INFO_BASE, 0, &base), OL_ERRC_INVALID_SIZE, "PropSize == 0");
  OLC_ERR_CODE(olGetMemInfo(p, OL_MEM_INFO_BASE, sizeof base - 1, &base), OL_ERRC_INVALID_SIZE);
  ol_alloc_type_t type;
  OLC_ERR_CODE(olGetMemInfo(p, OL_MEM_INFO_TYPE, sizeof type - 1, &type), OL_ERRC_INVALID_SIZE);
  OLC_ERR_HAS(olGetMemInfo(p, (ol_mem_info_t)OLC_BIG, sizeof base, &base), OL_ERRC_INVALID_ENUMERATION,
              "olGetMemInfo enum '2147483647' is invalid");
  /* a bigger buffer is fine; only the value's bytes are written */
  unsigned char big[16];
  memset(big, 0xee, sizeof big);
  OLC_OK(olGetMemInfo(p, OL_MEM_INFO_SIZE, sizeof big, big));
  size_t got;
  memcpy(&got, big, sizeof got);
  OLC_EQ(got, 1024);
  OLC_EQ(big[8], 0xee);
  OLC_EQ(big[15], 0xee);
  OLC_OK(olMemFree(p));
}

static void test_mem_info_size(void) {
  OLC_HOST_VISIBLE();
  char *p = olc_alloc(OL_ALLOC_TYPE_MANAGED, 1024);
  if (!p)
    return;
  size_t n = 0;
  OLC_OK(olGetMemInfoSize(p + 5, OL_MEM_INFO_DEVICE, &n));
  OLC_EQ(n, sizeof(ol_device_handle_t));
  OLC_OK(olGetMemInfoSize(p, OL_MEM_INFO_BASE, &n));
  OLC_EQ(n, sizeof(void *));
  OLC_OK(olGetMemInfoSize(p, OL_MEM_INFO_SIZE, &n));
  OLC_EQ(n, sizeof(size_t));
  OLC_OK(olGetMemInfoSize(p, OL_MEM_INFO_TYPE, &n));
  OLC_EQ(n, sizeof(ol_alloc_type_t));
  OLC_ERR_HAS(olGetMemInfoSize(p, (ol_mem_info_t)OLC_BIG, &n), OL_ERRC_INVALID_ENUMERATION,
              "olGetMemInfo enum '2147483647' is invalid");
  OLC_ERR_CODE(olGetMemInfoSize((void *)0x1234, OL_MEM_INFO_SIZE, &n), OL_ERRC_NOT_FOUND);
  OLC_OK(olMemFree(p));
}

/* -------------------------------------------------------------- olMemcpy */

/* A place memory can live: malloc'd host memory, the three allocation
 * types, or a program global. `type` says how the CPU may reach it (a
 * global is device memory); `dev` is the device olMemcpy is told. */
typedef struct place {
  const char *name;
  uint8_t *p;
  ol_alloc_type_t type;
  ol_device_handle_t dev;
} place;

static void fill_seq(uint8_t *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    p[i] = (uint8_t)(i * 7u + seed);
}

static void test_memcpy_every_pair(void) {
  OLC_HOST_VISIBLE();
  enum { N = 256 }; /* the size of the `global` variable of global.so */
  ol_program_handle_t prog = olc_program("global");
  void *gaddr = NULL;
  size_t gsize = 0;
  if (!olc_global(prog, "global", &gaddr, &gsize))
    return;
  OLC_EQ(gsize, N);
  place places[] = {
      {"malloc", malloc(N), OL_ALLOC_TYPE_HOST, olc_host},
      {"host", olc_alloc(OL_ALLOC_TYPE_HOST, N), OL_ALLOC_TYPE_HOST, olc_dev},
      {"device", olc_alloc(OL_ALLOC_TYPE_DEVICE, N), OL_ALLOC_TYPE_DEVICE, olc_dev},
      {"managed", olc_alloc(OL_ALLOC_TYPE_MANAGED, N), OL_ALLOC_TYPE_MANAGED, olc_dev},
      {"global", gaddr, OL_ALLOC_TYPE_DEVICE, olc_dev},
  };
  enum { P = sizeof places / sizeof places[0] };
  ol_queue_handle_t q = olc_queue();
  unsigned seed = 1;
  for (int mode = 0; mode < 2; mode++) /* 0: NULL queue, 1: queued */
    for (int s = 0; s < P; s++)
      for (int d = 0; d < P; d++) {
        if (s == d)
          continue;
        uint8_t *src = places[s].p, *dst = places[d].p;
        uint8_t seq[N], got[N];
        fill_seq(seq, N, seed);
        olc_put(places[s].type, src, seq, N);
        olc_set(places[d].type, dst, 0, N);
        ol_device_handle_t dd = places[d].dev, sd = places[s].dev;
        bool ok;
        if (mode == 0) {
          ok = OLC_OK(olMemcpy(NULL, dst, dd, src, sd, N));
        } else {
          ok = OLC_OK(olMemcpy(q, dst, dd, src, sd, N)) && OLC_OK(olSyncQueue(q));
        }
        olc_get(places[d].type, got, dst, N);
        int bad = 0;
        for (size_t i = 0; i < N; i++)
          bad += got[i] != (uint8_t)(i * 7u + seed);
        if (ok && bad)
          olc_fail(__FILE__, __LINE__, "%s copy %s -> %s: %d bytes wrong",
                   mode ? "queued" : "synchronous", places[s].name, places[d].name, bad);
        else if (ok)
          olc_pass();
        seed++;
      }
  /* the kernel `read` sees what olMemcpy put in the global */
  uint32_t vals[64];
  for (int i = 0; i < 64; i++)
    vals[i] = 3000u + (uint32_t)i;
  OLC_OK(olMemcpy(q, gaddr, olc_dev, vals, olc_host, sizeof vals));
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_MANAGED, sizeof vals);
  ol_symbol_handle_t rd = olc_kernel(prog, "read");
  if (out && rd) {
    ol_kernel_launch_size_args_t l = olc_size1(1, 64);
    struct {
      uint32_t *out;
    } args = {out};
    OLC_OK(olLaunchKernel(q, olc_dev, rd, &args, sizeof args, &l));
    OLC_OK(olSyncQueue(q));
    OLC_EQ_ARRAY(out, 64, 3000u + i);
  }
  if (out)
    OLC_OK(olMemFree(out));
  OLC_OK(olDestroyQueue(q));
  free(places[0].p);
  for (int i = 1; i < 4; i++)
    if (places[i].p)
      OLC_OK(olMemFree(places[i].p));
  OLC_OK(olDestroyProgram(prog));
}

/* Copies on one queue run in order: a chain A -> B -> C -> D. */
static void test_memcpy_queue_order(void) {
  OLC_HOST_VISIBLE();
  enum { N = 1 << 20 };
  uint8_t *a = olc_alloc(OL_ALLOC_TYPE_HOST, N), *b = olc_alloc(OL_ALLOC_TYPE_DEVICE, N),
          *c = olc_alloc(OL_ALLOC_TYPE_MANAGED, N), *d = malloc(N);
  ol_queue_handle_t q = olc_queue();
  if (!a || !b || !c)
    return;
  fill_seq(a, N, 9);
  olc_set(OL_ALLOC_TYPE_DEVICE, b, 0, N), memset(c, 0, N), memset(d, 0, N);
  OLC_OK(olMemcpy(q, b, olc_dev, a, olc_dev, N));
  OLC_OK(olMemcpy(q, c, olc_dev, b, olc_dev, N));
  OLC_OK(olMemcpy(q, d, olc_host, c, olc_dev, N));
  OLC_OK(olSyncQueue(q));
  OLC_TRUE(memcmp(a, d, N) == 0);
  /* a copy of 0 bytes is allowed, queued or not, and changes nothing */
  OLC_OK(olMemcpy(q, d, olc_host, a, olc_dev, 0));
  OLC_OK(olMemcpy(NULL, d, olc_host, a, olc_dev, 0));
  OLC_OK(olSyncQueue(q));
  OLC_TRUE(memcmp(a, d, N) == 0);
  /* overlapping ranges of one allocation behave like memmove */
  for (int i = 0; i < 100; i++)
    a[i] = (uint8_t)i;
  OLC_OK(olMemcpy(NULL, a + 10, olc_dev, a, olc_dev, 50));
  int bad = 0;
  for (int i = 0; i < 50; i++)
    bad += a[10 + i] != (uint8_t)i;
  OLC_EQ(bad, 0);
  OLC_OK(olDestroyQueue(q));
  OLC_OK(olMemFree(a)), OLC_OK(olMemFree(b)), OLC_OK(olMemFree(c));
  free(d);
}

/* Overlapping copies inside one allocation behave like memmove for every
 * kind of memory, queued or not, up and down, close (many pieces) and far
 * apart: GPU drivers' copies are not memmove. */
static void test_memcpy_overlap(void) {
  OLC_HOST_VISIBLE();
  enum { N = 70000 };
  static const long cases[][3] = {/* from, to, size */
                                  {0, 10, 50},   {10, 0, 50},    {0, 1, 4096},
                                  {5, 2, 60000}, {0, 4096, 65000}, {9000, 100, 60000}};
  uint8_t *seq = malloc(N), *want = malloc(N);
  ol_queue_handle_t q = olc_queue();
  for (int t = 0; t < 3 && seq && want; t++)
    for (int queued = 0; queued < 2; queued++)
      for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint8_t *a = olc_alloc(all_types[t], N);
        if (!a)
          continue;
        for (int i = 0; i < N; i++)
          seq[i] = (uint8_t)(i * 7 + i / 251);
        memcpy(want, seq, N);
        memmove(want + cases[c][1], want + cases[c][0], (size_t)cases[c][2]);
        OLC_OK(olMemcpy(NULL, a, olc_dev, seq, olc_host, N));
        OLC_OK(olMemcpy(queued ? q : NULL, a + cases[c][1], olc_dev, a + cases[c][0], olc_dev,
                    (size_t)cases[c][2]));
        if (queued)
          OLC_OK(olSyncQueue(q));
        memset(seq, 0, N);
        OLC_OK(olMemcpy(NULL, seq, olc_host, a, olc_dev, N));
        int bad = 0, first = -1;
        for (int i = 0; i < N; i++)
          if (seq[i] != want[i] && bad++ == 0)
            first = i;
        if (!OLC_EQ(bad, 0))
          fprintf(stderr, "  type %d, %s, %ld bytes from +%ld to +%ld: first wrong byte at %d\n", t,
                  queued ? "queued" : "not queued", cases[c][2], cases[c][0], cases[c][1], first);
        OLC_OK(olMemFree(a));
      }
  OLC_OK(olDestroyQueue(q));
  free(seq), free(want);
}

/* A queued copy really is asynchronous: behind a blocked host function it
 * has not happened yet; after the release it has. */
static void test_memcpy_queued_is_async(void) {
  uint32_t src[16], dst[16];
  for (int i = 0; i < 16; i++)
    src[i] = 77u + (uint32_t)i, dst[i] = 0;
  ol_queue_handle_t q = olc_queue();
  olc_gate g;
  if (!olc_gate_close(&g, q))
    return;
  OLC_OK(olMemcpy(q, dst, olc_host, src, olc_host, sizeof src));
  olc_sleep_ms(50);
  OLC_EQ(dst[0], 0);
  /* the NULL-queue form does not wait for the blocked queue */
  uint32_t sync_dst[16] = {0};
  double t0 = olc_now_ms();
  OLC_OK(olMemcpy(NULL, sync_dst, olc_host, src, olc_host, sizeof src));
  OLC_TRUE(olc_now_ms() - t0 < 1000);
  OLC_EQ_ARRAY(sync_dst, 16, 77u + i);
  olc_gate_open(&g);
  OLC_OK(olSyncQueue(q));
  OLC_EQ_ARRAY(dst, 16, 77u + i);
  OLC_OK(olDestroyQueue(q));
}

/* Two copies from host memory the runtime does not know, in flight at once
 * on two queues: q1's copy of n1 bytes from h + off1 has run (q1 waits at
 * a gate behind it, not synced, so it still holds what the copy needed);
 * q2's copy of n2 bytes from h + off2 waits behind a gate while q1 copies
 * 8 more bytes from h + off1 + 8, is synced and gives back what it held. A
 * GPU backend that makes such memory reachable for each copy (AMDGPU locks
 * it) must keep it reachable until the last copy of it has run. */
static void copies_in_flight(size_t off1, size_t n1, size_t off2, size_t n2) {
  enum { N = 4096 };
  uint8_t *h = aligned_alloc(4096, N), back[N];
  uint8_t *d1 = olc_alloc(OL_ALLOC_TYPE_DEVICE, N), *d2 = olc_alloc(OL_ALLOC_TYPE_DEVICE, N);
  ol_queue_handle_t q1 = olc_queue(), q2 = olc_queue();
  if (!h || !d1 || !d2 || !q1 || !q2)
    goto out;
  for (int i = 0; i < N; i++)
    h[i] = (uint8_t)(i * 7 + 3);
  olc_gate g1, g2;
  OLC_OK(olMemcpy(q1, d1, olc_dev, h + off1, olc_host, n1));
  if (!olc_gate_close(&g1, q1))
    goto out;
  OLC_TRUE(olc_gate_wait_entered(&g1));
  if (!olc_gate_close(&g2, q2)) {
    olc_gate_open(&g1);
    goto out;
  }
  OLC_OK(olMemcpy(q2, d2, olc_dev, h + off2, olc_host, n2));
  olc_gate_open(&g1);
  OLC_OK(olMemcpy(q1, d1 + 8, olc_dev, h + off1 + 8, olc_host, 8));
  OLC_OK(olSyncQueue(q1));
  olc_gate_open(&g2);
  OLC_OK(olSyncQueue(q2));
  memset(back, 0, sizeof back);
  OLC_TRUE(olc_read(back, d2, n2));
  OLC_EQ_ARRAY(back, n2, (uint8_t)((i + off2) * 7 + 3));
  memset(back, 0, sizeof back);
  size_t n = n1 > 16 ? n1 : 16;
  OLC_TRUE(olc_read(back, d1, n));
  OLC_EQ_ARRAY(back, n1, (uint8_t)((i + off1) * 7 + 3));
  OLC_EQ_ARRAY(back + 8, 8, (uint8_t)((i + off1 + 8) * 7 + 3));
out:
  if (q1)
    OLC_OK(olDestroyQueue(q1));
  if (q2)
    OLC_OK(olDestroyQueue(q2));
  if (d1)
    OLC_OK(olMemFree(d1));
  if (d2)
    OLC_OK(olMemFree(d2));
  free(h);
}

/* From the same address with different sizes: the first copy of one
 * byte, the second of the whole buffer (hsa_amd_memory_unlock names a
 * range by its start alone). */
static void test_memcpy_same_start_in_flight(void) { copies_in_flight(0, 1, 0, 4096); }

/* The second inside the first's range: the runtime knows its memory only
 * through what the first copy made of it. (In a proxy, the staging
 * buffers of copies from several threads land where earlier ones were.) */
static void test_memcpy_inside_in_flight(void) { copies_in_flight(0, 4096, 100, 1000); }

/* A copy queued on a queue of another platform than the memory's (the host
 * device's queue, copying the device's DEVICE memory): the queue holds its
 * later work while the runtime makes the copy (impl/route.go), so the copy
 * keeps that queue's order: it waits behind a blocked host function, and
 * the queue's next copy reads what it wrote. On the host device the queue
 * is the memory's own; the order is the same. */
static void test_memcpy_on_other_platform_queue(void) {
  enum { N = 4096 };
  uint8_t *a = olc_alloc(OL_ALLOC_TYPE_DEVICE, N), *b = olc_alloc(OL_ALLOC_TYPE_DEVICE, N);
  uint8_t *seq = malloc(N), *out = malloc(N);
  ol_queue_handle_t q = NULL;
  olc_gate g;
  if (!a || !b || !seq || !out || !OLC_OK(olCreateQueue(olc_host, &q)))
    goto done;
  fill_seq(seq, N, 42);
  memset(out, 0, N);
  olc_write(a, seq, N);
  olc_memset(b, 0, N);
  if (!olc_gate_close(&g, q))
    goto done;
  OLC_OK(olMemcpy(q, b, olc_dev, a, olc_dev, N));   /* device -> device */
  OLC_OK(olMemcpy(q, out, olc_host, b, olc_dev, N)); /* device -> malloc, after it */
  olc_sleep_ms(20);
  uint8_t *early = olc_fetch(b, N);
  int moved = 0;
  for (size_t i = 0; i < N; i++)
    moved += early[i] != 0 || out[i] != 0;
  free(early);
  OLC_EQ(moved, 0); /* nothing ran behind the closed gate */
  olc_gate_open(&g);
  OLC_OK(olSyncQueue(q));
  OLC_TRUE(memcmp(out, seq, N) == 0);
  uint8_t *late = olc_fetch(b, N);
  OLC_TRUE(memcmp(late, seq, N) == 0);
  free(late);
done:
  if (q)
    OLC_OK(olDestroyQueue(q));
  if (a)
    OLC_OK(olMemFree(a));
  if (b)
    OLC_OK(olMemFree(b));
  free(seq), free(out);
}

static void test_memcpy_errors(void) {
  char a[8] = {0}, b[8] = {0};
  OLC_ERR_CODE(olMemcpy((ol_queue_handle_t)0x1234, a, olc_dev, b, olc_dev, 8), OL_ERRC_INVALID_QUEUE);
  ol_queue_handle_t q = olc_queue();
  OLC_OK(olDestroyQueue(q));
  OLC_ERR_HAS(olMemcpy(q, a, olc_dev, b, olc_dev, 8), OL_ERRC_INVALID_QUEUE, "destroyed");
}

/* ------------------------------------------------------------- olMemFill */

struct __attribute__((packed)) pat17 {
  uint8_t a;
  uint64_t b;
  uint32_t c;
  uint16_t d;
  uint16_t e;
};
_Static_assert(sizeof(struct pat17) == 17, "17-byte pattern");

/* Fills with `psize`-byte patterns and checks every element, for a NULL
 * queue and a queue, in several kinds of memory. */
static void check_fill(size_t psize, size_t total) {
  OLC_HOST_VISIBLE();
  uint8_t pat[64]; /* the longest pattern used below */
  for (size_t i = 0; i < psize; i++)
    pat[i] = (uint8_t)(0xa0 + i * 3);
  if (psize == 17) {
    struct pat17 s = {0x11, 0x2233445566778899ull, 0xaabbccdd, 0xeeff, 0x1357};
    memcpy(pat, &s, 17);
  }
  ol_queue_handle_t q = olc_queue();
  for (int kind = 0; kind < 4; kind++)
    for (int queued = 0; queued < 2; queued++) {
      /* 64 guard bytes either side of the filled range */
      uint8_t *mem = kind < 3 ? olc_alloc(all_types[kind], total + 128) : malloc(total + 128);
      if (!mem)
        continue;
      ol_alloc_type_t type = kind < 3 ? all_types[kind] : OL_ALLOC_TYPE_HOST;
      olc_set(type, mem, 0x33, total + 128);
      bool ok;
      if (queued)
        ok = OLC_OK(olMemFill(q, mem + 64, psize, pat, total)) && OLC_OK(olSyncQueue(q));
      else
        ok = OLC_OK(olMemFill(NULL, mem + 64, psize, pat, total));
      uint8_t *got = mem;
      if (!olc_cpu_ok(type)) {
        got = olc_fetch(mem, total + 128);
        if (!got)
          continue;
      }
      size_t bad = 0, guard = 0;
      for (size_t i = 0; i < total; i++)
        bad += got[64 + i] != pat[i % psize];
      for (size_t i = 0; i < 64; i++)
        guard += (got[i] != 0x33) + (got[64 + total + i] != 0x33);
      if (got != mem)
        free(got);
      if (ok && (bad || guard))
        olc_fail(__FILE__, __LINE__,
                 "fill with a %zu-byte pattern over %zu bytes (%s, %s): %zu wrong bytes, %zu "
                 "guard bytes changed",
                 psize, total, kind < 3 ? "olMemAlloc" : "malloc", queued ? "queued" : "NULL queue",
                 bad, guard);
      else if (ok)
        olc_pass();
      if (kind < 3)
        OLC_OK(olMemFree(mem));
      else
        free(mem);
    }
  OLC_OK(olDestroyQueue(q));
}

static void test_fill_patterns(void) {
  check_fill(1, 1024);
  check_fill(2, 1024);
  check_fill(4, 1024);
  check_fill(16, 1024);
  check_fill(17, 17 * 64);
  check_fill(8, 8);
  check_fill(3, 3 * 1000001);
  check_fill(64, 64 * 4096);
}

/* The pattern is copied at the call: changing it while the fill waits in
 * the queue does not change what is written. */
static void test_fill_pattern_copied(void) {
  ol_queue_handle_t q = olc_queue();
  uint32_t *mem = olc_alloc(OL_ALLOC_TYPE_DEVICE, 64 * sizeof(uint32_t));
  olc_gate g;
  if (!mem || !olc_gate_close(&g, q))
    return;
  uint32_t pat = 0xcafef00d;
  OLC_OK(olMemFill(q, mem, sizeof pat, &pat, 64 * sizeof(uint32_t)));
  pat = 0xdeadbeef;
  olc_gate_open(&g);
  OLC_OK(olSyncQueue(q));
  OLC_EQ_DARRAY(uint32_t, mem, 64, 0xcafef00du);
  /* FillSize 0 writes nothing */
  OLC_OK(olMemFill(q, mem, sizeof pat, &pat, 0));
  OLC_OK(olMemFill(NULL, mem, sizeof pat, &pat, 0));
  OLC_OK(olSyncQueue(q));
  OLC_EQ_DARRAY(uint32_t, mem, 64, 0xcafef00du);
  OLC_OK(olMemFree(mem));
  OLC_OK(olDestroyQueue(q));
}

static void test_fill_errors(void) {
  OLC_HOST_VISIBLE();
  uint8_t *mem = olc_alloc(OL_ALLOC_TYPE_MANAGED, 1025);
  uint16_t pat = 7;
  if (!mem)
    return;
  ol_queue_handle_t q = olc_queue();
  OLC_ERR_HAS(olMemFill(q, mem, 2, &pat, 1025), OL_ERRC_INVALID_SIZE, "FillSize % PatternSize != 0");
  OLC_ERR_HAS(olMemFill(NULL, mem, 2, &pat, 1025), OL_ERRC_INVALID_SIZE, "FillSize % PatternSize != 0");
  OLC_ERR_HAS(olMemFill(q, mem, 0, &pat, 16), OL_ERRC_INVALID_SIZE, "PatternSize == 0");
  OLC_ERR_HAS(olMemFill(q, NULL, 2, &pat, 16), OL_ERRC_INVALID_NULL_POINTER, "NULL == Ptr");
  OLC_ERR_HAS(olMemFill(q, mem, 2, NULL, 16), OL_ERRC_INVALID_NULL_POINTER, "NULL == PatternPtr");
  OLC_ERR_CODE(olMemFill((ol_queue_handle_t)0x1234, mem, 2, &pat, 16), OL_ERRC_INVALID_QUEUE);
  OLC_OK(olSyncQueue(q));
  OLC_OK(olDestroyQueue(q));
  OLC_OK(olMemFree(mem));
}

/* --------------------------------------------------- olMemRegister etc. */

static void test_register_basic(void) {
  OLC_HOST_VISIBLE();
  uint32_t arr[256];
  void *pinned = NULL;
  if (!OLC_OK(olMemRegister(olc_dev, arr, sizeof arr, 0, &pinned)))
    return;
  OLC_TRUE(pinned != NULL);
  OLC_EQ((uintptr_t)pinned, (uintptr_t)arr);
  /* the pinned pointer is a valid copy target */
  uint32_t src[256];
  for (int i = 0; i < 256; i++)
    src[i] = 5u * (uint32_t)i;
  ol_queue_handle_t q = olc_queue();
  OLC_OK(olMemcpy(q, pinned, olc_host, src, olc_host, sizeof src));
  OLC_OK(olSyncQueue(q));
  OLC_EQ_ARRAY(arr, 256, 5u * i);
  OLC_OK(olDestroyQueue(q));
  OLC_OK(olMemUnregister(olc_dev, pinned));
  OLC_ERR_CODE(olMemUnregister(olc_dev, arr), OL_ERRC_INVALID_ARGUMENT);
}

static void test_register_twice(void) {
  OLC_HOST_VISIBLE();
  char arr[4096];
  void *p1 = NULL, *p2 = NULL;
  OLC_OK(olMemRegister(olc_dev, arr, sizeof arr, 0, &p1));
  OLC_OK(olMemRegister(olc_dev, arr, sizeof arr, 0, &p2));
  OLC_EQ((uintptr_t)p1, (uintptr_t)arr);
  OLC_EQ((uintptr_t)p2, (uintptr_t)arr);
  OLC_OK(olMemUnregister(olc_dev, arr));
  OLC_OK(olMemUnregister(olc_dev, arr));
  /* a third unregister has nothing left to drop */
  OLC_ERR_CODE(olMemUnregister(olc_dev, arr), OL_ERRC_INVALID_ARGUMENT);
}

static void test_register_contained(void) {
  OLC_HOST_VISIBLE();
  char arr[4096];
  void *p = NULL;
  OLC_OK(olMemRegister(olc_dev, arr, sizeof arr, 0, &p));
  /* a range inside a registered one adds a user of it */
  OLC_OK(olMemRegister(olc_dev, arr + 100, 200, 0, &p));
  OLC_EQ((uintptr_t)p, (uintptr_t)(arr + 100));
  OLC_OK(olMemUnregister(olc_dev, arr));
  OLC_OK(olMemUnregister(olc_dev, arr));
  OLC_ERR_CODE(olMemUnregister(olc_dev, arr), OL_ERRC_INVALID_ARGUMENT);
}

static void test_register_overlap(void) {
  OLC_HOST_VISIBLE();
  uint32_t arr[64];
  void *p = NULL;
  OLC_OK(olMemRegister(olc_dev, arr, sizeof arr, 0, &p));
  /* starts inside, ends beyond: partial overlap */
  OLC_ERR_CODE(olMemRegister(olc_dev, arr + 2, sizeof arr, 0, &p), OL_ERRC_INVALID_ARGUMENT);
  /* starts before, ends inside */
  static uint32_t big[256];
  void *q = NULL;
  OLC_OK(olMemRegister(olc_dev, big + 128, 64 * sizeof(uint32_t), 0, &q));
  OLC_ERR_CODE(olMemRegister(olc_dev, big + 100, 64 * sizeof(uint32_t), 0, &p), OL_ERRC_INVALID_ARGUMENT);
  /* covers it completely: also a partial overlap, not a containment */
  OLC_ERR_CODE(olMemRegister(olc_dev, big, sizeof big, 0, &p), OL_ERRC_INVALID_ARGUMENT);
  /* adjacent, not overlapping, is fine */
  OLC_OK(olMemRegister(olc_dev, big + 192, 64 * sizeof(uint32_t), 0, &p));
  OLC_OK(olMemUnregister(olc_dev, big + 192));
  OLC_OK(olMemUnregister(olc_dev, big + 128));
  /* the failed registrations left nothing behind */
  OLC_ERR_CODE(olMemUnregister(olc_dev, big + 100), OL_ERRC_INVALID_ARGUMENT);
  OLC_OK(olMemUnregister(olc_dev, arr));
  OLC_ERR_CODE(olMemUnregister(olc_dev, arr), OL_ERRC_INVALID_ARGUMENT);
}

static void test_register_errors(void) {
  OLC_HOST_VISIBLE();
  char arr[64];
  void *p = (void *)0x1;
  OLC_ERR_CODE(olMemUnregister(olc_dev, arr), OL_ERRC_INVALID_ARGUMENT);
  OLC_ERR_CODE(olMemRegister((ol_device_handle_t)0x1234, arr, sizeof arr, 0, &p), OL_ERRC_INVALID_DEVICE);
  OLC_EQ((uintptr_t)p, 1); /* a refused call leaves the result alone */
}


/* A range that runs past the end of the address space is not a range. */
static void test_register_wrapping_range(void) {
  OLC_HOST_VISIBLE();
  void *p = NULL;
  void *top = (void *)(UINTPTR_MAX - 10);
  ol_result_t r = olMemRegister(olc_dev, top, 100, 0, &p);
  if (!OLC_TRUE(r != NULL)) {
    /* it was accepted: then it must at least be possible to drop it */
    OLC_OK(olMemUnregister(olc_dev, top));
  } else {
    OLC_TRUE(r->Code == OL_ERRC_INVALID_SIZE || r->Code == OL_ERRC_INVALID_ARGUMENT);
  }
  /* ordinary registrations are unaffected */
  char arr[64];
  OLC_OK(olMemRegister(olc_dev, arr, sizeof arr, 0, &p));
  OLC_OK(olMemUnregister(olc_dev, arr));
  OLC_ERR_CODE(olMemUnregister(olc_dev, arr), OL_ERRC_INVALID_ARGUMENT);
}

/* Registration of olMemAlloc'd memory works too, and different threads can
 * register and unregister disjoint ranges at the same time. */
static void *register_worker(void *arg) {
  char *base = arg;
  int bad = 0;
  for (int i = 0; i < 200; i++) {
    void *p = NULL;
    bad += olMemRegister(olc_dev, base, 512, 0, &p) != NULL;
    bad += p != base;
    bad += olMemRegister(olc_dev, base + 8, 64, 0, &p) != NULL;
    bad += olMemUnregister(olc_dev, base) != NULL;
    bad += olMemUnregister(olc_dev, base) != NULL;
  }
  return (void *)(intptr_t)bad;
}

static void test_register_threads(void) {
  OLC_HOST_VISIBLE();
  char *mem = olc_alloc(OL_ALLOC_TYPE_HOST, 8 * 1024);
  if (!mem)
    return;
  OLC_EQ(olc_threads(8, register_worker, mem, 1024), 0);
  OLC_ERR_CODE(olMemUnregister(olc_dev, mem), OL_ERRC_INVALID_ARGUMENT);
  OLC_OK(olMemFree(mem));
}

/* olMemRegister of host memory while copies of it are in flight. With n1
 * > 0, q1 first copies n1 bytes from h + off1 and waits at a gate (holding
 * what that copy needed: AMDGPU's temporary lock) while [h + roff, + rn) is
 * registered; then q2 queues, behind a gate, a copy from the registered
 * range and one into its first half; q1 is synced (the first copy's lock
 * goes) and, with early, the range is unregistered before q2's copies run.
 * Neither the first copy's end nor the unregistration may leave the
 * registered range unreachable for copies that use it. */
static void register_in_flight(size_t off1, size_t n1, size_t roff, size_t rn, bool early) {
  enum { N = 4096 };
  uint8_t *h = aligned_alloc(4096, N), back[N];
  uint8_t *d1 = olc_alloc(OL_ALLOC_TYPE_DEVICE, N), *d2 = olc_alloc(OL_ALLOC_TYPE_DEVICE, N),
          *d3 = olc_alloc(OL_ALLOC_TYPE_DEVICE, N);
  ol_queue_handle_t q1 = olc_queue(), q2 = olc_queue();
  bool registered = false;
  olc_gate g1, g2;
  if (!h || !d1 || !d2 || !d3 || !q1 || !q2)
    goto out;
  for (int i = 0; i < N; i++)
    h[i] = (uint8_t)(i * 7 + 3), back[i] = (uint8_t)(i * 5 + 1);
  if (!OLC_OK(olMemcpy(NULL, d3, olc_dev, back, olc_host, N)))
    goto out;
  if (n1 > 0) {
    OLC_OK(olMemcpy(q1, d1, olc_dev, h + off1, olc_host, n1));
    if (!olc_gate_close(&g1, q1))
      goto out;
    OLC_TRUE(olc_gate_wait_entered(&g1));
  }
  void *p = NULL;
  registered = OLC_OK(olMemRegister(olc_dev, h + roff, rn, 0, &p));
  if (!olc_gate_close(&g2, q2)) {
    if (n1 > 0)
      olc_gate_open(&g1);
    goto out;
  }
  OLC_OK(olMemcpy(q2, d2, olc_dev, h + roff, olc_host, rn));
  OLC_OK(olMemcpy(q2, h + roff, olc_host, d3, olc_dev, rn / 2));
  if (n1 > 0) {
    olc_gate_open(&g1);
    OLC_OK(olSyncQueue(q1));
  }
  if (early && registered) {
    OLC_OK(olMemUnregister(olc_dev, h + roff));
    registered = false;
  }
  olc_gate_open(&g2);
  OLC_OK(olSyncQueue(q2));
  memset(back, 0, sizeof back);
  OLC_TRUE(olc_read(back, d2, rn));
  OLC_EQ_ARRAY(back, rn, (uint8_t)((i + roff) * 7 + 3));
  OLC_EQ_ARRAY(h + roff, rn / 2, (uint8_t)(i * 5 + 1));
  OLC_EQ_ARRAY(h + roff + rn / 2, rn - rn / 2, (uint8_t)((i + roff + rn / 2) * 7 + 3));
  /* and again, queued, after every earlier copy has given back its hold */
  if (!olc_gate_close(&g2, q2))
    goto out;
  OLC_OK(olMemcpy(q2, d2, olc_dev, h + roff, olc_host, rn));
  olc_gate_open(&g2);
  OLC_OK(olSyncQueue(q2));
  memset(back, 0, sizeof back);
  OLC_TRUE(olc_read(back, d2, rn));
  OLC_EQ_ARRAY(back, rn / 2, (uint8_t)(i * 5 + 1));
  if (n1 > 0) {
    memset(back, 0, sizeof back);
    OLC_TRUE(olc_read(back, d1, n1));
    OLC_EQ_ARRAY(back, n1, (uint8_t)((i + off1) * 7 + 3));
  }
out:
  if (registered)
    OLC_OK(olMemUnregister(olc_dev, h + roff));
  if (q1)
    OLC_OK(olDestroyQueue(q1));
  if (q2)
    OLC_OK(olDestroyQueue(q2));
  if (d1)
    OLC_OK(olMemFree(d1));
  if (d2)
    OLC_OK(olMemFree(d2));
  if (d3)
    OLC_OK(olMemFree(d3));
  free(h);
}

/* Registered first, unregistered while copies that use it are queued. */
static void test_register_unregister_in_flight(void) {
  OLC_HOST_VISIBLE();
  register_in_flight(0, 0, 0, 4096, true);
  register_in_flight(0, 0, 100, 1000, true);
}

/* Registered while a copy of the same memory holds it: inside, at the same
 * start and larger, the same range; unregistered before or after the
 * queued copies of the registered range. */
static void test_register_after_copy_in_flight(void) {
  OLC_HOST_VISIBLE();
  for (int early = 0; early < 2; early++) {
    register_in_flight(0, 4096, 100, 1000, early);
    register_in_flight(0, 1, 0, 4096, early);
    register_in_flight(0, 4096, 0, 4096, early);
    register_in_flight(200, 100, 0, 1000, early);
  }
}

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    OLC_RUN(test_alloc_each_type);
    OLC_RUN(test_alloc_odd_sizes);
    OLC_RUN(test_alloc_many);
    OLC_RUN(test_alloc_class_edges);
    OLC_RUN(test_freed_small_block);
    OLC_RUN(test_alloc_threads);
    OLC_RUN(test_alloc_errors);
    OLC_RUN(test_free_errors);
    OLC_RUN(test_mem_info);
    OLC_RUN(test_mem_info_errors);
    OLC_RUN(test_mem_info_size);
    OLC_RUN(test_memcpy_every_pair);
    OLC_RUN(test_memcpy_queue_order);
    OLC_RUN(test_memcpy_overlap);
    OLC_RUN(test_memcpy_queued_is_async);
    OLC_RUN(test_memcpy_same_start_in_flight);
    OLC_RUN(test_memcpy_inside_in_flight);
    OLC_RUN(test_memcpy_on_other_platform_queue);
    OLC_RUN(test_memcpy_errors);
    OLC_RUN(test_fill_patterns);
    OLC_RUN(test_fill_pattern_copied);
    OLC_RUN(test_fill_errors);
    OLC_RUN(test_register_basic);
    OLC_RUN(test_register_twice);
    OLC_RUN(test_register_contained);
    OLC_RUN(test_register_overlap);
    OLC_RUN(test_register_errors);
    OLC_RUN(test_register_wrapping_range);
    OLC_RUN(test_register_threads);
    OLC_RUN(test_register_unregister_in_flight);
    OLC_RUN(test_register_after_copy_in_flight);
  }
  return olc_finish("memory");
}
