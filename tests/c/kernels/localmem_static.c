// localmem_static: static group memory. Each group stores its inputs, waits
// at a barrier, and every work-item reads its mirror slot, so the group's
// values come out reversed. Work-item 0 also writes the group's sum.
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

struct static_args {
  const uint32_t *in;
  uint32_t *out;
  uint32_t *sums; // one entry per group
};

OL_GROUP_KERNEL(localmem_static, struct static_args, a) {
  OL_GROUP_LOCAL(uint32_t, tile[1024]);
  uint32_t t = ol_thread_id(0);
  uint32_t n = ol_group_size(0);
  tile[t] = a.in[ol_global_id(0)];
  ol_barrier();
  uint32_t mirror = tile[n - 1 - t];
  if (t == 0) {
    uint32_t s = 0;
    for (uint32_t i = 0; i < n; i++)
      s += tile[i];
    a.sums[ol_group_id(0)] = s;
  }
  ol_barrier();
  a.out[ol_global_id(0)] = mirror;
}
