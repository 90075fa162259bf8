/* Program entry points: validation-layer errors, and olIsValidBinary on
 * the host device for a buffer that is not a loadable image. */
#include "oldevices.h"

static ol_device_handle_t dev;
static const unsigned char junk[16] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4,
                                       5,    6,    7,    8,    9, 10, 11, 12};

static void test_create_program(void) {
  ol_program_handle_t prog = (ol_program_handle_t)0x44;
  OLC_ERR(olCreateProgram(NULL, NULL, 0, NULL), OL_ERRC_INVALID_NULL_HANDLE,
          OLC_VF("NULL == Device"));
  OLC_ERR(olCreateProgram(NULL, junk, sizeof junk, &prog),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Device"));
  OLC_ERR(olCreateProgram(dev, NULL, sizeof junk, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == ProgData"));
  OLC_ERR(olCreateProgram(dev, NULL, 0, &prog), OL_ERRC_INVALID_NULL_POINTER,
          OLC_VF("NULL == ProgData"));
  OLC_ERR(olCreateProgram(dev, junk, sizeof junk, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Program"));
  OLC_ERR(olCreateProgram(dev, junk, 0, NULL), OL_ERRC_INVALID_NULL_POINTER,
          OLC_VF("NULL == Program"));
  OLC_PTR_EQ(prog, (ol_program_handle_t)0x44);
  ol_code_location_t loc = {"cp", __FILE__, __LINE__, 1};
  OLC_ERR(olCreateProgramWithCodeLoc(dev, junk, 4, NULL, &loc),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Program"));
}

static void test_is_valid_binary(void) {
  bool valid = true;
  OLC_ERR(olIsValidBinary(NULL, NULL, 0, NULL), OL_ERRC_INVALID_NULL_HANDLE,
          OLC_VF("NULL == Device"));
  OLC_ERR(olIsValidBinary(NULL, junk, sizeof junk, &valid),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Device"));
  OLC_ERR(olIsValidBinary(dev, NULL, sizeof junk, &valid),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == ProgData"));
  OLC_EQ(valid, true); /* untouched on error */
  OLC_ERR(olIsValidBinary(dev, junk, sizeof junk, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Valid"));
  /* not an image the host device can load: success with Valid == false */
  valid = true;
  OLC_OK(olIsValidBinary(dev, junk, sizeof junk, &valid));
  OLC_EQ(valid, false);
  valid = true;
  OLC_OK(olIsValidBinary(dev, junk, 0, &valid));
  OLC_EQ(valid, false);
  ol_code_location_t loc = {"ivb", __FILE__, __LINE__, 1};
  valid = true;
  OLC_OK(olIsValidBinaryWithCodeLoc(dev, junk, 4, &valid, &loc));
  OLC_EQ(valid, false);
}

static void test_destroy_program(void) {
  OLC_ERR(olDestroyProgram(NULL), OL_ERRC_INVALID_NULL_HANDLE,
          OLC_VF("NULL == Program"));
  OLC_ERR(olDestroyProgramWithCodeLoc(NULL, NULL),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Program"));
}

/* ---------------- only our library (LLVM crashes) ----------------------- */

static void ours_bad_program_handles(void) {
  ol_symbol_handle_t sym = NULL;
  const char *garbage = "Program (0x1234) is not a valid program handle";
  OLC_ERR(olDestroyProgram((ol_program_handle_t)0x1234),
          OL_ERRC_INVALID_ARGUMENT, garbage);
  OLC_ERR(olGetSymbol((ol_program_handle_t)0x1234, "foo",
                      OL_SYMBOL_KIND_KERNEL, &sym),
          OL_ERRC_INVALID_ARGUMENT, garbage);
  OLC_PTR_EQ(sym, NULL);
  char want[128];
  snprintf(want, sizeof want,
           "Program (0x%" PRIxPTR ") is a device handle, not a program handle",
           (uintptr_t)dev);
  OLC_ERR(olDestroyProgram((ol_program_handle_t)dev),
          OL_ERRC_INVALID_ARGUMENT, want);
  bool valid = true;
  OLC_ERR(olIsValidBinary((ol_device_handle_t)0x1234, junk, sizeof junk,
                          &valid),
          OL_ERRC_INVALID_DEVICE,
          "Device (0x1234) is not a valid device handle");
  OLC_EQ(valid, true);
  ol_program_handle_t prog = NULL;
  OLC_ERR(olCreateProgram((ol_device_handle_t)0x1234, junk, sizeof junk,
                          &prog),
          OL_ERRC_INVALID_DEVICE,
          "Device (0x1234) is not a valid device handle");
  OLC_PTR_EQ(prog, NULL);
}

int main(void) {
  OLC_OK(olInit());
  dev = olc_host_device();
  OLC_TRUE(dev != NULL);
  if (dev) {
    OLC_RUN(test_create_program);
    OLC_RUN(test_is_valid_binary);
    OLC_RUN(test_destroy_program);
    OLC_RUN_ON(ours_bad_program_handles, OLC_OURS, "LLVM 22.1 dereferences invalid handles and crashes");
  }
  OLC_OK(olShutDown());
  return olc_summary("program");
}
