#!/usr/bin/env bash
# Install-and-use test of liboffload-go: `make install` into temporary
# prefixes, staged with DESTDIR and not, then consumer projects built the ways
# a user would (CMake package, pkg-config, FetchContent), for each release
# (22.1 and 23.1, installed side by side), each running a kernel on the host
# device, checking the result, and linked (readelf -d: NEEDED) to the
# soname of the release it asked for; a program that dlopens
# "libLLVMOffload.so" gets 23.1; `make uninstall` must leave the prefix as
# it was.
#
#   bash tests/consumers/run.sh
#
# Environment: LIBOFFLOAD_BUILD, the make build directory whose lib/ holds the
# library and bin/ offload-proxy (default: the repository's build/; make test passes it), KEEP=1
# keeps the temporary directory. Needs cmake, pkg-config, cc, go (for the
# FetchContent consumer, which builds the library from this working tree).
# Prints PASS/FAIL per step and a total; exits 1 if any step failed.
# SPDX-License-Identifier: Apache-2.0
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${LIBOFFLOAD_BUILD:-$ROOT/build}
MAKE=${MAKE:-make}
T=$(mktemp -d "${TMPDIR:-/tmp}/liboffload-consumers.XXXXXX")
mkdir -p "$T/logs"
STAGE=$T/stage
SPREFIX=/opt/liboffload-go-test # the staged install's prefix (never written)
PREFIX=$T/prefix
SONAME=libLLVMOffload.so.22.1   # the default release's (unversioned names)
SONAME23=libLLVMOffload.so.23.1 # the newest: libLLVMOffload.so links to it
# what an install holds, relative to the prefix (libdir = PREFIX/lib)
EXPECTED="bin/offload-proxy
include/offload.h
include/offload/OffloadAPI.h
include/offload/kernel.h
include/offload-23.1/offload.h
include/offload-23.1/offload/OffloadAPI.h
include/offload-23.1/offload/kernel.h
lib/$SONAME
lib/$SONAME23
lib/libLLVMOffload.so
lib/liboffload.so
lib/cmake/Offload/OffloadConfig.cmake
lib/cmake/Offload/OffloadConfigVersion.cmake
lib/cmake/Offload-23.1/OffloadConfig.cmake
lib/cmake/Offload-23.1/OffloadConfigVersion.cmake
lib/cmake/liboffload-go/liboffload-goConfig.cmake
lib/cmake/liboffload-go/liboffload-goConfigVersion.cmake
lib/cmake/liboffload-go-23.1/liboffload-goConfig.cmake
lib/cmake/liboffload-go-23.1/liboffload-goConfigVersion.cmake
lib/pkgconfig/LLVMOffload.pc
lib/pkgconfig/offload.pc
lib/pkgconfig/offload-22.1.pc
lib/pkgconfig/offload-23.1.pc
share/liboffload-go/install_manifest.txt"

pass=0 fail=0 n=0
failed_steps=()
# step NAME FUNCTION [ARGS]: runs one step with its output in a log, which is
# shown when the step fails.
step() {
  local name=$1; shift
  n=$((n + 1))
  local log; log=$T/logs/$(printf %02d "$n")-$name.log
  # not in an if: there bash would ignore set -e inside the step
  ( set -e; "$@" ) >"$log" 2>&1
  if [ $? -eq 0 ]; then
    echo "PASS  $name"
    pass=$((pass + 1))
  else
    echo "FAIL  $name (log: $log)"
    tail -n 40 "$log" | sed 's/^/      /'
    fail=$((fail + 1))
    failed_steps+=("$name")
  fi
}
fail_with() { echo "$*" >&2; return 1; }

# files and links under $1, relative, sorted
tree() { (cd "$1" && find . \( -type f -o -type l \) | sed 's|^\./||' | LC_ALL=C sort); }
# the expected list, sorted the same way
expected() { printf '%s\n' "$EXPECTED" | LC_ALL=C sort; }

# check_tree ROOT PREFIX: the installed files are exactly the expected ones,
# the links are links to the soname, the text files name PREFIX and no
# staging directory.
check_tree() {
  local root=$1 prefix=$2
  diff <(expected) <(tree "$root") || fail_with "installed files differ from the expected list (< expected, > installed)"
  local l so pc
  for l in libLLVMOffload.so liboffload.so; do
    [ -L "$root/lib/$l" ] && [ "$(readlink "$root/lib/$l")" = "$SONAME23" ] || fail_with "lib/$l is not a link to $SONAME23"
  done
  for so in $SONAME $SONAME23; do
    cmp "$BUILD/lib/$so" "$root/lib/$so" || fail_with "installed library differs from $BUILD/lib/$so"
    readelf -d "$root/lib/$so" | grep -F "Library soname: [$so]" || fail_with "lib/$so: soname is not $so"
  done
  cmp "$BUILD/bin/offload-proxy" "$root/bin/offload-proxy" || fail_with "installed offload-proxy differs from $BUILD/bin/offload-proxy"
  [ -x "$root/bin/offload-proxy" ] || fail_with "bin/offload-proxy is not executable"
  cmp "$ROOT/include/offload/kernel.h" "$root/include/offload/kernel.h"
  cmp "$ROOT/include/offload/kernel.h" "$root/include/offload-23.1/offload/kernel.h"
  cmp "$ROOT/include/offload/OffloadAPI.h" "$root/include/offload/OffloadAPI.h"
  cmp "$ROOT/include/23.1/offload/OffloadAPI.h" "$root/include/offload-23.1/offload/OffloadAPI.h"
  for pc in offload LLVMOffload offload-22.1 offload-23.1; do
    grep -qx "prefix=$prefix" "$root/lib/pkgconfig/$pc.pc" || fail_with "$pc.pc: prefix is not $prefix"
  done
  if [ "$root" != "$prefix" ]; then
    ! grep -rl "$STAGE" "$root" || fail_with "files above name the staging directory $STAGE"
  fi
  # the manifest lists each file once, by its final path
  diff <(expected | sed "s|^|$prefix/|") <(grep -v '/$' "$root/share/liboffload-go/install_manifest.txt" | LC_ALL=C sort) ||
    fail_with "manifest does not list exactly the installed files"
}

# needs_soname PROGRAM SONAME: the program's only liboffload NEEDED entry is SONAME.
needs_soname() {
  local got; got=$(readelf -d "$1" | grep NEEDED | grep -o 'libLLVMOffload[^]]*' | tr '\n' ' ')
  echo "NEEDED: $got"
  [ "$got" = "$2 " ] || fail_with "$1: NEEDED $got, want $2"
}

# runs_release RELEASE PROGRAM ARGS: runs the consumer; its line must name
# the release whose header it was built with.
runs_release() {
  local rel=$1 out; shift
  out=$("$@") || fail_with "$* failed: $out"
  echo "$out"
  grep -qF "release $rel API" <<<"$out" || fail_with "built with the wrong header: want release $rel"
}

# cmake_consumer RELEASE BUILDDIR PREFIX_PATH [cmake -D options]: configure,
# build, run; the package must come from PREFIX_PATH and the program must
# load the release's library there.
cmake_consumer() {
  local rel=$1 b=$2 pp=$3; shift 3
  local so=libLLVMOffload.so.$rel
  rm -rf "$b"
  cmake -S "$HERE/cmake" -B "$b" -DCMAKE_PREFIX_PATH="$pp" "$@" | tee "$b.configure"
  grep -q "found .* $rel in $pp/lib/cmake/" "$b.configure" || fail_with "release $rel of the package was not found in $pp"
  cmake --build "$b"
  needs_soname "$b/app" "$so"
  ldd "$b/app" | grep -F "$pp/lib/$so" || fail_with "app does not load $pp/lib/$so"
  runs_release "$rel" "$b/app" "$b/kernel.so"
}

# cmake_must_not_find OPTIONS: configuring must fail (version not met).
cmake_must_not_find() {
  local b=$T/cmake-neg
  rm -rf "$b"
  if cmake -S "$HERE/cmake" -B "$b" -DCMAKE_PREFIX_PATH="$PREFIX" "$@"; then
    fail_with "cmake configured with $*, expected the package to be refused"
  fi
  echo "refused as expected"
}

# pkgconfig_consumer RELEASE BUILDDIR PACKAGE LIBDIR [environment: PKG_CONFIG=… PKG_CONFIG_PATH=…]
pkgconfig_consumer() {
  local rel=$1 b=$2 pkg=$3 libdir=$4; shift 4
  local so=libLLVMOffload.so.$rel
  rm -rf "$b"
  env "$@" $MAKE --no-print-directory -C "$HERE/pkgconfig" BUILD="$b" PACKAGE="$pkg" all
  needs_soname "$b/app" "$so"
  ldd "$b/app" | grep -F "$libdir/$so" || fail_with "app does not load $libdir/$so"
  runs_release "$rel" "$b/app" "$b/kernel.so"
}

# ---- 1. a staged install (DESTDIR): files, paths, relocatable use --------
staged_install() {
  $MAKE --no-print-directory -C "$ROOT" install BUILD="$BUILD" PREFIX="$SPREFIX" DESTDIR="$STAGE"
  check_tree "$STAGE$SPREFIX" "$SPREFIX"
  [ ! -e "$SPREFIX" ] || fail_with "$SPREFIX exists: the staged install wrote outside DESTDIR?"
}
step staged-install staged_install
# the CMake package finds its prefix from its own location
step staged-cmake-relocated cmake_consumer 22.1 "$T/staged-cmake" "$STAGE$SPREFIX"
step staged-cmake-relocated-23.1 cmake_consumer 23.1 "$T/staged-cmake23" "$STAGE$SPREFIX" -DOFFLOAD_VERSION=23.1
# pkg-config --define-prefix relocates the .pc files the same way
step staged-pkgconfig-relocated pkgconfig_consumer 22.1 "$T/staged-pc" offload "$STAGE$SPREFIX/lib" \
  PKG_CONFIG="pkg-config --define-prefix" PKG_CONFIG_PATH="$STAGE$SPREFIX/lib/pkgconfig"
step staged-pkgconfig-relocated-23.1 pkgconfig_consumer 23.1 "$T/staged-pc23" offload-23.1 "$STAGE$SPREFIX/lib" \
  PKG_CONFIG="pkg-config --define-prefix" PKG_CONFIG_PATH="$STAGE$SPREFIX/lib/pkgconfig"
staged_uninstall() {
  $MAKE --no-print-directory -C "$ROOT" uninstall PREFIX="$SPREFIX" DESTDIR="$STAGE"
  local left; left=$(find "$STAGE" -mindepth 1)
  [ -z "$left" ] || fail_with "left in the staging directory: $left"
}
step staged-uninstall staged_uninstall

# ---- 2. a real install into PREFIX ---------------------------------------
install_prefix() {
  # a file of someone else's in a directory the install shares: it must stay
  mkdir -p "$PREFIX/lib"
  echo keep >"$PREFIX/lib/not-ours.txt"
  $MAKE --no-print-directory -C "$ROOT" install BUILD="$BUILD" PREFIX="$PREFIX"
  rm "$PREFIX/lib/not-ours.txt"
  check_tree "$PREFIX" "$PREFIX"
  echo keep >"$PREFIX/lib/not-ours.txt"
  tree "$PREFIX" >"$T/make-install.list"
}
step install install_prefix

pkgconfig_flags() {
  local pkg got want
  local want22="-I$PREFIX/include -I$PREFIX/include/offload -L$PREFIX/lib -l:$SONAME"
  local want23="-I$PREFIX/include/offload-23.1 -I$PREFIX/include/offload-23.1/offload -L$PREFIX/lib -l:$SONAME23"
  for pkg in offload LLVMOffload offload-22.1 offload-23.1; do
    got=$(PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig pkg-config --cflags --libs $pkg)
    echo "pkg-config --cflags --libs $pkg: $got"
    local rel=22.1; want=$want22
    [ $pkg != offload-23.1 ] || { rel=23.1; want=$want23; }
    [ "$(echo $got)" = "$want" ] || fail_with "want: $want"
    [ "$(PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig pkg-config --modversion $pkg)" = $rel ] || fail_with "$pkg: version is not $rel"
  done
  PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig pkg-config --atleast-version=22 offload
  ! PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig pkg-config --atleast-version=23 offload || fail_with "offload claims to be >= 23"
  PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig pkg-config --exact-version=23.1 offload-23.1
}
step pkgconfig-flags pkgconfig_flags
for pkg in offload LLVMOffload offload-22.1; do
  step pkgconfig-consumer-$pkg pkgconfig_consumer 22.1 "$T/pc-$pkg" $pkg "$PREFIX/lib" \
    PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
done
step pkgconfig-consumer-offload-23.1 pkgconfig_consumer 23.1 "$T/pc-offload-23.1" offload-23.1 "$PREFIX/lib" \
  PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"

step cmake-Offload-offload::offload cmake_consumer 22.1 "$T/cmake-1" "$PREFIX"
step cmake-liboffload-go-LLVMOffload cmake_consumer 22.1 "$T/cmake-2" "$PREFIX" \
  -DOFFLOAD_PACKAGE=liboffload-go -DOFFLOAD_TARGET=LLVMOffload
# no version: always 22.1, whichever package directory CMake sees first
step cmake-Offload-Offload::Offload-anyversion cmake_consumer 22.1 "$T/cmake-3" "$PREFIX" \
  -DOFFLOAD_VERSION= -DOFFLOAD_TARGET=Offload::Offload
step cmake-anyversion-sorted-descending cmake_consumer 22.1 "$T/cmake-3d" "$PREFIX" \
  -DOFFLOAD_VERSION= -DCMAKE_FIND_PACKAGE_SORT_ORDER=NATURAL -DCMAKE_FIND_PACKAGE_SORT_DIRECTION=DEC
step cmake-liboffload-go-anyversion cmake_consumer 22.1 "$T/cmake-3g" "$PREFIX" \
  -DOFFLOAD_VERSION= -DOFFLOAD_PACKAGE=liboffload-go
step cmake-version-range cmake_consumer 22.1 "$T/cmake-4" "$PREFIX" -DOFFLOAD_VERSION=22...24
step cmake-Offload-23.1 cmake_consumer 23.1 "$T/cmake-5" "$PREFIX" -DOFFLOAD_VERSION=23.1
step cmake-Offload-23-sorted-ascending cmake_consumer 23.1 "$T/cmake-5a" "$PREFIX" -DOFFLOAD_VERSION=23 \
  -DCMAKE_FIND_PACKAGE_SORT_ORDER=NATURAL -DCMAKE_FIND_PACKAGE_SORT_DIRECTION=ASC
step cmake-liboffload-go-23.1-Offload::Offload cmake_consumer 23.1 "$T/cmake-6" "$PREFIX" \
  -DOFFLOAD_VERSION=23.1 -DOFFLOAD_PACKAGE=liboffload-go -DOFFLOAD_TARGET=Offload::Offload
step cmake-version-range-23 cmake_consumer 23.1 "$T/cmake-7" "$PREFIX" -DOFFLOAD_VERSION=23...24
step cmake-refuses-version-24 cmake_must_not_find -DOFFLOAD_VERSION=24
step cmake-refuses-version-22.2 cmake_must_not_find -DOFFLOAD_VERSION=22.2
step cmake-refuses-version-23.2 cmake_must_not_find -DOFFLOAD_VERSION=23.2

# LLVM 23's GPU loader: dlopen("libLLVMOffload.so") must get 23.1
dlopen_consumer() {
  local b=$T/dlopen out
  mkdir -p "$b"
  cc -std=c17 -Wall -Wextra -Werror "$HERE/common/dlopen_app.c" -o "$b/app" -ldl
  out=$(LD_LIBRARY_PATH=$PREFIX/lib "$b/app")
  echo "$out"
  grep -qF "= $PREFIX/lib/$SONAME23 " <<<"$out" || fail_with "dlopen(libLLVMOffload.so) did not load $PREFIX/lib/$SONAME23"
}
step dlopen-libLLVMOffload.so-is-23.1 dlopen_consumer

uninstall_prefix() {
  $MAKE --no-print-directory -C "$ROOT" uninstall PREFIX="$PREFIX"
  local left; left=$(cd "$PREFIX" && find . -mindepth 1 | LC_ALL=C sort | tr '\n' ' ')
  [ "$left" = "./lib ./lib/not-ours.txt " ] || fail_with "after uninstall, want only ./lib/not-ours.txt, have: $left"
  rm "$PREFIX/lib/not-ours.txt"
  rmdir "$PREFIX/lib"
  [ -z "$(find "$PREFIX" -mindepth 1)" ] || fail_with "prefix not empty"
  # a second uninstall has nothing to remove and says so
  ! $MAKE --no-print-directory -C "$ROOT" uninstall PREFIX="$PREFIX" || fail_with "second uninstall succeeded"
}
step uninstall uninstall_prefix

# ---- 3. FetchContent of this working tree --------------------------------
# fetchcontent BUILDDIR RELEASE [cmake -D options]: OFFLOAD_RELEASE (default 22.1)
# picks the release offload::offload is.
fetchcontent() {
  local b=$1 rel=$2; shift 2
  cmake -S "$HERE/fetchcontent" -B "$b" -DFETCHCONTENT_SOURCE_DIR_LIBOFFLOAD_GO="$ROOT" \
    -DFETCHCONTENT_FULLY_DISCONNECTED=ON "$@"
  cmake --build "$b"
  needs_soname "$b/app" "libLLVMOffload.so.$rel"
  ldd "$b/app" | grep -F "$b/_deps/liboffload_go-build/lib/libLLVMOffload.so.$rel" || fail_with "app does not load the library FetchContent built"
  runs_release "$rel" "$b/app" "$b/kernel.so"
  [ "$(readlink "$b/_deps/liboffload_go-build/lib/libLLVMOffload.so")" = "$SONAME23" ] ||
    fail_with "the build's libLLVMOffload.so is not a link to $SONAME23"
}
step fetchcontent-build-run fetchcontent "$T/fetchcontent" 22.1
step fetchcontent-build-run-23.1 fetchcontent "$T/fetchcontent23" 23.1 -DOFFLOAD_RELEASE=23.1
# its install step installs the same files as make install (plus the app)
fetchcontent_install() {
  local b=$T/fetchcontent p=$T/fc-prefix
  cmake --install "$b" --prefix "$p"
  diff <(grep -v '^lib/not-ours.txt$' "$T/make-install.list") <(tree "$p" | grep -v '^bin/app$') ||
    fail_with "cmake --install installed other files than make install"
  grep -qx "prefix=$p" "$p/lib/pkgconfig/offload.pc"
  grep -qx "$p/lib/$SONAME" "$b/install_manifest.txt" || fail_with "CMake's install_manifest.txt lacks the library"
  grep -qx "$p/lib/$SONAME23" "$b/install_manifest.txt" || fail_with "CMake's install_manifest.txt lacks the 23.1 library"
  grep -qx "$p/bin/offload-proxy" "$b/install_manifest.txt" || fail_with "CMake's install_manifest.txt lacks offload-proxy"
  # CMake's install drops the build RPATH: the installed app finds the library by LD_LIBRARY_PATH
  LD_LIBRARY_PATH=$p/lib "$p/bin/app" "$b/kernel.so"
  $MAKE --no-print-directory -C "$ROOT" uninstall PREFIX="$p"
  [ "$(tree "$p")" = bin/app ] || fail_with "after make uninstall of the CMake install: $(tree "$p")"
}
step fetchcontent-cmake-install fetchcontent_install
step fetchcontent-refuses-release-24 bash -c '! cmake -S "$1/fetchcontent" -B "$2" -DFETCHCONTENT_SOURCE_DIR_LIBOFFLOAD_GO="$3" \
  -DFETCHCONTENT_FULLY_DISCONNECTED=ON -DOFFLOAD_RELEASE=24.1' _ "$HERE" "$T/fc-neg" "$ROOT"

echo "consumers: $pass passed, $fail failed of $n steps${failed_steps[*]:+ (failed: ${failed_steps[*]})}"
if [ "$fail" -eq 0 ] && [ "${KEEP:-}" != 1 ]; then rm -rf "$T"; else echo "kept $T"; fi
[ "$fail" -eq 0 ]
