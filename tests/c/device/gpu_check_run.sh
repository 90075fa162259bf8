#!/usr/bin/env bash
# run.sh of the gpu-check bundle (made by `make gpu-check`, from
# tests/c/device/gpu_check_run.sh): runs the device conformance suite on
# every device found (or those in OFFLOAD_TEST_DEVICES, see
# tests/c/common/oldevices.h) and the lifecycle tests, against each library
# in lib/ next to this script (libLLVMOffload.so.22.1, then .so.23.1). Needs bash and coreutils only: no Go, compiler
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
libraries in lib/ find, then the lifecycle tests, against the 22.1 and
then the 23.1 library, and prints passed, failed and skipped counts per
suite and in total, and the devices tested.
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
timeout_s=${TIMEOUT:-300}
lc_timeout=${LC_TIMEOUT:-600}
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

for rel in 22.1 23.1; do
  if [ ! -f "$here/lib/libLLVMOffload.so.$rel" ]; then
    echo "gpu-check: $here/lib/libLLVMOffload.so.$rel is missing: the bundle is incomplete"
    exit 1
  fi
done
for tool in timeout grep sed awk sort uniq paste tee mktemp wc tr; do
  command -v "$tool" >/dev/null 2>&1 || { echo "gpu-check: needs $tool (coreutils, grep, sed, awk)"; exit 1; }
done

echo "== gpu-check bundle in $here"
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
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# run_release REL DEVICE_DIR LIFECYCLE_DIR: both suites against one library
run_release() {
  local rel=$1 ddir=$2 ldir=$3 lib="$here/lib/libLLVMOffload.so.$1"
  local p f s rc line t o lp=0 lf=0 lsk=0 args
  echo
  echo "=== device suite, $rel ($lib)"
  # shellcheck disable=SC2046
  OFFLOAD_TEST_DEVICES="$selection" bash "$ddir/run.sh" "$ddir" \
    "$here/kernels" "$timeout_s" $(cat "$ddir/tests.list") 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$out" | tail -1)
  ran_on=$(grep -E '^devices tested: ' "$out" | tail -1 | sed 's/^devices tested: //')
  if [ -n "$line" ]; then
    read -r p _ f _ s _ <<<"$(echo "$line" | tr -d ',')"
  else
    p=0 f=1 s=0
    echo "FAIL device suite $rel: no total line (exit status $rc)"
  fi
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    f=1
    echo "FAIL device suite $rel: exit status $rc with no failure counted"
  fi
  tp=$((tp + p)) tf=$((tf + f)) ts=$((ts + s))
  summary+=("device suite $rel: $p passed, $f failed, $s skipped (devices: ${ran_on:-none})")

  echo
  echo "=== lifecycle, $rel"
  for t in $(cat "$ldir/tests.list"); do
    case $t in
      dlopen_cycles | dlclose_no_shutdown) args=("$lib") ;;
      rss_cycles) args=("$lib" "$here/kernels/foo.so") ;;
      *) args=() ;;
    esac
    echo "--- $t"
    o=$(OFFLOAD_TEST_IMPL=ours OFFLOAD_EXPECT_LIB="$lib" \
        timeout --signal=ABRT --kill-after=10 "$lc_timeout" "$ldir/$t" "${args[@]}" 2>&1)
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
      echo "FAIL lifecycle $rel $t: no summary line (exit status $rc)"
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
      f=1
      echo "FAIL lifecycle $rel $t: exit status $rc with 0 failures reported"
    fi
    lp=$((lp + p)) lf=$((lf + f)) lsk=$((lsk + s))
  done
  tp=$((tp + lp)) tf=$((tf + lf)) ts=$((ts + lsk))
  summary+=("lifecycle $rel: $lp passed, $lf failed, $lsk skipped")
}

run_release 22.1 "$here/bin/device" "$here/bin/lifecycle"
run_release 23.1 "$here/bin/device-23.1" "$here/bin/lifecycle-23.1"

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
