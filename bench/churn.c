// churn: cycles of {olCreateQueue, launch the empty kernel (1x1) on it,
// olDestroyQueue without syncing}. Reports VmRSS after cycle 100,000 and at
// the end, and cycles per second. Stops early (and says so) after a time
// budget. Unsynced launches are still running when a snapshot is read, so
// VmRSS is also read "settled": after 300 ms idle (excluded from the rate).
// usage: churn KERNELS.so [CYCLES] [BUDGET_SECONDS]
#define BENCH_OFFLOAD
#include "common.h"
#include <unistd.h>

static long vm_kib(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t kl = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, key, kl) && line[kl] == ':') { v = atol(line + kl + 1); break; }
  if (f) fclose(f);
  return v;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: churn KERNELS.so [CYCLES] [BUDGET_S]\n"); return 2; }
  long cycles = argc > 2 ? atol(argv[2]) : 1000000;
  double budget = (argc > 3 ? atof(argv[3]) : 100) * 1e9;
  const long mark = 100000;
  ol_device_handle_t dev = bench_host_device();
  ol_program_handle_t prog = bench_program(dev, argv[1]);
  ol_symbol_handle_t k = bench_kernel(prog, "empty");
  ol_kernel_launch_size_args_t ls = {1, {1, 1, 1}, {1, 1, 1}, 0};
  long rss0 = vm_kib("VmRSS"), rss_mark = -1, thr_mark = -1, set_mark = -1;
  double t0 = now_ns(), t_mark = 0, t = t0;
  long i = 0;
  for (; i < cycles; i++) {
    ol_queue_handle_t q;
    CK(olCreateQueue(dev, &q));
    CK(olLaunchKernel(q, dev, k, NULL, 0, &ls));
    CK(olDestroyQueue(q));
    if (i + 1 == mark) { rss_mark = vm_kib("VmRSS"); thr_mark = vm_kib("Threads");
      double p = now_ns(); usleep(300000); set_mark = vm_kib("VmRSS"); t0 += now_ns() - p; t_mark = now_ns(); }
    if ((i & 1023) == 1023 && (t = now_ns()) - t0 > budget) { i++; break; }
  }
  t = now_ns();
  long rss_end = vm_kib("VmRSS");
  usleep(300000);
  long set_end = vm_kib("VmRSS");
  printf("churn_cycles %ld\n", i);
  printf("churn_seconds %.1f\n", (t - t0) / 1e9);
  printf("churn_rate %.0f\n", i / ((t - t0) / 1e9));
  printf("churn_rss_start_kib %ld\n", rss0);
  printf("churn_rss_mark_kib %ld\n", rss_mark);
  printf("churn_rss_end_kib %ld\n", rss_end);
  printf("churn_rss_growth_kib %ld\n", rss_mark < 0 ? -1 : rss_end - rss_mark);
  printf("churn_settled_mark_kib %ld\nchurn_settled_end_kib %ld\n", set_mark, set_end);
  printf("churn_settled_growth_kib %ld\n", set_mark < 0 ? -1 : set_end - set_mark);
  printf("churn_hwm_kib %ld\n", vm_kib("VmHWM"));
  printf("churn_threads_mark %ld\nchurn_threads_end %ld\n", thr_mark, vm_kib("Threads"));
  if (t_mark > 0) printf("churn_rate_after_mark %.0f\n", (i - mark) / ((t - t_mark) / 1e9));
  CK(olDestroyProgram(prog));
  CK(olShutDown());
  return 0;
}
