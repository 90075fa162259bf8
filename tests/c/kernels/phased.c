// phased: kernels in the phased form (OL_PHASED_KERNEL): blocks of
// work-item code between barriers, per-work-item values kept across
// barriers (OL_PRIVATE), static and dynamic group memory, `continue` in a
// block, a loop with barriers in the group's code.
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

// Tree sum of each group's inputs in dynamic group memory; the group size
// must be a power of two. out[group] = the group's total.
struct phased_reduction_args {
  const uint32_t *in;
  uint32_t *out;
};

OL_PHASED_KERNEL(phased_reduction, struct phased_reduction_args, a) {
  uint32_t *acc = (uint32_t *)ol_dyn_shared();
  OL_FOR_ITEMS { acc[ol_thread_id(0)] = a.in[ol_global_id(0)]; }
  ol_barrier();
  for (uint32_t half = ol_group_size(0) / 2; half > 0; half /= 2) {
    OL_FOR_ITEMS {
      uint32_t t = ol_thread_id(0);
      if (t < half)
        acc[t] += acc[t + half];
    }
    ol_barrier();
  }
  OL_FOR_ITEMS {
    if (ol_thread_id(0) == 0)
      a.out[ol_group_id(0)] = acc[0];
  }
}

// Any grid (3D groups up to 1024 work-items). Each work-item w of a group of
// n starts with v = in[global linear id] and, for r < rounds, unless
// w % 3 == 0, adds the value that work-item (w + r + 1) % n held at the
// start of the round. out[global linear id] = v * 2 + group linear id.
struct phased_shuffle_args {
  const uint32_t *in;
  uint32_t *out;
  uint32_t rounds;
};

OL_PHASED_KERNEL(phased_shuffle, struct phased_shuffle_args, a) {
  OL_GROUP_LOCAL(uint32_t, slots[1024]);
  OL_PRIVATE(uint32_t, v);
  const uint32_t n = ol_group_size(0) * ol_group_size(1) * ol_group_size(2);
  const uint32_t group = (ol_group_id(2) * ol_num_groups(1) + ol_group_id(1)) * ol_num_groups(0) +
                         ol_group_id(0);
  OL_FOR_ITEMS {
    uint32_t w = (ol_thread_id(2) * ol_group_size(1) + ol_thread_id(1)) * ol_group_size(0) +
                 ol_thread_id(0);
    uint32_t g = (ol_global_id(2) * ol_global_size(1) + ol_global_id(1)) * ol_global_size(0) +
                 ol_global_id(0);
    ol_private(v) = a.in[g];
    slots[w] = ol_private(v);
  }
  for (uint32_t r = 0; r < a.rounds; r++) {
    ol_barrier();
    OL_FOR_ITEMS {
      uint32_t w = (ol_thread_id(2) * ol_group_size(1) + ol_thread_id(1)) * ol_group_size(0) +
                   ol_thread_id(0);
      if (w % 3 == 0)
        continue; // ends this work-item's block only
      ol_private(v) += slots[(w + r + 1) % n];
    }
    ol_barrier();
    OL_FOR_ITEMS {
      uint32_t w = (ol_thread_id(2) * ol_group_size(1) + ol_thread_id(1)) * ol_group_size(0) +
                   ol_thread_id(0);
      slots[w] = ol_private(v);
    }
  }
  OL_FOR_ITEMS {
    uint32_t g = (ol_global_id(2) * ol_global_size(1) + ol_global_id(1)) * ol_global_size(0) +
                 ol_global_id(0);
    a.out[g] = ol_private(v) * 2u + group;
  }
}
