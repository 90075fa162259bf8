// memcpy: 256 MiB olMemcpy (NULL queue) between host memory (malloc) and
// memory of the host device (olMemAlloc DEVICE), both directions, against
// plain memcpy of the same buffers, alternating within one process.
// GB/s = bytes copied / time. usage: memcpy [REPEATS]
#define BENCH_OFFLOAD
#include "common.h"

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 9;
  const size_t size = 256u << 20;
  ol_device_handle_t dev = bench_host_device();
  char *host = malloc(size), *devm;
  CK(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, size, (void **)&devm));
  memset(host, 1, size);
  memset(devm, 2, size);
  double *h2d = malloc(reps * sizeof(double)), *d2h = malloc(reps * sizeof(double));
  double *mh2d = malloc(reps * sizeof(double)), *md2h = malloc(reps * sizeof(double));
  CK(olMemcpy(NULL, devm, dev, host, dev, size)); // warm up
  memcpy(host, devm, size);
  for (int r = 0; r < reps; r++) {
    double t0 = now_ns();
    CK(olMemcpy(NULL, devm, dev, host, dev, size));
    h2d[r] = size / (now_ns() - t0);
    t0 = now_ns();
    memcpy(devm, host, size);
    mh2d[r] = size / (now_ns() - t0);
    t0 = now_ns();
    CK(olMemcpy(NULL, host, dev, devm, dev, size));
    d2h[r] = size / (now_ns() - t0);
    t0 = now_ns();
    memcpy(host, devm, size);
    md2h[r] = size / (now_ns() - t0);
  }
  if (host[12345] != 1 || devm[size - 1] != 1) { fprintf(stderr, "copy wrong\n"); return 1; }
  printf("h2d_ours_gbs %.2f\nh2d_memcpy_gbs %.2f\n", quantile(h2d, reps, 0.5), quantile(mh2d, reps, 0.5));
  printf("d2h_ours_gbs %.2f\nd2h_memcpy_gbs %.2f\n", quantile(d2h, reps, 0.5), quantile(md2h, reps, 0.5));
  CK(olMemFree(devm));
  free(host);
  CK(olShutDown());
  return 0;
}
