#!/bin/sh
# Dresses a host kernel image (shared object) as a cubin for the CUDA
# driver double tests/drivers/fake_cuda.c:
#   fakecubin.sh OBJCOPY READELF IN.so OUT.fakecubin
# - names each entry of .init_array (.fini_array) as clang's NVPTX lowering
#   names a constructor (destructor), __init_array_object_<name>_<priority>
#   (__fini_array_object_…): a symbol whose value is where the function's
#   address is. The driver runs no constructor of a module; the plugin runs
#   them through nvptx$device$init/fini, which the double provides for an
#   image with constructors (destructors), as clang emits them;
# - dresses the header as nvcc writes a cubin's (what LLVM 22.1's CUDA
#   plugin checks too): OS ABI 51 (CUDA), ABI version 7, machine EM_CUDA
#   (190), e_flags 0x500550 (sm_80, 64-bit addresses).
# SPDX-License-Identifier: Apache-2.0
set -eu
objcopy=$1 readelf=$2 in=$3 out=$4
args=
for sec in init fini; do
  size=$("$readelf" -SW "$in" | awk -v s=".${sec}_array" '{for (i = 1; i < NF; i++) if ($i == s) print $(i + 4)}')
  [ -n "$size" ] || continue
  n=$((0x$size / 8)) k=0
  while [ "$k" -lt "$n" ]; do
    args="$args --add-symbol __${sec}_array_object_entry${k}_65535=.${sec}_array:$((8 * k)),global,object"
    k=$((k + 1))
  done
done
# shellcheck disable=SC2086
"$objcopy" $args "$in" "$out.tmp"
printf '\063\007' | dd of="$out.tmp" bs=1 seek=7 conv=notrunc status=none
printf '\276\000' | dd of="$out.tmp" bs=1 seek=18 conv=notrunc status=none
printf '\120\005\120\000' | dd of="$out.tmp" bs=1 seek=48 conv=notrunc status=none
mv "$out.tmp" "$out"
