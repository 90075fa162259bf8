/* A proxy that dies with work queued (docs/remote.md, "How errors look"):
 * the first selected device must be a remote host device (the job is
 * -np 1 this : -np 2 offload-proxy, OFFLOAD_TEST_DEVICES=host:1,host:2).
 * A kernel that kills its process runs on the first; then work queued on
 * it fails at the next sync, within OFFLOAD_REMOTE_TIMEOUT, with an error
 * that names the proxy's rank; later calls on its devices fail at once;
 * the other proxy's device and the local host device keep working; and
 * olShutDown completes. Not part of the device suite (it kills a proxy).
 * SPDX-License-Identifier: Apache-2.0 */
#include "remotelost.h"

static void test_dead_proxy(void) {
  if (!olc_remote) {
    olc_fail(__FILE__, __LINE__, "the first device must be a remote device (OFFLOAD_TEST_DEVICES)");
    return;
  }
  ol_device_handle_t dead = olc_dev;
  ol_program_handle_t p = olc_program("fx_killproc");
  ol_symbol_handle_t k = p ? olc_kernel(p, "kill_process") : NULL;
  void *mem = olc_alloc(OL_ALLOC_TYPE_DEVICE, 4096);
  if (!k || !mem)
    return;
  ol_queue_handle_t q = olc_queue();
  ol_kernel_launch_size_args_t l = olc_size1(1, 1);
  OLC_OK(olLaunchKernel(q, dead, k, NULL, 0, &l));
  /* queued after the kernel that kills the proxy */
  uint8_t pat = 7;
  OLC_OK(olMemFill(q, mem, 1, &pat, 4096));
  double t0 = olc_now_ms();
  OLC_ERR_HAS(olSyncQueue(q), OL_ERRC_BACKEND_FAILURE, "remote rank 1");
  double took = olc_now_ms() - t0;
  OLC_CHECK(took < 5 * REMOTE_TIMEOUT_MS, "the sync took %.0f ms with OFFLOAD_REMOTE_TIMEOUT=%d ms", took,
            REMOTE_TIMEOUT_MS);
  /* later calls on the dead proxy's device fail at once, naming it */
  void *m2 = NULL;
  t0 = olc_now_ms();
  OLC_ERR_HAS(olMemAlloc(dead, OL_ALLOC_TYPE_DEVICE, 64, &m2), OL_ERRC_BACKEND_FAILURE, "remote rank 1");
  took = olc_now_ms() - t0;
  OLC_CHECK(took < REMOTE_TIMEOUT_MS, "a call on a lost proxy waited %.0f ms", took);
  /* its objects can still be released */
  OLC_OK(olDestroyQueue(q));
  olMemFree(mem);
  olDestroyProgram(p);
  /* the other proxy and the local host device keep working */
  others_keep_working(dead);
}

int main(int argc, char **argv) {
  set_remote_timeout();
  olc_start(argc, argv);
  if (olc_next_device())
    OLC_RUN(test_dead_proxy);
  /* olc_finish's olShutDown must complete with a proxy gone */
  return olc_finish("remotefault");
}
