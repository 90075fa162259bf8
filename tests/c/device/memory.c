/* Memory of the device under test: olMemAlloc, olMemFree, olGetMemInfo(Size),
 * olMemcpy, olMemFill, olMemRegister, olMemUnregister.
 * SPDX-License-Identifier: Apache-2.0 */
#include "hcheck.h"

static const ol_alloc_type_t all_types[] = {OL_ALLOC_TYPE_HOST, OL_ALLOC_TYPE_DEVICE,
                                            OL_ALLOC_TYPE_MANAGED};

/* ------------------------------------------------------------ olMemAlloc */

static void test_alloc_each_type(void) {
  for (int t = 0; t < 3; t++) {
    void *p = NULL;
    if (!OK(olMemAlloc(hc_dev, all_types[t], 1024, &p)))
      continue;
    TRUE(p != NULL);
    EQ((uintptr_t)p % 64, 0);
    /* every byte is usable (on the host device it is ordinary memory;
     * elsewhere DEVICE memory is reached through olMemcpy) */
    hc_set(all_types[t], p, 0x5a, 1024);
    unsigned char last = 0;
    hc_get(all_types[t], &last, (unsigned char *)p + 1023, 1);
    EQ(last, 0x5a);
    OK(olMemFree(p));
  }
}

static void test_alloc_odd_sizes(void) {
  static const size_t sizes[] = {1, 3, 63, 65, 4097, 1u << 20, (8u << 20) + 1};
  void *ptrs[7];
  for (int i = 0; i < 7; i++) {
    ptrs[i] = hc_alloc(OL_ALLOC_TYPE_DEVICE, sizes[i]);
    TRUE(ptrs[i] != NULL);
    if (ptrs[i]) {
      EQ((uintptr_t)ptrs[i] % 64, 0);
      hc_set(OL_ALLOC_TYPE_DEVICE, ptrs[i], i, sizes[i]);
    }
  }
  /* the allocations do not overlap: each still holds its own byte */
  for (int i = 0; i < 7; i++)
    if (ptrs[i]) {
      unsigned char first = 0, last = 0;
      hc_get(OL_ALLOC_TYPE_DEVICE, &first, ptrs[i], 1);
      hc_get(OL_ALLOC_TYPE_DEVICE, &last, (unsigned char *)ptrs[i] + sizes[i] - 1, 1);
      EQ(first, i);
      EQ(last, i);
      size_t got = 0;
      OK(olGetMemInfo(ptrs[i], OL_MEM_INFO_SIZE, sizeof got, &got));
      EQ(got, sizes[i]);
      OK(olMemFree(ptrs[i]));
    }
}

static void test_alloc_many(void) {
  enum { N = 500 };
  static void *p[N];
  int made = 0;
  for (int i = 0; i < N; i++)
    if (olMemAlloc(hc_dev, all_types[i % 3], 32 + (size_t)i, &p[i]) == NULL) {
      made++;
      uint32_t v = (uint32_t)i;
      hc_put(all_types[i % 3], p[i], &v, sizeof v);
    } else {
      p[i] = NULL;
    }
  EQ(made, N);
  int intact = 0;
  for (int i = 0; i < N; i++)
    if (p[i]) {
      uint32_t v = 0;
      hc_get(all_types[i % 3], &v, p[i], sizeof v);
      intact += v == (uint32_t)i;
      OK(olMemFree(p[i]));
    }
  EQ(intact, N);
}

static void test_alloc_errors(void) {
  void *p = (void *)0x1;
  /* the queue handle is not a device handle */
  ol_queue_handle_t q = hc_queue();
  ERR(olMemAlloc((ol_device_handle_t)q, OL_ALLOC_TYPE_DEVICE, 1024, &p), OL_ERRC_INVALID_DEVICE,
      "queue");
  EQ((uintptr_t)p, 1); /* a refused call leaves the result alone */
  OK(olDestroyQueue(q));
  /* far more than the machine has */
  p = NULL;
  ol_result_t r = olMemAlloc(hc_dev, OL_ALLOC_TYPE_DEVICE, (size_t)1 << 62, &p);
  TRUE(r != NULL);
  if (r)
    EQ(r->Code, OL_ERRC_OUT_OF_RESOURCES);
  else
    olMemFree(p);
}

/* ------------------------------------------------------------- olMemFree */

static void test_free_errors(void) {
  void *p = hc_alloc(OL_ALLOC_TYPE_HOST, 256);
  if (!p)
    return;
  /* only the base frees */
  ERR(olMemFree((char *)p + 16), OL_ERRC_INVALID_ARGUMENT, NULL);
  OK(olMemFree(p));
  /* a second free is refused */
  ERR(olMemFree(p), OL_ERRC_INVALID_ARGUMENT, NULL);
}

/* ---------------------------------------------------------- olGetMemInfo */

static void test_mem_info(void) {
  for (int t = 0; t < 3; t++) {
    char *p = hc_alloc(all_types[t], 1024);
    if (!p)
      continue;
    char *where[] = {p, p + 123, p + 1023};
    for (int w = 0; w < 3; w++) {
      ol_device_handle_t d = NULL;
      void *base = NULL;
      size_t size = 0;
      ol_alloc_type_t type = OL_ALLOC_TYPE_LAST;
      OK(olGetMemInfo(where[w], OL_MEM_INFO_DEVICE, sizeof d, &d));
      EQ((uintptr_t)d, (uintptr_t)hc_dev);
      OK(olGetMemInfo(where[w], OL_MEM_INFO_BASE, sizeof base, &base));
      EQ((uintptr_t)base, (uintptr_t)p);
      OK(olGetMemInfo(where[w], OL_MEM_INFO_SIZE, sizeof size, &size));
      EQ(size, 1024);
      OK(olGetMemInfo(where[w], OL_MEM_INFO_TYPE, sizeof type, &type));
      EQ(type, all_types[t]);
    }
    /* one past the end is not part of the allocation */
    void *base = NULL;
    ERR(olGetMemInfo(p + 1024, OL_MEM_INFO_BASE, sizeof base, &base), OL_ERRC_NOT_FOUND, NULL);
    OK(olMemFree(p));
    /* a freed allocation is forgotten */
    ERR(olGetMemInfo(p, OL_MEM_INFO_BASE, sizeof base, &base), OL_ERRC_NOT_FOUND, NULL);
  }
}

static void test_mem_info_errors(void) {
  char *p = hc_alloc(OL_ALLOC_TYPE_DEVICE, 1024);
  if (!p)
    return;
  void *base = NULL;
  ERR(olGetMemInfo(p, OL_MEM_INFO_BASE, 0, &base), OL_ERRC_INVALID_SIZE, "PropSize == 0");
  ERR(olGetMemInfo(p, OL_MEM_INFO_BASE, sizeof base - 1, &base), OL_ERRC_INVALID_SIZE, NULL);
  ol_alloc_type_t type;
  ERR(olGetMemInfo(p, OL_MEM_INFO_TYPE, sizeof type - 1, &type), OL_ERRC_INVALID_SIZE, NULL);
  ERR(olGetMemInfo(p, (ol_mem_info_t)HC_BIG, sizeof base, &base), OL_ERRC_INVALID_ENUMERATION,
      "olGetMemInfo enum '2147483647' is invalid");
  /* a bigger buffer is fine; only the value's bytes are written */
  unsigned char big[16];
  memset(big, 0xee, sizeof big);
  OK(olGetMemInfo(p, OL_MEM_INFO_SIZE, sizeof big, big));
  size_t got;
  memcpy(&got, big, sizeof got);
  EQ(got, 1024);
  EQ(big[8], 0xee);
  EQ(big[15], 0xee);
  OK(olMemFree(p));
}

static void test_mem_info_size(void) {
  char *p = hc_alloc(OL_ALLOC_TYPE_MANAGED, 1024);
  if (!p)
    return;
  size_t n = 0;
  OK(olGetMemInfoSize(p + 5, OL_MEM_INFO_DEVICE, &n));
  EQ(n, sizeof(ol_device_handle_t));
  OK(olGetMemInfoSize(p, OL_MEM_INFO_BASE, &n));
  EQ(n, sizeof(void *));
  OK(olGetMemInfoSize(p, OL_MEM_INFO_SIZE, &n));
  EQ(n, sizeof(size_t));
  OK(olGetMemInfoSize(p, OL_MEM_INFO_TYPE, &n));
  EQ(n, sizeof(ol_alloc_type_t));
  ERR(olGetMemInfoSize(p, (ol_mem_info_t)HC_BIG, &n), OL_ERRC_INVALID_ENUMERATION,
      "olGetMemInfo enum '2147483647' is invalid");
  ERR(olGetMemInfoSize((void *)0x1234, OL_MEM_INFO_SIZE, &n), OL_ERRC_NOT_FOUND, NULL);
  OK(olMemFree(p));
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
  enum { N = 256 }; /* the size of the `global` variable of global.so */
  ol_program_handle_t prog = hc_program("global");
  void *gaddr = NULL;
  size_t gsize = 0;
  if (!hc_global(prog, "global", &gaddr, &gsize))
    return;
  EQ(gsize, N);
  place places[] = {
      {"malloc", malloc(N), OL_ALLOC_TYPE_HOST, hc_host},
      {"host", hc_alloc(OL_ALLOC_TYPE_HOST, N), OL_ALLOC_TYPE_HOST, hc_dev},
      {"device", hc_alloc(OL_ALLOC_TYPE_DEVICE, N), OL_ALLOC_TYPE_DEVICE, hc_dev},
      {"managed", hc_alloc(OL_ALLOC_TYPE_MANAGED, N), OL_ALLOC_TYPE_MANAGED, hc_dev},
      {"global", gaddr, OL_ALLOC_TYPE_DEVICE, hc_dev},
  };
  enum { P = sizeof places / sizeof places[0] };
  ol_queue_handle_t q = hc_queue();
  unsigned seed = 1;
  for (int mode = 0; mode < 2; mode++) /* 0: NULL queue, 1: queued */
    for (int s = 0; s < P; s++)
      for (int d = 0; d < P; d++) {
        if (s == d)
          continue;
        uint8_t *src = places[s].p, *dst = places[d].p;
        uint8_t seq[N], got[N];
        fill_seq(seq, N, seed);
        hc_put(places[s].type, src, seq, N);
        hc_set(places[d].type, dst, 0, N);
        ol_device_handle_t dd = places[d].dev, sd = places[s].dev;
        bool ok;
        if (mode == 0) {
          ok = OK(olMemcpy(NULL, dst, dd, src, sd, N));
        } else {
          ok = OK(olMemcpy(q, dst, dd, src, sd, N)) && OK(olSyncQueue(q));
        }
        hc_get(places[d].type, got, dst, N);
        int bad = 0;
        for (size_t i = 0; i < N; i++)
          bad += got[i] != (uint8_t)(i * 7u + seed);
        if (ok && bad)
          hc_failed(__FILE__, __LINE__, "%s copy %s -> %s: %d bytes wrong",
                    mode ? "queued" : "synchronous", places[s].name, places[d].name, bad);
        else if (ok)
          olc_pass();
        seed++;
      }
  /* the kernel `read` sees what olMemcpy put in the global */
  uint32_t vals[64];
  for (int i = 0; i < 64; i++)
    vals[i] = 3000u + (uint32_t)i;
  OK(olMemcpy(q, gaddr, hc_dev, vals, hc_host, sizeof vals));
  uint32_t *out = hc_alloc(OL_ALLOC_TYPE_MANAGED, sizeof vals);
  ol_symbol_handle_t rd = hc_kernel(prog, "read");
  if (out && rd) {
    ol_kernel_launch_size_args_t l = hc_size1(1, 64);
    struct {
      uint32_t *out;
    } args = {out};
    OK(olLaunchKernel(q, hc_dev, rd, &args, sizeof args, &l));
    OK(olSyncQueue(q));
    EQ_ARRAY(out, 64, 3000u + i);
  }
  if (out)
    OK(olMemFree(out));
  OK(olDestroyQueue(q));
  free(places[0].p);
  for (int i = 1; i < 4; i++)
    if (places[i].p)
      OK(olMemFree(places[i].p));
  OK(olDestroyProgram(prog));
}

/* Copies on one queue run in order: a chain A -> B -> C -> D. */
static void test_memcpy_queue_order(void) {
  enum { N = 1 << 20 };
  uint8_t *a = hc_alloc(OL_ALLOC_TYPE_HOST, N), *b = hc_alloc(OL_ALLOC_TYPE_DEVICE, N),
          *c = hc_alloc(OL_ALLOC_TYPE_MANAGED, N), *d = malloc(N);
  ol_queue_handle_t q = hc_queue();
  if (!a || !b || !c)
    return;
  fill_seq(a, N, 9);
  hc_set(OL_ALLOC_TYPE_DEVICE, b, 0, N), memset(c, 0, N), memset(d, 0, N);
  OK(olMemcpy(q, b, hc_dev, a, hc_dev, N));
  OK(olMemcpy(q, c, hc_dev, b, hc_dev, N));
  OK(olMemcpy(q, d, hc_host, c, hc_dev, N));
  OK(olSyncQueue(q));
  TRUE(memcmp(a, d, N) == 0);
  /* a copy of 0 bytes is allowed, queued or not, and changes nothing */
  OK(olMemcpy(q, d, hc_host, a, hc_dev, 0));
  OK(olMemcpy(NULL, d, hc_host, a, hc_dev, 0));
  OK(olSyncQueue(q));
  TRUE(memcmp(a, d, N) == 0);
  /* overlapping ranges of one allocation behave like memmove */
  for (int i = 0; i < 100; i++)
    a[i] = (uint8_t)i;
  OK(olMemcpy(NULL, a + 10, hc_dev, a, hc_dev, 50));
  int bad = 0;
  for (int i = 0; i < 50; i++)
    bad += a[10 + i] != (uint8_t)i;
  EQ(bad, 0);
  OK(olDestroyQueue(q));
  OK(olMemFree(a)), OK(olMemFree(b)), OK(olMemFree(c));
  free(d);
}

/* Overlapping copies inside one allocation behave like memmove for every
 * kind of memory, queued or not, up and down, close (many pieces) and far
 * apart: GPU drivers' copies are not memmove. */
static void test_memcpy_overlap(void) {
  enum { N = 70000 };
  static const long cases[][3] = {/* from, to, size */
                                  {0, 10, 50},   {10, 0, 50},    {0, 1, 4096},
                                  {5, 2, 60000}, {0, 4096, 65000}, {9000, 100, 60000}};
  uint8_t *seq = malloc(N), *want = malloc(N);
  ol_queue_handle_t q = hc_queue();
  for (int t = 0; t < 3 && seq && want; t++)
    for (int queued = 0; queued < 2; queued++)
      for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint8_t *a = hc_alloc(all_types[t], N);
        if (!a)
          continue;
        for (int i = 0; i < N; i++)
          seq[i] = (uint8_t)(i * 7 + i / 251);
        memcpy(want, seq, N);
        memmove(want + cases[c][1], want + cases[c][0], (size_t)cases[c][2]);
        OK(olMemcpy(NULL, a, hc_dev, seq, hc_host, N));
        OK(olMemcpy(queued ? q : NULL, a + cases[c][1], hc_dev, a + cases[c][0], hc_dev,
                    (size_t)cases[c][2]));
        if (queued)
          OK(olSyncQueue(q));
        memset(seq, 0, N);
        OK(olMemcpy(NULL, seq, hc_host, a, hc_dev, N));
        int bad = 0, first = -1;
        for (int i = 0; i < N; i++)
          if (seq[i] != want[i] && bad++ == 0)
            first = i;
        if (!EQ(bad, 0))
          fprintf(stderr, "  type %d, %s, %ld bytes from +%ld to +%ld: first wrong byte at %d\n", t,
                  queued ? "queued" : "not queued", cases[c][2], cases[c][0], cases[c][1], first);
        OK(olMemFree(a));
      }
  OK(olDestroyQueue(q));
  free(seq), free(want);
}

/* A queued copy really is asynchronous: behind a blocked host function it
 * has not happened yet; after the release it has. */
static void test_memcpy_queued_is_async(void) {
  uint32_t src[16], dst[16];
  for (int i = 0; i < 16; i++)
    src[i] = 77u + (uint32_t)i, dst[i] = 0;
  ol_queue_handle_t q = hc_queue();
  hc_gate g;
  if (!hc_gate_close(&g, q))
    return;
  OK(olMemcpy(q, dst, hc_host, src, hc_host, sizeof src));
  hc_sleep_ms(50);
  EQ(dst[0], 0);
  /* the NULL-queue form does not wait for the blocked queue */
  uint32_t sync_dst[16] = {0};
  double t0 = hc_now_ms();
  OK(olMemcpy(NULL, sync_dst, hc_host, src, hc_host, sizeof src));
  TRUE(hc_now_ms() - t0 < 1000);
  EQ_ARRAY(sync_dst, 16, 77u + i);
  hc_gate_open(&g);
  OK(olSyncQueue(q));
  EQ_ARRAY(dst, 16, 77u + i);
  OK(olDestroyQueue(q));
}

/* A copy queued on a queue of another platform than the memory's (the host
 * device's queue, copying the device's DEVICE memory): the queue holds its
 * later work while the runtime makes the copy (impl/route.go), so the copy
 * keeps that queue's order: it waits behind a blocked host function, and
 * the queue's next copy reads what it wrote. On the host device the queue
 * is the memory's own; the order is the same. */
static void test_memcpy_on_other_platform_queue(void) {
  enum { N = 4096 };
  uint8_t *a = hc_alloc(OL_ALLOC_TYPE_DEVICE, N), *b = hc_alloc(OL_ALLOC_TYPE_DEVICE, N);
  uint8_t *seq = malloc(N), *out = malloc(N);
  ol_queue_handle_t q = NULL;
  hc_gate g;
  if (!a || !b || !seq || !out || !OK(olCreateQueue(hc_host, &q)))
    goto done;
  fill_seq(seq, N, 42);
  memset(out, 0, N);
  hc_write(a, seq, N);
  hc_memset(b, 0, N);
  if (!hc_gate_close(&g, q))
    goto done;
  OK(olMemcpy(q, b, hc_dev, a, hc_dev, N));   /* device -> device */
  OK(olMemcpy(q, out, hc_host, b, hc_dev, N)); /* device -> malloc, after it */
  hc_sleep_ms(20);
  uint8_t *early = hc_fetch(b, N);
  int moved = 0;
  for (size_t i = 0; i < N; i++)
    moved += early[i] != 0 || out[i] != 0;
  free(early);
  EQ(moved, 0); /* nothing ran behind the closed gate */
  hc_gate_open(&g);
  OK(olSyncQueue(q));
  TRUE(memcmp(out, seq, N) == 0);
  uint8_t *late = hc_fetch(b, N);
  TRUE(memcmp(late, seq, N) == 0);
  free(late);
done:
  if (q)
    OK(olDestroyQueue(q));
  if (a)
    OK(olMemFree(a));
  if (b)
    OK(olMemFree(b));
  free(seq), free(out);
}

static void test_memcpy_errors(void) {
  char a[8] = {0}, b[8] = {0};
  ERR(olMemcpy((ol_queue_handle_t)0x1234, a, hc_dev, b, hc_dev, 8), OL_ERRC_INVALID_QUEUE,
      NULL);
  ol_queue_handle_t q = hc_queue();
  OK(olDestroyQueue(q));
  ERR(olMemcpy(q, a, hc_dev, b, hc_dev, 8), OL_ERRC_INVALID_QUEUE, "destroyed");
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
  uint8_t pat[64]; /* the longest pattern used below */
  for (size_t i = 0; i < psize; i++)
    pat[i] = (uint8_t)(0xa0 + i * 3);
  if (psize == 17) {
    struct pat17 s = {0x11, 0x2233445566778899ull, 0xaabbccdd, 0xeeff, 0x1357};
    memcpy(pat, &s, 17);
  }
  ol_queue_handle_t q = hc_queue();
  for (int kind = 0; kind < 4; kind++)
    for (int queued = 0; queued < 2; queued++) {
      /* 64 guard bytes either side of the filled range */
      uint8_t *mem = kind < 3 ? hc_alloc(all_types[kind], total + 128) : malloc(total + 128);
      if (!mem)
        continue;
      ol_alloc_type_t type = kind < 3 ? all_types[kind] : OL_ALLOC_TYPE_HOST;
      hc_set(type, mem, 0x33, total + 128);
      bool ok;
      if (queued)
        ok = OK(olMemFill(q, mem + 64, psize, pat, total)) && OK(olSyncQueue(q));
      else
        ok = OK(olMemFill(NULL, mem + 64, psize, pat, total));
      uint8_t *got = mem;
      if (!hc_cpu_ok(type)) {
        got = hc_fetch(mem, total + 128);
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
        hc_failed(__FILE__, __LINE__,
                  "fill with a %zu-byte pattern over %zu bytes (%s, %s): %zu wrong bytes, %zu "
                  "guard bytes changed",
                  psize, total, kind < 3 ? "olMemAlloc" : "malloc", queued ? "queued" : "NULL queue",
                  bad, guard);
      else if (ok)
        olc_pass();
      if (kind < 3)
        OK(olMemFree(mem));
      else
        free(mem);
    }
  OK(olDestroyQueue(q));
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
  ol_queue_handle_t q = hc_queue();
  uint32_t *mem = hc_alloc(OL_ALLOC_TYPE_DEVICE, 64 * sizeof(uint32_t));
  hc_gate g;
  if (!mem || !hc_gate_close(&g, q))
    return;
  uint32_t pat = 0xcafef00d;
  OK(olMemFill(q, mem, sizeof pat, &pat, 64 * sizeof(uint32_t)));
  pat = 0xdeadbeef;
  hc_gate_open(&g);
  OK(olSyncQueue(q));
  EQ_DARRAY(uint32_t, mem, 64, 0xcafef00du);
  /* FillSize 0 writes nothing */
  OK(olMemFill(q, mem, sizeof pat, &pat, 0));
  OK(olMemFill(NULL, mem, sizeof pat, &pat, 0));
  OK(olSyncQueue(q));
  EQ_DARRAY(uint32_t, mem, 64, 0xcafef00du);
  OK(olMemFree(mem));
  OK(olDestroyQueue(q));
}

static void test_fill_errors(void) {
  uint8_t *mem = hc_alloc(OL_ALLOC_TYPE_MANAGED, 1025);
  uint16_t pat = 7;
  if (!mem)
    return;
  ol_queue_handle_t q = hc_queue();
  ERR(olMemFill(q, mem, 2, &pat, 1025), OL_ERRC_INVALID_SIZE, "FillSize % PatternSize != 0");
  ERR(olMemFill(NULL, mem, 2, &pat, 1025), OL_ERRC_INVALID_SIZE, "FillSize % PatternSize != 0");
  ERR(olMemFill(q, mem, 0, &pat, 16), OL_ERRC_INVALID_SIZE, "PatternSize == 0");
  ERR(olMemFill(q, NULL, 2, &pat, 16), OL_ERRC_INVALID_NULL_POINTER, "NULL == Ptr");
  ERR(olMemFill(q, mem, 2, NULL, 16), OL_ERRC_INVALID_NULL_POINTER, "NULL == PatternPtr");
  ERR(olMemFill((ol_queue_handle_t)0x1234, mem, 2, &pat, 16), OL_ERRC_INVALID_QUEUE, NULL);
  OK(olSyncQueue(q));
  OK(olDestroyQueue(q));
  OK(olMemFree(mem));
}

/* --------------------------------------------------- olMemRegister etc. */

static void test_register_basic(void) {
  uint32_t arr[256];
  void *pinned = NULL;
  if (!OK(olMemRegister(hc_dev, arr, sizeof arr, 0, &pinned)))
    return;
  TRUE(pinned != NULL);
  EQ((uintptr_t)pinned, (uintptr_t)arr);
  /* the pinned pointer is a valid copy target */
  uint32_t src[256];
  for (int i = 0; i < 256; i++)
    src[i] = 5u * (uint32_t)i;
  ol_queue_handle_t q = hc_queue();
  OK(olMemcpy(q, pinned, hc_host, src, hc_host, sizeof src));
  OK(olSyncQueue(q));
  EQ_ARRAY(arr, 256, 5u * i);
  OK(olDestroyQueue(q));
  OK(olMemUnregister(hc_dev, pinned));
  ERR(olMemUnregister(hc_dev, arr), OL_ERRC_INVALID_ARGUMENT, NULL);
}

static void test_register_twice(void) {
  char arr[4096];
  void *p1 = NULL, *p2 = NULL;
  OK(olMemRegister(hc_dev, arr, sizeof arr, 0, &p1));
  OK(olMemRegister(hc_dev, arr, sizeof arr, 0, &p2));
  EQ((uintptr_t)p1, (uintptr_t)arr);
  EQ((uintptr_t)p2, (uintptr_t)arr);
  OK(olMemUnregister(hc_dev, arr));
  OK(olMemUnregister(hc_dev, arr));
  /* a third unregister has nothing left to drop */
  ERR(olMemUnregister(hc_dev, arr), OL_ERRC_INVALID_ARGUMENT, NULL);
}

static void test_register_contained(void) {
  char arr[4096];
  void *p = NULL;
  OK(olMemRegister(hc_dev, arr, sizeof arr, 0, &p));
  /* a range inside a registered one adds a user of it */
  OK(olMemRegister(hc_dev, arr + 100, 200, 0, &p));
  EQ((uintptr_t)p, (uintptr_t)(arr + 100));
  OK(olMemUnregister(hc_dev, arr));
  OK(olMemUnregister(hc_dev, arr));
  ERR(olMemUnregister(hc_dev, arr), OL_ERRC_INVALID_ARGUMENT, NULL);
}

static void test_register_overlap(void) {
  uint32_t arr[64];
  void *p = NULL;
  OK(olMemRegister(hc_dev, arr, sizeof arr, 0, &p));
  /* starts inside, ends beyond: partial overlap */
  ERR(olMemRegister(hc_dev, arr + 2, sizeof arr, 0, &p), OL_ERRC_INVALID_ARGUMENT, NULL);
  /* starts before, ends inside */
  static uint32_t big[256];
  void *q = NULL;
  OK(olMemRegister(hc_dev, big + 128, 64 * sizeof(uint32_t), 0, &q));
  ERR(olMemRegister(hc_dev, big + 100, 64 * sizeof(uint32_t), 0, &p), OL_ERRC_INVALID_ARGUMENT,
      NULL);
  /* covers it completely: also a partial overlap, not a containment */
  ERR(olMemRegister(hc_dev, big, sizeof big, 0, &p), OL_ERRC_INVALID_ARGUMENT, NULL);
  /* adjacent, not overlapping, is fine */
  OK(olMemRegister(hc_dev, big + 192, 64 * sizeof(uint32_t), 0, &p));
  OK(olMemUnregister(hc_dev, big + 192));
  OK(olMemUnregister(hc_dev, big + 128));
  /* the failed registrations left nothing behind */
  ERR(olMemUnregister(hc_dev, big + 100), OL_ERRC_INVALID_ARGUMENT, NULL);
  OK(olMemUnregister(hc_dev, arr));
  ERR(olMemUnregister(hc_dev, arr), OL_ERRC_INVALID_ARGUMENT, NULL);
}

static void test_register_errors(void) {
  char arr[64];
  void *p = (void *)0x1;
  ERR(olMemUnregister(hc_dev, arr), OL_ERRC_INVALID_ARGUMENT, NULL);
  ERR(olMemRegister((ol_device_handle_t)0x1234, arr, sizeof arr, 0, &p), OL_ERRC_INVALID_DEVICE,
      NULL);
  EQ((uintptr_t)p, 1); /* a refused call leaves the result alone */
}


/* A range that runs past the end of the address space is not a range. */
static void test_register_wrapping_range(void) {
  void *p = NULL;
  void *top = (void *)(UINTPTR_MAX - 10);
  ol_result_t r = olMemRegister(hc_dev, top, 100, 0, &p);
  if (!TRUE(r != NULL)) {
    /* it was accepted: then it must at least be possible to drop it */
    OK(olMemUnregister(hc_dev, top));
  } else {
    TRUE(r->Code == OL_ERRC_INVALID_SIZE || r->Code == OL_ERRC_INVALID_ARGUMENT);
  }
  /* ordinary registrations are unaffected */
  char arr[64];
  OK(olMemRegister(hc_dev, arr, sizeof arr, 0, &p));
  OK(olMemUnregister(hc_dev, arr));
  ERR(olMemUnregister(hc_dev, arr), OL_ERRC_INVALID_ARGUMENT, NULL);
}

/* Registration of olMemAlloc'd memory works too, and different threads can
 * register and unregister disjoint ranges at the same time. */
static void *register_worker(void *arg) {
  char *base = arg;
  int bad = 0;
  for (int i = 0; i < 200; i++) {
    void *p = NULL;
    bad += olMemRegister(hc_dev, base, 512, 0, &p) != NULL;
    bad += p != base;
    bad += olMemRegister(hc_dev, base + 8, 64, 0, &p) != NULL;
    bad += olMemUnregister(hc_dev, base) != NULL;
    bad += olMemUnregister(hc_dev, base) != NULL;
  }
  return (void *)(intptr_t)bad;
}

static void test_register_threads(void) {
  char *mem = hc_alloc(OL_ALLOC_TYPE_HOST, 8 * 1024);
  if (!mem)
    return;
  EQ(hc_threads(8, register_worker, mem, 1024), 0);
  ERR(olMemUnregister(hc_dev, mem), OL_ERRC_INVALID_ARGUMENT, NULL);
  OK(olMemFree(mem));
}

int main(int argc, char **argv) {
  hc_start(argc, argv);
  while (hc_next_device()) {
    RUN(test_alloc_each_type);
    RUN(test_alloc_odd_sizes);
    RUN(test_alloc_many);
    RUN(test_alloc_errors);
    RUN(test_free_errors);
    RUN(test_mem_info);
    RUN(test_mem_info_errors);
    RUN(test_mem_info_size);
    RUN(test_memcpy_every_pair);
    RUN(test_memcpy_queue_order);
    RUN(test_memcpy_overlap);
    RUN(test_memcpy_queued_is_async);
    RUN(test_memcpy_on_other_platform_queue);
    RUN(test_memcpy_errors);
    RUN(test_fill_patterns);
    RUN(test_fill_pattern_copied);
    RUN(test_fill_errors);
    RUN(test_register_basic);
    RUN(test_register_twice);
    RUN(test_register_contained);
    RUN(test_register_overlap);
    RUN(test_register_errors);
    RUN(test_register_wrapping_range);
    RUN(test_register_threads);
  }
  return hc_finish("memory");
}
