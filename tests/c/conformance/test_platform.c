/* olGetPlatformInfo / olGetPlatformInfoSize on the host platform. */
#include "oldevices.h"

static ol_platform_handle_t plat;

struct pprop {
  ol_platform_info_t prop;
  const char *name;
  size_t size; /* 0: string */
};

static const struct pprop props[] = {
    {OL_PLATFORM_INFO_NAME, "NAME", 0},
    {OL_PLATFORM_INFO_VENDOR_NAME, "VENDOR_NAME", 0},
    {OL_PLATFORM_INFO_VERSION, "VERSION", 0},
    {OL_PLATFORM_INFO_BACKEND, "BACKEND", sizeof(ol_platform_backend_t)},
};
#define NPROPS (sizeof props / sizeof props[0])

static bool all_bytes(const unsigned char *p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != v)
      return false;
  return true;
}

static void test_sizes_and_values(void) {
  OLC_EQ(sizeof(ol_platform_backend_t), 4);
  for (size_t i = 0; i < NPROPS; i++) {
    const struct pprop *p = &props[i];
    size_t sz = 12345;
    OLC_OK(olGetPlatformInfoSize(plat, p->prop, &sz));
    if (p->size)
      OLC_EQ(sz, p->size);
    else
      OLC_TRUE(sz >= 2 && sz < 4096);
    if (sz == 0 || sz > 4096)
      continue;
    /* exact size: the bytes after the reported size stay untouched */
    unsigned char buf[4200];
    memset(buf, 0xA5, sizeof buf);
    OLC_OK(olGetPlatformInfo(plat, p->prop, sz, buf));
    OLC_TRUE(all_bytes(buf + sz, 64, 0xA5));
    /* a bigger buffer: only sz bytes are written */
    unsigned char big[4200];
    memset(big, 0x5A, sizeof big);
    OLC_OK(olGetPlatformInfo(plat, p->prop, sz + 32, big));
    OLC_TRUE(memcmp(big, buf, sz) == 0);
    OLC_TRUE(all_bytes(big + sz, 32, 0x5A));
    if (!p->size) {
      /* strings: NUL-terminated, size == strlen + 1 */
      OLC_EQ(buf[sz - 1], 0);
      OLC_EQ(strlen((char *)buf) + 1, sz);
    }
  }
}

static void test_known_values(void) {
  char s[256];
  size_t sz = 0;
  OLC_OK(olGetPlatformInfo(plat, OL_PLATFORM_INFO_NAME, sizeof s, s));
  OLC_STREQ(s, "Host");
  OLC_OK(olGetPlatformInfoSize(plat, OL_PLATFORM_INFO_NAME, &sz));
  OLC_EQ(sz, 5);
  OLC_OK(olGetPlatformInfo(plat, OL_PLATFORM_INFO_VERSION, sizeof s, s));
  OLC_STREQ(s, "v0.0.1");
  OLC_OK(olGetPlatformInfoSize(plat, OL_PLATFORM_INFO_VERSION, &sz));
  OLC_EQ(sz, 7);
  ol_platform_backend_t b = OL_PLATFORM_BACKEND_FORCE_UINT32;
  OLC_OK(olGetPlatformInfo(plat, OL_PLATFORM_INFO_BACKEND, sizeof b, &b));
  OLC_EQ(b, OL_PLATFORM_BACKEND_HOST);
  OLC_EQ(OL_PLATFORM_BACKEND_HOST, 4);
  OLC_OK(
      olGetPlatformInfo(plat, OL_PLATFORM_INFO_VENDOR_NAME, sizeof s, s));
  OLC_TRUE(strlen(s) > 0);
}

static void test_errors(void) {
  char buf[64];
  size_t sz;
  const char *bad_enum = "getPlatformInfo enum '2147483647' is invalid";

  /* NULL handle */
  OLC_ERR(olGetPlatformInfo(NULL, OL_PLATFORM_INFO_NAME, sizeof buf, buf),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Platform"));
  OLC_ERR(olGetPlatformInfoSize(NULL, OL_PLATFORM_INFO_NAME, &sz),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Platform"));
  /* PropSize 0 comes first, then the handle, then the pointer */
  OLC_ERR(olGetPlatformInfo(NULL, OL_PLATFORM_INFO_NAME, 0, NULL),
          OL_ERRC_INVALID_SIZE, OLC_VF("PropSize == 0"));
  OLC_ERR(olGetPlatformInfo(plat, OL_PLATFORM_INFO_NAME, 0, buf),
          OL_ERRC_INVALID_SIZE, OLC_VF("PropSize == 0"));
  OLC_ERR(olGetPlatformInfo(NULL, OL_PLATFORM_INFO_NAME, 8, NULL),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Platform"));
  OLC_ERR(olGetPlatformInfo(plat, OL_PLATFORM_INFO_NAME, sizeof buf, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == PropValue"));
  OLC_ERR(olGetPlatformInfoSize(plat, OL_PLATFORM_INFO_NAME, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == PropSizeRet"));
  OLC_ERR(olGetPlatformInfoSize(NULL, OL_PLATFORM_INFO_NAME, NULL),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Platform"));
  /* the validation layer does not check the enumerator */
  OLC_ERR(olGetPlatformInfo(NULL, OL_PLATFORM_INFO_FORCE_UINT32, 4, buf),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Platform"));
  OLC_ERR(olGetPlatformInfo(plat, OL_PLATFORM_INFO_FORCE_UINT32, 0, buf),
          OL_ERRC_INVALID_SIZE, OLC_VF("PropSize == 0"));

  /* invalid enumerators */
  memset(buf, 0x77, sizeof buf);
  OLC_ERR(olGetPlatformInfo(plat, OL_PLATFORM_INFO_FORCE_UINT32, sizeof buf,
                            buf),
          OL_ERRC_INVALID_ENUMERATION, bad_enum);
  OLC_TRUE(all_bytes((unsigned char *)buf, sizeof buf, 0x77));
  sz = 4242;
  OLC_ERR(olGetPlatformInfoSize(plat, OL_PLATFORM_INFO_FORCE_UINT32, &sz),
          OL_ERRC_INVALID_ENUMERATION, bad_enum);
  OLC_EQ(sz, 4242);
  OLC_ERR(olGetPlatformInfo(plat, OL_PLATFORM_INFO_LAST, sizeof buf, buf),
          OL_ERRC_INVALID_ENUMERATION, "getPlatformInfo enum '4' is invalid");
  OLC_ERR(olGetPlatformInfoSize(plat, (ol_platform_info_t)77, &sz),
          OL_ERRC_INVALID_ENUMERATION, "getPlatformInfo enum '77' is invalid");

  /* too small: INVALID_SIZE and nothing written */
  memset(buf, 0x77, sizeof buf);
  OLC_ERR(olGetPlatformInfo(plat, OL_PLATFORM_INFO_BACKEND, 3, buf),
          OL_ERRC_INVALID_SIZE, "provided size is invalid");
  OLC_TRUE(all_bytes((unsigned char *)buf, sizeof buf, 0x77));
  OLC_ERR(olGetPlatformInfo(plat, OL_PLATFORM_INFO_NAME, 4, buf),
          OL_ERRC_INVALID_SIZE, "provided size is invalid");
  OLC_TRUE(all_bytes((unsigned char *)buf, sizeof buf, 0x77));
  OLC_ERR(olGetPlatformInfo(plat, OL_PLATFORM_INFO_VERSION, 1, buf),
          OL_ERRC_INVALID_SIZE, "provided size is invalid");
  OLC_TRUE(all_bytes((unsigned char *)buf, sizeof buf, 0x77));
  for (size_t i = 0; i < NPROPS; i++) {
    size_t need = 0;
    OLC_OK(olGetPlatformInfoSize(plat, props[i].prop, &need));
    if (need < 1 || need > sizeof buf)
      continue;
    memset(buf, 0x77, sizeof buf);
    OLC_ERR(olGetPlatformInfo(plat, props[i].prop, need - 1, buf),
            OL_ERRC_INVALID_SIZE, "provided size is invalid");
    OLC_TRUE(all_bytes((unsigned char *)buf, sizeof buf, 0x77));
  }
}

static void test_with_code_loc(void) {
  ol_code_location_t loc = {"test_with_code_loc", __FILE__, __LINE__, 3};
  char s[16];
  size_t sz = 0;
  OLC_OK(olGetPlatformInfoWithCodeLoc(plat, OL_PLATFORM_INFO_NAME,
                                      sizeof s, s, &loc));
  OLC_STREQ(s, "Host");
  OLC_OK(
      olGetPlatformInfoSizeWithCodeLoc(plat, OL_PLATFORM_INFO_NAME, &sz, &loc));
  OLC_EQ(sz, 5);
  ol_result_t a = olGetPlatformInfo(NULL, OL_PLATFORM_INFO_NAME, 4, s);
  OLC_PTR_EQ(olGetPlatformInfoWithCodeLoc(NULL, OL_PLATFORM_INFO_NAME, 4, s,
                                          &loc),
             a);
  OLC_PTR_EQ(
      olGetPlatformInfoSizeWithCodeLoc(NULL, OL_PLATFORM_INFO_NAME, &sz, NULL),
      a);
}

/* ---------------- only our library (LLVM crashes) ----------------------- */

static void ours_bad_platform_handles(void) {
  char buf[64];
  size_t sz = 0;
  OLC_ERR(olGetPlatformInfo((ol_platform_handle_t)0x1234,
                            OL_PLATFORM_INFO_NAME, sizeof buf, buf),
          OL_ERRC_INVALID_PLATFORM,
          "Platform (0x1234) is not a valid platform handle");
  OLC_ERR(olGetPlatformInfoSize((ol_platform_handle_t)0x1234,
                                OL_PLATFORM_INFO_NAME, &sz),
          OL_ERRC_INVALID_PLATFORM,
          "Platform (0x1234) is not a valid platform handle");
  /* a device handle where a platform is expected */
  ol_device_handle_t dev = olc_host_device();
  char want[128];
  snprintf(want, sizeof want,
           "Platform (0x%" PRIxPTR ") is a device handle, not a platform handle",
           (uintptr_t)dev);
  OLC_ERR(olGetPlatformInfo((ol_platform_handle_t)dev, OL_PLATFORM_INFO_NAME,
                            sizeof buf, buf),
          OL_ERRC_INVALID_PLATFORM, want);
  OLC_ERR(olGetPlatformInfoSize((ol_platform_handle_t)dev,
                                OL_PLATFORM_INFO_BACKEND, &sz),
          OL_ERRC_INVALID_PLATFORM, want);
}

static void ours_host_platform_values(void) {
  char s[64];
  OLC_OK(
      olGetPlatformInfo(plat, OL_PLATFORM_INFO_VENDOR_NAME, sizeof s, s));
  OLC_STREQ(s, "liboffload-go");
}

int main(void) {
  OLC_OK(olInit());
  plat = olc_platform_of(olc_host_device());
  OLC_TRUE(plat != NULL);
  if (plat) {
    OLC_RUN(test_sizes_and_values);
    OLC_RUN(test_known_values);
    OLC_RUN(test_errors);
    OLC_RUN(test_with_code_loc);
    OLC_RUN_ON(ours_bad_platform_handles, OLC_OURS, "LLVM 22.1 dereferences invalid handles and crashes");
    OLC_RUN_ON(ours_host_platform_values, OLC_OURS, "the host platform's values are our library's");
  }
  OLC_OK(olShutDown());
  return olc_summary("platform");
}
