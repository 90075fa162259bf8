// composite: the argument struct holds a nested struct and an array.
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

struct composite_inner {
  uint16_t tag;
  double weight;
  uint8_t bytes[3];
};

struct composite_args {
  uint32_t base;
  struct composite_inner inner;
  uint32_t table[4];
  uint32_t *out;
};

OL_KERNEL(composite, struct composite_args, a) {
  uint32_t id = ol_global_id(0);
  a.out[id] = a.base + a.inner.tag + (uint32_t)a.inner.weight +
              a.inner.bytes[0] + a.inner.bytes[1] + a.inner.bytes[2] +
              a.table[id % 4] + id;
}
