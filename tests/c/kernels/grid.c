// grid: not one of LLVM's images. Every work-item of a 1-, 2- or 3-D launch
// counts a hit at its linear global index and checks its own indices
// against the launch; `grid` is a plain kernel, `grid_group` runs the same
// body as a group kernel (one stack per work-item, with a barrier).
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

struct grid_args {
  uint32_t *hits; // one counter per work-item of the grid
  uint32_t *bad;  // work-items whose indices were out of range
};

#define GRID_BODY(a)                                                           \
  do {                                                                         \
    uint32_t ok = 1;                                                           \
    for (int d = 0; d < 3; d++) {                                              \
      ok &= ol_thread_id(d) < ol_group_size(d);                                \
      ok &= ol_group_id(d) < ol_num_groups(d);                                 \
      ok &= ol_global_id(d) < ol_global_size(d);                               \
    }                                                                          \
    uint64_t lin = ((uint64_t)ol_global_id(2) * ol_global_size(1) +            \
                    ol_global_id(1)) * ol_global_size(0) + ol_global_id(0);    \
    if (!ok)                                                                   \
      __atomic_fetch_add((a).bad, 1u, __ATOMIC_RELAXED);                       \
    else                                                                       \
      __atomic_fetch_add(&(a).hits[lin], 1u, __ATOMIC_RELAXED);                \
  } while (0)

OL_KERNEL(grid, struct grid_args, a) { GRID_BODY(a); }

OL_GROUP_KERNEL(grid_group, struct grid_args, a) {
  ol_barrier();
  GRID_BODY(a);
}
