// The demo's kernel: one source for the host CPU, NVIDIA and AMD GPUs.
#include <offload/kernel.h>

struct saxpy_args {
  float a;
  const float *x;
  float *y;
  uint32_t n;
};

// y = a*x + y. The demo launches exactly n work-items, so no bounds check.
OL_KERNEL(saxpy, struct saxpy_args, args) {
  uint32_t i = ol_global_id(0);
  args.y[i] = args.a * args.x[i] + args.y[i];
}
