/* Corrupt program images: olCreateProgram must refuse a damaged kernel image
 * with OL_ERRC_INVALID_BINARY and a reason, or load it; it must never end
 * the process (the dynamic loader asserts or faults on many malformed
 * images, so the library validates every structure it reads first).
 *
 * Each try changes 1 to 6 bytes of a valid image, chosen by a fixed
 * pseudo-random sequence, so a failure can be reproduced. Pass 1 changes
 * bytes in the first 4 KiB (headers, dynamic symbols, hash tables, version
 * records and relocations); pass 2 changes bytes anywhere outside the
 * executable segments. Changed machine code is a different program, which
 * may do anything a program may do, so it is not tested here.
 *
 * With OL_CORRUPT_SAVE=<path> in the environment, every image is written to
 * <path> before it is loaded: after a crash that file holds the culprit.
 * SPDX-License-Identifier: Apache-2.0 */
#include <elf.h>

#include "hcheck.h"

#define TRIES 300

static uint64_t rng_state;

static uint64_t rng(void) {
  /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dull;
}

/* File ranges of the executable PT_LOAD segments of a valid image. */
typedef struct {
  uint64_t off[16], end[16];
  int n;
} exec_ranges;

static bool exec_ranges_of(const uint8_t *img, size_t n, exec_ranges *r) {
  r->n = 0;
  if (n < sizeof(Elf64_Ehdr))
    return false;
  Elf64_Ehdr eh;
  memcpy(&eh, img, sizeof eh);
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > n ||
      (n - eh.e_phoff) / sizeof(Elf64_Phdr) < eh.e_phnum)
    return false;
  for (int i = 0; i < eh.e_phnum; i++) {
    Elf64_Phdr ph;
    memcpy(&ph, img + eh.e_phoff + (size_t)i * sizeof ph, sizeof ph);
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && r->n < 16) {
      r->off[r->n] = ph.p_offset;
      r->end[r->n] = ph.p_offset + ph.p_filesz;
      r->n++;
    }
  }
  return true;
}

static bool in_exec(const exec_ranges *r, uint64_t pos) {
  for (int i = 0; i < r->n; i++)
    if (pos >= r->off[i] && pos < r->end[i])
      return true;
  return false;
}

static void save(const uint8_t *img, size_t n) {
  const char *path = getenv("OL_CORRUPT_SAVE");
  if (!path)
    return;
  FILE *f = fopen(path, "wb");
  if (!f)
    return;
  fwrite(img, 1, n, f);
  fclose(f);
}

typedef struct {
  int loaded, refused;
} tally;

/* Loads one damaged image and checks the outcome. */
static void try_image(const uint8_t *img, size_t n, const char *kernel, const char *global,
                      tally *t, int try_no) {
  save(img, n);
  ol_program_handle_t p = NULL;
  ol_result_t r = olCreateProgram(hc_dev, img, n, &p);
  if (r) {
    if (!TRUE(r->Code == OL_ERRC_INVALID_BINARY && r->Details && r->Details[0]))
      printf("    try %d: OL_ERRC_%s \"%s\"\n", try_no, hc_code_name(r->Code),
             r->Details ? r->Details : "(no details)");
    t->refused++;
    return;
  }
  t->loaded++;
  /* A loaded image answers symbol queries with a symbol or an error. */
  ol_symbol_handle_t s = NULL;
  r = olGetSymbol(p, kernel, OL_SYMBOL_KIND_KERNEL, &s);
  TRUE(!r || (r->Details && r->Details[0]));
  if (global) {
    r = olGetSymbol(p, global, OL_SYMBOL_KIND_GLOBAL_VARIABLE, &s);
    TRUE(!r || (r->Details && r->Details[0]));
  }
  OK(olDestroyProgram(p));
}

/* `tries` images, each with 1 to 6 bytes changed at positions below `limit`
 * (outside the executable segments when `skip_exec`). */
static void corrupt_pass(const char *name, const char *kernel, const char *global, size_t limit,
                         bool skip_exec, uint64_t seed) {
  size_t n = 0;
  uint8_t *clean = hc_image(name, &n);
  if (!clean)
    return;
  exec_ranges ex;
  if (!TRUE(exec_ranges_of(clean, n, &ex))) {
    free(clean);
    return;
  }
  if (limit > n)
    limit = n;
  uint8_t *img = malloc(n);
  tally t = {0, 0};
  rng_state = seed;
  for (int i = 0; i < TRIES; i++) {
    memcpy(img, clean, n);
    int flips = 1 + (int)(rng() % 6);
    for (int f = 0; f < flips; f++) {
      size_t pos;
      do
        pos = (size_t)(rng() % limit);
      while (skip_exec && in_exec(&ex, pos));
      img[pos] ^= (uint8_t)(1 + rng() % 255);
    }
    try_image(img, n, kernel, global, &t, i);
  }
  printf("    %s.so, %s: %d refused, %d loaded\n", name,
         skip_exec ? "outside executable segments" : "first 4 KiB", t.refused, t.loaded);
  EQ(t.refused + t.loaded, TRIES);
  free(img);
  free(clean);
}

static void test_first_4k(void) {
  HOST_ONLY("damaged ELF images of the host image format");
  corrupt_pass("foo", "foo", NULL, 4096, false, 0x9e3779b97f4a7c15ull);
}

static void test_outside_code(void) {
  HOST_ONLY("damaged ELF images of the host image format");
  corrupt_pass("foo", "foo", NULL, SIZE_MAX, true, 0x0123456789abcdefull);
  corrupt_pass("global_ctor", "global_ctor", "global", SIZE_MAX, true, 0xfeedfacecafebeefull);
  corrupt_pass("localmem_static", "localmem_static", NULL, SIZE_MAX, true, 0x5eed5eed5eed5eedull);
}

/* The clean images still load and run after all that. */
static void test_clean_still_loads(void) {
  ol_program_handle_t p = hc_program("foo");
  ol_symbol_handle_t k = hc_kernel(p, "foo");
  uint32_t out[32] = {0};
  uint32_t *o = hc_buf(out, sizeof out);
  ol_kernel_launch_size_args_t l = hc_size1(2, 16);
  bool ran = k && o && OK(olLaunchKernel(NULL, hc_dev, k, &o, sizeof o, &l));
  hc_unbuf(out, o, sizeof out);
  if (ran)
    EQ_ARRAY(out, 32, i);
  if (p)
    OK(olDestroyProgram(p));
}

int main(int argc, char **argv) {
  hc_start(argc, argv);
  while (hc_next_device()) {
    RUN(test_first_4k);
    RUN(test_outside_code);
    RUN(test_clean_still_loads);
  }
  return hc_finish("corrupt_image");
}
