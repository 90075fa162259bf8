/* A pointer named with a device it does not belong to. For every ordered
 * pair of devices (A, B) present and every allocation type, memory of an
 * allocation (or a program's global) of A is passed to olMemcpy named
 * with B: as source and as destination, against host memory and against
 * memory of B, with no queue, on a queue of A and on a queue of B. The
 * copy either fails with INVALID_ARGUMENT, naming the pointer, the device
 * it belongs to and the device named, with nothing copied and the queue
 * still running later work; or, where the library reaches the memory for
 * the device named, it copies the right bytes. Which (README, "Memory"):
 *   - HOST and MANAGED memory of a GPU named with the host device: copied
 *     (the CPU reaches it);
 *   - memory of a GPU named with another GPU of the same platform: copied
 *     (through the device it belongs to);
 *   - everything else refused: DEVICE memory of a GPU named with the host
 *     device or a GPU of another platform, memory of the host device
 *     (pageable host memory) named with a GPU, HOST and MANAGED memory of a
 *     GPU named with a GPU of another platform.
 * olMemFill names no device: memory of A filled on a queue of B is filled
 * right, and (23.1) olMemPrefetch of A's MANAGED memory on a queue of B
 * is a harmless hint. Copies are small, so that the C entry points' fast
 * paths (impl/allocmap.c, impl/queuemirror.c) see them first, and start
 * inside the allocation; the other side of each copy is host memory,
 * memory of B or memory of A, each named with its own device.
 * make check-fake-mixed runs this with the host device, two CUDA and two
 * AMD GPUs (the driver doubles); with one device it checks nothing but the
 * fill and counts the pairs as skipped.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "oldevices.h"

enum { N = 256, OFF = 16, LEN = N - 2 * OFF };

static int ndev;
static ol_device_handle_t dev[OLC_MAX_DEVICES];
static olc_devsel sel[OLC_MAX_DEVICES];
static ol_platform_handle_t plat[OLC_MAX_DEVICES];
static void *global[OLC_MAX_DEVICES]; /* "global" of tests/c/kernels/global.c, NULL: none */
static ol_program_handle_t prog[OLC_MAX_DEVICES];

static const ol_alloc_type_t kinds[3] = {OL_ALLOC_TYPE_DEVICE, OL_ALLOC_TYPE_HOST, OL_ALLOC_TYPE_MANAGED};
static const char *const kind_name[3] = {"DEVICE", "HOST", "MANAGED"};

static bool is_host(int i) { return dev[i] == olc_host; }

/* Whether memory of device a (of type k; globals count as DEVICE) named
 * with device b is copied rather than refused (see the top). */
static bool copied(int a, int b, ol_alloc_type_t k) {
  if (a == b)
    return true;
  if (is_host(b))
    return !is_host(a) && k != OL_ALLOC_TYPE_DEVICE;
  return !is_host(a) && plat[a] == plat[b];
}

static void pat(uint8_t *b, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    b[i] = (uint8_t)(i * 13u + seed * 101u + 7u);
}

/* The failure lines name device a (the memory's). */
static void as_device(int a) {
  olc_backend = sel[a].backend;
  olc_index = sel[a].index;
}

static const char *dname(int i) {
  static char buf[4][32];
  static int k;
  char *b = buf[k++ & 3];
  snprintf(b, sizeof buf[0], "%s:%u", olc_backend_name(sel[i].backend), sel[i].index);
  return b;
}

/* n bytes of p, memory of device d, read with olMemcpy named with d. */
static bool fetch(int d, const void *p, void *out, size_t n) {
  return OLC_OK(olMemcpy(NULL, out, olc_host, p, dev[d], n));
}

static bool store(int d, void *p, const void *in, size_t n) {
  return OLC_OK(olMemcpy(NULL, p, dev[d], in, olc_host, n));
}

/* The queue still runs later work and syncs with success: a copy of its
 * own device's memory (m, N bytes) to the host, read back right. */
static void queue_still_works(ol_queue_handle_t q, int qd, void *m, const char *what) {
  uint8_t in[N], out[N];
  pat(in, N, 99);
  memset(out, 0, N);
  if (!store(qd, m, in, N))
    return;
  OLC_CHECK(olMemcpy(q, out, olc_host, m, dev[qd], N) == NULL && olSyncQueue(q) == NULL &&
                memcmp(in, out, N) == 0,
            "%s: the queue of %s does not run later work after it", what, dname(qd));
}

/* One copy with memory p of device a (type k) named with device b, as the
 * source (src_side) or destination, the other side being `other`, memory of
 * device od named with od (od < 0: host memory named with the host
 * device). */
static void one_copy(int a, int b, ol_alloc_type_t k, const char *kname, uint8_t *p, bool src_side, uint8_t *other,
                     int od, int qd, ol_queue_handle_t q, void *qmem) {
  char what[256];
  snprintf(what, sizeof what, "%s memory of %s named %s as %s, other side %s, queue %s", kname, dname(a), dname(b),
           src_side ? "source" : "destination", od < 0 ? "host" : dname(od), qd < 0 ? "none" : dname(qd));
  int odev = od < 0 ? -1 : od;
  ol_device_handle_t oh = od < 0 ? olc_host : dev[od];
  uint8_t pin[N], oin[N], pout[N], oout[N];
  pat(pin, N, 1);
  pat(oin, N, 2);
  if (!store(a, p, pin, N))
    return;
  if (odev < 0)
    memcpy(other, oin, N);
  else if (!store(odev, other, oin, N))
    return;
  ol_result_t r = src_side ? olMemcpy(q, other + OFF, oh, p + OFF, dev[b], LEN)
                           : olMemcpy(q, p + OFF, dev[b], other + OFF, oh, LEN);
  bool want = copied(a, b, k);
  if (want) {
    OLC_CHECK(r == NULL, "%s: expected a copy, got %s \"%s\"", what, olc_code_name(olc_code(r)), olc_details(r));
  } else {
    char ptr[32], owner[32], named[32];
    snprintf(ptr, sizeof ptr, "%p", (void *)(p + OFF));
    snprintf(owner, sizeof owner, "%p", (void *)dev[a]);
    snprintf(named, sizeof named, "%p", (void *)dev[b]);
    OLC_CHECK(olc_code(r) == OL_ERRC_INVALID_ARGUMENT && olc_details_has(r, ptr) && olc_details_has(r, owner) &&
                  olc_details_has(r, named),
              "%s: expected INVALID_ARGUMENT naming %s, %s and %s, got %s \"%s\"", what, ptr, owner, named,
              olc_code_name(olc_code(r)), olc_details(r));
    if (q) {
      bool empty = false;
      OLC_CHECK(olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty) == NULL && empty,
                "%s: the refused copy left work on the queue", what);
    }
  }
  if (q)
    OLC_CHECK(olSyncQueue(q) == NULL, "%s: the queue failed after the call", what);
  /* what each side holds now */
  if (!fetch(a, p, pout, N))
    return;
  if (odev < 0)
    memcpy(oout, other, N);
  else if (!fetch(odev, other, oout, N))
    return;
  uint8_t pwant[N], owant[N];
  memcpy(pwant, pin, N);
  memcpy(owant, oin, N);
  if (want && src_side)
    memcpy(owant + OFF, pin + OFF, LEN);
  else if (want)
    memcpy(pwant + OFF, oin + OFF, LEN);
  OLC_CHECK(memcmp(pout, pwant, N) == 0 && memcmp(oout, owant, N) == 0, "%s: %s", what,
            want ? "wrong bytes after the copy" : "the refused copy changed memory");
  if (q)
    queue_still_works(q, qd, qmem, what);
}

/* Every ordered pair, every type, both sides, host memory or B's on the
 * other side, no queue or a queue of A or of B. */
static void test_copy_named_with_another_device(void) {
  if (ndev < 2) {
    olc_skip(__FILE__, __LINE__, "one device: no pair to name wrongly");
    return;
  }
  uint8_t *host = malloc(N);
  for (int a = 0; a < ndev; a++) {
    as_device(a);
    for (int ki = 0; ki < 3; ki++) {
      uint8_t *p = NULL;
      if (!olc_alloc_on(dev[a], kinds[ki], N, (void **)&p))
        continue;
      for (int b = 0; b < ndev; b++) {
        if (b == a)
          continue;
        uint8_t *bmem = NULL, *amem = NULL;
        ol_queue_handle_t qa = NULL, qb = NULL;
        if (!OLC_OK(olMemAlloc(dev[b], OL_ALLOC_TYPE_DEVICE, N, (void **)&bmem)) ||
            !OLC_OK(olMemAlloc(dev[a], OL_ALLOC_TYPE_DEVICE, N, (void **)&amem)) ||
            !OLC_OK(olCreateQueue(dev[a], &qa)) || !OLC_OK(olCreateQueue(dev[b], &qb)))
          goto next;
        for (int qi = 0; qi < 3; qi++) {
          int qd = qi == 0 ? -1 : qi == 1 ? a : b;
          ol_queue_handle_t q = qi == 0 ? NULL : qi == 1 ? qa : qb;
          void *qmem = qi == 1 ? amem : bmem;
          for (int side = 0; side < 2; side++) {
            one_copy(a, b, kinds[ki], kind_name[ki], p, side == 0, host, -1, qd, q, qmem);
            one_copy(a, b, kinds[ki], kind_name[ki], p, side == 0, bmem, b, qd, q, qmem);
            /* against A's own memory: on A's queue, the C path's case */
            one_copy(a, b, kinds[ki], kind_name[ki], p, side == 0, amem, a, qd, q, qmem);
          }
        }
      next:
        if (qa)
          OLC_OK(olDestroyQueue(qa));
        if (qb)
          OLC_OK(olDestroyQueue(qb));
        if (amem)
          OLC_OK(olMemFree(amem));
        if (bmem)
          OLC_OK(olMemFree(bmem));
      }
      OLC_OK(olMemFree(p));
    }
  }
  free(host);
}

/* A program's global is known memory of its device too (as DEVICE): read
 * and written named with B, and named with A on a queue of B, with no
 * queue, on a queue of A and on a queue of B. */
static void global_copies(int a, int b, int qd, ol_queue_handle_t q) {
  const char *qn = qd < 0 ? "none" : dname(qd);
  for (int named = 0; named < 2; named++) {
    int nd = named ? b : a;
    bool want = copied(a, nd, OL_ALLOC_TYPE_DEVICE);
    uint32_t in[4] = {11, 22, 33, 44}, out[4] = {0}, back[4] = {0}, w[4] = {5, 6, 7, 8};
    char ptr[32];
    snprintf(ptr, sizeof ptr, "%p", global[a]);
    if (!store(a, global[a], in, sizeof in))
      return;
    ol_result_t r = olMemcpy(q, out, olc_host, global[a], dev[nd], sizeof out);
    ol_result_t s = q ? olSyncQueue(q) : NULL;
    if (want)
      OLC_CHECK(r == NULL && s == NULL && memcmp(out, in, sizeof in) == 0,
                "global of %s read named %s, queue %s: %s \"%s\", sync %s", dname(a), dname(nd), qn,
                olc_code_name(olc_code(r)), olc_details(r), olc_code_name(olc_code(s)));
    else
      OLC_CHECK(olc_code(r) == OL_ERRC_INVALID_ARGUMENT && olc_details_has(r, ptr) && s == NULL,
                "global of %s read named %s, queue %s: expected INVALID_ARGUMENT naming %s, got %s \"%s\", sync %s",
                dname(a), dname(nd), qn, ptr, olc_code_name(olc_code(r)), olc_details(r), olc_code_name(olc_code(s)));
    r = olMemcpy(q, global[a], dev[nd], w, olc_host, sizeof w);
    s = q ? olSyncQueue(q) : NULL;
    if (!fetch(a, global[a], back, sizeof back))
      return;
    if (want)
      OLC_CHECK(r == NULL && s == NULL && memcmp(back, w, sizeof w) == 0,
                "global of %s written named %s, queue %s: %s \"%s\", sync %s", dname(a), dname(nd), qn,
                olc_code_name(olc_code(r)), olc_details(r), olc_code_name(olc_code(s)));
    else
      OLC_CHECK(olc_code(r) == OL_ERRC_INVALID_ARGUMENT && s == NULL && memcmp(back, in, sizeof in) == 0,
                "global of %s written named %s, queue %s: expected INVALID_ARGUMENT and no change, got %s \"%s\", "
                "sync %s",
                dname(a), dname(nd), qn, olc_code_name(olc_code(r)), olc_details(r), olc_code_name(olc_code(s)));
  }
}

static void test_global_named_with_another_device(void) {
  if (ndev < 2) {
    olc_skip(__FILE__, __LINE__, "one device: no pair to name wrongly");
    return;
  }
  for (int a = 0; a < ndev; a++) {
    as_device(a);
    if (!global[a])
      continue;
    for (int b = 0; b < ndev; b++) {
      ol_queue_handle_t qa = NULL, qb = NULL;
      if (b != a && OLC_OK(olCreateQueue(dev[a], &qa)) && OLC_OK(olCreateQueue(dev[b], &qb))) {
        global_copies(a, b, -1, NULL);
        global_copies(a, b, a, qa);
        global_copies(a, b, b, qb);
      }
      if (qa)
        OLC_OK(olDestroyQueue(qa));
      if (qb)
        OLC_OK(olDestroyQueue(qb));
    }
  }
}

/* One olMemFill of n bytes at m + OFF, memory of device a (read back
 * named with a), on queue q of device b, with 1-, 3- and 4-byte patterns
 * (the drivers' memsets and the staged fills): filled right, the queue
 * goes on. */
static void fill_on(int a, uint8_t *m, size_t n, const char *what, int b, ol_queue_handle_t q, void *bmem) {
  static const uint8_t pattern[4] = {0x5a, 0x6b, 0x7c, 0x8d};
  for (size_t ps = 1; ps <= 4; ps++) {
    if (ps == 2)
      continue;
    uint8_t in[N], out[N], want[N];
    size_t len = (n - 2 * OFF) / ps * ps;
    pat(in, n, 3 + (unsigned)ps);
    if (!store(a, m, in, n))
      return;
    ol_result_t r = olMemFill(q, m + OFF, ps, pattern, len);
    ol_result_t s = olSyncQueue(q);
    memcpy(want, in, n);
    for (size_t i = 0; i < len; i++)
      want[OFF + i] = pattern[i % ps];
    OLC_CHECK(r == NULL && s == NULL && fetch(a, m, out, n) && memcmp(out, want, n) == 0,
              "%s of %s filled (%zu-byte pattern) on a queue of %s: %s \"%s\", sync %s \"%s\"", what, dname(a), ps,
              dname(b), olc_code_name(olc_code(r)), olc_details(r), olc_code_name(olc_code(s)), olc_details(s));
    char w[128];
    snprintf(w, sizeof w, "%s of %s filled on a queue of %s", what, dname(a), dname(b));
    queue_still_works(q, b, bmem, w);
  }
}

/* olMemFill of memory of A (allocations of each type, a program's global)
 * on a queue of any device fills it right, in that queue's order; the
 * queue goes on. */
static void test_fill_on_another_device_queue(void) {
  for (int a = 0; a < ndev; a++) {
    as_device(a);
    uint8_t *p[3] = {NULL, NULL, NULL};
    for (int ki = 0; ki < 3; ki++)
      olc_alloc_on(dev[a], kinds[ki], N, (void **)&p[ki]);
    for (int b = 0; b < ndev; b++) {
      ol_queue_handle_t q = NULL;
      uint8_t *bmem = NULL;
      if (!OLC_OK(olCreateQueue(dev[b], &q)) || !OLC_OK(olMemAlloc(dev[b], OL_ALLOC_TYPE_DEVICE, N, (void **)&bmem)))
        goto next;
      for (int ki = 0; ki < 3; ki++) {
        char what[64];
        snprintf(what, sizeof what, "%s memory", kind_name[ki]);
        if (p[ki])
          fill_on(a, p[ki], N, what, b, q, bmem);
      }
      if (global[a]) /* 64 uint32_t */
        fill_on(a, global[a], N, "the global", b, q, bmem);
    next:
      if (bmem)
        OLC_OK(olMemFree(bmem));
      if (q)
        OLC_OK(olDestroyQueue(q));
    }
    for (int ki = 0; ki < 3; ki++)
      if (p[ki])
        OLC_OK(olMemFree(p[ki]));
  }
}

#if OLC_RELEASE >= 23
/* olMemPrefetch of A's MANAGED memory on a queue of any device: a hint
 * that succeeds, keeps the bytes, and leaves the queue running. */
static void test_prefetch_on_another_device_queue(void) {
  for (int a = 0; a < ndev; a++) {
    as_device(a);
    uint8_t *p = NULL;
    if (!olc_alloc_on(dev[a], OL_ALLOC_TYPE_MANAGED, N, (void **)&p))
      continue;
    for (int b = 0; b < ndev; b++) {
      ol_queue_handle_t q = NULL;
      uint8_t *bmem = NULL;
      if (!OLC_OK(olCreateQueue(dev[b], &q)) || !OLC_OK(olMemAlloc(dev[b], OL_ALLOC_TYPE_DEVICE, N, (void **)&bmem)))
        goto next;
      for (int f = 0; f < 2; f++) {
        uint8_t in[N], out[N];
        pat(in, N, 4 + f);
        const void *mems[1] = {p + OFF};
        size_t sizes[1] = {LEN};
        if (!store(a, p, in, N))
          break;
        ol_result_t r = olMemPrefetch(q, 1, mems, sizes,
                                      f ? OL_MEM_MIGRATION_FLAG_DEVICE_TO_HOST : OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE);
        ol_result_t s = olSyncQueue(q);
        OLC_CHECK(r == NULL && s == NULL && fetch(a, p, out, N) && memcmp(out, in, N) == 0,
                  "MANAGED memory of %s prefetched (%s) on a queue of %s: %s \"%s\", sync %s", dname(a),
                  f ? "to the host" : "to the device", dname(b), olc_code_name(olc_code(r)), olc_details(r),
                  olc_code_name(olc_code(s)));
        char what[128];
        snprintf(what, sizeof what, "MANAGED memory of %s prefetched on a queue of %s", dname(a), dname(b));
        queue_still_works(q, b, bmem, what);
      }
    next:
      if (bmem)
        OLC_OK(olMemFree(bmem));
      if (q)
        OLC_OK(olDestroyQueue(q));
    }
    OLC_OK(olMemFree(p));
  }
}
#endif

int main(int argc, char **argv) {
  olc_start(argc, argv);
  /* every selected device, with its platform and a program with a global */
  while (olc_next_device()) {
    if (ndev == OLC_MAX_DEVICES)
      break;
    dev[ndev] = olc_dev;
    sel[ndev].backend = olc_backend;
    sel[ndev].index = olc_index;
    plat[ndev] = olc_platform_of(olc_dev);
    prog[ndev] = olc_program("global");
    if (prog[ndev])
      olc_global(prog[ndev], "global", &global[ndev], NULL);
    ndev++;
  }
  OLC_RUN(test_copy_named_with_another_device);
  OLC_RUN(test_global_named_with_another_device);
  OLC_RUN(test_fill_on_another_device_queue);
#if OLC_RELEASE >= 23
  OLC_RUN(test_prefetch_on_another_device_queue);
#endif
  for (int i = 0; i < ndev; i++)
    if (prog[i])
      OLC_OK(olDestroyProgram(prog[i]));
  return olc_finish("wrongdev");
}
