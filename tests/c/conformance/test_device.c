/* olIterateDevices and olGetDeviceInfo / olGetDeviceInfoSize. */
#include "oldevices.h"

static ol_device_handle_t dev;

enum vkind { K_STR, K_U32, K_U64, K_ENUM, K_HANDLE, K_DIMS };

struct dprop {
  ol_device_info_t prop;
  const char *name;
  enum vkind kind;
};

static const struct dprop props[] = {
    {OL_DEVICE_INFO_TYPE, "TYPE", K_ENUM},
    {OL_DEVICE_INFO_PLATFORM, "PLATFORM", K_HANDLE},
    {OL_DEVICE_INFO_NAME, "NAME", K_STR},
    {OL_DEVICE_INFO_PRODUCT_NAME, "PRODUCT_NAME", K_STR},
    {OL_DEVICE_INFO_UID, "UID", K_STR},
    {OL_DEVICE_INFO_VENDOR, "VENDOR", K_STR},
    {OL_DEVICE_INFO_DRIVER_VERSION, "DRIVER_VERSION", K_STR},
    {OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE, "MAX_WORK_GROUP_SIZE", K_U32},
    {OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION,
     "MAX_WORK_GROUP_SIZE_PER_DIMENSION", K_DIMS},
    {OL_DEVICE_INFO_MAX_WORK_SIZE, "MAX_WORK_SIZE", K_U32},
    {OL_DEVICE_INFO_MAX_WORK_SIZE_PER_DIMENSION, "MAX_WORK_SIZE_PER_DIMENSION",
     K_DIMS},
    {OL_DEVICE_INFO_VENDOR_ID, "VENDOR_ID", K_U32},
    {OL_DEVICE_INFO_NUM_COMPUTE_UNITS, "NUM_COMPUTE_UNITS", K_U32},
    {OL_DEVICE_INFO_MAX_CLOCK_FREQUENCY, "MAX_CLOCK_FREQUENCY", K_U32},
    {OL_DEVICE_INFO_MEMORY_CLOCK_RATE, "MEMORY_CLOCK_RATE", K_U32},
    {OL_DEVICE_INFO_ADDRESS_BITS, "ADDRESS_BITS", K_U32},
    {OL_DEVICE_INFO_MAX_MEM_ALLOC_SIZE, "MAX_MEM_ALLOC_SIZE", K_U64},
    {OL_DEVICE_INFO_GLOBAL_MEM_SIZE, "GLOBAL_MEM_SIZE", K_U64},
    {OL_DEVICE_INFO_WORK_GROUP_LOCAL_MEM_SIZE, "WORK_GROUP_LOCAL_MEM_SIZE",
     K_U64},
    {OL_DEVICE_INFO_SINGLE_FP_CONFIG, "SINGLE_FP_CONFIG", K_U32},
    {OL_DEVICE_INFO_DOUBLE_FP_CONFIG, "DOUBLE_FP_CONFIG", K_U32},
    {OL_DEVICE_INFO_HALF_FP_CONFIG, "HALF_FP_CONFIG", K_U32},
    {OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_CHAR, "NATIVE_VECTOR_WIDTH_CHAR", K_U32},
    {OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_SHORT, "NATIVE_VECTOR_WIDTH_SHORT",
     K_U32},
    {OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_INT, "NATIVE_VECTOR_WIDTH_INT", K_U32},
    {OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_LONG, "NATIVE_VECTOR_WIDTH_LONG", K_U32},
    {OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_FLOAT, "NATIVE_VECTOR_WIDTH_FLOAT",
     K_U32},
    {OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_DOUBLE, "NATIVE_VECTOR_WIDTH_DOUBLE",
     K_U32},
    {OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_HALF, "NATIVE_VECTOR_WIDTH_HALF", K_U32},
};
#define NPROPS (sizeof props / sizeof props[0])

static size_t kind_size(enum vkind k) {
  switch (k) {
  case K_U32:
  case K_ENUM:
    return 4;
  case K_U64:
  case K_HANDLE:
    return 8;
  case K_DIMS:
    return 12;
  case K_STR:
    return 0;
  }
  return 0;
}

static bool all_bytes(const unsigned char *p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != v)
      return false;
  return true;
}

/* ------------------------------ iteration ------------------------------- */

struct iter_state {
  int calls;
  int stop_after;
  void *seen_ud;
  ol_device_handle_t last;
};

static bool iter_cb(ol_device_handle_t d, void *ud) {
  struct iter_state *s = (struct iter_state *)ud;
  s->calls++;
  s->seen_ud = ud;
  s->last = d;
  return s->stop_after == 0 || s->calls < s->stop_after;
}

static bool null_ud_cb(ol_device_handle_t d, void *ud) {
  (void)d;
  return ud == NULL ? true : false;
}

static void test_iterate(void) {
  olc_devlist l;
  memset(&l, 0, sizeof l);
  OLC_OK(olc_list_devices(&l));
  OLC_TRUE(l.n >= 1);
  if (l.n < 1)
    return;
  for (int i = 0; i < l.n; i++)
    OLC_TRUE(l.dev[i] != NULL);
  /* the host device comes last of this process's devices and is the only
   * HOST-typed one among them; the devices of remote platforms (ours
   * under an MPI launch or OFFLOAD_REMOTE=loopback:N, docs/remote.md) come
   * after all of them, a proxy's host device among them */
  int hosts = 0, local = 0;
  while (local < l.n && !olc_is_remote(l.dev[local]))
    local++;
  for (int i = local; i < l.n; i++)
    OLC_TRUE(olc_is_remote(l.dev[i]));
  for (int i = 0; i < local; i++) {
    ol_device_type_t t = OL_DEVICE_TYPE_FORCE_UINT32;
    OLC_OK(olGetDeviceInfo(l.dev[i], OL_DEVICE_INFO_TYPE, 4, &t));
    if (t == OL_DEVICE_TYPE_HOST) {
      hosts++;
      OLC_EQ(i, local - 1);
    }
  }
  OLC_EQ(hosts, 1);

  /* the user data is passed through and iteration order is stable */
  struct iter_state s = {0, 0, NULL, NULL};
  OLC_OK(olIterateDevices(iter_cb, &s));
  OLC_EQ(s.calls, l.n);
  OLC_PTR_EQ(s.seen_ud, &s);
  OLC_PTR_EQ(s.last, l.dev[l.n - 1]);
  OLC_OK(olIterateDevices(null_ud_cb, NULL));

  /* returning false stops the whole iteration */
  struct iter_state one = {0, 1, NULL, NULL};
  OLC_OK(olIterateDevices(iter_cb, &one));
  OLC_EQ(one.calls, 1);
  OLC_PTR_EQ(one.last, l.dev[0]);

  OLC_ERR(olIterateDevices(NULL, NULL), OL_ERRC_INVALID_NULL_POINTER,
          OLC_VF("NULL == Callback"));
  OLC_ERR(olIterateDevices(NULL, &s), OL_ERRC_INVALID_NULL_POINTER,
          OLC_VF("NULL == Callback"));
  ol_code_location_t loc = {"test_iterate", __FILE__, __LINE__, 1};
  struct iter_state s2 = {0, 0, NULL, NULL};
  OLC_OK(olIterateDevicesWithCodeLoc(iter_cb, &s2, &loc));
  OLC_EQ(s2.calls, l.n);
  OLC_ERR(olIterateDevicesWithCodeLoc(NULL, NULL, &loc),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Callback"));
}

/* ----------------------------- info sizes ------------------------------- */

static void test_info_all_props(void) {
  OLC_EQ(NPROPS, 29);
  OLC_EQ(OL_DEVICE_INFO_LAST, 29);
  for (size_t i = 0; i < NPROPS; i++) {
    const struct dprop *p = &props[i];
    OLC_EQ(p->prop, i); /* table is in enumerator order */
    size_t sz = 99999;
    ol_result_t r = olGetDeviceInfoSize(dev, p->prop, &sz);
    OLC_OK(r);
    if (r) {
      printf("  (property %s)\n", p->name);
      continue;
    }
    size_t want = kind_size(p->kind);
    if (want)
      OLC_EQ(sz, want);
    else
      OLC_TRUE(sz >= 1 && sz < 4096);
    if (sz == 0 || sz >= 4096)
      continue;

    unsigned char buf[4200];
    memset(buf, 0xC3, sizeof buf);
    r = olGetDeviceInfo(dev, p->prop, sz, buf);
    OLC_OK(r);
    if (r)
      printf("  (property %s)\n", p->name);
    OLC_TRUE(all_bytes(buf + sz, 64, 0xC3));
    unsigned char big[4200];
    memset(big, 0x3C, sizeof big);
    OLC_OK(olGetDeviceInfo(dev, p->prop, sz + 40, big));
    OLC_TRUE(memcmp(big, buf, sz) == 0);
    OLC_TRUE(all_bytes(big + sz, 40, 0x3C));
    if (p->kind == K_STR) {
      OLC_EQ(buf[sz - 1], 0);
      OLC_EQ(strlen((char *)buf) + 1, sz);
    }
    /* one byte short: INVALID_SIZE, nothing written */
    memset(big, 0x3C, sizeof big);
    OLC_ERR(olGetDeviceInfo(dev, p->prop, sz - 1 ? sz - 1 : 0, big),
            OL_ERRC_INVALID_SIZE,
            sz - 1 ? "provided size is invalid" : OLC_VF("PropSize == 0"));
    OLC_TRUE(all_bytes(big, sz + 40, 0x3C));
  }
}

static uint32_t get_u32(ol_device_info_t p) {
  uint32_t v = 0xDEADBEEF;
  OLC_OK(olGetDeviceInfo(dev, p, sizeof v, &v));
  return v;
}

static void test_info_values(void) {
  ol_device_type_t t = OL_DEVICE_TYPE_FORCE_UINT32;
  OLC_OK(olGetDeviceInfo(dev, OL_DEVICE_INFO_TYPE, sizeof t, &t));
  OLC_EQ(t, OL_DEVICE_TYPE_HOST);
  OLC_EQ(OL_DEVICE_TYPE_HOST, 4);

  ol_platform_handle_t p = NULL;
  OLC_OK(olGetDeviceInfo(dev, OL_DEVICE_INFO_PLATFORM, sizeof p, &p));
  OLC_TRUE(p != NULL);
  ol_platform_backend_t b = OL_PLATFORM_BACKEND_FORCE_UINT32;
  OLC_OK(olGetPlatformInfo(p, OL_PLATFORM_INFO_BACKEND, sizeof b, &b));
  OLC_EQ(b, OL_PLATFORM_BACKEND_HOST);

  char s[512];
  OLC_OK(olGetDeviceInfo(dev, OL_DEVICE_INFO_UID, sizeof s, s));
  OLC_STREQ(s, "HOST");
  OLC_OK(olGetDeviceInfo(dev, OL_DEVICE_INFO_NAME, sizeof s, s));
  OLC_TRUE(strlen(s) > 0);

  uint32_t wg = get_u32(OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE);
  OLC_TRUE(wg >= 1);
  ol_dimensions_t d = {0, 0, 0};
  OLC_OK(olGetDeviceInfo(
      dev, OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION, sizeof d, &d));
  OLC_TRUE(d.x >= 1 && d.y >= 1 && d.z >= 1);
  OLC_TRUE(d.x <= wg && d.y <= wg && d.z <= wg);
  uint32_t ws = get_u32(OL_DEVICE_INFO_MAX_WORK_SIZE);
  OLC_TRUE(ws >= wg);
  OLC_OK(olGetDeviceInfo(dev, OL_DEVICE_INFO_MAX_WORK_SIZE_PER_DIMENSION,
                         sizeof d, &d));
  OLC_TRUE(d.x >= 1 && d.y >= 1 && d.z >= 1);
  OLC_TRUE(get_u32(OL_DEVICE_INFO_NUM_COMPUTE_UNITS) >= 1);
  OLC_EQ(get_u32(OL_DEVICE_INFO_ADDRESS_BITS), sizeof(void *) * 8);
  /* FP capability flags only use the defined bits */
  OLC_TRUE(get_u32(OL_DEVICE_INFO_SINGLE_FP_CONFIG) < OL_DEVICE_FP_CAPABILITY_FLAG_LAST);
  OLC_TRUE(get_u32(OL_DEVICE_INFO_SINGLE_FP_CONFIG) != 0);
  OLC_TRUE(get_u32(OL_DEVICE_INFO_DOUBLE_FP_CONFIG) < OL_DEVICE_FP_CAPABILITY_FLAG_LAST);
  OLC_TRUE(get_u32(OL_DEVICE_INFO_DOUBLE_FP_CONFIG) != 0);
  OLC_TRUE(get_u32(OL_DEVICE_INFO_HALF_FP_CONFIG) < OL_DEVICE_FP_CAPABILITY_FLAG_LAST);
  for (ol_device_info_t v = OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_CHAR;
       v <= OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_DOUBLE; v++)
    OLC_TRUE(get_u32(v) >= 1);
}

/* ------------------------------- errors --------------------------------- */

static void test_info_errors(void) {
  unsigned char buf[64];
  size_t sz = 0;
  const char *bad = "getDeviceInfo enum '2147483647' is invalid";

  OLC_ERR(olGetDeviceInfo(NULL, OL_DEVICE_INFO_TYPE, 4, buf),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Device"));
  OLC_ERR(olGetDeviceInfoSize(NULL, OL_DEVICE_INFO_TYPE, &sz),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Device"));
  /* order: PropSize, then Device, then PropValue */
  OLC_ERR(olGetDeviceInfo(NULL, OL_DEVICE_INFO_TYPE, 0, NULL),
          OL_ERRC_INVALID_SIZE, OLC_VF("PropSize == 0"));
  OLC_ERR(olGetDeviceInfo(dev, OL_DEVICE_INFO_TYPE, 0, buf),
          OL_ERRC_INVALID_SIZE, OLC_VF("PropSize == 0"));
  OLC_ERR(olGetDeviceInfo(NULL, OL_DEVICE_INFO_TYPE, 4, NULL),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Device"));
  OLC_ERR(olGetDeviceInfo(dev, OL_DEVICE_INFO_TYPE, 4, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == PropValue"));
  OLC_ERR(olGetDeviceInfoSize(dev, OL_DEVICE_INFO_TYPE, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == PropSizeRet"));
  OLC_ERR(olGetDeviceInfoSize(NULL, OL_DEVICE_INFO_TYPE, NULL),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Device"));
  /* enumerators are not checked by the validation layer */
  OLC_ERR(olGetDeviceInfo(NULL, (ol_device_info_t)999, 4, buf),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Device"));
  OLC_ERR(olGetDeviceInfo(dev, OL_DEVICE_INFO_FORCE_UINT32, 4, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == PropValue"));

  memset(buf, 0x11, sizeof buf);
  OLC_ERR(olGetDeviceInfo(dev, OL_DEVICE_INFO_FORCE_UINT32, sizeof buf, buf),
          OL_ERRC_INVALID_ENUMERATION, bad);
  OLC_TRUE(all_bytes(buf, sizeof buf, 0x11));
  sz = 777;
  OLC_ERR(olGetDeviceInfoSize(dev, OL_DEVICE_INFO_FORCE_UINT32, &sz),
          OL_ERRC_INVALID_ENUMERATION, bad);
  OLC_EQ(sz, 777);
  OLC_ERR(olGetDeviceInfo(dev, OL_DEVICE_INFO_LAST, sizeof buf, buf),
          OL_ERRC_INVALID_ENUMERATION, "getDeviceInfo enum '29' is invalid");
  OLC_ERR(olGetDeviceInfoSize(dev, (ol_device_info_t)999, &sz),
          OL_ERRC_INVALID_ENUMERATION, "getDeviceInfo enum '999' is invalid");

  /* too small */
  memset(buf, 0x11, sizeof buf);
  OLC_ERR(olGetDeviceInfo(dev, OL_DEVICE_INFO_TYPE, 3, buf),
          OL_ERRC_INVALID_SIZE, "provided size is invalid");
  OLC_ERR(olGetDeviceInfo(dev, OL_DEVICE_INFO_PLATFORM, 4, buf),
          OL_ERRC_INVALID_SIZE, "provided size is invalid");
  OLC_ERR(olGetDeviceInfo(dev, OL_DEVICE_INFO_GLOBAL_MEM_SIZE, 7, buf),
          OL_ERRC_INVALID_SIZE, "provided size is invalid");
  OLC_ERR(olGetDeviceInfo(dev, OL_DEVICE_INFO_MAX_WORK_SIZE_PER_DIMENSION, 8,
                          buf),
          OL_ERRC_INVALID_SIZE, "provided size is invalid");
  OLC_ERR(olGetDeviceInfo(dev, OL_DEVICE_INFO_UID, 4, buf),
          OL_ERRC_INVALID_SIZE, "provided size is invalid");
  OLC_TRUE(all_bytes(buf, sizeof buf, 0x11));

  /* WithCodeLoc variants give identical results */
  ol_code_location_t loc = {"test_info_errors", __FILE__, __LINE__, 2};
  ol_result_t a = olGetDeviceInfo(NULL, OL_DEVICE_INFO_TYPE, 4, buf);
  OLC_PTR_EQ(olGetDeviceInfoWithCodeLoc(NULL, OL_DEVICE_INFO_TYPE, 4, buf,
                                        &loc),
             a);
  OLC_PTR_EQ(olGetDeviceInfoSizeWithCodeLoc(NULL, OL_DEVICE_INFO_TYPE, &sz,
                                            &loc),
             a);
  ol_device_type_t t = OL_DEVICE_TYPE_FORCE_UINT32;
  OLC_OK(
      olGetDeviceInfoWithCodeLoc(dev, OL_DEVICE_INFO_TYPE, 4, &t, &loc));
  OLC_EQ(t, OL_DEVICE_TYPE_HOST);
  OLC_OK(olGetDeviceInfoSizeWithCodeLoc(dev, OL_DEVICE_INFO_UID, &sz,
                                        NULL));
  OLC_EQ(sz, 5);
}

/* ---------------- only our library (LLVM crashes) ----------------------- */

static void ours_bad_device_handles(void) {
  unsigned char buf[64];
  size_t sz = 0;
  const char *garbage = "Device (0x1234) is not a valid device handle";
  memset(buf, 0x22, sizeof buf);
  OLC_ERR(olGetDeviceInfo((ol_device_handle_t)0x1234, OL_DEVICE_INFO_TYPE, 4,
                          buf),
          OL_ERRC_INVALID_DEVICE, garbage);
  OLC_TRUE(all_bytes(buf, sizeof buf, 0x22));
  OLC_ERR(olGetDeviceInfo((ol_device_handle_t)0x1234, OL_DEVICE_INFO_NAME,
                          sizeof buf, buf),
          OL_ERRC_INVALID_DEVICE, garbage);
  OLC_ERR(olGetDeviceInfoSize((ol_device_handle_t)0x1234, OL_DEVICE_INFO_NAME,
                              &sz),
          OL_ERRC_INVALID_DEVICE, garbage);
  /* validation still comes first */
  OLC_ERR(olGetDeviceInfo((ol_device_handle_t)0x1234, OL_DEVICE_INFO_TYPE, 0,
                          buf),
          OL_ERRC_INVALID_SIZE, OLC_VF("PropSize == 0"));
  OLC_ERR(olGetDeviceInfo((ol_device_handle_t)0x1234, OL_DEVICE_INFO_TYPE, 4,
                          NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == PropValue"));

  /* a platform handle where a device is expected */
  ol_platform_handle_t p = olc_platform_of(dev);
  char want[128];
  snprintf(want, sizeof want,
           "Device (0x%" PRIxPTR ") is a platform handle, not a device handle",
           (uintptr_t)p);
  OLC_ERR(olGetDeviceInfo((ol_device_handle_t)p, OL_DEVICE_INFO_TYPE, 4, buf),
          OL_ERRC_INVALID_DEVICE, want);
  OLC_ERR(olGetDeviceInfoSize((ol_device_handle_t)p, OL_DEVICE_INFO_TYPE,
                              &sz),
          OL_ERRC_INVALID_DEVICE, want);
  OLC_TRUE(all_bytes(buf, sizeof buf, 0x22));
}

int main(void) {
  OLC_OK(olInit());
  dev = olc_host_device();
  OLC_TRUE(dev != NULL);
  if (dev) {
    OLC_RUN(test_iterate);
    OLC_RUN(test_info_all_props);
    OLC_RUN(test_info_values);
    OLC_RUN(test_info_errors);
    OLC_RUN_ON(ours_bad_device_handles, OLC_OURS, "LLVM 22.1 dereferences invalid handles and crashes");
  }
  OLC_OK(olShutDown());
  return olc_summary("device");
}
