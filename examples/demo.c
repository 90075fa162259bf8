// demo: lists every platform and device with its key properties, then
// round-trips a buffer through memory of the host device with olMemcpy.
// Build: cc -std=c17 -I include/offload examples/demo.c -L build/lib -l:libLLVMOffload.so.22.1
#include <OffloadAPI.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                            \
  do {                                                                         \
    ol_result_t r_ = (call);                                                   \
    if (r_ != OL_SUCCESS) {                                                    \
      fprintf(stderr, "%s failed: code %d: %s\n", #call, (int)r_->Code,        \
              r_->Details ? r_->Details : "");                                 \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

typedef struct {
  int count;
  ol_device_handle_t host;
} demo_state;

static const char *backend_name(ol_platform_backend_t b) {
  switch (b) {
  case OL_PLATFORM_BACKEND_CUDA: return "CUDA";
  case OL_PLATFORM_BACKEND_AMDGPU: return "AMDGPU";
  case OL_PLATFORM_BACKEND_LEVEL_ZERO: return "Level Zero";
  case OL_PLATFORM_BACKEND_HOST: return "host";
  default: return "unknown";
  }
}

static void print_string(ol_device_handle_t d, ol_device_info_t prop, const char *label) {
  size_t size = 0;
  CHECK(olGetDeviceInfoSize(d, prop, &size));
  char *s = malloc(size);
  CHECK(olGetDeviceInfo(d, prop, size, s));
  printf("    %-22s %s\n", label, s);
  free(s);
}

static bool show_device(ol_device_handle_t d, void *user) {
  demo_state *st = user;
  ol_platform_handle_t p;
  ol_platform_backend_t backend;
  char pname[64];
  CHECK(olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, sizeof p, &p));
  CHECK(olGetPlatformInfo(p, OL_PLATFORM_INFO_NAME, sizeof pname, pname));
  CHECK(olGetPlatformInfo(p, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend));
  printf("device %d on platform \"%s\" (backend %s)\n", st->count++, pname, backend_name(backend));
  print_string(d, OL_DEVICE_INFO_NAME, "name");
  print_string(d, OL_DEVICE_INFO_VENDOR, "vendor");
  print_string(d, OL_DEVICE_INFO_DRIVER_VERSION, "driver");
  uint32_t units, clock, wg, vf;
  uint64_t mem, local;
  ol_dimensions_t dims;
  CHECK(olGetDeviceInfo(d, OL_DEVICE_INFO_NUM_COMPUTE_UNITS, sizeof units, &units));
  CHECK(olGetDeviceInfo(d, OL_DEVICE_INFO_MAX_CLOCK_FREQUENCY, sizeof clock, &clock));
  CHECK(olGetDeviceInfo(d, OL_DEVICE_INFO_GLOBAL_MEM_SIZE, sizeof mem, &mem));
  CHECK(olGetDeviceInfo(d, OL_DEVICE_INFO_WORK_GROUP_LOCAL_MEM_SIZE, sizeof local, &local));
  CHECK(olGetDeviceInfo(d, OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE, sizeof wg, &wg));
  CHECK(olGetDeviceInfo(d, OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION, sizeof dims, &dims));
  CHECK(olGetDeviceInfo(d, OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_FLOAT, sizeof vf, &vf));
  printf("    %-22s %u\n", "compute units", units);
  printf("    %-22s %u MHz\n", "max clock", clock);
  printf("    %-22s %.1f GiB\n", "global memory", mem / (1024.0 * 1024 * 1024));
  printf("    %-22s %llu KiB\n", "group-local memory", (unsigned long long)(local / 1024));
  printf("    %-22s %u (%u x %u x %u)\n", "max work-group size", wg, dims.x, dims.y, dims.z);
  printf("    %-22s %u\n", "float vector width", vf);
  ol_device_type_t type;
  CHECK(olGetDeviceInfo(d, OL_DEVICE_INFO_TYPE, sizeof type, &type));
  if (type == OL_DEVICE_TYPE_HOST) st->host = d;
  return true;
}

int main(void) {
  CHECK(olInit());
  demo_state st = {0, NULL};
  CHECK(olIterateDevices(show_device, &st));
  if (st.host == NULL) {
    fprintf(stderr, "no host device\n");
    return 1;
  }

  enum { N = 1 << 20 };
  unsigned char *src = malloc(N), *back = calloc(1, N);
  for (size_t i = 0; i < N; i++) src[i] = (unsigned char)(i * 7 + 3);
  void *dev = NULL;
  CHECK(olMemAlloc(st.host, OL_ALLOC_TYPE_DEVICE, N, &dev));
  CHECK(olMemcpy(NULL, dev, st.host, src, st.host, N));
  CHECK(olMemcpy(NULL, back, st.host, dev, st.host, N));
  int same = memcmp(src, back, N) == 0;
  printf("round trip of %d bytes through host device memory: %s\n", N, same ? "OK" : "MISMATCH");
  CHECK(olMemFree(dev));
  free(src);
  free(back);
  CHECK(olShutDown());
  return same ? 0 : 1;
}
