/* Symbols of programs of the device under test: olGetSymbol, olGetSymbolInfo(Size).
 * SPDX-License-Identifier: Apache-2.0 */
#include "hcheck.h"

static ol_program_handle_t foo_prog, global_prog;

static void test_get_kernel_and_global(void) {
  ol_symbol_handle_t k = NULL, g = NULL;
  OK(olGetSymbol(foo_prog, "foo", OL_SYMBOL_KIND_KERNEL, &k));
  TRUE(k != NULL);
  OK(olGetSymbol(global_prog, "global", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &g));
  TRUE(g != NULL && g != k);
  /* asking again gives the same handle */
  ol_symbol_handle_t k2 = NULL, g2 = NULL;
  OK(olGetSymbol(foo_prog, "foo", OL_SYMBOL_KIND_KERNEL, &k2));
  OK(olGetSymbol(global_prog, "global", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &g2));
  EQ((uintptr_t)k2, (uintptr_t)k);
  EQ((uintptr_t)g2, (uintptr_t)g);
  /* both kernels of global.so */
  ol_symbol_handle_t w = NULL, r = NULL;
  OK(olGetSymbol(global_prog, "write", OL_SYMBOL_KIND_KERNEL, &w));
  OK(olGetSymbol(global_prog, "read", OL_SYMBOL_KIND_KERNEL, &r));
  TRUE(w != NULL && r != NULL && w != r);
}

static void test_get_symbol_errors(void) {
  ol_symbol_handle_t s = (ol_symbol_handle_t)0x1;
  ERR(olGetSymbol(foo_prog, "nonexistent", OL_SYMBOL_KIND_KERNEL, &s), OL_ERRC_NOT_FOUND,
      "nonexistent");
  ERR(olGetSymbol(foo_prog, "", OL_SYMBOL_KIND_KERNEL, &s), OL_ERRC_NOT_FOUND, NULL);
  ERR(olGetSymbol(global_prog, "nonexistent", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &s),
      OL_ERRC_NOT_FOUND, "nonexistent");
  /* a name of the other kind */
  ERR(olGetSymbol(global_prog, "global", OL_SYMBOL_KIND_KERNEL, &s), OL_ERRC_NOT_FOUND, "global");
  ERR(olGetSymbol(foo_prog, "foo", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &s), OL_ERRC_NOT_FOUND, "foo");
  /* a symbol of the C library is not a symbol of the program */
  ERR(olGetSymbol(foo_prog, "malloc", OL_SYMBOL_KIND_KERNEL, &s), OL_ERRC_NOT_FOUND, NULL);
  ERR(olGetSymbol(foo_prog, "environ", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &s), OL_ERRC_NOT_FOUND,
      NULL);
  /* a kernel of another program is not found here */
  ERR(olGetSymbol(global_prog, "foo", OL_SYMBOL_KIND_KERNEL, &s), OL_ERRC_NOT_FOUND, NULL);
  ERR(olGetSymbol(foo_prog, "foo", (ol_symbol_kind_t)HC_BIG, &s), OL_ERRC_INVALID_ENUMERATION,
      "getSymbol kind enum '2147483647' is invalid");
  ERR(olGetSymbol(foo_prog, "foo", OL_SYMBOL_KIND_LAST, &s), OL_ERRC_INVALID_ENUMERATION,
      "getSymbol kind enum '2' is invalid");
  EQ((uintptr_t)s, 1);
}

static void test_symbol_info(void) {
  ol_symbol_handle_t k = hc_kernel(foo_prog, "foo");
  void *addr = NULL;
  size_t size = 0;
  ol_symbol_handle_t g = hc_global(global_prog, "global", NULL, NULL);
  if (!k || !g)
    return;
  ol_symbol_kind_t kind = OL_SYMBOL_KIND_LAST;
  OK(olGetSymbolInfo(k, OL_SYMBOL_INFO_KIND, sizeof kind, &kind));
  EQ(kind, OL_SYMBOL_KIND_KERNEL);
  OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_KIND, sizeof kind, &kind));
  EQ(kind, OL_SYMBOL_KIND_GLOBAL_VARIABLE);
  OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof addr, &addr));
  TRUE(addr != NULL);
  OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, sizeof size, &size));
  EQ(size, 64 * sizeof(uint32_t));
  /* the address is the one the program's kernels use: `write` fills it */
  ol_symbol_handle_t w = hc_kernel(global_prog, "write");
  if (w && addr) {
    hc_set(OL_ALLOC_TYPE_DEVICE, addr, 0, 256);
    uint32_t unused = 0;
    ol_kernel_launch_size_args_t l = hc_size1(1, 64);
    OK(olLaunchKernel(NULL, hc_dev, w, &unused, sizeof unused, &l));
    EQ_DARRAY(uint32_t, addr, 64, 2u * i);
  }
  /* kernels have no address or size */
  ERR(olGetSymbolInfo(k, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof addr, &addr),
      OL_ERRC_SYMBOL_KIND, NULL);
  ERR(olGetSymbolInfo(k, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, sizeof size, &size),
      OL_ERRC_SYMBOL_KIND, NULL);
}

static void test_symbol_info_errors(void) {
  ol_symbol_handle_t k = hc_kernel(foo_prog, "foo");
  ol_symbol_handle_t g = hc_global(global_prog, "global", NULL, NULL);
  if (!k || !g)
    return;
  ol_symbol_kind_t kind;
  void *addr;
  ERR(olGetSymbolInfo(k, OL_SYMBOL_INFO_KIND, 0, &kind), OL_ERRC_INVALID_SIZE, "PropSize == 0");
  ERR(olGetSymbolInfo(k, OL_SYMBOL_INFO_KIND, sizeof kind - 1, &kind), OL_ERRC_INVALID_SIZE, NULL);
  ERR(olGetSymbolInfo(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof addr - 1, &addr),
      OL_ERRC_INVALID_SIZE, NULL);
  ERR(olGetSymbolInfo(k, (ol_symbol_info_t)HC_BIG, sizeof kind, &kind),
      OL_ERRC_INVALID_ENUMERATION, "olGetSymbolInfo enum '2147483647' is invalid");
  /* a program handle is not a symbol handle */
  ERR(olGetSymbolInfo((ol_symbol_handle_t)foo_prog, OL_SYMBOL_INFO_KIND, sizeof kind, &kind),
      OL_ERRC_INVALID_ARGUMENT, "program");
}

static void test_symbol_info_size(void) {
  ol_symbol_handle_t k = hc_kernel(foo_prog, "foo");
  ol_symbol_handle_t g = hc_global(global_prog, "global", NULL, NULL);
  if (!k || !g)
    return;
  size_t n = 0;
  OK(olGetSymbolInfoSize(k, OL_SYMBOL_INFO_KIND, &n));
  EQ(n, sizeof(ol_symbol_kind_t));
  OK(olGetSymbolInfoSize(g, OL_SYMBOL_INFO_KIND, &n));
  EQ(n, sizeof(ol_symbol_kind_t));
  OK(olGetSymbolInfoSize(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, &n));
  EQ(n, sizeof(void *));
  OK(olGetSymbolInfoSize(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, &n));
  EQ(n, sizeof(size_t));
  ERR(olGetSymbolInfoSize(k, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, &n), OL_ERRC_SYMBOL_KIND, NULL);
  ERR(olGetSymbolInfoSize(k, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, &n), OL_ERRC_SYMBOL_KIND, NULL);
  ERR(olGetSymbolInfoSize(k, (ol_symbol_info_t)HC_BIG, &n), OL_ERRC_INVALID_ENUMERATION,
      "olGetSymbolInfo enum '2147483647' is invalid");
}

/* The same name in two programs gives two symbols; a symbol belongs to its
 * own program's copy. */
static void test_symbols_per_program(void) {
  ol_program_handle_t other = hc_program("global");
  void *a1 = NULL, *a2 = NULL;
  ol_symbol_handle_t s1 = hc_global(global_prog, "global", &a1, NULL);
  ol_symbol_handle_t s2 = hc_global(other, "global", &a2, NULL);
  TRUE(s1 != NULL && s2 != NULL && s1 != s2);
  TRUE(a1 != a2);
  ol_symbol_handle_t k1 = hc_kernel(global_prog, "read"), k2 = hc_kernel(other, "read");
  TRUE(k1 != NULL && k2 != NULL && k1 != k2);
  if (other)
    OK(olDestroyProgram(other));
  /* the first program's symbols are untouched */
  ol_symbol_kind_t kind;
  OK(olGetSymbolInfo(s1, OL_SYMBOL_INFO_KIND, sizeof kind, &kind));
  ERR(olGetSymbolInfo(s2, OL_SYMBOL_INFO_KIND, sizeof kind, &kind), OL_ERRC_INVALID_ARGUMENT, NULL);
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
  ol_symbol_handle_t first = hc_kernel(foo_prog, "foo");
  EQ(hc_threads(8, lookup_worker, &first, 0), 0);
}

int main(int argc, char **argv) {
  hc_start(argc, argv);
  while (hc_next_device()) {
    foo_prog = hc_program("foo");
    global_prog = hc_program("global");
    if (foo_prog && global_prog) {
      RUN(test_get_kernel_and_global);
      RUN(test_get_symbol_errors);
      RUN(test_symbol_info);
      RUN(test_symbol_info_errors);
      RUN(test_symbol_info_size);
      RUN(test_symbols_per_program);
      RUN(test_lookup_from_threads);
    }
    hc_name = "cleanup";
    if (foo_prog)
      OK(olDestroyProgram(foo_prog));
    if (global_prog)
      OK(olDestroyProgram(global_prog));
  }
  return hc_finish("symbol");
}
