// Kernels of the barrier benchmarks (bench/barriers.c), written once with
// <offload/kernel.h>: each algorithm in the phased form (OL_PHASED_KERNEL,
// the group's work-items run as loops between barriers on the host) and as
// a group kernel (OL_GROUP_KERNEL, one fiber per work-item). bench/pocl.c
// runs the same algorithms as OpenCL C on PoCL.
// Built by run.sh with gcc -O3 -march=native -fPIC -shared -I include; the
// same source compiles for NVPTX and AMDGPU (clang-22, see docs/kernels.md).
#include <offload/kernel.h>

#define BARRIERS_KERNELS
#include "barriers.h"

// C = A × B, n × n row-major floats, n a multiple of TS. Groups of TS × TS
// work-items; each computes one element of C, walking the tiles of A's row
// band and B's column band through group-local memory, two barriers per tile.

OL_PHASED_KERNEL(matmul_phased, struct mm_args, p) {
  OL_GROUP_LOCAL(float, as[TS][TS]);
  OL_GROUP_LOCAL(float, bs[TS][TS]);
  OL_PRIVATE(float, acc);
  OL_FOR_ITEMS { ol_private(acc) = 0.0f; }
  for (uint32_t t = 0; t < p.n; t += TS) {
    OL_FOR_ITEMS {
      uint32_t tx = ol_thread_id(0), ty = ol_thread_id(1);
      as[ty][tx] = p.a[ol_global_id(1) * p.n + t + tx];
      bs[ty][tx] = p.b[(t + ty) * p.n + ol_global_id(0)];
    }
    ol_barrier();
    OL_FOR_ITEMS {
      uint32_t tx = ol_thread_id(0), ty = ol_thread_id(1);
      float s = ol_private(acc);
      for (uint32_t k = 0; k < TS; k++) s += as[ty][k] * bs[k][tx];
      ol_private(acc) = s;
    }
    ol_barrier();
  }
  OL_FOR_ITEMS { p.c[ol_global_id(1) * p.n + ol_global_id(0)] = ol_private(acc); }
}

OL_GROUP_KERNEL(matmul_fibers, struct mm_args, p) {
  OL_GROUP_LOCAL(float, as[TS][TS]);
  OL_GROUP_LOCAL(float, bs[TS][TS]);
  uint32_t tx = ol_thread_id(0), ty = ol_thread_id(1);
  uint32_t row = ol_global_id(1), col = ol_global_id(0);
  float acc = 0.0f;
  for (uint32_t t = 0; t < p.n; t += TS) {
    as[ty][tx] = p.a[row * p.n + t + tx];
    bs[ty][tx] = p.b[(t + ty) * p.n + col];
    ol_barrier();
    for (uint32_t k = 0; k < TS; k++) acc += as[ty][k] * bs[k][tx];
    ol_barrier();
  }
  p.c[row * p.n + col] = acc;
}

// Sum: each group of RG work-items adds RG × RPER consecutive floats (each
// work-item RPER of them, RG apart), then halves its partial sums in
// group-local memory with a barrier per step; work-item 0 writes the
// group's sum to out[group].

OL_PHASED_KERNEL(reduce_phased, struct red_args, p) {
  OL_GROUP_LOCAL(float, part[RG]);
  OL_FOR_ITEMS {
    const float *x = p.x + (uint64_t)ol_group_id(0) * RG * RPER + ol_thread_id(0);
    float s = 0.0f;
    for (uint32_t j = 0; j < RPER; j++) s += x[j * RG];
    part[ol_thread_id(0)] = s;
  }
  ol_barrier();
  for (uint32_t h = RG / 2; h > 0; h /= 2) {
    OL_FOR_ITEMS {
      uint32_t t = ol_thread_id(0);
      if (t < h) part[t] += part[t + h];
    }
    ol_barrier();
  }
  OL_FOR_ITEMS {
    if (ol_thread_id(0) == 0) p.out[ol_group_id(0)] = part[0];
  }
}

OL_GROUP_KERNEL(reduce_fibers, struct red_args, p) {
  OL_GROUP_LOCAL(float, part[RG]);
  uint32_t t = ol_thread_id(0);
  const float *x = p.x + (uint64_t)ol_group_id(0) * RG * RPER + t;
  float s = 0.0f;
  for (uint32_t j = 0; j < RPER; j++) s += x[j * RG];
  part[t] = s;
  ol_barrier();
  for (uint32_t h = RG / 2; h > 0; h /= 2) {
    if (t < h) part[t] += part[t + h];
    ol_barrier();
  }
  if (t == 0) p.out[ol_group_id(0)] = part[0];
}
