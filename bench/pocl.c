// pocl: latency of clEnqueueNDRangeKernel + clFinish for an empty kernel
// (global size 1) on PoCL's CPU device, the baseline of launch.c.
// usage: pocl [ITERATIONS]; exits 3 when no PoCL platform is found.
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include "common.h"

#define CLK(x)                                                                 \
  do {                                                                         \
    cl_int e_ = (x);                                                           \
    if (e_ != CL_SUCCESS) { fprintf(stderr, "%s -> %d\n", #x, e_); exit(1); }  \
  } while (0)

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 10000;
  cl_platform_id plats[16];
  cl_uint np = 0;
  if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS) np = 0;
  cl_platform_id plat = NULL;
  for (cl_uint i = 0; i < np; i++) {
    char name[256] = "";
    clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
    if (strstr(name, "Portable Computing Language") || strstr(name, "PoCL")) plat = plats[i];
  }
  if (!plat) { fprintf(stderr, "no PoCL platform\n"); return 3; }
  cl_device_id dev;
  CLK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_CPU, 1, &dev, NULL));
  cl_int err;
  cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  CLK(err);
  cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
  CLK(err);
  const char *src = "kernel void empty(void) {}\n";
  cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
  CLK(err);
  CLK(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
  cl_kernel k = clCreateKernel(prog, "empty", &err);
  CLK(err);
  size_t global = 1;
  for (int i = 0; i < 1000; i++) { // warm up
    CLK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
    CLK(clFinish(q));
  }
  double *v = malloc(n * sizeof *v);
  for (int i = 0; i < n; i++) {
    double t0 = now_ns();
    CLK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
    CLK(clFinish(q));
    v[i] = now_ns() - t0;
  }
  printf("pocl_med_ns %.0f\n", quantile(v, n, 0.5));
  printf("pocl_p99_ns %.0f\n", quantile(v, n, 0.99));
  clReleaseKernel(k);
  clReleaseProgram(prog);
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  return 0;
}
