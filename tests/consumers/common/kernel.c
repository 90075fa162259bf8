// The consumers' kernel: out[i] = in[i] * scale + i, one work-item per element.
// Built by each consumer project with `cc -shared -fPIC` against the
// installed <offload/kernel.h>.
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

struct scale_args {
  const uint32_t *in;
  uint32_t *out;
  uint32_t scale;
  uint32_t n;
};

OL_KERNEL(scale_add_index, struct scale_args, a) {
  uint32_t i = ol_global_id(0);
  if (i < a.n) a.out[i] = a.in[i] * a.scale + i;
}
