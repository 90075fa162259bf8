#!/usr/bin/env bash
# An application whose remote settings are refused (olInit fails, naming
# the variable) must not leave its job's proxies waiting for it: run as
# the application of an MPI job beside two proxies with
# OFFLOAD_REMOTE_CHUNK=1, it must see olInit fail, and the job must end
# well within its bound (the proxies told Exit at the application's exit).
#   tests/remote/badsettings.sh LIBDIR   (the library's build/lib)
# SPDX-License-Identifier: Apache-2.0
set -u
here=$(cd "$(dirname "$0")" && pwd)
lib=${1:?usage: badsettings.sh LIBDIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/app.c" <<'C'
#include <stdio.h>
#include <string.h>
#include "offload.h"
int main(void) {
  ol_result_t r = olInit();
  if (r == OL_SUCCESS) { puts("badsettings: olInit succeeded with OFFLOAD_REMOTE_CHUNK=1"); return 1; }
  if (!r->Details || !strstr(r->Details, "OFFLOAD_REMOTE_CHUNK")) { printf("badsettings: olInit failed without naming the variable: %s\n", r->Details ? r->Details : "(no details)"); return 1; }
  printf("badsettings: olInit refused: %s\n", r->Details);
  puts("badsettings: PASS");
  return 0;
}
C
gcc -std=gnu17 -Wall -Werror -I"$here/../../include" "$work/app.c" -o "$work/app" \
  -L"$lib" -l:libLLVMOffload.so.22.1 -Wl,-rpath,"$lib" || exit 1
start=$SECONDS
out=$(REMOTE_JOB_TIMEOUT=${BADSETTINGS_TIMEOUT:-120} REMOTE_JOB_APP_ENV=OFFLOAD_REMOTE_CHUNK=1 bash "$here/job.sh" "$work/app" 2>&1)
rc=$?
echo "$out"
if [ "$rc" != 0 ]; then
  echo "badsettings: FAIL: the job did not end by itself (mpirun.sh status $rc after $((SECONDS - start)) s): the proxies waited for the application"
  exit 1
fi
grep -q '^badsettings: PASS' <<< "$out" || { echo "badsettings: FAIL"; exit 1; }
echo "badsettings: the job ended in $((SECONDS - start)) s"
