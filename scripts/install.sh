#!/usr/bin/env bash
# Installs or uninstalls liboffload-go. Used by `make install`/`make uninstall`
# and by the CMake front end's install step, so both install the same files.
#
#   scripts/install.sh install BUILT_LIBDIR [BUILT_BINDIR]
#                                             copy the libraries from BUILT_LIBDIR and
#                                             offload-proxy from BUILT_BINDIR
#                                             (default: BUILT_LIBDIR/../bin)
#   scripts/install.sh uninstall              remove what the manifest lists
#
# Environment: PREFIX (default /usr/local), DESTDIR (staging root, empty for a
# real install), bindir (default $PREFIX/bin), libdir (default $PREFIX/lib),
# includedir (default $PREFIX/include). All but DESTDIR must be absolute.
# Installed:
#
#   $bindir/offload-proxy (the remote platform's proxy, docs/remote.md)
#   $libdir/libLLVMOffload.so.22.1 and libLLVMOffload.so.23.1 (one library per
#   release, each with its soname), links libLLVMOffload.so and liboffload.so
#   to the newest (23.1: what LLVM 23's tools dlopen)
#   22.1 headers: $includedir/offload.h, $includedir/offload/{OffloadAPI.h,kernel.h}
#   (offload.h only includes offload/OffloadAPI.h, next to it)
#   23.1 headers: $includedir/offload-23.1/offload.h and
#   $includedir/offload-23.1/offload/{OffloadAPI.h,kernel.h}
#   $libdir/pkgconfig/{offload,LLVMOffload,offload-22.1}.pc (22.1) and
#   offload-23.1.pc (23.1)
#   $libdir/cmake/Offload/OffloadConfig{,Version}.cmake (22.1) and
#   $libdir/cmake/Offload-23.1/… (23.1)
#   $libdir/cmake/liboffload-go/liboffload-goConfig{,Version}.cmake (22.1) and
#   $libdir/cmake/liboffload-go-23.1/… (23.1)
#   $PREFIX/share/liboffload-go/install_manifest.txt
#
# The unversioned names (offload.pc, LLVMOffload.pc, find_package(Offload)
# without a version) mean 22.1, the oldest release, so that a consumer built
# before 23.1 existed keeps the ABI it was written for.
#
# The manifest lists every installed file and, ending in '/', every directory
# the install created; uninstall removes exactly those files, then those
# directories if they are empty. Paths in the manifest, the .pc files and the
# CMake files never contain DESTDIR.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# The Offload API/ABI releases implemented, oldest first (each library's
# soname is libLLVMOffload.so.<release>). The oldest is the default of the
# unversioned names; the links go to the newest.
RELEASES=(22.1 23.1)
DEFAULT=${RELEASES[0]}
NEWEST=${RELEASES[${#RELEASES[@]}-1]}
soname() { echo "libLLVMOffload.so.$1"; }
# incsub RELEASE: the release's include directory below includedir ('' for
# the default release, whose headers stay where 22.1 consumers look).
incsub() { [ "$1" = "$DEFAULT" ] || echo "offload-$1"; }
# incdir RELEASE: the release's include directory.
incdir() { local s; s=$(incsub "$1"); echo "$includedir${s:+/$s}"; }
# cmsuffix RELEASE: the suffix of the release's CMake package directories.
cmsuffix() { [ "$1" = "$DEFAULT" ] || echo "-$1"; }
# header ROOT RELEASE: where the source tree keeps the release's headers.
hdrsrc() { if [ "$2" = "$DEFAULT" ]; then echo "$1/include"; else echo "$1/include/$2"; fi; }

PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
bindir=${bindir:-$PREFIX/bin}
libdir=${libdir:-$PREFIX/lib}
includedir=${includedir:-$PREFIX/include}
PREFIX=${PREFIX%/}; bindir=${bindir%/}; libdir=${libdir%/}; includedir=${includedir%/}
[ -n "$PREFIX" ] || PREFIX=/ # PREFIX=/ loses its slash above
MANIFEST=$PREFIX/share/liboffload-go/install_manifest.txt
MANIFEST=${MANIFEST#/}; MANIFEST=/$MANIFEST

die() { echo "install.sh: $*" >&2; exit 1; }
for v in PREFIX bindir libdir includedir; do
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
  local built=${1:?usage: install.sh install BUILT_LIBDIR [BUILT_BINDIR]}
  local builtbin=${2:-$built/../bin}
  local r
  for r in "${RELEASES[@]}"; do
    [ -f "$built/$(soname "$r")" ] || die "$built/$(soname "$r") not found: build the libraries first (make lib)"
  done
  [ -f "$builtbin/offload-proxy" ] || die "$builtbin/offload-proxy not found: build it first (make lib)"
  local cmakedir=$libdir/cmake
  local dirs=("$bindir" "$libdir" "$libdir/pkgconfig" "$(dirname "$MANIFEST")")
  for r in "${RELEASES[@]}"; do
    dirs+=("$cmakedir/Offload$(cmsuffix "$r")" "$cmakedir/liboffload-go$(cmsuffix "$r")"
           "$(incdir "$r")/offload")
  done
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
  put 755 "$builtbin/offload-proxy" "$bindir/offload-proxy"
  for r in "${RELEASES[@]}"; do
    put 755 "$built/$(soname "$r")" "$libdir/$(soname "$r")"
  done
  for p in libLLVMOffload.so liboffload.so; do
    ln -sfn "$(soname "$NEWEST")" "$DESTDIR$libdir/$p"
    files+=("$libdir/$p")
  done
  local inc src
  for r in "${RELEASES[@]}"; do
    inc=$(incdir "$r")
    src=$(hdrsrc "$ROOT" "$r")
    put 644 "$src/offload.h" "$inc/offload.h"
    put 644 "$src/offload/OffloadAPI.h" "$inc/offload/OffloadAPI.h"
    # the kernel header is the same for every release
    put 644 "$ROOT/include/offload/kernel.h" "$inc/offload/kernel.h"
  done

  # pkg-config: absolute paths of the final location (not DESTDIR).
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  local pclib pcinc name
  pclib=$(under "$PREFIX" "$libdir"); pcinc=$(under "$PREFIX" "$includedir")
  [ "$PREFIX" = / ] && { pclib=$libdir; pcinc=$includedir; }
  pcfile() { # pcfile NAME RELEASE
    local sub; sub=$(incsub "$2")
    sed -e "s|@PREFIX@|$PREFIX|g" -e "s|@PC_LIBDIR@|$pclib|g" -e "s|@PC_INCLUDEDIR@|$pcinc|g" \
        -e "s|@PC_INCSUB@|${sub:+/}$sub|g" \
        -e "s|@PC_NAME@|$1|g" -e "s|@VERSION@|$2|g" -e "s|@SONAME@|$(soname "$2")|g" \
        "$ROOT/cmake/offload.pc.in" >"$tmp/$1.pc"
    put 644 "$tmp/$1.pc" "$libdir/pkgconfig/$1.pc"
  }
  for name in offload LLVMOffload; do pcfile "$name" "$DEFAULT"; done
  for r in "${RELEASES[@]}"; do pcfile "offload-$r" "$r"; done

  # CMake: the prefix is computed from the config file's own location, so the
  # installed tree can be moved (or used from its DESTDIR staging directory);
  # a libdir or includedir outside PREFIX stays absolute. One package
  # directory per release; its version file accepts only requests meant
  # for that release (OffloadConfigVersion.cmake.in).
  local cmprefix cmlib cminc older=""
  for r in "${RELEASES[@]}"; do
    local pkgdir=$cmakedir/Offload$(cmsuffix "$r") godir=$cmakedir/liboffload-go$(cmsuffix "$r")
    case $libdir in
      "$PREFIX"/*) cmprefix="\${CMAKE_CURRENT_LIST_DIR}/$(rel "$pkgdir" "$PREFIX")"
                   cmlib=$(rel "$PREFIX" "$libdir") ;;
      *) cmprefix=$PREFIX; cmlib=$libdir ;;
    esac
    case $includedir in
      "$PREFIX"/*) cminc=$(rel "$PREFIX" "$includedir") ;;
      *) cminc=$includedir ;;
    esac
    [ -z "$(incsub "$r")" ] || cminc=$cminc/$(incsub "$r")
    mkdir -p "$tmp/$r"
    sed -e "s|@CM_PREFIX@|$cmprefix|g" -e "s|@CM_LIBDIR@|$cmlib|g" -e "s|@CM_INCLUDEDIR@|$cminc|g" \
        -e "s|@SONAME@|$(soname "$r")|g" -e "s|@VERSION@|$r|g" \
        "$ROOT/cmake/OffloadConfig.cmake.in" >"$tmp/$r/OffloadConfig.cmake"
    sed -e "s|@VERSION@|$r|g" -e "s|@OLDER_RELEASES@|${older# }|g" \
        "$ROOT/cmake/OffloadConfigVersion.cmake.in" >"$tmp/$r/OffloadConfigVersion.cmake"
    sed -e "s|@OFFLOAD_DIR@|Offload$(cmsuffix "$r")|g" -e "s|@VERSION@|$r|g" \
        "$ROOT/cmake/liboffload-goConfig.cmake.in" >"$tmp/$r/liboffload-goConfig.cmake"
    put 644 "$tmp/$r/OffloadConfig.cmake" "$pkgdir/OffloadConfig.cmake"
    put 644 "$tmp/$r/OffloadConfigVersion.cmake" "$pkgdir/OffloadConfigVersion.cmake"
    put 644 "$tmp/$r/liboffload-goConfig.cmake" "$godir/liboffload-goConfig.cmake"
    put 644 "$tmp/$r/OffloadConfigVersion.cmake" "$godir/liboffload-goConfigVersion.cmake"
    older="$older $r"
  done

  files+=("$MANIFEST")
  {
    printf '%s\n' "${files[@]}"
    # deepest first, so that uninstall can remove them in order
    for d in "${!created[@]}"; do printf '%s/\n' "$d"; done | awk '{ print gsub("/", "/") "\t" $0 }' |
      sort -k1,1nr -k2 | cut -f2-
  } >"$tmp/manifest"
  install -m 644 "$tmp/manifest" "$DESTDIR$MANIFEST"
  refresh_ldcache
  echo "installed liboffload-go (releases ${RELEASES[*]}) into ${DESTDIR:+$DESTDIR (staged) }$PREFIX (manifest: $MANIFEST)"
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
  *) die "usage: install.sh install BUILT_LIBDIR [BUILT_BINDIR] | uninstall" ;;
esac
