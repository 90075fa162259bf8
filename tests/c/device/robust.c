/* Hostile inputs: sizes that wrap, ranges past the end of an allocation,
 * handles that must stay dead, waits that could never end, and many blocked
 * host functions. Each case used to succeed wrongly, crash, hang or reuse a
 * handle.
 * SPDX-License-Identifier: Apache-2.0 */
#include "oldevices.h"

struct out_args {
  uint32_t *out;
};

/* ------------------------------------------------------------ sizes --- */

static void test_alloc_sizes_that_wrap(void) {
  OLC_HOST_VISIBLE();
  static const size_t sizes[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 62, SIZE_MAX / 2 + 1,
                                 (size_t)1 << 62};
  for (int t = OL_ALLOC_TYPE_HOST; t <= OL_ALLOC_TYPE_MANAGED; t++)
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      void *p = (void *)0x1234;
      ol_result_t r = olMemAlloc(olc_dev, (ol_alloc_type_t)t, sizes[i], &p);
      if (!OLC_TRUE(r != NULL && (r->Code == OL_ERRC_OUT_OF_RESOURCES || r->Code == OL_ERRC_INVALID_SIZE))) {
        printf("    olMemAlloc(type %d, %zu) -> %s\n", t, sizes[i], r ? r->Details : "success");
        if (!r) {
          size_t got = 1;
          olGetMemInfo(p, OL_MEM_INFO_SIZE, sizeof got, &got);
          printf("    ... and OL_MEM_INFO_SIZE says %zu\n", got);
          olMemFree(p);
        }
        continue;
      }
      char want[32];
      snprintf(want, sizeof want, "%zu", sizes[i]);
      OLC_TRUE(r->Details && strstr(r->Details, want));
      OLC_EQ((uintptr_t)p, 0x1234); /* untouched */
    }
  /* sizes that fit still work, and report their size */
  void *p = olc_alloc(OL_ALLOC_TYPE_DEVICE, 100);
  size_t got = 0;
  if (p) {
    OLC_OK(olGetMemInfo(p, OL_MEM_INFO_SIZE, sizeof got, &got));
    OLC_EQ(got, 100);
    OLC_OK(olMemFree(p));
  }
}

static ol_symbol_handle_t counter_kernel(ol_program_handle_t *prog) {
  *prog = olc_program("single_counter");
  return olc_kernel(*prog, "single_counter");
}

static void launch3(ol_queue_handle_t q, ol_symbol_handle_t k, void *args, size_t n,
                    uint32_t gx, uint32_t gy, uint32_t gz, uint32_t sx, uint32_t sy,
                    uint32_t sz, unsigned code, const char *part) {
  ol_kernel_launch_size_args_t l;
  memset(&l, 0, sizeof l);
  l.Dimensions = 3;
  l.NumGroups.x = gx, l.NumGroups.y = gy, l.NumGroups.z = gz;
  l.GroupSize.x = sx, l.GroupSize.y = sy, l.GroupSize.z = sz;
  ol_result_t r = olLaunchKernel(q, olc_dev, k, args, n, &l);
  if (code == OL_ERRC_SUCCESS)
    OLC_OK(r);
  else
    OLC_ERR_HAS(r, code, part);
}

static void test_grids_that_wrap(void) {
  OLC_HOST_VISIBLE();
  OLC_ONLY(OLC_HOST, "the host device's grid limit (MAX_WORK_SIZE 2^32-1) and its messages");
  ol_program_handle_t prog = NULL;
  ol_symbol_handle_t k = counter_kernel(&prog);
  uint32_t *c = olc_alloc(OL_ALLOC_TYPE_MANAGED, sizeof(uint32_t));
  if (!k || !c)
    return;
  *c = 0;
  struct out_args a = {c};
  ol_queue_handle_t q = olc_queue();
  for (int onq = 0; onq < 2; onq++) {
    ol_queue_handle_t qq = onq ? q : NULL;
    /* every dimension within its limit; the total wraps 64 bits */
    launch3(qq, k, &a, sizeof a, 1u << 31, 1u << 31, 4, 1, 1, 1, OL_ERRC_INVALID_SIZE,
            "18446744073709551616");
    launch3(qq, k, &a, sizeof a, UINT32_MAX, UINT32_MAX, UINT32_MAX, 1, 1, 1,
            OL_ERRC_INVALID_SIZE, "79228162458924105385300197375");
    /* one past the device's MAX_WORK_SIZE */
    launch3(qq, k, &a, sizeof a, 65536, 65536, 1, 1, 1, 1, OL_ERRC_INVALID_SIZE,
            "4294967296");
    launch3(qq, k, &a, sizeof a, 1u << 22, 1, 1, 32, 32, 1, OL_ERRC_INVALID_SIZE,
            "4294967296");
  }
  OLC_OK(olSyncQueue(q));
  OLC_EQ(*c, 0); /* nothing of the refused launches ran */
  /* the device says what the limit is */
  uint32_t maxw = 0;
  OLC_OK(olGetDeviceInfo(olc_dev, OL_DEVICE_INFO_MAX_WORK_SIZE, sizeof maxw, &maxw));
  OLC_EQ(maxw, UINT32_MAX);
  /* a 3-D grid that fits runs every work-item */
  launch3(q, k, &a, sizeof a, 1u << 10, 1u << 6, 1u << 4, 4, 2, 1, OL_ERRC_SUCCESS, NULL);
  OLC_OK(olSyncQueue(q));
  OLC_EQ(*c, (1u << 10) * (1u << 6) * (1u << 4) * 8u);
  OLC_OK(olDestroyQueue(q));
  OLC_OK(olMemFree(c));
  OLC_OK(olDestroyProgram(prog));
}

static void test_copy_and_fill_sizes(void) {
  OLC_HOST_VISIBLE();
  enum { N = 4096 };
  unsigned char *a = olc_alloc(OL_ALLOC_TYPE_DEVICE, N);
  unsigned char *b = olc_alloc(OL_ALLOC_TYPE_HOST, N);
  unsigned char *pat = olc_alloc(OL_ALLOC_TYPE_HOST, 64);
  if (!a || !b || !pat)
    return;
  olc_set(OL_ALLOC_TYPE_DEVICE, a, 1, N), memset(b, 2, N), memset(pat, 3, 64);
  ol_queue_handle_t q = olc_queue();
  for (int onq = 0; onq < 2; onq++) {
    ol_queue_handle_t qq = onq ? q : NULL;
    printf("    %s\n", onq ? "on a queue" : "without a queue");
    OLC_ERR_HAS(olMemcpy(qq, a, olc_dev, b, olc_dev, SIZE_MAX), OL_ERRC_INVALID_SIZE, "18446744073709551615");
    OLC_ERR_CODE(olMemcpy(qq, a, olc_dev, b, olc_dev, SIZE_MAX / 2), OL_ERRC_INVALID_SIZE);
    OLC_ERR_HAS(olMemFill(qq, a, 1, pat, SIZE_MAX), OL_ERRC_INVALID_SIZE, "18446744073709551615");
    OLC_ERR_CODE(olMemFill(qq, a, 4, pat, SIZE_MAX - 3), OL_ERRC_INVALID_SIZE);
    /* a pattern of 2^40 bytes: nothing is copied before the sizes are checked */
    OLC_OK(olMemFill(qq, a, (size_t)1 << 40, pat, 0));
    OLC_ERR_HAS(olMemFill(qq, a, (size_t)1 << 40, pat, (size_t)1 << 41), OL_ERRC_INVALID_SIZE,
                "2199023255552");
    /* ranges that start in an allocation and run past its end */
    char base[64];
    snprintf(base, sizeof base, "%#lx", (unsigned long)(uintptr_t)a);
    OLC_ERR_HAS(olMemcpy(qq, a + 1, olc_dev, b, olc_dev, N), OL_ERRC_INVALID_SIZE, base);
    OLC_ERR_HAS(olMemcpy(qq, b, olc_dev, a + N - 8, olc_dev, 9), OL_ERRC_INVALID_SIZE, "4096-byte");
    OLC_ERR_HAS(olMemFill(qq, a + 16, 1, pat, N - 15), OL_ERRC_INVALID_SIZE, "4096-byte");
    OLC_ERR_HAS(olMemFill(qq, a, 64, pat + 1, 64), OL_ERRC_INVALID_SIZE, "64-byte");
    /* nothing was written by the refused calls */
    if (qq)
      OLC_OK(olSyncQueue(qq));
    size_t bad = 0;
    unsigned char *ha = olc_cpu_ok(OL_ALLOC_TYPE_DEVICE) ? a : olc_fetch(a, N);
    for (size_t i = 0; ha && i < N; i++)
      bad += ha[i] != 1 || b[i] != 2;
    if (ha != a)
      free(ha);
    OLC_EQ(bad, 0);
    /* up to the end exactly is fine */
    OLC_OK(olMemcpy(qq, a + 8, olc_dev, b, olc_dev, N - 8));
    OLC_OK(olMemFill(qq, b + N - 64, 64, pat, 64));
    if (qq)
      OLC_OK(olSyncQueue(qq));
    ha = olc_cpu_ok(OL_ALLOC_TYPE_DEVICE) ? a : olc_fetch(a, N);
    if (ha) {
      OLC_EQ(ha[7], 1), OLC_EQ(ha[8], 2), OLC_EQ(ha[N - 1], 2);
      if (ha != a)
        free(ha);
    }
    OLC_EQ(b[N - 65], 2), OLC_EQ(b[N - 64], 3), OLC_EQ(b[N - 1], 3);
    olc_set(OL_ALLOC_TYPE_DEVICE, a, 1, N), memset(b, 2, N);
  }
  OLC_OK(olDestroyQueue(q));
  OLC_OK(olMemFree(a)), OLC_OK(olMemFree(b)), OLC_OK(olMemFree(pat));
}

/* Image and argument sizes are checked before anything is copied or read. */
static void test_program_and_argument_sizes(void) {
  OLC_HOST_VISIBLE();
  size_t n = 0;
  void *img = olc_image("foo", &n);
  if (!img)
    return;
  ol_program_handle_t p = NULL;
  bool valid = true;
  OLC_ERR_HAS(olCreateProgram(olc_dev, img, SIZE_MAX, &p), OL_ERRC_INVALID_SIZE, "ProgDataSize");
  OLC_ERR_HAS(olIsValidBinary(olc_dev, img, SIZE_MAX, &valid), OL_ERRC_INVALID_SIZE, "ProgDataSize");
  OLC_ERR_CODE(olCreateProgram(olc_dev, img, SIZE_MAX / 2, &p), OL_ERRC_INVALID_SIZE);
  OLC_TRUE(p == NULL);
  if (!OLC_OK(olCreateProgram(olc_dev, img, n, &p)))
    return;
  free(img);
  ol_symbol_handle_t k = olc_kernel(p, "foo");
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_MANAGED, 64 * sizeof(uint32_t));
  if (!k || !out)
    return;
  struct out_args a = {out};
  ol_kernel_launch_size_args_t l = olc_size1(1, 64);
#if OLC_RELEASE >= 23
  const char *argsize = "ArgSizes[0]"; /* 23.1: the struct is the one argument */
#else
  const char *argsize = "ArgumentsSize";
#endif
  OLC_ERR_HAS(olLaunchKernel(NULL, olc_dev, k, &a, SIZE_MAX, &l), OL_ERRC_INVALID_SIZE, argsize);
  ol_queue_handle_t q = olc_queue();
  OLC_ERR_HAS(olLaunchKernel(q, olc_dev, k, &a, SIZE_MAX - 8, &l), OL_ERRC_INVALID_SIZE, argsize);
  ol_event_handle_t ev = NULL;
  OLC_OK(olCreateEvent(q, &ev));
  OLC_ERR_HAS(olWaitEvents(q, &ev, SIZE_MAX), OL_ERRC_INVALID_SIZE, "NumEvents");
  OLC_ERR_HAS(olWaitEvents(q, &ev, SIZE_MAX / 8 - 1), OL_ERRC_INVALID_SIZE, "NumEvents");
  OLC_OK(olDestroyEvent(ev));
  /* a claimed size larger than the kernel reads: only the argument struct
   * is read and kept, nothing of the rest is copied */
  memset(out, 0, 64 * sizeof(uint32_t));
#if OLC_RELEASE >= 23
  /* 23.1: one argument of 1 TiB; refused where the device knows the
   * kernel's parameters, else passed in place (never copied) */
  ol_result_t r = olLaunchKernel(q, olc_dev, k, &a, (size_t)1 << 40, &l);
  OLC_CHECK(r == NULL || (olc_code(r) == OL_ERRC_INVALID_ARGUMENT && olc_details_has(r, "ArgSizes[0]")),
            "olLaunchKernel with a 1 TiB argument: expected success or INVALID_ARGUMENT naming "
            "ArgSizes[0], got %s \"%s\"", olc_code_name(olc_code(r)), olc_details(r));
  OLC_OK(olSyncQueue(q));
  if (r == NULL)
    OLC_EQ_ARRAY(out, 64, i);
#else
  OLC_OK(olLaunchKernel(q, olc_dev, k, &a, (size_t)1 << 40, &l));
  OLC_OK(olSyncQueue(q));
  OLC_EQ_ARRAY(out, 64, i);
#endif
  OLC_OK(olDestroyQueue(q));
  OLC_OK(olMemFree(out));
  OLC_OK(olDestroyProgram(p));
}

/* A large pattern outside the library's allocations is copied into C
 * memory (not Go memory) and still fills correctly. */
static void test_large_pattern(void) {
  OLC_HOST_VISIBLE();
  enum { P = 3 * 4096 + 5, R = 7 };
  unsigned char *pat = malloc(P);
  unsigned char *dst = olc_alloc(OL_ALLOC_TYPE_MANAGED, (size_t)P * R);
  if (!pat || !dst)
    return;
  for (size_t i = 0; i < P; i++)
    pat[i] = (unsigned char)(i * 7 + 1);
  ol_queue_handle_t q = olc_queue();
  olc_gate g;
  olc_gate_close(&g, q); /* the fill runs after the pattern buffer changed */
  OLC_OK(olMemFill(q, dst, P, pat, (size_t)P * R));
  memset(pat, 0, P);
  olc_gate_open(&g);
  OLC_OK(olSyncQueue(q));
  size_t bad = 0;
  for (size_t i = 0; i < (size_t)P * R; i++)
    bad += dst[i] != (unsigned char)((i % P) * 7 + 1);
  OLC_EQ(bad, 0);
  OLC_OK(olDestroyQueue(q));
  OLC_OK(olMemFree(dst));
  free(pat);
}

/* ---------------------------------------------------------- handles --- */

/* More event create/destroy cycles than a 16-bit generation times a short
 * reuse delay allows: the first event's handle never comes back. */
static void test_event_handles_never_come_back(void) {
  OLC_ONLY(OLC_HOST, "handle generations are the library's, not the device's: 4.5 million event "
           "cycles run once, on the host device");
  if (olc_remote) {
    olc_skip(__FILE__, __LINE__, "runs once, on the local host device (not on a remote one)");
    return;
  }
  enum { CYCLES = 4500000 };
  ol_queue_handle_t q = olc_queue();
  ol_event_handle_t first = NULL;
  if (!OLC_OK(olCreateEvent(q, &first)) || !OLC_OK(olDestroyEvent(first)))
    return;
  size_t same = 0, failed = 0;
  double t0 = olc_now_ms();
  for (int i = 0; i < CYCLES; i++) {
    ol_event_handle_t e = NULL;
    if (olCreateEvent(q, &e) || olDestroyEvent(e)) {
      failed++;
      break;
    }
    same += e == first;
  }
  printf("    %d cycles in %.0f ms\n", CYCLES, olc_now_ms() - t0);
  OLC_EQ(failed, 0);
  OLC_EQ(same, 0);
  bool done;
  OLC_ERR_HAS(olGetEventInfo(first, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done), OL_ERRC_INVALID_EVENT,
              "already destroyed");
  OLC_OK(olDestroyQueue(q));
}

/* More init/shutdown cycles than a 16-bit epoch: a queue handle of the first
 * initialisation is never accepted again. Ends initialised once, as it
 * began. */
static void test_handles_of_old_initialisations(void) {
  OLC_ONLY(OLC_HOST, "initialisation epochs are the library's, not the device's: 66,000 init cycles "
           "run once, on the host device");
  if (olc_remote) {
    olc_skip(__FILE__, __LINE__, "runs once, on the local host device (not on a remote one)");
    return;
  }
  enum { CYCLES = 66000 };
  OLC_OK(olShutDown()); /* the reference of olc_start */
  /* The epochs are the library's: the cycles initialise the host platform
   * only (OFFLOAD_PLUGINS, read at each real olInit). With a GPU every
   * olInit initialises its driver too (CUDA: the primary context is made
   * and destroyed), which took this test past 60 s on an H200. */
  const char *plugins = getenv("OFFLOAD_PLUGINS");
  char *saved = plugins ? strdup(plugins) : NULL;
  setenv("OFFLOAD_PLUGINS", "host", 1);
  ol_queue_handle_t first = NULL;
  size_t same = 0, failed = 0;
  double t0 = olc_now_ms();
  for (int i = 0; i < CYCLES && !failed; i++) {
    ol_device_handle_t dev = NULL;
    ol_queue_handle_t q = NULL;
    if (olInit() || !(dev = olc_host_device()) || olCreateQueue(dev, &q)) {
      failed++;
      olShutDown();
      break;
    }
    if (i == 0)
      first = q;
    else
      same += q == first;
    if (olShutDown())
      failed++;
  }
  printf("    %d cycles in %.0f ms\n", CYCLES, olc_now_ms() - t0);
  if (saved)
    setenv("OFFLOAD_PLUGINS", saved, 1);
  else
    unsetenv("OFFLOAD_PLUGINS");
  free(saved);
  OLC_EQ(failed, 0);
  OLC_EQ(same, 0);
  OLC_OK(olInit());
  OLC_TRUE(olc_refind()); /* the device under test, in the new initialisation */
  OLC_ERR_HAS(olSyncQueue(first), OL_ERRC_INVALID_QUEUE, "earlier initialisation");
  ol_queue_handle_t q = olc_queue();
  OLC_TRUE(q != first);
  OLC_ERR_HAS(olSyncQueue(first), OL_ERRC_INVALID_QUEUE, "earlier initialisation");
  OLC_OK(olDestroyQueue(q));
}

/* ------------------------------------------- waits that never end --- */

struct self_wait {
  ol_queue_handle_t q;
  ol_event_handle_t before, after;
  atomic_int ready;
  ol_result_t sync_queue, sync_after, sync_before, shutdown, inner;
  const char *what;
  double ms;
};

static ol_result_t copy_result(ol_result_t r) { return r; } /* results are immortal */

static void self_sync(void *user) {
  struct self_wait *w = user;
  double t0 = olc_now_ms();
  while (!atomic_load(&w->ready))
    sched_yield();
  w->sync_queue = copy_result(olSyncQueue(w->q));
  w->sync_after = copy_result(olSyncEvent(w->after));
  w->sync_before = copy_result(olSyncEvent(w->before));
  w->ms = olc_now_ms() - t0;
}

static void test_host_function_waits_for_itself(void) {
  OLC_HOST_VISIBLE();
  ol_queue_handle_t q = olc_queue();
  uint32_t *flag = olc_alloc(OL_ALLOC_TYPE_MANAGED, sizeof(uint32_t));
  ol_program_handle_t prog = NULL;
  ol_symbol_handle_t k = counter_kernel(&prog);
  if (!q || !flag || !k)
    return;
  struct self_wait w;
  memset(&w, 0, sizeof w);
  w.q = q;
  *flag = 0;
  struct out_args a = {flag};
  ol_kernel_launch_size_args_t l = olc_size1(1, 1);
  OLC_OK(olLaunchKernel(q, olc_dev, k, &a, sizeof a, &l));
  OLC_OK(olCreateEvent(q, &w.before));
  OLC_OK(olLaunchHostFunction(q, self_sync, &w));
  OLC_OK(olLaunchKernel(q, olc_dev, k, &a, sizeof a, &l));
  OLC_OK(olCreateEvent(q, &w.after));
  atomic_store(&w.ready, 1);
  double t0 = olc_now_ms();
  OLC_OK(olSyncQueue(q)); /* returns: the host function did not hang */
  printf("    sync took %.0f ms\n", olc_now_ms() - t0);
  OLC_ERR_HAS(w.sync_queue, OL_ERRC_INVALID_ARGUMENT, "wait forever");
  OLC_ERR_HAS(w.sync_after, OL_ERRC_INVALID_ARGUMENT, "wait forever");
  OLC_OK(w.sync_before); /* recorded before the host function: already done */
  OLC_TRUE(w.ms < 5000);
  OLC_EQ(*flag, 2);
  OLC_OK(olDestroyEvent(w.before)), OLC_OK(olDestroyEvent(w.after));
  OLC_OK(olDestroyQueue(q));
  OLC_OK(olMemFree(flag));
  OLC_OK(olDestroyProgram(prog));
}

/* q2 waits (olWaitEvents) for an event recorded after a host function of
 * q1; that host function syncing q2 would wait for itself. Syncing a queue
 * that does not depend on it works. */
struct cross_wait {
  ol_queue_handle_t q2, q3;
  atomic_int ready;
  ol_result_t sync_q2, sync_q3;
};

static void cross_sync(void *user) {
  struct cross_wait *w = user;
  while (!atomic_load(&w->ready))
    sched_yield();
  w->sync_q2 = olSyncQueue(w->q2);
  w->sync_q3 = olSyncQueue(w->q3);
}

static void test_host_function_waits_through_events(void) {
  OLC_HOST_VISIBLE();
  ol_queue_handle_t q1 = olc_queue(), q2 = olc_queue(), q3 = olc_queue();
  unsigned char *buf = olc_alloc(OL_ALLOC_TYPE_MANAGED, 64);
  if (!q1 || !q2 || !q3 || !buf)
    return;
  struct cross_wait w;
  memset(&w, 0, sizeof w);
  w.q2 = q2, w.q3 = q3;
  OLC_OK(olLaunchHostFunction(q1, cross_sync, &w));
  ol_event_handle_t e = NULL;
  OLC_OK(olCreateEvent(q1, &e));
  OLC_OK(olWaitEvents(q2, &e, 1));
  unsigned char one = 1, two = 2;
  OLC_OK(olMemFill(q2, buf, 1, &one, 32));
  OLC_OK(olMemFill(q3, buf + 32, 1, &two, 32));
  atomic_store(&w.ready, 1);
  OLC_OK(olSyncQueue(q1));
  OLC_OK(olSyncQueue(q2));
  OLC_ERR_HAS(w.sync_q2, OL_ERRC_INVALID_ARGUMENT, "wait forever");
  OLC_OK(w.sync_q3);
  OLC_EQ(buf[0], 1), OLC_EQ(buf[31], 1), OLC_EQ(buf[32], 2), OLC_EQ(buf[63], 2);
  OLC_OK(olDestroyEvent(e));
  OLC_OK(olDestroyQueue(q1)), OLC_OK(olDestroyQueue(q2)), OLC_OK(olDestroyQueue(q3));
  OLC_OK(olMemFree(buf));
}

/* The final olShutDown from a host function is refused; a nested
 * olInit/olShutDown pair is fine. */
static void shutdown_inside(void *user) {
  struct self_wait *w = user;
  w->shutdown = olShutDown();
  ol_result_t a = olInit();
  ol_result_t b = olShutDown();
  w->inner = a ? a : b;
}

static void test_final_shutdown_in_host_function(void) {
  ol_queue_handle_t q = olc_queue();
  struct self_wait w;
  memset(&w, 0, sizeof w);
  OLC_OK(olLaunchHostFunction(q, shutdown_inside, &w));
  OLC_OK(olSyncQueue(q));
  OLC_ERR_HAS(w.shutdown, OL_ERRC_UNSUPPORTED, "host function");
  OLC_OK(w.inner);
  /* still initialised: the queue and device work */
  uint32_t n = 0;
  OLC_OK(olGetDeviceInfo(olc_dev, OL_DEVICE_INFO_NUM_COMPUTE_UNITS, sizeof n, &n));
  OLC_TRUE(n > 0);
  OLC_OK(olDestroyQueue(q));
}

/* -------------------------------------- many blocked host functions --- */

static int thread_count(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  int n = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "Threads: %d", &n) == 1)
      break;
  if (f)
    fclose(f);
  return n;
}

struct blocker {
  atomic_int *open;
  atomic_int *entered;
  atomic_int *done;
};

static void block_until_open(void *user) {
  struct blocker *b = user;
  atomic_fetch_add(b->entered, 1);
  while (!atomic_load(b->open))
    olc_sleep_ms(1);
  atomic_fetch_add(b->done, 1);
}

static void test_many_blocked_host_functions(void) {
  OLC_HOST_VISIBLE();
  OLC_ONLY(OLC_HOST, "counts the library's host-function threads of the host device");
  enum { Q = 1000 };
  static ol_queue_handle_t qs[Q];
  static struct blocker bs[Q];
  atomic_int open = 0, entered = 0, done = 0;
  int limit = 2 * (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (limit < 16)
    limit = 16;
  int threads0 = thread_count();
  double t0 = olc_now_ms();
  int made = 0;
  for (int i = 0; i < Q; i++) {
    bs[i] = (struct blocker){&open, &entered, &done};
    if (olCreateQueue(olc_dev, &qs[i]) || olLaunchHostFunction(qs[i], block_until_open, &bs[i]))
      break;
    made++;
  }
  double setup = olc_now_ms() - t0;
  OLC_EQ(made, Q);
  olc_sleep_ms(300);
  int threads = thread_count();
  printf("    %d queues with a blocked host function set up in %.1f ms; %d entered; threads %d -> %d (limit %d host functions)\n",
         made, setup, atomic_load(&entered), threads0, threads, limit);
  OLC_TRUE(setup < 1000);
  /* blocked host functions do not cost a thread per queue */
  OLC_TRUE(threads <= threads0 + limit + 16);
  OLC_TRUE(atomic_load(&entered) <= limit);
  OLC_TRUE(atomic_load(&entered) > 0);
  /* one more queue, with ordinary work: not held up by the blocked ones */
  unsigned char *buf = olc_alloc(OL_ALLOC_TYPE_MANAGED, 16);
  ol_queue_handle_t extra = olc_queue();
  unsigned char seven = 7;
  t0 = olc_now_ms();
  if (buf && extra) {
    OLC_OK(olMemFill(extra, buf, 1, &seven, 16));
    OLC_OK(olSyncQueue(extra));
    OLC_EQ(buf[15], 7);
  }
  OLC_TRUE(olc_now_ms() - t0 < 1000);
  atomic_store(&open, 1);
  t0 = olc_now_ms();
  for (int i = 0; i < made; i++)
    OLC_OK(olSyncQueue(qs[i]));
  printf("    all released and synced in %.0f ms\n", olc_now_ms() - t0);
  OLC_EQ(atomic_load(&done), made);
  for (int i = 0; i < made; i++)
    OLC_OK(olDestroyQueue(qs[i]));
  if (extra)
    OLC_OK(olDestroyQueue(extra));
  if (buf)
    OLC_OK(olMemFree(buf));
}

/* Host functions that wait for each other through the library do not
 * deadlock on the limit: each waiting one gives its place up. */
struct chain {
  ol_queue_handle_t next; /* queue whose host function this one waits for */
  atomic_int *go;
  ol_result_t r;
};

static void chain_fn(void *user) {
  struct chain *c = user;
  while (!atomic_load(c->go))
    olc_sleep_ms(1);
  c->r = c->next ? olSyncQueue(c->next) : NULL;
}

static void test_host_functions_waiting_on_each_other(void) {
  enum { N = 100 };
  static ol_queue_handle_t qs[N];
  static struct chain cs[N];
  atomic_int go = 0;
  for (int i = 0; i < N; i++)
    if (!OLC_OK(olCreateQueue(olc_dev, &qs[i])))
      return;
  /* queue i's host function syncs queue i+1; the last one returns at once */
  for (int i = 0; i < N; i++) {
    cs[i] = (struct chain){i + 1 < N ? qs[i + 1] : NULL, &go, NULL};
    OLC_OK(olLaunchHostFunction(qs[i], chain_fn, &cs[i]));
  }
  atomic_store(&go, 1);
  for (int i = 0; i < N; i++)
    OLC_OK(olSyncQueue(qs[i]));
  size_t bad = 0;
  for (int i = 0; i < N; i++)
    bad += cs[i].r != NULL;
  OLC_EQ(bad, 0);
  for (int i = 0; i < N; i++)
    OLC_OK(olDestroyQueue(qs[i]));
}

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    OLC_RUN(test_alloc_sizes_that_wrap);
    OLC_RUN(test_grids_that_wrap);
    OLC_RUN(test_copy_and_fill_sizes);
    OLC_RUN(test_large_pattern);
    OLC_RUN(test_program_and_argument_sizes);
    OLC_RUN(test_host_function_waits_for_itself);
    OLC_RUN(test_host_function_waits_through_events);
    OLC_RUN(test_final_shutdown_in_host_function);
    OLC_RUN(test_many_blocked_host_functions);
    OLC_RUN(test_host_functions_waiting_on_each_other);
    OLC_RUN(test_event_handles_never_come_back);
    OLC_RUN(test_handles_of_old_initialisations);
  }
  return olc_finish("robust");
}
