// global_dtor: a destructor that runs when the program is unloaded. The
// host stores a pointer in dtor_target; the destructor writes 64 values
// (i + 200) through it, and adds the kernel's run count at the end.
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

OL_GLOBAL uint32_t *dtor_target;
OL_GLOBAL uint32_t dtor_kernel_runs;

__attribute__((destructor)) static void write_target(void) {
  if (!dtor_target)
    return;
  for (uint32_t i = 0; i < 64; i++)
    dtor_target[i] = i + 200u;
  dtor_target[64] = dtor_kernel_runs;
}

struct dtor_args {
  uint32_t unused;
};

OL_KERNEL(global_dtor, struct dtor_args, a) {
  (void)a;
  __atomic_fetch_add(&dtor_kernel_runs, 1u, __ATOMIC_RELAXED);
}
