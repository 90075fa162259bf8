/* LLVM 23.1's olLaunchKernel(Queue, Device, Kernel, LaunchSizeArgs,
 * Properties, NumArgs, ArgPtrs, ArgSizes): arguments one by one, a
 * property list (cooperative launches), olGetKernelMaxCooperativeGroupCount
 * and OL_DEVICE_INFO_COOPERATIVE_LAUNCH_SUPPORT. Built with RELEASE=23.1
 * only (TESTS23 in the Makefile). The 23.1 calls are written with the name
 * in parentheses, `(olLaunchKernel)(...)`: olrelease.h maps the unbracketed
 * 22.1 spelling.
 *
 * Every kernel of tests/c/kernels takes one struct (OL_KERNEL): a device
 * that knows a kernel's parameters (the GPU backends: cuFuncGetParamInfo,
 * the code object's metadata) expects exactly one argument of the struct's
 * size and refuses other counts and sizes with INVALID_ARGUMENT; the host
 * device does not know them and packs the arguments like the members of a
 * C struct, so the struct's members given one by one work there.
 * SPDX-License-Identifier: Apache-2.0 */
#include "oldevices.h"

#if OLC_RELEASE < 23
#error "launch23.c tests the 23.1 olLaunchKernel: build it with RELEASE=23.1"
#endif

static ol_program_handle_t progs[8];
static int nprogs;

/* A kernel (or global) of image `image`, the program kept until the end of
 * the device's tests (free_programs). */
static ol_symbol_handle_t sym(const char *image, const char *name, ol_symbol_kind_t kind) {
  ol_program_handle_t p = olc_program(image);
  if (!p)
    return NULL;
  if (nprogs < 8)
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

/* The struct's eight members as eight arguments: the host device packs them
 * like the struct's members (the same bytes); a device that knows the
 * kernel's parameters (one struct) refuses the count. */
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
  if (olc_on_host) {
    OLC_OK((olLaunchKernel)(NULL, olc_dev, k, &l, NULL, 8, ptrs, sizes));
    uint32_t out[200];
    int32_t out2[200];
    if (olc_read(out, dout, sizeof out) && olc_read(out2, dout2, sizeof out2)) {
      OLC_EQ_ARRAY(out, 150, 159u + 3u * i);
      OLC_EQ_ARRAY(out2, 150, (int32_t)(-50 * (int32_t)(i + 1)));
      OLC_EQ(out[150], 0xffffffffu);
    }
    /* too few members: shorter than the kernel's struct (its descriptor) */
    OLC_ERR_CODE((olLaunchKernel)(NULL, olc_dev, k, &l, NULL, 3, ptrs, sizes), OL_ERRC_INVALID_ARGUMENT);
  } else if (OLC_ON(OLC_GPU, "a device that knows the kernel's parameters")) {
    OLC_ERR_HAS((olLaunchKernel)(NULL, olc_dev, k, &l, NULL, 8, ptrs, sizes), OL_ERRC_INVALID_ARGUMENT,
                "NumArgs is 8");
    uint32_t h = 0;
    OLC_TRUE(olc_read(&h, dout, sizeof h) && h == 0xffffffffu); /* nothing ran */
  }
out:
  if (dout)
    OLC_OK(olMemFree(dout));
  if (dout2)
    OLC_OK(olMemFree(dout2));
}

/* A wrong count or size where the device knows the parameters. */
static void test_wrong_count_and_size(void) {
  OLC_ONLY(OLC_GPU, "the GPU backends know a kernel's parameters; the host device packs a C struct");
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
