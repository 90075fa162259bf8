/* hsaco_meta IN OUT: copies the host shared object IN (built from
 * tests/c/kernels with <offload/kernel.h>) to OUT with the kernel metadata
 * note a real AMDGPU code object carries (NT_AMDGPU_METADATA, owner
 * "AMDGPU", MessagePack), so that the HSA runtime double's code objects
 * tell the plugin what real ones do: per kernel (each __ol_kernel_<name>
 * descriptor), its name and symbol, the kernarg segment the double reports
 * (align8(argument block) + 256), each parameter the descriptor records
 * (<offload/kernel.h> ABI 4: those the kernel has on a GPU; an older
 * descriptor: the argument struct, one) as a by-value argument at its
 * offset, and the code object v5 implicit arguments after them.
 * A host object with constructors (destructors), a non-empty
 * DT_INIT_ARRAY (DT_FINI_ARRAY), gets the entry clang-22 gives the kernel
 * amdgcn.device.init (amdgcn.device.fini) that runs them: .kind init
 * (fini), no explicit arguments, the implicit ones from offset 0 (kernarg
 * segment 256 bytes), .max_flat_workgroup_size 1, .uses_dynamic_stack
 * true; the double provides those kernels.
 * The note goes into a new SHT_NOTE section at the end of the file (a
 * copy of the section header table with one more entry follows it).
 * The caller then dresses OUT's ELF header as an AMDGPU one.
 * SPDX-License-Identifier: Apache-2.0 */
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <offload/kernel.h>

static unsigned char *meta;
static size_t meta_len, meta_cap;

static void put(const void *p, size_t n) {
  if (meta_len + n > meta_cap) {
    meta_cap = (meta_len + n) * 2;
    meta = realloc(meta, meta_cap);
    if (meta == NULL) {
      perror("hsaco_meta");
      exit(1);
    }
  }
  memcpy(meta + meta_len, p, n);
  meta_len += n;
}

static void put8(unsigned v) {
  unsigned char c = (unsigned char)v;
  put(&c, 1);
}

/* MessagePack: maps and arrays of at most 15 entries, strings, uints */
static void mp_map(unsigned n) { put8(0x80 | n); }
static void mp_array(unsigned n) { put8(0x90 | n); }
static void mp_str(const char *s) {
  size_t n = strlen(s);
  if (n < 32) {
    put8(0xa0 | (unsigned)n);
  } else {
    put8(0xd9);
    put8((unsigned)n);
  }
  put(s, n);
}
static void mp_uint(uint32_t v) {
  if (v < 128) {
    put8(v);
  } else {
    put8(0xce);
    for (int i = 3; i >= 0; i--)
      put8(v >> (8 * i));
  }
}

static void mp_arg(const char *kind, uint32_t offset, uint32_t size) {
  mp_map(3);
  mp_str(".offset"), mp_uint(offset);
  mp_str(".size"), mp_uint(size);
  mp_str(".value_kind"), mp_str(kind);
}

static const struct {
  const char *kind;
  uint32_t off, size;
} hidden[] = {
    {"hidden_block_count_x", 0, 4}, {"hidden_block_count_y", 4, 4},   {"hidden_block_count_z", 8, 4},
    {"hidden_group_size_x", 12, 2}, {"hidden_group_size_y", 14, 2},   {"hidden_group_size_z", 16, 2},
    {"hidden_remainder_x", 18, 2},  {"hidden_remainder_y", 20, 2},    {"hidden_remainder_z", 22, 2},
    {"hidden_global_offset_x", 40, 8}, {"hidden_global_offset_y", 48, 8}, {"hidden_global_offset_z", 56, 8},
    {"hidden_grid_dims", 64, 2},
};

/* the entry of amdgcn.device.<kind> */
static void ctor_kernel(const char *kind) {
  char name[32], symbol[40];
  snprintf(name, sizeof name, "amdgcn.device.%s", kind);
  snprintf(symbol, sizeof symbol, "%s.kd", name);
  mp_map(9);
  mp_str(".name"), mp_str(name);
  mp_str(".symbol"), mp_str(symbol);
  mp_str(".kind"), mp_str(kind);
  mp_str(".kernarg_segment_size"), mp_uint(256);
  mp_str(".kernarg_segment_align"), mp_uint(8);
  mp_str(".max_flat_workgroup_size"), mp_uint(1);
  mp_str(".wavefront_size"), mp_uint(64);
  mp_str(".uses_dynamic_stack"), put8(0xc3); /* true */
  mp_str(".args");
  unsigned nh = sizeof hidden / sizeof hidden[0];
  mp_array(nh);
  for (unsigned h = 0; h < nh; h++)
    mp_arg(hidden[h].kind, hidden[h].off, hidden[h].size);
}

static void fail(const char *what) {
  fprintf(stderr, "hsaco_meta: %s\n", what);
  exit(1);
}

int main(int argc, char **argv) {
  if (argc != 3)
    fail("usage: hsaco_meta IN.so OUT");
  FILE *f = fopen(argv[1], "rb");
  if (f == NULL)
    fail("cannot open the input");
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)size);
  if (size < (long)sizeof(Elf64_Ehdr) || b == NULL || fread(b, 1, (size_t)size, f) != (size_t)size)
    fail("cannot read the input");
  fclose(f);
  Elf64_Ehdr eh;
  memcpy(&eh, b, sizeof eh);
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
      eh.e_shoff + (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > (uint64_t)size)
    fail("the input is not a 64-bit ELF with section headers");
  Elf64_Shdr *sh = (Elf64_Shdr *)(b + eh.e_shoff);
  /* the kernels: exported __ol_kernel_<name> descriptors in .dynsym */
  char names[15][128];
  uint32_t args[15], nparams[15];
  ol_host_param params[15][64];
  unsigned n = 0;
  for (unsigned i = 0; i < eh.e_shnum; i++) {
    if (sh[i].sh_type != SHT_DYNSYM)
      continue;
    const Elf64_Sym *sym = (const Elf64_Sym *)(b + sh[i].sh_offset);
    const char *str = (const char *)b + sh[sh[i].sh_link].sh_offset;
    for (size_t k = 0; k < sh[i].sh_size / sizeof *sym; k++) {
      const char *name = str + sym[k].st_name;
      if (strncmp(name, "__ol_kernel_", 12) || sym[k].st_shndx == SHN_UNDEF || sym[k].st_shndx >= eh.e_shnum)
        continue;
      const Elf64_Shdr *s = &sh[sym[k].st_shndx];
      uint64_t off = sym[k].st_value - s->sh_addr + s->sh_offset;
      ol_host_kernel_desc d;
      if (s->sh_type == SHT_NOBITS || off + sizeof d > (uint64_t)size)
        fail("a kernel descriptor is not in the file");
      memcpy(&d, b + off, sizeof d);
      if (d.magic != OL_HOST_KERNEL_MAGIC)
        fail("a kernel descriptor has the wrong magic");
      if (n == 15)
        fail("more than 15 kernels");
      snprintf(names[n], sizeof names[n], "%s", name + 12);
      if (d.abi >= 4) {
        if (d.num_params > 64 || off + sizeof d + d.num_params * sizeof(ol_host_param) > (uint64_t)size)
          fail("a kernel's parameter list is not in the file (or longer than 64)");
        nparams[n] = d.num_params;
        memcpy(params[n], b + off + sizeof d, d.num_params * sizeof(ol_host_param));
      } else {
        nparams[n] = d.args_size > 0;
        params[n][0] = (ol_host_param){0, d.args_size};
      }
      args[n++] = d.args_size;
    }
  }
  /* constructors and destructors: the entries of DT_INIT_ARRAY
   * (DT_FINI_ARRAY) but gcc's own (crtstuff's frame_dummy and
   * __do_global_dtors_aux, which clang's code objects do not have) */
  uint64_t arr[2] = {0, 0}, arrsz[2] = {0, 0};
  for (unsigned i = 0; i < eh.e_shnum; i++) {
    if (sh[i].sh_type != SHT_DYNAMIC || sh[i].sh_offset + sh[i].sh_size > (uint64_t)size)
      continue;
    const Elf64_Dyn *dyn = (const Elf64_Dyn *)(b + sh[i].sh_offset);
    for (size_t k = 0; k < sh[i].sh_size / sizeof *dyn && dyn[k].d_tag != DT_NULL; k++)
      switch (dyn[k].d_tag) {
      case DT_INIT_ARRAY: arr[0] = dyn[k].d_un.d_ptr; break;
      case DT_INIT_ARRAYSZ: arrsz[0] = dyn[k].d_un.d_val; break;
      case DT_FINI_ARRAY: arr[1] = dyn[k].d_un.d_ptr; break;
      case DT_FINI_ARRAYSZ: arrsz[1] = dyn[k].d_un.d_val; break;
      }
  }
  int own[2] = {0, 0};
  for (int a = 0; a < 2; a++) {
    if (arr[a] == 0)
      continue;
    uint64_t entries = arrsz[a] / 8, crt = 0;
    for (unsigned i = 0; i < eh.e_shnum; i++) {
      if (sh[i].sh_type != SHT_RELA || sh[i].sh_offset + sh[i].sh_size > (uint64_t)size)
        continue;
      const Elf64_Rela *r = (const Elf64_Rela *)(b + sh[i].sh_offset);
      for (size_t k = 0; k < sh[i].sh_size / sizeof *r; k++) {
        if (r[k].r_offset < arr[a] || r[k].r_offset >= arr[a] + arrsz[a])
          continue;
        for (unsigned j = 0; j < eh.e_shnum; j++) {
          if (sh[j].sh_type != SHT_SYMTAB || sh[j].sh_link >= eh.e_shnum)
            continue;
          const Elf64_Sym *sym = (const Elf64_Sym *)(b + sh[j].sh_offset);
          const char *str = (const char *)b + sh[sh[j].sh_link].sh_offset;
          for (size_t m = 0; m < sh[j].sh_size / sizeof *sym; m++)
            if (ELF64_ST_TYPE(sym[m].st_info) == STT_FUNC && sym[m].st_value == (uint64_t)r[k].r_addend &&
                (!strcmp(str + sym[m].st_name, "frame_dummy") ||
                 !strcmp(str + sym[m].st_name, "__do_global_dtors_aux"))) {
              crt++;
              break;
            }
        }
      }
    }
    own[a] = entries > crt;
  }
  int inits = own[0], finis = own[1];
  if (n + inits + finis > 15)
    fail("more than 15 kernels");
  mp_map(2);
  mp_str("amdhsa.version"), mp_array(2), mp_uint(1), mp_uint(2);
  mp_str("amdhsa.kernels"), mp_array(n + inits + finis);
  if (inits)
    ctor_kernel("init");
  if (finis)
    ctor_kernel("fini");
  for (unsigned k = 0; k < n; k++) {
    char symbol[140];
    snprintf(symbol, sizeof symbol, "%s.kd", names[k]);
    uint32_t implicit = (args[k] + 7u) & ~7u;
    mp_map(7);
    mp_str(".name"), mp_str(names[k]);
    mp_str(".symbol"), mp_str(symbol);
    mp_str(".kernarg_segment_size"), mp_uint(implicit + 256);
    mp_str(".kernarg_segment_align"), mp_uint(8);
    mp_str(".max_flat_workgroup_size"), mp_uint(1024);
    mp_str(".wavefront_size"), mp_uint(64);
    mp_str(".args");
    unsigned nh = sizeof hidden / sizeof hidden[0];
    unsigned na = nh + nparams[k];
    if (na < 16) {
      mp_array(na);
    } else {
      put8(0xdc), put8(na >> 8), put8(na & 0xff);
    }
    for (unsigned i = 0; i < nparams[k]; i++)
      mp_arg("by_value", params[k][i].offset, params[k][i].size);
    for (unsigned h = 0; h < nh; h++)
      mp_arg(hidden[h].kind, implicit + hidden[h].off, hidden[h].size);
  }
  /* the note: namesz, descsz, type, "AMDGPU\0" padded to 8, the metadata */
  static const char owner[8] = "AMDGPU";
  uint32_t hdr[3] = {7, (uint32_t)meta_len, 32};
  size_t note_off = ((size_t)size + 7) & ~(size_t)7;
  size_t note_len = sizeof hdr + sizeof owner + ((meta_len + 3) & ~(size_t)3);
  size_t shoff = (note_off + note_len + 7) & ~(size_t)7;
  size_t out_len = shoff + ((size_t)eh.e_shnum + 1) * sizeof(Elf64_Shdr);
  unsigned char *out = calloc(1, out_len);
  if (out == NULL)
    fail("out of memory");
  memcpy(out, b, (size_t)size);
  memcpy(out + note_off, hdr, sizeof hdr);
  memcpy(out + note_off + sizeof hdr, owner, sizeof owner);
  memcpy(out + note_off + sizeof hdr + sizeof owner, meta, meta_len);
  memcpy(out + shoff, sh, (size_t)eh.e_shnum * sizeof(Elf64_Shdr));
  Elf64_Shdr note = {.sh_type = SHT_NOTE, .sh_offset = note_off, .sh_size = note_len, .sh_addralign = 4};
  memcpy(out + shoff + (size_t)eh.e_shnum * sizeof(Elf64_Shdr), &note, sizeof note);
  eh.e_shoff = shoff;
  eh.e_shnum++;
  memcpy(out, &eh, sizeof eh);
  f = fopen(argv[2], "wb");
  if (f == NULL || fwrite(out, 1, out_len, f) != out_len || fclose(f) != 0)
    fail("cannot write the output");
  return 0;
}
