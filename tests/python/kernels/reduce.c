// Kernels of the Python package tests (tests/python/test_liboffload.py).
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

// One partial sum per work-group, through dynamic group-local memory
// (DynSharedMemory = group size * 8 bytes); the group size must be a power
// of two.
struct partial_args {
  const uint32_t *in;
  uint64_t *partial;
  uint32_t n;
};
OL_GROUP_KERNEL(partial_sums, struct partial_args, a) {
  uint64_t *tmp = (uint64_t *)ol_dyn_shared();
  uint32_t t = ol_thread_id(0);
  uint32_t i = ol_global_id(0);
  tmp[t] = i < a.n ? a.in[i] : 0;
  ol_barrier();
  for (uint32_t s = ol_group_size(0) / 2; s > 0; s /= 2) {
    if (t < s)
      tmp[t] += tmp[t + s];
    ol_barrier();
  }
  if (t == 0)
    a.partial[ol_group_id(0)] = tmp[0];
}

// Every work-item adds its element to one total with an atomic.
struct atomic_args {
  const uint32_t *in;
  uint64_t *total;
  uint32_t n;
};
OL_KERNEL(atomic_sum, struct atomic_args, a) {
  uint32_t i = ol_global_id(0);
  if (i < a.n)
    __atomic_fetch_add(a.total, (uint64_t)a.in[i], __ATOMIC_RELAXED);
}

// A program global, and a kernel that scales it into an output buffer:
// out[i] = table[i] * k.
OL_GLOBAL uint32_t table[16];
struct scale_args {
  uint8_t k; // padding follows: the layout test checks it
  uint32_t *out;
};
OL_KERNEL(scale_table, struct scale_args, a) {
  uint32_t i = ol_global_id(0);
  a.out[i] = table[i] * a.k;
}

// Mixed argument types: writes each back so the test sees the exact layout.
struct mixed_args {
  uint8_t b;
  double d;
  uint16_t h;
  int64_t q;
  float f;
  uint64_t *out;
};
OL_KERNEL(mixed, struct mixed_args, a) {
  if (ol_global_id(0) == 0) {
    a.out[0] = a.b;
    a.out[1] = (uint64_t)(a.d * 1000.0);
    a.out[2] = a.h;
    a.out[3] = (uint64_t)a.q;
    a.out[4] = (uint64_t)(a.f * 1000.0f);
  }
}

// The same, each a parameter of its own (23.1: one argument each).
OL_KERNEL_PARAMS(mixed_params, (uint8_t, b), (double, d), (uint16_t, h), (int64_t, q), (float, f),
                 (uint64_t *, out)) {
  if (ol_global_id(0) == 0) {
    out[0] = b;
    out[1] = (uint64_t)(d * 1000.0);
    out[2] = h;
    out[3] = (uint64_t)q;
    out[4] = (uint64_t)(f * 1000.0f);
  }
}
