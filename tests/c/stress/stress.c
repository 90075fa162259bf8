// Stress tests of the runtime's lock-free C structures, built standalone
// (no Go runtime in the process) so that ThreadSanitizer sees every access
// (RATIONALE.md, "Why does ThreadSanitizer run over standalone C stress
// programs?"): the allocation index and the fast paths over it
// (impl/allocmap.c), the done events (impl/doneevents.c), the queue and
// kernel mirror with its submissions (impl/queuemirror.c) and the info
// snapshot (impl/snapshot.c). Many threads do at once what the C entry
// points and the Go side (here: this program, under the locks the Go side
// holds) do, and every answer is checked against what the test itself
// filed: a race the sanitizer does not flag may still show as a wrong
// answer.
//
//   stress [area...]   areas: amap done qmirror snap (default: all)
//
// Ends with "stress: N passed, N failed, 0 skipped".
// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "allocmap.h"
#include "doneevents.h"
#include "fastq.h"
#include "queuemirror.h"
#include "snapshot.h"

#ifndef STRESS_SCALE
#define STRESS_SCALE 1
#endif
#define NTHREADS 6

static _Atomic long passed, failed;

#define CHECK(cond, ...)                                                                                           \
  do {                                                                                                             \
    if (cond) {                                                                                                    \
      atomic_fetch_add(&passed, 1);                                                                                \
    } else {                                                                                                       \
      if (atomic_fetch_add(&failed, 1) < 20) {                                                                     \
        fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                            \
        fprintf(stderr, __VA_ARGS__);                                                                              \
        fputc('\n', stderr);                                                                                       \
      }                                                                                                            \
    }                                                                                                              \
  } while (0)

// a cheap per-thread generator (xorshift64*)
static inline uint64_t rnd(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545f4914f6cdd1dull;
}

static void run_threads(int n, void *(*fn)(void *), void *arg) {
  pthread_t t[16];
  for (int i = 0; i < n; i++) {
    if (pthread_create(&t[i], NULL, fn, arg)) {
      perror("pthread_create");
      exit(2);
    }
  }
  for (int i = 0; i < n; i++)
    pthread_join(t[i], NULL);
}

// a thread index handed out to each thread of run_threads
static _Atomic int next_id;
static int thread_id(void) { return atomic_fetch_add(&next_id, 1); }

// ---- the allocation index ---------------------------------------------------
//
// Fixed allocations (real host memory, filed before the threads start)
// must be found at every address inside them, whatever the writers do to
// the table (growing it included); churning allocations, filed and taken
// out by writer threads one at a time (the Go side's allocMap.mu), must be
// found whole or not at all: a hit's device is a function of its base and
// size, so a hit mixed from two nodes shows.

#define HOST_DEV 0x1000u
#define GPU_DEV 0x2000u
#define NFIXED 64
#define CHURN_LIVE 3000 // per writer: past the table's first sizes

static uint64_t dev_for(uint64_t base, uint64_t size) { return (base * 31 + size) | 1; }

static ol_amap *amap_mem, *amap_globals;
static unsigned char *fixed_buf[NFIXED];
static uint64_t fixed_size[NFIXED];
static pthread_mutex_t amap_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int amap_writers_done;
// churning allocations live at made-up addresses in a region of their own
// per writer (never dereferenced; prefetching them never faults), far from
// where the heap, thread stacks and libraries are mapped: a reader's stack
// buffer inside one would be refused as a copy's destination
#define CHURN_BASE 0x300000000000ull
#define CHURN_SPAN (1ull << 36)

static void *amap_writer(void *arg) {
  (void)arg;
  int id = thread_id();
  uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
  uint64_t *bases = calloc(CHURN_LIVE, sizeof *bases), *sizes = calloc(CHURN_LIVE, sizeof *sizes);
  uint64_t region = CHURN_BASE + (uint64_t)id * CHURN_SPAN;
  for (long it = 0; it < 20000L * STRESS_SCALE; it++) {
    int i = (int)(rnd(&seed) % CHURN_LIVE);
    pthread_mutex_lock(&amap_mu);
    if (bases[i] != 0) {
      ol_amap_hit out;
      ol_amap_prefetch(amap_mem, bases[i]);
      int ok = ol_amap_remove(amap_mem, bases[i], sizes[i], &out);
      CHECK(ok && out.base == bases[i] && out.size == sizes[i] && out.dev == dev_for(bases[i], sizes[i]),
            "remove %#llx: %d", (unsigned long long)bases[i], ok);
      bases[i] = 0;
    } else {
      // slot i of the region: 16 MiB each, sizes from 1 byte to 16 MiB,
      // so that several levels are in use
      uint64_t size = 1 + (rnd(&seed) >> (40 + rnd(&seed) % 24));
      uint64_t base = region + (uint64_t)i * (16ull << 20) + (rnd(&seed) % 64) * 64;
      if (base + size > region + (uint64_t)(i + 1) * (16ull << 20))
        size = region + (uint64_t)(i + 1) * (16ull << 20) - base;
      ol_amap_hit a = {.base = base, .size = size, .dev = dev_for(base, size), .kind = 1, .aux = (uint32_t)i, .flags = OL_AMAP_FOREIGN};
      CHECK(ol_amap_insert(amap_mem, &a), "insert %#llx", (unsigned long long)base);
      bases[i] = base, sizes[i] = size;
    }
    pthread_mutex_unlock(&amap_mu);
  }
  pthread_mutex_lock(&amap_mu);
  for (int i = 0; i < CHURN_LIVE; i++)
    if (bases[i] != 0)
      CHECK(ol_amap_remove(amap_mem, bases[i], sizes[i], NULL), "final remove");
  pthread_mutex_unlock(&amap_mu);
  free(bases);
  free(sizes);
  atomic_fetch_add(&amap_writers_done, 1);
  return NULL;
}

static void *amap_reader(void *arg) {
  int writers = *(int *)arg;
  int id = thread_id();
  uint64_t seed = 0x2545f4914f6cdd1dull * (uint64_t)(id + 7);
  unsigned char dst[4096];
  long rounds = 0;
  while (atomic_load(&amap_writers_done) < writers || rounds < 1000) {
    rounds++;
    int f = (int)(rnd(&seed) % NFIXED);
    uint64_t off = rnd(&seed) % fixed_size[f];
    uint64_t p = (uint64_t)(uintptr_t)fixed_buf[f] + off;
    ol_amap_hit h;
    int ok = ol_amap_find(amap_mem, p, &h);
    CHECK(ok && h.base == (uint64_t)(uintptr_t)fixed_buf[f] && h.size == fixed_size[f] && h.dev == HOST_DEV,
          "find fixed %d at +%llu: %d", f, (unsigned long long)off, ok);
    // the fast paths over it: olGetMemInfo and olMemcpy between host buffers
    uint64_t v = 0;
    CHECK(ol_fast_meminfo((void *)(uintptr_t)p, 1 /* BASE */, sizeof v, &v) && v == h.base, "meminfo base");
    size_t n = fixed_size[f] - off < sizeof dst ? fixed_size[f] - off : sizeof dst;
    CHECK(ol_fast_memcpy(NULL, dst, (void *)(uintptr_t)HOST_DEV, (void *)(uintptr_t)p, (void *)(uintptr_t)HOST_DEV,
                         n) &&
              memcmp(dst, (void *)(uintptr_t)p, n) == 0,
          "fast memcpy from fixed %d", f);
    // past its end: refused
    CHECK(!ol_fast_memcpy(NULL, dst, (void *)(uintptr_t)HOST_DEV, (void *)(uintptr_t)p,
                          (void *)(uintptr_t)HOST_DEV, fixed_size[f] - off + 1),
          "fast memcpy past the end of fixed %d", f);
    // somewhere in the churning regions: a whole allocation or none
    int w = (int)(rnd(&seed) % (uint64_t)writers);
    uint64_t q = CHURN_BASE + (uint64_t)w * CHURN_SPAN + rnd(&seed) % ((uint64_t)CHURN_LIVE << 24);
    if (ol_amap_find(amap_mem, q, &h)) {
      CHECK(q - h.base < h.size && h.dev == dev_for(h.base, h.size) && h.kind == 1 && h.flags == OL_AMAP_FOREIGN &&
                h.base == CHURN_BASE + (uint64_t)w * CHURN_SPAN + (uint64_t)h.aux * (16ull << 20) +
                              (h.base & ((16ull << 20) - 1)),
            "torn hit %#llx: base %#llx size %#llx dev %#llx", (unsigned long long)q, (unsigned long long)h.base,
            (unsigned long long)h.size, (unsigned long long)h.dev);
    }
  }
  return NULL;
}

static void test_amap(void) {
  amap_mem = ol_amap_new();
  amap_globals = ol_amap_new();
  CHECK(amap_mem && amap_globals, "ol_amap_new");
  uint64_t seed = 42;
  for (int i = 0; i < NFIXED; i++) {
    fixed_size[i] = 1 + rnd(&seed) % (i % 4 == 0 ? 100000 : 3000);
    fixed_buf[i] = malloc(fixed_size[i]);
    for (uint64_t k = 0; k < fixed_size[i]; k++)
      fixed_buf[i][k] = (unsigned char)(k * 7 + (uint64_t)i);
    ol_amap_hit a = {.base = (uint64_t)(uintptr_t)fixed_buf[i], .size = fixed_size[i], .dev = HOST_DEV, .kind = 2};
    CHECK(ol_amap_insert(amap_mem, &a), "insert fixed %d", i);
  }
  ol_fast_publish(HOST_DEV, amap_mem, amap_globals, 1);
  int writers = 2;
  atomic_store(&amap_writers_done, 0);
  pthread_t w[2];
  for (int i = 0; i < writers; i++)
    pthread_create(&w[i], NULL, amap_writer, NULL);
  run_threads(NTHREADS - writers, amap_reader, &writers);
  for (int i = 0; i < writers; i++)
    pthread_join(w[i], NULL);
  for (int i = 0; i < NFIXED; i++) {
    ol_amap_hit out;
    CHECK(ol_amap_remove(amap_mem, (uint64_t)(uintptr_t)fixed_buf[i], fixed_size[i], &out) && out.dev == HOST_DEV,
          "remove fixed %d", i);
  }
  ol_amap_hit h;
  CHECK(!ol_amap_find(amap_mem, (uint64_t)(uintptr_t)fixed_buf[0], &h), "found after every remove");
  ol_fast_unpublish();
  CHECK(!ol_fast_meminfo(fixed_buf[0], 1, 8, &h), "meminfo answered while unpublished");
  for (int i = 0; i < NFIXED; i++)
    free(fixed_buf[i]);
  // amap_mem and amap_globals stay for the queue mirror's test
}

// ---- done events -------------------------------------------------------------
//
// Makers make, look up and destroy events at once; each event must come
// back with its own queue and device (a handle handed out twice shows),
// and once destroyed must be reported destroyed. A lister walks the live
// ones meanwhile.

#define DONE_WINDOW 40
static _Atomic int done_makers_left;

static void *done_maker(void *arg) {
  (void)arg;
  int id = thread_id();
  uint64_t queue = 0xB300000000000000ull | (uint64_t)id << 8, dev = 0x500 + (uint64_t)id;
  uint64_t live[DONE_WINDOW] = {0};
  uint64_t seed = (uint64_t)id * 977 + 1;
  for (long it = 0; it < 30000L * STRESS_SCALE; it++) {
    int i = (int)(rnd(&seed) % DONE_WINDOW);
    if (live[i] != 0) {
      uint64_t q = 0, d = 0;
      CHECK(ol_done_get(live[i], &q, &d) && q == queue && d == dev, "get %#llx: queue %#llx dev %#llx",
            (unsigned long long)live[i], (unsigned long long)q, (unsigned long long)d);
      unsigned char c = 0;
      CHECK(ol_fast_event_info((void *)(uintptr_t)live[i], 1, 1, &c) && c == 1, "event info IS_COMPLETE");
      CHECK(ol_fast_destroy_event((void *)(uintptr_t)live[i]), "destroy %#llx", (unsigned long long)live[i]);
      CHECK(!ol_done_get(live[i], NULL, NULL) && !ol_done_destroy(live[i]) &&
                ol_done_state(live[i]) == OL_DONE_DESTROYED,
            "destroyed %#llx still live", (unsigned long long)live[i]);
      live[i] = 0;
    } else {
      CHECK(ol_done_make(queue, dev, &live[i]) && live[i] != 0, "make");
    }
  }
  for (int i = 0; i < DONE_WINDOW; i++)
    if (live[i] != 0)
      CHECK(ol_done_destroy(live[i]), "final destroy");
  atomic_fetch_sub(&done_makers_left, 1);
  return NULL;
}

static void *done_lister(void *arg) {
  (void)arg;
  uint64_t ev[NTHREADS * DONE_WINDOW + 1], qs[NTHREADS * DONE_WINDOW + 1];
  while (atomic_load(&done_makers_left) > 0) {
    int n = ol_done_list(ev, qs, NTHREADS * DONE_WINDOW + 1);
    CHECK(n >= 0 && n <= NTHREADS * DONE_WINDOW, "list: %d live", n);
    for (int i = 0; i < n && i <= NTHREADS * DONE_WINDOW; i++)
      CHECK((qs[i] >> 56) == 0xB3, "listed queue %#llx", (unsigned long long)qs[i]);
    sched_yield();
  }
  return NULL;
}

// Shutdown racing makers (what ol_done_begin/end allow for: a call that
// races the final olShutDown): makes may be swept at any time, so only a
// hit is checked.
static _Atomic int done_cycles_stop;
static void *done_racer(void *arg) {
  (void)arg;
  int id = thread_id();
  uint64_t queue = 0xB300000000000000ull | (uint64_t)id << 8, e;
  while (!atomic_load(&done_cycles_stop)) {
    if (!ol_done_make(queue, 7, &e))
      continue;
    uint64_t q = 0;
    if (ol_done_get(e, &q, NULL))
      CHECK(q == queue, "racing get: queue %#llx", (unsigned long long)q);
    ol_done_destroy(e);
    int st = ol_done_state(e);
    CHECK(st == OL_DONE_DESTROYED || st == OL_DONE_EARLIER, "racing state %d", st);
  }
  return NULL;
}

static void test_done(void) {
  ol_fast_publish(HOST_DEV, amap_mem, amap_globals, 0);
  ol_done_begin();
  atomic_store(&done_makers_left, NTHREADS - 1);
  pthread_t l;
  pthread_create(&l, NULL, done_lister, NULL);
  run_threads(NTHREADS - 1, done_maker, NULL);
  pthread_join(l, NULL);
  CHECK(ol_done_list(NULL, NULL, 0) == 0, "live events after every destroy");
  pthread_t r[3];
  for (int i = 0; i < 3; i++)
    pthread_create(&r[i], NULL, done_racer, NULL);
  for (int c = 0; c < 200 * STRESS_SCALE; c++) {
    ol_done_end();
    ol_done_begin();
    sched_yield();
  }
  atomic_store(&done_cycles_stop, 1);
  for (int i = 0; i < 3; i++)
    pthread_join(r[i], NULL);
  ol_done_end();
  CHECK(ol_done_list(NULL, NULL, 0) == 0, "live events after ol_done_end");
  ol_done_begin();
}

// ---- the queue and kernel mirror --------------------------------------------
//
// An owner thread per queue slot files a queue, lets it be used, takes it
// out, waits for the C paths (ol_qmirror_quiesce) and only then releases
// it (owner = 0), recycling its ol_fastq block for the next queue of the
// slot, as plugins/internal/fastq does. Submitters take handles from a
// shared array (stale ones included, on purpose) and sync, make done
// events, copy and launch; the plugin's copy and launch here fail the
// test when they run on a released queue or a cleared kernel. A kernel
// owner likewise files and clears a kernel with a parameter list.

#define NQUEUES 4
typedef struct {
  ol_fastq f;
  _Atomic uint64_t owner; // the live queue's handle, 0 once released
  _Atomic uint64_t submitted;
} fake_queue;

typedef struct {
  _Atomic uint64_t owner; // the live kernel's handle, 0 once cleared
  _Atomic uint64_t launched;
} fake_kernel;

static fake_queue fqs[NQUEUES];
static _Atomic uint64_t queue_handles[NQUEUES];
// the generation of each slot's queue being taken out (set before the clear)
static _Atomic uint64_t clearing_gen[NQUEUES];
static fake_kernel fk;
static _Atomic uint64_t kernel_handle;
static _Atomic int mirror_stop;
#define DEV_BUF_BASE 0x2f0000000000ull // (made up, as CHURN_BASE)
#define DEV_BUF_SIZE (1ull << 20)

static int fake_copy(ol_fastq *q, int dir, uint64_t dst, uint64_t src, uint64_t n) {
  fake_queue *f = (fake_queue *)q;
  CHECK(atomic_load(&f->owner) != 0, "copy on a released queue");
  CHECK(dir == OL_FASTQ_ON_DEVICE && n > 0 && dst != src, "copy dir %d", dir);
  atomic_fetch_add(&f->submitted, 1);
  return 1;
}

static int fake_launch(ol_fastq *q, const void *kernel, const void *args, uint64_t size,
                       const ol_fastq_launch_size *ls) {
  fake_queue *f = (fake_queue *)q;
  fake_kernel *k = (fake_kernel *)kernel;
  CHECK(atomic_load(&f->owner) != 0, "launch on a released queue");
  CHECK(k == &fk && atomic_load(&k->owner) != 0, "launch of a cleared kernel");
  // 23.1's two arguments, laid out at the kernel's parameter offsets
  uint64_t a = 0, b = 0;
  if (size == 16) {
    memcpy(&a, args, 8);
    memcpy(&b, (const char *)args + 8, 8);
  }
  CHECK(size == 16 && a == 0x1111 && b == 0x2222 && ls->Dimensions == 1, "launch args size %llu",
        (unsigned long long)size);
  atomic_fetch_add(&k->launched, 1);
  return 1;
}

static void *queue_owner(void *arg) {
  int slot = (int)(intptr_t)arg;
  fake_queue *f = &fqs[slot];
  f->f.copy = fake_copy;
  f->f.launch = fake_launch;
  for (uint64_t gen = 1; !atomic_load(&mirror_stop); gen++) {
    uint64_t h = 0xB3ull << 56 | (gen & 0xffffffff) << 24 | (uint64_t)(slot * 1031 + 5);
    // a recycled block starts seen idle after the counts it kept
    __atomic_store_n(&f->f.idle, __atomic_load_n(&f->f.begun, __ATOMIC_SEQ_CST), __ATOMIC_SEQ_CST);
    atomic_store(&f->owner, h);
    CHECK(ol_qmirror_set(h, GPU_DEV, &f->f), "ol_qmirror_set");
    atomic_store(&queue_handles[slot], h);
    for (int i = 0; i < 50; i++)
      sched_yield();
    atomic_store(&clearing_gen[slot], gen);
    ol_qmirror_clear(h);
    ol_qmirror_quiesce(&f->f);
    atomic_store(&f->owner, 0); // the plugin releases the queue
  }
  return NULL;
}

static void *kernel_owner(void *arg) {
  (void)arg;
  const uint64_t params[4] = {0, 8, 8, 8};
  for (uint64_t gen = 1; !atomic_load(&mirror_stop); gen++) {
    uint64_t h = 0xB6ull << 56 | (gen & 0xffffffff) << 24 | 77;
    atomic_store(&fk.owner, h);
    CHECK(ol_kmirror_set(h, GPU_DEV, &fk, 1, 2, params), "ol_kmirror_set");
    atomic_store(&kernel_handle, h);
    for (int i = 0; i < 50; i++)
      sched_yield();
    ol_kmirror_clear(h);
    atomic_store(&fk.owner, 0);
  }
  return NULL;
}

static void *submitter(void *arg) {
  (void)arg;
  int id = thread_id();
  uint64_t seed = (uint64_t)id * 31337 + 3;
  uint64_t a = 0x1111, b = 0x2222;
  void *ptrs[2] = {&a, &b};
  size_t sizes[2] = {8, 8};
  ol_fastq_launch_size ls = {1, {4, 1, 1}, {64, 1, 1}, 0};
  for (long it = 0; it < 40000L * STRESS_SCALE; it++) {
    int slot = (int)(rnd(&seed) % NQUEUES);
    uint64_t h = atomic_load(&queue_handles[slot]);
    void *queue = (void *)(uintptr_t)h;
    switch (rnd(&seed) % 5) {
    case 0: {
      uint64_t dst = DEV_BUF_BASE + rnd(&seed) % (DEV_BUF_SIZE / 2);
      uint64_t src = DEV_BUF_BASE + DEV_BUF_SIZE / 2 + rnd(&seed) % (DEV_BUF_SIZE / 4);
      ol_fast_memcpy(queue, (void *)(uintptr_t)dst, (void *)(uintptr_t)GPU_DEV, (void *)(uintptr_t)src,
                     (void *)(uintptr_t)GPU_DEV, 64);
      break;
    }
    case 1: {
      uint64_t e;
      if (ol_fast_event(queue, &e)) {
        uint64_t q = 0;
        CHECK(ol_fast_event_info((void *)(uintptr_t)e, 0, sizeof q, &q) && q == h, "event's queue");
        CHECK(ol_fast_sync_event((void *)(uintptr_t)e), "sync a done event");
        // (refused only once the queue is being taken out)
        CHECK(ol_fast_wait_events(queue, &e, 1) || atomic_load(&clearing_gen[slot]) >= ((h >> 24) & 0xffffffff),
              "wait for a done event");
        // more events than the address space holds: refused (Go names
        // the error) without reading past the one given (AddressSanitizer
        // reports the read)
        CHECK(!ol_fast_wait_events(queue, &e, SIZE_MAX) && !ol_fast_wait_events(queue, &e, SIZE_MAX / 8 - 1),
              "wait for SIZE_MAX events answered in C");
        CHECK(ol_fast_destroy_event((void *)(uintptr_t)e), "destroy the done event");
      }
      break;
    }
    case 2:
      ol_fast_sync(queue);
      // as the plugin's sync that found the queue idle: idle = begun
      // when nothing is in flight (never lowering it)
      {
        ol_fastq *q = &fqs[slot].f;
        uint64_t bg = __atomic_load_n(&q->begun, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&q->handed, __ATOMIC_SEQ_CST) == bg) {
          uint64_t old = __atomic_load_n(&q->idle, __ATOMIC_SEQ_CST);
          while (old < bg && !__atomic_compare_exchange_n(&q->idle, &old, bg, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            ;
        }
      }
      break;
    case 3:
      ol_fast_launch23(queue, (void *)(uintptr_t)GPU_DEV, (void *)(uintptr_t)atomic_load(&kernel_handle), &ls, NULL,
                       2, ptrs, sizes);
      break;
    case 4: {
      // 22.1's form: the plugin gets the buffer as given
      uint64_t buf[2] = {0x1111, 0x2222};
      ol_fast_launch(queue, (void *)(uintptr_t)GPU_DEV, (void *)(uintptr_t)atomic_load(&kernel_handle), buf,
                     sizeof buf, &ls);
      break;
    }
    }
  }
  return NULL;
}

static void test_qmirror(void) {
  ol_fast_publish(HOST_DEV, amap_mem, amap_globals, 1);
  ol_amap_hit d = {.base = DEV_BUF_BASE, .size = DEV_BUF_SIZE, .dev = GPU_DEV, .kind = 1 /* DEVICE */, .flags = OL_AMAP_FOREIGN};
  CHECK(ol_amap_insert(amap_mem, &d), "insert device buffer");
  atomic_store(&mirror_stop, 0);
  pthread_t owners[NQUEUES + 1];
  for (int i = 0; i < NQUEUES; i++)
    pthread_create(&owners[i], NULL, queue_owner, (void *)(intptr_t)i);
  pthread_create(&owners[NQUEUES], NULL, kernel_owner, NULL);
  run_threads(NTHREADS - 2, submitter, NULL);
  atomic_store(&mirror_stop, 1);
  for (int i = 0; i <= NQUEUES; i++)
    pthread_join(owners[i], NULL);
  uint64_t copies = 0;
  for (int i = 0; i < NQUEUES; i++) {
    copies += atomic_load(&fqs[i].submitted);
    CHECK(__atomic_load_n(&fqs[i].f.begun, __ATOMIC_SEQ_CST) == __atomic_load_n(&fqs[i].f.handed, __ATOMIC_SEQ_CST),
          "queue %d: begun != handed after quiesce", i);
  }
  // some of each went through (a test that submits nothing proves nothing)
  CHECK(copies > 0 && atomic_load(&fk.launched) > 0, "copies %llu launches %llu", (unsigned long long)copies,
        (unsigned long long)atomic_load(&fk.launched));
  ol_amap_hit out;
  CHECK(ol_amap_remove(amap_mem, DEV_BUF_BASE, DEV_BUF_SIZE, &out), "remove device buffer");
  ol_fast_unpublish();
}

// ---- the info snapshot -----------------------------------------------------
//
// A publisher rewrites the snapshot, version after version (one kind, 8
// objects, 2 properties whose bytes all hold the version), and
// unpublishes it now and then; readers must get a whole value of one
// version, or nothing.

#define SNAP_SLOTS 8
#define SNAP_PROPS 2
static _Atomic int snap_stop;

static size_t snap_build(uint64_t *w, uint64_t version) {
  memset(w, 0, sizeof(uint64_t) * 2 * OL_SNAP_MAX_KINDS);
  uint64_t first = 2 * OL_SNAP_MAX_KINDS, rec = SNAP_PROPS + 1;
  uint64_t vals = first + SNAP_SLOTS * rec, list = vals + SNAP_SLOTS * SNAP_PROPS * 4;
  w[0] = SNAP_SLOTS | (uint64_t)SNAP_PROPS << 24 | first << 32;
  w[OL_SNAP_MAX_KINDS] = 1ull << 63 | list << 32 | SNAP_SLOTS;
  for (uint64_t s = 0; s < SNAP_SLOTS; s++) {
    w[first + s * rec] = 0xB1ull << 56 | s;
    w[list + s] = 0xB1ull << 56 | s;
    for (uint64_t p = 0; p < SNAP_PROPS; p++) {
      uint64_t at = vals + (s * SNAP_PROPS + p) * 4;
      w[first + s * rec + 1 + p] = 32 | at << 32;
      for (int k = 0; k < 4; k++)
        w[at + k] = version;
    }
  }
  return list + SNAP_SLOTS;
}

static void *snap_publisher(void *arg) {
  (void)arg;
  static uint64_t w[512];
  for (uint64_t v = 1; !atomic_load(&snap_stop); v++) {
    size_t n = snap_build(w, v);
    ol_snap_publish(w, n);
    if (v % 16 == 0)
      ol_snap_unpublish();
    sched_yield();
  }
  return NULL;
}

static void *snap_reader(void *arg) {
  (void)arg;
  int id = thread_id();
  uint64_t seed = (uint64_t)id * 65537 + 11;
  long got = 0;
  for (long it = 0; it < 60000L * STRESS_SCALE; it++) {
    uint64_t s = rnd(&seed) % SNAP_SLOTS, buf[4];
    uint32_t p = (uint32_t)(rnd(&seed) % SNAP_PROPS);
    if (ol_snap_info(0, 0xB1ull << 56 | s, p, sizeof buf, buf)) {
      got++;
      CHECK(buf[0] != 0 && buf[0] == buf[1] && buf[1] == buf[2] && buf[2] == buf[3], "torn value %llu %llu %llu %llu",
            (unsigned long long)buf[0], (unsigned long long)buf[1], (unsigned long long)buf[2],
            (unsigned long long)buf[3]);
    }
    size_t sz = 0;
    if (ol_snap_size(0, 0xB1ull << 56 | s, p, &sz))
      CHECK(sz == 32, "size %zu", sz);
    uint64_t l[SNAP_SLOTS];
    int n = ol_snap_list(0, l, SNAP_SLOTS);
    if (n >= 0)
      CHECK(n == SNAP_SLOTS && l[3] == (0xB1ull << 56 | 3), "list %d", n);
  }
  // A loaded machine may not run the publisher while the loop above runs
  // (a snapshot is answered only while one is published): wait for one
  // answer, for at most 10 s, before calling it missing.
  time_t until = time(NULL) + 10;
  uint64_t buf[4];
  while (got == 0 && time(NULL) < until) {
    if (ol_snap_info(0, 0xB1ull << 56, 0, sizeof buf, buf))
      got++;
    else
      sched_yield();
  }
  CHECK(got > 0, "no snapshot answer at all");
  return NULL;
}

static void test_snap(void) {
  atomic_store(&snap_stop, 0);
  pthread_t p;
  pthread_create(&p, NULL, snap_publisher, NULL);
  run_threads(NTHREADS - 1, snap_reader, NULL);
  atomic_store(&snap_stop, 1);
  pthread_join(p, NULL);
  ol_snap_unpublish();
}

static int wanted(int argc, char **argv, const char *area) {
  if (argc < 2)
    return 1;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], area) == 0)
      return 1;
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  // the queue mirror and done events need the index, published
  test_amap();
  printf("amap: done (%ld checks so far)\n", atomic_load(&passed) + atomic_load(&failed));
  if (wanted(argc, argv, "done")) {
    test_done();
    printf("done: done (%ld checks so far)\n", atomic_load(&passed) + atomic_load(&failed));
  } else {
    ol_done_begin();
  }
  if (wanted(argc, argv, "qmirror")) {
    test_qmirror();
    printf("qmirror: done (%ld checks so far)\n", atomic_load(&passed) + atomic_load(&failed));
  }
  if (wanted(argc, argv, "snap")) {
    test_snap();
    printf("snap: done (%ld checks so far)\n", atomic_load(&passed) + atomic_load(&failed));
  }
  ol_done_end();
  ol_amap_free(amap_mem);
  ol_amap_free(amap_globals);
  printf("stress: %ld passed, %ld failed, 0 skipped\n", atomic_load(&passed), atomic_load(&failed));
  return atomic_load(&failed) ? 1 : 0;
}
