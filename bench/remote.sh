#!/usr/bin/env bash
# make bench's remote rows (bench/remote.c): builds bench/remote and runs it
# as one MPI job under tests/remote/mpirun.sh, two ranks of it (the
# application and its raw-MPI partner) and two offload-proxy ranks:
#   bench/remote.sh [rounds]               "key value" lines (default 3 rounds)
#   bench/remote.sh --md MISSED [rounds]   the docs/benchmarks.md section;
#                                          each missed target a line of MISSED
# Without Open MPI or the proxy it says so (key remote_missing, or a
# section naming what is missing) and exits 0.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/bin
md=""
if [ "${1:-}" = --md ]; then
  md=$2
  shift 2
  : > "$md"
fi
rounds=${1:-3}
mkdir -p "$bin"
missing=""
command -v mpicc >/dev/null || missing="no mpicc/mpirun (Debian: openmpi-bin libopenmpi-dev)"
[ -x "$bin/offload-proxy" ] || missing=${missing:-"no $bin/offload-proxy (make lib)"}
out=$bin/remote.out
load=$(cut -d' ' -f1-3 /proc/loadavg) # other jobs on the machine: see the section
if [ -z "$missing" ]; then
  gcc -O3 -fPIC -shared -I"$root/include" "$root/bench/kernels.c" -o "$bin/bench_kernels.so"
  # built as mpicc would (no -fPIC: the executable holds copies of
  # MPI_COMM_WORLD's globals, which the library must find, not libmpi's own)
  gcc -std=gnu17 -O2 -Wall -Werror -I"$root/include" $(mpicc --showme:compile) "$root/bench/remote.c" \
    -o "$bin/remote" -L"$root/build/lib" -l:libLLVMOffload.so.22.1 -Wl,-rpath,"$root/build/lib" $(mpicc --showme:link)
  pin=$root/bench/pin-rank.sh
  if ! bash "$root/tests/remote/mpirun.sh" -t 600 -np 2 "$pin" "$bin/remote" "$bin/bench_kernels.so" "$rounds" \
    : -np 2 "$pin" "$bin/offload-proxy" > "$out" 2> "$bin/remote.err" || ! grep -q '^remote_p2p_gbs ' "$out"; then
    missing="the job failed: $(tail -n 1 "$bin/remote.err")"
  fi
fi
if [ -z "$md" ]; then
  if [ -n "$missing" ]; then echo "remote_missing $missing"; else cat "$out"; fi
  exit 0
fi
if [ -n "$missing" ]; then
  printf '\n## Remote platform over MPI\n\nNot measured: %s.\n' "$missing"
  echo "remote rows not measured: $missing" >> "$md"
  exit 0
fi
v() { awk -v k="$1" '$1 == k {print $2}' "$out"; }
us() { awk -v a="$1" 'BEGIN { printf "%.1f µs", a / 1000 }'; }
st() { if [ "$1" = 1 ]; then echo met; else echo "**missed**"; fi; }
rtt=$(v mpi_rtt_ns); one=$(v mpi_oneway_ns); bw=$(v mpi_bw_gbs)
lm=$(v remote_launch_ns); lp=$(v remote_launch_p99_ns); lb=$(v remote_batch_ns)
h2d=$(v remote_h2d_gbs); p2p=$(v remote_p2p_gbs)
lim=$(awk -v r="$rtt" 'BEGIN { print 1.5 * r + 2000 }')
ok1=$(awk -v a="$lm" -v l="$lim" 'BEGIN { print (a <= l) ? 1 : 0 }')
ok2=$(awk -v a="$lb" -v l="$one" 'BEGIN { print (a <= l) ? 1 : 0 }')
ok3=$(awk -v a="$h2d" -v b="$bw" 'BEGIN { print (a >= 0.9 * b) ? 1 : 0 }')
ok4=$(awk -v a="$p2p" -v b="$bw" 'BEGIN { print (a >= 0.9 * b) ? 1 : 0 }')
[ "$ok1" = 1 ] || echo "remote launch + sync median $(us "$lm"), above 1.5 × MPI's round trip $(us "$rtt") + 2 µs" >> "$md"
[ "$ok2" = 1 ] || echo "remote queued launch $(us "$lb") each, above MPI's one-way latency $(us "$one")" >> "$md"
[ "$ok3" = 1 ] || echo "256 MiB host → remote device $h2d GB/s, below 0.9 × MPI's $bw GB/s" >> "$md"
[ "$ok4" = 1 ] || echo "256 MiB proxy → proxy $p2p GB/s, below 0.9 × MPI's $bw GB/s" >> "$md"
busy=""
awk -v l="${load%% *}" -v c="$(nproc)" 'BEGIN { exit !(l > c || c < 4) }' &&
  busy=" (fewer cores than the job's 4 ranks, or more load than cores: not the numbers of an idle machine, on which the targets are judged)"
r() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
cat <<MD

## Remote platform over MPI

\`bench/remote.sh\`: one MPI job under \`tests/remote/mpirun.sh\` (Open MPI,
shared memory between ranks, one machine): \`-np 2 bench/remote : -np 2
offload-proxy\`. Rank 0 is the application; the proxies (ranks 2 and 3)
serve their host devices. offload-proxy speaks only the remote protocol,
so MPI's own numbers are taken between rank 0 and rank 1, a second copy
of the program that only answers raw MPI (\`MPI_Send\`/\`MPI_Recv\` on
\`MPI_COMM_WORLD\`, a tag of its own; between rounds it sleeps): the same
job, the same transport, the same kind of rank pair as the application
and a proxy. $(v rounds) rounds, each first MPI, then the remote rows; medians
over rounds. Launches: \`bench/kernels.c\`'s \`empty\` (1×1, no arguments),
2,000 timed after 200 warm-up, and a batch of 10,000 timed after one
untimed (in runs of ten rounds, the first one or two batches of a job
took 1.3-3 µs a launch, most later ones 0.3-0.7); copies: \`olMemcpy\` with a NULL queue, the
median of 3 after one warm-up; MPI's bandwidth: one 256 MiB message from
rank 0 to rank 1 until a 1-byte answer. Every 256 MiB buffer is host-device
memory: the proxies' device memory, the application's source
(\`olMemAlloc\` HOST on its host device) and MPI's buffers on ranks 0 and 1
(the same, on each rank's host device), all in huge pages where the
system allows them (README, "Memory"): MPI's transfer costs per page, and
on 4 KiB pages MPI's own rate was half as high here. Each rank runs on a core
\`bench/pin-rank.sh\` chooses from its rank (its own with 4 cores or more;
on fewer, the application never shares one with proxy A), as
\`mpirun --bind-to core\` places an HPC job's ranks; MPI's rows run under
the same placement. Load average at the start: $load
on $(nproc) cores$busy.

| what | remote | MPI, same job | ratio | target | status |
|---|---|---|---|---|---|
| empty remote kernel \`olLaunchKernel\` + \`olSyncQueue\` (proxy's host device; median / p99) vs 8-byte MPI round trip (median) | $(us "$lm") / $(us "$lp") | $(us "$rtt") | $(r "$lm" "$rtt") | ≤ 1.5 × round trip + 2 µs ($(us "$lim")) | $(st "$ok1") |
| per launch, 10,000 queued on a remote queue before one sync, vs MPI one-way latency (half the round trip) | $(us "$lb") | $(us "$one") | $(r "$lb" "$one") | ≤ one-way | $(st "$ok2") |
| 256 MiB \`olMemcpy\` local host → remote DEVICE memory, GB/s vs MPI 256 MiB | $h2d | $bw | $(r "$h2d" "$bw") | ≥ 0.9× | $(st "$ok3") |
| 256 MiB \`olMemcpy\` proxy A's DEVICE memory → proxy B's, GB/s vs MPI 256 MiB (sent from proxy A to proxy B: see below) | $p2p | $bw | $(r "$p2p" "$bw") | ≥ 0.9× | $(st "$ok4") |

Reading: both copies go into a host device's memory, so each goes as
one piece of 64 \`OFFLOAD_REMOTE_CHUNK\`s (256 MiB), sent from where its
bytes are (the application's buffer; proxy A's host-device memory) after
a small header piece, and received straight into the destination
proxy's device memory once the proxy has checked the header
(docs/remote.md, "Copies without copying"): as in MPI's own number (one
256 MiB message), MPI's copy is the only pass over the bytes. What
remains are the hand-offs between ranks around it: the request to the
proxy, and for a copy between proxies the grant (the application tells B
and A at once, B answers A) and B's answer when the bytes are in, then
the reply to the application's sync.

Where the time goes (docs/remote.md, "The transport"; RATIONALE.md):
waits poll without sleeping while messages flow
(\`OFFLOAD_REMOTE_SPIN\`), without \`sched_yield\` for their first 50 µs
(it costs 1.4 µs a call on the 2-core test machine); their naps give up
the processor (\`link.Nap\`: with one core per rank, a nap in
\`nanosleep\` kept it from the goroutine sending a copy). With more ranks
than cores Open MPI yields in every poll that finds nothing;
\`offload-proxy\` turns that off (\`OMPI_MCA_mpi_yield_when_idle=0\`
unless the launch sets it), the application's MPI and MPI's rows here
keep it. The proxy's host device runs each queued launch on a goroutine
that shares the proxy's core with its receive loop: the queued-launch
row is bounded by what the host device takes per empty launch. On the
2-core test machine the rows vary by about ±1 µs and ±1.5 GB/s from one
job to the next (other tenants of the machine: MPI's own round trip
ranged over 2.1-2.9 µs the same afternoon).
MD
