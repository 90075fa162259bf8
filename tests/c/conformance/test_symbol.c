/* Symbol entry points: validation-layer errors. */
#include "oldevices.h"

#define FAKE_PROGRAM ((ol_program_handle_t)0x30)
#define FAKE_SYMBOL ((ol_symbol_handle_t)0x40)

static ol_device_handle_t dev;

static void test_get_symbol(void) {
  ol_symbol_handle_t s = (ol_symbol_handle_t)0x88;
  OLC_ERR(olGetSymbol(NULL, NULL, OL_SYMBOL_KIND_KERNEL, NULL),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Program"));
  OLC_ERR(olGetSymbol(NULL, "foo", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &s),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Program"));
  OLC_ERR(olGetSymbol(FAKE_PROGRAM, NULL, OL_SYMBOL_KIND_KERNEL, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Name"));
  OLC_ERR(olGetSymbol(FAKE_PROGRAM, NULL, OL_SYMBOL_KIND_KERNEL, &s),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Name"));
  OLC_ERR(olGetSymbol(FAKE_PROGRAM, "foo", OL_SYMBOL_KIND_KERNEL, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Symbol"));
  /* the kind is checked by the implementation, not by the layer */
  OLC_ERR(olGetSymbol(FAKE_PROGRAM, "k", (ol_symbol_kind_t)9, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Symbol"));
  OLC_ERR(olGetSymbol(NULL, "k", OL_SYMBOL_KIND_FORCE_UINT32, &s),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Program"));
  OLC_PTR_EQ(s, (ol_symbol_handle_t)0x88);
  ol_code_location_t loc = {"gs", __FILE__, __LINE__, 1};
  OLC_ERR(olGetSymbolWithCodeLoc(FAKE_PROGRAM, "k", OL_SYMBOL_KIND_KERNEL,
                                 NULL, &loc),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Symbol"));
}

static void test_symbol_info(void) {
  unsigned char buf[16];
  size_t sz = 12;
  OLC_ERR(olGetSymbolInfo(NULL, OL_SYMBOL_INFO_KIND, 0, NULL),
          OL_ERRC_INVALID_SIZE, OLC_VF("PropSize == 0"));
  OLC_ERR(olGetSymbolInfo(FAKE_SYMBOL, OL_SYMBOL_INFO_KIND, 0, buf),
          OL_ERRC_INVALID_SIZE, OLC_VF("PropSize == 0"));
  OLC_ERR(olGetSymbolInfo(NULL, OL_SYMBOL_INFO_KIND, 4, NULL),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Symbol"));
  OLC_ERR(olGetSymbolInfo(NULL, OL_SYMBOL_INFO_FORCE_UINT32, 4, buf),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Symbol"));
  OLC_ERR(olGetSymbolInfo(FAKE_SYMBOL, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, 8,
                          NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == PropValue"));
  OLC_ERR(olGetSymbolInfoSize(NULL, OL_SYMBOL_INFO_KIND, NULL),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Symbol"));
  OLC_ERR(olGetSymbolInfoSize(NULL, OL_SYMBOL_INFO_KIND, &sz),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Symbol"));
  OLC_ERR(olGetSymbolInfoSize(FAKE_SYMBOL, OL_SYMBOL_INFO_KIND, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == PropSizeRet"));
  OLC_EQ(sz, 12);
  ol_code_location_t loc = {"si", __FILE__, __LINE__, 1};
  OLC_ERR(olGetSymbolInfoWithCodeLoc(NULL, OL_SYMBOL_INFO_KIND, 4, buf, &loc),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Symbol"));
  OLC_ERR(olGetSymbolInfoSizeWithCodeLoc(FAKE_SYMBOL, OL_SYMBOL_INFO_KIND,
                                         NULL, &loc),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == PropSizeRet"));
}

/* ---------------- only our library (LLVM crashes) ----------------------- */

static void ours_bad_symbol_handles(void) {
  const char *garbage = "Symbol (0x1234) is not a valid symbol handle";
  ol_symbol_handle_t g = (ol_symbol_handle_t)0x1234;
  unsigned char buf[16];
  size_t sz = 6;
  memset(buf, 0x12, sizeof buf);
  OLC_ERR(olGetSymbolInfo(g, OL_SYMBOL_INFO_KIND, 4, buf),
          OL_ERRC_INVALID_ARGUMENT, garbage);
  OLC_ERR(olGetSymbolInfoSize(g, OL_SYMBOL_INFO_KIND, &sz),
          OL_ERRC_INVALID_ARGUMENT, garbage);
  OLC_EQ(sz, 6);
  OLC_EQ(buf[0], 0x12);
  char want[128];
  snprintf(want, sizeof want,
           "Symbol (0x%" PRIxPTR ") is a device handle, not a symbol handle",
           (uintptr_t)dev);
  OLC_ERR(olGetSymbolInfo((ol_symbol_handle_t)dev, OL_SYMBOL_INFO_KIND, 4,
                          buf),
          OL_ERRC_INVALID_ARGUMENT, want);
}

int main(void) {
  OLC_OK(olInit());
  dev = olc_host_device();
  OLC_TRUE(dev != NULL);
  if (dev) {
    OLC_RUN(test_get_symbol);
    OLC_RUN(test_symbol_info);
    OLC_RUN_ON(ours_bad_symbol_handles, OLC_OURS, "LLVM 22.1 dereferences invalid handles and crashes");
  }
  OLC_OK(olShutDown());
  return olc_summary("symbol");
}
