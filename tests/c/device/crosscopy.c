/* Copies between devices of two platforms. For every ordered pair (A, B)
 * of selected devices on different platforms, DEVICE memory of A is copied
 * into DEVICE memory of B with olMemcpy: with no queue, on a queue of A (the
 * source's), of B (the destination's) and of the host device (a third
 * platform, when neither is the host device); each size (1 byte, one past
 * a chunk, several chunks and a part, one past 64 chunks: a piece of a
 * copy between host memories under MPI) at offsets that are not aligned.
 * On a queue, the copy's result is read back on the same queue before the
 * queue is synced (the read is ordered after the copy) and, on B's queue,
 * completion is waited for with an event recorded after the copy. Bytes
 * of B around the copied range keep their earlier contents.
 * Between two remote devices of different proxies (make check-remote,
 * check-remote-mpi) the copy goes from one proxy to the other directly
 * (docs/remote.md); the test sets OFFLOAD_REMOTE_CHUNK to 64 KiB (unless
 * set) so that the sizes cross chunk boundaries. With no pair of devices
 * on different platforms it checks nothing and counts one skip.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "oldevices.h"

enum { CHUNK = 64 << 10, BIG = 3 * CHUNK + 4097, HUGE = 64 * CHUNK + 4097, PAD = 64, N = HUGE + 2 * PAD };

static int ndev;
static ol_device_handle_t dev[OLC_MAX_DEVICES];
static olc_devsel sel[OLC_MAX_DEVICES];
static ol_platform_handle_t plat[OLC_MAX_DEVICES];

static void pat(uint8_t *b, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    b[i] = (uint8_t)(i * 29u + (i >> 9) + seed * 77u + 1u);
}

/* One copy of n bytes from A+so to B+do, on queue q (NULL: none); the
 * n + 2 * PAD bytes of each buffer around it are set and checked. */
static void one(int a, int b, ol_queue_handle_t q, const char *qname, size_t n, size_t so, size_t dof,
                uint8_t *am, uint8_t *bm, uint8_t *want, uint8_t *got, unsigned seed) {
  olc_backend = sel[a].backend;
  olc_index = sel[a].index;
  size_t m = n + 2 * PAD;
  pat(want, m, seed);
  if (!OLC_OK(olMemcpy(NULL, am, dev[a], want, olc_host, m)))
    return;
  pat(want, m, seed + 1000);
  if (!OLC_OK(olMemcpy(NULL, bm, dev[b], want, olc_host, m)))
    return;
  /* want: B's old bytes with A's at [dof, dof + n) */
  uint8_t *src = malloc(m);
  pat(src, m, seed);
  memcpy(want + dof, src + so, n);
  free(src);
  memset(got, 0, m);
  ol_result_t r = olMemcpy(q, bm + dof, dev[b], am + so, dev[a], n);
  if (!OLC_CHECK(r == NULL, "olMemcpy of %zu bytes, queue %s: %s %s", n, qname, olc_code_name(olc_code(r)),
                 olc_details(r)))
    return;
  if (q) {
    ol_event_handle_t e = NULL;
    OLC_OK(olMemcpy(q, got, olc_host, bm, dev[b], m));
    if (OLC_OK(olCreateEvent(q, &e))) {
      OLC_OK(olSyncEvent(e));
      OLC_OK(olDestroyEvent(e));
    }
    OLC_OK(olSyncQueue(q));
  } else {
    OLC_OK(olMemcpy(NULL, got, olc_host, bm, dev[b], m));
  }
  size_t i = 0;
  while (i < m && got[i] == want[i])
    i++;
  OLC_CHECK(i == m, "%s:%u -> %s:%u, %zu bytes (%zu -> %zu), queue %s: byte %zu is %u, want %u",
            olc_backend_name(sel[a].backend), sel[a].index, olc_backend_name(sel[b].backend),
            sel[b].index, n, so, dof, qname, i, i < m ? got[i] : 0, i < m ? want[i] : 0);
}

static void test_copy_between_platforms(void) {
  int pairs = 0;
  static const size_t sizes[] = {1, CHUNK + 1, BIG, HUGE};
  uint8_t *want = malloc(N), *got = malloc(N);
  for (int a = 0; a < ndev; a++) {
    for (int b = 0; b < ndev; b++) {
      if (plat[a] == plat[b])
        continue;
      pairs++;
      uint8_t *am = NULL, *bm = NULL;
      ol_queue_handle_t qa = NULL, qb = NULL, qh = NULL;
      bool third = dev[a] != olc_host && dev[b] != olc_host;
      if (!OLC_OK(olMemAlloc(dev[a], OL_ALLOC_TYPE_DEVICE, N, (void **)&am)) ||
          !OLC_OK(olMemAlloc(dev[b], OL_ALLOC_TYPE_DEVICE, N, (void **)&bm)) ||
          !OLC_OK(olCreateQueue(dev[a], &qa)) || !OLC_OK(olCreateQueue(dev[b], &qb)) ||
          (third && !OLC_OK(olCreateQueue(olc_host, &qh))))
        goto next;
      for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s], so = 3 + s, dof = PAD - 5 + s;
        unsigned seed = (unsigned)(a * 31 + b * 7 + s);
        one(a, b, NULL, "none", n, so, dof, am, bm, want, got, seed);
        one(a, b, qa, "of the source", n, so, dof, am, bm, want, got, seed + 1);
        one(a, b, qb, "of the destination", n, so, dof, am, bm, want, got, seed + 2);
        if (qh)
          one(a, b, qh, "of the host device", n, so, dof, am, bm, want, got, seed + 3);
      }
    next:
      if (qh)
        OLC_OK(olDestroyQueue(qh));
      if (qb)
        OLC_OK(olDestroyQueue(qb));
      if (qa)
        OLC_OK(olDestroyQueue(qa));
      if (bm)
        OLC_OK(olMemFree(bm));
      if (am)
        OLC_OK(olMemFree(am));
    }
  }
  free(want);
  free(got);
  OLC_NEEDS(pairs > 0, "two selected devices on different platforms");
}

int main(int argc, char **argv) {
  char chunk[32];
  snprintf(chunk, sizeof chunk, "%d", CHUNK);
  setenv("OFFLOAD_REMOTE_CHUNK", chunk, 0);
  olc_start(argc, argv);
  while (olc_next_device()) {
    if (ndev == OLC_MAX_DEVICES)
      break;
    dev[ndev] = olc_dev;
    sel[ndev].backend = olc_backend;
    sel[ndev].index = olc_index;
    plat[ndev] = olc_platform_of(olc_dev);
    ndev++;
  }
  OLC_RUN(test_copy_between_platforms);
  return olc_finish("crosscopy");
}
