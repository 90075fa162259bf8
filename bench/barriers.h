// What the barrier benchmarks share: bench/barrier_kernels.c (the kernels),
// bench/barriers.c (them on the host device, and OpenMP) and bench/pocl.c
// (the same algorithms on PoCL): sizes, the kernels' arguments, the inputs
// and the matrix multiply's check. barrier_kernels.c defines
// BARRIERS_KERNELS and gets only the sizes and arguments.
#ifndef BENCH_BARRIERS_H
#define BENCH_BARRIERS_H
#include <stdint.h>

// C = A × B: N × N row-major floats, in groups of TS × TS work-items.
#define N 1024
#define TS 16
struct mm_args { const float *a; const float *b; float *c; uint32_t n; };

// Sum of RN floats: each group of RG work-items adds RG × RPER of them.
#define RN (1u << 26)
#define RG 256
#define RPER 16
struct red_args { const float *x; float *out; };

#ifndef BARRIERS_KERNELS
#include <stdio.h>
#include <stdlib.h>

// Fills A and B (N × N) and X (RN) with small multiples of 1/8, so that
// every sum is exact in float; returns the sum of X.
static double barrier_inputs(float *a, float *b, float *x) {
  for (uint32_t i = 0; i < N * N; i++) {
    a[i] = (float)((int)(i % 13) - 6) * 0.125f;
    b[i] = (float)((int)(i % 11) - 5) * 0.125f;
  }
  double want = 0;
  for (uint32_t i = 0; i < RN; i++) x[i] = (float)(i % 17) * 0.125f, want += x[i];
  return want;
}

// Checks a sample of C = A × B exactly; exits naming WHO when one differs.
static void check_matmul(const char *who, const float *a, const float *b, const float *c) {
  for (uint32_t i = 0; i < N; i += 37)
    for (uint32_t j = 0; j < N; j += 41) {
      double s = 0;
      for (uint32_t k = 0; k < N; k++) s += (double)a[i * N + k] * b[k * N + j];
      if ((double)c[i * N + j] != s) {
        fprintf(stderr, "%s: C[%u][%u] = %g, expected %g\n", who, i, j, c[i * N + j], s);
        exit(1);
      }
    }
}
#endif
#endif
