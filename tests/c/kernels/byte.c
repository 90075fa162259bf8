// byte: a single char argument ahead of a pointer.
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

struct byte_args {
  char c;
  char *out;
};

OL_KERNEL(byte, struct byte_args, a) {
  uint32_t id = ol_global_id(0);
  a.out[id] = (char)(a.c + (char)id);
}
