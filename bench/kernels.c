// Kernels of the host-device benchmarks, built by run.sh with
// gcc -O3 -fPIC -shared -I include.
#include <offload/kernel.h>

// Launch latency and queue churn: does nothing.
OL_KERNEL_NOARGS(empty) {}

// SAXPY over n floats: y = a*x + y. The grid covers n exactly (n is a
// multiple of the group size), so no bounds check is needed.
struct saxpy_args { float a; const float *x; float *y; uint32_t n; };
OL_KERNEL(saxpy, struct saxpy_args, args) {
  uint32_t i = ol_global_id(0);
  args.y[i] = args.a * args.x[i] + args.y[i];
}

// The same with the usual bounds check, for grids larger than n (GCC
// splits the work-item loop at n: docs/kernels.md, rule 6).
OL_KERNEL(saxpy_guarded, struct saxpy_args, args) {
  uint32_t i = ol_global_id(0);
  if (i < args.n) args.y[i] = args.a * args.x[i] + args.y[i];
}

// Launch breakdown: writes CLOCK_MONOTONIC (ns) when the kernel runs.
#include <time.h>
struct stamp_args { int64_t *out; };
OL_KERNEL(stamp, struct stamp_args, args) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  *args.out = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
