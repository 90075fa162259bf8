/* Programs on the device under test: olCreateProgram, olIsValidBinary,
 * olDestroyProgram, private loading, constructors and destructors. What
 * is about the host image format (ELF damage, fixtures, dlopen details)
 * runs on the host device only.
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <sys/wait.h>

#include "hcheck.h"

static void test_create_destroy(void) {
  size_t n = 0;
  void *img = hc_image("foo", &n);
  if (!img)
    return;
  ol_program_handle_t p = NULL;
  OK(olCreateProgram(hc_dev, img, n, &p));
  TRUE(p != NULL);
  OK(olDestroyProgram(p));
  /* the same bytes load again */
  OK(olCreateProgram(hc_dev, img, n, &p));
  OK(olDestroyProgram(p));
  free(img);
}

/* The image is copied: the caller's buffer can be freed or overwritten
 * right after olCreateProgram. */
static void test_image_copied(void) {
  size_t n = 0;
  void *img = hc_image("foo", &n);
  if (!img)
    return;
  ol_program_handle_t p = NULL;
  if (!OK(olCreateProgram(hc_dev, img, n, &p)))
    return;
  memset(img, 0xff, n);
  free(img);
  ol_symbol_handle_t k = hc_kernel(p, "foo");
  uint32_t out[32] = {0};
  ol_kernel_launch_size_args_t l = hc_size1(2, 16);
  uint32_t *o = hc_buf(out, sizeof out);
  if (k && o) {
    OK(olLaunchKernel(NULL, hc_dev, k, &o, sizeof o, &l));
    hc_unbuf(out, o, sizeof out);
    EQ_ARRAY(out, 32, i);
  }
  OK(olDestroyProgram(p));
}

/* Not images for this device. */
static void test_invalid_images(void) {
  ol_program_handle_t p = (ol_program_handle_t)0x1;
  bool valid = true;

  /* random bytes */
  uint8_t junk[4096];
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = (uint8_t)(i * 131u + 7u);
  ERR(olCreateProgram(hc_dev, junk, sizeof junk, &p), OL_ERRC_INVALID_BINARY, NULL);
  OK(olIsValidBinary(hc_dev, junk, sizeof junk, &valid));
  TRUE(!valid);

  /* no bytes at all */
  ERR(olCreateProgram(hc_dev, junk, 0, &p), OL_ERRC_INVALID_BINARY, NULL);
  EQ((uintptr_t)p, 1);
  HOST_ONLY("damaged ELF images and objects of the host image format");

  /* an ELF header and nothing else, and a truncated real image */
  size_t n = 0;
  uint8_t *img = hc_image("foo", &n);
  if (img) {
    ERR(olCreateProgram(hc_dev, img, 64, &p), OL_ERRC_INVALID_BINARY, NULL);
    valid = true;
    OK(olIsValidBinary(hc_dev, img, 64, &valid));
    TRUE(!valid);
    ERR(olCreateProgram(hc_dev, img, n / 2, &p), OL_ERRC_INVALID_BINARY, NULL);
    /* a byte of the magic changed */
    img[1] = 'X';
    ERR(olCreateProgram(hc_dev, img, n, &p), OL_ERRC_INVALID_BINARY, NULL);
    valid = true;
    OK(olIsValidBinary(hc_dev, img, n, &valid));
    TRUE(!valid);
    free(img);
  }

  /* an ELF object for this CPU that is not a shared object */
  char path[4096];
  snprintf(path, sizeof path, "%s/not_shared.o", hc_kernel_dir);
  uint8_t *obj = hc_read_file(path, &n);
  if (obj) {
    ERR(olCreateProgram(hc_dev, obj, n, &p), OL_ERRC_INVALID_BINARY, "shared object");
    valid = true;
    OK(olIsValidBinary(hc_dev, obj, n, &valid));
    TRUE(!valid);
    free(obj);
  }
  EQ((uintptr_t)p, 1);
}

/* Any AMDGPU code object foo.<gfx>.hsaco in the kernel directory; false
 * if there is none. */
static bool find_hsaco(char *path, size_t size) {
  DIR *d = opendir(hc_kernel_dir);
  struct dirent *e;
  bool found = false;
  while (d && !found && (e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (strncmp(e->d_name, "foo.", 4) == 0 && n > 10 && strcmp(e->d_name + n - 6, ".hsaco") == 0) {
      snprintf(path, size, "%s/%s", hc_kernel_dir, e->d_name);
      found = true;
    }
  }
  if (d)
    closedir(d);
  return found;
}

/* An image built for another device: refused, and not valid. */
static void check_wrong_image(const char *path, const char *part) {
  size_t n = 0;
  uint8_t *img = hc_read_file(path, &n);
  if (!img)
    return;
  ol_program_handle_t p = (ol_program_handle_t)0x1;
  ERR(olCreateProgram(hc_dev, img, n, &p), OL_ERRC_INVALID_BINARY, part);
  bool valid = true;
  OK(olIsValidBinary(hc_dev, img, n, &valid));
  TRUE(!valid);
  EQ((uintptr_t)p, 1);
  free(img);
}

/* Images of other architectures, from the same kernel source: an AMDGPU
 * code object (built by clang-22 in the gpu-compile step; right format,
 * wrong machine) on the host and CUDA devices, PTX on AMDGPU devices, the
 * host's shared object on GPUs. */
static void test_wrong_architecture(void) {
  char path[4096];
  if (!hc_on_host) {
    snprintf(path, sizeof path, "%s/foo.so", hc_kernel_dir);
    check_wrong_image(path, NULL);
  }
  if (hc_on_host || hc_backend == OL_PLATFORM_BACKEND_CUDA) {
    if (!find_hsaco(path, sizeof path)) {
      if (getenv("CI") && strcmp(getenv("CI"), "true") == 0)
        hc_failed(__FILE__, __LINE__,
                  "no foo.<gfx>.hsaco in %s (clang-22 missing?); CI=true requires it",
                  hc_kernel_dir);
      else
        hc_skipped(__FILE__, __LINE__,
                   "no foo.<gfx>.hsaco in %s (clang-22 missing: apt-get install clang-22); "
                   "the wrong-architecture image is not tested",
                   hc_kernel_dir);
      return;
    }
    size_t n = 0;
    uint8_t *img = hc_read_file(path, &n);
    if (img && n > 0)
      EQ(img[0], 0x7f); /* it is an ELF */
    free(img);
    check_wrong_image(path, "AMDGPU");
  } else if (hc_backend == OL_PLATFORM_BACKEND_AMDGPU) {
    snprintf(path, sizeof path, "%s/foo.ptx", hc_kernel_dir);
    check_wrong_image(path, NULL);
  }
}

static void test_is_valid_binary(void) {
  size_t n = 0;
  void *img = hc_image("foo", &n);
  if (!img)
    return;
  bool valid = false;
  OK(olIsValidBinary(hc_dev, img, n, &valid));
  TRUE(valid);
  /* size 0: not valid, not an error */
  valid = true;
  OK(olIsValidBinary(hc_dev, img, 0, &valid));
  TRUE(!valid);
  /* NULL data: an error, and the output is left alone (also when it was
   * true: tests/c/conformance/test_program.c) */
  valid = false;
  ERR(olIsValidBinary(hc_dev, NULL, n, &valid), OL_ERRC_INVALID_NULL_POINTER, NULL);
  TRUE(!valid);
  free(img);
}

/* olIsValidBinary inspects without loading: the image's constructor (which
 * counts its runs in OL_TEST_CTOR_RUNS) does not run. olCreateProgram runs
 * it once per program. */
static int ctor_runs(void) {
  const char *v = getenv("OL_TEST_CTOR_RUNS");
  return v ? atoi(v) : 0;
}

static void test_valid_binary_does_not_load(void) {
  HOST_ONLY("the constructor counts its runs with setenv, a host C library call");
  size_t n = 0;
  void *img = hc_image("global_ctor", &n);
  if (!img)
    return;
  unsetenv("OL_TEST_CTOR_RUNS");
  bool valid = false;
  OK(olIsValidBinary(hc_dev, img, n, &valid));
  TRUE(valid);
  EQ(ctor_runs(), 0);
  ol_program_handle_t p1 = NULL, p2 = NULL;
  OK(olCreateProgram(hc_dev, img, n, &p1));
  EQ(ctor_runs(), 1);
  OK(olCreateProgram(hc_dev, img, n, &p2));
  EQ(ctor_runs(), 2);
  if (p1)
    OK(olDestroyProgram(p1));
  if (p2)
    OK(olDestroyProgram(p2));
  free(img);
}

static void test_destroy_errors(void) {
  ol_program_handle_t p = hc_program("foo");
  if (!p)
    return;
  ol_symbol_handle_t k = hc_kernel(p, "foo");
  OK(olDestroyProgram(p));
  ERR(olDestroyProgram(p), OL_ERRC_INVALID_ARGUMENT, "destroyed");
  /* the program's symbols went with it */
  ol_symbol_kind_t kind;
  ERR(olGetSymbolInfo(k, OL_SYMBOL_INFO_KIND, sizeof kind, &kind), OL_ERRC_INVALID_ARGUMENT, NULL);
  ol_symbol_handle_t s = NULL;
  ERR(olGetSymbol(p, "foo", OL_SYMBOL_KIND_KERNEL, &s), OL_ERRC_INVALID_ARGUMENT, NULL);
  uint32_t out[4];
  uint32_t *o = out;
  ol_kernel_launch_size_args_t l = hc_size1(1, 4);
  ERR(olLaunchKernel(NULL, hc_dev, k, &o, sizeof o, &l), OL_ERRC_INVALID_ARGUMENT, NULL);
  /* a queue handle is not a program handle */
  ol_queue_handle_t q = hc_queue();
  ERR(olDestroyProgram((ol_program_handle_t)q), OL_ERRC_INVALID_ARGUMENT, "queue");
  OK(olDestroyQueue(q));
}


/* The loader refuses an image with an unresolvable dependency. */
static void test_unresolved_symbol(void) {
  HOST_ONLY("a host shared object with an undefined dynamic symbol (fixture)");
  ol_program_handle_t p = (ol_program_handle_t)0x1;
  size_t n = 0;
  void *img = hc_image("fx_unresolved", &n);
  if (!img)
    return;
  ERR(olCreateProgram(hc_dev, img, n, &p), OL_ERRC_INVALID_BINARY,
      "ol_test_function_that_does_not_exist");
  EQ((uintptr_t)p, 1);
  free(img);
}

/* An image without kernels loads; its globals are found, its plain
 * function is not a kernel. */
static void test_image_without_kernels(void) {
  HOST_ONLY("host fixture image");
  ol_program_handle_t p = hc_program("fx_nokernels");
  if (!p)
    return;
  void *addr = NULL;
  size_t size = 0;
  if (hc_global(p, "plain_table", &addr, &size)) {
    EQ(size, 8 * sizeof(uint64_t));
    EQ(((uint64_t *)addr)[7], 8);
  }
  if (hc_global(p, "plain_name", &addr, &size)) {
    EQ(size, 16);
    TRUE(strcmp(addr, "no kernels here") == 0);
  }
  ol_symbol_handle_t s = NULL;
  ERR(olGetSymbol(p, "plain_function", OL_SYMBOL_KIND_KERNEL, &s), OL_ERRC_NOT_FOUND,
      "plain_function");
  ERR(olGetSymbol(p, "plain_function", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &s), OL_ERRC_NOT_FOUND,
      "plain_function");
  OK(olDestroyProgram(p));
}

/* Descriptors from a different <offload/kernel.h> are refused by name. */
static void test_bad_descriptors(void) {
  HOST_ONLY("kernel descriptors of the host image format (fixture)");
  ol_program_handle_t p = hc_program("fx_badabi");
  if (!p)
    return;
  ol_symbol_handle_t s = (ol_symbol_handle_t)0x1;
  ERR(olGetSymbol(p, "future_abi", OL_SYMBOL_KIND_KERNEL, &s), OL_ERRC_INVALID_BINARY, "42");
  ERR(olGetSymbol(p, "bad_magic", OL_SYMBOL_KIND_KERNEL, &s), OL_ERRC_INVALID_BINARY, "bad_magic");
  ERR(olGetSymbol(p, "no_entry", OL_SYMBOL_KIND_KERNEL, &s), OL_ERRC_INVALID_BINARY, "no_entry");
  ERR(olGetSymbol(p, "bad_kind", OL_SYMBOL_KIND_KERNEL, &s), OL_ERRC_INVALID_BINARY, "bad_kind");
  EQ((uintptr_t)s, 1);
  OK(olDestroyProgram(p));
}

/* A stripped image works: only the dynamic symbol table is needed. */
static void test_stripped_image(void) {
  HOST_ONLY("a stripped host shared object");
  ol_program_handle_t p = hc_program("foo_stripped");
  ol_symbol_handle_t k = hc_kernel(p, "foo");
  uint32_t out[64] = {0};
  uint32_t *o = out;
  ol_kernel_launch_size_args_t l = hc_size1(2, 32);
  if (k && OK(olLaunchKernel(NULL, hc_dev, k, &o, sizeof o, &l)))
    EQ_ARRAY(out, 64, i);
  if (p)
    OK(olDestroyProgram(p));
}

/* Two programs from the same bytes have their own globals. */
static void test_separate_globals(void) {
  ol_program_handle_t p1 = hc_program("global"), p2 = hc_program("global");
  void *g1 = NULL, *g2 = NULL;
  if (!hc_global(p1, "global", &g1, NULL) || !hc_global(p2, "global", &g2, NULL))
    return;
  TRUE(g1 != g2);
  uint32_t a[64], b[64];
  for (int i = 0; i < 64; i++)
    a[i] = 1000u + (uint32_t)i, b[i] = 5000u + (uint32_t)i;
  OK(olMemcpy(NULL, g1, hc_dev, a, hc_host, sizeof a));
  OK(olMemcpy(NULL, g2, hc_dev, b, hc_host, sizeof b));
  uint32_t r1[64], r2[64];
  OK(olMemcpy(NULL, r1, hc_host, g1, hc_dev, sizeof r1));
  OK(olMemcpy(NULL, r2, hc_host, g2, hc_dev, sizeof r2));
  EQ_ARRAY(r1, 64, 1000u + i);
  EQ_ARRAY(r2, 64, 5000u + i);
  /* each program's kernels see their own copy */
  ol_symbol_handle_t rd1 = hc_kernel(p1, "read"), rd2 = hc_kernel(p2, "read");
  if (rd1 && rd2) {
    TRUE(rd1 != rd2);
    uint32_t o1[64] = {0}, o2[64] = {0};
    uint32_t *po1 = hc_buf(o1, sizeof o1), *po2 = hc_buf(o2, sizeof o2);
    ol_kernel_launch_size_args_t l = hc_size1(1, 64);
    OK(olLaunchKernel(NULL, hc_dev, rd1, &po1, sizeof po1, &l));
    OK(olLaunchKernel(NULL, hc_dev, rd2, &po2, sizeof po2, &l));
    hc_unbuf(o1, po1, sizeof o1);
    hc_unbuf(o2, po2, sizeof o2);
    EQ_ARRAY(o1, 64, 1000u + i);
    EQ_ARRAY(o2, 64, 5000u + i);
  }
  /* the same with the global_ctor image, whose kernel reads its global */
  ol_program_handle_t c1 = hc_program("global_ctor"), c2 = hc_program("global_ctor");
  void *cg1 = NULL;
  ol_symbol_handle_t ck1 = hc_kernel(c1, "global_ctor"), ck2 = hc_kernel(c2, "global_ctor");
  if (hc_global(c1, "global", &cg1, NULL) && ck1 && ck2) {
    OK(olMemcpy(NULL, cg1, hc_dev, a, hc_host, sizeof a));
    uint32_t o1[64] = {0}, o2[64] = {0};
    uint32_t *po1 = hc_buf(o1, sizeof o1), *po2 = hc_buf(o2, sizeof o2);
    ol_kernel_launch_size_args_t l = hc_size1(1, 64);
    OK(olLaunchKernel(NULL, hc_dev, ck1, &po1, sizeof po1, &l));
    OK(olLaunchKernel(NULL, hc_dev, ck2, &po2, sizeof po2, &l));
    hc_unbuf(o1, po1, sizeof o1);
    hc_unbuf(o2, po2, sizeof o2);
    EQ_ARRAY(o1, 64, 1000u + i);
    EQ_ARRAY(o2, 64, 100u + i);
  }
  if (c1)
    OK(olDestroyProgram(c1));
  if (c2)
    OK(olDestroyProgram(c2));
  /* destroying one leaves the other intact */
  OK(olDestroyProgram(p1));
  OK(olMemcpy(NULL, r2, hc_host, g2, hc_dev, sizeof r2));
  EQ_ARRAY(r2, 64, 5000u + i);
  OK(olDestroyProgram(p2));
}

/* The constructor ran at load: the global holds i + 100 before any kernel. */
static void test_global_ctor(void) {
  ol_program_handle_t p = hc_program("global_ctor");
  void *g = NULL;
  if (!hc_global(p, "global", &g, NULL))
    return;
  uint32_t v[64] = {0};
  OK(olMemcpy(NULL, v, hc_host, g, hc_dev, sizeof v));
  EQ_ARRAY(v, 64, i + 100u);
  ol_symbol_handle_t k = hc_kernel(p, "global_ctor");
  uint32_t *out = hc_alloc(OL_ALLOC_TYPE_DEVICE, 64 * sizeof(uint32_t));
  if (k && out) {
    hc_set(OL_ALLOC_TYPE_DEVICE, out, 0, 64 * sizeof(uint32_t));
    ol_kernel_launch_size_args_t l = hc_size1(1, 64);
    OK(olLaunchKernel(NULL, hc_dev, k, &out, sizeof out, &l));
    EQ_DARRAY(uint32_t, out, 64, i + 100u);
    OK(olMemFree(out));
  }
  OK(olDestroyProgram(p));
}

/* The destructor runs at olDestroyProgram: it writes through the pointer
 * the test stored in the program's dtor_target. */
static void test_global_dtor(void) {
  ol_program_handle_t p = hc_program("global_dtor");
  void *target_addr = NULL;
  size_t target_size = 0;
  if (!hc_global(p, "dtor_target", &target_addr, &target_size))
    return;
  EQ(target_size, sizeof(void *));
  uint32_t *seen = hc_alloc(OL_ALLOC_TYPE_HOST, 65 * sizeof(uint32_t));
  if (!seen)
    return;
  memset(seen, 0, 65 * sizeof(uint32_t));
  OK(olMemcpy(NULL, target_addr, hc_dev, &seen, hc_host, sizeof seen));
  ol_symbol_handle_t k = hc_kernel(p, "global_dtor");
  uint32_t unused = 0;
  ol_kernel_launch_size_args_t l = hc_size1(3, 5);
  if (k)
    OK(olLaunchKernel(NULL, hc_dev, k, &unused, sizeof unused, &l));
  EQ(seen[0], 0); /* not yet */
  OK(olDestroyProgram(p));
  EQ_ARRAY(seen, 64, i + 200u);
  EQ(seen[64], 15); /* the kernel ran 3 x 5 work-items before */
  OK(olMemFree(seen));
}

/* A kernel waiting in a queue while its program is destroyed: the destroy
 * must not pull the code out from under it. Run in a child process, since
 * the failure mode is a crash. The child exits 0 when the kernel ran
 * correctly (or the destroy was refused and repeated after the sync). */
static int child_destroy_while_queued(void) {
  ol_program_handle_t p = hc_program("foo");
  ol_symbol_handle_t k = hc_kernel(p, "foo");
  uint32_t *out = hc_alloc(OL_ALLOC_TYPE_MANAGED, 256 * sizeof(uint32_t));
  if (!k || !out)
    return 3;
  memset(out, 0, 256 * sizeof(uint32_t));
  ol_queue_handle_t q = hc_queue();
  hc_gate g;
  hc_gate_close(&g, q);
  ol_kernel_launch_size_args_t l = hc_size1(4, 64);
  OK(olLaunchKernel(q, hc_dev, k, &out, sizeof out, &l));
  ol_result_t r = olDestroyProgram(p);
  printf("    child: olDestroyProgram with a queued launch -> %s\n",
         r ? r->Details : "success");
  hc_gate_open(&g);
  ol_result_t s = olSyncQueue(q);
  printf("    child: olSyncQueue -> %s\n", s ? s->Details : "success");
  int bad = 0;
  for (int i = 0; i < 256; i++)
    bad += out[i] != (uint32_t)i;
  if (r != NULL)
    OK(olDestroyProgram(p));
  OK(olDestroyQueue(q));
  OK(olMemFree(out));
  OK(olShutDown());
  return (bad && s == NULL) || atomic_load(&olc_failed) ? 1 : 0;
}

static void test_destroy_while_queued(void) {
  char cmd[8192];
  char errpath[] = "/tmp/ol-host-child-XXXXXX";
  int fd = mkstemp(errpath);
  if (fd >= 0)
    close(fd);
  /* the child tests the same device */
  snprintf(cmd, sizeof cmd,
           "OFFLOAD_TEST_DEVICES=%s:%u /proc/%d/exe '%s' --child-destroy-while-queued 2>%s",
           hc_backend_name(hc_backend), hc_index, (int)getpid(), hc_kernel_dir, errpath);
  fflush(stdout);
  int st = system(cmd);
  if (!TRUE(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
    printf("    the child (destroy a program whose kernel is still queued, then release the "
           "queue) ended with exit status %d; its stderr began:\n",
           WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    FILE *f = fopen(errpath, "r");
    char line[512];
    for (int i = 0; f && i < 12 && fgets(line, sizeof line, f); i++)
      printf("      | %s", line);
    if (f)
      fclose(f);
  }
  unlink(errpath);
}

/* Loading and dropping many programs leaks neither descriptors nor state. */
static int count_fds(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d)
    return -1;
  while (readdir(d))
    n++;
  closedir(d);
  return n;
}

static void test_many_programs(void) {
  size_t n = 0;
  void *img = hc_image("foo", &n);
  if (!img)
    return;
  int fds = count_fds();
  enum { N = 40 };
  ol_program_handle_t p[N];
  int bad = 0;
  for (int i = 0; i < N; i++)
    bad += olCreateProgram(hc_dev, img, n, &p[i]) != NULL;
  EQ(bad, 0);
  /* all usable at once */
  for (int i = 0; i < N; i += 7) {
    ol_symbol_handle_t k = hc_kernel(p[i], "foo");
    uint32_t out[8] = {0};
    uint32_t *o = hc_buf(out, sizeof out);
    ol_kernel_launch_size_args_t l = hc_size1(1, 8);
    bool ran = k && o && OK(olLaunchKernel(NULL, hc_dev, k, &o, sizeof o, &l));
    hc_unbuf(out, o, sizeof out);
    if (ran)
      EQ_ARRAY(out, 8, i);
  }
  for (int i = 0; i < N; i++)
    bad += olDestroyProgram(p[i]) != NULL;
  EQ(bad, 0);
  EQ(count_fds(), fds);
  free(img);
}

/* Programs made, used and dropped from several threads at once. */
static void *program_worker(void *arg) {
  const char *name = *(const char **)arg;
  size_t n = 0;
  char path[4096];
  if (!hc_image_path(name, path, sizeof path))
    return (void *)(intptr_t)1000;
  FILE *f = fopen(path, "rb");
  if (!f)
    return (void *)(intptr_t)1000;
  fseek(f, 0, SEEK_END);
  n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  void *img = malloc(n);
  size_t got = fread(img, 1, n, f);
  fclose(f);
  int bad = got != n;
  for (int rep = 0; rep < 15; rep++) {
    ol_program_handle_t p = NULL;
    ol_symbol_handle_t k = NULL;
    if (olCreateProgram(hc_dev, img, n, &p) != NULL) {
      bad++;
      continue;
    }
    bad += olGetSymbol(p, name, OL_SYMBOL_KIND_KERNEL, &k) != NULL;
    uint32_t out[64] = {0};
    uint32_t *o = out;
    /* DEVICE memory off the host device, read back with olMemcpy */
    if (!hc_on_host && (olMemAlloc(hc_dev, OL_ALLOC_TYPE_DEVICE, sizeof out, (void **)&o) ||
                        olMemcpy(NULL, o, hc_dev, out, hc_host, sizeof out))) {
      bad++;
      o = NULL;
    }
    ol_kernel_launch_size_args_t l = hc_size1(2, 32);
    if (k && o) {
      bad += olLaunchKernel(NULL, hc_dev, k, &o, sizeof o, &l) != NULL;
      if (o != out)
        bad += olMemcpy(NULL, out, hc_host, o, hc_dev, sizeof out) != NULL;
      uint32_t add = strcmp(name, "bar") == 0 ? 1000u : 0u;
      for (uint32_t i = 0; i < 64; i++)
        bad += out[i] != i + add;
    }
    if (o && o != out)
      bad += olMemFree(o) != NULL;
    bad += olDestroyProgram(p) != NULL;
  }
  free(img);
  return (void *)(intptr_t)bad;
}

static void test_programs_from_threads(void) {
  static const char *names[] = {"foo", "bar", "foo", "bar", "foo", "bar", "foo", "bar"};
  EQ(hc_threads(8, program_worker, (void *)names, sizeof names[0]), 0);
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[2], "--child-destroy-while-queued") == 0) {
    hc_start(argc, argv);
    if (!hc_next_device())
      return 3;
    return child_destroy_while_queued();
  }
  hc_start(argc, argv);
  while (hc_next_device()) {
    RUN(test_create_destroy);
    RUN(test_image_copied);
    RUN(test_invalid_images);
    RUN(test_wrong_architecture);
    RUN(test_is_valid_binary);
    RUN(test_valid_binary_does_not_load);
    RUN(test_unresolved_symbol);
    RUN(test_image_without_kernels);
    RUN(test_bad_descriptors);
    RUN(test_stripped_image);
    RUN(test_destroy_errors);
    RUN(test_separate_globals);
    RUN(test_global_ctor);
    RUN(test_global_dtor);
    RUN(test_destroy_while_queued);
    RUN(test_many_programs);
    RUN(test_programs_from_threads);
  }
  return hc_finish("program");
}
