#!/usr/bin/env bash
# bench/pin-rank.sh PROGRAM [ARGS...]: runs one rank of bench/remote.sh's
# job on a core of its own choosing (taskset), from its rank in the job
# (OMPI_COMM_WORLD_RANK): 0 the application, 1 its raw-MPI partner, 2 and
# 3 the proxies. With 4 cores or more each rank has its own (as mpirun
# --bind-to core would give); with fewer, the application and proxy A, the
# pair of the latency rows, never share one: threads of the two that
# landed on one core made a launch + sync 100-300 µs instead of 10-20 µs.
# The raw-MPI rows run under the same placement. Without taskset it runs
# PROGRAM unpinned.
set -eu
rank=${OMPI_COMM_WORLD_RANK:-0}
cores=$(nproc)
if ! command -v taskset >/dev/null || [ "$cores" -lt 2 ]; then exec "$@"; fi
if [ "$cores" -ge 4 ]; then
  cpu=$rank
elif [ "$cores" = 3 ]; then
  map=(0 1 2 1) # proxy B shares with the partner, idle in the remote rows
  cpu=${map[$rank]:-0}
else
  map=(0 1 1 0) # each pair of the rows (0-1, 0-2, 2-3) on two cores
  cpu=${map[$rank]:-0}
fi
exec taskset -c "$cpu" "$@"
