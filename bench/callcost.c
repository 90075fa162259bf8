// callcost: per-call cost of olGetDeviceInfo(host, TYPE) and of a full
// olInit/olShutDown cycle for the library given on the command line.
// Prints "info_ns <median>" and "cycle_ns <median>" (medians of 7 runs).
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef const void *res_t;
typedef res_t (*init_fn)(void);
typedef res_t (*iter_fn)(bool (*)(void *, void *), void *);
typedef res_t (*info_fn)(void *, uint32_t, size_t, void *);

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static bool last_device(void *d, void *u) { *(void **)u = d; return true; }

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: callcost LIBRARY\n"); return 2; }
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  init_fn olInit = (init_fn)dlsym(h, "olInit"), olShutDown = (init_fn)dlsym(h, "olShutDown");
  iter_fn olIterateDevices = (iter_fn)dlsym(h, "olIterateDevices");
  info_fn olGetDeviceInfo = (info_fn)dlsym(h, "olGetDeviceInfo");
  enum { RUNS = 7, CALLS = 1000000, CYCLES = 2000 };
  double info[RUNS], cycle[RUNS];

  if (olInit()) return 1;
  void *dev = NULL;
  olIterateDevices(last_device, &dev);
  uint32_t type = 0;
  for (int i = 0; i < CALLS / 10; i++) olGetDeviceInfo(dev, 0, 4, &type); // warm up
  for (int r = 0; r < RUNS; r++) {
    double t0 = now_ns();
    for (int i = 0; i < CALLS; i++)
      if (olGetDeviceInfo(dev, 0, 4, &type)) return 1;
    info[r] = (now_ns() - t0) / CALLS;
  }
  if (olShutDown()) return 1;

  for (int r = 0; r < RUNS; r++) {
    double t0 = now_ns();
    for (int i = 0; i < CYCLES; i++) {
      if (olInit()) return 1;
      if (olShutDown()) return 1;
    }
    cycle[r] = (now_ns() - t0) / CYCLES;
  }
  qsort(info, RUNS, sizeof info[0], cmp);
  qsort(cycle, RUNS, sizeof cycle[0], cmp);
  printf("info_ns %.1f\ncycle_ns %.1f\n", info[RUNS / 2], cycle[RUNS / 2]);
  return 0;
}
