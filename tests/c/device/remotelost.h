/* Shared by the fault tests of remote devices (remotefault, remotestall):
 * after one proxy is lost, the next remote device (the other proxy's) and
 * the local host device must keep working. */
#ifndef REMOTELOST_H
#define REMOTELOST_H

#include "oldevices.h"

/* OFFLOAD_REMOTE_TIMEOUT for these tests, in ms (set by
 * set_remote_timeout before olInit). Their time bounds are stated against
 * it: a call that waits for a lost proxy takes at least this long (the
 * client gives up on a proxy only after a whole timeout without a word
 * from it), so "at once" is "in less than one timeout"; a wait that
 * should end by the timeout is allowed 5 of them, the rest being margin
 * for a loaded machine (the detection itself takes up to 1.25: pings go
 * every quarter of the timeout). */
#define REMOTE_TIMEOUT_MS 2000

static void set_remote_timeout(void) {
  char v[32];
  snprintf(v, sizeof v, "%dms", REMOTE_TIMEOUT_MS);
  setenv("OFFLOAD_REMOTE_TIMEOUT", v, 1);
}

static void others_keep_working(ol_device_handle_t lost) {
  OLC_TRUE(olc_next_device());
  OLC_TRUE(olc_remote && olc_dev != lost);
  uint32_t v = 0x5a5a5a5a, back = 0;
  void *m = olc_alloc(OL_ALLOC_TYPE_DEVICE, sizeof v);
  if (m) {
    OLC_TRUE(olc_write(m, &v, sizeof v));
    OLC_TRUE(olc_read(&back, m, sizeof back));
    OLC_EQ(back, v);
    OLC_OK(olMemFree(m));
  }
  void *h = NULL;
  OLC_OK(olMemAlloc(olc_host, OL_ALLOC_TYPE_HOST, 64, &h));
  if (h)
    OLC_OK(olMemFree(h));
}

#endif
