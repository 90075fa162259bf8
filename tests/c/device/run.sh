#!/usr/bin/env bash
# Runs the device-suite test programs and prints the total.
#   run.sh BUILD KERNEL_DIR TIMEOUT test...
# Each program prints "<area>: N passed, N failed, N skipped" as its last
# line (older programs and the gpu-compile result may leave out the skips);
# a program that crashes or times out counts as one more failure. Skips are
# totalled apart and listed with their reasons at the end: a skip is never
# a pass. Devices: OFFLOAD_TEST_DEVICES (see tests/c/common/oldevices.h).
# SPDX-License-Identifier: Apache-2.0
set -u
build=$1 kdir=$2 limit=$3
shift 3
pass=0 fail=0 skip=0
skips=$(mktemp) devs=$(mktemp)
trap 'rm -f "$skips" "$devs"' EXIT
if [ -f "$build/gpu-compile.result" ]; then
  read -r p f s <"$build/gpu-compile.result"
  pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + ${s:-0}))
  grep '^SKIP ' "$build/gpu-compile.result" >>"$skips"
fi
for t in "$@"; do
  echo "== $t"
  out=$(mktemp)
  began=$SECONDS
  timeout --signal=ABRT --kill-after=10 "$limit" "$build/test_$t" "$kdir" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  echo "-- $t took $((SECONDS - began)) s"
  line=$(grep -E "^$t: [0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$" "$out" | tail -1)
  grep '^SKIP ' "$out" >>"$skips"
  grep '^-- device ' "$out" | sed 's/^-- device //' >>"$devs"
  rm -f "$out"
  if [ -n "$line" ]; then
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')
    f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
    s=0
    case $line in *skipped) s=$(echo "$line" | sed -E 's/.* ([0-9]+) skipped$/\1/') ;; esac
    pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
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
if [ -s "$devs" ]; then
  echo "devices tested: $(sort -u "$devs" | paste -sd ';' | sed 's/;/; /g')"
else
  echo "devices tested: none"
fi
if [ -s "$skips" ]; then
  echo "skipped ($skip):"
  # one line per reason, with how often it was given
  sed -E 's/^SKIP [^ ]+ \(([^)]*)\)/\1/' "$skips" | sort | uniq -c | sed 's/^ */  /'
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
