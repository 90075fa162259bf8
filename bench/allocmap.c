// allocmap: the allocation map at scale, on the host device.
// usage: allocmap LIVE        (per-call costs with LIVE live allocations)
//        allocmap threads LIVE (lookup rate, 1 thread against 2)
// LIVE allocations (DEVICE, sizes 32..256 bytes shuffled) are made first
// and live throughout. Then, each the median of 7 runs, per call:
//   free_ns: olMemFree of 10,000 random live ones (LIVE / 2 if fewer), in
//     random order
//   alloc_ns: olMemAlloc of 10,000 (shuffled sizes) to take their places
//   meminfo_ns: olGetMemInfo(BASE) of an interior pointer of a random live
//     allocation (100,000 calls, a precomputed random order)
//   copy16_ns: olMemcpy of 16 bytes from a host buffer into a random live
//     allocation (NULL queue)
// With "threads": meminfo and copy16 lookups per second on one thread, and
// on two threads at once on the two halves of the allocations (in address
// order: two threads writing one cache line would measure the line's
// transfers, not the library):
//   rate1_meminfo, rate2_meminfo, rate1_copy16, rate2_copy16 (calls/s, the
//     best of 14 runs: other work on a shared machine only lowers a rate)
//   scale_meminfo, scale_copy16: rate2 / rate1
#define BENCH_OFFLOAD
#include "common.h"

#include <pthread.h>

static ol_device_handle_t dev;
static char **live;
static size_t nlive;
static uint64_t rng_state = 88172645463325252ull;

static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static void shuffle(char **v, size_t n) {
  for (size_t i = n; i > 1; i--) {
    size_t j = rnd() % i;
    char *t = v[i - 1];
    v[i - 1] = v[j];
    v[j] = t;
  }
}

static int cmp_ptr(const void *a, const void *b) {
  uintptr_t x = (uintptr_t) * (char *const *)a, y = (uintptr_t) * (char *const *)b;
  return (x > y) - (x < y);
}

static size_t small_size(void) { return 32 + rnd() % 225; }

enum { LOOKUPS = 100000 };
static int EXTRA = 10000; // min(10,000, LIVE / 2)

static char **order; // LOOKUPS interior pointers
static char src[16];

// the first EXTRA of live (shuffled) are freed, then allocated again
static void do_free(void) {
  for (int i = 0; i < EXTRA; i++) CK(olMemFree(live[i]));
}
static void do_alloc(void) {
  for (int i = 0; i < EXTRA; i++) CK(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, small_size(), (void **)&live[i]));
}

struct part {
  char **ptrs;
  size_t n;
  int copy;
  double ns;
};

static void run_part(struct part *p) {
  double t0 = now_ns();
  void *base;
  for (size_t i = 0; i < p->n; i++) {
    if (p->copy)
      CK(olMemcpy(NULL, p->ptrs[i], dev, src, dev, 16));
    else
      CK(olGetMemInfo(p->ptrs[i], OL_MEM_INFO_BASE, sizeof base, &base));
  }
  p->ns = now_ns() - t0;
}

static void *thread_main(void *u) {
  run_part(u);
  return NULL;
}

// calls per second of one thread over the first half of order, and of two
// threads over the two halves at once (the slower one's time)
static void rates(int copy, double *r1, double *r2) {
  struct part a = {order, LOOKUPS / 2, copy, 0}, b = {order + LOOKUPS / 2, LOOKUPS / 2, copy, 0};
  run_part(&a);
  *r1 = a.n / a.ns * 1e9;
  pthread_t t;
  pthread_create(&t, NULL, thread_main, &b);
  run_part(&a);
  pthread_join(t, NULL);
  *r2 = (a.n + b.n) / (a.ns > b.ns ? a.ns : b.ns) * 1e9;
}

int main(int argc, char **argv) {
  int threads = argc > 2 && !strcmp(argv[1], "threads");
  nlive = (size_t)atol(argv[argc - 1]);
  if (nlive / 2 < (size_t)EXTRA)
    EXTRA = (int)(nlive / 2);
  if (nlive < 2) { fprintf(stderr, "usage: allocmap [threads] LIVE\n"); return 2; }
  dev = bench_host_device();
  live = malloc(nlive * sizeof *live);
  order = malloc(LOOKUPS * sizeof *order);
  for (size_t i = 0; i < nlive; i++) CK(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, small_size(), (void **)&live[i]));
  shuffle(live, nlive);
  if (threads) {
    // the two halves of order take their allocations from the two halves
    // of live in address order: the threads never share one, nor (but at
    // the boundary) a cache line
    qsort(live, nlive, sizeof *live, cmp_ptr);
    for (size_t i = 0; i < LOOKUPS; i++) {
      size_t h = i < LOOKUPS / 2 ? 0 : nlive / 2;
      order[i] = live[h + rnd() % (nlive / 2)] + rnd() % 16;
    }
    // best of the runs: other work on the machine only lowers a rate
    double v1 = 0, v2 = 0, c1 = 0, c2 = 0, x, y;
    rates(0, &x, &y); // warm up
    for (int r = 0; r < 2 * BENCH_RUNS; r++) {
      rates(0, &x, &y);
      v1 = x > v1 ? x : v1;
      v2 = y > v2 ? y : v2;
      rates(1, &x, &y);
      c1 = x > c1 ? x : c1;
      c2 = y > c2 ? y : c2;
    }
    printf("rate1_meminfo %.0f\nrate2_meminfo %.0f\n", v1, v2);
    printf("rate1_copy16 %.0f\nrate2_copy16 %.0f\n", c1, c2);
    printf("scale_meminfo %.2f\nscale_copy16 %.2f\n", v2 / v1, c2 / c1);
  } else {
    double a[BENCH_RUNS], f[BENCH_RUNS];
    do_free(); // warm up
    do_alloc();
    for (int r = 0; r < BENCH_RUNS; r++) {
      shuffle(live, nlive);
      double t0 = now_ns();
      do_free();
      f[r] = (now_ns() - t0) / EXTRA;
      t0 = now_ns();
      do_alloc();
      a[r] = (now_ns() - t0) / EXTRA;
    }
    printf("alloc_ns %.1f\nfree_ns %.1f\n", quantile(a, BENCH_RUNS, 0.5), quantile(f, BENCH_RUNS, 0.5));
    for (size_t i = 0; i < LOOKUPS; i++) order[i] = live[rnd() % nlive] + rnd() % 16;
    struct part m = {order, LOOKUPS, 0, 0}, c = {order, LOOKUPS, 1, 0};
    BENCH_MEDIAN("meminfo_ns", LOOKUPS, run_part(&m));
    BENCH_MEDIAN("copy16_ns", LOOKUPS, run_part(&c));
  }
  for (size_t i = 0; i < nlive; i++) CK(olMemFree(live[i]));
  CK(olShutDown());
  return 0;
}
