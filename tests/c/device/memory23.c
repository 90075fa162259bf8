/* LLVM 23.1's memory calls: olMemAllocAligned, olMemPrefetch, the flags of
 * olMemRegister/olMemUnregister(Device, Ptr, Flags), and the floating-point
 * support properties. Built with RELEASE=23.1 only (TESTS23 in the
 * Makefile). The 23.1 olMemUnregister is written `(olMemUnregister)(...)`:
 * olrelease.h maps the unbracketed 22.1 spelling.
 * SPDX-License-Identifier: Apache-2.0 */
#include "oldevices.h"

#if OLC_RELEASE < 23
#error "memory23.c tests the 23.1 memory calls: build it with RELEASE=23.1"
#endif

static const ol_alloc_type_t types[] = {OL_ALLOC_TYPE_HOST, OL_ALLOC_TYPE_DEVICE, OL_ALLOC_TYPE_MANAGED};
static const char *const type_names[] = {"HOST", "DEVICE", "MANAGED"};

/* One aligned allocation of `size` bytes: the address, the round trip
 * through olMemcpy, olGetMemInfo, olMemFree. Returns false on a failure. */
static bool aligned_one(ol_alloc_type_t type, const char *tname, size_t size, size_t align) {
  void *p = NULL;
  ol_result_t r = olMemAllocAligned(olc_dev, type, size, align, &p);
  if (!OLC_CHECK(r == NULL, "olMemAllocAligned(%s, %zu, align %zu): %s \"%s\"", tname, size, align,
                 olc_code_name(olc_code(r)), olc_details(r)))
    return false;
  bool ok = OLC_CHECK(p != NULL && (uintptr_t)p % align == 0, "%s align %zu: address %p is not a multiple",
                      tname, align, p);
  /* usable: a pattern there and back with olMemcpy, first and last bytes */
  uint8_t src[64], back[64];
  size_t n = size < sizeof src ? size : sizeof src;
  for (size_t i = 0; i < n; i++)
    src[i] = (uint8_t)(i * 13 + align);
  memset(back, 0, sizeof back);
  OLC_OK(olMemcpy(NULL, p, olc_dev, src, olc_host, n));
  OLC_OK(olMemcpy(NULL, back, olc_host, p, olc_dev, n));
  ok &= OLC_CHECK(memcmp(src, back, n) == 0, "%s align %zu: the first bytes read back differ", tname, align);
  memset(back, 0, sizeof back);
  OLC_OK(olMemcpy(NULL, (char *)p + size - n, olc_dev, src, olc_host, n));
  OLC_OK(olMemcpy(NULL, back, olc_host, (char *)p + size - n, olc_dev, n));
  ok &= OLC_CHECK(memcmp(src, back, n) == 0, "%s align %zu: the last bytes read back differ", tname, align);
  /* what the library knows of it: the returned base, the requested size */
  void *base = NULL;
  size_t got = 0;
  ol_alloc_type_t t = (ol_alloc_type_t)99;
  ol_device_handle_t dev = NULL;
  OLC_OK(olGetMemInfo((char *)p + size - 1, OL_MEM_INFO_BASE, sizeof base, &base));
  OLC_OK(olGetMemInfo(p, OL_MEM_INFO_SIZE, sizeof got, &got));
  OLC_OK(olGetMemInfo(p, OL_MEM_INFO_TYPE, sizeof t, &t));
  OLC_OK(olGetMemInfo(p, OL_MEM_INFO_DEVICE, sizeof dev, &dev));
  ok &= OLC_CHECK(base == p && got == size && t == type && dev == olc_dev,
                  "%s align %zu: olGetMemInfo says base %p size %zu type %u device %p; expected %p %zu %u %p",
                  tname, align, base, got, (unsigned)t, (void *)dev, p, size, (unsigned)type, (void *)olc_dev);
  ok &= OLC_OK(olMemFree(p));
  return ok;
}

/* Every power of two from 1 to 1 MiB (64 MiB on the host device), every
 * allocation type, a small size and one of two alignments. */
static void test_aligned_every_power(void) {
  OLC_HOST_VISIBLE();
  unsigned top = olc_on_host ? 26 : 20;
  for (size_t ti = 0; ti < 3; ti++)
    for (unsigned s = 0; s <= top; s++) {
      size_t align = (size_t)1 << s;
      if (!aligned_one(types[ti], type_names[ti], 100, align))
        break;
      if (s >= 4 && s <= 16 && !aligned_one(types[ti], type_names[ti], 2 * align, align))
        break;
    }
}

/* Many at once: all aligned, none overlapping, every one freed. */
static void test_aligned_many(void) {
  OLC_HOST_VISIBLE();
  enum { N = 64 };
  void *p[N] = {0};
  size_t align = 4096;
  for (int i = 0; i < N; i++)
    OLC_OK(olMemAllocAligned(olc_dev, types[i % 3], 1000 + (size_t)i, align, &p[i]));
  bool aligned = true, apart = true;
  for (int i = 0; i < N; i++) {
    aligned &= p[i] != NULL && (uintptr_t)p[i] % align == 0;
    for (int j = 0; j < i; j++)
      apart &= p[i] != p[j] && ((uintptr_t)p[i] + 1000 + (size_t)i <= (uintptr_t)p[j] ||
                               (uintptr_t)p[j] + 1000 + (size_t)j <= (uintptr_t)p[i]);
  }
  OLC_TRUE(aligned);
  OLC_TRUE(apart);
  for (int i = 0; i < N; i++)
    if (p[i])
      OLC_OK(olMemFree(p[i]));
  /* freed: the addresses are no longer allocations */
  if (p[0]) {
    void *base = NULL;
    OLC_ERR_CODE(olGetMemInfo(p[0], OL_MEM_INFO_BASE, sizeof base, &base), OL_ERRC_NOT_FOUND);
  }
}

/* Aligned allocations of pooled sizes (up to 1 MiB, where the GPU
 * backends hand freed memory out again): allocated and freed in turn with
 * growing alignments, so that a block freed by a less aligned allocation
 * comes back for a more aligned one; each is aligned, usable to its last
 * byte and known by its size. */
static void test_aligned_pooled(void) {
  static const size_t psizes[] = {100, 3000, 65536, 1 << 20};
  for (size_t ti = 0; ti < 3; ti++) {
    if (olc_remote && types[ti] != OL_ALLOC_TYPE_DEVICE)
      continue; /* a remote device offers DEVICE memory only (docs/remote.md) */
    for (size_t s = 0; s < sizeof psizes / sizeof psizes[0]; s++)
      for (int round = 0; round < 2; round++)
        for (size_t align = 1; align <= 65536; align *= 16)
          if (!aligned_one(types[ti], type_names[ti], psizes[s], align))
            return;
  }
}

static void test_aligned_errors(void) {
  OLC_HOST_VISIBLE();
  void *p = (void *)0x1;
  OLC_ERR_CODE(olMemAllocAligned(olc_dev, OL_ALLOC_TYPE_DEVICE, 64, 0, &p), OL_ERRC_INVALID_ARGUMENT);
  OLC_ERR_CODE(olMemAllocAligned(olc_dev, OL_ALLOC_TYPE_DEVICE, 64, 3, &p), OL_ERRC_INVALID_ARGUMENT);
  OLC_ERR_CODE(olMemAllocAligned(olc_dev, OL_ALLOC_TYPE_DEVICE, 64, 48, &p), OL_ERRC_INVALID_ARGUMENT);
  OLC_ERR_CODE(olMemAllocAligned(olc_dev, OL_ALLOC_TYPE_HOST, 64, ((size_t)1 << 20) + 1, &p),
               OL_ERRC_INVALID_ARGUMENT);
  OLC_ERR_CODE(olMemAllocAligned(olc_dev, OL_ALLOC_TYPE_MANAGED, 64, SIZE_MAX, &p), OL_ERRC_INVALID_ARGUMENT);
  OLC_ERR_CODE(olMemAllocAligned(olc_dev, OL_ALLOC_TYPE_DEVICE, 0, 64, &p), OL_ERRC_INVALID_SIZE);
  OLC_ERR_CODE(olMemAllocAligned(olc_dev, OL_ALLOC_TYPE_DEVICE, 0, 0, &p), OL_ERRC_INVALID_SIZE);
  OLC_ERR_CODE(olMemAllocAligned(NULL, OL_ALLOC_TYPE_DEVICE, 64, 64, &p), OL_ERRC_INVALID_NULL_HANDLE);
  OLC_ERR_CODE(olMemAllocAligned(olc_dev, OL_ALLOC_TYPE_DEVICE, 64, 64, NULL), OL_ERRC_INVALID_NULL_POINTER);
  OLC_ERR_CODE(olMemAllocAligned(olc_dev, OL_ALLOC_TYPE_DEVICE, SIZE_MAX / 2, 64, &p), OL_ERRC_OUT_OF_RESOURCES);
  OLC_ERR_CODE(olMemAllocAligned(olc_dev, OL_ALLOC_TYPE_DEVICE, SIZE_MAX - 8, (size_t)1 << 12, &p),
               OL_ERRC_OUT_OF_RESOURCES);
  OLC_EQ((uintptr_t)p, 1); /* refused calls leave the output alone */
  ol_code_location_t loc = {"test_aligned_errors", "memory23.c", 1, 1};
  p = NULL;
  if (OLC_OK(olMemAllocAlignedWithCodeLoc(olc_dev, OL_ALLOC_TYPE_DEVICE, 8, 256, &p, &loc))) {
    OLC_EQ((uintptr_t)p % 256, 0);
    OLC_OK(olMemFree(p));
  }
}

/* A queue's kernel and copies work with aligned memory like any other. */
static void test_aligned_in_queue(void) {
  uint32_t *p = NULL;
  if (!OLC_OK(olMemAllocAligned(olc_dev, OL_ALLOC_TYPE_DEVICE, 4096 * sizeof(uint32_t), 65536, (void **)&p)))
    return;
  ol_queue_handle_t q = olc_queue();
  uint32_t v = 0x5a5a0001u;
  OLC_OK(olMemFill(q, p, sizeof v, &v, 4096 * sizeof(uint32_t)));
  OLC_OK(olSyncQueue(q));
  OLC_EQ_DARRAY(uint32_t, p, 4096, 0x5a5a0001u);
  OLC_OK(olDestroyQueue(q));
  OLC_OK(olMemFree(p));
}

/* ------------------------------------------------------- olMemPrefetch --- */

/* Managed memory moved to the device and back, in the queue's order; the
 * data intact each way. */
static void test_prefetch_managed(void) {
  OLC_HOST_VISIBLE();
  enum { N = 1 << 16 };
  uint32_t *m = olc_alloc(OL_ALLOC_TYPE_MANAGED, N * sizeof(uint32_t));
  ol_queue_handle_t q = olc_queue();
  if (!m || !q)
    goto out;
  for (uint32_t i = 0; i < N; i++)
    m[i] = i ^ 0x2301u;
  const void *mems[] = {m};
  size_t sizes[] = {N * sizeof(uint32_t)};
  OLC_OK(olMemPrefetch(q, 1, mems, sizes, OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE));
  OLC_OK(olSyncQueue(q));
  uint32_t *h = olc_fetch(m, N * sizeof(uint32_t)); /* through the device's copy */
  if (h) {
    OLC_EQ_ARRAY(h, N, i ^ 0x2301u);
    free(h);
  }
  /* the device changes it, then it comes back to the host */
  uint32_t v = 77;
  OLC_OK(olMemFill(q, m, sizeof v, &v, 1024 * sizeof(uint32_t)));
  OLC_OK(olMemPrefetch(q, 1, mems, sizes, OL_MEM_MIGRATION_FLAG_DEVICE_TO_HOST));
  OLC_OK(olSyncQueue(q));
  OLC_EQ_ARRAY(m, 1024, 77u);
  OLC_EQ_ARRAY(m + 1024, N - 1024, (i + 1024) ^ 0x2301u);
  /* part of it, two ranges, Flags 0 (toward the device) */
  const void *two[] = {m + 16, m + 4096};
  size_t two_sizes[] = {64, 4096};
  OLC_OK(olMemPrefetch(q, 2, two, two_sizes, 0));
  OLC_OK(olSyncQueue(q));
  OLC_EQ(m[16], 77u);
  OLC_EQ(m[4096], 4096u ^ 0x2301u);
out:
  if (q)
    OLC_OK(olDestroyQueue(q));
  if (m)
    OLC_OK(olMemFree(m));
}

/* A hint: Count 0, non-managed memory, memory the library did not allocate,
 * zero-sized entries (even NULL) are accepted and change nothing. */
static void test_prefetch_accepts(void) {
  OLC_HOST_VISIBLE();
  ol_queue_handle_t q = olc_queue();
  uint32_t *d = olc_alloc(OL_ALLOC_TYPE_DEVICE, 4096);
  uint32_t *hm = olc_alloc(OL_ALLOC_TYPE_HOST, 4096);
  uint32_t plain[64];
  if (!q || !d || !hm)
    goto out;
  OLC_OK(olMemPrefetch(q, 0, NULL, NULL, OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE));
  OLC_OK(olMemPrefetch(q, 0, NULL, NULL, OL_MEM_MIGRATION_FLAG_DEVICE_TO_HOST));
  olc_memset(d, 0x11, 4096);
  memset(hm, 0x22, 4096);
  memset(plain, 0x33, sizeof plain);
  const void *mems[] = {d, hm, plain, NULL};
  size_t sizes[] = {4096, 4096, sizeof plain, 0};
  OLC_OK(olMemPrefetch(q, 4, mems, sizes, OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE));
  OLC_OK(olMemPrefetch(q, 4, mems, sizes, OL_MEM_MIGRATION_FLAG_DEVICE_TO_HOST));
  OLC_OK(olSyncQueue(q));
  uint8_t *b = olc_fetch(d, 4096);
  if (b) {
    OLC_EQ_ARRAY(b, 4096, 0x11u);
    free(b);
  }
  OLC_EQ_ARRAY((uint8_t *)hm, 4096, 0x22u);
  OLC_EQ_ARRAY((uint8_t *)plain, sizeof plain, 0x33u);
  ol_code_location_t loc = {"test_prefetch_accepts", "memory23.c", 1, 1};
  OLC_OK(olMemPrefetchWithCodeLoc(q, 1, mems, sizes, OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE, &loc));
out:
  if (q)
    OLC_OK(olDestroyQueue(q));
  if (d)
    OLC_OK(olMemFree(d));
  if (hm)
    OLC_OK(olMemFree(hm));
}

static void test_prefetch_errors(void) {
  OLC_HOST_VISIBLE();
  ol_queue_handle_t q = olc_queue();
  uint32_t *m = olc_alloc(OL_ALLOC_TYPE_MANAGED, 4096);
  if (!q || !m)
    goto out;
  const void *mems[] = {m};
  size_t sizes[] = {4096};
  OLC_ERR_CODE(olMemPrefetch(q, 1, NULL, sizes, OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE), OL_ERRC_INVALID_NULL_POINTER);
  OLC_ERR_CODE(olMemPrefetch(q, 1, mems, NULL, OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE), OL_ERRC_INVALID_NULL_POINTER);
  OLC_ERR_CODE(olMemPrefetch(q, 2, NULL, NULL, OL_MEM_MIGRATION_FLAG_DEVICE_TO_HOST), OL_ERRC_INVALID_NULL_POINTER);
  OLC_ERR_CODE(olMemPrefetch(q, 1, mems, sizes, OL_MEM_MIGRATION_FLAG_LAST), OL_ERRC_INVALID_ENUMERATION);
  OLC_ERR_CODE(olMemPrefetch(q, 1, mems, sizes, 0x80000000u), OL_ERRC_INVALID_ENUMERATION);
  OLC_ERR_CODE(olMemPrefetch(q, 1, mems, sizes, OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE | 8u),
               OL_ERRC_INVALID_ENUMERATION);
  OLC_ERR_CODE(olMemPrefetch(q, 1, mems, sizes,
                             OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE | OL_MEM_MIGRATION_FLAG_DEVICE_TO_HOST),
               OL_ERRC_INVALID_ARGUMENT);
  OLC_ERR_CODE(olMemPrefetch(NULL, 1, mems, sizes, OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE), OL_ERRC_INVALID_NULL_HANDLE);
  /* a NULL address with a size; a range past the allocation's end */
  const void *nul[] = {NULL};
  OLC_ERR_HAS(olMemPrefetch(q, 1, nul, sizes, OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE), OL_ERRC_INVALID_NULL_POINTER,
              "Mems[0]");
  size_t past[] = {4097};
  OLC_ERR_HAS(olMemPrefetch(q, 1, mems, past, OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE), OL_ERRC_INVALID_SIZE,
              "Mems[0]");
  OLC_OK(olSyncQueue(q));
out:
  if (m)
    OLC_OK(olMemFree(m));
  if (q) {
    OLC_OK(olDestroyQueue(q));
    const void *mems[] = {NULL};
    size_t sizes[] = {0};
    OLC_ERR_CODE(olMemPrefetch(q, 1, mems, sizes, OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE), OL_ERRC_INVALID_QUEUE);
  }
}

/* ---------------------------------- olMemRegister/olMemUnregister flags --- */

static void test_register_flags(void) {
  OLC_HOST_VISIBLE();
  static uint32_t arr[1024];
  void *pinned = NULL;
  OLC_OK(olMemRegister(olc_dev, arr, sizeof arr, OL_MEMORY_REGISTER_FLAG_LOCK_MEMORY, &pinned));
  OLC_TRUE(pinned != NULL);
  /* usable for copies */
  uint32_t src[1024];
  for (int i = 0; i < 1024; i++)
    src[i] = 3u * (uint32_t)i + 1;
  ol_queue_handle_t q = olc_queue();
  OLC_OK(olMemcpy(q, pinned, olc_host, src, olc_host, sizeof src));
  OLC_OK(olSyncQueue(q));
  OLC_EQ_ARRAY(arr, 1024, 3u * i + 1);
  OLC_OK(olDestroyQueue(q));
  /* unknown bits: refused, the registration stays */
  OLC_ERR_HAS((olMemUnregister)(olc_dev, pinned, OL_MEMORY_REGISTER_FLAG_LAST), OL_ERRC_INVALID_ENUMERATION,
              "Flags");
  OLC_ERR_CODE((olMemUnregister)(olc_dev, pinned, 0x80000000u), OL_ERRC_INVALID_ENUMERATION);
  OLC_OK((olMemUnregister)(olc_dev, pinned, OL_MEMORY_REGISTER_FLAG_UNLOCK_MEMORY));
  OLC_ERR_CODE((olMemUnregister)(olc_dev, pinned, OL_MEMORY_REGISTER_FLAG_UNLOCK_MEMORY), OL_ERRC_INVALID_ARGUMENT);
  /* flags 0 both ways; the 22.1 spelling is flags 0 */
  OLC_OK(olMemRegister(olc_dev, arr, sizeof arr, 0, &pinned));
  OLC_OK((olMemUnregister)(olc_dev, pinned, 0));
  OLC_OK(olMemRegister(olc_dev, arr, sizeof arr, 0, &pinned));
  OLC_OK(olMemUnregister(olc_dev, pinned));
  /* both known bits */
  OLC_OK(olMemRegister(olc_dev, arr, sizeof arr,
                       OL_MEMORY_REGISTER_FLAG_LOCK_MEMORY | OL_MEMORY_REGISTER_FLAG_UNLOCK_MEMORY, &pinned));
  OLC_OK((olMemUnregister)(olc_dev, pinned,
                           OL_MEMORY_REGISTER_FLAG_LOCK_MEMORY | OL_MEMORY_REGISTER_FLAG_UNLOCK_MEMORY));
  /* olMemRegister refuses unknown bits too, and registers nothing */
  void *none = (void *)0x1;
  OLC_ERR_HAS(olMemRegister(olc_dev, arr, sizeof arr, OL_MEMORY_REGISTER_FLAG_LAST, &none),
              OL_ERRC_INVALID_ENUMERATION, "Flags");
  OLC_ERR_CODE(olMemRegister(olc_dev, arr, sizeof arr, 0xff00u, &none), OL_ERRC_INVALID_ENUMERATION);
  OLC_EQ((uintptr_t)none, 1);
  OLC_ERR_CODE((olMemUnregister)(olc_dev, arr, 0), OL_ERRC_INVALID_ARGUMENT);
  /* registered twice, unregistered twice (counted) */
  OLC_OK(olMemRegister(olc_dev, arr, sizeof arr, OL_MEMORY_REGISTER_FLAG_LOCK_MEMORY, &pinned));
  OLC_OK(olMemRegister(olc_dev, arr, sizeof arr, OL_MEMORY_REGISTER_FLAG_LOCK_MEMORY, &pinned));
  OLC_OK((olMemUnregister)(olc_dev, pinned, OL_MEMORY_REGISTER_FLAG_UNLOCK_MEMORY));
  OLC_OK((olMemUnregister)(olc_dev, pinned, OL_MEMORY_REGISTER_FLAG_UNLOCK_MEMORY));
  OLC_ERR_CODE((olMemUnregister)(olc_dev, pinned, 0), OL_ERRC_INVALID_ARGUMENT);
  OLC_ERR_CODE((olMemUnregister)(NULL, pinned, 0), OL_ERRC_INVALID_NULL_HANDLE);
  OLC_ERR_CODE((olMemUnregister)(olc_dev, NULL, 0), OL_ERRC_INVALID_NULL_POINTER);
  ol_code_location_t loc = {"test_register_flags", "memory23.c", 1, 1};
  OLC_OK(olMemRegister(olc_dev, arr, sizeof arr, 0, &pinned));
  OLC_OK((olMemUnregisterWithCodeLoc)(olc_dev, pinned, OL_MEMORY_REGISTER_FLAG_UNLOCK_MEMORY, &loc));
}

/* ------------------------------------------------ floating-point support --- */

static void test_fp_support(void) {
  static const struct {
    ol_device_info_t info;
    const char *name;
  } props[] = {{OL_DEVICE_INFO_SINGLE_FP_SUPPORT, "SINGLE_FP_SUPPORT"},
               {OL_DEVICE_INFO_DOUBLE_FP_SUPPORT, "DOUBLE_FP_SUPPORT"},
               {OL_DEVICE_INFO_HALF_FP_SUPPORT, "HALF_FP_SUPPORT"}};
  /* (COOPERATIVE_LAUNCH_SUPPORT, the fourth bool of 23.1: launch23.c) */
  bool v[3];
  for (int i = 0; i < 3; i++) {
    size_t n = 0;
    OLC_OK(olGetDeviceInfoSize(olc_dev, props[i].info, &n));
    OLC_CHECK(n == 1, "%s: olGetDeviceInfoSize says %zu bytes, expected 1 (a bool)", props[i].name, n);
    uint8_t raw[2] = {0xaa, 0xaa};
    OLC_OK(olGetDeviceInfo(olc_dev, props[i].info, 1, raw));
    OLC_CHECK(raw[0] <= 1, "%s: byte %u is not a bool", props[i].name, raw[0]);
    OLC_CHECK(raw[1] == 0xaa, "%s: wrote past its one byte", props[i].name);
    v[i] = raw[0] == 1;
    /* a larger buffer is fine; a 0-byte one is not */
    uint64_t wide = 0;
    OLC_OK(olGetDeviceInfo(olc_dev, props[i].info, sizeof wide, &wide));
    OLC_ERR_CODE(olGetDeviceInfo(olc_dev, props[i].info, 0, raw), OL_ERRC_INVALID_SIZE);
  }
  /* every device of the suite computes in single and double precision */
  OLC_TRUE(v[0]);
  OLC_TRUE(v[1]);
  /* half precision: the GPUs do; the host device where the CPU has it */
  if (OLC_ON(OLC_GPU, "the host device's half support depends on the CPU (F16C)"))
    OLC_TRUE(v[2]);
}

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    OLC_RUN(test_aligned_every_power);
    OLC_RUN(test_aligned_many);
    OLC_RUN(test_aligned_pooled);
    OLC_RUN(test_aligned_errors);
    OLC_RUN(test_aligned_in_queue);
    OLC_RUN(test_prefetch_managed);
    OLC_RUN(test_prefetch_accepts);
    OLC_RUN(test_prefetch_errors);
    OLC_RUN(test_register_flags);
    OLC_RUN(test_fp_support);
  }
  return olc_finish("memory23");
}
