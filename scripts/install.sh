#!/usr/bin/env bash
# Installs or uninstalls liboffload-go. Used by `make install`/`make uninstall`
# and by the CMake front end's install step, so both install the same files.
#
#   scripts/install.sh install BUILT_LIBDIR   copy the library from BUILT_LIBDIR
#   scripts/install.sh uninstall              remove what the manifest lists
#
# Environment: PREFIX (default /usr/local), DESTDIR (staging root, empty for a
# real install), libdir (default $PREFIX/lib), includedir (default
# $PREFIX/include). All but DESTDIR must be absolute. Installed:
#
#   $libdir/libLLVMOffload.so.22.1, links libLLVMOffload.so and liboffload.so
#   $includedir/offload.h, $includedir/offload/{OffloadAPI.h,kernel.h}
#   (offload.h only includes offload/OffloadAPI.h, next to it)
#   $libdir/pkgconfig/{offload,LLVMOffload}.pc
#   $libdir/cmake/Offload/OffloadConfig{,Version}.cmake
#   $libdir/cmake/liboffload-go/liboffload-goConfig{,Version}.cmake
#   $PREFIX/share/liboffload-go/install_manifest.txt
#
# The manifest lists every installed file and, ending in '/', every directory
# the install created; uninstall removes exactly those files, then those
# directories if they are empty. Paths in the manifest, the .pc files and the
# CMake files never contain DESTDIR.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SONAME=libLLVMOffload.so.22.1
VERSION=22.1 # the Offload API/ABI version implemented (the soname's)

PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
libdir=${libdir:-$PREFIX/lib}
includedir=${includedir:-$PREFIX/include}
PREFIX=${PREFIX%/}; libdir=${libdir%/}; includedir=${includedir%/}
[ -n "$PREFIX" ] || PREFIX=/ # PREFIX=/ loses its slash above
MANIFEST=$PREFIX/share/liboffload-go/install_manifest.txt
MANIFEST=${MANIFEST#/}; MANIFEST=/$MANIFEST

die() { echo "install.sh: $*" >&2; exit 1; }
for v in PREFIX libdir includedir; do
  case ${!v} in /*) ;; *) die "$v must be an absolute path, not '${!v}'" ;; esac
done
case $DESTDIR in ''|/*) ;; *) DESTDIR=$(pwd)/$DESTDIR ;; esac
DESTDIR=${DESTDIR%/}

# Refresh the dynamic linker's cache after a real install into the system as
# root, so that programs find the library without an rpath.
refresh_ldcache() {
  if [ -z "$DESTDIR" ] && [ "$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then
    ldconfig || true
  fi
}

# rel FROM TO: TO relative to directory FROM (both absolute, no DESTDIR).
rel() { realpath -m --relative-to="$1" "$2"; }

# under DIR PATH: PATH written as ${prefix}/… in a .pc file when it is below DIR.
under() {
  case $2 in
    "$1") echo '${prefix}' ;;
    "$1"/*) echo "\${prefix}/${2#"$1"/}" ;;
    *) echo "$2" ;;
  esac
}

do_install() {
  local built=${1:?usage: install.sh install BUILT_LIBDIR}
  [ -f "$built/$SONAME" ] || die "$built/$SONAME not found: build the library first (make lib)"
  local cmakedir=$libdir/cmake
  local dirs=("$libdir" "$libdir/pkgconfig" "$cmakedir/Offload" "$cmakedir/liboffload-go"
              "$includedir/offload" "$(dirname "$MANIFEST")")
  # Directories this install creates (with every missing parent), recorded
  # before anything is created; a re-install keeps the earlier record.
  local -A created=()
  local d p
  for d in "${dirs[@]}"; do
    p=$d
    while [ "$p" != / ] && [ ! -d "$DESTDIR$p" ]; do created[$p]=1; p=$(dirname "$p"); done
  done
  if [ -f "$DESTDIR$MANIFEST" ]; then
    while IFS= read -r p; do
      case $p in */) created[${p%/}]=1 ;; esac
    done <"$DESTDIR$MANIFEST"
  fi
  for d in "${dirs[@]}"; do mkdir -p "$DESTDIR$d"; done

  local files=()
  put() { # put MODE SRC DEST
    install -m "$1" "$2" "$DESTDIR$3"
    files+=("$3")
  }
  put 755 "$built/$SONAME" "$libdir/$SONAME"
  for p in libLLVMOffload.so liboffload.so; do
    ln -sfn "$SONAME" "$DESTDIR$libdir/$p"
    files+=("$libdir/$p")
  done
  put 644 "$ROOT/include/offload.h" "$includedir/offload.h"
  put 644 "$ROOT/include/offload/OffloadAPI.h" "$includedir/offload/OffloadAPI.h"
  put 644 "$ROOT/include/offload/kernel.h" "$includedir/offload/kernel.h"

  # pkg-config: absolute paths of the final location (not DESTDIR).
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  local pclib pcinc name
  pclib=$(under "$PREFIX" "$libdir"); pcinc=$(under "$PREFIX" "$includedir")
  [ "$PREFIX" = / ] && { pclib=$libdir; pcinc=$includedir; }
  for name in offload LLVMOffload; do
    sed -e "s|@PREFIX@|$PREFIX|g" -e "s|@PC_LIBDIR@|$pclib|g" -e "s|@PC_INCLUDEDIR@|$pcinc|g" \
        -e "s|@PC_NAME@|$name|g" -e "s|@VERSION@|$VERSION|g" -e "s|@SONAME@|$SONAME|g" \
        "$ROOT/cmake/offload.pc.in" >"$tmp/$name.pc"
    put 644 "$tmp/$name.pc" "$libdir/pkgconfig/$name.pc"
  done

  # CMake: the prefix is computed from the config file's own location, so the
  # installed tree can be moved (or used from its DESTDIR staging directory);
  # a libdir or includedir outside PREFIX stays absolute.
  local cmprefix cmlib cminc
  case $libdir in
    "$PREFIX"/*) cmprefix="\${CMAKE_CURRENT_LIST_DIR}/$(rel "$cmakedir/Offload" "$PREFIX")"
                 cmlib=$(rel "$PREFIX" "$libdir") ;;
    *) cmprefix=$PREFIX; cmlib=$libdir ;;
  esac
  case $includedir in
    "$PREFIX"/*) cminc=$(rel "$PREFIX" "$includedir") ;;
    *) cminc=$includedir ;;
  esac
  sed -e "s|@CM_PREFIX@|$cmprefix|g" -e "s|@CM_LIBDIR@|$cmlib|g" -e "s|@CM_INCLUDEDIR@|$cminc|g" \
      -e "s|@SONAME@|$SONAME|g" -e "s|@VERSION@|$VERSION|g" \
      "$ROOT/cmake/OffloadConfig.cmake.in" >"$tmp/OffloadConfig.cmake"
  sed -e "s|@VERSION@|$VERSION|g" "$ROOT/cmake/OffloadConfigVersion.cmake.in" >"$tmp/OffloadConfigVersion.cmake"
  put 644 "$tmp/OffloadConfig.cmake" "$cmakedir/Offload/OffloadConfig.cmake"
  put 644 "$tmp/OffloadConfigVersion.cmake" "$cmakedir/Offload/OffloadConfigVersion.cmake"
  put 644 "$ROOT/cmake/liboffload-goConfig.cmake" "$cmakedir/liboffload-go/liboffload-goConfig.cmake"
  put 644 "$tmp/OffloadConfigVersion.cmake" "$cmakedir/liboffload-go/liboffload-goConfigVersion.cmake"

  files+=("$MANIFEST")
  {
    printf '%s\n' "${files[@]}"
    # deepest first, so that uninstall can remove them in order
    for d in "${!created[@]}"; do printf '%s/\n' "$d"; done | awk '{ print gsub("/", "/") "\t" $0 }' |
      sort -k1,1nr -k2 | cut -f2-
  } >"$tmp/manifest"
  install -m 644 "$tmp/manifest" "$DESTDIR$MANIFEST"
  refresh_ldcache
  echo "installed liboffload-go into ${DESTDIR:+$DESTDIR (staged) }$PREFIX (manifest: $MANIFEST)"
}

do_uninstall() {
  [ -f "$DESTDIR$MANIFEST" ] || die "no install manifest at $DESTDIR$MANIFEST: nothing to uninstall there (wrong PREFIX or DESTDIR?)"
  local p files=() dirs=()
  while IFS= read -r p; do
    case $p in
      /*/../*|/*/..|*/./*) die "refusing manifest entry '$p'" ;;
      /*/) dirs+=("${p%/}") ;;
      /?*) files+=("$p") ;;
      '') ;;
      *) die "refusing manifest entry '$p'" ;;
    esac
  done <"$DESTDIR$MANIFEST"
  for p in "${files[@]}"; do
    if [ -L "$DESTDIR$p" ] || [ -f "$DESTDIR$p" ]; then rm -f "$DESTDIR$p"; fi
  done
  for p in "${dirs[@]}"; do
    [ -d "$DESTDIR$p" ] && rmdir --ignore-fail-on-non-empty "$DESTDIR$p"
  done
  refresh_ldcache
  echo "uninstalled liboffload-go from ${DESTDIR:+$DESTDIR (staged) }$PREFIX: ${#files[@]} files"
}

case ${1:-} in
  install) shift; do_install "$@" ;;
  uninstall) do_uninstall ;;
  *) die "usage: install.sh install BUILT_LIBDIR | uninstall" ;;
esac
