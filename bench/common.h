// Shared helpers of the benchmarks (bench/*.c): clock, sorting, statistics,
// and (with BENCH_OFFLOAD defined) finding/loading things through the
// Offload API.
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

// Sorts v and returns its q-quantile (q = 0.5: median, 0.99: p99).
static inline double quantile(double *v, size_t n, double q) {
  qsort(v, n, sizeof v[0], cmp_double);
  size_t i = (size_t)(q * (double)(n - 1) + 0.5);
  return v[i < n ? i : n - 1];
}

enum { BENCH_RUNS = 7 };

// BENCH_MEDIAN(key, ops, body): runs body (ops operations; time it should
// leave out it adds to skip_) once to warm up and then BENCH_RUNS times,
// prints "key <median ns per operation>" and yields that median.
#define BENCH_MEDIAN(key, ops, body)                                           \
  __extension__({                                                              \
    double v_[BENCH_RUNS], skip_ = 0;                                          \
    body;                                                                      \
    for (int r_ = 0; r_ < BENCH_RUNS; r_++) {                                  \
      skip_ = 0;                                                               \
      double t_ = now_ns();                                                    \
      body;                                                                    \
      v_[r_] = (now_ns() - t_ - skip_) / (ops);                                \
    }                                                                          \
    double m_ = quantile(v_, BENCH_RUNS, 0.5);                                 \
    printf("%s %.1f\n", key, m_);                                              \
    m_;                                                                        \
  })

#ifdef BENCH_OFFLOAD
#include <offload.h>

#define CK(x)                                                                  \
  do {                                                                         \
    ol_result_t r_ = (x);                                                      \
    if (r_) {                                                                  \
      fprintf(stderr, "%s:%d: %s -> %d %s\n", __FILE__, __LINE__, #x,          \
              (int)r_->Code, r_->Details ? r_->Details : "");                  \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

struct bench_pick {
  ol_platform_backend_t backend;
  ol_device_handle_t dev;
};

static bool bench_pick_first(ol_device_handle_t d, void *u) {
  struct bench_pick *pick = u;
  ol_platform_handle_t p;
  ol_platform_backend_t b;
  if (olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, sizeof p, &p)) return true;
  if (olGetPlatformInfo(p, OL_PLATFORM_INFO_BACKEND, sizeof b, &b)) return true;
  if (b == pick->backend) {
    pick->dev = d;
    return false;
  }
  return true;
}

// olInit and the first device of a platform of backend, or NULL.
static inline ol_device_handle_t bench_device(ol_platform_backend_t backend) {
  CK(olInit());
  struct bench_pick pick = {backend, NULL};
  CK(olIterateDevices(bench_pick_first, &pick));
  return pick.dev;
}

// olInit and the device of the HOST platform (the host CPU device);
// BENCH_BACKEND=cuda picks the first CUDA device instead (the churn
// benchmark on the CUDA backend).
static inline ol_device_handle_t bench_host_device(void) {
  const char *want = getenv("BENCH_BACKEND");
  ol_device_handle_t d = bench_device(want && !strcmp(want, "cuda") ? OL_PLATFORM_BACKEND_CUDA : OL_PLATFORM_BACKEND_HOST);
  if (!d) { fprintf(stderr, "no %s device\n", want ? want : "host"); exit(1); }
  return d;
}

// Loads the kernel library at path as a program of dev.
static inline ol_program_handle_t bench_program(ol_device_handle_t dev, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(1); }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *img = malloc((size_t)n);
  if (fread(img, 1, (size_t)n, f) != (size_t)n) { perror(path); exit(1); }
  fclose(f);
  ol_program_handle_t prog;
  CK(olCreateProgram(dev, img, (size_t)n, &prog));
  free(img);
  return prog;
}

static inline ol_symbol_handle_t bench_kernel(ol_program_handle_t prog, const char *name) {
  ol_symbol_handle_t k;
  CK(olGetSymbol(prog, name, OL_SYMBOL_KIND_KERNEL, &k));
  return k;
}
#endif
#endif
