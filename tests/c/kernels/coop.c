// coop: not one of LLVM's images. A grid barrier test for cooperative
// launches (1-D grids). In each of `rounds` rounds every work-item writes
// its slot, waits at ol_grid_barrier(), adds the slot of the work-item one
// group further on (wrapping) to its out, and waits again before the next
// round overwrites the slots. With n = the grid's work-items and g = the
// group size, out[i] ends (out starting at 0) at
//   rounds * ((i + g) % n + 1) + n * rounds * (rounds - 1) / 2
// which is only right if every group's writes came before the reads: a
// slot read too early holds the previous round's value (or 0).
// coop_phased is the phased form, coop_group the same as a group kernel.
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

struct coop_args {
  uint32_t *slots; // n
  uint32_t *out;   // n, zeroed
  uint32_t rounds;
};

OL_PHASED_KERNEL(coop_phased, struct coop_args, a) {
  for (uint32_t r = 0; r < a.rounds; r++) {
    OL_FOR_ITEMS {
      uint32_t i = ol_global_id(0);
      a.slots[i] = r * ol_global_size(0) + i + 1;
    }
    ol_grid_barrier();
    OL_FOR_ITEMS {
      uint32_t i = ol_global_id(0);
      a.out[i] += a.slots[(i + ol_group_size(0)) % ol_global_size(0)];
    }
    ol_grid_barrier();
  }
}

OL_GROUP_KERNEL(coop_group, struct coop_args, a) {
  uint32_t i = ol_global_id(0), n = ol_global_size(0);
  for (uint32_t r = 0; r < a.rounds; r++) {
    a.slots[i] = r * n + i + 1;
    ol_grid_barrier();
    a.out[i] += a.slots[(i + ol_group_size(0)) % n];
    ol_grid_barrier();
  }
}
