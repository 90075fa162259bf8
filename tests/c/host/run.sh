#!/usr/bin/env bash
# Runs the host-device test programs and prints the total.
#   run.sh BUILD KERNEL_DIR TIMEOUT test...
# Each program prints "<area>: N passed, N failed" as its last line; a
# program that crashes or times out counts as one more failure.
# SPDX-License-Identifier: Apache-2.0
set -u
build=$1 kdir=$2 limit=$3
shift 3
pass=0 fail=0
if [ -f "$build/gpu-compile.result" ]; then
  read -r p f <"$build/gpu-compile.result"
  pass=$((pass + p)) fail=$((fail + f))
fi
for t in "$@"; do
  echo "== $t"
  out=$(mktemp)
  timeout --signal=ABRT --kill-after=10 "$limit" "$build/test_$t" "$kdir" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  line=$(grep -E "^$t: [0-9]+ passed, [0-9]+ failed$" "$out" | tail -1)
  rm -f "$out"
  if [ -n "$line" ]; then
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')
    f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed$/\1/')
    pass=$((pass + p)) fail=$((fail + f))
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
      echo "FAIL $t: exit status $rc with no failed assertion"
      fail=$((fail + 1))
    fi
  else
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 134 ]; then
      echo "FAIL $t: timed out or aborted after ${limit}s (exit $rc); see the last test announced above"
    else
      echo "FAIL $t: ended without a summary (exit status $rc)"
    fi
    fail=$((fail + 1))
  fi
done
echo
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
