// pool: olMemAlloc + olMemFree on the host device against aligned_alloc +
// free of the same sizes in the same process (issue 30). N allocations are
// made live (sizes shuffled, log-uniform from 16 B to MAX bytes); then
// each step frees a random live one and allocates a new random size in its
// place. Prints ns per alloc+free pair for both, 3 rounds alternating,
// the median of each.
// usage: pool N MAX STEPS [queue]    one thread (queue: with an idle
//                                    queue alive, as most programs have)
//        pool threads N MAX STEPS    rate (pairs/s) of 1 and of 2 threads,
//                                    each with its own N/threads live ones,
//                                    best of 7 runs each (other jobs on a
//                                    shared machine only lower a rate),
//                                    and the CPU time per pair of each
//                                    (a line written by both threads
//                                    raises the 2-thread one; time
//                                    slicing by other jobs does not)
// The threads make their live allocations, then start their clocks
// together (bench_barrier), and the 2-thread rate is all their pairs over
// the span from the first start to the last end: a thread that starts
// late, or runs while the other is still making its allocations, lowers
// it, instead of each thread's own rate counting in full.
#define BENCH_OFFLOAD
#include "common.h"
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

static ol_device_handle_t dev;
static uint64_t max_size;

static inline uint64_t rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

// sizes: a shuffled table, log-uniform between 16 and max_size
static size_t *make_sizes(size_t n, uint64_t seed) {
  size_t *v = malloc(n * sizeof *v);
  double lo = log(16.0), hi = log((double)max_size);
  for (size_t i = 0; i < n; i++)
    v[i] = (size_t)exp(lo + (hi - lo) * (double)(rng(&seed) % 1000000) / 1e6);
  return v;
}

typedef struct {
  int ours;
  size_t n, steps;
  uint64_t seed;
  int parties;   // threads that start together (bench_barrier)
  double ns;     // per pair
  double cpu;    // the thread's CPU time per pair
  double t0, t1; // CLOCK_MONOTONIC ns: start and end of the timed steps
} job;

// the threads of a rate wait here until all have made their allocations
static _Atomic int arrived;

static size_t round64(size_t s) { return (s + 63) & ~(size_t)63; }

static void *run(void *arg) {
  job *j = arg;
  void **live = malloc(j->n * sizeof *live);
  size_t nsz = 1 << 16;
  size_t *sizes = make_sizes(nsz, j->seed);
  uint64_t s = j->seed * 7 + 1;
  for (size_t i = 0; i < j->n; i++) {
    size_t sz = sizes[i & (nsz - 1)];
    if (j->ours)
      CK(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, sz, &live[i]));
    else if (!(live[i] = aligned_alloc(64, round64(sz))))
      exit(1);
  }
  if (j->parties > 1)
    bench_barrier(&arrived, j->parties);
  double t = now_ns(), u = thread_cpu_ns();
  for (size_t k = 0; k < j->steps; k++) {
    size_t i = rng(&s) % j->n;
    size_t sz = sizes[k & (nsz - 1)];
    if (j->ours) {
      CK(olMemFree(live[i]));
      CK(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, sz, &live[i]));
    } else {
      free(live[i]);
      if (!(live[i] = aligned_alloc(64, round64(sz))))
        exit(1);
    }
  }
  j->cpu = (thread_cpu_ns() - u) / j->steps;
  j->t1 = now_ns();
  j->t0 = t;
  j->ns = (j->t1 - t) / j->steps;
  // freed in random order too
  for (size_t i = j->n; i > 1; i--) {
    size_t r = rng(&s) % i;
    void *x = live[r];
    live[r] = live[i - 1];
    live[i - 1] = x;
  }
  for (size_t i = 0; i < j->n; i++) {
    if (j->ours)
      CK(olMemFree(live[i]));
    else
      free(live[i]);
  }
  free(sizes);
  free(live);
  return NULL;
}

// rate runs threads jobs at once, started together: their pairs per second
// over the span from the first start to the last end, and in *cpu the mean
// of their CPU time per pair
static double rate(int ours, int threads, size_t n, size_t steps, double *cpu) {
  pthread_t t[2];
  job j[2];
  atomic_store(&arrived, 0);
  for (int i = 0; i < threads; i++) {
    j[i] = (job){.ours = ours, .n = n / threads, .steps = steps, .seed = 12345 + i, .parties = threads};
    pthread_create(&t[i], NULL, run, &j[i]);
  }
  for (int i = 0; i < threads; i++)
    pthread_join(t[i], NULL);
  double t0 = j[0].t0, t1 = j[0].t1;
  *cpu = 0;
  for (int i = 0; i < threads; i++) {
    t0 = j[i].t0 < t0 ? j[i].t0 : t0;
    t1 = j[i].t1 > t1 ? j[i].t1 : t1;
    *cpu += j[i].cpu / threads;
  }
  return (double)steps * threads / (t1 - t0) * 1e9;
}

int main(int argc, char **argv) {
  int threads = argc > 1 && !strcmp(argv[1], "threads");
  int a = threads ? 2 : 1;
  if (argc < a + 3) {
    fprintf(stderr, "usage: pool [threads] N MAX STEPS\n");
    return 2;
  }
  size_t n = (size_t)atol(argv[a]);
  max_size = (uint64_t)atol(argv[a + 1]);
  size_t steps = (size_t)atol(argv[a + 2]);
  dev = bench_host_device();
  ol_queue_handle_t q = NULL;
  if (!threads && argc > a + 3 && !strcmp(argv[a + 3], "queue")) {
    CK(olCreateQueue(dev, &q));
    CK(olSyncQueue(q));
  }
  if (threads) {
    double m1 = 0, m2 = 0, l1 = 0, l2 = 0, c1 = 1e18, c2 = 1e18, c;
    for (int r = 0; r < 7; r++) {
      double x;
      if ((x = rate(1, 1, n, steps, &c)) > m1) m1 = x;
      if (c < c1) c1 = c;
      if ((x = rate(1, 2, n, steps, &c)) > m2) m2 = x;
      if (c < c2) c2 = c;
      if ((x = rate(0, 1, n, steps, &c)) > l1) l1 = x;
      if ((x = rate(0, 2, n, steps, &c)) > l2) l2 = x;
    }
    printf("pool_rate1 %.0f\npool_rate2 %.0f\npool_scale %.2f\n", m1, m2, m2 / m1);
    printf("pool_cpu1_ns %.1f\npool_cpu2_ns %.1f\n", c1, c2);
    printf("pool_libc_rate1 %.0f\npool_libc_rate2 %.0f\npool_libc_scale %.2f\n", l1, l2, l2 / l1);
  } else {
    double o[3], c[3];
    for (int r = 0; r < 3; r++) {
      job j = {.ours = 1, .n = n, .steps = steps, .seed = 777 + r, .parties = 1};
      run(&j);
      o[r] = j.ns;
      job k = {.ours = 0, .n = n, .steps = steps, .seed = 777 + r, .parties = 1};
      run(&k);
      c[r] = k.ns;
    }
    double mo = quantile(o, 3, 0.5), mc = quantile(c, 3, 0.5);
    printf("pool_ours_ns %.1f\npool_libc_ns %.1f\npool_ratio %.2f\n", mo, mc, mo / mc);
  }
  if (q)
    CK(olDestroyQueue(q));
  CK(olShutDown());
  return 0;
}
