// multiargs: many scalars of different widths mixed with pointers. Every
// work-item writes a value that depends on all of them.
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

struct multiargs_args {
  uint8_t small;    // 0
  int16_t neg;      // 2
  uint32_t *out;    // 8
  double scale;     // 16
  uint64_t big;     // 24
  float frac;       // 32
  int32_t *out2;    // 40
  uint32_t count;   // 48
};

OL_KERNEL(multiargs, struct multiargs_args, a) {
  uint32_t id = ol_global_id(0);
  if (id >= a.count)
    return;
  // small + neg + scale*id + (big >> 32) + frac*4
  double v = (double)a.small + (double)a.neg + a.scale * (double)id +
             (double)(a.big >> 32) + (double)a.frac * 4.0;
  a.out[id] = (uint32_t)v;
  a.out2[id] = (int32_t)a.neg * (int32_t)(id + 1);
}
