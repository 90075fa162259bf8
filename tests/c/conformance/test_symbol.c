/* Symbol entry points: validation-layer errors. */
#include "check.h"

#define FAKE_PROGRAM ((ol_program_handle_t)0x30)
#define FAKE_SYMBOL ((ol_symbol_handle_t)0x40)

static ol_device_handle_t dev;

static void test_get_symbol(void) {
  ol_symbol_handle_t s = (ol_symbol_handle_t)0x88;
  CHECK_ERR(olGetSymbol(NULL, NULL, OL_SYMBOL_KIND_KERNEL, NULL),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Program"));
  CHECK_ERR(olGetSymbol(NULL, "foo", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &s),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Program"));
  CHECK_ERR(olGetSymbol(FAKE_PROGRAM, NULL, OL_SYMBOL_KIND_KERNEL, NULL),
            OL_ERRC_INVALID_NULL_POINTER, VF("NULL == Name"));
  CHECK_ERR(olGetSymbol(FAKE_PROGRAM, NULL, OL_SYMBOL_KIND_KERNEL, &s),
            OL_ERRC_INVALID_NULL_POINTER, VF("NULL == Name"));
  CHECK_ERR(olGetSymbol(FAKE_PROGRAM, "foo", OL_SYMBOL_KIND_KERNEL, NULL),
            OL_ERRC_INVALID_NULL_POINTER, VF("NULL == Symbol"));
  /* the kind is checked by the implementation, not by the layer */
  CHECK_ERR(olGetSymbol(FAKE_PROGRAM, "k", (ol_symbol_kind_t)9, NULL),
            OL_ERRC_INVALID_NULL_POINTER, VF("NULL == Symbol"));
  CHECK_ERR(olGetSymbol(NULL, "k", OL_SYMBOL_KIND_FORCE_UINT32, &s),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Program"));
  CHECK_PTR_EQ(s, (ol_symbol_handle_t)0x88);
  ol_code_location_t loc = {"gs", __FILE__, __LINE__, 1};
  CHECK_ERR(olGetSymbolWithCodeLoc(FAKE_PROGRAM, "k", OL_SYMBOL_KIND_KERNEL,
                                   NULL, &loc),
            OL_ERRC_INVALID_NULL_POINTER, VF("NULL == Symbol"));
}

static void test_symbol_info(void) {
  unsigned char buf[16];
  size_t sz = 12;
  CHECK_ERR(olGetSymbolInfo(NULL, OL_SYMBOL_INFO_KIND, 0, NULL),
            OL_ERRC_INVALID_SIZE, VF("PropSize == 0"));
  CHECK_ERR(olGetSymbolInfo(FAKE_SYMBOL, OL_SYMBOL_INFO_KIND, 0, buf),
            OL_ERRC_INVALID_SIZE, VF("PropSize == 0"));
  CHECK_ERR(olGetSymbolInfo(NULL, OL_SYMBOL_INFO_KIND, 4, NULL),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Symbol"));
  CHECK_ERR(olGetSymbolInfo(NULL, OL_SYMBOL_INFO_FORCE_UINT32, 4, buf),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Symbol"));
  CHECK_ERR(olGetSymbolInfo(FAKE_SYMBOL, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, 8,
                            NULL),
            OL_ERRC_INVALID_NULL_POINTER, VF("NULL == PropValue"));
  CHECK_ERR(olGetSymbolInfoSize(NULL, OL_SYMBOL_INFO_KIND, NULL),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Symbol"));
  CHECK_ERR(olGetSymbolInfoSize(NULL, OL_SYMBOL_INFO_KIND, &sz),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Symbol"));
  CHECK_ERR(olGetSymbolInfoSize(FAKE_SYMBOL, OL_SYMBOL_INFO_KIND, NULL),
            OL_ERRC_INVALID_NULL_POINTER, VF("NULL == PropSizeRet"));
  CHECK_EQ(sz, 12);
  ol_code_location_t loc = {"si", __FILE__, __LINE__, 1};
  CHECK_ERR(olGetSymbolInfoWithCodeLoc(NULL, OL_SYMBOL_INFO_KIND, 4, buf, &loc),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Symbol"));
  CHECK_ERR(olGetSymbolInfoSizeWithCodeLoc(FAKE_SYMBOL, OL_SYMBOL_INFO_KIND,
                                           NULL, &loc),
            OL_ERRC_INVALID_NULL_POINTER, VF("NULL == PropSizeRet"));
}

/* ---------------- only our library (LLVM crashes) ----------------------- */

static void ours_bad_symbol_handles(void) {
  const char *garbage = "Symbol (0x1234) is not a valid symbol handle";
  ol_symbol_handle_t g = (ol_symbol_handle_t)0x1234;
  unsigned char buf[16];
  size_t sz = 6;
  memset(buf, 0x12, sizeof buf);
  CHECK_ERR(olGetSymbolInfo(g, OL_SYMBOL_INFO_KIND, 4, buf),
            OL_ERRC_INVALID_ARGUMENT, garbage);
  CHECK_ERR(olGetSymbolInfoSize(g, OL_SYMBOL_INFO_KIND, &sz),
            OL_ERRC_INVALID_ARGUMENT, garbage);
  CHECK_EQ(sz, 6);
  CHECK_EQ(buf[0], 0x12);
  char want[128];
  snprintf(want, sizeof want,
           "Symbol (0x%" PRIxPTR ") is a device handle, not a symbol handle",
           (uintptr_t)dev);
  CHECK_ERR(olGetSymbolInfo((ol_symbol_handle_t)dev, OL_SYMBOL_INFO_KIND, 4,
                            buf),
            OL_ERRC_INVALID_ARGUMENT, want);
}

int main(void) {
  CHECK_SUCCESS(olInit());
  dev = host_device();
  CHECK(dev != NULL);
  if (dev) {
    RUN_TEST(test_get_symbol);
    RUN_TEST(test_symbol_info);
    RUN_TEST_OURS(ours_bad_symbol_handles, "LLVM 22.1 dereferences invalid handles and crashes");
  }
  CHECK_SUCCESS(olShutDown());
  return check_summary("symbol");
}
