// forkjoin: latency of an empty `#pragma omp parallel` region (fork/join),
// the baseline of launch.c. Built with gcc -O2 -fopenmp; run with
// OMP_NUM_THREADS=2. usage: forkjoin [ITERATIONS]
#include "common.h"

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 10000;
  for (int i = 0; i < 2000; i++) { // warm up
#pragma omp parallel
    { __asm__ volatile(""); }
  }
  double *v = malloc(n * sizeof *v);
  for (int i = 0; i < n; i++) {
    double t0 = now_ns();
#pragma omp parallel
    { __asm__ volatile(""); }
    v[i] = now_ns() - t0;
  }
  printf("omp_med_ns %.0f\n", quantile(v, n, 0.5));
  printf("omp_p99_ns %.0f\n", quantile(v, n, 0.99));
  return 0;
}
