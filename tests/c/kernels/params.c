// params: kernels of several parameters (OL_KERNEL_PARAMS and its group
// and phased forms), for 23.1's argument arrays. Each work-item id writes
// row id of out: every parameter's value (plus id), so a parameter read
// from the wrong offset shows. The parameters' structs have every
// alignment from 1 to 16, and the scalars every size, in orders that need
// padding; tests/c/device/launch23.c computes what the rows must hold.
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

struct params_a1 { uint8_t b[3]; };                     // size 3, alignment 1
struct params_a2 { int16_t h; int8_t c; };              // 4, 2
struct params_a4 { int32_t i; int8_t c; };              // 8, 4
struct params_a8 { double d; int8_t c; };               // 16, 8
struct params_a16 { int32_t x; int64_t y; } __attribute__((aligned(16))); // 16, 16
struct params_pair { int32_t a; int32_t b; };           // 8, 4

#define PARAMS_ALIGN_ROW 16
OL_KERNEL_PARAMS(params_align, (int8_t, c0), (struct params_a1, s1), (int8_t, c1), (struct params_a2, s2),
                 (int8_t, c2), (struct params_a4, s4), (int8_t, c3), (struct params_a8, s8), (int8_t, c4),
                 (struct params_a16, s16), (int64_t *, out)) {
  int64_t id = ol_global_id(0); // (signed: the values are)
  int64_t *r = out + id * PARAMS_ALIGN_ROW;
  r[0] = c0 + id, r[1] = s1.b[0] + id, r[2] = s1.b[1] + id, r[3] = s1.b[2] + id;
  r[4] = c1 + id, r[5] = s2.h + id, r[6] = s2.c + id, r[7] = c2 + id;
  r[8] = s4.i + id, r[9] = s4.c + id, r[10] = c3 + id, r[11] = (int64_t)(s8.d * 4.0) + id;
  r[12] = s8.c + id, r[13] = c4 + id, r[14] = s16.x + id, r[15] = s16.y + id;
}

// Scalars of every size, a pointer read from and a struct, two orders.
#define PARAMS_MIXED_ROW 8
OL_KERNEL_PARAMS(params_mixed, (char, c), (short, s), (int, i), (double, d), (const int32_t *, p),
                 (struct params_pair, f), (int64_t, q), (int64_t *, out)) {
  int64_t id = ol_global_id(0);
  int64_t *r = out + id * PARAMS_MIXED_ROW;
  r[0] = c + id, r[1] = s + id, r[2] = i + id, r[3] = (int64_t)(d * 8.0) + id;
  r[4] = p[id], r[5] = f.a + id, r[6] = f.b + id, r[7] = q + id;
}

OL_KERNEL_PARAMS(params_mixed_rev, (struct params_pair, f), (char, c), (double, d), (short, s),
                 (const int32_t *, p), (int, i), (int64_t *, out), (int64_t, q)) {
  int64_t id = ol_global_id(0);
  int64_t *r = out + id * PARAMS_MIXED_ROW;
  r[0] = c + id, r[1] = s + id, r[2] = i + id, r[3] = (int64_t)(d * 8.0) + id;
  r[4] = p[id], r[5] = f.a + id, r[6] = f.b + id, r[7] = q + id;
}

// The example: an int, then a struct of two ints (at offset 4, as
// C puts it), then the output.
OL_KERNEL_PARAMS(params_composite, (int32_t, n), (struct params_pair, f), (int32_t *, out)) {
  uint32_t id = ol_global_id(0);
  out[id] = n + f.a + f.b + (int32_t)id;
}

// The group and phased forms take their parameters alike.
OL_GROUP_KERNEL_PARAMS(params_group, (int8_t, c), (struct params_a16, s), (int32_t *, out)) {
  OL_GROUP_LOCAL(int32_t, seen[64]);
  seen[ol_thread_id(0) % 64] = c + (int32_t)s.x;
  ol_barrier();
  out[ol_global_id(0)] = seen[(ol_thread_id(0) + 1) % ol_group_size(0) % 64] + (int32_t)s.y;
}

OL_PHASED_KERNEL_PARAMS(params_phased, (int16_t, h), (struct params_a8, s), (int32_t *, out)) {
  OL_GROUP_LOCAL(int32_t, seen[64]);
  OL_FOR_ITEMS { seen[ol_thread_id(0) % 64] = h + s.c; }
  ol_barrier();
  OL_FOR_ITEMS {
    out[ol_global_id(0)] = seen[(ol_thread_id(0) + 1) % ol_group_size(0) % 64] + (int32_t)s.d;
  }
}
