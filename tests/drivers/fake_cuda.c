/*
 * fake_cuda.c - a driver double for the CUDA plugin's tests.
 *
 * It exports the CUDA driver API entry points the plugin resolves, with the
 * driver's C signatures, and answers them from made-up devices. The Go tests
 * build it with `cc -shared -fPIC` into a temporary directory and point
 * OFFLOAD_CUDA_LIBRARY at the result.
 *
 * Fault injection, read with getenv when each call is made:
 *   FAKE_CUDA_DEVICES=<n>          devices cuDeviceGetCount reports (default 0)
 *   FAKE_CUDA_INIT_RESULT=<code>   what cuInit returns (default 0, CUDA_SUCCESS)
 *   FAKE_CUDA_COUNT_RESULT=<code>  what cuDeviceGetCount returns (default 0)
 *   FAKE_CUDA_VERSION=<n>          cuDriverGetVersion's value (default 12040)
 *
 * A missing symbol cannot be simulated at run time (the dynamic symbol table
 * is fixed when the library is linked); the tests hide symbols at link time
 * with a version script instead (FAKE_CUDA_MISSING in the Go helper).
 *
 * Device i (0-based) has these properties:
 *   name "Fake CUDA GPU <i>", total memory (i+1) * 8 GiB,
 *   max threads per block 1024, block dims 1024/1024/64,
 *   grid dims 2147483647/65535/65535, 80 + i multiprocessors,
 *   clock 1530000 kHz, memory clock 877000 kHz, 48 KiB shared memory,
 *   UUID bytes 0xa0+i, 0x01, 0x02, ..., 0x0f, compute capability 8.0 for
 *   even i and 9.0 for odd i (sm_80, sm_90).
 *
 * fake_cuda_init_calls() returns how often cuInit was called, so tests can
 * check that the plugin initialises the driver only once.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct {
  char bytes[16];
} CUuuid;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_UNKNOWN = 999,
};

static int init_calls;
static int initialised;

static int env_int(const char *name, int fallback) {
  const char *v = getenv(name);
  if (v == NULL || *v == '\0')
    return fallback;
  return (int)strtol(v, NULL, 0);
}

static int num_devices(void) { return env_int("FAKE_CUDA_DEVICES", 0); }

static int valid_device(CUdevice dev) {
  return initialised && dev >= 0 && dev < num_devices();
}

int fake_cuda_init_calls(void) { return init_calls; }

CUresult cuInit(unsigned int flags) {
  init_calls++;
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r = env_int("FAKE_CUDA_INIT_RESULT", CUDA_SUCCESS);
  if (r == CUDA_SUCCESS)
    initialised = 1;
  return r;
}

CUresult cuDriverGetVersion(int *version) {
  if (version == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *version = env_int("FAKE_CUDA_VERSION", 12040);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  if (count == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = env_int("FAKE_CUDA_COUNT_RESULT", CUDA_SUCCESS);
  if (r != CUDA_SUCCESS)
    return r;
  *count = num_devices();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
  if (dev == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (ordinal < 0 || ordinal >= num_devices())
    return CUDA_ERROR_INVALID_DEVICE;
  *dev = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  if (name == NULL || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev))
    return CUDA_ERROR_INVALID_DEVICE;
  snprintf(name, (size_t)len, "Fake CUDA GPU %d", dev);
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  if (bytes == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev))
    return CUDA_ERROR_INVALID_DEVICE;
  *bytes = (size_t)(dev + 1) * ((size_t)8 << 30);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, int attr, CUdevice dev) {
  if (value == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev))
    return CUDA_ERROR_INVALID_DEVICE;
  switch (attr) {
  case 1: *value = 1024; break;        /* MAX_THREADS_PER_BLOCK */
  case 2: *value = 1024; break;        /* MAX_BLOCK_DIM_X */
  case 3: *value = 1024; break;        /* MAX_BLOCK_DIM_Y */
  case 4: *value = 64; break;          /* MAX_BLOCK_DIM_Z */
  case 5: *value = 2147483647; break;  /* MAX_GRID_DIM_X */
  case 6: *value = 65535; break;       /* MAX_GRID_DIM_Y */
  case 7: *value = 65535; break;       /* MAX_GRID_DIM_Z */
  case 8: *value = 49152; break;       /* MAX_SHARED_MEMORY_PER_BLOCK */
  case 13: *value = 1530000; break;    /* CLOCK_RATE, kHz */
  case 16: *value = 80 + dev; break;   /* MULTIPROCESSOR_COUNT */
  case 36: *value = 877000; break;     /* MEMORY_CLOCK_RATE, kHz */
  case 75: *value = dev % 2 ? 9 : 8; break; /* COMPUTE_CAPABILITY_MAJOR */
  case 76: *value = 0; break;          /* COMPUTE_CAPABILITY_MINOR */
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
  if (uuid == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev))
    return CUDA_ERROR_INVALID_DEVICE;
  for (int i = 0; i < 16; i++)
    uuid->bytes[i] = (char)i;
  uuid->bytes[0] = (char)(0xa0 + dev);
  return CUDA_SUCCESS;
}

static const char *error_name(CUresult r) {
  switch (r) {
  case CUDA_SUCCESS: return "CUDA_SUCCESS";
  case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
  case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
  case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
  case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
  case CUDA_ERROR_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
  case CUDA_ERROR_UNKNOWN: return "CUDA_ERROR_UNKNOWN";
  }
  return NULL;
}

CUresult cuGetErrorName(CUresult r, const char **name) {
  if (name == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *name = error_name(r);
  return *name ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult r, const char **text) {
  if (text == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  switch (r) {
  case CUDA_ERROR_NO_DEVICE: *text = "no CUDA-capable device is detected"; break;
  case CUDA_ERROR_UNKNOWN: *text = "unknown error"; break;
  default: *text = error_name(r); break;
  }
  return *text ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
