/* A fixed sequence of calls that LLVM 22.1's library survives; run with
 * OFFLOAD_TRACE=1 by compare_trace.sh, which compares the stderr of our
 * library and of LLVM's.  Every buffer is initialised first because failed
 * Info calls still print the (unchanged) buffer contents.  Results are
 * written to stdout only; exit status 1 if a call did not behave. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <OffloadAPI.h>

static int bad;

static void expect(ol_result_t r, unsigned code, const char *what) {
  unsigned got = r ? (unsigned)r->Code : 0u;
  if (got != code) {
    printf("trace_prog: %s: expected code %u, got %u\n", what, code, got);
    bad = 1;
  }
}

static bool last_cb(ol_device_handle_t d, void *ud) {
  *(ol_device_handle_t *)ud = d;
  return true;
}

int main(void) {
  ol_device_handle_t dev = NULL;
  ol_platform_handle_t plat = NULL;
  ol_device_type_t type = OL_DEVICE_TYPE_HOST;
  ol_platform_backend_t backend = OL_PLATFORM_BACKEND_UNKNOWN;
  size_t size = 0;
  char name[512];
  char text[32];
  int x = 7;
  uint32_t src = 0x01020304, dst = 0;

  memset(name, 0, sizeof name);
  memset(text, 0, sizeof text);

  expect(olInit(), 0, "olInit");
  expect(olInit(), 0, "nested olInit");
  expect(olShutDown(), 0, "nested olShutDown");
  expect(olIterateDevices(last_cb, &dev), 0, "olIterateDevices");
  expect(olGetDeviceInfo(dev, OL_DEVICE_INFO_TYPE, sizeof type, &type), 0,
         "TYPE");
  expect(olGetDeviceInfoSize(dev, OL_DEVICE_INFO_NAME, &size), 0, "NAME size");
  if (size > sizeof name)
    size = sizeof name;
  expect(olGetDeviceInfo(dev, OL_DEVICE_INFO_NAME, size, name), 0, "NAME");
  expect(olGetDeviceInfoSize(dev, OL_DEVICE_INFO_UID, &size), 0, "UID size");
  expect(olGetDeviceInfo(dev, OL_DEVICE_INFO_UID, sizeof text, text), 0, "UID");
  expect(olGetDeviceInfo(dev, OL_DEVICE_INFO_PLATFORM, sizeof plat, &plat), 0,
         "PLATFORM");
  memset(text, 0, sizeof text);
  expect(olGetPlatformInfo(plat, OL_PLATFORM_INFO_NAME, sizeof text, text), 0,
         "platform NAME");
  expect(olGetPlatformInfo(plat, OL_PLATFORM_INFO_BACKEND, sizeof backend,
                           &backend),
         0, "BACKEND");
  /* errors */
  expect(olGetDeviceInfo(NULL, OL_DEVICE_INFO_TYPE, sizeof type, &type),
         OL_ERRC_INVALID_NULL_HANDLE, "NULL device");
  expect(olGetDeviceInfo(dev, OL_DEVICE_INFO_TYPE, 0, &type),
         OL_ERRC_INVALID_SIZE, "PropSize 0");
  expect(olGetDeviceInfo(dev, OL_DEVICE_INFO_TYPE, 2, &type),
         OL_ERRC_INVALID_SIZE, "PropSize too small");
  expect(olGetDeviceInfoSize(dev, OL_DEVICE_INFO_TYPE, NULL),
         OL_ERRC_INVALID_NULL_POINTER, "NULL PropSizeRet");
  expect(olGetPlatformInfo(NULL, OL_PLATFORM_INFO_NAME, sizeof text, text),
         OL_ERRC_INVALID_NULL_HANDLE, "NULL platform");
  expect(olMemFree(&x), OL_ERRC_INVALID_ARGUMENT, "olMemFree(bad)");
  expect(olMemFree(NULL), OL_ERRC_INVALID_NULL_POINTER, "olMemFree(NULL)");
  size = 0;
  expect(olGetMemInfo(&x, OL_MEM_INFO_SIZE, sizeof size, &size),
         OL_ERRC_NOT_FOUND, "olGetMemInfo(unknown)");
  expect(olMemcpy(NULL, &dst, dev, &src, dev, sizeof src), 0, "olMemcpy");
  expect(olMemcpy(NULL, NULL, NULL, NULL, NULL, 4), OL_ERRC_INVALID_NULL_HANDLE,
         "olMemcpy(NULL)");
  /* validation failures of other entry points: their parameter printing
   * (structs, strings, enums, arrays) is compared as well */
  {
    ol_kernel_launch_size_args_t ls = {3, {4, 5, 6}, {7, 8, 9}, 16};
    ol_event_handle_t evs[2] = {NULL, NULL};
    ol_symbol_handle_t sym = NULL;
    ol_program_handle_t prog = NULL;
    ol_queue_handle_t queue = NULL;
    ol_event_handle_t event = NULL;
    void *alloc = NULL;
    bool valid = false;
    size_t group = 0;
    unsigned char pat[4] = {1, 2, 3, 4};
    ol_code_location_t loc = {"main", "trace_prog.c", 1, 1};
    (void)loc;
    expect(olLaunchKernel(NULL, dev, NULL, NULL, 8, &ls),
           OL_ERRC_INVALID_ARGUMENT, "olLaunchKernel");
    expect(olLaunchKernel(NULL, dev, NULL, &x, sizeof x, &ls),
           OL_ERRC_INVALID_NULL_HANDLE, "olLaunchKernel(NULL kernel)");
    expect(olCalculateOptimalOccupancy(dev, NULL, 64, &group),
           OL_ERRC_INVALID_NULL_HANDLE, "olCalculateOptimalOccupancy");
    expect(olGetSymbol(NULL, "some_kernel", OL_SYMBOL_KIND_KERNEL, &sym),
           OL_ERRC_INVALID_NULL_HANDLE, "olGetSymbol");
    expect(olGetSymbolInfo(NULL, OL_SYMBOL_INFO_KIND, 4, &x),
           OL_ERRC_INVALID_NULL_HANDLE, "olGetSymbolInfo");
    expect(olCreateProgram(dev, NULL, 16, &prog), OL_ERRC_INVALID_NULL_POINTER,
           "olCreateProgram");
    expect(olIsValidBinary(dev, pat, sizeof pat, &valid), 0, "olIsValidBinary");
    expect(olDestroyProgram(NULL), OL_ERRC_INVALID_NULL_HANDLE,
           "olDestroyProgram");
    expect(olCreateQueue(dev, NULL), OL_ERRC_INVALID_NULL_POINTER,
           "olCreateQueue");
    expect(olCreateQueue(NULL, &queue), OL_ERRC_INVALID_NULL_HANDLE,
           "olCreateQueue(NULL)");
    expect(olWaitEvents(NULL, evs, 2), OL_ERRC_INVALID_NULL_HANDLE,
           "olWaitEvents");
    expect(olCreateEvent(NULL, &event), OL_ERRC_INVALID_NULL_HANDLE,
           "olCreateEvent");
    expect(olGetEventInfo(NULL, OL_EVENT_INFO_IS_COMPLETE, 1, &valid),
           OL_ERRC_INVALID_NULL_HANDLE, "olGetEventInfo");
    expect(olGetQueueInfoSize(NULL, OL_QUEUE_INFO_EMPTY, &size),
           OL_ERRC_INVALID_NULL_HANDLE, "olGetQueueInfoSize");
    expect(olMemAlloc(dev, OL_ALLOC_TYPE_MANAGED, 0, &alloc),
           OL_ERRC_INVALID_SIZE, "olMemAlloc");
    expect(olMemFill(NULL, NULL, 4, pat, 6), OL_ERRC_INVALID_SIZE,
           "olMemFill");
    expect(olMemRegister(dev, NULL, 64, 0, &alloc),
           OL_ERRC_INVALID_NULL_POINTER, "olMemRegister");
    expect(olMemUnregister(NULL, &x), OL_ERRC_INVALID_NULL_HANDLE,
           "olMemUnregister");
    expect(olGetMemInfoSize(&x, OL_MEM_INFO_TYPE, &size), OL_ERRC_NOT_FOUND,
           "olGetMemInfoSize");
    expect(olGetDeviceInfo(dev, OL_DEVICE_INFO_FORCE_UINT32, sizeof type, &type),
           OL_ERRC_INVALID_ENUMERATION, "bad enum");
    expect(olIterateDevices(NULL, &x), OL_ERRC_INVALID_NULL_POINTER,
           "olIterateDevices(NULL)");
    /* a NULL code location adds nothing to the trace */
    expect(olGetDeviceInfoWithCodeLoc(dev, OL_DEVICE_INFO_TYPE, sizeof type,
                                      &type, NULL),
           0, "WithCodeLoc(NULL)");
  }
  expect(olShutDown(), 0, "olShutDown");

  if (dst != src) {
    printf("trace_prog: olMemcpy did not copy\n");
    bad = 1;
  }
  printf("trace_prog: %s\n", bad ? "FAILED" : "ok");
  return bad;
}
