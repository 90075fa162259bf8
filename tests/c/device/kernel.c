/* olLaunchKernel on the device under test: every test kernel, grids, group
 * memory, barriers, argument buffers, launch checks, concurrency.
 * SPDX-License-Identifier: Apache-2.0 */
#include "oldevices.h"

static ol_program_handle_t prog(const char *name) {
  /* one program per image and device for the whole run, loaded on first
   * use */
  static struct {
    const char *name;
    ol_program_handle_t p;
  } cache[32];
  static ol_device_handle_t cached_for;
  if (cached_for != olc_dev) {
    memset(cache, 0, sizeof cache);
    cached_for = olc_dev;
  }
  for (int i = 0; i < 32; i++) {
    if (cache[i].name && strcmp(cache[i].name, name) == 0)
      return cache[i].p;
    if (!cache[i].name) {
      cache[i].name = name;
      cache[i].p = olc_program(name);
      return cache[i].p;
    }
  }
  return NULL;
}

static ol_symbol_handle_t kern(const char *image, const char *name) {
  return olc_kernel(prog(image), name);
}

struct out_args {
  uint32_t *out;
};

/* A uint32_t of a program global or DEVICE allocation of olc_dev. */
static uint32_t get32(const void *p) {
  uint32_t v = 0;
  olc_get(OL_ALLOC_TYPE_DEVICE, &v, p, sizeof v);
  return v;
}

static void put32(void *p, uint32_t v) { olc_put(OL_ALLOC_TYPE_DEVICE, p, &v, sizeof v); }

static void test_foo_queue(void) {
  OLC_HOST_VISIBLE();
  ol_symbol_handle_t k = kern("foo", "foo");
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_MANAGED, 64 * sizeof(uint32_t));
  if (!k || !out)
    return;
  memset(out, 0xff, 64 * sizeof(uint32_t));
  ol_queue_handle_t q = olc_queue();
  ol_kernel_launch_size_args_t l = olc_size1(1, 64);
  struct out_args a = {out};
  OLC_OK(olLaunchKernel(q, olc_dev, k, &a, sizeof a, &l));
  OLC_OK(olSyncQueue(q));
  OLC_EQ_ARRAY(out, 64, i);
  OLC_OK(olDestroyQueue(q));
  OLC_OK(olMemFree(out));
}

/* NULL queue: the launch is finished when the call returns. */
static void test_foo_synchronous(void) {
  ol_symbol_handle_t k = kern("foo", "foo");
  enum { N = 64 * 1024 };
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_DEVICE, N * sizeof(uint32_t));
  if (!k || !out)
    return;
  olc_set(OL_ALLOC_TYPE_DEVICE, out, 0, N * sizeof(uint32_t));
  ol_kernel_launch_size_args_t l = olc_size1(N / 256, 256);
  struct out_args a = {out};
  OLC_OK(olLaunchKernel(NULL, olc_dev, k, &a, sizeof a, &l));
  OLC_EQ_DARRAY(uint32_t, out, N, i);
  OLC_OK(olMemFree(out));
}

/* 20 threads launching foo concurrently on one queue, each into its own
 * buffer. */
struct foo_thread {
  ol_queue_handle_t q;
  ol_symbol_handle_t k;
  uint32_t *out;
};
static void *foo_thread_fn(void *arg) {
  struct foo_thread *t = arg;
  int errors = 0;
  for (int rep = 0; rep < 10; rep++) {
    ol_kernel_launch_size_args_t l = olc_size1(4, 64);
    struct out_args a = {t->out + rep * 256};
    errors += olLaunchKernel(t->q, olc_dev, t->k, &a, sizeof a, &l) != NULL;
  }
  return (void *)(intptr_t)errors;
}

static void test_foo_threads_one_queue(void) {
  OLC_HOST_VISIBLE();
  enum { T = 20 };
  ol_symbol_handle_t k = kern("foo", "foo");
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_MANAGED, T * 10 * 256 * sizeof(uint32_t));
  if (!k || !out)
    return;
  memset(out, 0xff, T * 10 * 256 * sizeof(uint32_t));
  ol_queue_handle_t q = olc_queue();
  struct foo_thread ts[T];
  for (int i = 0; i < T; i++)
    ts[i] = (struct foo_thread){q, k, out + i * 10 * 256};
  OLC_EQ(olc_threads(T, foo_thread_fn, ts, sizeof ts[0]), 0);
  OLC_OK(olSyncQueue(q));
  OLC_EQ_ARRAY(out, T * 10 * 256, i % 256);
  OLC_OK(olDestroyQueue(q));
  OLC_OK(olMemFree(out));
}

/* And 20 threads each with a NULL queue (synchronous launches). */
static void *foo_sync_fn(void *arg) {
  struct foo_thread *t = arg;
  int errors = 0;
  for (int rep = 0; rep < 10; rep++) {
    uint32_t *o = t->out + rep * 128;
    ol_kernel_launch_size_args_t l = olc_size1(2, 64);
    struct out_args a = {o};
    errors += olLaunchKernel(NULL, olc_dev, t->k, &a, sizeof a, &l) != NULL;
    uint32_t got[128];
    const uint32_t *chk = o;
    if (!olc_on_host) { /* device memory: read back through the API */
      errors += olMemcpy(NULL, got, olc_host, o, olc_dev, sizeof got) != NULL;
      chk = got;
    }
    for (uint32_t i = 0; i < 128; i++)
      errors += chk[i] != i;
  }
  return (void *)(intptr_t)errors;
}

static void test_foo_threads_sync(void) {
  enum { T = 20 };
  ol_symbol_handle_t k = kern("foo", "foo");
  static uint32_t host_out[T * 10 * 128];
  /* plain host memory on the host device; DEVICE memory elsewhere */
  uint32_t *out = olc_on_host ? host_out : olc_alloc(OL_ALLOC_TYPE_DEVICE, sizeof host_out);
  if (!k || !out)
    return;
  memset(host_out, 0, sizeof host_out);
  struct foo_thread ts[T];
  for (int i = 0; i < T; i++)
    ts[i] = (struct foo_thread){NULL, k, out + i * 10 * 128};
  OLC_EQ(olc_threads(T, foo_sync_fn, ts, sizeof ts[0]), 0);
  if (out != host_out)
    OLC_OK(olMemFree(out));
}

static void test_bar_other_program(void) {
  ol_symbol_handle_t foo = kern("foo", "foo"), bar = kern("bar", "bar");
  uint32_t a[128], b[128];
  if (!foo || !bar)
    return;
  uint32_t *da = olc_buf(a, sizeof a), *db = olc_buf(b, sizeof b);
  ol_queue_handle_t q = olc_queue();
  ol_kernel_launch_size_args_t l = olc_size1(2, 64);
  struct out_args fa = {da}, ba = {db};
  OLC_OK(olLaunchKernel(q, olc_dev, foo, &fa, sizeof fa, &l));
  OLC_OK(olLaunchKernel(q, olc_dev, bar, &ba, sizeof ba, &l));
  OLC_OK(olSyncQueue(q));
  olc_unbuf(a, da, sizeof a);
  olc_unbuf(b, db, sizeof b);
  OLC_EQ_ARRAY(a, 128, i);
  OLC_EQ_ARRAY(b, 128, i + 1000u);
  OLC_OK(olDestroyQueue(q));
}

static void test_noargs(void) {
  ol_symbol_handle_t k = kern("noargs", "noargs");
  uint32_t *runs = NULL;
  if (!k || !olc_global(prog("noargs"), "noargs_runs", (void **)&runs, NULL))
    return;
  put32(runs, 0);
  ol_kernel_launch_size_args_t l = olc_size1(3, 7);
  OLC_OK(olLaunchKernel(NULL, olc_dev, k, NULL, 0, &l));
  OLC_EQ(get32(runs), 21);
  /* extra argument bytes are ignored */
  uint64_t junk = 0x1234;
  uint32_t want = 42;
#if OLC_RELEASE >= 23
  /* 23.1: one 8-byte argument for a kernel of none; refused where the
   * device knows the kernel's parameters (the host device; GPUs whose
   * driver or code object says), else the same */
  ol_result_t r = olLaunchKernel(NULL, olc_dev, k, &junk, sizeof junk, &l);
  OLC_CHECK(r == NULL || (olc_code(r) == OL_ERRC_INVALID_ARGUMENT && olc_details_has(r, "takes 0 arguments")),
            "olLaunchKernel of noargs with an 8-byte argument: expected success or INVALID_ARGUMENT "
            "(\"takes 0 arguments\"), got %s \"%s\"", olc_code_name(olc_code(r)), olc_details(r));
  if (r != NULL)
    want = 21;
#else
  OLC_OK(olLaunchKernel(NULL, olc_dev, k, &junk, sizeof junk, &l));
#endif
  OLC_EQ(get32(runs), want);
  ol_queue_handle_t q = olc_queue();
  OLC_OK(olLaunchKernel(q, olc_dev, k, NULL, 0, &l));
  OLC_OK(olSyncQueue(q));
  OLC_EQ(get32(runs), want + 21);
  OLC_OK(olDestroyQueue(q));
}

struct multiargs_args {
  uint8_t small;
  int16_t neg;
  uint32_t *out;
  double scale;
  uint64_t big;
  float frac;
  int32_t *out2;
  uint32_t count;
};

static void test_multiargs(void) {
  ol_symbol_handle_t k = kern("multiargs", "multiargs");
  uint32_t out[200];
  int32_t out2[200];
  if (!k)
    return;
  memset(out, 0xff, sizeof out);
  memset(out2, 0xff, sizeof out2);
  uint32_t *dout = olc_buf(out, sizeof out);
  int32_t *dout2 = olc_buf(out2, sizeof out2);
  struct multiargs_args a = {200, -50, dout, 3.0, (uint64_t)7 << 32, 0.5f, dout2, 150};
  ol_kernel_launch_size_args_t l = olc_size1(4, 50);
  OLC_OK(olLaunchKernel(NULL, olc_dev, k, &a, sizeof a, &l));
  olc_unbuf(out, dout, sizeof out);
  olc_unbuf(out2, dout2, sizeof out2);
  /* 200 - 50 + 3 i + 7 + 2 */
  OLC_EQ_ARRAY(out, 150, 159u + 3u * i);
  OLC_EQ_ARRAY(out2, 150, (int32_t)(-50 * (int32_t)(i + 1)));
  OLC_EQ(out[150], 0xffffffffu); /* beyond count: untouched */
  OLC_EQ(out[199], 0xffffffffu);
}

struct composite_inner {
  uint16_t tag;
  double weight;
  uint8_t bytes[3];
};
struct composite_args {
  uint32_t base;
  struct composite_inner inner;
  uint32_t table[4];
  uint32_t *out;
};

static void test_composite(void) {
  ol_symbol_handle_t k = kern("composite", "composite");
  uint32_t out[64];
  if (!k)
    return;
  struct composite_args a;
  memset(&a, 0, sizeof a);
  a.base = 10000;
  a.inner.tag = 300;
  a.inner.weight = 42.9;
  a.inner.bytes[0] = 1, a.inner.bytes[1] = 2, a.inner.bytes[2] = 3;
  a.table[0] = 0, a.table[1] = 100000, a.table[2] = 200000, a.table[3] = 300000;
  memset(out, 0, sizeof out);
  a.out = olc_buf(out, sizeof out);
  ol_kernel_launch_size_args_t l = olc_size1(2, 32);
  OLC_OK(olLaunchKernel(NULL, olc_dev, k, &a, sizeof a, &l));
  olc_unbuf(out, a.out, sizeof out);
  OLC_EQ_ARRAY(out, 64, 10000u + 300u + 42u + 6u + 100000u * (i % 4) + i);
}

#if OLC_RELEASE < 23
/* A kernel of several parameters (OL_KERNEL_PARAMS, tests/c/kernels/
 * params.c) takes, in 22.1's form, one block: its parameters laid out
 * like the members of a C struct of them (23.1 passes them one by one:
 * launch23.c). */
struct params_pair {
  int32_t a, b;
};
struct params_composite_block {
  int32_t n;
  struct params_pair f;
  int32_t *out;
};

static void test_params_block(void) {
  ol_symbol_handle_t k = kern("params", "params_composite");
  int32_t out[64];
  if (!k)
    return;
  struct params_composite_block a = {1, {2, 3}, NULL};
  memset(out, 0, sizeof out);
  a.out = olc_buf(out, sizeof out);
  ol_kernel_launch_size_args_t l = olc_size1(2, 32);
  OLC_OK(olLaunchKernel(NULL, olc_dev, k, &a, sizeof a, &l));
  olc_unbuf(out, a.out, sizeof out);
  OLC_EQ_ARRAY(out, 64, 6 + (int32_t)i);
  /* shorter than where the last parameter ends: refused */
  OLC_ERR_CODE(olLaunchKernel(NULL, olc_dev, k, &a, offsetof(struct params_composite_block, out), &l),
               OL_ERRC_INVALID_ARGUMENT);
}
#endif

struct byte_args {
  char c;
  char *out;
};

static void test_byte(void) {
  ol_symbol_handle_t k = kern("byte", "byte");
  char out[100];
  if (!k)
    return;
  memset(out, 0, sizeof out);
  struct byte_args a = {'A', olc_buf(out, sizeof out)};
  ol_kernel_launch_size_args_t l = olc_size1(1, 26);
  OLC_OK(olLaunchKernel(NULL, olc_dev, k, &a, sizeof a, &l));
  olc_unbuf(out, a.out, sizeof out);
  OLC_TRUE(memcmp(out, "ABCDEFGHIJKLMNOPQRSTUVWXYZ", 26) == 0);
  OLC_EQ(out[26], 0);
}

/* Dynamic group memory, one slot per work-item. */
static void test_localmem(void) {
  OLC_HOST_VISIBLE();
  ol_symbol_handle_t k = kern("localmem", "localmem");
  enum { G = 4, S = 64 };
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_MANAGED, G * S * sizeof(uint32_t));
  if (!k || !out)
    return;
  ol_kernel_launch_size_args_t l = olc_size1(G, S);
  l.DynSharedMemory = S * sizeof(uint32_t);
  struct out_args a = {out};
  OLC_OK(olLaunchKernel(NULL, olc_dev, k, &a, sizeof a, &l));
  /* slots[t] = 2t + group; out = slots[t] + 1 */
  OLC_EQ_ARRAY(out, G * S, 2u * (i % S) + i / S + 1u);
  /* the biggest dynamic memory the host device allows: 1 MiB */
  if (!OLC_ON(OLC_HOST, "1 MiB of dynamic group memory")) {
    OLC_OK(olMemFree(out));
    return;
  }
  l = olc_size1(2, 1024);
  l.DynSharedMemory = 1 << 20;
  uint32_t *big = olc_alloc(OL_ALLOC_TYPE_DEVICE, 2048 * sizeof(uint32_t));
  if (big) {
    struct out_args b = {big};
    OLC_OK(olLaunchKernel(NULL, olc_dev, k, &b, sizeof b, &l));
    OLC_EQ_DARRAY(uint32_t, big, 2048, 2u * (i % 1024) + i / 1024 + 1u);
    OLC_OK(olMemFree(big));
  }
  OLC_OK(olMemFree(out));
}

/* Tree reductions with barriers: K sums each group's slice of `in` into
 * out[group] in dynamic group memory. */
struct reduction_args {
  const uint32_t *in;
  uint32_t *out;
};

/* Launches K on 8 groups of each of the NSIZES sizes, on a queue of its own
 * or (ON_QUEUE 0) the synchronous NULL queue, over pseudo-random input
 * (i * MUL) >> SHIFT, against sums computed here. */
static void check_group_sums(ol_symbol_handle_t k, int on_queue, const uint32_t *sizes, int nsizes, uint32_t mul,
                             int shift) {
  OLC_HOST_VISIBLE();
  enum { G = 8 };
  uint32_t *in = olc_alloc(OL_ALLOC_TYPE_MANAGED, G * 1024 * sizeof(uint32_t));
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_MANAGED, G * sizeof(uint32_t));
  if (!in || !out)
    return;
  for (uint32_t i = 0; i < G * 1024; i++)
    in[i] = (i * mul) >> shift;
  ol_queue_handle_t q = on_queue ? olc_queue() : NULL;
  for (int s = 0; s < nsizes; s++) {
    uint32_t n = sizes[s];
    memset(out, 0, G * sizeof(uint32_t));
    ol_kernel_launch_size_args_t l = olc_size1(G, n);
    l.DynSharedMemory = n * sizeof(uint32_t);
    struct reduction_args a = {in, out};
    OLC_OK(olLaunchKernel(q, olc_dev, k, &a, sizeof a, &l));
    if (q)
      OLC_OK(olSyncQueue(q));
    uint32_t want[G];
    for (uint32_t g = 0; g < G; g++) {
      want[g] = 0;
      for (uint32_t t = 0; t < n; t++)
        want[g] += in[g * n + t];
    }
    printf("    group size %u\n", n);
    OLC_EQ_ARRAY(out, G, want[i]);
  }
  if (q)
    OLC_OK(olDestroyQueue(q));
  OLC_OK(olMemFree(in));
  OLC_OK(olMemFree(out));
}

static void test_localmem_reduction(void) {
  ol_symbol_handle_t k = kern("localmem_reduction", "localmem_reduction");
  if (!k)
    return;
  static const uint32_t sizes[] = {32, 64, 256, 1024};
  check_group_sums(k, 1, sizes, 4, 2654435761u, 20); /* input < 4096 */
}

/* Static group memory with barriers: groups come out reversed, and each
 * group has its own copy of the tile even when groups run in parallel. */
struct static_args {
  const uint32_t *in;
  uint32_t *out;
  uint32_t *sums;
};

/* The phased form (OL_PHASED_KERNEL): a tree sum in dynamic group memory
 * for several group sizes, against sums computed here. */
static void test_phased_reduction(void) {
  ol_symbol_handle_t k = kern("phased", "phased_reduction");
  if (!k)
    return;
  static const uint32_t sizes[] = {1, 32, 64, 256, 1024};
  check_group_sums(k, 0, sizes, 5, 2246822519u, 19); /* input < 8192 */
}

/* The phased form on 1-, 2- and 3-D grids: values kept across barriers per
 * work-item, static group memory, `continue` in a block and a loop with
 * barriers, against a step-by-step model of the group computed here. */
static void test_phased_shuffle(void) {
  OLC_HOST_VISIBLE();
  ol_symbol_handle_t k = kern("phased", "phased_shuffle");
  if (!k)
    return;
  static const struct {
    uint32_t dims, ng[3], gs[3], rounds;
  } grids[] = {
      {1, {3, 1, 1}, {64, 1, 1}, 4},  {1, {2, 1, 1}, {1024, 1, 1}, 3}, {2, {2, 3, 1}, {16, 16, 1}, 5},
      {3, {2, 1, 2}, {5, 6, 7}, 2},   {3, {1, 2, 1}, {4, 4, 4}, 0},     {1, {5, 1, 1}, {1, 1, 1}, 2},
      {2, {1, 1, 1}, {3, 100, 1}, 7},
  };
  enum { MAXN = 1 << 13 };
  uint32_t *in = olc_alloc(OL_ALLOC_TYPE_MANAGED, MAXN * sizeof(uint32_t));
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_MANAGED, MAXN * sizeof(uint32_t));
  uint32_t *want = malloc(MAXN * sizeof(uint32_t));
  uint32_t v[1024], start[1024];
  if (!in || !out || !want)
    return;
  for (uint32_t i = 0; i < MAXN; i++)
    in[i] = (i * 2654435761u) >> 12;
  for (size_t gi = 0; gi < sizeof grids / sizeof grids[0]; gi++) {
    const uint32_t *ng = grids[gi].ng, *gs = grids[gi].gs;
    ol_kernel_launch_size_args_t l;
    memset(&l, 0, sizeof l);
    l.Dimensions = grids[gi].dims;
    l.NumGroups.x = ng[0], l.NumGroups.y = ng[1], l.NumGroups.z = ng[2];
    l.GroupSize.x = gs[0], l.GroupSize.y = gs[1], l.GroupSize.z = gs[2];
    const uint32_t n = gs[0] * gs[1] * gs[2], sx = ng[0] * gs[0], sy = ng[1] * gs[1];
    const uint32_t total = n * ng[0] * ng[1] * ng[2];
    /* the model: each group on its own, round by round */
    for (uint32_t gz = 0; gz < ng[2]; gz++)
      for (uint32_t gy = 0; gy < ng[1]; gy++)
        for (uint32_t gx = 0; gx < ng[0]; gx++) {
          uint32_t gl[1024];
          for (uint32_t w = 0; w < n; w++) {
            uint32_t tx = w % gs[0], ty = w / gs[0] % gs[1], tz = w / (gs[0] * gs[1]);
            gl[w] = ((gz * gs[2] + tz) * sy + gy * gs[1] + ty) * sx + gx * gs[0] + tx;
            v[w] = in[gl[w]];
          }
          for (uint32_t r = 0; r < grids[gi].rounds; r++) {
            memcpy(start, v, n * sizeof v[0]);
            for (uint32_t w = 0; w < n; w++)
              if (w % 3 != 0)
                v[w] += start[(w + r + 1) % n];
          }
          for (uint32_t w = 0; w < n; w++)
            want[gl[w]] = v[w] * 2u + (gz * ng[1] + gy) * ng[0] + gx;
        }
    memset(out, 0xff, total * sizeof(uint32_t));
    struct {
      const uint32_t *in;
      uint32_t *out;
      uint32_t rounds;
    } a = {in, out, grids[gi].rounds};
    printf("    %ux%ux%u groups of %ux%ux%u, %u rounds\n", ng[0], ng[1], ng[2], gs[0], gs[1], gs[2],
           grids[gi].rounds);
    OLC_OK(olLaunchKernel(NULL, olc_dev, k, &a, sizeof a, &l));
    OLC_EQ_ARRAY(out, total, want[i]);
  }
  free(want);
  OLC_OK(olMemFree(in));
  OLC_OK(olMemFree(out));
}

static void test_localmem_static(void) {
  OLC_HOST_VISIBLE();
  ol_symbol_handle_t k = kern("localmem_static", "localmem_static");
  enum { G = 16, S = 128 };
  uint32_t *in = olc_alloc(OL_ALLOC_TYPE_MANAGED, G * S * sizeof(uint32_t));
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_MANAGED, G * S * sizeof(uint32_t));
  uint32_t *sums = olc_alloc(OL_ALLOC_TYPE_MANAGED, G * sizeof(uint32_t));
  if (!k || !in || !out || !sums)
    return;
  for (uint32_t i = 0; i < G * S; i++)
    in[i] = i * 3u + 1u;
  ol_kernel_launch_size_args_t l = olc_size1(G, S);
  struct static_args a = {in, out, sums};
  OLC_OK(olLaunchKernel(NULL, olc_dev, k, &a, sizeof a, &l));
  OLC_EQ_ARRAY(out, G * S, in[(i / S) * S + (S - 1 - i % S)]);
  uint32_t want[G];
  for (uint32_t g = 0; g < G; g++) {
    want[g] = 0;
    for (uint32_t t = 0; t < S; t++)
      want[g] += in[g * S + t];
  }
  OLC_EQ_ARRAY(sums, G, want[i]);
  OLC_OK(olMemFree(in)), OLC_OK(olMemFree(out)), OLC_OK(olMemFree(sums));
}

static void test_single_counter(void) {
  ol_symbol_handle_t k = kern("single_counter", "single_counter");
  uint32_t *c = olc_alloc(OL_ALLOC_TYPE_DEVICE, sizeof(uint32_t));
  if (!k || !c)
    return;
  put32(c, 0);
  ol_kernel_launch_size_args_t l = olc_size1(1000, 100);
  struct {
    uint32_t *c;
  } a = {c};
  OLC_OK(olLaunchKernel(NULL, olc_dev, k, &a, sizeof a, &l));
  OLC_EQ(get32(c), 100000);
  /* queued several times */
  ol_queue_handle_t q = olc_queue();
  for (int i = 0; i < 5; i++)
    OLC_OK(olLaunchKernel(q, olc_dev, k, &a, sizeof a, &l));
  OLC_OK(olSyncQueue(q));
  OLC_EQ(get32(c), 600000);
  OLC_OK(olDestroyQueue(q));
  OLC_OK(olMemFree(c));
}

/* The `global` image: write stores 2*i in the program global, read copies
 * it out. */
static void test_global_write_read(void) {
  OLC_HOST_VISIBLE();
  ol_symbol_handle_t w = kern("global", "write"), r = kern("global", "read");
  void *g = NULL;
  if (!w || !r || !olc_global(prog("global"), "global", &g, NULL))
    return;
  olc_set(OL_ALLOC_TYPE_DEVICE, g, 0, 256);
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_MANAGED, 64 * sizeof(uint32_t));
  if (!out)
    return;
  memset(out, 0xff, 64 * sizeof(uint32_t));
  ol_queue_handle_t q = olc_queue();
  ol_kernel_launch_size_args_t l = olc_size1(1, 64);
  uint32_t unused = 0;
  struct out_args a = {out};
  OLC_OK(olLaunchKernel(q, olc_dev, w, &unused, sizeof unused, &l));
  OLC_OK(olLaunchKernel(q, olc_dev, r, &a, sizeof a, &l));
  OLC_OK(olSyncQueue(q));
  OLC_EQ_DARRAY(uint32_t, g, 64, 2u * i);
  OLC_EQ_ARRAY(out, 64, 2u * i);
  OLC_OK(olDestroyQueue(q));
  OLC_OK(olMemFree(out));
}

static void test_global_ctor_kernel(void) {
  ol_symbol_handle_t k = kern("global_ctor", "global_ctor");
  uint32_t out[64] = {0};
  if (!k)
    return;
  ol_kernel_launch_size_args_t l = olc_size1(1, 64);
  struct out_args a = {olc_buf(out, sizeof out)};
  OLC_OK(olLaunchKernel(NULL, olc_dev, k, &a, sizeof a, &l));
  olc_unbuf(out, a.out, sizeof out);
  OLC_EQ_ARRAY(out, 64, i + 100u);
}

static void test_global_dtor_kernel(void) {
  /* runs, and the destructor (nothing to write: no target) does not crash
   * when the program goes at the end */
  ol_symbol_handle_t k = kern("global_dtor", "global_dtor");
  uint32_t *runs = NULL;
  if (!k || !olc_global(prog("global_dtor"), "dtor_kernel_runs", (void **)&runs, NULL))
    return;
  uint32_t unused = 0;
  ol_kernel_launch_size_args_t l = olc_size1(2, 8);
  OLC_OK(olLaunchKernel(NULL, olc_dev, k, &unused, sizeof unused, &l));
  OLC_EQ(get32(runs), 16);
}

/* 1-, 2- and 3-D grids: every global id is visited exactly once, by a plain
 * kernel and by a group kernel, and the index functions stay in range. */
struct grid_args {
  uint32_t *hits;
  uint32_t *bad;
};

static void test_grids(void) {
  OLC_HOST_VISIBLE();
  ol_symbol_handle_t kernels[2] = {kern("grid", "grid"), kern("grid", "grid_group")};
  ol_symbol_handle_t count = kern("single_counter", "single_counter");
  if (!kernels[0] || !kernels[1] || !count)
    return;
  static const struct {
    uint32_t dims, ng[3], gs[3];
  } grids[] = {
      {1, {5, 1, 1}, {33, 1, 1}},  {2, {4, 3, 1}, {8, 2, 1}},   {2, {1, 1, 1}, {32, 32, 1}},
      {2, {7, 9, 1}, {1, 1, 1}},   {3, {2, 2, 2}, {4, 4, 4}},   {3, {1, 5, 3}, {16, 1, 2}},
      {3, {3, 1, 7}, {1, 32, 1}},  {3, {2, 3, 4}, {5, 6, 7}},   {3, {1, 1, 1}, {1, 1, 64}},
      {3, {3, 2, 5}, {2, 8, 3}},
  };
  enum { MAXN = 1 << 16 };
  uint32_t *hits = olc_alloc(OL_ALLOC_TYPE_MANAGED, MAXN * sizeof(uint32_t));
  uint32_t *bad = olc_alloc(OL_ALLOC_TYPE_MANAGED, sizeof(uint32_t));
  uint32_t *c = olc_alloc(OL_ALLOC_TYPE_MANAGED, sizeof(uint32_t));
  if (!hits || !bad || !c)
    return;
  for (size_t gi = 0; gi < sizeof grids / sizeof grids[0]; gi++)
    for (int kk = 0; kk < 2; kk++) {
      ol_kernel_launch_size_args_t l;
      memset(&l, 0, sizeof l);
      l.Dimensions = grids[gi].dims;
      l.NumGroups.x = grids[gi].ng[0], l.NumGroups.y = grids[gi].ng[1];
      l.NumGroups.z = grids[gi].ng[2];
      l.GroupSize.x = grids[gi].gs[0], l.GroupSize.y = grids[gi].gs[1];
      l.GroupSize.z = grids[gi].gs[2];
      uint64_t total = 1;
      for (int d = 0; d < 3; d++)
        total *= (uint64_t)grids[gi].ng[d] * grids[gi].gs[d];
      memset(hits, 0, (total + 16) * sizeof(uint32_t));
      *bad = 0;
      struct grid_args a = {hits, bad};
      printf("    %s %ux%ux%u groups of %ux%ux%u\n", kk ? "grid_group" : "grid",
             grids[gi].ng[0], grids[gi].ng[1], grids[gi].ng[2], grids[gi].gs[0],
             grids[gi].gs[1], grids[gi].gs[2]);
      OLC_OK(olLaunchKernel(NULL, olc_dev, kernels[kk], &a, sizeof a, &l));
      OLC_EQ(*bad, 0);
      OLC_EQ_ARRAY(hits, total, 1u);
      OLC_EQ_ARRAY(hits + total, 16, 0u);
    }
  /* the plain counter agrees on the total */
  ol_kernel_launch_size_args_t l;
  memset(&l, 0, sizeof l);
  l.Dimensions = 3;
  l.NumGroups.x = 2, l.NumGroups.y = 3, l.NumGroups.z = 4;
  l.GroupSize.x = 5, l.GroupSize.y = 6, l.GroupSize.z = 7;
  *c = 0;
  struct {
    uint32_t *c;
  } ca = {c};
  OLC_OK(olLaunchKernel(NULL, olc_dev, count, &ca, sizeof ca, &l));
  OLC_EQ(*c, 2 * 3 * 4 * 5 * 6 * 7);
  OLC_OK(olMemFree(hits)), OLC_OK(olMemFree(bad)), OLC_OK(olMemFree(c));
}

/* A large 1-D grid spread over all CPUs. */
static void test_large_grid(void) {
  ol_symbol_handle_t k = kern("foo", "foo");
  enum { N = 1 << 22 };
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_DEVICE, (size_t)N * sizeof(uint32_t));
  if (!k || !out)
    return;
  olc_set(OL_ALLOC_TYPE_DEVICE, out, 0, (size_t)N * sizeof(uint32_t));
  ol_kernel_launch_size_args_t l = olc_size1(N / 1024, 1024);
  struct out_args a = {out};
  OLC_OK(olLaunchKernel(NULL, olc_dev, k, &a, sizeof a, &l));
  OLC_EQ_DARRAY(uint32_t, out, N, i);
  /* one work-item per group, many groups */
  olc_set(OL_ALLOC_TYPE_DEVICE, out, 0, (size_t)N * sizeof(uint32_t));
  l = olc_size1(100000, 1);
  OLC_OK(olLaunchKernel(NULL, olc_dev, k, &a, sizeof a, &l));
  OLC_EQ_DARRAY(uint32_t, out, 100000, i);
  OLC_EQ(get32(out + 100000), 0);
  OLC_OK(olMemFree(out));
}

/* The argument bytes are copied at the call. */
static void test_arguments_copied(void) {
  ol_symbol_handle_t k = kern("foo", "foo");
  uint32_t a1[64] = {0}, a2[64] = {0};
  if (!k)
    return;
  ol_queue_handle_t q = olc_queue();
  olc_gate g;
  olc_gate_close(&g, q);
  ol_kernel_launch_size_args_t l = olc_size1(1, 64);
  uint32_t *d1 = olc_buf(a1, sizeof a1), *d2 = olc_buf(a2, sizeof a2);
  struct out_args a = {d1};
  OLC_OK(olLaunchKernel(q, olc_dev, k, &a, sizeof a, &l));
  a.out = d2; /* too late for the queued launch */
  l.NumGroups.x = 1000;
  olc_gate_open(&g);
  OLC_OK(olSyncQueue(q));
  olc_unbuf(a1, d1, sizeof a1);
  olc_unbuf(a2, d2, sizeof a2);
  OLC_EQ_ARRAY(a1, 64, i);
  OLC_EQ_ARRAY(a2, 64, 0u);
  OLC_OK(olDestroyQueue(q));
}

/* A host function holds back a kernel: the output stays zero, the queue is
 * not empty, an event after the launch is not complete; all change after
 * the release. */
static void test_blocked_launch(void) {
  OLC_HOST_VISIBLE();
  ol_symbol_handle_t k = kern("foo", "foo");
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_MANAGED, 256 * sizeof(uint32_t));
  if (!k || !out)
    return;
  memset(out, 0, 256 * sizeof(uint32_t));
  ol_queue_handle_t q = olc_queue();
  olc_gate g;
  olc_gate_close(&g, q);
  ol_kernel_launch_size_args_t l = olc_size1(4, 64);
  struct out_args a = {out};
  OLC_OK(olLaunchKernel(q, olc_dev, k, &a, sizeof a, &l));
  ol_event_handle_t e = NULL;
  OLC_OK(olCreateEvent(q, &e));
  olc_sleep_ms(500);
  int nonzero = 0;
  for (int i = 0; i < 256; i++)
    nonzero += out[i] != 0;
  OLC_EQ(nonzero, 0);
  bool flag = true;
  OLC_OK(olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof flag, &flag));
  OLC_TRUE(!flag);
  flag = true;
  OLC_OK(olGetEventInfo(e, OL_EVENT_INFO_IS_COMPLETE, sizeof flag, &flag));
  OLC_TRUE(!flag);
  olc_gate_open(&g);
  OLC_OK(olSyncQueue(q));
  OLC_EQ_ARRAY(out, 256, i);
  OLC_OK(olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof flag, &flag));
  OLC_TRUE(flag);
  OLC_OK(olGetEventInfo(e, OL_EVENT_INFO_IS_COMPLETE, sizeof flag, &flag));
  OLC_TRUE(flag);
  OLC_OK(olDestroyEvent(e));
  OLC_OK(olDestroyQueue(q));
  OLC_OK(olMemFree(out));
}

/* A launch of foo on q that succeeds: from then on launches of it on q may
 * be answered without entering Go (impl/queuemirror.h), and a bad one
 * must still be refused, with the same error. */
static void good_launch(ol_queue_handle_t q, ol_symbol_handle_t k) {
  OLC_HOST_VISIBLE();
  uint32_t *o = olc_alloc(OL_ALLOC_TYPE_MANAGED, 64 * sizeof(uint32_t));
  if (!o)
    return;
  struct out_args a = {o};
  ol_kernel_launch_size_args_t l = olc_size1(2, 32);
  for (int i = 0; i < 3; i++)
    OLC_OK(olLaunchKernel(q, olc_dev, k, &a, sizeof a, &l));
  OLC_OK(olSyncQueue(q));
  OLC_EQ_ARRAY(o, 64, i);
  OLC_OK(olMemFree(o));
}

static void test_bad_sizes(void) {
  OLC_HOST_VISIBLE();
  ol_symbol_handle_t k = kern("foo", "foo");
  uint32_t out[64];
  if (!k)
    return;
  struct out_args a = {out};
  ol_queue_handle_t q = olc_queue();
  ol_kernel_launch_size_args_t l;
  good_launch(q, k);
  for (int which = 0; which < 6; which++) {
    l = olc_size1(1, 1);
    uint32_t *f = which < 3 ? &l.NumGroups.x : &l.GroupSize.x;
    f[which % 3] = 0;
    char want[64];
    snprintf(want, sizeof want, "%s.%c is 0", which < 3 ? "NumGroups" : "GroupSize",
             "xyz"[which % 3]);
    OLC_ERR_HAS(olLaunchKernel(q, olc_dev, k, &a, sizeof a, &l), OL_ERRC_INVALID_SIZE, want);
    OLC_ERR_HAS(olLaunchKernel(NULL, olc_dev, k, &a, sizeof a, &l), OL_ERRC_INVALID_SIZE, want);
  }
  if (OLC_ON(OLC_HOST | OLC_AMDGPU, "CUDA bounds its grids in blocks, not in work-items")) {
    /* every dimension within MAX_WORK_SIZE_PER_DIMENSION, the whole grid
     * past MAX_WORK_SIZE (CUDA bounds its grids in blocks only) */
    uint32_t max_work = 0;
    ol_dimensions_t per_dim = {0, 0, 0};
    OLC_OK(olGetDeviceInfo(olc_dev, OL_DEVICE_INFO_MAX_WORK_SIZE, sizeof max_work, &max_work));
    OLC_OK(olGetDeviceInfo(olc_dev, OL_DEVICE_INFO_MAX_WORK_SIZE_PER_DIMENSION, sizeof per_dim, &per_dim));
    if (OLC_TRUE(max_work == 4294967295u && per_dim.x == 4294967295u && per_dim.y >= 2)) {
      l = olc_size1(1u << 23, 256); /* 2^31 work-items in x, 2 in y: 2^32 */
      l.NumGroups.y = 2;
      OLC_ERR_HAS(olLaunchKernel(q, olc_dev, k, &a, sizeof a, &l), OL_ERRC_INVALID_SIZE, "4294967296");
      OLC_ERR_HAS(olLaunchKernel(NULL, olc_dev, k, &a, sizeof a, &l), OL_ERRC_INVALID_SIZE, "4294967296");
      l = olc_size1(4294967295u, 1);
      l.NumGroups.y = 2;
      OLC_ERR_HAS(olLaunchKernel(q, olc_dev, k, &a, sizeof a, &l), OL_ERRC_INVALID_SIZE, "8589934590");
    }
  }
  if (!OLC_ON(OLC_HOST, "its launch limits (1024 per group, 1024x1024x64, 1 MiB)")) {
    OLC_OK(olSyncQueue(q));
    OLC_OK(olDestroyQueue(q));
    return;
  }
  l = olc_size1(1, 1025);
  OLC_ERR_HAS(olLaunchKernel(q, olc_dev, k, &a, sizeof a, &l), OL_ERRC_INVALID_SIZE, "1025");
  l = olc_size1(1, 1);
  l.GroupSize.y = 2000;
  OLC_ERR_HAS(olLaunchKernel(q, olc_dev, k, &a, sizeof a, &l), OL_ERRC_INVALID_SIZE, "2000");
  l = olc_size1(1, 1);
  l.GroupSize.z = 65;
  OLC_ERR_HAS(olLaunchKernel(q, olc_dev, k, &a, sizeof a, &l), OL_ERRC_INVALID_SIZE, "65");
  /* every dimension within limits, the product not */
  l = olc_size1(1, 64);
  l.GroupSize.y = 32;
  OLC_ERR_HAS(olLaunchKernel(q, olc_dev, k, &a, sizeof a, &l), OL_ERRC_INVALID_SIZE, "2048");
  l = olc_size1(1, 1);
  l.DynSharedMemory = (1 << 20) + 1;
  OLC_ERR_HAS(olLaunchKernel(q, olc_dev, k, &a, sizeof a, &l), OL_ERRC_INVALID_SIZE, "1048577");
  /* more work-items in one dimension than 32 bits can count */
  l = olc_size1(0x10000000u, 32);
  OLC_ERR_HAS(olLaunchKernel(q, olc_dev, k, &a, sizeof a, &l), OL_ERRC_INVALID_SIZE, "268435456");
  /* limits themselves are accepted */
  uint32_t *big = olc_alloc(OL_ALLOC_TYPE_MANAGED, 1024 * sizeof(uint32_t));
  if (big) {
    struct out_args b = {big};
    l = olc_size1(1, 1024);
    OLC_OK(olLaunchKernel(q, olc_dev, k, &b, sizeof b, &l));
    l = olc_size1(1, 16);
    l.GroupSize.z = 64;
    OLC_OK(olLaunchKernel(q, olc_dev, k, &b, sizeof b, &l));
    OLC_OK(olSyncQueue(q));
    OLC_EQ_ARRAY(big, 1024, i);
    OLC_OK(olMemFree(big));
  }
  /* nothing of the refused launches ran; the queue is fine */
  OLC_OK(olSyncQueue(q));
  OLC_OK(olDestroyQueue(q));
}

static void test_bad_arguments(void) {
  OLC_HOST_VISIBLE();
  ol_symbol_handle_t k = kern("foo", "foo");
  ol_symbol_handle_t m = kern("multiargs", "multiargs");
  uint32_t out[64];
  if (!k || !m)
    return;
  struct out_args a = {out};
  ol_kernel_launch_size_args_t l = olc_size1(1, 1);
  if (OLC_ON(OLC_HOST | OLC_GPU, "argument buffers shorter than the kernel's struct")) {
    /* smaller than the kernel's argument struct (the host image's kernel
     * descriptor, an AMDGPU code object's metadata or the CUDA driver
     * gives its size) */
    OLC_ERR_CODE(olLaunchKernel(NULL, olc_dev, k, &a, sizeof a - 1, &l), OL_ERRC_INVALID_ARGUMENT);
    OLC_ERR_CODE(olLaunchKernel(NULL, olc_dev, k, NULL, 0, &l), OL_ERRC_INVALID_ARGUMENT);
    struct multiargs_args ma;
    memset(&ma, 0, sizeof ma);
    OLC_ERR_HAS(olLaunchKernel(NULL, olc_dev, m, &ma, 8, &l), OL_ERRC_INVALID_ARGUMENT, "8");
#if OLC_RELEASE >= 23
    /* 23.1: one argument of 12 bytes; the Details are the device's (the
     * kernel's struct) or, where the device knows the parameters, the
     * runtime's ("ArgSizes[0] is 12; argument 0 ... is 56 bytes") */
    OLC_ERR_HAS(olLaunchKernel(NULL, olc_dev, m, &ma, 12, &l), OL_ERRC_INVALID_ARGUMENT, "12");
#else
    OLC_ERR_HAS(olLaunchKernel(NULL, olc_dev, m, &ma, 12, &l), OL_ERRC_INVALID_ARGUMENT, "ArgumentsSize is 12");
#endif
    OLC_ERR_CODE(olLaunchKernel(NULL, olc_dev, m, &ma, sizeof ma - 8, &l), OL_ERRC_INVALID_ARGUMENT);
    ol_queue_handle_t q = olc_queue();
    good_launch(q, k);
    OLC_ERR_CODE(olLaunchKernel(q, olc_dev, k, &a, sizeof a - 1, &l), OL_ERRC_INVALID_ARGUMENT);
#if OLC_RELEASE >= 23
    /* 23.1: NumArgs 0 for a kernel that takes one */
    OLC_ERR_CODE(olLaunchKernel(q, olc_dev, m, NULL, 0, &l), OL_ERRC_INVALID_ARGUMENT);
#else
    OLC_ERR_HAS(olLaunchKernel(q, olc_dev, m, NULL, 0, &l), OL_ERRC_INVALID_ARGUMENT, "ArgumentsSize is 0");
#endif
    /* a longer buffer is accepted: the bytes past the struct are ignored */
    uint32_t *o = olc_alloc(OL_ALLOC_TYPE_MANAGED, 64 * sizeof(uint32_t));
    if (o) {
      struct {
        uint32_t *out;
        uint64_t extra[4];
      } longer = {o, {1, 2, 3, 4}};
      ol_kernel_launch_size_args_t l32 = olc_size1(2, 16);
#if OLC_RELEASE >= 23
      /* 23.1: one argument of 40 bytes for a parameter of 8; refused
       * where the device knows the kernel's parameters (the host device;
       * GPUs whose driver or code object says), else the same */
      memset(o, 0, 64 * sizeof(uint32_t));
      ol_result_t r = olLaunchKernel(q, olc_dev, k, &longer, sizeof longer, &l32);
      OLC_CHECK(r == NULL || (olc_code(r) == OL_ERRC_INVALID_ARGUMENT && olc_details_has(r, "ArgSizes[0]")),
                "olLaunchKernel with a 40-byte argument: expected success or INVALID_ARGUMENT naming "
                "ArgSizes[0], got %s \"%s\"", olc_code_name(olc_code(r)), olc_details(r));
      OLC_OK(olSyncQueue(q));
      if (r == NULL)
        OLC_EQ_ARRAY(o, 32, i);
#else
      OLC_OK(olLaunchKernel(q, olc_dev, k, &longer, sizeof longer, &l32));
      OLC_OK(olSyncQueue(q));
      OLC_EQ_ARRAY(o, 32, i);
#endif
      OLC_OK(olMemFree(o));
    }
    OLC_OK(olSyncQueue(q));
    OLC_OK(olDestroyQueue(q));
  }
  OLC_ERR_CODE(olLaunchKernel((ol_queue_handle_t)0x1234, olc_dev, k, &a, sizeof a, &l),
               OL_ERRC_INVALID_QUEUE);
  OLC_ERR_CODE(olLaunchKernel(NULL, (ol_device_handle_t)0x1234, k, &a, sizeof a, &l),
               OL_ERRC_INVALID_DEVICE);
  /* a global variable is not a kernel */
  ol_symbol_handle_t g = olc_global(prog("global"), "global", NULL, NULL);
  if (g) {
    OLC_ERR_HAS(olLaunchKernel(NULL, olc_dev, g, &a, sizeof a, &l), OL_ERRC_SYMBOL_KIND,
                "provided symbol is not a kernel");
    ol_queue_handle_t q = olc_queue();
    OLC_ERR_HAS(olLaunchKernel(q, olc_dev, g, &a, sizeof a, &l), OL_ERRC_SYMBOL_KIND,
                "provided symbol is not a kernel");
    OLC_OK(olDestroyQueue(q));
  }
}

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    OLC_RUN(test_foo_queue);
    OLC_RUN(test_foo_synchronous);
    OLC_RUN(test_foo_threads_one_queue);
    OLC_RUN(test_foo_threads_sync);
    OLC_RUN(test_bar_other_program);
    OLC_RUN(test_noargs);
    OLC_RUN(test_multiargs);
    OLC_RUN(test_composite);
#if OLC_RELEASE < 23
    OLC_RUN(test_params_block);
#endif
    OLC_RUN(test_byte);
    OLC_RUN(test_localmem);
    OLC_RUN(test_localmem_reduction);
    OLC_RUN(test_phased_reduction);
    OLC_RUN(test_phased_shuffle);
    OLC_RUN(test_localmem_static);
    OLC_RUN(test_single_counter);
    OLC_RUN(test_global_write_read);
    OLC_RUN(test_global_ctor_kernel);
    OLC_RUN(test_global_dtor_kernel);
    OLC_RUN(test_grids);
    OLC_RUN(test_large_grid);
    OLC_RUN(test_arguments_copied);
    OLC_RUN(test_blocked_launch);
    OLC_RUN(test_bad_sizes);
    OLC_RUN(test_bad_arguments);
  }
  return olc_finish("kernel");
}
