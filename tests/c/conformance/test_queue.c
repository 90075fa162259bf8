/* Queue entry points: validation-layer errors (no queue can be created on
 * LLVM 22.1's host device, so non-NULL stand-in handles only reach the
 * validation layer and never the implementation). */
#include "oldevices.h"

static ol_device_handle_t dev;
#define FAKE_QUEUE ((ol_queue_handle_t)0x10)
#define FAKE_EVENT ((ol_event_handle_t)0x20)

static void host_fn(void *p) { (void)p; }

static void test_create_queue(void) {
  ol_queue_handle_t q = (ol_queue_handle_t)0x55;
  OLC_ERR(olCreateQueue(NULL, NULL), OL_ERRC_INVALID_NULL_HANDLE,
          OLC_VF("NULL == Device"));
  OLC_ERR(olCreateQueue(NULL, &q), OL_ERRC_INVALID_NULL_HANDLE,
          OLC_VF("NULL == Device"));
  OLC_ERR(olCreateQueue(dev, NULL), OL_ERRC_INVALID_NULL_POINTER,
          OLC_VF("NULL == Queue"));
  OLC_PTR_EQ(q, (ol_queue_handle_t)0x55);
  ol_code_location_t loc = {"cq", __FILE__, __LINE__, 1};
  OLC_ERR(olCreateQueueWithCodeLoc(dev, NULL, &loc),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Queue"));
}

static void test_destroy_sync_queue(void) {
  OLC_ERR(olDestroyQueue(NULL), OL_ERRC_INVALID_NULL_HANDLE,
          OLC_VF("NULL == Queue"));
  OLC_ERR(olSyncQueue(NULL), OL_ERRC_INVALID_NULL_HANDLE,
          OLC_VF("NULL == Queue"));
  ol_code_location_t loc = {"dq", __FILE__, __LINE__, 1};
  OLC_ERR(olDestroyQueueWithCodeLoc(NULL, &loc), OL_ERRC_INVALID_NULL_HANDLE,
          OLC_VF("NULL == Queue"));
  OLC_ERR(olSyncQueueWithCodeLoc(NULL, &loc), OL_ERRC_INVALID_NULL_HANDLE,
          OLC_VF("NULL == Queue"));
}

static void test_wait_events(void) {
  ol_event_handle_t evs[2] = {FAKE_EVENT, FAKE_EVENT};
  OLC_ERR(olWaitEvents(NULL, NULL, 0), OL_ERRC_INVALID_NULL_HANDLE,
          OLC_VF("NULL == Queue"));
  OLC_ERR(olWaitEvents(NULL, evs, 2), OL_ERRC_INVALID_NULL_HANDLE,
          OLC_VF("NULL == Queue"));
  /* a NULL array is rejected even when NumEvents is 0 */
  OLC_ERR(olWaitEvents(FAKE_QUEUE, NULL, 0), OL_ERRC_INVALID_NULL_POINTER,
          OLC_VF("NULL == Events"));
  OLC_ERR(olWaitEvents(FAKE_QUEUE, NULL, 3), OL_ERRC_INVALID_NULL_POINTER,
          OLC_VF("NULL == Events"));
  ol_code_location_t loc = {"we", __FILE__, __LINE__, 1};
  OLC_ERR(olWaitEventsWithCodeLoc(FAKE_QUEUE, NULL, 0, &loc),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Events"));
}

static void test_queue_info(void) {
  unsigned char buf[16];
  size_t sz = 5;
  OLC_ERR(olGetQueueInfo(NULL, OL_QUEUE_INFO_DEVICE, 0, NULL),
          OL_ERRC_INVALID_SIZE, OLC_VF("PropSize == 0"));
  OLC_ERR(olGetQueueInfo(FAKE_QUEUE, OL_QUEUE_INFO_EMPTY, 0, buf),
          OL_ERRC_INVALID_SIZE, OLC_VF("PropSize == 0"));
  OLC_ERR(olGetQueueInfo(NULL, OL_QUEUE_INFO_DEVICE, 8, NULL),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Queue"));
  OLC_ERR(olGetQueueInfo(NULL, OL_QUEUE_INFO_FORCE_UINT32, 8, buf),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Queue"));
  OLC_ERR(olGetQueueInfo(FAKE_QUEUE, OL_QUEUE_INFO_DEVICE, 8, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == PropValue"));
  OLC_ERR(olGetQueueInfoSize(NULL, OL_QUEUE_INFO_DEVICE, NULL),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Queue"));
  OLC_ERR(olGetQueueInfoSize(NULL, OL_QUEUE_INFO_DEVICE, &sz),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Queue"));
  OLC_ERR(olGetQueueInfoSize(FAKE_QUEUE, OL_QUEUE_INFO_EMPTY, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == PropSizeRet"));
  OLC_EQ(sz, 5);
  ol_code_location_t loc = {"qi", __FILE__, __LINE__, 1};
  OLC_ERR(olGetQueueInfoWithCodeLoc(NULL, OL_QUEUE_INFO_DEVICE, 8, buf, &loc),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Queue"));
  OLC_ERR(olGetQueueInfoSizeWithCodeLoc(FAKE_QUEUE, OL_QUEUE_INFO_DEVICE,
                                        NULL, &loc),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == PropSizeRet"));
}

static void test_launch_host_function(void) {
  OLC_ERR(olLaunchHostFunction(NULL, NULL, NULL), OL_ERRC_INVALID_NULL_HANDLE,
          OLC_VF("NULL == Queue"));
  OLC_ERR(olLaunchHostFunction(NULL, host_fn, NULL),
          OL_ERRC_INVALID_NULL_HANDLE, OLC_VF("NULL == Queue"));
  OLC_ERR(olLaunchHostFunction(FAKE_QUEUE, NULL, NULL),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Callback"));
  OLC_ERR(olLaunchHostFunction(FAKE_QUEUE, NULL, &dev),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Callback"));
  ol_code_location_t loc = {"lhf", __FILE__, __LINE__, 1};
  OLC_ERR(olLaunchHostFunctionWithCodeLoc(FAKE_QUEUE, NULL, NULL, &loc),
          OL_ERRC_INVALID_NULL_POINTER, OLC_VF("NULL == Callback"));
}

/* ---------------- only our library (LLVM crashes) ----------------------- */

static void ours_bad_queue_handles(void) {
  const char *garbage = "Queue (0x1234) is not a valid queue handle";
  ol_queue_handle_t g = (ol_queue_handle_t)0x1234;
  unsigned char buf[16];
  size_t sz = 3;
  ol_event_handle_t ev = NULL;
  OLC_ERR(olSyncQueue(g), OL_ERRC_INVALID_QUEUE, garbage);
  OLC_ERR(olDestroyQueue(g), OL_ERRC_INVALID_QUEUE, garbage);
  OLC_ERR(olGetQueueInfo(g, OL_QUEUE_INFO_DEVICE, 8, buf),
          OL_ERRC_INVALID_QUEUE, garbage);
  OLC_ERR(olGetQueueInfoSize(g, OL_QUEUE_INFO_DEVICE, &sz),
          OL_ERRC_INVALID_QUEUE, garbage);
  OLC_EQ(sz, 3);
  OLC_ERR(olLaunchHostFunction(g, host_fn, NULL), OL_ERRC_INVALID_QUEUE,
          garbage);
  OLC_ERR(olWaitEvents(g, &ev, 0), OL_ERRC_INVALID_QUEUE, garbage);
  OLC_ERR(olCreateEvent(g, &ev), OL_ERRC_INVALID_QUEUE, garbage);
  OLC_PTR_EQ(ev, NULL);

  /* a device handle where a queue is expected */
  char want[128];
  snprintf(want, sizeof want,
           "Queue (0x%" PRIxPTR ") is a device handle, not a queue handle",
           (uintptr_t)dev);
  OLC_ERR(olSyncQueue((ol_queue_handle_t)dev), OL_ERRC_INVALID_QUEUE, want);
  OLC_ERR(olDestroyQueue((ol_queue_handle_t)dev), OL_ERRC_INVALID_QUEUE,
          want);
  /* and the garbage device for olCreateQueue */
  ol_queue_handle_t q = NULL;
  OLC_ERR(olCreateQueue((ol_device_handle_t)0x1234, &q),
          OL_ERRC_INVALID_DEVICE,
          "Device (0x1234) is not a valid device handle");
  OLC_PTR_EQ(q, NULL);
  /* the device handle must still work afterwards */
  ol_device_type_t t = OL_DEVICE_TYPE_FORCE_UINT32;
  OLC_OK(olGetDeviceInfo(dev, OL_DEVICE_INFO_TYPE, 4, &t));
  OLC_EQ(t, OL_DEVICE_TYPE_HOST);
}

int main(void) {
  OLC_OK(olInit());
  dev = olc_host_device();
  OLC_TRUE(dev != NULL);
  if (dev) {
    OLC_RUN(test_create_queue);
    OLC_RUN(test_destroy_sync_queue);
    OLC_RUN(test_wait_events);
    OLC_RUN(test_queue_info);
    OLC_RUN(test_launch_host_function);
    OLC_RUN_ON(ours_bad_queue_handles, OLC_OURS, "LLVM 22.1 dereferences invalid handles and crashes");
  }
  OLC_OK(olShutDown());
  return olc_summary("queue");
}
