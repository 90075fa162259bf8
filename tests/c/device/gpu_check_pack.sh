#!/usr/bin/env bash
# Packs the gpu-check bundle (make gpu-check): everything a machine with a
# GPU, but without Go or a compiler, needs to run the device suite and the
# lifecycle tests against a prebuilt library.
#   gpu_check_pack.sh ROOT LIBDIR OUT
# OUT/ gets:
#   lib/               libLLVMOffload.so.22.1, libLLVMOffload.so.23.1 and the links
#   bin/device/        the device-suite test programs (run path $ORIGIN/../../lib),
#                      list_devices, the suite's run.sh, tests.list
#   bin/lifecycle/     the lifecycle tests (IMPL=ours), tests.list
#   bin/device-23.1/, bin/lifecycle-23.1/
#                      the same against the 23.1 library (RELEASE=23.1, with
#                      the tests of the 23.1 calls)
#   kernels/           <k>.so, <k>.ptx, <k>.<gfx>.hsaco and the host fixtures
#   bin/bench/         bench/cuda.c and its kernel as PTX (raw driver against
#                      liboffload-go, run when a CUDA GPU is found)
#   run.sh             runs it all (gpu_check_run.sh)
# and OUT.tar.gz next to it. GPU images need clang-22: without it they are
# missing from the bundle (a warning here; a failure when CI=true), and the
# suite fails on a GPU for want of them.
# SPDX-License-Identifier: Apache-2.0
set -eu
root=$1 libdir=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
work=$out.build
rm -rf "$out" "$work" "$out.tar.gz"
mkdir -p "$out/lib" "$out/bin/device" "$out/bin/lifecycle" "$out/kernels" "$work"

# the libraries and their links (to the newest, as make lib makes them)
cp "$libdir/libLLVMOffload.so.22.1" "$libdir/libLLVMOffload.so.23.1" "$out/lib/"
ln -s libLLVMOffload.so.23.1 "$out/lib/libLLVMOffload.so"
ln -s libLLVMOffload.so.23.1 "$out/lib/liboffload.so"

# device suite: programs linked to find the library relative to themselves
make -s --no-print-directory -C "$root/tests/c/device" all ROOT="$root" LIBDIR="$libdir" \
  BUILD="$work/device" KOUT="$work/device/kernels" RPATH='$$ORIGIN/../../lib'
mkdir -p "$out/bin/device-23.1" "$out/bin/lifecycle-23.1"
make -s --no-print-directory -C "$root/tests/c/device" tests RELEASE=23.1 ROOT="$root" LIBDIR="$libdir" \
  BUILD="$work/device-23.1" KOUT="$work/device/kernels" RPATH='$$ORIGIN/../../lib'
cp "$work/device-23.1"/test_* "$work/device-23.1/list_devices" "$out/bin/device-23.1/"
cp "$here/run.sh" "$out/bin/device-23.1/run.sh"
make -s --no-print-directory -C "$root/tests/c/device" tests-list RELEASE=23.1 ROOT="$root" \
  LIBDIR="$libdir" >"$out/bin/device-23.1/tests.list"
if ! make -s --no-print-directory -C "$root/tests/c/device" gpu-compile ROOT="$root" \
  LIBDIR="$libdir" BUILD="$work/device" KOUT="$work/device/kernels"; then
  echo "gpu-check: building the GPU kernel images failed (see above)"
  exit 1
fi
read -r _ gfail gskip <"$work/device/gpu-compile.result"
if [ "${gskip:-0}" -gt 0 ]; then
  echo "gpu-check: WARNING: the bundle has no GPU kernel images (.ptx, .hsaco): clang-22 is missing (apt-get install clang-22 lld-22); on a GPU the suite will fail for want of them"
fi
[ "${gfail:-0}" -eq 0 ]
cp "$work/device"/test_* "$work/device/list_devices" "$out/bin/device/"
cp "$here/run.sh" "$out/bin/device/run.sh"
make -s --no-print-directory -C "$root/tests/c/device" tests-list ROOT="$root" \
  LIBDIR="$libdir" >"$out/bin/device/tests.list"
kout="$work/device/kernels"
for f in "$kout"/*.so "$kout"/*.o "$kout"/*.ptx "$kout"/*.hsaco; do
  [ -e "$f" ] && cp "$f" "$out/kernels/"
done

# lifecycle tests (IMPL=ours); the dlopen tests take the library's path
make -s --no-print-directory -C "$root/tests/c/lifecycle" all IMPL=ours ROOT="$root" \
  LIBDIR="$libdir" BUILD="$work/lifecycle" RPATH='$$ORIGIN/../../lib'
make -s --no-print-directory -C "$root/tests/c/lifecycle" all IMPL=ours RELEASE=23.1 ROOT="$root" \
  LIBDIR="$libdir" BUILD="$work/lifecycle-23.1" RPATH='$$ORIGIN/../../lib'
lc_tests="dlopen_cycles dlclose_no_shutdown threads bad_handles fork_child rss_cycles info_paths info_race"
for t in $lc_tests; do
  cp "$work/lifecycle/$t" "$out/bin/lifecycle/"
  cp "$work/lifecycle-23.1/$t" "$out/bin/lifecycle-23.1/"
done
echo "$lc_tests" >"$out/bin/lifecycle/tests.list"
echo "$lc_tests" >"$out/bin/lifecycle-23.1/tests.list"
chmod +x "$out/bin/device-23.1/run.sh"

# the CUDA benchmark (bench/cuda.c) and an empty kernel as PTX: run.sh
# measures the raw driver against liboffload-go when a CUDA GPU is there
mkdir -p "$out/bin/bench"
gcc -std=gnu17 -O2 -Wall -Werror -I"$root/include" -I"$root/include/offload" "$root/bench/cuda.c" \
  -o "$out/bin/bench/cuda" -L"$libdir" -l:libLLVMOffload.so.22.1 -Wl,-rpath,'$ORIGIN/../../lib' -ldl
if command -v clang-22 >/dev/null 2>&1; then
  clang-22 --target=nvptx64-nvidia-cuda -march=sm_80 -Xclang -target-feature -Xclang +ptx78 -nogpulib \
    -ffreestanding -O2 -I"$root/include" -S "$root/tests/c/kernels/noargs.c" -o "$out/bin/bench/noargs.ptx"
fi

cp "$here/gpu_check_run.sh" "$out/run.sh"
chmod +x "$out/run.sh" "$out/bin/device/run.sh"
rm -rf "$work"
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
echo "gpu-check: packed $out (and $out.tar.gz): copy it to the GPU machine and run $(basename "$out")/run.sh"
