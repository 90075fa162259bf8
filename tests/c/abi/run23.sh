#!/usr/bin/env bash
# ABI test for LLVM 23.1: our 23.1 header and library against facts written
# by hand from the 23.1 reference (docs/liboffload-23-reference.md, sections
# 2-5, in the shared docs), not from api/offload.json: no LLVM 23.1 header or
# library exists here to compare with, and what the generator writes from the
# spec (zabi_layout_23_1.c, zabi_functions_23_1.txt) cannot catch a wrong spec.
#  1. the header alone is valid C17 and C++17;
#  2. abi23.c (enum values, struct sizes and offsets, the two initialiser
#     macros, the parameter structs, every prototype and its WithCodeLoc twin
#     as exact function-pointer types, what 23.1 does not have) compiles as
#     C17 and as C++17 and runs on the library; the program imports exactly
#     the 80 names, each @VERS1.0, from libLLVMOffload.so.23.1;
#  3. the 22.1-only forms no longer compile (olLaunchKernel with 6
#     parameters, olInit(), olCreateEvent without Flags, ...);
#  4. the library: exports exactly the 80 names of the list below, each
#     @@VERS1.0 and nothing else, version definitions BASE + VERS1.0, soname
#     libLLVMOffload.so.23.1, NODELETE (as 22.1's run.sh checks), and
#     libLLVMOffload.so beside it names it (dlopen users, reference section 5);
#  5. the 22.1 library beside it is unchanged: exactly its 70 symbols;
#  6. the test is not vacuous: abi23.c fails to compile against copies of
#     the header with one wrong fact each (a mutated spec).
# usage: run23.sh [path/to/libLLVMOffload.so.23.1] [path/to/libLLVMOffload.so.22.1]
set -u
root=$(cd "$(dirname "$0")/../../.." && pwd)
lib=${1:-$root/build/lib/libLLVMOffload.so.23.1}
libdir=$(cd "$(dirname "$lib")" && pwd)
lib22=${2:-$libdir/libLLVMOffload.so.22.1}
inc=$root/include/23.1/offload
readelf=$(command -v llvm-readelf-22 || command -v readelf)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# The 40 functions of 23.1 (reference section 2: 31 unchanged, 4 changed, 5
# added); each is exported with its WithCodeLoc twin: 80 symbols.
added23="olQueryQueue olGetEventElapsedTime olGetKernelMaxCooperativeGroupCount olMemAllocAligned olMemPrefetch"
functions22="olInit olShutDown olIterateDevices olGetPlatformInfo olGetPlatformInfoSize
 olGetDeviceInfo olGetDeviceInfoSize olCreateQueue olDestroyQueue olSyncQueue olGetQueueInfo
 olGetQueueInfoSize olWaitEvents olCreateEvent olDestroyEvent olSyncEvent olGetEventInfo
 olGetEventInfoSize olCreateProgram olDestroyProgram olIsValidBinary olGetSymbol
 olGetSymbolInfo olGetSymbolInfoSize olCalculateOptimalOccupancy olLaunchHostFunction
 olLaunchKernel olMemAlloc olMemFree olMemcpy olMemFill olMemRegister olMemUnregister
 olGetMemInfo olGetMemInfoSize"
names() { for f in "$@"; do echo "$f"; echo "${f}WithCodeLoc"; done | sort; }
# shellcheck disable=SC2086
names $functions22 $added23 > "$out/names23.txt"
# shellcheck disable=SC2086
names $functions22 > "$out/names22.txt"
[ "$(wc -l < "$out/names23.txt")" = 80 ] && [ "$(sort -u "$out/names23.txt" | wc -l)" = 80 ] &&
  [ "$(wc -l < "$out/names22.txt")" = 70 ] || { echo "FAIL the hand-written lists are not 80 and 70 names"; exit 1; }

[ -f "$lib" ] || { echo "FAIL library $lib not built"; echo "abi23: 0 passed, 1 failed"; exit 1; }

# 1. the header alone
echo '#include <OffloadAPI.h>' > "$out/inc.c"
gcc -std=c17 -Wall -Wextra -Werror -pedantic -fsyntax-only -I "$inc" "$out/inc.c" && ok "23.1 header is valid C17" || bad "23.1 header is not valid C17"
g++ -std=c++17 -Wall -Wextra -Werror -pedantic -fsyntax-only -x c++ -I "$inc" "$out/inc.c" && ok "23.1 header is valid C++17" || bad "23.1 header is not valid C++17"

# 1b. nothing in the header escapes abi23.c: every ol*/OL_* name it declares
#     or uses (comments stripped; a WithCodeLoc twin and an enum's
#     FORCE_UINT32 are checked through their base name) appears in abi23.c,
#     so a type, enumerator or function the reference does not have fails here
ids() { grep -oE '\b(ol_[a-z0-9_]+|OL_[A-Z0-9_]+|ol[A-Z][A-Za-z]*)\b' | sed -e 's/WithCodeLoc$//' -e '/_FORCE_UINT32$/d' -e '/^OL_API\(CALL\|EXPORT\)$/d' | sort -u; }
gcc -fpreprocessed -dD -E -P "$inc/OffloadAPI.h" 2> /dev/null | ids > "$out/hdr-ids.txt"
ids < "$root/tests/c/abi/abi23.c" > "$out/c-ids.txt"
comm -23 "$out/hdr-ids.txt" "$out/c-ids.txt" > "$out/unchecked.txt"
if [ -s "$out/unchecked.txt" ]; then bad "names in the 23.1 header that abi23.c does not check (not in the reference?):"; cat "$out/unchecked.txt"
else ok "every one of the header's $(wc -l < "$out/hdr-ids.txt") ol*/OL_* names is checked by abi23.c"; fi

# 2. the hand-written facts, as C17 and as C++17, run on the library
run_facts() { # lang compiler flags...
  local lang=$1 cc=$2; shift 2
  if "$cc" "$@" -Wall -Wextra -Werror -pedantic-errors -I "$inc" "$root/tests/c/abi/abi23.c" -o "$out/abi23-$lang" \
       -L"$libdir" -l:"$(basename "$lib")" -Wl,-rpath,"$libdir" 2> "$out/cc-$lang.txt"; then
    ok "abi23.c compiles as $lang: every compile-time fact holds"
    # LD_BIND_NOW: every one of the 80 references resolves at start
    if LD_BIND_NOW=1 "$out/abi23-$lang" > "$out/run-$lang.txt" 2>&1; then
      ok "abi23 ($lang) runs: $(tail -n 1 "$out/run-$lang.txt")"
      grep '^note' "$out/run-$lang.txt" | sed 's/^/     /'
    else bad "abi23 ($lang) failed:"; cat "$out/run-$lang.txt"; fi
  else
    bad "abi23.c does not compile as $lang (a hand-written fact differs from the header):"; grep -E 'error|note: in' "$out/cc-$lang.txt" | head -40
  fi
}
run_facts C17 gcc -std=c17
run_facts C++17 g++ -std=c++17 -x c++
if [ -x "$out/abi23-C17" ]; then
  nm -D --undefined-only "$out/abi23-C17" | awk '$2 ~ /^ol/ {print $2}' | sort > "$out/imports.txt"
  sed 's/$/@VERS1.0/' "$out/names23.txt" > "$out/want-imports.txt"
  if diff "$out/want-imports.txt" "$out/imports.txt" > "$out/imp.diff"; then ok "the program imports exactly the 80 functions, each @VERS1.0"
  else bad "the program's imports differ from the 80 names @VERS1.0:"; cat "$out/imp.diff"; fi
  "$readelf" -d "$out/abi23-C17" | grep -q 'Shared library: \[libLLVMOffload.so.23.1\]' &&
    ok "the program records NEEDED libLLVMOffload.so.23.1" || bad "the program does not record NEEDED libLLVMOffload.so.23.1"
fi

# 3. 22.1-only forms are gone: each snippet must NOT compile, while the
#    control (the 23.1 form of the same call) must.
cat > "$out/pre.h" <<'C'
#include <OffloadAPI.h>
#include <stddef.h>
#include <stdint.h>
static void f(ol_queue_handle_t q, ol_device_handle_t d, ol_symbol_handle_t k, ol_event_handle_t *e,
              const ol_kernel_launch_size_args_t *ls, void *p) {
  (void)q; (void)d; (void)k; (void)e; (void)ls; (void)p;
C
nocompile() { # lang what snippet
  local lang=$1 what=$2 snippet=$3
  { cat "$out/pre.h"; echo "  $snippet"; echo '}'; echo 'int main(void) { f(0, 0, 0, 0, 0, 0); return 0; }'; } > "$out/neg.c"
  local cc=(gcc -std=c17); [ "$lang" = C++17 ] && cc=(g++ -std=c++17 -x c++)
  if "${cc[@]}" -Wall -Werror -pedantic-errors -fsyntax-only -I "$inc" "$out/neg.c" 2> /dev/null; then
    bad "$what still compiles ($lang): $snippet"
  else ok "$what does not compile ($lang)"; fi
}
compiles() { # lang what snippet
  local lang=$1 what=$2 snippet=$3
  { cat "$out/pre.h"; echo "  $snippet"; echo '}'; echo 'int main(void) { f(0, 0, 0, 0, 0, 0); return 0; }'; } > "$out/pos.c"
  local cc=(gcc -std=c17); [ "$lang" = C++17 ] && cc=(g++ -std=c++17 -x c++)
  if "${cc[@]}" -Wall -Werror -pedantic-errors -fsyntax-only -I "$inc" "$out/pos.c" 2> "$out/pos.txt"; then
    ok "control: $what compiles ($lang)"
  else bad "control: $what does not compile ($lang): $snippet"; cat "$out/pos.txt"; fi
}
for lang in C17 C++17; do
  compiles "$lang" "the 23.1 calls" 'const ol_kernel_launch_prop_t pr[] = {OL_KERNEL_LAUNCH_PROP_END}; ol_init_args_t a = OL_INIT_ARGS_INIT; (void)olInit(&a); (void)olLaunchKernel(q, d, k, ls, pr, 0, NULL, NULL); (void)olCreateEvent(q, OL_EVENT_FLAGS_NONE, e); (void)olMemUnregister(d, p, 0); (void)olShutDown();'
  nocompile "$lang" "olLaunchKernel with 22.1's 6 parameters" '(void)olLaunchKernel(q, d, k, p, 8, ls);'
  nocompile "$lang" "olLaunchKernelWithCodeLoc with 22.1's 7 parameters" '(void)olLaunchKernelWithCodeLoc(q, d, k, p, 8, ls, NULL);'
  nocompile "$lang" "olInit() without arguments" '(void)olInit();'
  nocompile "$lang" "olInitWithCodeLoc(CodeLocation) alone" 'ol_code_location_t c = {0, 0, 0, 0}; (void)olInitWithCodeLoc(&c);'
  nocompile "$lang" "olCreateEvent(Queue, Event) without Flags" '(void)olCreateEvent(q, e);'
  nocompile "$lang" "olMemUnregister(Device, Ptr) without Flags" '(void)olMemUnregister(d, p);'
  nocompile "$lang" "ol_launch_kernel_params_t.pArgumentsData (22.1)" 'size_t o = offsetof(ol_launch_kernel_params_t, pArgumentsData); (void)o;'
  nocompile "$lang" "ol_kernel_launch_prop_t.Type (members are lower-case)" 'ol_kernel_launch_prop_t x; x.Type = OL_KERNEL_LAUNCH_PROP_TYPE_NONE; (void)x;'
  nocompile "$lang" "olMemAllocHost (post-branch)" '(void)olMemAllocHost(d, 8, &p);'
done
# C++ tells the enum from uint32_t: Flags of olCreateEvent is ol_event_flags_t
compiles C++17 "olCreateEvent as (Queue, ol_event_flags_t, Event *)" 'ol_result_t (*fp)(ol_queue_handle_t, ol_event_flags_t, ol_event_handle_t *) = olCreateEvent; (void)fp;'
nocompile C++17 "olCreateEvent as (Queue, uint32_t Flags, Event *)" 'ol_result_t (*fp)(ol_queue_handle_t, uint32_t, ol_event_handle_t *) = olCreateEvent; (void)fp;'

# 4. the library's exports and identity
sed 's/$/@@VERS1.0/' "$out/names23.txt" > "$out/want.txt"
nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^VERS1.0$' | sort > "$out/got.txt"
if diff "$out/want.txt" "$out/got.txt" > "$out/exp.diff"; then ok "exports: exactly the 80 functions of the reference, each @@VERS1.0"
else bad "exports differ from the reference's 80 (< reference, > library):"; cat "$out/exp.diff"; fi
n=$(nm -D --defined-only "$lib" | wc -l)
[ "$n" = 80 ] && ok "nothing else exported (80 dynamic symbols)" || bad "$n dynamic symbols exported, not 80"
vd() { "$readelf" -V "$1" | sed -n '/.gnu.version_d/,/.gnu.version_r/p' | grep -o 'Flags: [A-Za-z]*.*Name: .*' | sed 's/Index: [0-9]*  Cnt: [0-9]*  //' | tr -s ' '; }
want_vd=$(printf 'Flags: BASE Name: libLLVMOffload.so.23.1\nFlags: none Name: VERS1.0')
[ "$(vd "$lib")" = "$want_vd" ] && ok "version definitions: BASE libLLVMOffload.so.23.1 + VERS1.0 (one node, as 22.1)" ||
  { bad "version definitions differ:"; vd "$lib"; }
"$readelf" -d "$lib" | grep -q 'Library soname: \[libLLVMOffload.so.23.1\]' && ok "soname libLLVMOffload.so.23.1" || bad "soname is not libLLVMOffload.so.23.1"
"$readelf" -d "$lib" | grep -q 'NODELETE' && ok "NODELETE (never unmapped, like LLVM's)" || bad "NODELETE missing"
if [ -e "$libdir/libLLVMOffload.so" ]; then
  [ "$(readlink -f "$libdir/libLLVMOffload.so")" = "$(readlink -f "$lib")" ] &&
    ok "libLLVMOffload.so (what dlopen users open) is the 23.1 library" || bad "libLLVMOffload.so does not name the 23.1 library"
  cat > "$out/dl.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
#include <OffloadAPI.h>
int main(void) {
  void *h = dlopen("libLLVMOffload.so", RTLD_NOW | RTLD_LOCAL);
  if (!h) { puts(dlerror()); return 1; }
  ol_result_t (*init)(const ol_init_args_t *) = (ol_result_t (*)(const ol_init_args_t *))dlsym(h, "olInit");
  ol_result_t (*down)(void) = (ol_result_t (*)(void))dlsym(h, "olShutDown");
  if (!init || !down || !dlsym(h, "olLaunchKernel") || !dlsym(h, "olMemPrefetch")) return 2;
  ol_init_args_t a = OL_INIT_ARGS_INIT;
  if (init(&a) != OL_SUCCESS || down() != OL_SUCCESS) return 3;
  puts("dlopen ok");
  return 0;
}
C
  if gcc -std=c17 -I "$inc" "$out/dl.c" -o "$out/dl" -ldl && LD_LIBRARY_PATH=$libdir "$out/dl" | grep -q 'dlopen ok'; then
    ok "dlopen(\"libLLVMOffload.so\") + dlsym + olInit(&OL_INIT_ARGS_INIT) works"
  else bad "dlopen(\"libLLVMOffload.so\") does not work"; fi
else bad "no libLLVMOffload.so beside $lib"; fi

# the spec's generated list against the reference's (a wrong spec shows here too)
gen=$root/tests/c/abi/zabi_functions_23_1.txt
if [ -f "$gen" ]; then
  if grep -v '^#' "$gen" | sort | diff "$out/names23.txt" - > "$out/gen.diff"; then ok "the spec's zabi_functions_23_1.txt lists the reference's 80 names"
  else bad "zabi_functions_23_1.txt (from the spec) differs from the reference (< reference, > spec):"; cat "$out/gen.diff"; fi
fi

# 5. the 22.1 library is unchanged
if [ -f "$lib22" ]; then
  sed 's/$/@@VERS1.0/' "$out/names22.txt" > "$out/want22.txt"
  nm -D --defined-only "$lib22" | awk '{print $3}' | grep -v '^VERS1.0$' | sort > "$out/got22.txt"
  if diff "$out/want22.txt" "$out/got22.txt" > "$out/exp22.diff" && [ "$(nm -D --defined-only "$lib22" | wc -l)" = 70 ]; then
    ok "22.1 library unchanged: exactly its 70 symbols, none of the 23.1 additions"
  else bad "22.1 library exports changed:"; cat "$out/exp22.diff"; fi
  "$readelf" -d "$lib22" | grep -q 'Library soname: \[libLLVMOffload.so.22.1\]' && ok "22.1 library keeps soname libLLVMOffload.so.22.1" || bad "22.1 library soname changed"
else bad "22.1 library $lib22 not found"; fi

# 6. not vacuous: one wrong fact in a copy of the header, and abi23.c must
#    not compile (as C++17, which also tells an enum from uint32_t and
#    evaluates the initialiser macros at compile time)
mkdir -p "$out/mut"
cp "$inc/OffloadAPI.h" "$out/mut/OffloadAPI.h"
g++ -std=c++17 -x c++ -fsyntax-only -I "$out/mut" "$root/tests/c/abi/abi23.c" && ok "control: abi23.c compiles against an unchanged copy of the header" ||
  bad "control: abi23.c does not compile against a copy of the header"
mutant() { # what sed-expression
  local what=$1 expr=$2
  sed -e "$expr" "$inc/OffloadAPI.h" > "$out/mut/OffloadAPI.h"
  if cmp -s "$inc/OffloadAPI.h" "$out/mut/OffloadAPI.h"; then bad "mutant '$what' did not apply (header text changed?)"; return; fi
  if g++ -std=c++17 -x c++ -fsyntax-only -I "$out/mut" "$root/tests/c/abi/abi23.c" 2> /dev/null; then bad "abi23.c misses a wrong fact: $what"
  else ok "abi23.c catches a wrong fact: $what"; fi
}
mutant "DOUBLE_FP_SUPPORT and HALF_FP_SUPPORT swapped" 's/\(OL_DEVICE_INFO_DOUBLE_FP_SUPPORT = \)30/\131/; s/\(OL_DEVICE_INFO_HALF_FP_SUPPORT = \)31/\130/'
mutant "olCreateEvent Flags as uint32_t" 's/\(olCreateEvent(ol_queue_handle_t Queue, \)ol_event_flags_t Flags/\1uint32_t Flags/'
mutant "ol_init_args_t NumPlatforms as size_t" 's/uint32_t NumPlatforms;/size_t NumPlatforms;/'
mutant "ol_kernel_launch_prop_t data as const void *" 's/^\(  \)void \*data;/\1const void *data;/'
mutant "OL_MEM_MIGRATION_FLAG_DEVICE_TO_HOST = 3" 's/\(OL_MEM_MIGRATION_FLAG_DEVICE_TO_HOST = \)2/\13/'
mutant "OL_INIT_ARGS_INIT with NumPlatforms 1" 's/\(#define OL_INIT_ARGS_INIT {sizeof(ol_init_args_t), \)0/\11/'
mutant "olMemPrefetch Mems as void **" 's/\(olMemPrefetch(ol_queue_handle_t Queue, size_t Count, \)const void \*\*Mems/\1void **Mems/'
mutant "pIsQueueWorkCompleted as bool *" 's/bool \* \*pIsQueueWorkCompleted;/bool *pIsQueueWorkCompleted;/'

# 7. what 23.1 did not change is LLVM 22.1's: the generated 23.1 layout
#    program (zabi_layout_23_1.c), run against our 23.1 header, prints every
#    value, size and offset; each name LLVM's installed 22.1 header also has
#    must print the same, except the few the reference says 23.1 changed
#    (section 2.1 and 4: OL_DEVICE_INFO_LAST, the parameter structs of the
#    four changed functions)
llvm22=/usr/lib/llvm-22/include/offload
if gcc -std=c17 -Wall -Werror -I "$inc" "$root/tests/c/abi/zabi_layout_23_1.c" -o "$out/l23" &&
   gcc -std=c17 -Wall -include stdbool.h -I "$llvm22" "$root/tests/c/abi/zabi_layout.c" -o "$out/l22"; then
  "$out/l23" | sort > "$out/l23.txt"; "$out/l22" | sort > "$out/l22.txt"
  changed='^(OL_DEVICE_INFO_LAST|sizeof\(ol_(create_event|launch_kernel|mem_unregister)_params_t\)|offsetof\(ol_(create_event|launch_kernel|mem_unregister)_params_t, [A-Za-z]+\)) '
  join -j1 <(sed 's/ \([^ ]*\)$/\t\1/' "$out/l22.txt" | sort -t$'\t' -k1,1) \
           <(sed 's/ \([^ ]*\)$/\t\1/' "$out/l23.txt" | sort -t$'\t' -k1,1) -t$'\t' |
    awk -F'\t' '$2 != $3 { print $1 " " $2 " -> " $3 }' | grep -Ev "$changed" > "$out/drift.txt"
  shared=$(join -j1 -t$'\t' <(sed 's/ \([^ ]*\)$/\t\1/' "$out/l22.txt" | sort -t$'\t' -k1,1) \
                             <(sed 's/ \([^ ]*\)$/\t\1/' "$out/l23.txt" | sort -t$'\t' -k1,1) | wc -l)
  if [ -s "$out/drift.txt" ]; then bad "23.1 differs from LLVM 22.1 where the reference says nothing changed:"; cat "$out/drift.txt"
  elif [ "$shared" -lt 150 ]; then bad "only $shared names shared by the 22.1 and 23.1 layouts (the comparison is vacuous)"
  else ok "the $shared values, sizes and offsets 23.1 shares with LLVM 22.1's header are LLVM's (but those 23.1 changed)"; fi
  if grep -q '^OL_DEVICE_INFO_LAST 33$' "$out/l23.txt" && grep -q '^OL_DEVICE_INFO_LAST 29$' "$out/l22.txt"; then ok "OL_DEVICE_INFO_LAST: 29 in LLVM 22.1, 33 in ours for 23.1"
  else bad "OL_DEVICE_INFO_LAST is not 29 -> 33"; fi
else bad "the generated 23.1 layout program does not compile"; fi

echo "abi23: $pass passed, $fail failed"
[ "$fail" = 0 ]
