#!/usr/bin/env bash
# ABI check with an unmodified client: Debian's llvm-offload-device-info
# (built against LLVM's libLLVMOffload.so.22.1) must run against our library.
#
# usage: tests/devinfo/run.sh [LIBDIR]
#   LIBDIR  directory holding libLLVMOffload.so.22.1
#           (default: <repo>/build/lib, or /usr/lib/llvm-22/lib with IMPL=llvm)
#   IMPL=ours|llvm (environment, default ours).  With IMPL=llvm the same
#           checks run against LLVM's own library, as a reference. Both are
#           linked with lld, which emits no absolute `VERS1.0` symbol (GNU ld
#           would): the dynamic symbol table holds the 70 functions only.
#   DEVINFO=path of the client (default /usr/lib/llvm-22/bin/llvm-offload-device-info)
#
# Prints "N passed, N failed" last; exits non-zero if anything failed.
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
IMPL=${IMPL:-ours}
case $IMPL in
ours) default_libdir=$ROOT/build/lib ;;
llvm) default_libdir=/usr/lib/llvm-22/lib ;;
*) echo "IMPL must be ours or llvm" >&2; exit 2 ;;
esac
LIBDIR=${1:-$default_libdir}
LIBNAME=libLLVMOffload.so.22.1
LIB=$LIBDIR/$LIBNAME
DEVINFO=${DEVINFO:-/usr/lib/llvm-22/bin/llvm-offload-device-info}
LLVM_LIB=/usr/lib/llvm-22/lib/$LIBNAME

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok   $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
check() { # check "description" command...
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}
finish() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit $?
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ ! -f "$LIB" ]; then
	fail "library exists: $LIB"
	finish
fi
libdir_real=$(readlink -f "$LIBDIR")
echo "library: $LIB ($IMPL)"

# ---- 1. the unmodified client runs against the library -------------------
if [ ! -x "$DEVINFO" ]; then
	fail "client exists: $DEVINFO"
	finish
fi
LD_LIBRARY_PATH=$LIBDIR LD_BIND_NOW=1 timeout 60 "$DEVINFO" >"$tmp/out" 2>"$tmp/err"
rc=$?
echo "--- stdout of $(basename "$DEVINFO")"
cat "$tmp/out"
echo "--- stderr"
cat "$tmp/err"
echo "---"
check "client exits 0 (got $rc)" [ "$rc" -eq 0 ]
if grep -Eqi 'symbol lookup error|undefined symbol|version [`'"'"'"]?[A-Za-z0-9_.]+['"'"'"]? not found|no version information' "$tmp/err"; then
	fail "no symbol-lookup/version errors on stderr"
else
	pass "no symbol-lookup/version errors on stderr"
fi

# which file satisfied libLLVMOffload.so.22.1?
ldd_path=$(LD_LIBRARY_PATH=$LIBDIR ldd "$DEVINFO" | awk -v n="$LIBNAME" '$1 == n && $2 == "=>" {print $3}')
echo "ldd: $LIBNAME => ${ldd_path:-<none>}"
in_libdir() { # in_libdir PATH: PATH is a file in LIBDIR (after symlinks)
	[ -n "$1" ] && [ "$(dirname "$(readlink -f "$1")")" = "$libdir_real" ]
}
check "ldd resolves $LIBNAME from $LIBDIR" in_libdir "$ldd_path"

LD_DEBUG=libs LD_LIBRARY_PATH=$LIBDIR LD_BIND_NOW=1 timeout 60 "$DEVINFO" >/dev/null 2>"$tmp/debug"
inits=$(sed -n 's/.*calling init: \(.*libLLVMOffload[^ ]*\).*/\1/p' "$tmp/debug" | sort -u)
echo "LD_DEBUG=libs initialised: ${inits:-<none>}"
n_inits=$(printf '%s' "$inits" | grep -c . || true)
check "LD_DEBUG=libs: exactly one libLLVMOffload loaded (got $n_inits)" [ "$n_inits" -eq 1 ]
check "LD_DEBUG=libs: it is the one in $LIBDIR" in_libdir "$inits"

# output format (learned from the tool run against LLVM's library):
#   Num Devices: <n>
#   [<device name>]
#   Platform Name: Host ... Platform Backend: HOST ... Type: HOST
ndev=$(sed -n 's/^Num Devices: \([0-9][0-9]*\)$/\1/p' "$tmp/out")
check "output has 'Num Devices: N' with N >= 1 (got '${ndev:-}')" [ "${ndev:-0}" -ge 1 ]
check "output has 'Platform Name: Host'" grep -qx 'Platform Name: Host' "$tmp/out"
check "output has 'Platform Backend: HOST'" grep -qx 'Platform Backend: HOST' "$tmp/out"
check "output has 'Type: HOST'" grep -qx 'Type: HOST' "$tmp/out"
nblocks=$(grep -c '^\[.*\]$' "$tmp/out" || true)
check "one [device] block per device ($nblocks blocks, $ndev devices)" [ "$nblocks" = "${ndev:-x}" ]

# ---- 2. exports, version node, soname -------------------------------------
# the 35 functions of the 22.1 API, each also as <name>WithCodeLoc
funcs="olCalculateOptimalOccupancy olCreateEvent olCreateProgram olCreateQueue
olDestroyEvent olDestroyProgram olDestroyQueue olGetDeviceInfo olGetDeviceInfoSize
olGetEventInfo olGetEventInfoSize olGetMemInfo olGetMemInfoSize olGetPlatformInfo
olGetPlatformInfoSize olGetQueueInfo olGetQueueInfoSize olGetSymbol olGetSymbolInfo
olGetSymbolInfoSize olInit olIsValidBinary olIterateDevices olLaunchHostFunction
olLaunchKernel olMemAlloc olMemFill olMemFree olMemRegister olMemUnregister olMemcpy
olShutDown olSyncEvent olSyncQueue olWaitEvents"
for f in $funcs; do
	echo "T $f@@VERS1.0"
	echo "T ${f}WithCodeLoc@@VERS1.0"
done | sort >"$tmp/want"
check "expected list has 70 entries" [ "$(wc -l <"$tmp/want")" -eq 70 ]

nm -D --defined-only "$LIB" | awk '{ if (NF == 3) print $2, $3; else print $1, $2 }' | sort >"$tmp/have"
grep -v '^A VERS1\.0$' "$tmp/have" >"$tmp/have_ol" || true
n_vers=$(grep -c '^A VERS1\.0$' "$tmp/have" || true)
n_ol=$(grep -c '^T ol[A-Za-z]*@@VERS1\.0$' "$tmp/have" || true)
echo "nm -D --defined-only: $(wc -l <"$tmp/have") symbols, $n_ol ol*@@VERS1.0 functions, $n_vers VERS1.0"
if diff -u "$tmp/want" "$tmp/have_ol" >"$tmp/diff"; then
	pass "exports are exactly the 70 ol* functions, each T ...@@VERS1.0"
else
	fail "exports are exactly the 70 ol* functions, each T ...@@VERS1.0 (diff want/have below)"
	cat "$tmp/diff"
fi
check "no symbol besides the 70 functions (VERS1.0 symbols: $n_vers)" [ "$n_vers" -eq 0 ]
if [ -f "$LLVM_LIB" ]; then
	nm -D --defined-only "$LLVM_LIB" | awk '{ if (NF == 3) print $2, $3; else print $1, $2 }' |
		grep -v '^A VERS1\.0$' | sort >"$tmp/llvm"
	check "same ol* exports as LLVM's $LLVM_LIB" cmp -s "$tmp/llvm" "$tmp/have_ol"
fi

soname=$(readelf -d "$LIB" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
check "SONAME is $LIBNAME (got '${soname:-}')" [ "$soname" = "$LIBNAME" ]
check "version definition VERS1.0 present (readelf -V)" \
	sh -c "readelf -V '$LIB' | sed -n '/.gnu.version_d/,/.gnu.version_r/p' | grep -q 'Name: VERS1.0'"
check "FLAGS_1 has NODELETE (library never unmapped)" \
	sh -c "readelf -d '$LIB' | grep FLAGS_1 | grep -q NODELETE"

finish
