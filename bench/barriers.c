// barriers: kernels with barriers on the host device against OpenMP, in one
// process: a tiled matrix multiply (1024 × 1024 floats, 16 × 16 groups,
// tiles in group-local memory, two barriers per tile) and a group sum of
// 2^26 floats (256-item groups, 16 floats per work-item, then a tree in
// group-local memory), each as OL_PHASED_KERNEL and as OL_GROUP_KERNEL
// (bench/barrier_kernels.c), against a plain OpenMP loop nest
// (`omp parallel for` over rows, i-k-j order) and an OpenMP
// `reduction(+)` loop. bench/pocl.c runs the same kernels on PoCL.
// Times are per call (launch + olSyncQueue; the sum includes adding the
// per-group partial sums on the host), median of REPEATS, printed in ms.
// Every result is checked: the inputs are small multiples of 1/8, so each
// sum is exact in float and every implementation must match exactly
// (OpenMP's reduction adds in double: one float running sum per thread
// rounds once it passes 2^24, and is 5% off here).
// usage: barriers KERNELS.so [REPEATS] [FIBER_REPEATS]
#define BENCH_OFFLOAD
#include "common.h"
#include "barriers.h"
#include <unistd.h>

static void omp_matmul(const float *restrict a, const float *restrict b, float *restrict c, uint32_t n) {
#pragma omp parallel for schedule(static)
  for (uint32_t i = 0; i < n; i++) {
    float *ci = c + (size_t)i * n;
    for (uint32_t j = 0; j < n; j++) ci[j] = 0.0f;
    for (uint32_t k = 0; k < n; k++) {
      const float aik = a[(size_t)i * n + k];
      const float *bk = b + (size_t)k * n;
      for (uint32_t j = 0; j < n; j++) ci[j] += aik * bk[j];
    }
  }
}

static double omp_sum(const float *x, uint32_t n) {
  double s = 0.0; // a float running sum per thread loses 5% of 2^26 values
#pragma omp parallel for schedule(static) reduction(+ : s)
  for (uint32_t i = 0; i < n; i++) s += x[i];
  return s;
}

static double sum_partials(const float *p, uint32_t n) {
  double s = 0;
  for (uint32_t i = 0; i < n; i++) s += p[i];
  return s;
}

static double med(double *v, int n) { return quantile(v, (size_t)n, 0.5); }

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: barriers KERNELS.so [REPEATS] [FIBER_REPEATS]\n"); return 2; }
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  int freps = argc > 3 ? atoi(argv[3]) : 1;
  ol_device_handle_t dev = bench_host_device();
  ol_program_handle_t prog = bench_program(dev, argv[1]);
  ol_queue_handle_t q;
  CK(olCreateQueue(dev, &q));
  float *a, *b, *c, *x, *part;
  CK(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, N * N * sizeof(float), (void **)&a));
  CK(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, N * N * sizeof(float), (void **)&b));
  CK(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, N * N * sizeof(float), (void **)&c));
  CK(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, (size_t)RN * sizeof(float), (void **)&x));
  CK(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, RN / (RG * RPER) * sizeof(float), (void **)&part));
  double want = barrier_inputs(a, b, x);

  struct mm_args ma = {a, b, c, N};
  ol_kernel_launch_size_args_t mls = {2, {N / TS, N / TS, 1}, {TS, TS, 1}, 0};
  struct red_args ra = {x, part};
  const uint32_t ngroups = RN / (RG * RPER);
  ol_kernel_launch_size_args_t rls = {1, {ngroups, 1, 1}, {RG, 1, 1}, 0};

  static const char *mm_names[] = {"matmul_phased", "matmul_fibers"};
  static const char *red_names[] = {"reduce_phased", "reduce_fibers"};
  static const char *keys[] = {"phased", "fibers"};
  double *v = malloc((size_t)(reps > freps ? reps : freps) * sizeof *v);
  for (int w = 0; w < 2; w++) {
    int n = w ? freps : reps;
    if (n <= 0) continue;
    ol_symbol_handle_t k = bench_kernel(prog, mm_names[w]);
    for (int r = -1; r < n; r++) { // r = -1: warm-up and check
      memset(c, 0, N * N * sizeof(float));
      usleep(20000);
      double t0 = now_ns();
      CK(olLaunchKernel(q, dev, k, &ma, sizeof ma, &mls));
      CK(olSyncQueue(q));
      if (r >= 0) v[r] = (now_ns() - t0) / 1e6;
      else check_matmul(mm_names[w], a, b, c);
    }
    printf("mm_%s_ms %.2f\n", keys[w], med(v, n));
    k = bench_kernel(prog, red_names[w]);
    for (int r = -1; r < n; r++) {
      usleep(20000);
      double t0 = now_ns();
      CK(olLaunchKernel(q, dev, k, &ra, sizeof ra, &rls));
      CK(olSyncQueue(q));
      double s = sum_partials(part, ngroups);
      if (r >= 0) v[r] = (now_ns() - t0) / 1e6;
      if (s != want) { fprintf(stderr, "%s: sum %.17g, expected %.17g\n", red_names[w], s, want); return 1; }
    }
    printf("red_%s_ms %.2f\n", keys[w], med(v, n));
  }
  for (int r = -1; r < reps; r++) {
    memset(c, 0, N * N * sizeof(float));
    usleep(20000);
    double t0 = now_ns();
    omp_matmul(a, b, c, N);
    if (r >= 0) v[r] = (now_ns() - t0) / 1e6;
    else check_matmul("openmp matmul", a, b, c);
  }
  printf("mm_omp_ms %.2f\n", med(v, reps));
  for (int r = -1; r < reps; r++) {
    usleep(20000);
    double t0 = now_ns();
    double s = omp_sum(x, RN);
    if (r >= 0) v[r] = (now_ns() - t0) / 1e6;
    if (s != want) { fprintf(stderr, "openmp sum %.17g, expected %.17g\n", s, want); return 1; }
  }
  printf("red_omp_ms %.2f\n", med(v, reps));
  CK(olDestroyQueue(q));
  CK(olMemFree(a));
  CK(olMemFree(b));
  CK(olMemFree(c));
  CK(olMemFree(x));
  CK(olMemFree(part));
  CK(olDestroyProgram(prog));
  CK(olShutDown());
  return 0;
}
