// bar: like foo but stores id + 1000, so a test can tell the two apart.
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

struct bar_args {
  uint32_t *out;
};

OL_KERNEL(bar, struct bar_args, a) {
  uint32_t id = ol_global_id(0);
  a.out[id] = id + 1000u;
}
