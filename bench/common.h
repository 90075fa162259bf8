// Shared helpers of the benchmarks (bench/*.c): clock, sorting, statistics,
// and (with BENCH_OFFLOAD defined) finding/loading things through the
// Offload API.
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
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

// CPU time of the calling thread: what a call costs the caller, without
// the time it waits (the driver doubles' queues run on threads of their
// own, whose scheduling on a small machine moves wall times by more than
// a library adds)
static inline double thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// bench_barrier: the calling thread counts itself in *arrived and waits
// until parties threads have (spinning on a core of its own, so that the
// first to arrive does not start alone: two-thread rates are measured over
// the span from the first start to the last end). *arrived starts at 0.
static inline void bench_barrier(_Atomic int *arrived, int parties) {
  atomic_fetch_add(arrived, 1);
  for (unsigned spins = 0; atomic_load(arrived) < parties;)
    if (++spins > 1000) {
      sched_yield();
      spins = 0;
    }
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

// bench_read_file returns the bytes of the file at path (NUL-terminated,
// *size without the NUL), or exits.
static inline void *bench_read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) {
    perror(path);
    exit(1);
  }
  b[n] = 0;
  fclose(f);
  *size = (size_t)n;
  return b;
}

// bench_report prints the launch and bandwidth keys of the GPU benchmarks
// (bench/cuda.c, bench/hsa.c): the median of one launch + sync, the cost
// per launch of a batch, and the two copy rates.
static inline void bench_report(double *one, int iters, double batch_ns, double h2d_ns, double d2h_ns, size_t bytes) {
  printf("launch_sync_ns %.0f\n", quantile(one, (size_t)iters, 0.5));
  printf("launch_batch_ns %.0f\n", batch_ns / iters);
  printf("h2d_gbs %.2f\n", bytes / h2d_ns);
  printf("d2h_gbs %.2f\n", bytes / d2h_ns);
}

// BENCH_MEDIAN(key, ops, body): runs body (ops operations; what it should
// leave out it wraps in BENCH_SKIP) once to warm up and then BENCH_RUNS
// times, prints "key <median ns per operation>" and "key_cpu <median CPU
// ns of the calling thread per operation>", and yields the first median.
#define BENCH_MEDIAN(key, ops, body)                                           \
  __extension__({                                                              \
    double v_[BENCH_RUNS], c_[BENCH_RUNS], skip_ = 0, skipc_ = 0;              \
    body;                                                                      \
    for (int r_ = 0; r_ < BENCH_RUNS; r_++) {                                  \
      skip_ = skipc_ = 0;                                                      \
      double t_ = now_ns(), u_ = thread_cpu_ns();                              \
      body;                                                                    \
      c_[r_] = (thread_cpu_ns() - u_ - skipc_) / (ops);                        \
      v_[r_] = (now_ns() - t_ - skip_) / (ops);                                \
    }                                                                          \
    double m_ = quantile(v_, BENCH_RUNS, 0.5);                                 \
    printf("%s %.1f\n", key, m_);                                              \
    printf("%s_cpu %.1f\n", key, quantile(c_, BENCH_RUNS, 0.5));               \
    m_;                                                                        \
  })

// BENCH_SKIP(stmt) runs stmt inside a BENCH_MEDIAN body, leaving its time
// out of both medians.
#define BENCH_SKIP(stmt)                                                       \
  do {                                                                         \
    double s_ = now_ns(), sc_ = thread_cpu_ns();                               \
    stmt;                                                                      \
    skipc_ += thread_cpu_ns() - sc_;                                           \
    skip_ += now_ns() - s_;                                                    \
  } while (0)

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

enum { BENCH_GPU_BATCH = 1000 };

// bench_offload_ops measures, through the Offload API on the first device
// of backend, what the GPU benchmarks measure through the driver (the keys
// of bench_report, then copy4k_ns, event_ns, sync_ns and probe_ns: see
// bench/cuda.c), with the kernel of the image (no arguments).
static inline void bench_offload_ops(ol_platform_backend_t backend, const char *what, const void *img, size_t isize,
                                     const char *kernel, int iters, size_t bytes) {
  ol_device_handle_t dev = bench_device(backend);
  if (!dev) {
    fprintf(stderr, "%s bench: no device of that backend through the Offload API\n", what);
    exit(1);
  }
  ol_program_handle_t prog;
  ol_symbol_handle_t k;
  ol_queue_handle_t q;
  CK(olCreateProgram(dev, img, isize, &prog));
  CK(olGetSymbol(prog, kernel, OL_SYMBOL_KIND_KERNEL, &k));
  CK(olCreateQueue(dev, &q));
  ol_kernel_launch_size_args_t ls = {1, {1, 1, 1}, {1, 1, 1}, 0};
  double *one = malloc(sizeof(double) * (size_t)iters);
  for (int i = 0; i < iters / 10; i++) {
    CK(olLaunchKernel(q, dev, k, NULL, 0, &ls));
    CK(olSyncQueue(q));
  }
  for (int i = 0; i < iters; i++) {
    double t = now_ns();
    CK(olLaunchKernel(q, dev, k, NULL, 0, &ls));
    CK(olSyncQueue(q));
    one[i] = now_ns() - t;
  }
  double t = now_ns();
  for (int i = 0; i < iters; i++)
    CK(olLaunchKernel(q, dev, k, NULL, 0, &ls));
  CK(olSyncQueue(q));
  double batch = now_ns() - t;
  BENCH_MEDIAN("launch_batch_submit_ns", iters, {
    for (int i = 0; i < iters; i++)
      CK(olLaunchKernel(q, dev, k, NULL, 0, &ls));
    BENCH_SKIP(CK(olSyncQueue(q)));
  });
  void *host, *dmem;
  CK(olMemAlloc(dev, OL_ALLOC_TYPE_HOST, bytes, &host));
  CK(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, bytes, &dmem));
  memset(host, 1, bytes);
  t = now_ns();
  CK(olMemcpy(q, dmem, dev, host, dev, bytes));
  CK(olSyncQueue(q));
  double h2d = now_ns() - t;
  t = now_ns();
  CK(olMemcpy(q, host, dev, dmem, dev, bytes));
  CK(olSyncQueue(q));
  double d2h = now_ns() - t;
  bench_report(one, iters, batch, h2d, d2h, bytes);
  free(one);
  BENCH_MEDIAN("copy4k_ns", BENCH_GPU_BATCH, {
    for (int i = 0; i < BENCH_GPU_BATCH; i++) CK(olMemcpy(q, dmem, dev, host, dev, 4096));
    BENCH_SKIP(CK(olSyncQueue(q)));
  });
  static ol_event_handle_t evs[BENCH_GPU_BATCH];
  BENCH_MEDIAN("event_ns", BENCH_GPU_BATCH, {
    for (int i = 0; i < BENCH_GPU_BATCH; i++) CK(olCreateEvent(q, &evs[i]));
    BENCH_SKIP(for (int i = 0; i < BENCH_GPU_BATCH; i++) CK(olDestroyEvent(evs[i])));
  });
  BENCH_MEDIAN("sync_ns", 10 * BENCH_GPU_BATCH, for (int i = 0; i < 10 * BENCH_GPU_BATCH; i++) CK(olSyncQueue(q)));
  BENCH_MEDIAN("probe_ns", 10 * BENCH_GPU_BATCH,
               for (int i = 0; i < 10 * BENCH_GPU_BATCH; i++) olGetDeviceInfoSize(dev, OL_DEVICE_INFO_TYPE, NULL));
  CK(olMemFree(dmem));
  CK(olMemFree(host));
  CK(olDestroyQueue(q));
  CK(olDestroyProgram(prog));
  CK(olShutDown());
}
#endif
#endif
