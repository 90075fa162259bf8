/* CUDA images whose headers point past ProgDataSize: the driver's module
 * load takes no size, so olCreateProgram must refuse them with
 * OL_ERRC_INVALID_BINARY naming the field before the driver reads them,
 * and olIsValidBinary must say false. Cubins (ELF: the kernel image when
 * it is one, as in the driver double's suite) and fatbins wrapping them.
 * SPDX-License-Identifier: Apache-2.0 */
#include <elf.h>

#include "hcheck.h"

static uint64_t rng_state;

static uint64_t rng(void) {
  /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dull;
}

#define CUDA_ONLY() OLC_ONLY(OLC_CUDA, "CUDA images")

/* olCreateProgram refuses img with INVALID_BINARY naming `want`, and
 * olIsValidBinary says false. */
static void refused(const void *img, size_t n, const char *want) {
  ol_program_handle_t p = NULL;
  ERR(olCreateProgram(hc_dev, img, n, &p), OL_ERRC_INVALID_BINARY, want);
  bool valid = true;
  OK(olIsValidBinary(hc_dev, img, n, &valid));
  TRUE(!valid);
}

/* A fatbin with one ELF entry holding payload (64-byte entry header). */
static uint8_t *fatbin_of(const uint8_t *payload, size_t n, size_t *size) {
  uint8_t *b = calloc(1, 16 + 64 + n);
  if (!b)
    return NULL;
  uint32_t magic = 0xba55ed50u, hsize32 = 64, arch = 80;
  uint16_t version = 1, hsize = 16, kind = 2, ever = 0x101;
  uint64_t fat = 64 + n, psize = n;
  memcpy(b, &magic, 4), memcpy(b + 4, &version, 2), memcpy(b + 6, &hsize, 2);
  memcpy(b + 8, &fat, 8);
  memcpy(b + 16, &kind, 2), memcpy(b + 18, &ever, 2), memcpy(b + 20, &hsize32, 4);
  memcpy(b + 24, &psize, 8), memcpy(b + 44, &arch, 4);
  memcpy(b + 80, payload, n);
  *size = 16 + 64 + n;
  return b;
}

/* The kernel image when it is a 64-bit ELF (a cubin), else NULL. */
static uint8_t *cubin(size_t *n) {
  uint8_t *img = hc_image("foo", n);
  if (!img)
    return NULL;
  if (*n < sizeof(Elf64_Ehdr) || memcmp(img, ELFMAG, SELFMAG) || img[EI_CLASS] != ELFCLASS64) {
    free(img);
    hc_skipped(__FILE__, __LINE__, "the kernel image is not a cubin (PTX): the ELF cases need one");
    return NULL;
  }
  return img;
}

#define SET(img, field, v)                                                     \
  do {                                                                         \
    Elf64_Ehdr h_;                                                             \
    memcpy(&h_, (img), sizeof h_);                                             \
    h_.field = (v);                                                            \
    memcpy((img), &h_, sizeof h_);                                             \
  } while (0)

static void test_damaged_headers(void) {
  CUDA_ONLY();
  size_t n = 0;
  uint8_t *clean = cubin(&n);
  if (!clean)
    return;
  Elf64_Ehdr eh;
  memcpy(&eh, clean, sizeof eh);
  uint8_t *img = malloc(n);
  char want[160];

  /* truncated: the section header table is past the end */
  snprintf(want, sizeof want, "runs past ProgDataSize %zu", n / 2);
  refused(clean, n / 2, want);

  memcpy(img, clean, n);
  SET(img, e_phoff, 0xffffffffffff0000ull);
  refused(img, n, "e_phoff 0xffffffffffff0000 + e_phnum");

  memcpy(img, clean, n);
  SET(img, e_phnum, 0xffff);
  snprintf(want, sizeof want, "e_phnum 65535 × e_phentsize 56 runs past ProgDataSize %zu", n);
  refused(img, n, want);

  memcpy(img, clean, n);
  SET(img, e_shnum, 0xffff);
  snprintf(want, sizeof want, "e_shnum 65535 × e_shentsize 64 runs past ProgDataSize %zu", n);
  refused(img, n, want);

  memcpy(img, clean, n);
  SET(img, e_shentsize, 0xffff);
  refused(img, n, "e_shentsize 65535");

  memcpy(img, clean, n);
  SET(img, e_phentsize, 0xffff);
  refused(img, n, "e_phentsize 65535");

  memcpy(img, clean, n);
  SET(img, e_shstrndx, 0x7fff);
  refused(img, n, "e_shstrndx 32767");

  /* a first segment of 1 GiB */
  memcpy(img, clean, n);
  Elf64_Phdr ph;
  memcpy(&ph, img + eh.e_phoff, sizeof ph);
  ph.p_filesz = 1ull << 30;
  memcpy(img + eh.e_phoff, &ph, sizeof ph);
  refused(img, n, "program header 0: p_offset");

  /* a section past the end */
  memcpy(img, clean, n);
  Elf64_Shdr sh;
  memcpy(&sh, img + eh.e_shoff + sizeof sh, sizeof sh);
  sh.sh_offset = n;
  memcpy(img + eh.e_shoff + sizeof sh, &sh, sizeof sh);
  refused(img, n, "section 1: sh_offset");

  /* the same inside a fatbin, and a fatbin whose entries run past it */
  size_t fn = 0;
  memcpy(img, clean, n);
  SET(img, e_phnum, 0xffff);
  uint8_t *fb = fatbin_of(img, n, &fn);
  if (TRUE(fb != NULL)) {
    refused(fb, fn, "fatbin entry 0 at 0x10: e_phoff");
    free(fb);
  }
  fb = fatbin_of(clean, n, &fn);
  if (TRUE(fb != NULL)) {
    uint64_t fat = 1ull << 40;
    memcpy(fb + 8, &fat, 8);
    refused(fb, fn, "fatbin header size 16 + entries size 0x10000000000 runs past ProgDataSize");
    free(fb);
  }
  free(img);
  free(clean);
}

/* Random header fields of the cubin set to random, extreme or nearby
 * values: each image is loaded or refused with INVALID_BINARY, and the
 * process survives. */
static void test_random_header_fields(void) {
  CUDA_ONLY();
  size_t n = 0;
  uint8_t *clean = cubin(&n);
  if (!clean)
    return;
  Elf64_Ehdr eh;
  memcpy(&eh, clean, sizeof eh);
  static const struct {
    size_t off, size;
  } fields[] = {
      {offsetof(Elf64_Ehdr, e_phoff), 8},     {offsetof(Elf64_Ehdr, e_shoff), 8},
      {offsetof(Elf64_Ehdr, e_phentsize), 2}, {offsetof(Elf64_Ehdr, e_phnum), 2},
      {offsetof(Elf64_Ehdr, e_shentsize), 2}, {offsetof(Elf64_Ehdr, e_shnum), 2},
      {offsetof(Elf64_Ehdr, e_shstrndx), 2},
  };
  uint8_t *img = malloc(n);
  int loaded = 0, refusals = 0;
  rng_state = 0x20202020deadbeefull;
  for (int i = 0; i < 240; i++) {
    memcpy(img, clean, n);
    for (int k = 1 + (int)(rng() % 3); k > 0; k--) {
      size_t off, size;
      switch (rng() % 3) {
      case 0: {
        size_t f = rng() % (sizeof fields / sizeof fields[0]);
        off = fields[f].off, size = fields[f].size;
        break;
      }
      case 1: /* p_offset or p_filesz of a program header of the clean image */
        off = eh.e_phoff + (rng() % eh.e_phnum) * sizeof(Elf64_Phdr) +
              (rng() % 2 ? offsetof(Elf64_Phdr, p_offset) : offsetof(Elf64_Phdr, p_filesz));
        size = 8;
        break;
      default: /* sh_offset or sh_size of a section header of the clean image */
        off = eh.e_shoff + (rng() % eh.e_shnum) * sizeof(Elf64_Shdr) +
              (rng() % 2 ? offsetof(Elf64_Shdr, sh_offset) : offsetof(Elf64_Shdr, sh_size));
        size = 8;
      }
      static const uint64_t extreme[] = {0xffff, 0xffffffffull, 1ull << 30, ~0ull};
      uint64_t v;
      switch (rng() % 3) {
      case 0:
        v = rng();
        break;
      case 1:
        v = extreme[rng() % 4];
        break;
      default:
        v = n - rng() % 64;
      }
      memcpy(img + off, &v, size); /* little-endian: the low bytes */
    }
    ol_program_handle_t p = NULL;
    ol_result_t r = olCreateProgram(hc_dev, img, n, &p);
    if (!r) {
      loaded++;
      OK(olDestroyProgram(p));
    } else if (TRUE(r->Code == OL_ERRC_INVALID_BINARY && r->Details && r->Details[0])) {
      refusals++;
    } else {
      printf("    try %d: OL_ERRC_%s \"%s\"\n", i, hc_code_name(r->Code), r->Details ? r->Details : "");
    }
  }
  printf("    240 header mutations: %d refused, %d loaded\n", refusals, loaded);
  free(img);
  free(clean);
}

/* The clean image still loads and runs. */
static void test_clean_still_loads(void) {
  CUDA_ONLY();
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
    RUN(test_damaged_headers);
    RUN(test_random_header_fields);
    RUN(test_clean_still_loads);
  }
  return hc_finish("cuda_image");
}
