// single_counter: every work-item atomically adds one to a single counter.
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

struct counter_args {
  uint32_t *counter;
};

OL_KERNEL(single_counter, struct counter_args, a) {
  __atomic_fetch_add(a.counter, 1u, __ATOMIC_RELAXED);
}
