/* Symbols of programs of the device under test: olGetSymbol, olGetSymbolInfo(Size).
 * SPDX-License-Identifier: Apache-2.0 */
#include "oldevices.h"

static ol_program_handle_t foo_prog, global_prog;

static void test_get_kernel_and_global(void) {
  ol_symbol_handle_t k = NULL, g = NULL;
  OLC_OK(olGetSymbol(foo_prog, "foo", OL_SYMBOL_KIND_KERNEL, &k));
  OLC_TRUE(k != NULL);
  OLC_OK(olGetSymbol(global_prog, "global", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &g));
  OLC_TRUE(g != NULL && g != k);
  /* asking again gives the same handle */
  ol_symbol_handle_t k2 = NULL, g2 = NULL;
  OLC_OK(olGetSymbol(foo_prog, "foo", OL_SYMBOL_KIND_KERNEL, &k2));
  OLC_OK(olGetSymbol(global_prog, "global", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &g2));
  OLC_EQ((uintptr_t)k2, (uintptr_t)k);
  OLC_EQ((uintptr_t)g2, (uintptr_t)g);
  /* both kernels of global.so */
  ol_symbol_handle_t w = NULL, r = NULL;
  OLC_OK(olGetSymbol(global_prog, "write", OL_SYMBOL_KIND_KERNEL, &w));
  OLC_OK(olGetSymbol(global_prog, "read", OL_SYMBOL_KIND_KERNEL, &r));
  OLC_TRUE(w != NULL && r != NULL && w != r);
}

static void test_get_symbol_errors(void) {
  ol_symbol_handle_t s = (ol_symbol_handle_t)0x1;
  OLC_ERR_HAS(olGetSymbol(foo_prog, "nonexistent", OL_SYMBOL_KIND_KERNEL, &s), OL_ERRC_NOT_FOUND,
              "nonexistent");
  OLC_ERR_CODE(olGetSymbol(foo_prog, "", OL_SYMBOL_KIND_KERNEL, &s), OL_ERRC_NOT_FOUND);
  OLC_ERR_HAS(olGetSymbol(global_prog, "nonexistent", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &s),
              OL_ERRC_NOT_FOUND, "nonexistent");
  /* a name of the other kind */
  OLC_ERR_HAS(olGetSymbol(global_prog, "global", OL_SYMBOL_KIND_KERNEL, &s), OL_ERRC_NOT_FOUND, "global");
  OLC_ERR_HAS(olGetSymbol(foo_prog, "foo", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &s), OL_ERRC_NOT_FOUND, "foo");
  /* a symbol of the C library is not a symbol of the program */
  OLC_ERR_CODE(olGetSymbol(foo_prog, "malloc", OL_SYMBOL_KIND_KERNEL, &s), OL_ERRC_NOT_FOUND);
  OLC_ERR_CODE(olGetSymbol(foo_prog, "environ", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &s), OL_ERRC_NOT_FOUND);
  /* a kernel of another program is not found here */
  OLC_ERR_CODE(olGetSymbol(global_prog, "foo", OL_SYMBOL_KIND_KERNEL, &s), OL_ERRC_NOT_FOUND);
  OLC_ERR_HAS(olGetSymbol(foo_prog, "foo", (ol_symbol_kind_t)OLC_BIG, &s), OL_ERRC_INVALID_ENUMERATION,
              "getSymbol kind enum '2147483647' is invalid");
  OLC_ERR_HAS(olGetSymbol(foo_prog, "foo", OL_SYMBOL_KIND_LAST, &s), OL_ERRC_INVALID_ENUMERATION,
              "getSymbol kind enum '2' is invalid");
  OLC_EQ((uintptr_t)s, 1);
}

static void test_symbol_info(void) {
  ol_symbol_handle_t k = olc_kernel(foo_prog, "foo");
  void *addr = NULL;
  size_t size = 0;
  ol_symbol_handle_t g = olc_global(global_prog, "global", NULL, NULL);
  if (!k || !g)
    return;
  ol_symbol_kind_t kind = OL_SYMBOL_KIND_LAST;
  OLC_OK(olGetSymbolInfo(k, OL_SYMBOL_INFO_KIND, sizeof kind, &kind));
  OLC_EQ(kind, OL_SYMBOL_KIND_KERNEL);
  OLC_OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_KIND, sizeof kind, &kind));
  OLC_EQ(kind, OL_SYMBOL_KIND_GLOBAL_VARIABLE);
  OLC_OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof addr, &addr));
  OLC_TRUE(addr != NULL);
  OLC_OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, sizeof size, &size));
  OLC_EQ(size, 64 * sizeof(uint32_t));
  /* the address is the one the program's kernels use: `write` fills it */
  ol_symbol_handle_t w = olc_kernel(global_prog, "write");
  if (w && addr) {
    olc_set(OL_ALLOC_TYPE_DEVICE, addr, 0, 256);
    uint32_t unused = 0;
    ol_kernel_launch_size_args_t l = olc_size1(1, 64);
    OLC_OK(olLaunchKernel(NULL, olc_dev, w, &unused, sizeof unused, &l));
    OLC_EQ_DARRAY(uint32_t, addr, 64, 2u * i);
  }
  /* kernels have no address or size */
  OLC_ERR_CODE(olGetSymbolInfo(k, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof addr, &addr),
               OL_ERRC_SYMBOL_KIND);
  OLC_ERR_CODE(olGetSymbolInfo(k, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, sizeof size, &size),
               OL_ERRC_SYMBOL_KIND);
}

static void test_symbol_info_errors(void) {
  ol_symbol_handle_t k = olc_kernel(foo_prog, "foo");
  ol_symbol_handle_t g = olc_global(global_prog, "global", NULL, NULL);
  if (!k || !g)
    return;
  ol_symbol_kind_t kind;
  void *addr;
  OLC_ERR_HAS(olGetSymbolInfo(k, OL_SYMBOL_INFO_KIND, 0, &kind), OL_ERRC_INVALID_SIZE, "PropSize == 0");
  OLC_ERR_CODE(olGetSymbolInfo(k, OL_SYMBOL_INFO_KIND, sizeof kind - 1, &kind), OL_ERRC_INVALID_SIZE);
  OLC_ERR_CODE(olGetSymbolInfo(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof addr - 1, &addr),
               OL_ERRC_INVALID_SIZE);
  OLC_ERR_HAS(olGetSymbolInfo(k, (ol_symbol_info_t)OLC_BIG, sizeof kind, &kind),
              OL_ERRC_INVALID_ENUMERATION, "olGetSymbolInfo enum '2147483647' is invalid");
  /* a program handle is not a symbol handle */
  OLC_ERR_HAS(olGetSymbolInfo((ol_symbol_handle_t)foo_prog, OL_SYMBOL_INFO_KIND, sizeof kind, &kind),
              OL_ERRC_INVALID_ARGUMENT, "program");
}

static void test_symbol_info_size(void) {
  ol_symbol_handle_t k = olc_kernel(foo_prog, "foo");
  ol_symbol_handle_t g = olc_global(global_prog, "global", NULL, NULL);
  if (!k || !g)
    return;
  size_t n = 0;
  OLC_OK(olGetSymbolInfoSize(k, OL_SYMBOL_INFO_KIND, &n));
  OLC_EQ(n, sizeof(ol_symbol_kind_t));
  OLC_OK(olGetSymbolInfoSize(g, OL_SYMBOL_INFO_KIND, &n));
  OLC_EQ(n, sizeof(ol_symbol_kind_t));
  OLC_OK(olGetSymbolInfoSize(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, &n));
  OLC_EQ(n, sizeof(void *));
  OLC_OK(olGetSymbolInfoSize(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, &n));
  OLC_EQ(n, sizeof(size_t));
  OLC_ERR_CODE(olGetSymbolInfoSize(k, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, &n), OL_ERRC_SYMBOL_KIND);
  OLC_ERR_CODE(olGetSymbolInfoSize(k, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, &n), OL_ERRC_SYMBOL_KIND);
  OLC_ERR_HAS(olGetSymbolInfoSize(k, (ol_symbol_info_t)OLC_BIG, &n), OL_ERRC_INVALID_ENUMERATION,
              "olGetSymbolInfo enum '2147483647' is invalid");
}

/* The same name in two programs gives two symbols; a symbol belongs to its
 * own program's copy. */
static void test_symbols_per_program(void) {
  ol_program_handle_t other = olc_program("global");
  void *a1 = NULL, *a2 = NULL;
  ol_symbol_handle_t s1 = olc_global(global_prog, "global", &a1, NULL);
  ol_symbol_handle_t s2 = olc_global(other, "global", &a2, NULL);
  OLC_TRUE(s1 != NULL && s2 != NULL && s1 != s2);
  OLC_TRUE(a1 != a2);
  ol_symbol_handle_t k1 = olc_kernel(global_prog, "read"), k2 = olc_kernel(other, "read");
  OLC_TRUE(k1 != NULL && k2 != NULL && k1 != k2);
  if (other)
    OLC_OK(olDestroyProgram(other));
  /* the first program's symbols are untouched */
  ol_symbol_kind_t kind;
  OLC_OK(olGetSymbolInfo(s1, OL_SYMBOL_INFO_KIND, sizeof kind, &kind));
  OLC_ERR_CODE(olGetSymbolInfo(s2, OL_SYMBOL_INFO_KIND, sizeof kind, &kind), OL_ERRC_INVALID_ARGUMENT);
}

static void *lookup_worker(void *arg) {
  ol_symbol_handle_t *first = arg;
  int bad = 0;
  for (int i = 0; i < 500; i++) {
    ol_symbol_handle_t s = NULL;
    bad += olGetSymbol(foo_prog, "foo", OL_SYMBOL_KIND_KERNEL, &s) != NULL;
    bad += s != *first;
  }
  return (void *)(intptr_t)bad;
}

static void test_lookup_from_threads(void) {
  ol_symbol_handle_t first = olc_kernel(foo_prog, "foo");
  OLC_EQ(olc_threads(8, lookup_worker, &first, 0), 0);
}

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    foo_prog = olc_program("foo");
    global_prog = olc_program("global");
    if (foo_prog && global_prog) {
      OLC_RUN(test_get_kernel_and_global);
      OLC_RUN(test_get_symbol_errors);
      OLC_RUN(test_symbol_info);
      OLC_RUN(test_symbol_info_errors);
      OLC_RUN(test_symbol_info_size);
      OLC_RUN(test_symbols_per_program);
      OLC_RUN(test_lookup_from_threads);
    }
    olc_test = "cleanup";
    if (foo_prog)
      OLC_OK(olDestroyProgram(foo_prog));
    if (global_prog)
      OLC_OK(olDestroyProgram(global_prog));
  }
  return olc_finish("symbol");
}
