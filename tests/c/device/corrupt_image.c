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
 * The loop is mutate.h's (mut_run), shared with cuda_image.c: with
 * OL_CORRUPT_SAVE=<path> in the environment, every image is written to
 * <path> before it is loaded: after a crash that file holds the culprit.
 * SPDX-License-Identifier: Apache-2.0 */
#include <elf.h>

#include "mutate.h"

#define TRIES 300

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

/* What a pass damages and looks up. */
typedef struct {
  size_t limit;    /* bytes change below this offset */
  bool skip_exec;  /* ... and outside the executable segments */
  exec_ranges ex;
  const char *kernel, *global;
} pass;

/* Changes 1 to 6 bytes of img. */
static void flip_bytes(uint8_t *img, size_t n, uint64_t *rng, void *user) {
  (void)n;
  const pass *ps = user;
  int flips = 1 + (int)(mut_rng(rng) % 6);
  for (int f = 0; f < flips; f++) {
    size_t pos;
    do
      pos = (size_t)(mut_rng(rng) % ps->limit);
    while (ps->skip_exec && in_exec(&ps->ex, pos));
    img[pos] ^= (uint8_t)(1 + mut_rng(rng) % 255);
  }
}

/* A loaded image answers symbol queries with a symbol or an error. */
static void look_up(ol_program_handle_t p, void *user) {
  const pass *ps = user;
  ol_symbol_handle_t s = NULL;
  ol_result_t r = olGetSymbol(p, ps->kernel, OL_SYMBOL_KIND_KERNEL, &s);
  OLC_TRUE(!r || (r->Details && r->Details[0]));
  if (ps->global) {
    r = olGetSymbol(p, ps->global, OL_SYMBOL_KIND_GLOBAL_VARIABLE, &s);
    OLC_TRUE(!r || (r->Details && r->Details[0]));
  }
}

/* TRIES images, each with 1 to 6 bytes changed at positions below `limit`
 * (outside the executable segments when `skip_exec`). */
static void corrupt_pass(const char *name, const char *kernel, const char *global, size_t limit,
                         bool skip_exec, uint64_t seed) {
  size_t n = 0;
  uint8_t *clean = olc_image(name, &n);
  if (!clean)
    return;
  pass ps = {limit < n ? limit : n, skip_exec, {{0}, {0}, 0}, kernel, global};
  if (!OLC_TRUE(exec_ranges_of(clean, n, &ps.ex))) {
    free(clean);
    return;
  }
  mut_loop m = {clean, n, TRIES, seed, flip_bytes, look_up, &ps};
  mut_tally t = mut_run(&m);
  printf("    %s.so, %s: %d refused, %d loaded\n", name,
         skip_exec ? "outside executable segments" : "first 4 KiB", t.refused, t.loaded);
  OLC_EQ(t.refused + t.loaded, TRIES);
  free(clean);
}

static void test_first_4k(void) {
  OLC_ONLY(OLC_HOST, "damaged ELF images of the host image format");
  corrupt_pass("foo", "foo", NULL, 4096, false, 0x9e3779b97f4a7c15ull);
}

static void test_outside_code(void) {
  OLC_ONLY(OLC_HOST, "damaged ELF images of the host image format");
  corrupt_pass("foo", "foo", NULL, SIZE_MAX, true, 0x0123456789abcdefull);
  corrupt_pass("global_ctor", "global_ctor", "global", SIZE_MAX, true, 0xfeedfacecafebeefull);
  corrupt_pass("localmem_static", "localmem_static", NULL, SIZE_MAX, true, 0x5eed5eed5eed5eedull);
}

/* The clean images still load and run after all that. */
static void test_clean_still_loads(void) {
  ol_program_handle_t p = olc_program("foo");
  ol_symbol_handle_t k = olc_kernel(p, "foo");
  uint32_t out[32] = {0};
  uint32_t *o = olc_buf(out, sizeof out);
  ol_kernel_launch_size_args_t l = olc_size1(2, 16);
  bool ran = k && o && OLC_OK(olLaunchKernel(NULL, olc_dev, k, &o, sizeof o, &l));
  olc_unbuf(out, o, sizeof out);
  if (ran)
    OLC_EQ_ARRAY(out, 32, i);
  if (p)
    OLC_OK(olDestroyProgram(p));
}

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    OLC_RUN(test_first_4k);
    OLC_RUN(test_outside_code);
    OLC_RUN(test_clean_still_loads);
  }
  return olc_finish("corrupt_image");
}
