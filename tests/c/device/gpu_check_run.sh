#!/usr/bin/env bash
# run.sh of the gpu-check bundle (made by `make gpu-check`, from
# tests/c/device/gpu_check_run.sh): runs the device conformance suite on
# every device found (or those in OFFLOAD_TEST_DEVICES, see
# tests/c/common/oldevices.h) and the lifecycle tests, against the library in
# lib/ next to this script. Needs bash and coreutils only: no Go, compiler
# or python. Prints each suite's and the total passed/failed/skipped counts
# and the devices it ran on; exits non-zero on any failure. The folder may
# be copied anywhere.
#   run.sh            everything
# Variables: OFFLOAD_TEST_DEVICES (default: all), TIMEOUT (seconds per
# device-suite program, default 300), LC_TIMEOUT (per lifecycle program,
# default 600).
# SPDX-License-Identifier: Apache-2.0
set -u
case "${1:-}" in
-h | --help)
  cat <<'USAGE'
usage: run.sh
Runs the liboffload-go device conformance suite on every device the
library in lib/ finds, then the lifecycle tests, and prints passed, failed
and skipped counts per suite and in total, and the devices tested.
Exit status 0 when nothing failed.
Environment:
  OFFLOAD_TEST_DEVICES  devices to test: all (default), or a comma list of
                        backend or backend:index (host, cuda:0, amdgpu:1)
  TIMEOUT               seconds per device-suite program (default 300)
  LC_TIMEOUT            seconds per lifecycle program (default 600)
USAGE
  exit 0
  ;;
"") ;;
*)
  echo "run.sh: unknown argument $1 (see run.sh --help)" >&2
  exit 2
  ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
lib="$here/lib/libLLVMOffload.so.22.1"
timeout_s=${TIMEOUT:-300}
lc_timeout=${LC_TIMEOUT:-600}
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

if [ ! -f "$lib" ]; then
  echo "gpu-check: $lib is missing: the bundle is incomplete"
  exit 1
fi
for tool in timeout grep sed awk sort uniq paste tee mktemp wc tr; do
  command -v "$tool" >/dev/null 2>&1 || { echo "gpu-check: needs $tool (coreutils, grep, sed, awk)"; exit 1; }
done

echo "== gpu-check bundle in $here"
echo "library: $lib"
echo "devices found:"
if ! devs=$("$here/bin/device/list_devices" 2>&1); then
  echo "$devs"
  echo "gpu-check: olInit failed; nothing can be tested"
  exit 1
fi
echo "$devs" | sed 's/^/  /'
ngpu=$(echo "$devs" | awk '$2 == "gpu"' | wc -l)
selection=${OFFLOAD_TEST_DEVICES:-all}
echo "device selection (OFFLOAD_TEST_DEVICES): $selection"
if [ "$ngpu" -eq 0 ]; then
  echo "no GPU found: the suites run on the host device only"
fi

tp=0 tf=0 ts=0
summary=()

# ---- device suite
echo
echo "=== device suite"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# shellcheck disable=SC2046
OFFLOAD_TEST_DEVICES="$selection" bash "$here/bin/device/run.sh" "$here/bin/device" \
  "$here/kernels" "$timeout_s" $(cat "$here/bin/device/tests.list") 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$out" | tail -1)
ran_on=$(grep -E '^devices tested: ' "$out" | tail -1 | sed 's/^devices tested: //')
if [ -n "$line" ]; then
  read -r p _ f _ s _ <<<"$(echo "$line" | tr -d ',')"
else
  p=0 f=1 s=0
  echo "FAIL device suite: no total line (exit status $rc)"
fi
if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
  f=1
  echo "FAIL device suite: exit status $rc with no failure counted"
fi
tp=$((tp + p)) tf=$((tf + f)) ts=$((ts + s))
summary+=("device suite: $p passed, $f failed, $s skipped (devices: ${ran_on:-none})")

# ---- lifecycle tests (IMPL=ours)
echo
echo "=== lifecycle"
lp=0 lf=0 lsk=0
for t in $(cat "$here/bin/lifecycle/tests.list"); do
  case $t in
    dlopen_cycles | dlclose_no_shutdown) args=("$lib") ;;
    rss_cycles) args=("$lib" "$here/kernels/foo.so") ;;
    *) args=() ;;
  esac
  echo "--- $t"
  o=$(OFFLOAD_TEST_IMPL=ours OFFLOAD_EXPECT_LIB="$lib" \
      timeout --signal=ABRT --kill-after=10 "$lc_timeout" "$here/bin/lifecycle/$t" "${args[@]}" 2>&1)
  rc=$?
  printf '%s\n' "$o"
  line=$(printf '%s\n' "$o" | grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' | tail -1)
  if [ -n "$line" ]; then
    p=${line%% passed*}
    f=${line#*passed, }
    f=${f%% failed*}
    s=${line#*failed, }
    s=${s%% skipped}
  else
    p=0 f=1 s=0
    echo "FAIL lifecycle $t: no summary line (exit status $rc)"
  fi
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    f=1
    echo "FAIL lifecycle $t: exit status $rc with 0 failures reported"
  fi
  lp=$((lp + p)) lf=$((lf + f)) lsk=$((lsk + s))
done
tp=$((tp + lp)) tf=$((tf + lf)) ts=$((ts + lsk))
summary+=("lifecycle: $lp passed, $lf failed, $lsk skipped")

# ---- the CUDA benchmark (not a test: numbers only) ----
if echo "$devs" | grep -q '^cuda:' && [ -x "$here/bin/bench/cuda" ] && [ -f "$here/bin/bench/noargs.ptx" ]; then
  echo
  echo "=== CUDA: raw driver against liboffload-go (bench/cuda, 10,000 launches, 256 MiB copies)"
  for mode in raw ours; do
    echo "-- $mode"
    OFFLOAD_PLUGINS=cuda timeout 300 "$here/bin/bench/cuda" "$mode" libcuda.so.1 \
      "$here/bin/bench/noargs.ptx" 10000 256 noargs || echo "bench/cuda $mode failed (exit $?)"
  done
fi

echo
echo "=== gpu-check summary"
for l in "${summary[@]}"; do echo "$l"; done
if [ "$ngpu" -eq 0 ] && [ "${ran_on:-none}" = none ]; then
  echo "no GPU found, and OFFLOAD_TEST_DEVICES=$selection selected no device"
elif [ "$ngpu" -eq 0 ]; then
  echo "no GPU found: ran on the host device only"
else
  echo "GPUs found: $ngpu; ran on: ${ran_on:-none}"
fi
echo "total: $tp passed, $tf failed, $ts skipped"
[ "$tf" -eq 0 ]
