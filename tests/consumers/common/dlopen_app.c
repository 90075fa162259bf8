// A program that loads the library as LLVM 23's GPU loader does:
// dlopen("libLLVMOffload.so"), no header, no link. The unversioned name must
// be the newest release (23.1): the program resolves olQueryQueue (a 23.1
// function), checks the soname of the file it got, and runs 23.1's
// olInit(NULL) and olShutDown. Prints the soname and exits 0 on success.
// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

typedef struct { int Code; const char *Details; } err_t;
typedef const err_t *(*init_fn)(const void *InitArgs);
typedef const err_t *(*shutdown_fn)(void);

int main(void) {
  void *lib = dlopen("libLLVMOffload.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen(libLLVMOffload.so): %s\n", dlerror());
    return 1;
  }
  struct link_map *map = NULL;
  if (dlinfo(lib, RTLD_DI_LINKMAP, &map) != 0 || !map) {
    fprintf(stderr, "dlinfo: %s\n", dlerror());
    return 1;
  }
  if (!dlsym(lib, "olQueryQueue")) {
    fprintf(stderr, "%s has no olQueryQueue: not the 23.1 library\n", map->l_name);
    return 1;
  }
  init_fn init = (init_fn)dlsym(lib, "olInit");
  shutdown_fn shutdown = (shutdown_fn)dlsym(lib, "olShutDown");
  const err_t *r = init ? init(NULL) : NULL;
  if (!init || !shutdown || r) {
    fprintf(stderr, "olInit(NULL) failed: %s\n", r && r->Details ? r->Details : "no olInit/olShutDown");
    return 1;
  }
  if ((r = shutdown())) {
    fprintf(stderr, "olShutDown failed: %s\n", r->Details ? r->Details : "");
    return 1;
  }
  char real[PATH_MAX];
  printf("dlopen(\"libLLVMOffload.so\") loaded %s = %s (olQueryQueue resolved, olInit(NULL) ran)\n", map->l_name,
         realpath(map->l_name, real) ? real : "?");
  return 0;
}
