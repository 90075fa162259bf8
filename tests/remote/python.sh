#!/usr/bin/env bash
# The Python package on a remote device under MPI (make test-remote):
# tests/python/remote_mpi.py as the application of -np 1 python : -np 1
# offload-proxy, once per library given, through tests/remote/mpirun.sh.
# mpirun's status says only that every rank ended, so the script's last
# line ("remote-python: N passed, N failed, N skipped") is the result: no
# such line, a failure or nothing passed fails the run.
#
#   tests/remote/python.sh PYTHON PROXY LIBRARY...
# SPDX-License-Identifier: Apache-2.0
set -u
here=$(cd "$(dirname "$0")" && pwd)
py=$1 proxy=$2
shift 2
rc=0
for lib in "$@"; do
  echo "== remote Python, $(basename "$lib")"
  out=$(mktemp)
  OFFLOAD_LIB=$lib "$here/mpirun.sh" -t "${REMOTE_PYTHON_TIMEOUT:-240}" \
    -np 1 "$py" "$here/../python/remote_mpi.py" : -np 1 "$proxy" 2>&1 | tee "$out"
  st=${PIPESTATUS[0]}
  line=$(grep -E '^remote-python: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$out" | tail -1)
  rm -f "$out"
  if [ "$st" -ne 0 ]; then
    echo "FAIL remote Python ($lib): the job's status is $st"
    rc=1
  elif [ -z "$line" ]; then
    echo "FAIL remote Python ($lib): no summary line"
    rc=1
  elif ! [[ $line =~ ^remote-python:\ [1-9][0-9]*\ passed,\ 0\ failed ]]; then
    echo "FAIL remote Python ($lib): $line"
    rc=1
  fi
done
exit $rc
