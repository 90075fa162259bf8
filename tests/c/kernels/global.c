// global: a 64-entry program global with a kernel that writes it and one
// that copies it out.
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

OL_GLOBAL uint32_t global[64];

struct write_args {
  uint32_t unused;
};

struct read_args {
  uint32_t *out;
};

// write: global[i] = 2 * i
OL_KERNEL(write, struct write_args, a) {
  (void)a;
  uint32_t id = ol_global_id(0);
  global[id] = id * 2u;
}

// read: out[i] = global[i]
OL_KERNEL(read, struct read_args, a) {
  uint32_t id = ol_global_id(0);
  a.out[id] = global[id];
}
