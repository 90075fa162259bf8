// noargs: a kernel without arguments. Each work-item bumps a counter in a
// program global so the host can see that it ran.
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

OL_GLOBAL uint32_t noargs_runs;

OL_KERNEL_NOARGS(noargs) {
  __atomic_fetch_add(&noargs_runs, 1u, __ATOMIC_RELAXED);
}
