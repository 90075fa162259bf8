#!/usr/bin/env bash
# The kernel-writing rules of docs/kernels.md that <offload/kernel.h>
# enforces at compile time for the host CPU: each broken kernel below must
# fail to compile, and the same kernel with the rule kept (one line
# different) must compile, as C17 and C++17 with warnings as errors, for
# the host and (with clang-22) for NVPTX and AMDGPU.
# usage: kernel_rules.sh INCLUDE_DIR [CLANG]
set -u
inc=$1
clang=${2:-clang-22}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL kernel-rules: $*"; }

# kernel NAME GOOD BAD: a phased/plain/group kernel whose marked line is
# GOOD (compiles) or BAD (must not compile on the host).
kernel() {
  cat <<C
#include <offload/kernel.h>
struct args { uint32_t *out; uint32_t n; };
OL_PHASED_KERNEL(phased, struct args, a) {
  OL_PRIVATE(uint32_t, v);
  OL_GROUP_LOCAL(uint32_t, tile[64]);
  uint32_t g = ol_group_id(0) * ol_group_size(0);
  OL_FOR_ITEMS { ol_private(v) = ol_thread_id(0); tile[ol_thread_id(0) % 64] = g; }
  ol_barrier();
  $1
  OL_FOR_ITEMS { a.out[ol_global_id(0)] = ol_private(v) + tile[0]; }
}
OL_KERNEL(plain, struct args, a) {
  $2
  a.out[ol_global_id(0)] = 1;
}
OL_KERNEL_PARAMS(plain_params, (uint32_t *, out), (struct args, a), (uint8_t, b)) {
  out[ol_global_id(0)] = a.n + b;
}
OL_GROUP_KERNEL_PARAMS(group_params, (uint32_t *, out), (double, d)) {
  ol_barrier();
  out[ol_global_id(0)] = (uint32_t)d;
}
OL_PHASED_KERNEL_PARAMS(phased_params, (uint32_t *, out), (uint16_t, h)) {
  ol_barrier();
  OL_FOR_ITEMS { out[ol_global_id(0)] = h; }
}
OL_GLOBAL uint32_t counts[64];
OL_PHASED_KERNEL_NOARGS(phased_noargs) {
  OL_FOR_ITEMS { __atomic_fetch_add(&counts[ol_thread_id(0) % 64], 1u, __ATOMIC_RELAXED); }
}
C
}
compiles() { # FILE: compiles for the host as C17 and C++17
  gcc -std=c17 -Wall -Wextra -Werror -fsyntax-only -I "$inc" "$1" 2>"$out/err" &&
    g++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only -x c++ -I "$inc" "$1" 2>>"$out/err"
}
fails() { # FILE: fails for the host both as C17 and as C++17
  ! gcc -std=c17 -fsyntax-only -I "$inc" "$1" 2>/dev/null &&
    ! g++ -std=c++17 -fsyntax-only -x c++ -I "$inc" "$1" 2>/dev/null
}
kernel "OL_FOR_ITEMS { if (ol_thread_id(0) == 0) continue; ol_private(v) += 1; }" "" >"$out/good.c"
if compiles "$out/good.c"; then ok; else bad "the reference kernel does not compile: $(head -3 "$out/err")"; fi
if command -v "$clang" >/dev/null 2>&1; then
  for t in "--target=nvptx64-nvidia-cuda -march=sm_80" "--target=amdgcn-amd-amdhsa -mcpu=gfx90a"; do
    # shellcheck disable=SC2086
    if $clang $t -nogpulib -ffreestanding -O2 -Wall -Werror -fsyntax-only -I "$inc" "$out/good.c" 2>"$out/err"; then ok
    else bad "the reference kernel does not compile for ${t%% *}: $(head -3 "$out/err")"; fi
  done
fi
check() { # WHAT PHASED_LINE PLAIN_LINE
  kernel "$2" "$3" >"$out/bad.c"
  if fails "$out/bad.c"; then ok; else bad "$1 compiles for the host"; fi
}
check "ol_barrier() inside OL_FOR_ITEMS" "OL_FOR_ITEMS { ol_barrier(); }" ""
check "ol_barrier() in a plain OL_KERNEL" "" "ol_barrier();"
check "ol_thread_id() in a phased kernel's group code" "uint32_t t = ol_thread_id(0); (void)t;" ""
check "ol_global_id() in a phased kernel's group code" "uint32_t t = ol_global_id(0); (void)t;" ""
check "ol_private() in a phased kernel's group code" "ol_private(v) = 0;" ""
check "OL_FOR_ITEMS inside OL_FOR_ITEMS" "OL_FOR_ITEMS { OL_FOR_ITEMS { ol_private(v) = 0; } }" ""
check "OL_FOR_ITEMS in a plain OL_KERNEL" "" "OL_FOR_ITEMS { a.out[0] = 0; }"
echo "kernel-rules: $pass passed, $fail failed"
[ "$fail" = 0 ]
