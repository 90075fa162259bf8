/* Shared by the fault tests of remote devices (remotefault, remotestall):
 * after one proxy is lost, the next remote device (the other proxy's) and
 * the local host device must keep working. */
#ifndef REMOTELOST_H
#define REMOTELOST_H

#include "oldevices.h"

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
