// An exported indirect function: the loader calls its resolver.
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

static uint32_t seven(void) { return 7; }
static uint32_t (*pick(void))(void) { return seven; }
__attribute__((visibility("default"))) uint32_t value(void) __attribute__((ifunc("pick")));

struct ifunc_args {
  uint32_t *out;
};

OL_KERNEL(ifunc, struct ifunc_args, a) { a.out[ol_global_id(0)] = value(); }
