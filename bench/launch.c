// launch: latency of olLaunchKernel + olSyncQueue for an empty kernel
// (1 group x 1 work-item, OL_KERNEL_NOARGS) on the host device.
// usage: launch KERNELS.so [ITERATIONS]
// Prints median and p99 of the round trip, medians of its two halves, the
// cost per launch when 10,000 are queued before one sync, and (with the
// `stamp` kernel, which records when it runs) where the round trip goes:
// olLaunchKernel returns -> kernel starts -> olSyncQueue returns.
#define BENCH_OFFLOAD
#include "common.h"

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: launch KERNELS.so [N]\n"); return 2; }
  int n = argc > 2 ? atoi(argv[2]) : 10000;
  ol_device_handle_t dev = bench_host_device();
  ol_program_handle_t prog = bench_program(dev, argv[1]);
  ol_symbol_handle_t k = bench_kernel(prog, "empty");
  ol_queue_handle_t q;
  CK(olCreateQueue(dev, &q));
  ol_kernel_launch_size_args_t ls = {1, {1, 1, 1}, {1, 1, 1}, 0};
  for (int i = 0; i < 2000; i++) { // warm up
    CK(olLaunchKernel(q, dev, k, NULL, 0, &ls));
    CK(olSyncQueue(q));
  }
  double *rt = malloc(n * sizeof *rt), *call = malloc(n * sizeof *call), *sync = malloc(n * sizeof *sync);
  for (int i = 0; i < n; i++) {
    double t0 = now_ns();
    CK(olLaunchKernel(q, dev, k, NULL, 0, &ls));
    double t1 = now_ns();
    CK(olSyncQueue(q));
    double t2 = now_ns();
    rt[i] = t2 - t0, call[i] = t1 - t0, sync[i] = t2 - t1;
  }
  // Enqueue-only throughput: n launches, then one sync.
  double t0 = now_ns();
  for (int i = 0; i < n; i++) CK(olLaunchKernel(q, dev, k, NULL, 0, &ls));
  CK(olSyncQueue(q));
  double batch = (now_ns() - t0) / n;
  // Breakdown with a kernel that writes the time it runs.
  ol_symbol_handle_t ks = bench_kernel(prog, "stamp");
  int64_t stamp = 0;
  struct { int64_t *out; } sa = {&stamp};
  double *start = malloc(n * sizeof *start), *wake = malloc(n * sizeof *wake);
  for (int i = 0; i < n; i++) {
    CK(olLaunchKernel(q, dev, ks, &sa, sizeof sa, &ls));
    double t1 = now_ns();
    CK(olSyncQueue(q));
    double t2 = now_ns();
    start[i] = (double)stamp - t1, wake[i] = t2 - (double)stamp;
  }
  printf("launch_to_start_med_ns %.0f\n", quantile(start, n, 0.5));
  printf("kernel_to_sync_med_ns %.0f\n", quantile(wake, n, 0.5));
  printf("launch_med_ns %.0f\n", quantile(rt, n, 0.5));
  printf("launch_p99_ns %.0f\n", quantile(rt, n, 0.99));
  printf("launch_call_med_ns %.0f\n", quantile(call, n, 0.5));
  printf("launch_sync_med_ns %.0f\n", quantile(sync, n, 0.5));
  printf("launch_batch_ns %.0f\n", batch);
  CK(olDestroyQueue(q));
  CK(olDestroyProgram(prog));
  CK(olShutDown());
  return 0;
}
