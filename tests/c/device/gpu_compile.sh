#!/usr/bin/env bash
# Builds the GPU kernel images of the suite from the same sources as the
# host images, and checks that each names its kernel entry points:
#   <name>.ptx              NVPTX (PTX text), for CUDA devices
#   <name>.<gfx>.hsaco      AMDGPU code object (a linked shared object), one
#                           per processor in GFX-LIST, for AMDGPU devices
#   gpu_compile.sh CLANG READELF KSRC KOUT INCLUDE RESULT "GFX-LIST" -- NVPTX-FLAGS -- AMDGPU-FLAGS
# AMDGPU-FLAGS get -mcpu=<gfx> added. Prints "gpu-compile: N passed, N
# failed, N skipped" and writes "N N N" to RESULT, then any SKIP lines.
# Without CLANG the GPU images are not built: a skip, or a failure when
# CI=true (CI machines must have clang-22).
# SPDX-License-Identifier: Apache-2.0
set -u
clang=$1 readelf=$2 ksrc=$3 kout=$4 inc=$5 result=$6 gfxs=$7
shift 7
[ "$1" = "--" ] && shift
nvptx=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do nvptx+=("$1"); shift; done
[ $# -gt 0 ] && shift
amdgpu=("$@")

pass=0 fail=0 skip=0
bad() { fail=$((fail + 1)); echo "FAIL gpu-compile: $*"; }
good() { pass=$((pass + 1)); }

if ! command -v "$clang" >/dev/null 2>&1; then
  why="$clang is not installed (apt-get install clang-22 lld-22): GPU kernel images (.ptx, .hsaco) not built or checked"
  if [ "${CI:-}" = "true" ]; then
    bad "$why; CI=true requires it"
    echo "gpu-compile: 0 passed, 1 failed, 0 skipped"
    echo "0 1 0" >"$result"
    exit 1
  fi
  echo "SKIP gpu-compile: $why"
  echo "gpu-compile: 0 passed, 0 failed, 1 skipped"
  { echo "0 0 1"; echo "SKIP gpu-compile: $why"; } >"$result"
  exit 0
fi
if [ -z "$readelf" ] || ! command -v "$readelf" >/dev/null 2>&1; then
  bad "no readelf (llvm-readelf-22 or binutils readelf) to inspect AMDGPU code objects"
  readelf=
fi
mkdir -p "$kout"

for src in "$ksrc"/*.c; do
  name=$(basename "$src" .c)
  # The kernel entry points the source declares.
  entries=$(sed -n -E 's/^[[:space:]]*OL_(GROUP_|PHASED_)?KERNEL(_NOARGS|_PARAMS)?\(([A-Za-z_][A-Za-z0-9_]*).*/\3/p' "$src")
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

  for gfx in $gfxs; do
    obj="$kout/$name.$gfx.hsaco"
    if log=$("$clang" "${amdgpu[@]}" -mcpu="$gfx" -I"$inc" "$src" -o "$obj" 2>&1); then
      good
      if [ -n "$readelf" ]; then
        hdr=$("$readelf" -h "$obj" 2>&1)
        if echo "$hdr" | grep -Eq "Machine:.*(AMD GPU|AMDGPU|0xe0)" &&
           echo "$hdr" | grep -Eq "Type:.*DYN"; then
          good
        else
          bad "$obj is not an AMD GPU shared object: $(echo "$hdr" | grep -E 'Machine|Type')"
        fi
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
      bad "AMDGPU ($gfx) build of $name.c failed: $log"
    fi
  done
done

echo "gpu-compile: $pass passed, $fail failed, $skip skipped"
echo "$pass $fail $skip" >"$result"
[ "$fail" -eq 0 ]
