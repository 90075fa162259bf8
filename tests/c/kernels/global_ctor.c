// global_ctor: a constructor fills the global before any kernel runs; the
// kernel copies it out (values i + 100).
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

OL_GLOBAL uint32_t global[64];

__attribute__((constructor)) static void fill_global(void) {
  for (uint32_t i = 0; i < 64; i++)
    global[i] = i + 100u;
#if !defined(__NVPTX__) && !defined(__AMDGPU__)
  // Host only: count loads in the environment so a test can tell whether
  // the image was loaded (olCreateProgram) or only inspected (olIsValidBinary).
  extern char *getenv(const char *);
  extern int setenv(const char *, const char *, int);
  const char *v = getenv("OL_TEST_CTOR_RUNS");
  unsigned n = 0;
  if (v)
    for (; *v >= '0' && *v <= '9'; v++)
      n = n * 10 + (unsigned)(*v - '0');
  char buf[16];
  int len = 0;
  n++;
  char tmp[16];
  do {
    tmp[len++] = (char)('0' + n % 10);
    n /= 10;
  } while (n);
  for (int i = 0; i < len; i++)
    buf[i] = tmp[len - 1 - i];
  buf[len] = 0;
  setenv("OL_TEST_CTOR_RUNS", buf, 1);
#endif
}

struct ctor_args {
  uint32_t *out;
};

OL_KERNEL(global_ctor, struct ctor_args, a) {
  uint32_t id = ol_global_id(0);
  a.out[id] = global[id];
}
