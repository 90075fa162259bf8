/* CUDA images whose headers point past ProgDataSize: the driver's module
 * load takes no size, so olCreateProgram must refuse them with
 * OL_ERRC_INVALID_BINARY naming the field before the driver reads them,
 * and olIsValidBinary must say false. Cubins (ELF: the kernel image when
 * it is one, as in the driver double's suite) and fatbins wrapping them.
 * SPDX-License-Identifier: Apache-2.0 */
#include <elf.h>

#include "mutate.h"

/* olCreateProgram refuses img with INVALID_BINARY naming `want`, and
 * olIsValidBinary says false. */
static void refused(const void *img, size_t n, const char *want) {
  ol_program_handle_t p = NULL;
  OLC_ERR_HAS(olCreateProgram(olc_dev, img, n, &p), OL_ERRC_INVALID_BINARY, want);
  bool valid = true;
  OLC_OK(olIsValidBinary(olc_dev, img, n, &valid));
  OLC_TRUE(!valid);
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
  uint8_t *img = olc_image("foo", n);
  if (!img)
    return NULL;
  if (!OLC_NEEDS(*n >= sizeof(Elf64_Ehdr) && !memcmp(img, ELFMAG, SELFMAG) &&
                     img[EI_CLASS] == ELFCLASS64,
                 "a cubin kernel image for the ELF cases (this one is PTX)")) {
    free(img);
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
  OLC_ONLY(OLC_CUDA, "CUDA images");
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
  if (OLC_TRUE(fb != NULL)) {
    refused(fb, fn, "fatbin entry 0 at 0x10: e_phoff");
    free(fb);
  }
  fb = fatbin_of(clean, n, &fn);
  if (OLC_TRUE(fb != NULL)) {
    uint64_t fat = 1ull << 40;
    memcpy(fb + 8, &fat, 8);
    refused(fb, fn, "fatbin header size 16 + entries size 0x10000000000 runs past ProgDataSize");
    free(fb);
  }
  free(img);
  free(clean);
}

/* The header fields a mutation changes: ELF header fields, and p_offset,
 * p_filesz, sh_offset and sh_size of the clean image's headers. */
static const struct {
  size_t off, size;
} fields[] = {
    {offsetof(Elf64_Ehdr, e_phoff), 8},     {offsetof(Elf64_Ehdr, e_shoff), 8},
    {offsetof(Elf64_Ehdr, e_phentsize), 2}, {offsetof(Elf64_Ehdr, e_phnum), 2},
    {offsetof(Elf64_Ehdr, e_shentsize), 2}, {offsetof(Elf64_Ehdr, e_shnum), 2},
    {offsetof(Elf64_Ehdr, e_shstrndx), 2},
};

/* Sets 1 to 3 header fields of img to random, extreme or nearby values. */
static void set_fields(uint8_t *img, size_t n, uint64_t *rng, void *user) {
  const Elf64_Ehdr *eh = user; /* the clean image's */
  for (int k = 1 + (int)(mut_rng(rng) % 3); k > 0; k--) {
    size_t off, size;
    switch (mut_rng(rng) % 3) {
    case 0: {
      size_t f = mut_rng(rng) % (sizeof fields / sizeof fields[0]);
      off = fields[f].off, size = fields[f].size;
      break;
    }
    case 1: /* p_offset or p_filesz of a program header of the clean image */
      off = eh->e_phoff + (mut_rng(rng) % eh->e_phnum) * sizeof(Elf64_Phdr) +
            (mut_rng(rng) % 2 ? offsetof(Elf64_Phdr, p_offset) : offsetof(Elf64_Phdr, p_filesz));
      size = 8;
      break;
    default: /* sh_offset or sh_size of a section header of the clean image */
      off = eh->e_shoff + (mut_rng(rng) % eh->e_shnum) * sizeof(Elf64_Shdr) +
            (mut_rng(rng) % 2 ? offsetof(Elf64_Shdr, sh_offset) : offsetof(Elf64_Shdr, sh_size));
      size = 8;
    }
    static const uint64_t extreme[] = {0xffff, 0xffffffffull, 1ull << 30, ~0ull};
    uint64_t v;
    switch (mut_rng(rng) % 3) {
    case 0:
      v = mut_rng(rng);
      break;
    case 1:
      v = extreme[mut_rng(rng) % 4];
      break;
    default:
      v = n - mut_rng(rng) % 64;
    }
    memcpy(img + off, &v, size); /* little-endian: the low bytes */
  }
}

/* Random header fields of the cubin set to random, extreme or nearby
 * values (mutate.h's loop): each image is loaded or refused with
 * INVALID_BINARY, and the process survives. */
static void test_random_header_fields(void) {
  OLC_ONLY(OLC_CUDA, "CUDA images");
  size_t n = 0;
  uint8_t *clean = cubin(&n);
  if (!clean)
    return;
  Elf64_Ehdr eh;
  memcpy(&eh, clean, sizeof eh);
  mut_loop m = {clean, n, 240, 0x20202020deadbeefull, set_fields, NULL, &eh};
  mut_tally t = mut_run(&m);
  printf("    240 header mutations: %d refused, %d loaded\n", t.refused, t.loaded);
  free(clean);
}

/* The clean image still loads and runs. */
static void test_clean_still_loads(void) {
  OLC_ONLY(OLC_CUDA, "CUDA images");
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
    OLC_RUN(test_damaged_headers);
    OLC_RUN(test_random_header_fields);
    OLC_RUN(test_clean_still_loads);
  }
  return olc_finish("cuda_image");
}
