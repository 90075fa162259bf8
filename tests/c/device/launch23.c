/* LLVM 23.1's olLaunchKernel(Queue, Device, Kernel, LaunchSizeArgs,
 * Properties, NumArgs, ArgPtrs, ArgSizes): arguments one by one, a
 * property list (cooperative launches), olGetKernelMaxCooperativeGroupCount
 * and OL_DEVICE_INFO_COOPERATIVE_LAUNCH_SUPPORT. Built with RELEASE=23.1
 * only (TESTS23 in the Makefile). The 23.1 calls are written with the name
 * in parentheses, `(olLaunchKernel)(...)`: olrelease.h maps the unbracketed
 * 22.1 spelling.
 *
 * A kernel of OL_KERNEL takes one struct: every device knows its
 * parameters (the host image's kernel descriptor, cuFuncGetParamInfo, the
 * code object's metadata), expects exactly one argument of the struct's
 * size and refuses other counts and sizes with INVALID_ARGUMENT. Kernels of
 * OL_KERNEL_PARAMS (tests/c/kernels/params.c) take one argument per
 * parameter, placed where the kernel reads it. A host image of an older
 * <offload/kernel.h> (ABI 3, fixtures/oldabi.c) does not say where its
 * parameters are: one argument is its whole argument block, several are
 * refused.
 * SPDX-License-Identifier: Apache-2.0 */
#include "oldevices.h"

#if OLC_RELEASE < 23
#error "launch23.c tests the 23.1 olLaunchKernel: build it with RELEASE=23.1"
#endif

static ol_program_handle_t progs[32];
static int nprogs;

/* A kernel (or global) of image `image`, the program kept until the end of
 * the device's tests (free_programs). */
static ol_symbol_handle_t sym(const char *image, const char *name, ol_symbol_kind_t kind) {
  ol_program_handle_t p = olc_program(image);
  if (!p)
    return NULL;
  if (nprogs < 32)
    progs[nprogs++] = p;
  ol_symbol_handle_t s = NULL;
  if (!OLC_OK(olGetSymbol(p, name, kind, &s)))
    return NULL;
  return s;
}

static ol_symbol_handle_t kern(const char *image, const char *name) {
  return sym(image, name, OL_SYMBOL_KIND_KERNEL);
}

static void free_programs(void) {
  for (int i = 0; i < nprogs; i++)
    OLC_OK(olDestroyProgram(progs[i]));
  nprogs = 0;
}

struct foo_args {
  uint32_t *out;
};

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

/* foo with its struct as the one argument, on a queue and without one; the
 * result copied back with olMemcpy. */
static void test_struct_as_one_argument(void) {
  ol_symbol_handle_t k = kern("foo", "foo");
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_DEVICE, 128 * sizeof(uint32_t));
  if (!k || !out)
    return;
  olc_memset(out, 0xff, 128 * sizeof(uint32_t));
  struct foo_args a = {out};
  void *ptrs[] = {&a};
  size_t sizes[] = {sizeof a};
  ol_kernel_launch_size_args_t l = olc_size1(2, 32);
  OLC_OK((olLaunchKernel)(NULL, olc_dev, k, &l, NULL, 1, ptrs, sizes));
  uint32_t h[128];
  if (olc_read(h, out, sizeof h)) {
    OLC_EQ_ARRAY(h, 64, i);
    OLC_EQ(h[64], 0xffffffffu);
  }
  ol_queue_handle_t q = olc_queue();
  l = olc_size1(4, 32);
  OLC_OK((olLaunchKernel)(q, olc_dev, k, &l, NULL, 1, ptrs, sizes));
  a.out = NULL; /* the arguments were read during the call */
  OLC_OK(olSyncQueue(q));
  if (olc_read(h, out, sizeof h))
    OLC_EQ_ARRAY(h, 128, i);
  /* the code-location twin */
  ol_code_location_t loc = {"test_struct_as_one_argument", "launch23.c", 1, 1};
  a.out = out;
  olc_memset(out, 0, 128 * sizeof(uint32_t));
  OLC_OK((olLaunchKernelWithCodeLoc)(q, olc_dev, k, &l, NULL, 1, ptrs, sizes, &loc));
  OLC_OK(olSyncQueue(q));
  if (olc_read(h, out, sizeof h))
    OLC_EQ_ARRAY(h, 128, i);
  OLC_OK(olDestroyQueue(q));
  OLC_OK(olMemFree(out));
}

static void test_multiargs_one_struct(void) {
  ol_symbol_handle_t k = kern("multiargs", "multiargs");
  uint32_t *dout = olc_alloc(OL_ALLOC_TYPE_DEVICE, 200 * sizeof(uint32_t));
  int32_t *dout2 = olc_alloc(OL_ALLOC_TYPE_DEVICE, 200 * sizeof(int32_t));
  if (!k || !dout || !dout2)
    goto out;
  olc_memset(dout, 0xff, 200 * sizeof(uint32_t));
  olc_memset(dout2, 0xff, 200 * sizeof(int32_t));
  struct multiargs_args a = {200, -50, dout, 3.0, (uint64_t)7 << 32, 0.5f, dout2, 150};
  void *ptrs[] = {&a};
  size_t sizes[] = {sizeof a};
  ol_kernel_launch_size_args_t l = olc_size1(4, 50);
  OLC_OK((olLaunchKernel)(NULL, olc_dev, k, &l, NULL, 1, ptrs, sizes));
  uint32_t out[200];
  int32_t out2[200];
  if (olc_read(out, dout, sizeof out) && olc_read(out2, dout2, sizeof out2)) {
    OLC_EQ_ARRAY(out, 150, 159u + 3u * i); /* 200 - 50 + 3 i + 7 + 2 */
    OLC_EQ_ARRAY(out2, 150, (int32_t)(-50 * (int32_t)(i + 1)));
    OLC_EQ(out[150], 0xffffffffu);
  }
out:
  if (dout)
    OLC_OK(olMemFree(dout));
  if (dout2)
    OLC_OK(olMemFree(dout2));
}

/* The struct's eight members as eight arguments: every device knows that
 * the kernel takes one struct and refuses the count (the host device once
 * packed them like a C struct's members, guessing each one's alignment
 * from its size). */
static void test_members_as_arguments(void) {
  ol_symbol_handle_t k = kern("multiargs", "multiargs");
  uint32_t *dout = olc_alloc(OL_ALLOC_TYPE_DEVICE, 200 * sizeof(uint32_t));
  int32_t *dout2 = olc_alloc(OL_ALLOC_TYPE_DEVICE, 200 * sizeof(int32_t));
  if (!k || !dout || !dout2)
    goto out;
  olc_memset(dout, 0xff, 200 * sizeof(uint32_t));
  olc_memset(dout2, 0xff, 200 * sizeof(int32_t));
  uint8_t small = 200;
  int16_t neg = -50;
  double scale = 3.0;
  uint64_t big = (uint64_t)7 << 32;
  float frac = 0.5f;
  uint32_t count = 150;
  void *ptrs[] = {&small, &neg, &dout, &scale, &big, &frac, &dout2, &count};
  size_t sizes[] = {1, 2, 8, 8, 8, 4, 8, 4};
  ol_kernel_launch_size_args_t l = olc_size1(4, 50);
  OLC_ERR_HAS((olLaunchKernel)(NULL, olc_dev, k, &l, NULL, 8, ptrs, sizes), OL_ERRC_INVALID_ARGUMENT,
              "NumArgs is 8");
  OLC_ERR_HAS((olLaunchKernel)(NULL, olc_dev, k, &l, NULL, 3, ptrs, sizes), OL_ERRC_INVALID_ARGUMENT,
              "NumArgs is 3");
  uint32_t h = 0;
  OLC_TRUE(olc_read(&h, dout, sizeof h) && h == 0xffffffffu); /* nothing ran */
out:
  if (dout)
    OLC_OK(olMemFree(dout));
  if (dout2)
    OLC_OK(olMemFree(dout2));
}

/* A wrong count or size (every device knows an OL_KERNEL's parameters). */
static void test_wrong_count_and_size(void) {
  ol_symbol_handle_t k = kern("foo", "foo");
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_DEVICE, 64 * sizeof(uint32_t));
  if (!k || !out)
    goto out;
  struct foo_args a = {out};
  uint64_t extra = 0;
  void *ptrs[] = {&a, &extra};
  size_t sizes[] = {sizeof a, sizeof extra};
  ol_kernel_launch_size_args_t l = olc_size1(1, 64);
  OLC_ERR_HAS((olLaunchKernel)(NULL, olc_dev, k, &l, NULL, 2, ptrs, sizes), OL_ERRC_INVALID_ARGUMENT,
              "NumArgs is 2");
  /* fewer bytes than the kernel takes: refused by the runtime (the count
   * or size) or the device (its struct size), INVALID_ARGUMENT either way */
  OLC_ERR_CODE((olLaunchKernel)(NULL, olc_dev, k, &l, NULL, 0, NULL, NULL), OL_ERRC_INVALID_ARGUMENT);
  size_t wrong[] = {sizeof a + 8};
  OLC_ERR_HAS((olLaunchKernel)(NULL, olc_dev, k, &l, NULL, 1, ptrs, wrong), OL_ERRC_INVALID_ARGUMENT,
              "ArgSizes[0] is 16");
  wrong[0] = 4;
  OLC_ERR_CODE((olLaunchKernel)(NULL, olc_dev, k, &l, NULL, 1, ptrs, wrong), OL_ERRC_INVALID_ARGUMENT);
  /* the same on a queue that launched the kernel already */
  ol_queue_handle_t q = olc_queue();
  if (q && OLC_OK((olLaunchKernel)(q, olc_dev, k, &l, NULL, 1, ptrs, sizes))) {
    OLC_ERR_HAS((olLaunchKernel)(q, olc_dev, k, &l, NULL, 2, ptrs, sizes), OL_ERRC_INVALID_ARGUMENT, "NumArgs is 2");
    OLC_ERR_CODE((olLaunchKernel)(q, olc_dev, k, &l, NULL, 0, NULL, NULL), OL_ERRC_INVALID_ARGUMENT);
    wrong[0] = sizeof a + 8;
    OLC_ERR_HAS((olLaunchKernel)(q, olc_dev, k, &l, NULL, 1, ptrs, wrong), OL_ERRC_INVALID_ARGUMENT,
                "ArgSizes[0] is 16");
    wrong[0] = 4;
    OLC_ERR_CODE((olLaunchKernel)(q, olc_dev, k, &l, NULL, 1, ptrs, wrong), OL_ERRC_INVALID_ARGUMENT);
    OLC_OK(olSyncQueue(q));
  }
  if (q)
    OLC_OK(olDestroyQueue(q));
out:
  if (out)
    OLC_OK(olMemFree(out));
}

/* The checks of NumArgs, ArgPtrs and ArgSizes, without a queue and on a
 * queue where both kernels were launched already (from then on launches
 * on it may be answered without entering Go, impl/queuemirror.h). */
static void argument_checks(ol_queue_handle_t q, ol_symbol_handle_t k, ol_symbol_handle_t n);

static void test_argument_validation(void) {
  ol_symbol_handle_t k = kern("foo", "foo");
  ol_symbol_handle_t n = kern("noargs", "noargs");
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_DEVICE, 64 * sizeof(uint32_t));
  ol_queue_handle_t q = olc_queue();
  if (!k || !n || !out || !q)
    goto out;
  argument_checks(NULL, k, n);
  struct foo_args a = {out};
  void *ptrs[] = {&a};
  size_t sizes[] = {sizeof a};
  ol_kernel_launch_size_args_t l = olc_size1(1, 64);
  OLC_OK((olLaunchKernel)(q, olc_dev, k, &l, NULL, 1, ptrs, sizes));
  OLC_OK((olLaunchKernel)(q, olc_dev, n, &l, NULL, 0, NULL, NULL));
  OLC_OK(olSyncQueue(q));
  argument_checks(q, k, n);
  OLC_OK(olSyncQueue(q));
out:
  if (out)
    OLC_OK(olMemFree(out));
  if (q)
    OLC_OK(olDestroyQueue(q));
}

static void argument_checks(ol_queue_handle_t q, ol_symbol_handle_t k, ol_symbol_handle_t n) {
  struct foo_args a = {NULL};
  void *ptrs[] = {&a};
  size_t sizes[] = {sizeof a};
  ol_kernel_launch_size_args_t l = olc_size1(1, 1);
  /* one array without the other */
  OLC_ERR_CODE((olLaunchKernel)(q, olc_dev, k, &l, NULL, 1, ptrs, NULL), OL_ERRC_INVALID_ARGUMENT);
  OLC_ERR_CODE((olLaunchKernel)(q, olc_dev, k, &l, NULL, 1, NULL, sizes), OL_ERRC_INVALID_ARGUMENT);
  OLC_ERR_CODE((olLaunchKernel)(q, olc_dev, n, &l, NULL, 0, ptrs, NULL), OL_ERRC_INVALID_ARGUMENT);
  OLC_ERR_CODE((olLaunchKernel)(q, olc_dev, n, &l, NULL, 0, NULL, sizes), OL_ERRC_INVALID_ARGUMENT);
  /* NumArgs > 0 without arrays */
  OLC_ERR_CODE((olLaunchKernel)(q, olc_dev, k, &l, NULL, 1, NULL, NULL), OL_ERRC_INVALID_ARGUMENT);
  /* a NULL argument pointer with a size */
  void *nullp[] = {NULL};
  OLC_ERR_HAS((olLaunchKernel)(q, olc_dev, k, &l, NULL, 1, nullp, sizes), OL_ERRC_INVALID_NULL_POINTER,
              "ArgPtrs[0]");
  /* a size beyond any address range */
  size_t huge[] = {SIZE_MAX};
  OLC_ERR_HAS((olLaunchKernel)(q, olc_dev, k, &l, NULL, 1, ptrs, huge), OL_ERRC_INVALID_SIZE, "ArgSizes[0]");
  /* the usual checks first */
  OLC_ERR_CODE((olLaunchKernel)(q, NULL, k, &l, NULL, 1, ptrs, sizes), OL_ERRC_INVALID_NULL_HANDLE);
  OLC_ERR_CODE((olLaunchKernel)(q, olc_dev, NULL, &l, NULL, 1, ptrs, sizes), OL_ERRC_INVALID_NULL_HANDLE);
  OLC_ERR_CODE((olLaunchKernel)(q, olc_dev, k, NULL, NULL, 1, ptrs, sizes), OL_ERRC_INVALID_NULL_POINTER);
  ol_symbol_handle_t g = sym("global", "global", OL_SYMBOL_KIND_GLOBAL_VARIABLE);
  if (g)
    OLC_ERR_CODE((olLaunchKernel)(q, olc_dev, g, &l, NULL, 1, ptrs, sizes), OL_ERRC_SYMBOL_KIND);
  /* a kernel without arguments: NumArgs 0, with or without (empty) arrays */
  void *no_ptrs[1] = {NULL};
  size_t no_sizes[1] = {0};
  OLC_OK((olLaunchKernel)(q, olc_dev, n, &l, NULL, 0, NULL, NULL));
  OLC_OK((olLaunchKernel)(q, olc_dev, n, &l, NULL, 0, no_ptrs, no_sizes));
}

/* The parameter types of tests/c/kernels/params.c, as the test's compiler
 * lays them out (the kernels' are the same declarations). */
struct params_a1 { uint8_t b[3]; };
struct params_a2 { int16_t h; int8_t c; };
struct params_a4 { int32_t i; int8_t c; };
struct params_a8 { double d; int8_t c; };
struct params_a16 { int32_t x; int64_t y; } __attribute__((aligned(16)));
struct params_pair { int32_t a; int32_t b; };
_Static_assert(_Alignof(struct params_a1) == 1 && _Alignof(struct params_a2) == 2 &&
                   _Alignof(struct params_a4) == 4 && _Alignof(struct params_a8) == 8 &&
                   _Alignof(struct params_a16) == 16,
               "the params structs cover every alignment from 1 to 16");

enum { PARAMS_ITEMS = 8 };

/* Launches kernel `name` of params with the n arguments ptrs/sizes over
 * PARAMS_ITEMS work-items, without a queue and twice on a queue (the
 * second time laid out by the C launch path, impl/queuemirror.h), and
 * checks that work-item id's row of `row` int64s in out is want[j] + id. */
static void params_run(const char *name, size_t n, void **ptrs, const size_t *sizes, int64_t *out, int row,
                       const int64_t *want) {
  ol_symbol_handle_t k = kern("params", name);
  if (!k)
    return;
  size_t bytes = (size_t)PARAMS_ITEMS * row * sizeof(int64_t);
  ol_queue_handle_t q = olc_queue();
  ol_kernel_launch_size_args_t l = olc_size1(2, PARAMS_ITEMS / 2);
  for (int pass = 0; pass < 3 && q; pass++) {
    olc_memset(out, 0xff, bytes);
    if (!OLC_OK((olLaunchKernel)(pass ? q : NULL, olc_dev, k, &l, NULL, n, ptrs, sizes)))
      continue;
    if (pass)
      OLC_OK(olSyncQueue(q));
    int64_t *h = olc_fetch(out, bytes);
    if (!h)
      continue;
    for (int id = 0; id < PARAMS_ITEMS; id++)
      for (int j = 0; j < row; j++)
        OLC_CHECK(h[id * row + j] == want[j] + id, "%s (pass %d): work-item %d, value %d is %lld, want %lld", name,
                  pass, id, j, (long long)h[id * row + j], (long long)(want[j] + id));
    free(h);
  }
  if (q)
    OLC_OK(olDestroyQueue(q));
}

/* Parameters of structs of alignment 1, 2, 4, 8 and 16, each after a
 * one-byte parameter (so that each needs its own padding), then a pointer. */
static void test_params_every_alignment(void) {
  enum { ROW = 16 };
  int64_t *out = olc_alloc(OL_ALLOC_TYPE_DEVICE, PARAMS_ITEMS * ROW * sizeof(int64_t));
  if (!out)
    return;
  int8_t c0 = -3, c1 = 5, c2 = -7, c3 = 11, c4 = -13;
  struct params_a1 s1 = {{21, 22, 23}};
  struct params_a2 s2 = {-300, 31};
  struct params_a4 s4 = {100000, -41};
  struct params_a8 s8 = {2.5, 51};
  struct params_a16 s16 = {-600000, (int64_t)1 << 40};
  void *ptrs[] = {&c0, &s1, &c1, &s2, &c2, &s4, &c3, &s8, &c4, &s16, &out};
  size_t sizes[] = {sizeof c0, sizeof s1, sizeof c1, sizeof s2, sizeof c2, sizeof s4,
                    sizeof c3, sizeof s8, sizeof c4, sizeof s16, sizeof out};
  const int64_t want[ROW] = {c0,   s1.b[0], s1.b[1], s1.b[2], c1,   s2.h, s2.c,  c2,
                             s4.i, s4.c,    c3,      10,      s8.c, c4,   s16.x, s16.y};
  params_run("params_align", 11, ptrs, sizes, out, ROW, want);
  OLC_OK(olMemFree(out));
}

/* Scalars of sizes 1, 2, 4 and 8, a double, a pointer the kernel reads
 * through and a struct of two ints, in two orders. */
static void test_params_mixed_sizes(void) {
  enum { ROW = 8 };
  int64_t *out = olc_alloc(OL_ALLOC_TYPE_DEVICE, PARAMS_ITEMS * ROW * sizeof(int64_t));
  int32_t *p = olc_alloc(OL_ALLOC_TYPE_DEVICE, PARAMS_ITEMS * sizeof(int32_t));
  int32_t hp[PARAMS_ITEMS];
  for (int i = 0; i < PARAMS_ITEMS; i++)
    hp[i] = 1000 + i;
  if (out && p && olc_write(p, hp, sizeof hp)) {
    char c = 'A';
    short sh = -1234;
    int i = 56789;
    double d = 1.25;
    struct params_pair f = {-4, 77};
    int64_t q = -((int64_t)1 << 35);
    const int64_t want[ROW] = {c, sh, i, 10, 1000, f.a, f.b, q};
    void *ptrs[] = {&c, &sh, &i, &d, &p, &f, &q, &out};
    size_t sizes[] = {sizeof c, sizeof sh, sizeof i, sizeof d, sizeof p, sizeof f, sizeof q, sizeof out};
    params_run("params_mixed", 8, ptrs, sizes, out, ROW, want);
    void *rptrs[] = {&f, &c, &d, &sh, &p, &i, &out, &q};
    size_t rsizes[] = {sizeof f, sizeof c, sizeof d, sizeof sh, sizeof p, sizeof i, sizeof out, sizeof q};
    params_run("params_mixed_rev", 8, rptrs, rsizes, out, ROW, want);
  }
  if (out)
    OLC_OK(olMemFree(out));
  if (p)
    OLC_OK(olMemFree(p));
}

/* The kernel composite(int N, struct {int a; int b;} F, int *out):
 * F at offset 4, as C puts it; the group and phased forms alike. */
static void test_params_composite_group_phased(void) {
  ol_symbol_handle_t kc = kern("params", "params_composite");
  ol_symbol_handle_t kg = kern("params", "params_group");
  ol_symbol_handle_t kp = kern("params", "params_phased");
  int32_t *out = olc_alloc(OL_ALLOC_TYPE_DEVICE, 64 * sizeof(int32_t));
  if (!kc || !kg || !kp || !out)
    goto out;
  ol_kernel_launch_size_args_t l = olc_size1(2, 32);
  int32_t h[64];
  int32_t n = 1;
  struct params_pair f = {2, 3};
  void *ptrs[] = {&n, &f, &out};
  size_t sizes[] = {sizeof n, sizeof f, sizeof out};
  olc_memset(out, 0, sizeof h);
  OLC_OK((olLaunchKernel)(NULL, olc_dev, kc, &l, NULL, 3, ptrs, sizes));
  if (olc_read(h, out, sizeof h))
    OLC_EQ_ARRAY(h, 64, 6 + (int32_t)i);
  int8_t c = 3;
  struct params_a16 s16 = {40, 500};
  void *gptrs[] = {&c, &s16, &out};
  size_t gsizes[] = {sizeof c, sizeof s16, sizeof out};
  olc_memset(out, 0, sizeof h);
  OLC_OK((olLaunchKernel)(NULL, olc_dev, kg, &l, NULL, 3, gptrs, gsizes));
  if (olc_read(h, out, sizeof h))
    OLC_EQ_ARRAY(h, 64, 3 + 40 + 500);
  /* cooperatively (CUDA takes a pointer to each parameter there) */
  uint32_t max = 0;
  if (OLC_OK(olGetKernelMaxCooperativeGroupCount(olc_dev, kg, &l, &max)) && max >= 2) {
    bool yes = true;
    const ol_kernel_launch_prop_t coop[] = {{OL_KERNEL_LAUNCH_PROP_TYPE_IS_COOPERATIVE, &yes},
                                            OL_KERNEL_LAUNCH_PROP_END};
    olc_memset(out, 0, sizeof h);
    OLC_OK((olLaunchKernel)(NULL, olc_dev, kg, &l, coop, 3, gptrs, gsizes));
    if (olc_read(h, out, sizeof h))
      OLC_EQ_ARRAY(h, 64, 3 + 40 + 500);
  }
  int16_t hh = -7;
  struct params_a8 s8 = {9.75, 12};
  void *pptrs[] = {&hh, &s8, &out};
  size_t psizes[] = {sizeof hh, sizeof s8, sizeof out};
  olc_memset(out, 0, sizeof h);
  OLC_OK((olLaunchKernel)(NULL, olc_dev, kp, &l, NULL, 3, pptrs, psizes));
  if (olc_read(h, out, sizeof h))
    OLC_EQ_ARRAY(h, 64, -7 + 12 + 9);
out:
  if (out)
    OLC_OK(olMemFree(out));
}

/* A count or a size that is not the kernel's is refused, naming the
 * kernel and the argument, and nothing runs; without a queue and on a
 * queue that launched the kernel already. */
static void test_params_refused(void) {
  ol_symbol_handle_t k = kern("params", "params_composite");
  int32_t *out = olc_alloc(OL_ALLOC_TYPE_DEVICE, 64 * sizeof(int32_t));
  ol_queue_handle_t q = olc_queue();
  if (!k || !out || !q)
    goto out;
  ol_kernel_launch_size_args_t l = olc_size1(2, 32);
  int32_t n = 1;
  struct params_pair f = {2, 3};
  struct {
    int32_t n;
    struct params_pair f;
    int32_t *out;
  } block = {1, {2, 3}, out};
  void *ptrs[] = {&n, &f, &out, &out};
  size_t sizes[] = {sizeof n, sizeof f, sizeof out, sizeof out};
  void *bptrs[] = {&block};
  size_t bsizes[] = {sizeof block};
  OLC_OK((olLaunchKernel)(q, olc_dev, k, &l, NULL, 3, ptrs, sizes));
  OLC_OK(olSyncQueue(q));
  olc_memset(out, 0xff, 64 * sizeof(int32_t));
  for (int withq = 0; withq < 2; withq++) {
    ol_queue_handle_t on = withq ? q : NULL;
    OLC_ERR_HAS((olLaunchKernel)(on, olc_dev, k, &l, NULL, 2, ptrs, sizes), OL_ERRC_INVALID_ARGUMENT,
                "\"params_composite\" takes 3 arguments; NumArgs is 2");
    OLC_ERR_HAS((olLaunchKernel)(on, olc_dev, k, &l, NULL, 4, ptrs, sizes), OL_ERRC_INVALID_ARGUMENT,
                "NumArgs is 4");
    OLC_ERR_HAS((olLaunchKernel)(on, olc_dev, k, &l, NULL, 1, bptrs, bsizes), OL_ERRC_INVALID_ARGUMENT,
                "NumArgs is 1");
    OLC_ERR_HAS((olLaunchKernel)(on, olc_dev, k, &l, NULL, 0, NULL, NULL), OL_ERRC_INVALID_ARGUMENT,
                "NumArgs is 0");
    size_t wrong[] = {sizeof n, 4, sizeof out};
    OLC_ERR_HAS((olLaunchKernel)(on, olc_dev, k, &l, NULL, 3, ptrs, wrong), OL_ERRC_INVALID_ARGUMENT,
                "ArgSizes[1] is 4; argument 1 of kernel \"params_composite\" is 8 bytes");
    size_t wrong0[] = {8, sizeof f, sizeof out};
    OLC_ERR_HAS((olLaunchKernel)(on, olc_dev, k, &l, NULL, 3, ptrs, wrong0), OL_ERRC_INVALID_ARGUMENT,
                "ArgSizes[0] is 8");
  }
  OLC_OK(olSyncQueue(q));
  int32_t h[64];
  if (olc_read(h, out, sizeof h))
    OLC_EQ_ARRAY(h, 64, -1); /* nothing ran */
out:
  if (out)
    OLC_OK(olMemFree(out));
  if (q)
    OLC_OK(olDestroyQueue(q));
}

/* A host image of ABI 3 does not record its kernel's parameters: its
 * argument struct as one argument works, several arguments are refused
 * naming the kernel (no layout is guessed). */
static void test_old_abi_image(void) {
  OLC_ONLY(OLC_HOST, "a host image of an older <offload/kernel.h> (fixture)");
  ol_symbol_handle_t k = kern("fx_oldabi", "oldabi");
  int32_t *out = olc_alloc(OL_ALLOC_TYPE_DEVICE, 64 * sizeof(int32_t));
  ol_queue_handle_t q = olc_queue();
  if (!k || !out || !q)
    goto out;
  ol_kernel_launch_size_args_t l = olc_size1(2, 32);
  struct {
    int32_t n;
    struct params_pair f;
    int32_t *out;
  } block = {1, {2, 3}, out};
  void *bptrs[] = {&block};
  size_t bsizes[] = {sizeof block};
  int32_t h[64];
  for (int withq = 0; withq < 3; withq++) {
    olc_memset(out, 0, sizeof h);
    OLC_OK((olLaunchKernel)(withq ? q : NULL, olc_dev, k, &l, NULL, 1, bptrs, bsizes));
    OLC_OK(olSyncQueue(q));
    if (olc_read(h, out, sizeof h))
      OLC_EQ_ARRAY(h, 64, 6 + (int32_t)i);
  }
  olc_memset(out, 0xff, sizeof h);
  void *ptrs[] = {&block.n, &block.f, &block.out};
  size_t sizes[] = {sizeof block.n, sizeof block.f, sizeof block.out};
  for (int withq = 0; withq < 2; withq++) {
    OLC_ERR_HAS((olLaunchKernel)(withq ? q : NULL, olc_dev, k, &l, NULL, 3, ptrs, sizes), OL_ERRC_INVALID_ARGUMENT,
                "kernel \"oldabi\"");
    OLC_ERR_HAS((olLaunchKernel)(withq ? q : NULL, olc_dev, k, &l, NULL, 2, ptrs, sizes), OL_ERRC_INVALID_ARGUMENT,
                "NumArgs 2");
  }
  OLC_OK(olSyncQueue(q));
  if (olc_read(h, out, sizeof h))
    OLC_EQ_ARRAY(h, 64, -1); /* nothing ran */
out:
  if (out)
    OLC_OK(olMemFree(out));
  if (q)
    OLC_OK(olDestroyQueue(q));
}

/* Property lists: NULL, only the end, IS_COOPERATIVE false; an unknown
 * type and IS_COOPERATIVE without data are refused. */
static void test_properties(void) {
  ol_symbol_handle_t k = kern("foo", "foo");
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_DEVICE, 64 * sizeof(uint32_t));
  if (!k || !out)
    goto out;
  struct foo_args a = {out};
  void *ptrs[] = {&a};
  size_t sizes[] = {sizeof a};
  ol_kernel_launch_size_args_t l = olc_size1(2, 32);
  uint32_t h[64];
  const ol_kernel_launch_prop_t end_only[] = {OL_KERNEL_LAUNCH_PROP_END};
  bool no = false;
  const ol_kernel_launch_prop_t not_coop[] = {{OL_KERNEL_LAUNCH_PROP_TYPE_IS_COOPERATIVE, &no},
                                              OL_KERNEL_LAUNCH_PROP_END};
  const ol_kernel_launch_prop_t *lists[] = {NULL, end_only, not_coop};
  for (int i = 0; i < 3; i++) {
    olc_memset(out, 0, sizeof h);
    OLC_OK((olLaunchKernel)(NULL, olc_dev, k, &l, lists[i], 1, ptrs, sizes));
    if (olc_read(h, out, sizeof h))
      OLC_EQ_ARRAY(h, 64, i);
  }
  const ol_kernel_launch_prop_t unknown[] = {{(ol_kernel_launch_prop_type_t)OL_KERNEL_LAUNCH_PROP_TYPE_LAST, &no},
                                             OL_KERNEL_LAUNCH_PROP_END};
  OLC_ERR_HAS((olLaunchKernel)(NULL, olc_dev, k, &l, unknown, 1, ptrs, sizes), OL_ERRC_INVALID_ENUMERATION,
              "Properties[0]");
  const ol_kernel_launch_prop_t later[] = {{OL_KERNEL_LAUNCH_PROP_TYPE_IS_COOPERATIVE, &no},
                                           {(ol_kernel_launch_prop_type_t)OLC_BIG, NULL},
                                           OL_KERNEL_LAUNCH_PROP_END};
  OLC_ERR_HAS((olLaunchKernel)(NULL, olc_dev, k, &l, later, 1, ptrs, sizes), OL_ERRC_INVALID_ENUMERATION,
              "Properties[1]");
  const ol_kernel_launch_prop_t no_data[] = {{OL_KERNEL_LAUNCH_PROP_TYPE_IS_COOPERATIVE, NULL},
                                             OL_KERNEL_LAUNCH_PROP_END};
  OLC_ERR_CODE((olLaunchKernel)(NULL, olc_dev, k, &l, no_data, 1, ptrs, sizes), OL_ERRC_INVALID_NULL_POINTER);
  ol_queue_handle_t q = olc_queue();
  OLC_ERR_CODE((olLaunchKernel)(q, olc_dev, k, &l, unknown, 1, ptrs, sizes), OL_ERRC_INVALID_ENUMERATION);
  OLC_OK(olSyncQueue(q));
  OLC_OK(olDestroyQueue(q));
out:
  if (out)
    OLC_OK(olMemFree(out));
}

/* OL_DEVICE_INFO_COOPERATIVE_LAUNCH_SUPPORT: a bool, true on every device
 * of the suite (the host device and both GPU backends run them). */
static void test_cooperative_info(void) {
  size_t n = 0;
  OLC_OK(olGetDeviceInfoSize(olc_dev, OL_DEVICE_INFO_COOPERATIVE_LAUNCH_SUPPORT, &n));
  OLC_EQ(n, sizeof(bool));
  bool coop = false;
  OLC_OK(olGetDeviceInfo(olc_dev, OL_DEVICE_INFO_COOPERATIVE_LAUNCH_SUPPORT, sizeof coop, &coop));
  OLC_TRUE(coop);
}

/* olGetKernelMaxCooperativeGroupCount: at least one group; its checks. */
static void test_max_cooperative_groups(void) {
  ol_symbol_handle_t k = kern("foo", "foo");
  if (!k)
    return;
  ol_kernel_launch_size_args_t l = olc_size1(1, 32);
  uint32_t max = 0;
  OLC_OK(olGetKernelMaxCooperativeGroupCount(olc_dev, k, &l, &max));
  OLC_TRUE(max >= 1);
  /* NumGroups is ignored */
  uint32_t again = 0;
  l.NumGroups.x = 1u << 30;
  OLC_OK(olGetKernelMaxCooperativeGroupCount(olc_dev, k, &l, &again));
  OLC_EQ(again, max);
  /* larger groups: no more groups at once */
  ol_kernel_launch_size_args_t big = olc_size1(1, 256);
  uint32_t fewer = 0;
  OLC_OK(olGetKernelMaxCooperativeGroupCount(olc_dev, k, &big, &fewer));
  OLC_TRUE(fewer >= 1 && fewer <= max);
  OLC_ERR_CODE(olGetKernelMaxCooperativeGroupCount(NULL, k, &l, &max), OL_ERRC_INVALID_NULL_HANDLE);
  OLC_ERR_CODE(olGetKernelMaxCooperativeGroupCount(olc_dev, NULL, &l, &max), OL_ERRC_INVALID_NULL_HANDLE);
  OLC_ERR_CODE(olGetKernelMaxCooperativeGroupCount(olc_dev, k, NULL, &max), OL_ERRC_INVALID_NULL_POINTER);
  OLC_ERR_CODE(olGetKernelMaxCooperativeGroupCount(olc_dev, k, &l, NULL), OL_ERRC_INVALID_NULL_POINTER);
  ol_symbol_handle_t g = sym("global", "global", OL_SYMBOL_KIND_GLOBAL_VARIABLE);
  if (g)
    OLC_ERR_CODE(olGetKernelMaxCooperativeGroupCount(olc_dev, g, &l, &max), OL_ERRC_SYMBOL_KIND);
}

struct coop_args {
  uint32_t *slots;
  uint32_t *out;
  uint32_t rounds;
};

/* Whether the coop image (tests/c/kernels/coop.c) was built for the device. */
static bool have_coop_image(void) {
  char path[4096];
  return olc_image_path("coop", path, sizeof path) && access(path, R_OK) == 0;
}

/* A cooperative launch whose work-items meet at ol_grid_barrier() in
 * several rounds (coop.c says what out[i] holds only if every group's
 * writes came before the reads), for the phased and the group kernel, on a
 * queue and without one. */
static void test_cooperative_grid_barrier(void) {
  if (!OLC_PREREQ(have_coop_image(), "kernel image coop (tests/c/kernels/coop.c, with ol_grid_barrier)"))
    return;
  const char *names[] = {"coop_phased", "coop_group"};
  for (int kk = 0; kk < 2; kk++) {
    ol_symbol_handle_t k = kern("coop", names[kk]);
    if (!k)
      continue;
    const uint32_t g = 8, rounds = 3;
    ol_kernel_launch_size_args_t l = olc_size1(1, g);
    uint32_t max = 0;
    if (!OLC_OK(olGetKernelMaxCooperativeGroupCount(olc_dev, k, &l, &max)) || !OLC_TRUE(max >= 1))
      continue;
    uint32_t groups = max < 8 ? max : 8, n = groups * g;
    l.NumGroups.x = groups;
    uint32_t *slots = olc_alloc(OL_ALLOC_TYPE_DEVICE, n * sizeof(uint32_t));
    uint32_t *out = olc_alloc(OL_ALLOC_TYPE_DEVICE, n * sizeof(uint32_t));
    if (slots && out) {
      bool yes = true;
      const ol_kernel_launch_prop_t props[] = {{OL_KERNEL_LAUNCH_PROP_TYPE_IS_COOPERATIVE, &yes},
                                               OL_KERNEL_LAUNCH_PROP_END};
      struct coop_args a = {slots, out, rounds};
      void *ptrs[] = {&a};
      size_t sizes[] = {sizeof a};
      ol_queue_handle_t q = olc_queue();
      for (int withq = 0; withq < 2; withq++) {
        olc_memset(out, 0, n * sizeof(uint32_t));
        OLC_OK((olLaunchKernel)(withq ? q : NULL, olc_dev, k, &l, props, 1, ptrs, sizes));
        if (withq)
          OLC_OK(olSyncQueue(q));
        uint32_t *h = olc_fetch(out, n * sizeof(uint32_t));
        if (h) {
          OLC_EQ_ARRAY(h, n, rounds * ((i + g) % n + 1) + n * rounds * (rounds - 1) / 2);
          free(h);
        }
      }
      /* a grid larger than the device holds at once is refused */
      ol_kernel_launch_size_args_t too_big = l;
      too_big.NumGroups.x = max + 1;
      OLC_ERR_CODE((olLaunchKernel)(q, olc_dev, k, &too_big, props, 1, ptrs, sizes), OL_ERRC_INVALID_ARGUMENT);
      OLC_ERR_CODE((olLaunchKernel)(NULL, olc_dev, k, &too_big, props, 1, ptrs, sizes), OL_ERRC_INVALID_ARGUMENT);
      OLC_OK(olSyncQueue(q));
      OLC_OK(olDestroyQueue(q));
    }
    if (slots)
      OLC_OK(olMemFree(slots));
    if (out)
      OLC_OK(olMemFree(out));
  }
}

/* A cooperative launch of a plain kernel that fits: it runs as usual. */
static void test_cooperative_plain_kernel(void) {
  ol_symbol_handle_t k = kern("foo", "foo");
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_DEVICE, 64 * sizeof(uint32_t));
  if (!k || !out)
    goto out;
  ol_kernel_launch_size_args_t l = olc_size1(1, 16);
  uint32_t max = 0;
  if (OLC_OK(olGetKernelMaxCooperativeGroupCount(olc_dev, k, &l, &max)) && OLC_TRUE(max >= 1)) {
    l.NumGroups.x = max < 4 ? max : 4;
    struct foo_args a = {out};
    void *ptrs[] = {&a};
    size_t sizes[] = {sizeof a};
    bool yes = true;
    const ol_kernel_launch_prop_t props[] = {{OL_KERNEL_LAUNCH_PROP_TYPE_IS_COOPERATIVE, &yes},
                                             OL_KERNEL_LAUNCH_PROP_END};
    olc_memset(out, 0xff, 64 * sizeof(uint32_t));
    OLC_OK((olLaunchKernel)(NULL, olc_dev, k, &l, props, 1, ptrs, sizes));
    uint32_t h[64];
    if (olc_read(h, out, sizeof h))
      OLC_EQ_ARRAY(h, l.NumGroups.x * 16, i);
  }
out:
  if (out)
    OLC_OK(olMemFree(out));
}

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    OLC_RUN(test_struct_as_one_argument);
    OLC_RUN(test_multiargs_one_struct);
    OLC_RUN(test_members_as_arguments);
    OLC_RUN(test_wrong_count_and_size);
    OLC_RUN(test_params_every_alignment);
    OLC_RUN(test_params_mixed_sizes);
    OLC_RUN(test_params_composite_group_phased);
    OLC_RUN(test_params_refused);
    OLC_RUN(test_old_abi_image);
    OLC_RUN(test_argument_validation);
    OLC_RUN(test_properties);
    OLC_RUN(test_cooperative_info);
    OLC_RUN(test_max_cooperative_groups);
    OLC_RUN(test_cooperative_grid_barrier);
    OLC_RUN(test_cooperative_plain_kernel);
    free_programs();
  }
  return olc_finish("launch23");
}
