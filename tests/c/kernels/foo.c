// foo: every work-item stores its global (x) index at that index of out.
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

struct foo_args {
  uint32_t *out;
};

OL_KERNEL(foo, struct foo_args, a) {
  uint32_t id = ol_global_id(0);
  a.out[id] = id;
}
