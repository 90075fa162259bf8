/* Memory entry points: validation-layer errors in LLVM's order and the
 * implementation paths that work without a GPU (unknown pointers,
 * host-to-host olMemcpy). */
#include "oldevices.h"

static ol_device_handle_t dev;
/* a non-NULL value that only reaches the validation layer */
#define FAKE_QUEUE ((ol_queue_handle_t)0x10)

static void test_mem_alloc_validation(void) {
  void *p = (void *)0x99;
  OLC_ERR(olMemAlloc(NULL, OL_ALLOC_TYPE_HOST, 0, NULL), OL_ERRC_INVALID_SIZE,
          OLC_VF("Size == 0"));
  OLC_ERR(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, 0, &p), OL_ERRC_INVALID_SIZE,
          OLC_VF("Size == 0"));
  OLC_ERR(olMemAlloc(NULL, OL_ALLOC_TYPE_HOST, 64, NULL),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Device"));
  OLC_ERR(olMemAlloc(NULL, OL_ALLOC_TYPE_MANAGED, 64, &p),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Device"));
  OLC_ERR(olMemAlloc(dev, OL_ALLOC_TYPE_HOST, 64, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == AllocationOut"));
  /* the allocation type is not validated by the layer */
  OLC_ERR(olMemAlloc(NULL, OL_ALLOC_TYPE_FORCE_UINT32, 64, &p),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Device"));
  OLC_ERR(olMemAlloc(dev, OL_ALLOC_TYPE_FORCE_UINT32, 64, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == AllocationOut"));
  OLC_PTR_EQ(p, (void *)0x99);
  ol_code_location_t loc = {"alloc", __FILE__, __LINE__, 1};
  OLC_ERR(olMemAllocWithCodeLoc(NULL, OL_ALLOC_TYPE_HOST, 0, NULL, &loc),
          OL_ERRC_INVALID_SIZE, OLC_VF("Size == 0"));
}

static void test_mem_free(void) {
  OLC_ERR(olMemFree(NULL), OL_ERRC_INVALID_NULL_POINTER,
          OLC_VF("NULL == Address"));
  int local = 0;
  static char global_buf[32];
  void *heap = malloc(64);
  OLC_ERR(olMemFree(&local), OL_ERRC_INVALID_ARGUMENT,
          "address is not a known allocation");
  OLC_ERR(olMemFree(global_buf), OL_ERRC_INVALID_ARGUMENT,
          "address is not a known allocation");
  OLC_ERR(olMemFree(heap), OL_ERRC_INVALID_ARGUMENT,
          "address is not a known allocation");
  OLC_ERR(olMemFree((void *)0x1234), OL_ERRC_INVALID_ARGUMENT,
          "address is not a known allocation");
  free(heap);
  ol_code_location_t loc = {"free", __FILE__, __LINE__, 1};
  OLC_ERR(olMemFreeWithCodeLoc(NULL, &loc), OL_ERRC_INVALID_NULL_POINTER,
          OLC_VF("NULL == Address"));
  OLC_ERR(olMemFreeWithCodeLoc(&local, &loc), OL_ERRC_INVALID_ARGUMENT,
          "address is not a known allocation");
}

static void test_mem_info(void) {
  unsigned char buf[16];
  size_t sz = 0;
  int local = 0;
  const char *nf = "allocated memory information not found";

  OLC_ERR(olGetMemInfo(NULL, OL_MEM_INFO_SIZE, 0, NULL), OL_ERRC_INVALID_SIZE,
          OLC_VF("PropSize == 0"));
  OLC_ERR(olGetMemInfo(&local, OL_MEM_INFO_SIZE, 0, buf),
          OL_ERRC_INVALID_SIZE, OLC_VF("PropSize == 0"));
  OLC_ERR(olGetMemInfo(NULL, OL_MEM_INFO_SIZE, 8, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Ptr"));
  OLC_ERR(olGetMemInfo(&local, OL_MEM_INFO_SIZE, 8, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == PropValue"));
  OLC_ERR(olGetMemInfoSize(NULL, OL_MEM_INFO_SIZE, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Ptr"));
  OLC_ERR(olGetMemInfoSize(&local, OL_MEM_INFO_SIZE, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == PropSizeRet"));

  /* unknown pointer: NOT_FOUND for every property (also invalid ones,
   * because the lookup comes first), nothing written */
  static const ol_mem_info_t all[] = {OL_MEM_INFO_DEVICE, OL_MEM_INFO_BASE,
                                      OL_MEM_INFO_SIZE, OL_MEM_INFO_TYPE,
                                      OL_MEM_INFO_FORCE_UINT32};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    memset(buf, 0x44, sizeof buf);
    OLC_ERR(olGetMemInfo(&local, all[i], sizeof buf, buf), OL_ERRC_NOT_FOUND,
            nf);
    OLC_TRUE(buf[0] == 0x44 && buf[7] == 0x44 && buf[15] == 0x44);
    sz = 31337;
    OLC_ERR(olGetMemInfoSize(&local, all[i], &sz), OL_ERRC_NOT_FOUND, nf);
    OLC_EQ(sz, 31337);
  }
  OLC_ERR(olGetMemInfo((void *)0x1234, OL_MEM_INFO_BASE, 8, buf),
          OL_ERRC_NOT_FOUND, nf);
  ol_code_location_t loc = {"info", __FILE__, __LINE__, 1};
  OLC_ERR(olGetMemInfoWithCodeLoc(&local, OL_MEM_INFO_TYPE, 4, buf, &loc),
          OL_ERRC_NOT_FOUND, nf);
  OLC_ERR(olGetMemInfoSizeWithCodeLoc(NULL, OL_MEM_INFO_TYPE, &sz, &loc),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Ptr"));
}

static void test_memcpy_validation(void) {
  char a[8] = "abcdefg", b[8] = {0};
  OLC_ERR(olMemcpy(NULL, NULL, NULL, NULL, NULL, 4),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == DstDevice"));
  OLC_ERR(olMemcpy(NULL, b, NULL, a, dev, 4), OL_ERRC_INVALID_NULL_HANDLE,
          OLC_VF("NULL == DstDevice"));
  OLC_ERR(olMemcpy(NULL, NULL, dev, NULL, NULL, 4),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == SrcDevice"));
  OLC_ERR(olMemcpy(NULL, b, dev, a, NULL, 4), OL_ERRC_INVALID_NULL_HANDLE,
          OLC_VF("NULL == SrcDevice"));
  OLC_ERR(olMemcpy(NULL, NULL, dev, NULL, dev, 4),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == DstPtr"));
  OLC_ERR(olMemcpy(NULL, NULL, dev, a, dev, 4), OL_ERRC_INVALID_NULL_POINTER,
          OLC_VF("NULL == DstPtr"));
  OLC_ERR(olMemcpy(NULL, b, dev, NULL, dev, 4), OL_ERRC_INVALID_NULL_POINTER,
          OLC_VF("NULL == SrcPtr"));
  /* the queue is optional and not validated; Size 0 is not validated */
  OLC_ERR(olMemcpy(FAKE_QUEUE, b, NULL, a, dev, 0),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == DstDevice"));
  OLC_ERR(olMemcpy(FAKE_QUEUE, b, dev, NULL, dev, 0),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == SrcPtr"));
  OLC_EQ(b[0], 0);
}

static void test_memcpy_host_to_host(void) {
  unsigned char src[256], dst[256 + 16];
  for (int i = 0; i < 256; i++)
    src[i] = (unsigned char)(i * 7 + 3);
  memset(dst, 0xEE, sizeof dst);
  OLC_OK(olMemcpy(NULL, dst, dev, src, dev, 256));
  OLC_TRUE(memcmp(dst, src, 256) == 0);
  bool tail_ok = true;
  for (int i = 256; i < 256 + 16; i++)
    tail_ok = tail_ok && dst[i] == 0xEE;
  OLC_TRUE(tail_ok);

  /* partial copy into the middle */
  memset(dst, 0, sizeof dst);
  OLC_OK(olMemcpy(NULL, dst + 5, dev, src + 10, dev, 3));
  OLC_TRUE(dst[4] == 0 && dst[5] == src[10] && dst[6] == src[11] &&
           dst[7] == src[12] && dst[8] == 0);

  /* Size 0 copies nothing and succeeds */
  memset(dst, 0x5A, sizeof dst);
  OLC_OK(olMemcpy(NULL, dst, dev, src, dev, 0));
  OLC_TRUE(dst[0] == 0x5A && dst[255] == 0x5A);

  /* heap memory works the same */
  unsigned char *h = malloc(4096), *g = malloc(4096);
  for (int i = 0; i < 4096; i++)
    h[i] = (unsigned char)(i ^ 0x55);
  memset(g, 0, 4096);
  OLC_OK(olMemcpy(NULL, g, dev, h, dev, 4096));
  OLC_TRUE(memcmp(g, h, 4096) == 0);
  free(h);
  free(g);

  ol_code_location_t loc = {"memcpy", __FILE__, __LINE__, 1};
  char x[4] = "xyz", y[4] = {0};
  OLC_OK(olMemcpyWithCodeLoc(NULL, y, dev, x, dev, 4, &loc));
  OLC_STREQ(y, "xyz");
}

static void test_memfill_validation(void) {
  char buf[64];
  uint32_t pat = 0xA1B2C3D4;
  memset(buf, 0, sizeof buf);
  OLC_ERR(olMemFill(NULL, NULL, 4, NULL, 6), OL_ERRC_INVALID_SIZE,
          OLC_VF("FillSize % PatternSize != 0"));
  OLC_ERR(olMemFill(FAKE_QUEUE, buf, 4, &pat, 6), OL_ERRC_INVALID_SIZE,
          OLC_VF("FillSize % PatternSize != 0"));
  OLC_ERR(olMemFill(FAKE_QUEUE, buf, 16, &pat, 17), OL_ERRC_INVALID_SIZE,
          OLC_VF("FillSize % PatternSize != 0"));
  OLC_ERR(olMemFill(NULL, NULL, 4, NULL, 8), OL_ERRC_INVALID_NULL_POINTER,
          OLC_VF("NULL == Ptr"));
  OLC_ERR(olMemFill(FAKE_QUEUE, NULL, 4, &pat, 8),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Ptr"));
  OLC_ERR(olMemFill(FAKE_QUEUE, buf, 4, NULL, 8),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == PatternPtr"));
  /* FillSize 0 is a multiple of any pattern size */
  OLC_ERR(olMemFill(FAKE_QUEUE, buf, 4, NULL, 0),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == PatternPtr"));
  OLC_EQ(buf[0], 0);
  ol_code_location_t loc = {"fill", __FILE__, __LINE__, 1};
  OLC_ERR(olMemFillWithCodeLoc(NULL, NULL, 2, NULL, 3, &loc),
          OL_ERRC_INVALID_SIZE, OLC_VF("FillSize % PatternSize != 0"));
}

static void test_mem_register_validation(void) {
  char buf[64];
  void *pinned = (void *)0x77;
  OLC_ERR(olMemRegister(NULL, NULL, 0, 0, NULL), OL_ERRC_INVALID_SIZE,
          OLC_VF("Size == 0"));
  OLC_ERR(olMemRegister(dev, buf, 0, 0, &pinned), OL_ERRC_INVALID_SIZE,
          OLC_VF("Size == 0"));
  OLC_ERR(olMemRegister(NULL, NULL, sizeof buf, 0, NULL),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Device"));
  OLC_ERR(olMemRegister(NULL, buf, sizeof buf, 0, &pinned),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Device"));
  OLC_ERR(olMemRegister(dev, NULL, sizeof buf, 0, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Ptr"));
  OLC_ERR(olMemRegister(dev, buf, sizeof buf, 0, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == PinnedPtr"));
  OLC_PTR_EQ(pinned, (void *)0x77);

  OLC_ERR(olMemUnregister(NULL, NULL), OL_ERRC_INVALID_NULL_HANDLE,
          OLC_VF("NULL == Device"));
  OLC_ERR(olMemUnregister(NULL, buf), OL_ERRC_INVALID_NULL_HANDLE,
          OLC_VF("NULL == Device"));
  OLC_ERR(olMemUnregister(dev, NULL), OL_ERRC_INVALID_NULL_POINTER,
          OLC_VF("NULL == Ptr"));
  ol_code_location_t loc = {"reg", __FILE__, __LINE__, 1};
  OLC_ERR(olMemRegisterWithCodeLoc(NULL, buf, 8, 0, &pinned, &loc),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Device"));
  OLC_ERR(olMemUnregisterWithCodeLoc(dev, NULL, &loc),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Ptr"));
}

/* ---------------- only our library (LLVM crashes) ----------------------- */

static void ours_memfill_pattern_size_zero(void) {
  char buf[16];
  unsigned char pat = 7;
  memset(buf, 0, sizeof buf);
  /* LLVM divides by PatternSize here and dies with SIGFPE */
  OLC_ERR(olMemFill(NULL, buf, 0, &pat, 16), OL_ERRC_INVALID_SIZE,
          OLC_VF("PatternSize == 0"));
  OLC_ERR(olMemFill(FAKE_QUEUE, buf, 0, &pat, 16), OL_ERRC_INVALID_SIZE,
          OLC_VF("PatternSize == 0"));
  OLC_ERR(olMemFill(NULL, NULL, 0, NULL, 0), OL_ERRC_INVALID_SIZE,
          OLC_VF("PatternSize == 0"));
  OLC_EQ(buf[0], 0);
}

static void ours_bad_handles(void) {
  char a[8] = "abcdefg", b[8] = {0};
  void *p = NULL;
  OLC_ERR(olMemcpy(NULL, b, (ol_device_handle_t)0x1234, a, dev, 4),
          OL_ERRC_INVALID_DEVICE,
          "DstDevice (0x1234) is not a valid device handle");
  OLC_ERR(olMemcpy(NULL, b, dev, a, (ol_device_handle_t)0x1234, 4),
          OL_ERRC_INVALID_DEVICE,
          "SrcDevice (0x1234) is not a valid device handle");
  OLC_EQ(b[0], 0);
  OLC_ERR(olMemAlloc((ol_device_handle_t)0x1234, OL_ALLOC_TYPE_HOST, 8, &p),
          OL_ERRC_INVALID_DEVICE,
          "Device (0x1234) is not a valid device handle");
  ol_platform_handle_t plat = olc_platform_of(dev);
  char want[128];
  snprintf(want, sizeof want,
           "DstDevice (0x%" PRIxPTR ") is a platform handle, not a device handle",
           (uintptr_t)plat);
  OLC_ERR(olMemcpy(NULL, b, (ol_device_handle_t)plat, a, dev, 4),
          OL_ERRC_INVALID_DEVICE, want);
  OLC_ERR(olMemFill((ol_queue_handle_t)0x1234, b, 1, a, 4),
          OL_ERRC_INVALID_QUEUE, "Queue (0x1234) is not a valid queue handle");
  OLC_EQ(b[0], 0);
}

int main(void) {
  OLC_OK(olInit());
  dev = olc_host_device();
  OLC_TRUE(dev != NULL);
  if (dev) {
    OLC_RUN(test_mem_alloc_validation);
    OLC_RUN(test_mem_free);
    OLC_RUN(test_mem_info);
    OLC_RUN(test_memcpy_validation);
    OLC_RUN(test_memcpy_host_to_host);
    OLC_RUN(test_memfill_validation);
    OLC_RUN(test_mem_register_validation);
    OLC_RUN_ON(ours_memfill_pattern_size_zero, OLC_OURS, "LLVM 22.1 crashes on a fill with PatternSize 0");
    OLC_RUN_ON(ours_bad_handles, OLC_OURS, "LLVM 22.1 dereferences invalid handles and crashes");
  }
  OLC_OK(olShutDown());
  return olc_summary("memory");
}
