#!/usr/bin/env bash
# The remote suite's launcher: mpirun on this machine only, bounded in
# time, and no rank left behind.
#
#   tests/remote/mpirun.sh [-t seconds] <mpirun arguments>
#   e.g. tests/remote/mpirun.sh -t 120 -np 1 ./app : -np 2 build/bin/offload-proxy
#
# - Every MPI byte stays on this machine: shared memory between ranks (btl
#   self,vader with the ob1 messaging layer, so that UCX never opens a
#   network device), the launcher's own traffic over loopback.
# - --oversubscribe: more ranks than cores; --allow-run-as-root as root.
# - --enable-recovery: a rank that dies (a proxy killed by a fault test)
#   does not end the job; mpirun exits once the others have ended.
# - The wall-clock bound (-t, default 300 s, or MPIRUN_TIMEOUT): past it
#   every process of the job is killed and the exit status is 124.
# - mpirun puts each rank in a process group of its own, so a group kill
#   (or timeout(1)) misses them: mpirun runs in a session of its own, and
#   whatever of that session is left when mpirun ends (or at the bound) is
#   killed by PID and named on stderr; leftovers after a clean exit fail
#   the run (status 3).
set -u
limit=${MPIRUN_TIMEOUT:-300}
if [ "${1:-}" = -t ]; then
  limit=$2
  shift 2
fi
command -v mpirun >/dev/null || { echo "mpirun.sh: no mpirun (Debian: openmpi-bin libopenmpi-dev, scripts/deps.sh)" >&2; exit 2; }
flags=(--mca btl self,vader --mca pml ob1 --mca oob_tcp_if_include lo --mca btl_tcp_if_include lo
  --oversubscribe --bind-to none --enable-recovery)
[ "$(id -u)" = 0 ] && flags+=(--allow-run-as-root)

# setsid runs mpirun as the leader of a new session (it does not fork: a
# background job of a script is not a group leader), so its PID is the
# session's ID.
# (--enable-recovery makes mpirun print a harmless "PMIX ERROR: BAD-PARAM
# in file ../../../src/event/pmix_event_notification.c" line: dropped)
setsid mpirun "${flags[@]}" "$@" </dev/null 2> >(grep --line-buffered -v 'PMIX ERROR: BAD-PARAM in file .*pmix_event_notification' >&2) &
pid=$!
# the job's processes still alive (zombies are dead: their parent reaps them)
members() { ps -e -o pid=,sid=,stat= | awk -v s="$pid" '$2 == s && $1 != s && $3 !~ /^Z/ {print $1}'; }
status=
end=$((SECONDS + limit + 1)) # SECONDS counts whole seconds: never early
while kill -0 "$pid" 2>/dev/null; do
  if [ "$SECONDS" -ge "$end" ]; then
    echo "mpirun.sh: the job ran past ${limit}s: killing it" >&2
    kill -KILL "$pid" $(members) 2>/dev/null
    status=124
    break
  fi
  # a finished mpirun stays a zombie until waited for: kill -0 still
  # succeeds, so look at its state
  case $(ps -o stat= -p "$pid" 2>/dev/null) in Z*) break ;; esac
  sleep 0.2
done
wait "$pid"
rc=$?
[ -z "$status" ] && status=$rc
left=$(members)
if [ -n "$left" ]; then
  echo "mpirun.sh: processes of the job left after mpirun ended:" >&2
  ps -o pid=,stat=,args= -p $(echo $left | tr ' ' ,) >&2
  kill -KILL $left 2>/dev/null
  [ "$status" = 0 ] && status=3
fi
# mpirun's status: 0 when every rank ended, even one that failed or was
# killed (--enable-recovery); a job's programs report their own results
exit "$status"
