// pocl: PoCL baselines on its CPU device.
//   pocl [ITERATIONS]        latency of clEnqueueNDRangeKernel + clFinish for
//                            an empty kernel (global size 1), for launch.c
//   pocl barriers [REPEATS]  the kernels of bench/barriers.c in OpenCL C: the
//                            tiled matrix multiply and the group sum, same
//                            sizes, data and checks; per call (enqueue +
//                            clFinish; the sum also reads back and adds the
//                            partial sums), median, in ms
// Exits 3 when no PoCL platform is found.
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include "common.h"
#include "barriers.h"
#include <unistd.h>

#define CLK(x)                                                                 \
  do {                                                                         \
    cl_int e_ = (x);                                                           \
    if (e_ != CL_SUCCESS) { fprintf(stderr, "%s -> %d\n", #x, e_); exit(1); }  \
  } while (0)

#define STR_(x) #x
#define STR(x) STR_(x)
static const char *barrier_src =
    "#define TS " STR(TS) "\n"
    "kernel void matmul(global const float *a, global const float *b, global float *c, uint n) {\n"
    "  local float as[TS][TS], bs[TS][TS];\n"
    "  uint tx = get_local_id(0), ty = get_local_id(1);\n"
    "  uint row = get_global_id(1), col = get_global_id(0);\n"
    "  float acc = 0.0f;\n"
    "  for (uint t = 0; t < n; t += TS) {\n"
    "    as[ty][tx] = a[row * n + t + tx];\n"
    "    bs[ty][tx] = b[(t + ty) * n + col];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (uint k = 0; k < TS; k++) acc += as[ty][k] * bs[k][tx];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  }\n"
    "  c[row * n + col] = acc;\n"
    "}\n"
    "#define RG " STR(RG) "\n"
    "#define RPER " STR(RPER) "\n"
    "kernel void reduce(global const float *x0, global float *out) {\n"
    "  local float part[RG];\n"
    "  uint t = get_local_id(0);\n"
    "  global const float *x = x0 + (ulong)get_group_id(0) * RG * RPER + t;\n"
    "  float s = 0.0f;\n"
    "  for (uint j = 0; j < RPER; j++) s += x[j * RG];\n"
    "  part[t] = s;\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  for (uint h = RG / 2; h > 0; h /= 2) {\n"
    "    if (t < h) part[t] += part[t + h];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  }\n"
    "  if (t == 0) out[get_group_id(0)] = part[0];\n"
    "}\n";

static int barriers(cl_context ctx, cl_device_id dev, cl_command_queue q, int reps) {
  cl_int err;
  cl_program prog = clCreateProgramWithSource(ctx, 1, &barrier_src, NULL, &err);
  CLK(err);
  if (clBuildProgram(prog, 1, &dev, "", NULL, NULL) != CL_SUCCESS) {
    char log[8192] = "";
    clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
    fprintf(stderr, "build failed:\n%s\n", log);
    return 1;
  }
  cl_kernel mm = clCreateKernel(prog, "matmul", &err);
  CLK(err);
  cl_kernel red = clCreateKernel(prog, "reduce", &err);
  CLK(err);
  float *a = malloc(N * N * sizeof(float)), *b = malloc(N * N * sizeof(float));
  float *c = malloc(N * N * sizeof(float)), *x = malloc((size_t)RN * sizeof(float));
  const uint32_t ngroups = RN / (RG * RPER);
  float *part = malloc(ngroups * sizeof(float));
  double want = barrier_inputs(a, b, x);
  cl_mem da = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, N * N * sizeof(float), a, &err);
  CLK(err);
  cl_mem db = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, N * N * sizeof(float), b, &err);
  CLK(err);
  cl_mem dc = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * N * sizeof(float), NULL, &err);
  CLK(err);
  cl_mem dx = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)RN * sizeof(float), x, &err);
  CLK(err);
  cl_mem dp = clCreateBuffer(ctx, CL_MEM_READ_WRITE, ngroups * sizeof(float), NULL, &err);
  CLK(err);
  cl_uint n = N;
  CLK(clSetKernelArg(mm, 0, sizeof da, &da));
  CLK(clSetKernelArg(mm, 1, sizeof db, &db));
  CLK(clSetKernelArg(mm, 2, sizeof dc, &dc));
  CLK(clSetKernelArg(mm, 3, sizeof n, &n));
  CLK(clSetKernelArg(red, 0, sizeof dx, &dx));
  CLK(clSetKernelArg(red, 1, sizeof dp, &dp));
  double *v = malloc((size_t)reps * sizeof *v);
  size_t mg[2] = {N, N}, ml[2] = {TS, TS};
  for (int r = -1; r < reps; r++) { // r = -1: warm-up and check
    usleep(20000);
    double t0 = now_ns();
    CLK(clEnqueueNDRangeKernel(q, mm, 2, NULL, mg, ml, 0, NULL, NULL));
    CLK(clFinish(q));
    if (r >= 0) { v[r] = (now_ns() - t0) / 1e6; continue; }
    CLK(clEnqueueReadBuffer(q, dc, CL_TRUE, 0, N * N * sizeof(float), c, 0, NULL, NULL));
    check_matmul("pocl matmul", a, b, c);
  }
  printf("mm_pocl_ms %.2f\n", quantile(v, (size_t)reps, 0.5));
  size_t rg = (size_t)ngroups * RG, rl = RG;
  for (int r = -1; r < reps; r++) {
    usleep(20000);
    double t0 = now_ns();
    CLK(clEnqueueNDRangeKernel(q, red, 1, NULL, &rg, &rl, 0, NULL, NULL));
    CLK(clEnqueueReadBuffer(q, dp, CL_TRUE, 0, ngroups * sizeof(float), part, 0, NULL, NULL));
    double s = 0;
    for (uint32_t i = 0; i < ngroups; i++) s += part[i];
    if (r >= 0) v[r] = (now_ns() - t0) / 1e6;
    if (s != want) { fprintf(stderr, "pocl sum %.17g, expected %.17g\n", s, want); return 1; }
  }
  printf("red_pocl_ms %.2f\n", quantile(v, (size_t)reps, 0.5));
  clReleaseMemObject(da), clReleaseMemObject(db), clReleaseMemObject(dc), clReleaseMemObject(dx), clReleaseMemObject(dp);
  clReleaseKernel(mm), clReleaseKernel(red), clReleaseProgram(prog);
  free(a), free(b), free(c), free(x), free(part), free(v);
  return 0;
}

int main(int argc, char **argv) {
  int bar = argc > 1 && !strcmp(argv[1], "barriers");
  if (bar) argc--, argv++;
  int n = argc > 1 ? atoi(argv[1]) : bar ? 5 : 10000;
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
  if (bar) return barriers(ctx, dev, q, n);
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
