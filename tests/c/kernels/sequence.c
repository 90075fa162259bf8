// sequence: one Fibonacci step, out[idx] = out[idx - 1] + out[idx - 2].
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

struct sequence_args {
  uint32_t *out;
  uint32_t idx;
};

OL_KERNEL(sequence, struct sequence_args, a) {
  if (ol_global_id(0) == 0)
    a.out[a.idx] = a.out[a.idx - 1] + a.out[a.idx - 2];
}
