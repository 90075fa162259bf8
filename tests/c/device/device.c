/* The device under test as the launch checks see it: its type and backend,
 * and, on the host device, the limits the other areas rely on (group
 * sizes, group-local memory, compute units).
 * SPDX-License-Identifier: Apache-2.0 */
#include "oldevices.h"

static void test_device_found(void) {
  ol_device_type_t t = OL_DEVICE_TYPE_ALL;
  OLC_OK(olGetDeviceInfo(olc_dev, OL_DEVICE_INFO_TYPE, sizeof t, &t));
  /* a remote device answers as the device it is: a proxy's host device is a host device */
  OLC_EQ(t, olc_on_host || (olc_remote && olc_backend == OL_PLATFORM_BACKEND_HOST)
                ? OL_DEVICE_TYPE_HOST
                : OL_DEVICE_TYPE_GPU);
  ol_platform_handle_t p = NULL;
  OLC_OK(olGetDeviceInfo(olc_dev, OL_DEVICE_INFO_PLATFORM, sizeof p, &p));
  ol_platform_backend_t b = OL_PLATFORM_BACKEND_UNKNOWN;
  OLC_OK(olGetPlatformInfo(p, OL_PLATFORM_INFO_BACKEND, sizeof b, &b));
  OLC_EQ(b, olc_on_host ? OL_PLATFORM_BACKEND_HOST : olc_backend);
  /* the host device is there beside any GPU */
  t = OL_DEVICE_TYPE_ALL;
  OLC_OK(olGetDeviceInfo(olc_host, OL_DEVICE_INFO_TYPE, sizeof t, &t));
  OLC_EQ(t, OL_DEVICE_TYPE_HOST);
}

/* Limits every device must report sensibly. */
static void test_limits_sane(void) {
  uint32_t max = 0;
  OLC_OK(olGetDeviceInfo(olc_dev, OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE, sizeof max, &max));
  OLC_TRUE(max >= 64 && max <= 4096);
  uint32_t cu = 0;
  OLC_OK(olGetDeviceInfo(olc_dev, OL_DEVICE_INFO_NUM_COMPUTE_UNITS, sizeof cu, &cu));
  OLC_TRUE(cu > 0);
  uint64_t mem = 0;
  OLC_OK(olGetDeviceInfo(olc_dev, OL_DEVICE_INFO_GLOBAL_MEM_SIZE, sizeof mem, &mem));
  OLC_TRUE(mem > 0);
}

static void test_launch_limits(void) {
  OLC_ONLY(OLC_HOST, "the host device's own limits (group sizes, 1 MiB local memory, CPU count)");
  uint32_t max = 0;
  OLC_OK(olGetDeviceInfo(olc_dev, OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE, sizeof max, &max));
  OLC_EQ(max, 1024);
  ol_dimensions_t d = {0, 0, 0};
  OLC_OK(olGetDeviceInfo(olc_dev, OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION, sizeof d, &d));
  OLC_EQ(d.x, 1024);
  OLC_EQ(d.y, 1024);
  OLC_EQ(d.z, 64);
  uint64_t local = 0;
  OLC_OK(olGetDeviceInfo(olc_dev, OL_DEVICE_INFO_WORK_GROUP_LOCAL_MEM_SIZE, sizeof local, &local));
  OLC_EQ(local, 1u << 20);
  uint32_t cu = 0;
  OLC_OK(olGetDeviceInfo(olc_dev, OL_DEVICE_INFO_NUM_COMPUTE_UNITS, sizeof cu, &cu));
  OLC_EQ(cu, (uint32_t)sysconf(_SC_NPROCESSORS_ONLN));
  uint32_t bits = 0;
  OLC_OK(olGetDeviceInfo(olc_dev, OL_DEVICE_INFO_ADDRESS_BITS, sizeof bits, &bits));
  OLC_EQ(bits, 64);
  uint64_t mem = 0;
  OLC_OK(olGetDeviceInfo(olc_dev, OL_DEVICE_INFO_GLOBAL_MEM_SIZE, sizeof mem, &mem));
  uint64_t phys = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
  /* /proc/meminfo and sysconf agree to within a few percent */
  OLC_TRUE(mem > phys / 2 && mem <= phys * 2);
}

static void test_strings(void) {
  static const ol_device_info_t props[] = {OL_DEVICE_INFO_NAME, OL_DEVICE_INFO_PRODUCT_NAME,
                                           OL_DEVICE_INFO_UID, OL_DEVICE_INFO_VENDOR,
                                           OL_DEVICE_INFO_DRIVER_VERSION};
  for (size_t i = 0; i < sizeof props / sizeof props[0]; i++) {
    size_t n = 0;
    OLC_OK(olGetDeviceInfoSize(olc_dev, props[i], &n));
    OLC_TRUE(n > 1 && n < 4096);
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    OLC_OK(olGetDeviceInfo(olc_dev, props[i], n, buf));
    OLC_EQ(strlen(buf) + 1, n);
  }
  OLC_ONLY(OLC_HOST, "its UID is \"HOST\"");
  char uid[8] = {0};
  OLC_OK(olGetDeviceInfo(olc_dev, OL_DEVICE_INFO_UID, sizeof uid, uid));
  OLC_TRUE(strcmp(uid, "HOST") == 0);
}

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    OLC_RUN(test_device_found);
    OLC_RUN(test_limits_sane);
    OLC_RUN(test_launch_limits);
    OLC_RUN(test_strings);
  }
  return olc_finish("device");
}
