/* Program entry points: validation-layer errors, and olIsValidBinary on
 * the host device for a buffer that is not a loadable image. */
#include "check.h"

static ol_device_handle_t dev;
static const unsigned char junk[16] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4,
                                       5,    6,    7,    8,    9, 10, 11, 12};

static void test_create_program(void) {
  ol_program_handle_t prog = (ol_program_handle_t)0x44;
  CHECK_ERR(olCreateProgram(NULL, NULL, 0, NULL), OL_ERRC_INVALID_NULL_HANDLE,
            VF("NULL == Device"));
  CHECK_ERR(olCreateProgram(NULL, junk, sizeof junk, &prog),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Device"));
  CHECK_ERR(olCreateProgram(dev, NULL, sizeof junk, NULL),
            OL_ERRC_INVALID_NULL_POINTER, VF("NULL == ProgData"));
  CHECK_ERR(olCreateProgram(dev, NULL, 0, &prog), OL_ERRC_INVALID_NULL_POINTER,
            VF("NULL == ProgData"));
  CHECK_ERR(olCreateProgram(dev, junk, sizeof junk, NULL),
            OL_ERRC_INVALID_NULL_POINTER, VF("NULL == Program"));
  CHECK_ERR(olCreateProgram(dev, junk, 0, NULL), OL_ERRC_INVALID_NULL_POINTER,
            VF("NULL == Program"));
  CHECK_PTR_EQ(prog, (ol_program_handle_t)0x44);
  ol_code_location_t loc = {"cp", __FILE__, __LINE__, 1};
  CHECK_ERR(olCreateProgramWithCodeLoc(dev, junk, 4, NULL, &loc),
            OL_ERRC_INVALID_NULL_POINTER, VF("NULL == Program"));
}

static void test_is_valid_binary(void) {
  bool valid = true;
  CHECK_ERR(olIsValidBinary(NULL, NULL, 0, NULL), OL_ERRC_INVALID_NULL_HANDLE,
            VF("NULL == Device"));
  CHECK_ERR(olIsValidBinary(NULL, junk, sizeof junk, &valid),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Device"));
  CHECK_ERR(olIsValidBinary(dev, NULL, sizeof junk, &valid),
            OL_ERRC_INVALID_NULL_POINTER, VF("NULL == ProgData"));
  CHECK_EQ(valid, true); /* untouched on error */
  CHECK_ERR(olIsValidBinary(dev, junk, sizeof junk, NULL),
            OL_ERRC_INVALID_NULL_POINTER, VF("NULL == Valid"));
  /* not an image the host device can load: success with Valid == false */
  valid = true;
  CHECK_SUCCESS(olIsValidBinary(dev, junk, sizeof junk, &valid));
  CHECK_EQ(valid, false);
  valid = true;
  CHECK_SUCCESS(olIsValidBinary(dev, junk, 0, &valid));
  CHECK_EQ(valid, false);
  ol_code_location_t loc = {"ivb", __FILE__, __LINE__, 1};
  valid = true;
  CHECK_SUCCESS(olIsValidBinaryWithCodeLoc(dev, junk, 4, &valid, &loc));
  CHECK_EQ(valid, false);
}

static void test_destroy_program(void) {
  CHECK_ERR(olDestroyProgram(NULL), OL_ERRC_INVALID_NULL_HANDLE,
            VF("NULL == Program"));
  CHECK_ERR(olDestroyProgramWithCodeLoc(NULL, NULL),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Program"));
}

/* ---------------- only our library (LLVM crashes) ----------------------- */

static void ours_bad_program_handles(void) {
  ol_symbol_handle_t sym = NULL;
  const char *garbage = "Program (0x1234) is not a valid program handle";
  CHECK_ERR(olDestroyProgram((ol_program_handle_t)0x1234),
            OL_ERRC_INVALID_ARGUMENT, garbage);
  CHECK_ERR(olGetSymbol((ol_program_handle_t)0x1234, "foo",
                        OL_SYMBOL_KIND_KERNEL, &sym),
            OL_ERRC_INVALID_ARGUMENT, garbage);
  CHECK_PTR_EQ(sym, NULL);
  char want[128];
  snprintf(want, sizeof want,
           "Program (0x%" PRIxPTR ") is a device handle, not a program handle",
           (uintptr_t)dev);
  CHECK_ERR(olDestroyProgram((ol_program_handle_t)dev),
            OL_ERRC_INVALID_ARGUMENT, want);
  bool valid = true;
  CHECK_ERR(olIsValidBinary((ol_device_handle_t)0x1234, junk, sizeof junk,
                            &valid),
            OL_ERRC_INVALID_DEVICE,
            "Device (0x1234) is not a valid device handle");
  CHECK_EQ(valid, true);
  ol_program_handle_t prog = NULL;
  CHECK_ERR(olCreateProgram((ol_device_handle_t)0x1234, junk, sizeof junk,
                            &prog),
            OL_ERRC_INVALID_DEVICE,
            "Device (0x1234) is not a valid device handle");
  CHECK_PTR_EQ(prog, NULL);
}

int main(void) {
  CHECK_SUCCESS(olInit());
  dev = host_device();
  CHECK(dev != NULL);
  if (dev) {
    RUN_TEST(test_create_program);
    RUN_TEST(test_is_valid_binary);
    RUN_TEST(test_destroy_program);
    RUN_TEST_OURS(ours_bad_program_handles, "LLVM 22.1 dereferences invalid handles and crashes");
  }
  CHECK_SUCCESS(olShutDown());
  return check_summary("program");
}
