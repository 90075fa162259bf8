/* Running out of host memory or of threads. Under an address-space limit
 * (RLIMIT_AS, set a little above what the process already maps) the calls
 * that need a large host allocation fail with OL_ERRC_OUT_OF_RESOURCES and
 * the process goes on; once the limit is lifted the same call works. Before
 * the library allocated through a checked malloc, cgo's C.malloc ended the
 * process here ("runtime: C malloc failed"), so a fail is an abort.
 *   - olMemFill with a large pattern: on the device's queue, without a
 *     queue, on a host-device queue into another platform's memory, and
 *     into pageable host memory (memory no driver knows);
 *   - olCreateProgram of a large image (the GPU backends stage a copy);
 *   - (23.1) a cooperative launch, which starts one thread per group: the
 *     limit leaves no room for the threads' stacks, so pthread_create fails
 *     as it does at the process's thread limit (RLIMIT_NPROC does not bind
 *     root, and filling the system's thread table would hurt other
 *     processes); a host function submitted meanwhile still runs.
 * SPDX-License-Identifier: Apache-2.0 */
#include <sys/mman.h>
#include <sys/resource.h>

#include "oldevices.h"

/* The size of the pattern and of the image: well past the limit's room. */
#define BIG ((size_t)64 << 20)
/* Room left under the limit for what the library and the Go runtime map
 * while a call runs: the Go heap stays within the arena it has, thread
 * stacks are 8 MiB. */
#define ROOM ((size_t)32 << 20)

static struct rlimit saved_as;

/* The address space the process maps now, in bytes (0 if unknown). */
static size_t mapped_now(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return 0;
  char line[256];
  size_t kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmSize: %zu kB", &kb) == 1)
      break;
  fclose(f);
  return kb * 1024;
}

/* Limits the address space to what is mapped now plus ROOM. */
static bool limit_on(void) {
  size_t now = mapped_now();
  if (!OLC_TRUE(now > 0) || !OLC_TRUE(getrlimit(RLIMIT_AS, &saved_as) == 0))
    return false;
  struct rlimit l = saved_as;
  l.rlim_cur = now + ROOM;
  if (saved_as.rlim_cur != RLIM_INFINITY && saved_as.rlim_cur < l.rlim_cur)
    l.rlim_cur = saved_as.rlim_cur;
  return OLC_TRUE(setrlimit(RLIMIT_AS, &l) == 0);
}

static void limit_off(void) { OLC_TRUE(setrlimit(RLIMIT_AS, &saved_as) == 0); }

/* BIG bytes of untouched anonymous memory (mapped before any limit). */
static unsigned char *big_buffer(void) {
  void *p = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  return OLC_TRUE(p != MAP_FAILED) ? p : NULL;
}

/* A pattern with distinct bytes at both ends (the rest reads as zeros). */
static unsigned char *big_pattern(void) {
  unsigned char *pat = big_buffer();
  if (pat) {
    memcpy(pat, "head", 4);
    memcpy(pat + BIG - 4, "tail", 4);
  }
  return pat;
}

/* The fill of dst with big_pattern's bytes, read back through the API. */
static void check_filled(void *dst) {
  char head[5] = {0}, tail[5] = {0}, mid[4] = {1, 1, 1, 1};
  if (olc_read(head, dst, 4) && olc_read(tail, (char *)dst + BIG - 4, 4) &&
      olc_read(mid, (char *)dst + BIG / 2, 4)) {
    OLC_TRUE(strcmp(head, "head") == 0);
    OLC_TRUE(strcmp(tail, "tail") == 0);
    OLC_TRUE(memcmp(mid, "\0\0\0\0", 4) == 0);
  }
}

/* olMemFill(q, dst, BIG-byte pattern) fails for want of memory under the
 * limit (the queue is still usable: it syncs), then works. */
static void fill_under_limit(ol_queue_handle_t q, void *dst, const unsigned char *pat) {
  if (!limit_on())
    return;
  ol_result_t r = olMemFill(q, dst, BIG, pat, BIG);
  ol_result_t s = q ? olSyncQueue(q) : NULL;
  limit_off();
  /* the copy of the pattern is made at the call; a backend may also find
   * the shortage when the fill runs (then the sync reports it) */
  if (r || !s)
    OLC_ERR_CODE(r, OL_ERRC_OUT_OF_RESOURCES);
  else
    OLC_ERR_CODE(s, OL_ERRC_OUT_OF_RESOURCES);
  OLC_OK(olMemFill(q, dst, BIG, pat, BIG));
  if (q)
    OLC_OK(olSyncQueue(q));
  check_filled(dst);
}

static void test_fill_large_pattern(void) {
  unsigned char *pat = big_pattern();
  void *dst = olc_alloc(OL_ALLOC_TYPE_DEVICE, BIG);
  ol_queue_handle_t q = olc_queue();
  if (pat && dst && q) {
    fill_under_limit(q, dst, pat);
    fill_under_limit(NULL, dst, pat);
  }
  if (q)
    OLC_OK(olDestroyQueue(q));
  if (dst)
    OLC_OK(olMemFree(dst));
  if (pat)
    munmap(pat, BIG);
}

/* The device's memory filled on a queue of the host device: the library
 * keeps its own copy of the pattern until the device's fill runs. */
static void test_fill_across_platforms(void) {
  if (!OLC_NEEDS(!olc_on_host, "a device of another platform than the host's"))
    return;
  unsigned char *pat = big_pattern();
  void *dst = olc_alloc(OL_ALLOC_TYPE_DEVICE, BIG);
  ol_queue_handle_t q = NULL;
  if (pat && dst && OLC_OK(olCreateQueue(olc_host, &q)))
    fill_under_limit(q, dst, pat);
  if (q)
    OLC_OK(olDestroyQueue(q));
  if (dst)
    OLC_OK(olMemFree(dst));
  if (pat)
    munmap(pat, BIG);
}

/* Host memory that no driver knows (pageable), filled on the device's
 * queue: the CUDA backend keeps a copy of the pattern for the CPU's fill. */
static void test_fill_pageable(void) {
  OLC_ONLY(OLC_HOST | OLC_CUDA, "fills of pageable host memory on the device's queue");
  unsigned char *pat = big_pattern();
  unsigned char *dst = big_buffer();
  ol_queue_handle_t q = olc_queue();
  if (pat && dst && q && limit_on()) {
    ol_result_t r = olMemFill(q, dst, BIG, pat, BIG);
    ol_result_t s = olSyncQueue(q);
    limit_off();
    if (r || !s)
      OLC_ERR_CODE(r, OL_ERRC_OUT_OF_RESOURCES);
    else
      OLC_ERR_CODE(s, OL_ERRC_OUT_OF_RESOURCES);
    OLC_OK(olMemFill(q, dst, BIG, pat, BIG));
    OLC_OK(olSyncQueue(q));
    OLC_TRUE(memcmp(dst, "head", 4) == 0 && memcmp(dst + BIG - 4, "tail", 4) == 0 &&
             dst[BIG / 2] == 0);
  }
  if (q)
    OLC_OK(olDestroyQueue(q));
  if (dst)
    munmap(dst, BIG);
  if (pat)
    munmap(pat, BIG);
}

/* A large image (a kernel image padded with zeros): a GPU backend stages a
 * copy for its driver, which cannot be made under the limit; the host
 * device writes it to a file, which needs no address space (so there it
 * may load). Lifted, the same image loads and its kernel is found. */
static void test_program_large_image(void) {
  size_t n = 0;
  void *img = olc_image("foo", &n);
  unsigned char *big = img ? big_buffer() : NULL;
  if (!big || !OLC_TRUE(n < BIG)) {
    free(img);
    return;
  }
  memcpy(big, img, n);
  free(img);
  ol_program_handle_t p = NULL;
  if (limit_on()) {
    ol_result_t r = olCreateProgram(olc_dev, big, BIG, &p);
    limit_off();
    if (olc_on_host && !r)
      OLC_OK(olDestroyProgram(p));
    else
      OLC_ERR_CODE(r, OL_ERRC_OUT_OF_RESOURCES);
    p = NULL;
    if (OLC_OK(olCreateProgram(olc_dev, big, BIG, &p))) {
      ol_symbol_handle_t k = NULL;
      OLC_OK(olGetSymbol(p, "foo", OL_SYMBOL_KIND_KERNEL, &k));
      OLC_OK(olDestroyProgram(p));
    }
  }
  munmap(big, BIG);
}

#if OLC_RELEASE >= 23
struct coop_args {
  uint32_t *slots, *out;
  uint32_t rounds;
};

static void host_fn(void *user) { atomic_fetch_add((atomic_int *)user, 1); }

/* A cooperative launch starts a thread per group; when pthread_create
 * fails the launch fails (the queue's sync reports OUT_OF_RESOURCES) and
 * the process goes on. Host functions run on threads the library already
 * has. Lifted, the same launch runs. */
static void test_threads_under_limit(void) {
  OLC_ONLY(OLC_HOST, "the host device starts a thread per group of a cooperative launch");
  ol_program_handle_t prog = olc_program("coop");
  ol_symbol_handle_t k = prog ? olc_kernel(prog, "coop_phased") : NULL;
  const uint32_t g = 4;
  ol_kernel_launch_size_args_t l = olc_size1(1, g);
  uint32_t max = 0;
  if (!k || !OLC_OK(olGetKernelMaxCooperativeGroupCount(olc_dev, k, &l, &max)) ||
      !OLC_TRUE(max * (8u << 20) > 2 * ROOM)) { /* 8 MiB of stack a group */
    if (prog)
      OLC_OK(olDestroyProgram(prog));
    return;
  }
  l.NumGroups.x = max;
  uint32_t *slots = olc_alloc(OL_ALLOC_TYPE_DEVICE, max * g * sizeof(uint32_t));
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_DEVICE, max * g * sizeof(uint32_t));
  ol_queue_handle_t q = olc_queue();
  atomic_int ran = 0;
  if (slots && out && q) {
    bool yes = true;
    const ol_kernel_launch_prop_t props[] = {{OL_KERNEL_LAUNCH_PROP_TYPE_IS_COOPERATIVE, &yes},
                                             OL_KERNEL_LAUNCH_PROP_END};
    struct coop_args a = {slots, out, 1};
    void *ptrs[] = {&a};
    size_t sizes[] = {sizeof a};
    /* warm: the queue's thread and the host functions' threads exist */
    OLC_OK(olLaunchHostFunction(q, host_fn, &ran));
    OLC_OK(olSyncQueue(q));
    if (limit_on()) {
      ol_result_t r = (olLaunchKernel)(q, olc_dev, k, &l, props, 1, ptrs, sizes);
      ol_result_t s = olSyncQueue(q);
      ol_result_t h = olLaunchHostFunction(q, host_fn, &ran);
      ol_result_t hs = olSyncQueue(q);
      limit_off();
      OLC_OK(r);
      OLC_ERR_HAS(s, OL_ERRC_OUT_OF_RESOURCES, "thread");
      OLC_OK(h);
      OLC_OK(hs);
      OLC_EQ(atomic_load(&ran), 2);
    }
    olc_memset(out, 0, max * g * sizeof(uint32_t));
    OLC_OK((olLaunchKernel)(q, olc_dev, k, &l, props, 1, ptrs, sizes));
    OLC_OK(olSyncQueue(q));
    uint32_t n = max * g;
    uint32_t *h = olc_fetch(out, n * sizeof(uint32_t));
    if (h) {
      OLC_EQ_ARRAY(h, n, (i + g) % n + 1);
      free(h);
    }
  }
  if (q)
    OLC_OK(olDestroyQueue(q));
  if (slots)
    OLC_OK(olMemFree(slots));
  if (out)
    OLC_OK(olMemFree(out));
  OLC_OK(olDestroyProgram(prog));
}
#endif

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    OLC_RUN(test_fill_large_pattern);
    OLC_RUN(test_fill_across_platforms);
    OLC_RUN(test_fill_pageable);
    OLC_RUN(test_program_large_image);
#if OLC_RELEASE >= 23
    OLC_RUN(test_threads_under_limit);
#endif
  }
  return olc_finish("exhaust");
}
