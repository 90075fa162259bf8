/* mutate.h: the mutate-and-load loop of the device suite's damaged-image
 * tests (corrupt_image.c: bytes of host images; cuda_image.c: header
 * fields of cubins), on the fixture of tests/c/common/oldevices.h.
 *
 * mut_run makes `tries` copies of a valid image, lets the test's mutate
 * function damage each one (drawing from a fixed pseudo-random sequence,
 * xorshift64* from `seed`, so that a failure can be reproduced) and loads
 * it on olc_dev. Each outcome is checked: a refused image must be refused
 * with OL_ERRC_INVALID_BINARY and a reason (one check; a wrong refusal is
 * printed), a loaded one is handed to the test's `loaded` function (if
 * any) and destroyed (one check). The process must survive every try.
 *
 * With OL_CORRUPT_SAVE=<path> in the environment, every image is written to
 * <path> before it is loaded: after a crash that file holds the culprit.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef DEVICE_TESTS_MUTATE_H
#define DEVICE_TESTS_MUTATE_H

#include "oldevices.h"

/* The next number of the sequence (xorshift64*). */
static inline uint64_t mut_rng(uint64_t *state) {
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return *state * 0x2545f4914f6cdd1dull;
}

typedef struct mut_loop {
  const uint8_t *clean; /* the valid image */
  size_t n;             /* its size, and that of every damaged copy */
  int tries;
  uint64_t seed;
  /* damages img, a fresh copy of clean, drawing from *rng */
  void (*mutate)(uint8_t *img, size_t n, uint64_t *rng, void *user);
  /* checks a damaged image that loaded, before it is destroyed; may be NULL */
  void (*loaded)(ol_program_handle_t p, void *user);
  void *user;
} mut_loop;

typedef struct mut_tally {
  int loaded, refused;
} mut_tally;

static inline void mut_save(const uint8_t *img, size_t n) {
  const char *path = getenv("OL_CORRUPT_SAVE");
  if (!path)
    return;
  FILE *f = fopen(path, "wb");
  if (!f)
    return;
  fwrite(img, 1, n, f);
  fclose(f);
}

/* Runs the loop; how many damaged images loaded and how many were refused. */
static inline mut_tally mut_run(const mut_loop *m) {
  mut_tally t = {0, 0};
  uint8_t *img = malloc(m->n ? m->n : 1);
  if (!img) {
    olc_fail(__FILE__, __LINE__, "out of memory for a %zu-byte image", m->n);
    return t;
  }
  uint64_t rng = m->seed;
  for (int i = 0; i < m->tries; i++) {
    memcpy(img, m->clean, m->n);
    m->mutate(img, m->n, &rng, m->user);
    mut_save(img, m->n);
    ol_program_handle_t p = NULL;
    ol_result_t r = olCreateProgram(olc_dev, img, m->n, &p);
    if (r) {
      if (!OLC_TRUE(r->Code == OL_ERRC_INVALID_BINARY && r->Details && r->Details[0]))
        printf("    try %d: %s \"%s\"\n", i, olc_code_name(r->Code),
               r->Details ? r->Details : "(no details)");
      t.refused++;
      continue;
    }
    t.loaded++;
    if (m->loaded)
      m->loaded(p, m->user);
    OLC_OK(olDestroyProgram(p));
  }
  free(img);
  return t;
}

#endif /* DEVICE_TESTS_MUTATE_H */
