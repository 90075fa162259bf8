/* olMemFree with work still queued on the memory (issue 21): the work
 * queued before the free (copies, fills, kernels whose argument points into
 * the memory, copies another platform's queue makes) still runs on live
 * memory and its results arrive, while the allocation is gone from the API
 * at once (olGetMemInfo of it fails, a second olMemFree fails). The memory
 * is reclaimed once the work has ended, and the final olShutDown with frees
 * still waiting for work completes the work and leaks nothing.
 *
 * Most cases hold the queue behind a host function (a gate) so that the
 * work is surely pending when olMemFree is called; the plain rounds make
 * the pattern exactly (copy in, copy back, free, sync). Against
 * the driver doubles, freed device memory is inaccessible for a while
 * (tests/drivers/fake_cuda.c, fake_hsa.c), so work that runs on freed
 * memory ends the process; on the host device the data checks see it.
 * SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>

#include "oldevices.h"

enum {
  BIG = 8 << 20,  /* bytes of each round's buffer */
  ROUNDS = 30,    /* rounds of each pattern */
  N = 1 << 16,    /* work-items of the kernel */
  OPEN_MS = 100,  /* the helper opens the gate this long after it starts */
  WATCHDOG_MS = 20000,
};

struct foo_args {
  uint32_t *out;
};

/* ---------------------------------------------------------- helpers --- */


/* Round r's byte at offset i. */
static inline uint8_t pat(int r, size_t i) { return (uint8_t)(i * 131 + (size_t)r * 17 + (i >> 12)); }

static void fill_pat(uint8_t *p, int r) {
  for (size_t i = 0; i < BIG; i++)
    p[i] = pat(r, i);
}

/* The first offset where p differs from round r's pattern, or -1. */
static long bad_pat(const uint8_t *p, int r) {
  for (size_t i = 0; i < BIG; i++)
    if (p[i] != pat(r, i))
      return (long)i;
  return -1;
}

/* The freed pointer is gone from the API at once, work pending or not. */
static void expect_gone(void *d) {
  void *base = NULL;
  OLC_ERR_HAS(olGetMemInfo(d, OL_MEM_INFO_BASE, sizeof base, &base), OL_ERRC_NOT_FOUND, "not found");
  OLC_ERR_HAS(olMemFree(d), OL_ERRC_INVALID_ARGUMENT, "not a known allocation");
}

/* Another device of another backend than olc_dev's (its platform makes
 * copies of olc_dev's memory through the runtime), or NULL. */
static ol_device_handle_t other_platform_device(void) {
  olc_devlist l;
  olc_list_devices(&l);
  for (int i = 0; i < l.n; i++)
    if (l.sel[i].backend != olc_backend)
      return l.dev[i];
  return NULL;
}

/* ------------------------------------------------------------ tests --- */

/* The pattern, 30 rounds: copy 8 MiB in on a queue, copy it back to
 * another host buffer on the same queue, olMemFree at once, olSyncQueue.
 * With gate set, each round's queue is held behind a host function until
 * after the free. */
static void copy_rounds(bool gate) {
  uint8_t *src = malloc(BIG), *dst = malloc(BIG);
  ol_queue_handle_t q = olc_queue();
  if (!OLC_TRUE(src && dst) || !q) {
    free(src);
    free(dst);
    return;
  }
  int bad = 0;
  for (int r = 0; r < ROUNDS; r++) {
    void *d = olc_alloc(OL_ALLOC_TYPE_DEVICE, BIG);
    if (!d)
      break;
    fill_pat(src, r);
    memset(dst, 0, BIG);
    olc_gate g;
    if (gate)
      olc_gate_close(&g, q);
    OLC_OK(olMemcpy(q, d, olc_dev, src, olc_host, BIG));
    OLC_OK(olMemcpy(q, dst, olc_host, d, olc_dev, BIG));
    OLC_OK(olMemFree(d));
    if (gate) {
      expect_gone(d);
      olc_gate_open(&g);
    }
    OLC_OK(olSyncQueue(q));
    long at = bad_pat(dst, r);
    if (at >= 0 && !bad++)
      olc_fail(__FILE__, __LINE__, "round %d: byte %ld copied back is %u, wanted %u", r, at, dst[at], pat(r, at));
  }
  OLC_EQ(bad, 0);
  OLC_OK(olDestroyQueue(q));
  free(src);
  free(dst);
}

static void test_copy_back_then_free(void) { copy_rounds(false); }
static void test_copy_back_then_free_held(void) { copy_rounds(true); }

/* Small buffers (the sizes a pool may serve from its own blocks): a copy
 * back held behind a host function, then the free, then allocations of the
 * same size while the copy waits. None of them may be the freed block (its
 * memory is still to be read), and the copy brings back what was there. */
static void test_small_copy_back_then_free_held(void) {
  enum { MORE = 32 };
  ol_queue_handle_t q = olc_queue();
  if (!q)
    return;
  int bad = 0;
  for (size_t size = 64; size <= (64u << 10); size *= 4) {
    uint8_t *src = malloc(size), *dst = malloc(size), *other = malloc(size);
    void *d = olc_alloc(OL_ALLOC_TYPE_DEVICE, size);
    if (!OLC_TRUE(src && dst && other) || !d) {
      free(src), free(dst), free(other);
      break;
    }
    for (size_t i = 0; i < size; i++)
      src[i] = pat((int)size, i), other[i] = (uint8_t)~src[i];
    memset(dst, 0, size);
    OLC_OK(olMemcpy(NULL, d, olc_dev, src, olc_host, size));
    olc_gate g;
    olc_gate_close(&g, q);
    OLC_OK(olMemcpy(q, dst, olc_host, d, olc_dev, size));
    OLC_OK(olMemFree(d));
    expect_gone(d);
    void *more[MORE] = {0};
    for (int i = 0; i < MORE; i++) {
      if (!OLC_OK(olMemAlloc(olc_dev, OL_ALLOC_TYPE_DEVICE, size, &more[i])))
        continue;
      if (more[i] == d && !bad++)
        olc_fail(__FILE__, __LINE__, "%zu bytes: the freed block %p was handed out again before the work queued before its free ended", size, d);
      OLC_OK(olMemcpy(NULL, more[i], olc_dev, other, olc_host, size));
    }
    olc_gate_open(&g);
    OLC_OK(olSyncQueue(q));
    for (size_t i = 0; i < size; i++)
      if (dst[i] != src[i]) {
        if (!bad++)
          olc_fail(__FILE__, __LINE__, "%zu bytes: byte %zu copied back is %u, wanted %u", size, i, dst[i], src[i]);
        break;
      }
    for (int i = 0; i < MORE; i++)
      if (more[i])
        OLC_OK(olMemFree(more[i]));
    free(src), free(dst), free(other);
  }
  OLC_EQ(bad, 0);
  OLC_OK(olDestroyQueue(q));
}

/* A fill, then a copy back, then the free: the fill's value arrives. */
static void fill_rounds(bool gate) {
  uint32_t *dst = malloc(BIG);
  ol_queue_handle_t q = olc_queue();
  if (!OLC_TRUE(dst != NULL) || !q) {
    free(dst);
    return;
  }
  int bad = 0;
  for (int r = 0; r < ROUNDS; r++) {
    void *d = olc_alloc(OL_ALLOC_TYPE_DEVICE, BIG);
    if (!d)
      break;
    uint32_t v = 0x5a5a0000u + (uint32_t)r;
    memset(dst, 0, BIG);
    olc_gate g;
    if (gate)
      olc_gate_close(&g, q);
    OLC_OK(olMemFill(q, d, sizeof v, &v, BIG));
    OLC_OK(olMemcpy(q, dst, olc_host, d, olc_dev, BIG));
    OLC_OK(olMemFree(d));
    if (gate) {
      expect_gone(d);
      olc_gate_open(&g);
    }
    OLC_OK(olSyncQueue(q));
    for (size_t i = 0; i < BIG / sizeof v; i++)
      if (dst[i] != v) {
        if (!bad++)
          olc_fail(__FILE__, __LINE__, "round %d: element %zu is %#x, wanted %#x", r, i, dst[i], v);
        break;
      }
  }
  OLC_EQ(bad, 0);
  OLC_OK(olDestroyQueue(q));
  free(dst);
}

static void test_fill_then_free(void) { fill_rounds(false); }
static void test_fill_then_free_held(void) { fill_rounds(true); }

/* A kernel whose argument points into the memory writes it, a copy brings
 * it back, then the free; the kernel's results arrive. */
static void kernel_rounds(bool gate) {
  ol_program_handle_t p = olc_program("foo");
  ol_symbol_handle_t k = p ? olc_kernel(p, "foo") : NULL;
  uint32_t *dst = malloc(N * sizeof(uint32_t));
  ol_queue_handle_t q = olc_queue();
  if (!k || !OLC_TRUE(dst != NULL) || !q) {
    free(dst);
    if (p)
      OLC_OK(olDestroyProgram(p));
    return;
  }
  int bad = 0;
  for (int r = 0; r < ROUNDS; r++) {
    /* the kernel's buffer starts past the allocation's base */
    uint8_t *d = olc_alloc(OL_ALLOC_TYPE_DEVICE, 4096 + N * sizeof(uint32_t));
    if (!d)
      break;
    memset(dst, 0xff, N * sizeof(uint32_t));
    olc_gate g;
    if (gate)
      olc_gate_close(&g, q);
    struct foo_args fa = {(uint32_t *)(d + 4096)};
    ol_kernel_launch_size_args_t l = olc_size1(N / 256, 256);
    OLC_OK(olLaunchKernel(q, olc_dev, k, &fa, sizeof fa, &l));
    OLC_OK(olMemcpy(q, dst, olc_host, d + 4096, olc_dev, N * sizeof(uint32_t)));
    OLC_OK(olMemFree(d));
    if (gate) {
      expect_gone(d);
      olc_gate_open(&g);
    }
    OLC_OK(olSyncQueue(q));
    for (uint32_t i = 0; i < N; i++)
      if (dst[i] != i) {
        if (!bad++)
          olc_fail(__FILE__, __LINE__, "round %d: out[%u] = %u", r, i, dst[i]);
        break;
      }
  }
  OLC_EQ(bad, 0);
  OLC_OK(olDestroyQueue(q));
  OLC_OK(olDestroyProgram(p));
  free(dst);
}

static void test_kernel_then_free(void) { kernel_rounds(false); }
static void test_kernel_then_free_held(void) { kernel_rounds(true); }

/* The work is on another queue than any the caller syncs first, and that
 * queue is destroyed before the free: its work still finishes on live
 * memory (an event recorded before the destroy says when). */
static void test_destroyed_queue_then_free(void) {
  uint8_t *src = malloc(BIG), *dst = malloc(BIG);
  ol_queue_handle_t q0 = olc_queue(), q1 = olc_queue();
  void *d = olc_alloc(OL_ALLOC_TYPE_DEVICE, BIG);
  if (!OLC_TRUE(src && dst) || !q0 || !q1 || !d) {
    free(src);
    free(dst);
    return;
  }
  fill_pat(src, 7);
  memset(dst, 0, BIG);
  olc_gate g;
  olc_gate_close(&g, q1);
  OLC_OK(olMemcpy(q1, d, olc_dev, src, olc_host, BIG));
  OLC_OK(olMemcpy(q1, dst, olc_host, d, olc_dev, BIG));
  ol_event_handle_t e = NULL;
  OLC_OK(olCreateEvent(q1, &e));
  OLC_OK(olDestroyQueue(q1));
  OLC_OK(olMemFree(d));
  expect_gone(d);
  OLC_OK(olSyncQueue(q0)); /* another, idle queue: nothing to wait for */
  olc_opener o;
  olc_opener_start(&o, &g, "olSyncEvent", OPEN_MS, WATCHDOG_MS);
  OLC_OK(olSyncEvent(e));
  olc_opener_stop(&o);
  OLC_EQ(bad_pat(dst, 7), -1);
  OLC_OK(olDestroyEvent(e));
  OLC_OK(olDestroyQueue(q0));
  free(src);
  free(dst);
}

/* A queue of another platform copies olc_dev's memory back (the runtime
 * makes such copies in that queue's order): freeing it meanwhile still
 * lets the copy read live memory. */
static void test_other_platform_queue_then_free(void) {
  ol_device_handle_t other = other_platform_device();
  if (!OLC_NEEDS(other != NULL, "a device of a second platform (the host device is one for a GPU)"))
    return;
  uint8_t *src = malloc(BIG), *dst = malloc(BIG);
  ol_queue_handle_t q = NULL;
  OLC_OK(olCreateQueue(other, &q));
  if (!OLC_TRUE(src && dst) || !q) {
    free(src);
    free(dst);
    return;
  }
  int bad = 0;
  for (int r = 0; r < ROUNDS / 3; r++) {
    void *d = olc_alloc(OL_ALLOC_TYPE_DEVICE, BIG);
    if (!d)
      break;
    fill_pat(src, r);
    memset(dst, 0, BIG);
    olc_write(d, src, BIG);
    olc_gate g;
    olc_gate_close(&g, q);
    OLC_OK(olMemcpy(q, dst, olc_host, d, olc_dev, BIG));
    OLC_OK(olMemFree(d));
    expect_gone(d);
    olc_gate_open(&g);
    OLC_OK(olSyncQueue(q));
    long at = bad_pat(dst, r);
    if (at >= 0 && !bad++)
      olc_fail(__FILE__, __LINE__, "round %d: byte %ld copied back is %u, wanted %u", r, at, dst[at], pat(r, at));
  }
  OLC_EQ(bad, 0);
  OLC_OK(olDestroyQueue(q));
  free(src);
  free(dst);
}

static uint64_t dev_u64(ol_device_info_t what) {
  uint64_t v = 0;
  OLC_OK(olGetDeviceInfo(olc_dev, what, sizeof v, &v));
  return v;
}

/* Memory freed with work pending is reclaimed: allocations of up to 1 GiB
 * (at most an eighth of the device's memory), each freed while a fill of
 * it is held back, add up to more than the device has (the driver doubles
 * hold less than they report: without the reclaim an allocation fails). */
static void test_reclaimed(void) {
  uint64_t global = dev_u64(OL_DEVICE_INFO_GLOBAL_MEM_SIZE);
  uint64_t max = dev_u64(OL_DEVICE_INFO_MAX_MEM_ALLOC_SIZE);
  if (!OLC_TRUE(global > 0))
    return;
  uint64_t chunk = global / 8;
  if (chunk > (1ull << 30))
    chunk = 1ull << 30;
  if (max && chunk > max)
    chunk = max;
  chunk &= ~(uint64_t)4095;
  uint64_t rounds = global / chunk + 2;
  if (rounds > 4096) /* a machine with terabytes: the host device */
    rounds = 4096;
  ol_queue_handle_t q = olc_queue();
  if (!q)
    return;
  uint64_t total = 0;
  for (uint64_t r = 0; r < rounds; r++) {
    void *d = NULL;
    if (!OLC_OK(olMemAlloc(olc_dev, OL_ALLOC_TYPE_DEVICE, chunk, &d))) {
      olc_fail(__FILE__, __LINE__, "round %llu: %llu bytes allocated and freed so far, in chunks of %llu",
                (unsigned long long)r, (unsigned long long)total, (unsigned long long)chunk);
      break;
    }
    total += chunk;
    olc_gate g;
    olc_gate_close(&g, q);
    uint32_t v = (uint32_t)r;
    OLC_OK(olMemFill(q, d, sizeof v, &v, 1 << 16));
    OLC_OK(olMemFree(d));
    olc_gate_open(&g);
    OLC_OK(olSyncQueue(q));
  }
  if (rounds < 4096)
    OLC_TRUE(total > global);
  OLC_OK(olDestroyQueue(q));
}

/* stderr of the final olShutDown, with OFFLOAD_LEAK_CHECK (see leakcheck.c) */
static char captured[1 << 16];

static ol_result_t shutdown_capturing(void) {
  char path[] = "/tmp/ol-freequeued-XXXXXX";
  int fd = mkstemp(path);
  if (!OLC_TRUE(fd >= 0))
    return olShutDown();
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  ol_result_t r = olShutDown();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  lseek(fd, 0, SEEK_SET);
  ssize_t n = read(fd, captured, sizeof captured - 1);
  captured[n > 0 ? n : 0] = 0;
  close(fd);
  unlink(path);
  return r;
}

/* The final olShutDown while frees wait for held work (on a live and on a
 * destroyed queue): the work completes on live memory, the shutdown
 * succeeds and reports nothing left alive; a new initialisation works. */
static void test_shutdown_with_pending_frees(void) {
  OLC_OK(olShutDown()); /* the fixture's reference: this test makes its own */
  setenv("OFFLOAD_LEAK_CHECK", "1", 1);
  OLC_OK(olInit());
  unsetenv("OFFLOAD_LEAK_CHECK");
  olc_host = olc_host_device();
  if (!OLC_TRUE(olc_refind())) {
    OLC_OK(olShutDown());
    OLC_OK(olInit());
    return;
  }
  uint8_t *src = malloc(BIG), *dst0 = malloc(BIG), *dst1 = malloc(BIG);
  ol_queue_handle_t q0 = olc_queue(), q1 = olc_queue();
  void *d0 = olc_alloc(OL_ALLOC_TYPE_DEVICE, BIG), *d1 = olc_alloc(OL_ALLOC_TYPE_DEVICE, BIG);
  if (!OLC_TRUE(src && dst0 && dst1) || !q0 || !q1 || !d0 || !d1) {
    OLC_OK(olShutDown());
    OLC_OK(olInit());
    OLC_TRUE(olc_refind());
    return;
  }
  fill_pat(src, 3);
  memset(dst0, 0, BIG);
  memset(dst1, 0, BIG);
  olc_gate g;
  olc_gate_close(&g, q0);
  ol_event_handle_t e = NULL;
  OLC_OK(olCreateEvent(q0, &e));
  OLC_OK(olWaitEvents(q1, &e, 1)); /* q1 is held behind q0's gate too */
  OLC_OK(olDestroyEvent(e));
  OLC_OK(olMemcpy(q0, d0, olc_dev, src, olc_host, BIG));
  OLC_OK(olMemcpy(q0, dst0, olc_host, d0, olc_dev, BIG));
  OLC_OK(olMemcpy(q1, d1, olc_dev, src, olc_host, BIG));
  OLC_OK(olMemcpy(q1, dst1, olc_host, d1, olc_dev, BIG));
  OLC_OK(olMemFree(d0));
  OLC_OK(olMemFree(d1));
  OLC_OK(olDestroyQueue(q1));
  OLC_OK(olDestroyQueue(q0));
  olc_opener o;
  olc_opener_start(&o, &g, "the final olShutDown", OPEN_MS, WATCHDOG_MS);
  OLC_OK(shutdown_capturing());
  olc_opener_stop(&o);
  if (!strstr(captured, "no objects left alive"))
    olc_fail(__FILE__, __LINE__, "the leak check lists what was freed or destroyed:\n%s", captured);
  else
    olc_pass();
  OLC_EQ(bad_pat(dst0, 3), -1);
  OLC_EQ(bad_pat(dst1, 3), -1);
  free(src);
  free(dst0);
  free(dst1);
  OLC_OK(olInit()); /* for the next device and olc_finish's olShutDown */
  olc_host = olc_host_device();
  OLC_TRUE(olc_refind());
}

/* FREEQUEUED_TEST=<test name> runs only that test. */
#define CASE(fn)                                                               \
  do {                                                                         \
    const char *only_ = getenv("FREEQUEUED_TEST");                             \
    if (!only_ || !*only_ || strcmp(only_, #fn) == 0)                          \
      OLC_RUN(fn);                                                                 \
  } while (0)

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    CASE(test_copy_back_then_free);
    CASE(test_copy_back_then_free_held);
    CASE(test_small_copy_back_then_free_held);
    CASE(test_fill_then_free);
    CASE(test_fill_then_free_held);
    CASE(test_kernel_then_free);
    CASE(test_kernel_then_free_held);
    CASE(test_destroyed_queue_then_free);
    CASE(test_other_platform_queue_then_free);
    CASE(test_reclaimed);
    CASE(test_shutdown_with_pending_frees);
  }
  return olc_finish("freequeued");
}
