#!/usr/bin/env bash
# Install-and-use test of liboffload-go: `make install` into temporary
# prefixes, staged with DESTDIR and not, then consumer projects built the ways
# a user would, each running a kernel on the host device and checking the
# result; `make uninstall` must leave the prefix as it was.
#
#   bash tests/consumers/run.sh
#
# Environment: LIBOFFLOAD_BUILD, the make build directory whose lib/ holds the
# library (default: the repository's build/; make test passes it), KEEP=1
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
SONAME=libLLVMOffload.so.22.1
# what an install holds, relative to the prefix (libdir = PREFIX/lib)
EXPECTED="include/offload.h
include/offload/OffloadAPI.h
include/offload/kernel.h
lib/$SONAME
lib/libLLVMOffload.so
lib/liboffload.so
lib/cmake/Offload/OffloadConfig.cmake
lib/cmake/Offload/OffloadConfigVersion.cmake
lib/cmake/liboffload-go/liboffload-goConfig.cmake
lib/cmake/liboffload-go/liboffload-goConfigVersion.cmake
lib/pkgconfig/LLVMOffload.pc
lib/pkgconfig/offload.pc
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
  local l
  for l in libLLVMOffload.so liboffload.so; do
    [ -L "$root/lib/$l" ] && [ "$(readlink "$root/lib/$l")" = "$SONAME" ] || fail_with "lib/$l is not a link to $SONAME"
  done
  cmp "$BUILD/lib/$SONAME" "$root/lib/$SONAME" || fail_with "installed library differs from $BUILD/lib/$SONAME"
  cmp "$ROOT/include/offload/kernel.h" "$root/include/offload/kernel.h"
  grep -qx "prefix=$prefix" "$root/lib/pkgconfig/offload.pc" || fail_with "offload.pc: prefix is not $prefix"
  grep -qx "prefix=$prefix" "$root/lib/pkgconfig/LLVMOffload.pc" || fail_with "LLVMOffload.pc: prefix is not $prefix"
  if [ "$root" != "$prefix" ]; then
    ! grep -rl "$STAGE" "$root" || fail_with "files above name the staging directory $STAGE"
  fi
  # the manifest lists each file once, by its final path
  diff <(expected | sed "s|^|$prefix/|") <(grep -v '/$' "$root/share/liboffload-go/install_manifest.txt" | LC_ALL=C sort) ||
    fail_with "manifest does not list exactly the installed files"
}

# cmake_consumer BUILDDIR PREFIX_PATH [cmake -D options]: configure, build,
# run; the package must come from PREFIX_PATH and the program must load the
# library there.
cmake_consumer() {
  local b=$1 pp=$2; shift 2
  rm -rf "$b"
  cmake -S "$HERE/cmake" -B "$b" -DCMAKE_PREFIX_PATH="$pp" "$@" | tee "$b.configure"
  grep -q "found .* in $pp/lib/cmake/" "$b.configure" || fail_with "the package was not found in $pp"
  cmake --build "$b"
  ldd "$b/app" | grep -F "$pp/lib/$SONAME" || fail_with "app does not load $pp/lib/$SONAME"
  "$b/app" "$b/kernel.so"
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

# pkgconfig_consumer BUILDDIR PACKAGE LIBDIR [environment: PKG_CONFIG=… PKG_CONFIG_PATH=…]
pkgconfig_consumer() {
  local b=$1 pkg=$2 libdir=$3; shift 3
  rm -rf "$b"
  env "$@" $MAKE --no-print-directory -C "$HERE/pkgconfig" BUILD="$b" PACKAGE="$pkg" check
  ldd "$b/app" | grep -F "$libdir/$SONAME" || fail_with "app does not load $libdir/$SONAME"
}

# ---- 1. a staged install (DESTDIR): files, paths, relocatable use --------
staged_install() {
  $MAKE --no-print-directory -C "$ROOT" install BUILD="$BUILD" PREFIX="$SPREFIX" DESTDIR="$STAGE"
  check_tree "$STAGE$SPREFIX" "$SPREFIX"
  [ ! -e "$SPREFIX" ] || fail_with "$SPREFIX exists: the staged install wrote outside DESTDIR?"
}
step staged-install staged_install
# the CMake package finds its prefix from its own location
step staged-cmake-relocated cmake_consumer "$T/staged-cmake" "$STAGE$SPREFIX"
# pkg-config --define-prefix relocates the .pc files the same way
step staged-pkgconfig-relocated pkgconfig_consumer "$T/staged-pc" offload "$STAGE$SPREFIX/lib" \
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
  local pkg got want="-I$PREFIX/include -I$PREFIX/include/offload -L$PREFIX/lib -lLLVMOffload"
  for pkg in offload LLVMOffload; do
    got=$(PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig pkg-config --cflags --libs $pkg)
    echo "pkg-config --cflags --libs $pkg: $got"
    [ "$(echo $got)" = "$want" ] || fail_with "want: $want"
    [ "$(PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig pkg-config --modversion $pkg)" = 22.1 ] || fail_with "$pkg: version is not 22.1"
  done
  PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig pkg-config --atleast-version=22 offload
  ! PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig pkg-config --atleast-version=23 offload || fail_with "offload claims to be >= 23"
}
step pkgconfig-flags pkgconfig_flags
step pkgconfig-consumer-offload pkgconfig_consumer "$T/pc-offload" offload "$PREFIX/lib" \
  PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
step pkgconfig-consumer-LLVMOffload pkgconfig_consumer "$T/pc-llvm" LLVMOffload "$PREFIX/lib" \
  PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"

step cmake-Offload-offload::offload cmake_consumer "$T/cmake-1" "$PREFIX"
step cmake-liboffload-go-LLVMOffload cmake_consumer "$T/cmake-2" "$PREFIX" \
  -DOFFLOAD_PACKAGE=liboffload-go -DOFFLOAD_TARGET=LLVMOffload
step cmake-Offload-Offload::Offload-anyversion cmake_consumer "$T/cmake-3" "$PREFIX" \
  -DOFFLOAD_VERSION= -DOFFLOAD_TARGET=Offload::Offload
step cmake-version-range cmake_consumer "$T/cmake-4" "$PREFIX" -DOFFLOAD_VERSION=22...23
step cmake-refuses-version-23 cmake_must_not_find -DOFFLOAD_VERSION=23
step cmake-refuses-version-22.2 cmake_must_not_find -DOFFLOAD_VERSION=22.2

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
fetchcontent() {
  local b=$T/fetchcontent
  cmake -S "$HERE/fetchcontent" -B "$b" -DFETCHCONTENT_SOURCE_DIR_LIBOFFLOAD_GO="$ROOT" \
    -DFETCHCONTENT_FULLY_DISCONNECTED=ON
  cmake --build "$b"
  ldd "$b/app" | grep -F "$b/_deps/liboffload_go-build/lib/$SONAME" || fail_with "app does not load the library FetchContent built"
  "$b/app" "$b/kernel.so"
}
step fetchcontent-build-run fetchcontent
# its install step installs the same files as make install (plus the app)
fetchcontent_install() {
  local b=$T/fetchcontent p=$T/fc-prefix
  cmake --install "$b" --prefix "$p"
  diff <(grep -v '^lib/not-ours.txt$' "$T/make-install.list") <(tree "$p" | grep -v '^bin/app$') ||
    fail_with "cmake --install installed other files than make install"
  grep -qx "prefix=$p" "$p/lib/pkgconfig/offload.pc"
  grep -qx "$p/lib/$SONAME" "$b/install_manifest.txt" || fail_with "CMake's install_manifest.txt lacks the library"
  # CMake's install drops the build RPATH: the installed app finds the library by LD_LIBRARY_PATH
  LD_LIBRARY_PATH=$p/lib "$p/bin/app" "$b/kernel.so"
  $MAKE --no-print-directory -C "$ROOT" uninstall PREFIX="$p"
  [ "$(tree "$p")" = bin/app ] || fail_with "after make uninstall of the CMake install: $(tree "$p")"
}
step fetchcontent-cmake-install fetchcontent_install

echo "consumers: $pass passed, $fail failed of $n steps${failed_steps[*]:+ (failed: ${failed_steps[*]})}"
if [ "$fail" -eq 0 ] && [ "${KEEP:-}" != 1 ]; then rm -rf "$T"; else echo "kept $T"; fi
[ "$fail" -eq 0 ]
