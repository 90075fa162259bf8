/* olLaunchKernel / olCalculateOptimalOccupancy: validation-layer errors. */
#include "oldevices.h"

#define FAKE_QUEUE ((ol_queue_handle_t)0x10)
#define FAKE_KERNEL ((ol_symbol_handle_t)0x40)

static ol_device_handle_t dev;

static void test_launch_kernel(void) {
  ol_kernel_launch_size_args_t ls = {1, {1, 1, 1}, {1, 1, 1}, 0};
  int args = 0;
  OLC_EQ(sizeof(ol_kernel_launch_size_args_t), 40);
  OLC_ERR(olLaunchKernel(NULL, NULL, NULL, NULL, 8, NULL),
          OL_ERRC_INVALID_ARGUMENT,
          OLC_VF("ArgumentsSize > 0 && ArgumentsData == NULL"));
  OLC_ERR(olLaunchKernel(FAKE_QUEUE, dev, FAKE_KERNEL, NULL, 1, &ls),
          OL_ERRC_INVALID_ARGUMENT,
          OLC_VF("ArgumentsSize > 0 && ArgumentsData == NULL"));
  OLC_ERR(olLaunchKernel(NULL, NULL, NULL, NULL, 0, NULL),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Device"));
  OLC_ERR(olLaunchKernel(NULL, NULL, FAKE_KERNEL, &args, sizeof args, &ls),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Device"));
  OLC_ERR(olLaunchKernel(NULL, dev, NULL, NULL, 0, NULL),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Kernel"));
  OLC_ERR(olLaunchKernel(FAKE_QUEUE, dev, NULL, &args, sizeof args, &ls),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Kernel"));
  OLC_ERR(olLaunchKernel(NULL, dev, FAKE_KERNEL, NULL, 0, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == LaunchSizeArgs"));
  OLC_ERR(olLaunchKernel(FAKE_QUEUE, dev, FAKE_KERNEL, &args, 4, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == LaunchSizeArgs"));
  /* non-NULL data with size 0 is fine for the layer */
  OLC_ERR(olLaunchKernel(NULL, NULL, FAKE_KERNEL, &args, 0, &ls),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Device"));
  ol_code_location_t loc = {"lk", __FILE__, __LINE__, 1};
  OLC_ERR(olLaunchKernelWithCodeLoc(NULL, NULL, NULL, NULL, 8, NULL, &loc),
          OL_ERRC_INVALID_ARGUMENT,
          OLC_VF("ArgumentsSize > 0 && ArgumentsData == NULL"));
}

static void test_occupancy(void) {
  size_t gs = 1234;
  OLC_ERR(olCalculateOptimalOccupancy(NULL, NULL, 0, NULL),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Device"));
  OLC_ERR(olCalculateOptimalOccupancy(NULL, FAKE_KERNEL, 0, &gs),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Device"));
  OLC_ERR(olCalculateOptimalOccupancy(dev, NULL, 0, NULL),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Kernel"));
  OLC_ERR(olCalculateOptimalOccupancy(dev, NULL, 1024, &gs),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Kernel"));
  OLC_ERR(olCalculateOptimalOccupancy(dev, FAKE_KERNEL, 0, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == GroupSize"));
  OLC_EQ(gs, 1234);
  ol_code_location_t loc = {"occ", __FILE__, __LINE__, 1};
  OLC_ERR(olCalculateOptimalOccupancyWithCodeLoc(dev, FAKE_KERNEL, 0, NULL,
                                                 &loc),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == GroupSize"));
}

/* ---------------- only our library (LLVM crashes) ----------------------- */

static void ours_bad_kernel_handles(void) {
  ol_kernel_launch_size_args_t ls = {1, {1, 1, 1}, {1, 1, 1}, 0};
  size_t gs = 77;
  OLC_ERR(olLaunchKernel(NULL, dev, (ol_symbol_handle_t)0x1234, NULL, 0, &ls),
          OL_ERRC_INVALID_ARGUMENT,
          "Kernel (0x1234) is not a valid symbol handle");
  OLC_ERR(olCalculateOptimalOccupancy(dev, (ol_symbol_handle_t)0x1234, 0, &gs),
          OL_ERRC_INVALID_ARGUMENT,
          "Kernel (0x1234) is not a valid symbol handle");
  OLC_EQ(gs, 77);
  OLC_ERR(olCalculateOptimalOccupancy((ol_device_handle_t)0x1234,
                                      (ol_symbol_handle_t)0x1234, 0, &gs),
          OL_ERRC_INVALID_DEVICE,
          "Device (0x1234) is not a valid device handle");
  char want[128];
  snprintf(want, sizeof want,
           "Kernel (0x%" PRIxPTR ") is a device handle, not a symbol handle",
           (uintptr_t)dev);
  OLC_ERR(olLaunchKernel(NULL, dev, (ol_symbol_handle_t)dev, NULL, 0, &ls),
          OL_ERRC_INVALID_ARGUMENT, want);
}

int main(void) {
  OLC_OK(olInit());
  dev = olc_host_device();
  OLC_TRUE(dev != NULL);
  if (dev) {
    OLC_RUN(test_launch_kernel);
    OLC_RUN(test_occupancy);
    OLC_RUN_ON(ours_bad_kernel_handles, OLC_OURS, "LLVM 22.1 dereferences invalid handles and crashes");
  }
  OLC_OK(olShutDown());
  return olc_summary("kernel");
}
