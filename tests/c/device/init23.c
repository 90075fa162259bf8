/* LLVM 23.1's olInit(const ol_init_args_t *InitArgs): NULL starts every
 * platform, a list starts those platforms (the host platform always), and
 * the arguments are checked at the first olInit only (a later one adds a
 * reference). Built with RELEASE=23.1 only (TESTS23 in the Makefile).
 *
 * Each test releases the fixture's reference (olShutDown: the library is
 * then down), makes its own olInit calls, and restores the fixture's state
 * with olc_restart (olInit(NULL) and the handles found again).
 * SPDX-License-Identifier: Apache-2.0 */
#include "oldevices.h"

#if OLC_RELEASE < 23
#error "init23.c tests the 23.1 olInit: build it with RELEASE=23.1"
#endif

/* The library back as the fixture left it: initialised once, every
 * platform, olc_dev and olc_host found again. */
static void olc_restart(void) {
  OLC_OK(olInit());
  OLC_TRUE(olc_refind());
}

/* Counts the devices of a full list by backend. */
typedef struct counts {
  int total, host, cuda, amdgpu, other;
} counts;

static counts count_devices(void) {
  counts c = {0, 0, 0, 0, 0};
  olc_devlist l;
  if (!OLC_OK(olc_list_devices(&l)))
    return c;
  for (int i = 0; i < l.n; i++) {
    c.total++;
    switch (l.sel[i].backend) {
    case OL_PLATFORM_BACKEND_HOST:
      c.host++;
      break;
    case OL_PLATFORM_BACKEND_CUDA:
      c.cuda++;
      break;
    case OL_PLATFORM_BACKEND_AMDGPU:
      c.amdgpu++;
      break;
    default:
      c.other++;
    }
  }
  return c;
}

/* Whether the device the fixture tests (olc_backend:olc_index) is in the
 * list now. */
static bool dut_listed(void) {
  olc_devlist l;
  if (olc_list_devices(&l) != NULL)
    return false;
  for (int i = 0; i < l.n; i++)
    if (l.sel[i].backend == olc_backend && l.sel[i].index == olc_index)
      return true;
  return false;
}

/* NULL: every platform, the same devices as the fixture's olInit() found. */
static void test_init_null_all_platforms(void) {
  counts before = count_devices();
  OLC_OK(olShutDown());
  OLC_OK((olInit)(NULL));
  counts after = count_devices();
  OLC_EQ(after.total, before.total);
  OLC_EQ(after.host, 1);
  OLC_EQ(after.cuda, before.cuda);
  OLC_EQ(after.amdgpu, before.amdgpu);
  OLC_TRUE(dut_listed());
  OLC_OK(olShutDown());
  olc_restart();
}

/* OL_INIT_ARGS_INIT (NumPlatforms 0): every platform too. */
static void test_init_default_args(void) {
  counts before = count_devices();
  OLC_OK(olShutDown());
  ol_init_args_t a = OL_INIT_ARGS_INIT;
  OLC_EQ(a.Size, sizeof(ol_init_args_t));
  OLC_EQ(a.NumPlatforms, 0);
  OLC_OK((olInit)(&a));
  counts after = count_devices();
  OLC_EQ(after.total, before.total);
  OLC_TRUE(dut_listed());
  OLC_OK(olShutDown());
  /* NumPlatforms 0 ignores a list, and a larger Size (a later struct) is fine */
  struct {
    ol_init_args_t a;
    uint64_t more;
  } big;
  memset(&big, 0, sizeof big);
  ol_platform_backend_t host = OL_PLATFORM_BACKEND_HOST;
  big.a.Size = sizeof big;
  big.a.NumPlatforms = 0;
  big.a.Platforms = &host;
  OLC_OK((olInit)(&big.a));
  OLC_EQ(count_devices().total, before.total);
  OLC_OK(olShutDown());
  olc_restart();
}

/* Only the host platform: only the host device. */
static void test_init_host_only(void) {
  OLC_OK(olShutDown());
  ol_platform_backend_t list[] = {OL_PLATFORM_BACKEND_HOST};
  ol_init_args_t a = {sizeof a, 1, list};
  OLC_OK((olInit)(&a));
  counts c = count_devices();
  OLC_EQ(c.total, 1);
  OLC_EQ(c.host, 1);
  OLC_EQ(c.cuda + c.amdgpu + c.other, 0);
  OLC_TRUE(olc_host_device() != NULL);
  OLC_OK(olShutDown());
  /* a backend without a plugin starts nothing: the host platform alone */
  ol_platform_backend_t l0[] = {OL_PLATFORM_BACKEND_LEVEL_ZERO};
  ol_init_args_t b = {sizeof b, 1, l0};
  OLC_OK((olInit)(&b));
  c = count_devices();
  OLC_EQ(c.total, 1);
  OLC_EQ(c.host, 1);
  OLC_OK(olShutDown());
  olc_restart();
}

/* The device's own platform: its devices (and the host's), no others. */
static void test_init_own_platform(void) {
  counts before = count_devices();
  OLC_OK(olShutDown());
  ol_platform_backend_t list[] = {olc_backend};
  ol_init_args_t a = {sizeof a, 1, list};
  OLC_OK((olInit)(&a));
  counts c = count_devices();
  OLC_TRUE(dut_listed());
  OLC_EQ(c.host, 1);
  switch (olc_backend) {
  case OL_PLATFORM_BACKEND_CUDA:
    OLC_EQ(c.cuda, before.cuda);
    OLC_EQ(c.amdgpu, 0);
    break;
  case OL_PLATFORM_BACKEND_AMDGPU:
    OLC_EQ(c.amdgpu, before.amdgpu);
    OLC_EQ(c.cuda, 0);
    break;
  default:
    OLC_EQ(c.cuda + c.amdgpu, 0);
  }
  /* the device works: a copy through it */
  if (OLC_TRUE(olc_refind())) {
    uint32_t *p = olc_alloc(OL_ALLOC_TYPE_DEVICE, sizeof(uint32_t));
    if (p) {
      OLC_TRUE(olc_write32(p, 0x23010000u));
      OLC_EQ(olc_read32(p), 0x23010000u);
      OLC_OK(olMemFree(p));
    }
  }
  OLC_OK(olShutDown());
  /* listed twice, with the host platform named too: the same */
  ol_platform_backend_t twice[] = {olc_backend, OL_PLATFORM_BACKEND_HOST, olc_backend};
  ol_init_args_t b = {sizeof b, 3, twice};
  OLC_OK((olInit)(&b));
  OLC_EQ(count_devices().total, c.total);
  OLC_TRUE(dut_listed());
  OLC_OK(olShutDown());
  olc_restart();
}

/* The CUDA platform alone on a run with CUDA devices: they and the host's. */
static void test_init_cuda_selected(void) {
  counts before = count_devices();
  if (!OLC_NEEDS(before.cuda > 0, "a CUDA device (check-fake-cuda, check-fake-mixed)"))
    return;
  OLC_OK(olShutDown());
  ol_platform_backend_t list[] = {OL_PLATFORM_BACKEND_CUDA};
  ol_init_args_t a = {sizeof a, 1, list};
  OLC_OK((olInit)(&a));
  counts c = count_devices();
  OLC_EQ(c.cuda, before.cuda);
  OLC_EQ(c.host, 1);
  OLC_EQ(c.amdgpu, 0);
  OLC_EQ(c.total, before.cuda + 1);
  OLC_OK(olShutDown());
  olc_restart();
}

/* Refused arguments: the library stays down (olShutDown then says so). */
static void test_init_errors(void) {
  OLC_OK(olShutDown());
  ol_platform_backend_t host = OL_PLATFORM_BACKEND_HOST;
  ol_init_args_t a = {sizeof a - 1, 1, &host};
  OLC_ERR_HAS((olInit)(&a), OL_ERRC_INVALID_SIZE, "Size");
  OLC_ERR_HAS((olInit)(&a), OL_ERRC_INVALID_SIZE, "Platforms does not fit"); /* the field left out */
  a.Size = 0;
  OLC_ERR_CODE((olInit)(&a), OL_ERRC_INVALID_SIZE);
  OLC_ERR_CODE(olIterateDevices(olc_list_fn, &(olc_devlist){0}), OL_ERRC_UNINITIALIZED);
  ol_init_args_t n = {sizeof n, 2, NULL};
  OLC_ERR_HAS((olInit)(&n), OL_ERRC_INVALID_NULL_POINTER, "Platforms");
  ol_platform_backend_t bad[] = {OL_PLATFORM_BACKEND_HOST, (ol_platform_backend_t)OLC_BIG};
  ol_init_args_t e = {sizeof e, 2, bad};
  OLC_ERR_HAS((olInit)(&e), OL_ERRC_INVALID_ENUMERATION, "Platforms[1]");
  bad[1] = OL_PLATFORM_BACKEND_LAST;
  OLC_ERR_CODE((olInit)(&e), OL_ERRC_INVALID_ENUMERATION);
  /* a huge count at an address whose entries would run past the end of
   * the address space: refused before any entry is read */
  ol_init_args_t huge = {sizeof huge, UINT32_MAX, (const ol_platform_backend_t *)(UINTPTR_MAX - 4095)};
  OLC_ERR_HAS((olInit)(&huge), OL_ERRC_INVALID_SIZE, "NumPlatforms");
  OLC_ERR_CODE(olShutDown(), OL_ERRC_UNINITIALIZED);
  olc_restart();
}

/* A later olInit only adds a reference: its arguments are neither checked
 * nor used (every platform stays), and each needs its olShutDown. */
static void test_init_second_only_counts(void) {
  counts before = count_devices();
  ol_init_args_t bad = {0, 5, NULL};
  OLC_OK((olInit)(&bad));
  /* not even read (without OFFLOAD_TRACE, which prints it): a struct at an
   * unmapped address */
  OLC_OK((olInit)((const ol_init_args_t *)(UINTPTR_MAX - 4095)));
  ol_platform_backend_t host = OL_PLATFORM_BACKEND_HOST;
  ol_init_args_t only_host = {sizeof only_host, 1, &host};
  OLC_OK((olInit)(&only_host));
  OLC_EQ(count_devices().total, before.total);
  OLC_TRUE(dut_listed());
  OLC_OK(olShutDown());
  OLC_OK(olShutDown());
  OLC_OK(olShutDown());
  /* the fixture's reference is still there */
  OLC_EQ(count_devices().total, before.total);
  OLC_TRUE(olc_refind());
}

/* The code-location twin takes InitArgs as well. */
static void test_init_with_code_loc(void) {
  OLC_OK(olShutDown());
  ol_code_location_t loc = {"test_init_with_code_loc", "init23.c", 1, 1};
  ol_platform_backend_t host = OL_PLATFORM_BACKEND_HOST;
  ol_init_args_t a = {sizeof a, 1, &host};
  OLC_OK((olInitWithCodeLoc)(&a, &loc));
  OLC_EQ(count_devices().total, 1);
  OLC_OK(olShutDown());
  ol_init_args_t z = {0, 0, NULL};
  OLC_ERR_CODE((olInitWithCodeLoc)(&z, &loc), OL_ERRC_INVALID_SIZE);
  OLC_OK((olInitWithCodeLoc)(NULL, &loc));
  OLC_TRUE(dut_listed());
  OLC_OK(olShutDown());
  olc_restart();
}

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    OLC_RUN(test_init_null_all_platforms);
    OLC_RUN(test_init_default_args);
    OLC_RUN(test_init_host_only);
    OLC_RUN(test_init_own_platform);
    OLC_RUN(test_init_cuda_selected);
    OLC_RUN(test_init_errors);
    OLC_RUN(test_init_second_only_counts);
    OLC_RUN(test_init_with_code_loc);
  }
  return olc_finish("init23");
}
