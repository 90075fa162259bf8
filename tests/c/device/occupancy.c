/* olCalculateOptimalOccupancy on the device under test.
 * SPDX-License-Identifier: Apache-2.0 */
#include "oldevices.h"

static ol_program_handle_t foo_prog, red_prog, global_prog;

static void test_positive(void) {
  ol_symbol_handle_t foo = olc_kernel(foo_prog, "foo");
  ol_symbol_handle_t red = olc_kernel(red_prog, "localmem_reduction");
  if (!foo || !red)
    return;
  /* 1 MiB of group memory only where the device has it (the host device) */
  size_t shared[] = {0, 1024, 1u << 20};
  int nshared = OLC_ON(OLC_HOST, "1 MiB of dynamic group memory") ? 3 : 2;
  for (int i = 0; i < nshared; i++) {
    size_t gs = 0;
    OLC_OK(olCalculateOptimalOccupancy(olc_dev, foo, shared[i], &gs));
    OLC_TRUE(gs > 0 && gs <= 1024);
    gs = 0;
    OLC_OK(olCalculateOptimalOccupancy(olc_dev, red, shared[i], &gs));
    OLC_TRUE(gs > 0 && gs <= 1024);
  }
}

/* The suggested size is a launchable group size. */
static void test_suggestion_launches(void) {
  OLC_HOST_VISIBLE();
  ol_symbol_handle_t foo = olc_kernel(foo_prog, "foo");
  ol_symbol_handle_t red = olc_kernel(red_prog, "localmem_reduction");
  size_t gs = 0;
  if (!foo || !red || !OLC_OK(olCalculateOptimalOccupancy(olc_dev, foo, 0, &gs)) || gs == 0)
    return;
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_MANAGED, 4 * gs * sizeof(uint32_t));
  if (!out)
    return;
  ol_kernel_launch_size_args_t l = olc_size1(4, (uint32_t)gs);
  OLC_OK(olLaunchKernel(NULL, olc_dev, foo, &out, sizeof out, &l));
  OLC_EQ_ARRAY(out, 4 * gs, i);
  OLC_OK(olMemFree(out));
  /* the reduction with its suggestion (a power of two is required by the
   * kernel: only checked when it is one) */
  size_t rs = 0;
  OLC_OK(olCalculateOptimalOccupancy(olc_dev, red, 0, &rs));
  if (rs && (rs & (rs - 1)) == 0) {
    uint32_t *in = olc_alloc(OL_ALLOC_TYPE_MANAGED, rs * sizeof(uint32_t));
    uint32_t sum = 0, got = 0;
    uint32_t *res = olc_buf(&got, sizeof got);
    for (size_t i = 0; in && i < rs; i++)
      in[i] = (uint32_t)i + 1, sum += (uint32_t)i + 1;
    struct {
      uint32_t *in, *out;
    } a = {in, res};
    l = olc_size1(1, (uint32_t)rs);
    l.DynSharedMemory = rs * sizeof(uint32_t);
    if (in && res) {
      OLC_OK(olLaunchKernel(NULL, olc_dev, red, &a, sizeof a, &l));
      olc_unbuf(&got, res, sizeof got);
      OLC_EQ(got, sum);
    } else {
      olc_unbuf(&got, res, sizeof got);
    }
    if (in)
      OLC_OK(olMemFree(in));
  }
}

static void test_errors(void) {
  ol_symbol_handle_t foo = olc_kernel(foo_prog, "foo");
  ol_symbol_handle_t g = olc_global(global_prog, "global", NULL, NULL);
  if (!foo || !g)
    return;
  size_t gs = 77;
  OLC_ERR_CODE(olCalculateOptimalOccupancy(olc_dev, g, 0, &gs), OL_ERRC_SYMBOL_KIND);
  if (OLC_ON(OLC_HOST, "its 1 MiB group memory limit"))
    OLC_ERR_HAS(olCalculateOptimalOccupancy(olc_dev, foo, (1u << 20) + 1, &gs), OL_ERRC_INVALID_SIZE,
                "1048577");
  OLC_EQ(gs, 77);
}

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    foo_prog = olc_program("foo");
    red_prog = olc_program("localmem_reduction");
    global_prog = olc_program("global");
    OLC_RUN(test_positive);
    OLC_RUN(test_suggestion_launches);
    OLC_RUN(test_errors);
    olc_test = "cleanup";
    if (foo_prog)
      OLC_OK(olDestroyProgram(foo_prog));
    if (red_prog)
      OLC_OK(olDestroyProgram(red_prog));
    if (global_prog)
      OLC_OK(olDestroyProgram(global_prog));
  }
  return olc_finish("occupancy");
}
