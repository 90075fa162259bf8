#!/usr/bin/env bash
# Builds every kernel source with clang for NVPTX and AMDGPU and checks the
# outputs name the kernel entry points.
#   gpu_compile.sh CLANG READELF KSRC KOUT INCLUDE RESULT -- NVPTX-FLAGS -- AMDGPU-FLAGS
# Prints "gpu-compile: N passed, N failed" and writes "N M" to RESULT.
# SPDX-License-Identifier: Apache-2.0
set -u
clang=$1 readelf=$2 ksrc=$3 kout=$4 inc=$5 result=$6
shift 6
[ "$1" = "--" ] && shift
nvptx=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do nvptx+=("$1"); shift; done
[ $# -gt 0 ] && shift
amdgpu=("$@")

pass=0 fail=0
bad() { fail=$((fail + 1)); echo "FAIL gpu-compile: $*"; }
good() { pass=$((pass + 1)); }

if ! command -v "$clang" >/dev/null 2>&1; then
  echo "SKIP gpu-compile: $clang is not installed (package clang-22); GPU builds not checked"
  echo "0 0" >"$result"
  exit 0
fi
if [ -z "$readelf" ] || ! command -v "$readelf" >/dev/null 2>&1; then
  bad "no readelf (llvm-readelf-22 or binutils readelf) to inspect AMDGPU code objects"
fi
mkdir -p "$kout"

for src in "$ksrc"/*.c; do
  name=$(basename "$src" .c)
  # The kernel entry points the source declares.
  entries=$(sed -n -E 's/^[[:space:]]*OL_(GROUP_)?KERNEL(_NOARGS)?\(([A-Za-z_][A-Za-z0-9_]*).*/\3/p' "$src")
  if [ -z "$entries" ]; then
    bad "$name.c declares no kernel"
    continue
  fi

  ptx="$kout/$name.ptx"
  if log=$("$clang" "${nvptx[@]}" -I"$inc" "$src" -o "$ptx" 2>&1); then
    good
    for e in $entries; do
      if grep -Eq "^[[:space:]]*\.(visible|weak)?[[:space:]]*\.entry[[:space:]]+$e[[:space:](]" "$ptx" ||
         grep -Eq "\.entry[[:space:]]+$e\(" "$ptx"; then
        good
      else
        bad "$ptx has no '.entry $e'"
      fi
    done
  else
    bad "NVPTX build of $name.c failed: $log"
  fi

  obj="$kout/$name.amdgpu"
  if log=$("$clang" "${amdgpu[@]}" -I"$inc" "$src" -o "$obj" 2>&1); then
    good
    if [ -n "$readelf" ]; then
      hdr=$("$readelf" -h "$obj" 2>&1)
      if echo "$hdr" | grep -Eq "Machine:.*(AMD GPU|AMDGPU)"; then good; else bad "$obj is not an AMD GPU ELF: $(echo "$hdr" | grep Machine)"; fi
      syms=$("$readelf" -s --wide "$obj" 2>&1)
      for e in $entries; do
        if echo "$syms" | awk '{print $8}' | grep -qx "$e" &&
           echo "$syms" | awk '{print $8}' | grep -qx "$e.kd"; then
          good
        else
          bad "$obj lacks the symbols $e and $e.kd"
        fi
      done
    fi
  else
    bad "AMDGPU build of $name.c failed: $log"
  fi
done

echo "gpu-compile: $pass passed, $fail failed"
echo "$pass $fail" >"$result"
[ "$fail" -eq 0 ]
