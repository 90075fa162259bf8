#!/usr/bin/env bash
# Runs every conformance binary and the trace comparison, sums the
# "N passed, N failed, N skipped" lines (tests/c/common/olcheck.h; the
# trace comparison leaves out the skips) and prints the total.  A binary that dies or
# exits non-zero without reporting a failure counts as one failure.
#
# usage: run_tests.sh IMPL LIBDIR LLVM_LIBDIR BUILD test...
# CONFORMANCE_DRIVER_DIR, when set, goes on the library path after LIBDIR:
# the directory of a driver double (check-fake-cuda: libcuda.so and
# libcuda.so.1 of tests/drivers/fake_cuda.c), found by both libraries.
# CONFORMANCE_LAUNCHER, when set, is a command that runs each test program
# (given as its arguments) in its place: tests/remote/job.sh, which runs it
# as the application of an MPI job beside offload-proxy ranks
# (check-remote-mpi). The trace comparison runs without it.
# CONFORMANCE_TIMEOUT: seconds per test program (120; the MPI jobs get
# more, tests/c/conformance/Makefile).
set -u
impl=$1 libdir=$2 llvm_libdir=$3 build=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
libpath=$libdir${CONFORMANCE_DRIVER_DIR:+:$CONFORMANCE_DRIVER_DIR}

total_pass=0
total_fail=0
total_skip=0
summary_re='^([A-Za-z0-9_-]+: )?([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$'

# run_one NAME CMD...: run, echo output, add its summary to the totals.
run_one() {
  local name=$1
  shift
  local out rc p=0 f=0 s=0 line found=0
  out=$("$@" 2>&1)
  rc=$?
  printf '%s\n' "$out"
  while IFS= read -r line; do
    if [[ $line =~ $summary_re ]]; then
      p=${BASH_REMATCH[2]} f=${BASH_REMATCH[3]} s=${BASH_REMATCH[5]:-0} found=1
    fi
  done <<<"$out"
  if ((found == 0)); then
    if ((rc > 128)); then
      echo "FAIL $name: died with signal $((rc - 128)) before its summary"
    else
      echo "FAIL $name: no summary line (exit status $rc)"
    fi
    f=$((f + 1))
  elif ((rc != 0 && f == 0)); then
    echo "FAIL $name: exit status $rc with 0 reported failures"
    f=$((f + 1))
  fi
  total_pass=$((total_pass + p))
  total_fail=$((total_fail + f))
  total_skip=$((total_skip + s))
}

echo "== conformance: IMPL=$impl LIBDIR=$libdir${CONFORMANCE_DRIVER_DIR:+ drivers: $CONFORMANCE_DRIVER_DIR}${CONFORMANCE_LAUNCHER:+ launcher: $CONFORMANCE_LAUNCHER}${OFFLOAD_REMOTE:+ OFFLOAD_REMOTE=$OFFLOAD_REMOTE}"
for t in "$@"; do
  echo "-- test_$t"
  run_one "test_$t" env -u OFFLOAD_TRACE -u OFFLOAD_TRACE_FILE \
    -u OFFLOAD_DISABLE_VALIDATION -u OFFLOAD_LEAK_CHECK -u OFFLOAD_PLUGINS \
    LD_LIBRARY_PATH="$libpath" OFFLOAD_TEST_IMPL="$impl" \
    timeout "${CONFORMANCE_TIMEOUT:-120}" ${CONFORMANCE_LAUNCHER:-} "$build/test_$t"
done

echo "-- trace comparison ($libdir vs $llvm_libdir)"
run_one trace python3 "$here/compare_trace.py" "$build/trace_prog" "$libdir" \
  "$llvm_libdir"

echo "total: $total_pass passed, $total_fail failed, $total_skip skipped"
((total_fail == 0))
