/* olLaunchKernel / olCalculateOptimalOccupancy: validation-layer errors. */
#include "check.h"

#define FAKE_QUEUE ((ol_queue_handle_t)0x10)
#define FAKE_KERNEL ((ol_symbol_handle_t)0x40)

static ol_device_handle_t dev;

static void test_launch_kernel(void) {
  ol_kernel_launch_size_args_t ls = {1, {1, 1, 1}, {1, 1, 1}, 0};
  int args = 0;
  CHECK_EQ(sizeof(ol_kernel_launch_size_args_t), 40);
  CHECK_ERR(olLaunchKernel(NULL, NULL, NULL, NULL, 8, NULL),
            OL_ERRC_INVALID_ARGUMENT,
            VF("ArgumentsSize > 0 && ArgumentsData == NULL"));
  CHECK_ERR(olLaunchKernel(FAKE_QUEUE, dev, FAKE_KERNEL, NULL, 1, &ls),
            OL_ERRC_INVALID_ARGUMENT,
            VF("ArgumentsSize > 0 && ArgumentsData == NULL"));
  CHECK_ERR(olLaunchKernel(NULL, NULL, NULL, NULL, 0, NULL),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Device"));
  CHECK_ERR(olLaunchKernel(NULL, NULL, FAKE_KERNEL, &args, sizeof args, &ls),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Device"));
  CHECK_ERR(olLaunchKernel(NULL, dev, NULL, NULL, 0, NULL),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Kernel"));
  CHECK_ERR(olLaunchKernel(FAKE_QUEUE, dev, NULL, &args, sizeof args, &ls),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Kernel"));
  CHECK_ERR(olLaunchKernel(NULL, dev, FAKE_KERNEL, NULL, 0, NULL),
            OL_ERRC_INVALID_NULL_POINTER, VF("NULL == LaunchSizeArgs"));
  CHECK_ERR(olLaunchKernel(FAKE_QUEUE, dev, FAKE_KERNEL, &args, 4, NULL),
            OL_ERRC_INVALID_NULL_POINTER, VF("NULL == LaunchSizeArgs"));
  /* non-NULL data with size 0 is fine for the layer */
  CHECK_ERR(olLaunchKernel(NULL, NULL, FAKE_KERNEL, &args, 0, &ls),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Device"));
  ol_code_location_t loc = {"lk", __FILE__, __LINE__, 1};
  CHECK_ERR(olLaunchKernelWithCodeLoc(NULL, NULL, NULL, NULL, 8, NULL, &loc),
            OL_ERRC_INVALID_ARGUMENT,
            VF("ArgumentsSize > 0 && ArgumentsData == NULL"));
}

static void test_occupancy(void) {
  size_t gs = 1234;
  CHECK_ERR(olCalculateOptimalOccupancy(NULL, NULL, 0, NULL),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Device"));
  CHECK_ERR(olCalculateOptimalOccupancy(NULL, FAKE_KERNEL, 0, &gs),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Device"));
  CHECK_ERR(olCalculateOptimalOccupancy(dev, NULL, 0, NULL),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Kernel"));
  CHECK_ERR(olCalculateOptimalOccupancy(dev, NULL, 1024, &gs),
            OL_ERRC_INVALID_NULL_HANDLE, VF("NULL == Kernel"));
  CHECK_ERR(olCalculateOptimalOccupancy(dev, FAKE_KERNEL, 0, NULL),
            OL_ERRC_INVALID_NULL_POINTER, VF("NULL == GroupSize"));
  CHECK_EQ(gs, 1234);
  ol_code_location_t loc = {"occ", __FILE__, __LINE__, 1};
  CHECK_ERR(olCalculateOptimalOccupancyWithCodeLoc(dev, FAKE_KERNEL, 0, NULL,
                                                   &loc),
            OL_ERRC_INVALID_NULL_POINTER, VF("NULL == GroupSize"));
}

/* ---------------- only our library (LLVM crashes) ----------------------- */

static void ours_bad_kernel_handles(void) {
  ol_kernel_launch_size_args_t ls = {1, {1, 1, 1}, {1, 1, 1}, 0};
  size_t gs = 77;
  CHECK_ERR(olLaunchKernel(NULL, dev, (ol_symbol_handle_t)0x1234, NULL, 0, &ls),
            OL_ERRC_INVALID_ARGUMENT,
            "Kernel (0x1234) is not a valid symbol handle");
  CHECK_ERR(olCalculateOptimalOccupancy(dev, (ol_symbol_handle_t)0x1234, 0, &gs),
            OL_ERRC_INVALID_ARGUMENT,
            "Kernel (0x1234) is not a valid symbol handle");
  CHECK_EQ(gs, 77);
  CHECK_ERR(olCalculateOptimalOccupancy((ol_device_handle_t)0x1234,
                                        (ol_symbol_handle_t)0x1234, 0, &gs),
            OL_ERRC_INVALID_DEVICE,
            "Device (0x1234) is not a valid device handle");
  char want[128];
  snprintf(want, sizeof want,
           "Kernel (0x%" PRIxPTR ") is a device handle, not a symbol handle",
           (uintptr_t)dev);
  CHECK_ERR(olLaunchKernel(NULL, dev, (ol_symbol_handle_t)dev, NULL, 0, &ls),
            OL_ERRC_INVALID_ARGUMENT, want);
}

int main(void) {
  CHECK_SUCCESS(olInit());
  dev = host_device();
  CHECK(dev != NULL);
  if (dev) {
    RUN_TEST(test_launch_kernel);
    RUN_TEST(test_occupancy);
    RUN_TEST_OURS(ours_bad_kernel_handles, "LLVM 22.1 dereferences invalid handles and crashes");
  }
  CHECK_SUCCESS(olShutDown());
  return check_summary("kernel");
}
