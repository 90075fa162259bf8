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
// transfers, not the library). Each thread makes PASSES passes over its
// half (a few ms), the two start together (a spin barrier: both are on a
// core before either starts its clock), and the two-thread rate is their
// calls over the span from the first start to the last end:
//   rate1_K, rate2_K (calls/s, the best of 14 runs: other work on a shared
//     machine only lowers a rate) and scale_K: rate2 / rate1
//   cpu1_K_ns, cpu2_K_ns: CPU time per call of one thread alone, and of
//     each of the two at once (their mean), the least of the runs: what
//     other work on the machine moves least. Equal when the threads share
//     no written cache line.
// for K in meminfo, copy16 and bsearch: the same lookups as meminfo by a
// binary search of the sorted bases in plain C, no library (what the
// machine itself gives two threads that share nothing written).
#define BENCH_OFFLOAD
#include "common.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

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

// what a pass of lookups calls
enum { META, COPY16, BSEARCH };

// on cache lines of its own: the two threads' parts lie side by side
struct part {
  _Alignas(64) char **ptrs;
  size_t n;
  int what;
  double t0, t1; // CLOCK_MONOTONIC ns: start and end of the timed loop
  double cpu;    // the thread's CPU time per call
  uintptr_t sink;
};

enum { PASSES = 4 };

// both threads wait here until both have arrived (bench_barrier)
static _Atomic int arrived;

// the base of the allocation of live (sorted) that contains p, in plain C:
// the two-thread rows' reference for what the machine gives two threads
// that share nothing written
static uintptr_t bsearch_base(const char *p) {
  size_t lo = 0, hi = nlive;
  while (hi - lo > 1) {
    size_t m = lo + (hi - lo) / 2;
    if ((uintptr_t)live[m] <= (uintptr_t)p)
      lo = m;
    else
      hi = m;
  }
  return (uintptr_t)live[lo];
}

// one pass over p's pointers
static void lookups(struct part *p) {
  void *base;
  uintptr_t sum = 0; // a local: p may share a cache line with the other thread's
  for (size_t i = 0; i < p->n; i++) {
    if (p->what == COPY16)
      CK(olMemcpy(NULL, p->ptrs[i], dev, src, dev, 16));
    else if (p->what == META)
      CK(olGetMemInfo(p->ptrs[i], OL_MEM_INFO_BASE, sizeof base, &base));
    else
      sum += bsearch_base(p->ptrs[i]);
  }
  p->sink += sum;
}

static void run_part(struct part *p, int parties) {
  bench_barrier(&arrived, parties);
  double t0 = now_ns(), u0 = thread_cpu_ns();
  for (int k = 0; k < PASSES; k++)
    lookups(p);
  p->cpu = (thread_cpu_ns() - u0) / ((double)p->n * PASSES);
  p->t1 = now_ns();
  p->t0 = t0;
}

static void *thread_main(void *u) {
  run_part(u, 2);
  return NULL;
}

// calls per second (and CPU ns per call) of one thread over the first half
// of order, and of two threads over the two halves at once
static void rates(int what, double *r1, double *r2, double *c1, double *c2) {
  struct part a = {order, LOOKUPS / 2, what, 0, 0, 0, 0}, b = {order + LOOKUPS / 2, LOOKUPS / 2, what, 0, 0, 0, 0};
  atomic_store(&arrived, 0);
  run_part(&a, 1);
  *r1 = a.n * PASSES / (a.t1 - a.t0) * 1e9;
  *c1 = a.cpu;
  atomic_store(&arrived, 0);
  pthread_t t;
  pthread_create(&t, NULL, thread_main, &b);
  run_part(&a, 2);
  pthread_join(t, NULL);
  double t0 = a.t0 < b.t0 ? a.t0 : b.t0, t1 = a.t1 > b.t1 ? a.t1 : b.t1;
  *r2 = (a.n + b.n) * PASSES / (t1 - t0) * 1e9;
  *c2 = (a.cpu + b.cpu) / 2;
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
    // best of the runs: other work on the machine only lowers a rate, and
    // only raises a CPU time
    static const char *key[] = {"meminfo", "copy16", "bsearch"};
    double r1[3] = {0}, r2[3] = {0}, c1[3] = {1e18, 1e18, 1e18}, c2[3] = {1e18, 1e18, 1e18}, x, y, cx, cy;
    rates(META, &x, &y, &cx, &cy); // warm up
    for (int r = 0; r < 2 * BENCH_RUNS; r++) {
      for (int w = META; w <= BSEARCH; w++) {
        rates(w, &x, &y, &cx, &cy);
        r1[w] = x > r1[w] ? x : r1[w];
        r2[w] = y > r2[w] ? y : r2[w];
        c1[w] = cx < c1[w] ? cx : c1[w];
        c2[w] = cy < c2[w] ? cy : c2[w];
      }
    }
    for (int w = META; w <= BSEARCH; w++) {
      printf("rate1_%s %.0f\nrate2_%s %.0f\nscale_%s %.2f\n", key[w], r1[w], key[w], r2[w], key[w], r2[w] / r1[w]);
      printf("cpu1_%s_ns %.2f\ncpu2_%s_ns %.2f\n", key[w], c1[w], key[w], c2[w]);
    }
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
    struct part m = {order, LOOKUPS, META, 0, 0, 0, 0}, c = {order, LOOKUPS, COPY16, 0, 0, 0, 0};
    BENCH_MEDIAN("meminfo_ns", LOOKUPS, lookups(&m));
    BENCH_MEDIAN("copy16_ns", LOOKUPS, lookups(&c));
  }
  for (size_t i = 0; i < nlive; i++) CK(olMemFree(live[i]));
  CK(olShutDown());
  return 0;
}
