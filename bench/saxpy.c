// saxpy: y = a*x + y over 2^26 floats, our OL_KERNEL on the host device
// (256-item groups, launch on a queue + olSyncQueue) against a
// `#pragma omp parallel for` loop, on the same buffers, alternating
// within one process. Built with gcc -O3 -fopenmp.
// GB/s counts 12 bytes per element (read x, read y, write y).
// A third column calls the same kernel function from the .so directly on
// 2 threads (the caller and one persistent pthread, each half of the
// groups, no liboffload): the kernel code's own ceiling, to tell code
// generation from runtime overhead.
// usage: saxpy KERNELS.so [REPEATS] [KERNEL (saxpy or saxpy_guarded)]
#define BENCH_OFFLOAD
#include "common.h"
#include <dlfcn.h>
#include <offload/kernel.h>
#include <pthread.h>
#include <unistd.h>

struct saxpy_args { float a; const float *x; float *y; uint32_t n; };

static void omp_saxpy(float a, const float *restrict x, float *restrict y, uint32_t n) {
#pragma omp parallel for schedule(static)
  for (uint32_t i = 0; i < n; i++) y[i] = a * x[i] + y[i];
}

// The same check as the bounds-checked kernel's, over the same m >= n
// items as its grid (an extra column: GCC leaves this loop scalar, so the
// bounds-checked kernel is measured against the plain loop over n).
static void omp_saxpy_checked(float a, const float *restrict x, float *restrict y, uint32_t n,
                              uint32_t m) {
#pragma omp parallel for schedule(static)
  for (uint32_t i = 0; i < m; i++)
    if (i < n) y[i] = a * x[i] + y[i];
}

static const ol_host_kernel_desc *direct_desc;
static struct saxpy_args direct_args;
static uint32_t groups; // of 256 work-items

static void *direct_half(void *p) {
  const uint64_t h = (uintptr_t)p, half = groups / 2;
  ol_host_launch l = {{groups, 1, 1}, {256, 1, 1}, h * half, h ? groups : half, NULL, NULL, NULL};
  direct_desc->loop(&direct_args, &l);
  return NULL;
}

// The second half runs on one persistent thread, woken per call (as a
// thread pool's would be), not on a thread created per call.
static pthread_mutex_t direct_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t direct_cv = PTHREAD_COND_INITIALIZER;
static int direct_go, direct_done;
static void *direct_thread(void *p) {
  (void)p;
  for (;;) {
    pthread_mutex_lock(&direct_mu);
    while (!direct_go) pthread_cond_wait(&direct_cv, &direct_mu);
    direct_go = 0;
    pthread_mutex_unlock(&direct_mu);
    direct_half((void *)1);
    pthread_mutex_lock(&direct_mu);
    direct_done = 1;
    pthread_cond_broadcast(&direct_cv);
    pthread_mutex_unlock(&direct_mu);
  }
  return NULL;
}

static void direct_saxpy(void) {
  pthread_mutex_lock(&direct_mu);
  direct_go = 1, direct_done = 0;
  pthread_cond_broadcast(&direct_cv);
  pthread_mutex_unlock(&direct_mu);
  direct_half((void *)0);
  pthread_mutex_lock(&direct_mu);
  while (!direct_done) pthread_cond_wait(&direct_cv, &direct_mu);
  pthread_mutex_unlock(&direct_mu);
}

// Whether y[i] is what the checked launch left: 2x + 1 below n, 1 past it.
static int saxpy_right(const float *y, uint32_t i, uint32_t n) {
  if (y[i] == (i < n ? 2.0f * (float)(i & 1023) + 1.0f : 1.0f)) return 1;
  fprintf(stderr, "saxpy wrong at %u\n", i);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: saxpy KERNELS.so [REPEATS] [KERNEL]\n"); return 2; }
  int reps = argc > 2 ? atoi(argv[2]) : 9;
  const char *kname = argc > 3 ? argv[3] : "saxpy";
  char dname[128];
  snprintf(dname, sizeof dname, "__ol_kernel_%s", kname);
  // The bounds-checked kernel gets a grid larger than n, as it is for.
  const int checked = strcmp(kname, "saxpy") != 0;
  const uint32_t n = checked ? (1u << 26) - 1000 : 1u << 26;
  groups = (n + 255) / 256;
  const uint32_t m = groups * 256;
  const double bytes = 12.0 * n;
  ol_device_handle_t dev = bench_host_device();
  ol_program_handle_t prog = bench_program(dev, argv[1]);
  ol_symbol_handle_t k = bench_kernel(prog, kname);
  float *x, *y;
  CK(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, m * sizeof(float), (void **)&x));
  CK(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, m * sizeof(float), (void **)&y));
#pragma omp parallel for schedule(static) // first touch, as the loop will
  for (uint32_t i = 0; i < m; i++) x[i] = (float)(i & 1023), y[i] = 1.0f;
  ol_queue_handle_t q;
  CK(olCreateQueue(dev, &q));
  struct saxpy_args args = {2.0f, x, y, n};
  ol_kernel_launch_size_args_t ls = {1, {groups, 1, 1}, {256, 1, 1}, 0};
  // warm up both (and check the kernel once: y = 2x + 1)
  CK(olLaunchKernel(q, dev, k, &args, sizeof args, &ls));
  CK(olSyncQueue(q));
  // (every 4099th element below n - 8, then every element from n - 8 to m:
  // those past n untouched)
  for (uint32_t i = 0; i < n - 8; i += 4099)
    if (!saxpy_right(y, i, n)) return 1;
  for (uint32_t i = n - 8; i < m; i++)
    if (!saxpy_right(y, i, n)) return 1;
  omp_saxpy(2.0f, x, y, n);
  if (checked) omp_saxpy_checked(2.0f, x, y, n, m);
  void *so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  direct_desc = so ? dlsym(so, dname) : NULL;
  if (!direct_desc) { fprintf(stderr, "cannot load %s directly\n", argv[1]); return 1; }
  direct_args = args;
  pthread_t dt;
  pthread_create(&dt, NULL, direct_thread, NULL);
  pthread_detach(dt);
  direct_saxpy();
  double *ours = malloc(reps * sizeof *ours), *omp = malloc(reps * sizeof *omp);
  double *ompc = malloc(reps * sizeof *ompc);
  double *direct = malloc(reps * sizeof *direct);
  for (int r = 0; r < reps; r++) {
    usleep(20000); // let spinning OpenMP / Go threads go to sleep
    double t0 = now_ns();
    CK(olLaunchKernel(q, dev, k, &args, sizeof args, &ls));
    CK(olSyncQueue(q));
    ours[r] = bytes / (now_ns() - t0);
    usleep(20000);
    t0 = now_ns();
    omp_saxpy(2.0f, x, y, n);
    omp[r] = bytes / (now_ns() - t0);
    if (checked) {
      usleep(20000);
      t0 = now_ns();
      omp_saxpy_checked(2.0f, x, y, n, m);
      ompc[r] = bytes / (now_ns() - t0);
    }
    usleep(20000);
    t0 = now_ns();
    direct_saxpy();
    direct[r] = bytes / (now_ns() - t0);
  }
  printf("saxpy_ours_gbs %.2f\n", quantile(ours, reps, 0.5));
  printf("saxpy_omp_gbs %.2f\n", quantile(omp, reps, 0.5));
  if (checked) printf("saxpy_omp_checked_gbs %.2f\n", quantile(ompc, reps, 0.5));
  printf("saxpy_direct_gbs %.2f\n", quantile(direct, reps, 0.5));
  printf("saxpy_ours_best_gbs %.2f\n", ours[reps - 1]);
  printf("saxpy_omp_best_gbs %.2f\n", omp[reps - 1]);
  CK(olDestroyQueue(q));
  CK(olMemFree(x));
  CK(olMemFree(y));
  CK(olDestroyProgram(prog));
  CK(olShutDown());
  return 0;
}
