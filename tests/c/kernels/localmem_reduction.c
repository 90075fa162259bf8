// localmem_reduction: tree sum of each group's inputs in dynamic group
// memory with barriers; work-item 0 writes the group's total.
// The group size must be a power of two.
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

struct reduction_args {
  const uint32_t *in;
  uint32_t *out; // one entry per group
};

OL_GROUP_KERNEL(localmem_reduction, struct reduction_args, a) {
  uint32_t *acc = (uint32_t *)ol_dyn_shared();
  uint32_t t = ol_thread_id(0);
  acc[t] = a.in[ol_global_id(0)];
  ol_barrier();
  for (uint32_t half = ol_group_size(0) / 2; half > 0; half /= 2) {
    if (t < half)
      acc[t] += acc[t + half];
    ol_barrier();
  }
  if (t == 0)
    a.out[ol_group_id(0)] = acc[0];
}
