#!/usr/bin/env bash
# The MPI baseline of make bench's remote rows: builds bench/mpilink and
# runs it on two ranks (one client, one proxy) under tests/remote/mpirun.sh,
# printing its "key value" lines (see bench/mpilink/main.go): MPI's own
# round trip, one-way latency, small-message stream and 256 MiB bandwidth,
# and the same through internal/mpi's Endpoint, measured in the same run.
#   bench/mpilink.sh [rounds]     (default 5; the medians are printed)
# Without Open MPI it prints "mpilink_missing <why>" and exits 0, so that
# the caller can report the baseline as missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/bin
rounds=${1:-5}
mkdir -p "$bin"
if ! command -v mpirun >/dev/null; then
  echo "mpilink_missing no mpirun (Debian: openmpi-bin libopenmpi-dev)"
  exit 0
fi
(cd "$root" && go build -o "$bin/mpilink" ./bench/mpilink)
bash "$root/tests/remote/mpirun.sh" -t 600 \
  -np 1 "$bin/mpilink" -role=client -rounds "$rounds" : -np 1 "$bin/mpilink" -role=proxy -rounds "$rounds"
