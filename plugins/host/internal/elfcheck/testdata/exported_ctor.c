// An exported constructor: GNU ld relocates its DT_INIT_ARRAY entry
// against the symbol (R_X86_64_64), not with a relative relocation.
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

OL_GLOBAL uint32_t value;

__attribute__((constructor, visibility("default"))) void exported_init(void) { value = 7; }

struct ctor_args {
  uint32_t *out;
};

OL_KERNEL(exported_ctor, struct ctor_args, a) { a.out[ol_global_id(0)] = value; }
