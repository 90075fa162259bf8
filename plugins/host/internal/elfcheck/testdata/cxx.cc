// A C++ kernel image: a global with a constructor and a destructor, an
// inline variable (a unique symbol) and libstdc++.
// SPDX-License-Identifier: Apache-2.0
#include <offload/kernel.h>

#include <string>
#include <vector>

struct holder {
  static inline std::vector<uint32_t> values{1, 2, 3};
};
static std::string name = "a C++ kernel image";

struct cxx_args {
  uint32_t *out;
};

OL_KERNEL(cxx, struct cxx_args, a) { a.out[ol_global_id(0)] = holder::values[1] + (uint32_t)name.size(); }
