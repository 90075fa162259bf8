/* olCalculateOptimalOccupancy on the device under test.
 * SPDX-License-Identifier: Apache-2.0 */
#include "hcheck.h"

static ol_program_handle_t foo_prog, red_prog, global_prog;

static void test_positive(void) {
  ol_symbol_handle_t foo = hc_kernel(foo_prog, "foo");
  ol_symbol_handle_t red = hc_kernel(red_prog, "localmem_reduction");
  if (!foo || !red)
    return;
  /* 1 MiB of group memory only where the device has it (the host device) */
  size_t shared[] = {0, 1024, 1u << 20};
  int nshared = OLC_ON(OLC_HOST, "1 MiB of dynamic group memory") ? 3 : 2;
  for (int i = 0; i < nshared; i++) {
    size_t gs = 0;
    OK(olCalculateOptimalOccupancy(hc_dev, foo, shared[i], &gs));
    TRUE(gs > 0 && gs <= 1024);
    gs = 0;
    OK(olCalculateOptimalOccupancy(hc_dev, red, shared[i], &gs));
    TRUE(gs > 0 && gs <= 1024);
  }
}

/* The suggested size is a launchable group size. */
static void test_suggestion_launches(void) {
  ol_symbol_handle_t foo = hc_kernel(foo_prog, "foo");
  ol_symbol_handle_t red = hc_kernel(red_prog, "localmem_reduction");
  size_t gs = 0;
  if (!foo || !red || !OK(olCalculateOptimalOccupancy(hc_dev, foo, 0, &gs)) || gs == 0)
    return;
  uint32_t *out = hc_alloc(OL_ALLOC_TYPE_MANAGED, 4 * gs * sizeof(uint32_t));
  if (!out)
    return;
  ol_kernel_launch_size_args_t l = hc_size1(4, (uint32_t)gs);
  OK(olLaunchKernel(NULL, hc_dev, foo, &out, sizeof out, &l));
  EQ_ARRAY(out, 4 * gs, i);
  OK(olMemFree(out));
  /* the reduction with its suggestion (a power of two is required by the
   * kernel: only checked when it is one) */
  size_t rs = 0;
  OK(olCalculateOptimalOccupancy(hc_dev, red, 0, &rs));
  if (rs && (rs & (rs - 1)) == 0) {
    uint32_t *in = hc_alloc(OL_ALLOC_TYPE_MANAGED, rs * sizeof(uint32_t));
    uint32_t sum = 0, got = 0;
    uint32_t *res = hc_buf(&got, sizeof got);
    for (size_t i = 0; in && i < rs; i++)
      in[i] = (uint32_t)i + 1, sum += (uint32_t)i + 1;
    struct {
      uint32_t *in, *out;
    } a = {in, res};
    l = hc_size1(1, (uint32_t)rs);
    l.DynSharedMemory = rs * sizeof(uint32_t);
    if (in && res) {
      OK(olLaunchKernel(NULL, hc_dev, red, &a, sizeof a, &l));
      hc_unbuf(&got, res, sizeof got);
      EQ(got, sum);
    } else {
      hc_unbuf(&got, res, sizeof got);
    }
    if (in)
      OK(olMemFree(in));
  }
}

static void test_errors(void) {
  ol_symbol_handle_t foo = hc_kernel(foo_prog, "foo");
  ol_symbol_handle_t g = hc_global(global_prog, "global", NULL, NULL);
  if (!foo || !g)
    return;
  size_t gs = 77;
  ERR(olCalculateOptimalOccupancy(hc_dev, g, 0, &gs), OL_ERRC_SYMBOL_KIND, NULL);
  if (OLC_ON(OLC_HOST, "its 1 MiB group memory limit"))
    ERR(olCalculateOptimalOccupancy(hc_dev, foo, (1u << 20) + 1, &gs), OL_ERRC_INVALID_SIZE,
        "1048577");
  EQ(gs, 77);
}

int main(int argc, char **argv) {
  hc_start(argc, argv);
  while (hc_next_device()) {
    foo_prog = hc_program("foo");
    red_prog = hc_program("localmem_reduction");
    global_prog = hc_program("global");
    RUN(test_positive);
    RUN(test_suggestion_launches);
    RUN(test_errors);
    hc_name = "cleanup";
    if (foo_prog)
      OK(olDestroyProgram(foo_prog));
    if (red_prog)
      OK(olDestroyProgram(red_prog));
    if (global_prog)
      OK(olDestroyProgram(global_prog));
  }
  return hc_finish("occupancy");
}
