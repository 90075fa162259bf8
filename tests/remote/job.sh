#!/usr/bin/env bash
# Runs a program as the application of an MPI job beside offload-proxy
# ranks, through tests/remote/mpirun.sh (this machine only, bounded):
#
#   tests/remote/job.sh PROGRAM [ARGUMENTS...]
#   = mpirun.sh -t $REMOTE_JOB_TIMEOUT -np 1 env $REMOTE_JOB_APP_ENV PROGRAM ARGUMENTS... : -np $REMOTE_JOB_PROXIES $OFFLOAD_PROXY
#
# Environment: OFFLOAD_PROXY (default build/bin/offload-proxy of this
# tree), REMOTE_JOB_PROXIES (2), REMOTE_JOB_TIMEOUT (110 s),
# REMOTE_JOB_APP_ENV (NAME=VALUE words for the application only; every
# rank inherits the rest of the environment). mpirun's
# status is 0 whenever every rank ended (mpirun.sh): the program's own
# output says how it went.
# SPDX-License-Identifier: Apache-2.0
set -u
here=$(cd "$(dirname "$0")" && pwd)
proxy=${OFFLOAD_PROXY:-$here/../../build/bin/offload-proxy}
[ -x "$proxy" ] || { echo "job.sh: no $proxy: run make lib" >&2; exit 2; }
exec "$here/mpirun.sh" -t "${REMOTE_JOB_TIMEOUT:-110}" -np 1 env ${REMOTE_JOB_APP_ENV:-} "$@" : -np "${REMOTE_JOB_PROXIES:-2}" "$proxy"
