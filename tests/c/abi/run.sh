#!/usr/bin/env bash
# ABI test: our header and library against LLVM 22.1's (liboffload-22-dev).
#  1. every enum value, type size, alignment and member offset (zabi_layout.c
#     built against each header must print the same lines);
#  2. every function prototype (gcc -aux-info of each header, compared);
#  3. the export list: exactly the 70 names of zabi_functions.txt, all
#     name@@VERS1.0, the soname, and nothing else exported.
set -u
root=$(cd "$(dirname "$0")/../../.." && pwd)
lib=${1:-$root/build/lib/libLLVMOffload.so.22.1}
llvm_inc=/usr/lib/llvm-22/include/offload
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# 1. layout and values
if gcc -std=c17 -Wall -Werror -I "$root/include/offload" "$root/tests/c/abi/zabi_layout.c" -o "$out/ours" &&
   gcc -std=c17 -Wall -include stdbool.h -I "$llvm_inc" "$root/tests/c/abi/zabi_layout.c" -o "$out/llvm"; then
  "$out/ours" > "$out/ours.txt"; "$out/llvm" > "$out/llvm.txt"
  n=$(wc -l < "$out/ours.txt")
  if diff "$out/ours.txt" "$out/llvm.txt" > "$out/layout.diff"; then ok "layout: $n values, sizes and offsets identical"
  else bad "layout differs:"; cat "$out/layout.diff"; fi
else bad "layout program does not compile"; fi

# 1b. our header alone compiles as C17 and C++ with warnings as errors
echo '#include <OffloadAPI.h>' > "$out/inc.c"
gcc -std=c17 -Wall -Wextra -Werror -pedantic -fsyntax-only -I "$root/include/offload" "$out/inc.c" && ok "header is valid C17" || bad "header is not valid C17"
g++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only -x c++ -I "$root/include/offload" "$out/inc.c" && ok "header is valid C++17" || bad "header is not valid C++17"
echo '#include <offload.h>' > "$out/inc2.c"
gcc -std=c17 -Wall -Werror -fsyntax-only -I "$root/include" "$out/inc2.c" && ok "include/offload.h is valid C17" || bad "include/offload.h"
# include/offload.h only forwards to include/offload/OffloadAPI.h: one header, two names
printf '#include <offload.h>\n#include <offload/OffloadAPI.h>\nint n = OL_VERSION_MAJOR;\n' > "$out/inc3.c"
if g++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only -x c++ -I "$root/include" "$out/inc3.c" &&
   ! grep -q '^typedef' "$root/include/offload.h"; then ok "include/offload.h forwards to offload/OffloadAPI.h (C++17)"
else bad "include/offload.h is not a forwarding header"; fi

# 2. prototypes (LLVM's olInit()/olShutDown() are unprototyped in C; ours say (void): same ABI)
protos() {
  grep -E ' ol[A-Za-z]+ \(' "$1" | sed -e 's#/\*[^*]*\*/ ##' -e 's#(/\* ??? \*/)#(void)#' | sort
}
gcc -std=c17 -fsyntax-only -aux-info "$out/ours.aux" -I "$root/include/offload" "$out/inc.c"
gcc -std=c17 -fsyntax-only -include stdbool.h -aux-info "$out/llvm.aux" -I "$llvm_inc" "$out/inc.c"
protos "$out/ours.aux" > "$out/ours.p"; protos "$out/llvm.aux" > "$out/llvm.p"
n=$(wc -l < "$out/ours.p")
if [ "$n" = 70 ] && diff "$out/ours.p" "$out/llvm.p" > "$out/p.diff"; then ok "prototypes: all 70 identical"
else bad "prototypes differ ($n declared):"; cat "$out/p.diff"; fi

# 3. exports
if [ -f "$lib" ]; then
  grep -v '^#' "$root/tests/c/abi/zabi_functions.txt" | sed 's/$/@@VERS1.0/' | sort > "$out/want.txt"
  nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^VERS1.0$' | sort > "$out/got.txt"
  if diff "$out/want.txt" "$out/got.txt" > "$out/exp.diff"; then ok "exports: exactly the 70 functions, each @@VERS1.0"
  else bad "exports differ:"; cat "$out/exp.diff"; fi
  [ "$(nm -D --defined-only "$lib" | wc -l)" = 70 ] && ok "nothing else exported (70 dynamic symbols)" || bad "extra dynamic symbols exported"
  vd() { readelf -V "$1" | sed -n '/.gnu.version_d/,/.gnu.version_r/p' | grep -o 'Flags: [A-Za-z]*.*Name: .*' | sed 's/Index: [0-9]*  Cnt: [0-9]*  //'; }
  [ "$(vd "$lib")" = "$(vd /usr/lib/llvm-22/lib/libLLVMOffload.so.22.1)" ] && ok "version definitions identical to LLVM's (BASE + VERS1.0)" || bad "version definitions differ"
  readelf -d "$lib" | grep -q 'Library soname: \[libLLVMOffload.so.22.1\]' && ok "soname libLLVMOffload.so.22.1" || bad "wrong soname"
  readelf -d "$lib" | grep -q 'NODELETE' && ok "NODELETE (never unmapped, like LLVM's)" || bad "NODELETE missing"
  # a program built and linked against LLVM's header and library runs on ours
  cat > "$out/client.c" <<'C'
#include <stdio.h>
#include <OffloadAPI.h>
static bool count(ol_device_handle_t d, void *u) { (void)d; ++*(int *)u; return true; }
int main(void) {
  int n = 0;
  if (olInit() != OL_SUCCESS) return 1;
  if (olIterateDevices(count, &n) != OL_SUCCESS || n < 1) return 2;
  ol_result_t r = olGetDeviceInfo(NULL, OL_DEVICE_INFO_TYPE, 4, &n);
  if (r == NULL || r->Code != OL_ERRC_INVALID_NULL_HANDLE) return 3;
  if (olShutDown() != OL_SUCCESS) return 4;
  puts("client ok");
  return 0;
}
C
  if gcc -std=c17 -include stdbool.h -I "$llvm_inc" "$out/client.c" -o "$out/client" -L/usr/lib/llvm-22/lib -l:libLLVMOffload.so.22.1 -Wl,-rpath,/usr/lib/llvm-22/lib &&
     LD_BIND_NOW=1 LD_LIBRARY_PATH=$(dirname "$lib") "$out/client" | grep -q 'client ok' &&
     LD_BIND_NOW=1 LD_LIBRARY_PATH=$(dirname "$lib") LD_DEBUG=libs "$out/client" 2>&1 | grep -q "calling init: $(dirname "$lib")/libLLVMOffload.so.22.1"; then
    ok "a binary linked against LLVM's library runs unchanged on ours"
  else bad "binary linked against LLVM's library does not run on ours"; fi
else bad "library $lib not built"; fi

echo "abi: $pass passed, $fail failed"
[ "$fail" = 0 ]
