// localmem: each work-item uses its own slot of the launch's dynamic
// group memory, so no barrier is needed.
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

struct localmem_args {
  uint32_t *out;
};

OL_KERNEL(localmem, struct localmem_args, a) {
  uint32_t *slots = (uint32_t *)ol_dyn_shared();
  uint32_t t = ol_thread_id(0);
  slots[t] = t * 2u + ol_group_id(0);
  a.out[ol_global_id(0)] = slots[t] + 1u;
}
