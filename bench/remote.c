// remote: make bench's remote rows, each against raw MPI measured in the
// same MPI job, alternating in rounds (a benchmark, not a test).
//
//   tests/remote/mpirun.sh -np 2 remote KERNELS.so [ROUNDS] : -np 2 offload-proxy
//
// Ranks 0 and 1 run this program, ranks 2 and 3 serve their host devices.
// Every rank's olInit initialises MPI (the library does, with
// MPI_THREAD_MULTIPLE); this program then uses MPI_COMM_WORLD itself on a
// tag of its own (the library's are 0x7F00 and up). Rank 1 is the MPI
// partner: offload-proxy speaks only the remote protocol, so raw MPI runs
// between rank 0 and rank 1, over the same transport as rank 0 to a proxy
// (one machine: Open MPI's shared-memory btl). Each round rank 0 first
// measures raw MPI with rank 1 (which otherwise sleeps), then the remote
// rows on the proxies' host devices. Rank 0 prints "key value" lines,
// medians over rounds (times in ns, bandwidths in GB/s):
//
//   mpi_rtt_ns          8-byte MPI_Send + MPI_Recv round trip, median
//   mpi_oneway_ns       half of it
//   mpi_bw_gbs          256 MiB MPI_Send rank 0 -> 1 (until a 1-byte ack)
//   remote_launch_ns    empty kernel olLaunchKernel + olSyncQueue, median
//   remote_launch_p99_ns
//   remote_batch_ns     per launch, 10,000 queued before one olSyncQueue
//                       (after one such batch untimed)
//   remote_h2d_gbs      256 MiB olMemcpy (NULL queue) local host -> remote
//   remote_p2p_gbs      256 MiB olMemcpy (NULL queue) proxy A -> proxy B
#define BENCH_OFFLOAD
#include "common.h"
#include <mpi.h>

enum { TAG = 11, CMD_DONE = 0, CMD_ROUND = 1, SMALL = 8, PINGS = 10000, BATCH = 10000, LAUNCHES = 2000, REPS = 3 };
static const size_t BIG = (size_t)256 << 20;

// the library makes MPI_COMM_WORLD's errors return codes: check them
#define MCK(x)                                                                 \
  do {                                                                         \
    int rc_ = (x);                                                             \
    if (rc_ != MPI_SUCCESS) {                                                  \
      fprintf(stderr, "%s:%d: %s -> MPI error %d\n", __FILE__, __LINE__, #x, rc_); \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

// one round of raw MPI between rank 0 (first) and rank 1, sending from
// and into memory of the rank's own host device (olMemAlloc HOST): the
// kind of memory each remote copy moves (the application's buffer and the
// proxies' device memory), so that the copies and MPI are compared on
// the same pages (on the test machine MPI moved malloc's 4 KiB pages at
// half the rate of the host device's huge pages)
static void raw_round(int me, ol_device_handle_t local, double *rtt, double *bw) {
  int peer = 1 - me;
  char small[SMALL] = {0}, ack = 0;
  char *big;
  CK(olMemAlloc(local, OL_ALLOC_TYPE_HOST, BIG, (void **)&big));
  double *t = malloc(PINGS * sizeof *t);
  if (!t) { fprintf(stderr, "remote: out of memory\n"); exit(1); }
  // real data on both sides, as the remote copies have: untouched memory
  // would send from the kernel's one zero page (always in cache)
  memset(big, 1 + me, BIG);
  for (int i = 0; i < PINGS / 10 + PINGS; i++) {
    double t0 = now_ns();
    if (me == 0) {
      MCK(MPI_Send(small, SMALL, MPI_BYTE, peer, TAG, MPI_COMM_WORLD));
      MCK(MPI_Recv(small, SMALL, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
      MCK(MPI_Recv(small, SMALL, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      MCK(MPI_Send(small, SMALL, MPI_BYTE, peer, TAG, MPI_COMM_WORLD));
    }
    if (i >= PINGS / 10) t[i - PINGS / 10] = now_ns() - t0;
  }
  double b[REPS + 1];
  for (int r = 0; r < REPS + 1; r++) { // the first is a warm-up
    double t0 = now_ns();
    if (me == 0) {
      MCK(MPI_Send(big, (int)BIG, MPI_BYTE, peer, TAG, MPI_COMM_WORLD));
      MCK(MPI_Recv(&ack, 1, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
      MCK(MPI_Recv(big, (int)BIG, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      MCK(MPI_Send(&ack, 1, MPI_BYTE, peer, TAG, MPI_COMM_WORLD));
    }
    b[r] = BIG / (now_ns() - t0);
  }
  *rtt = quantile(t, PINGS, 0.5);
  *bw = quantile(b + 1, REPS, 0.5);
  free(t);
  CK(olMemFree(big));
}

// rank 1: sleeps between rounds (MPI_Recv would spin a core); gives up
// after PARTNER_WAIT_S without a command (rank 0 failed), so that a failed
// run does not hold the job until mpirun.sh's bound
enum { PARTNER_WAIT_S = 300 };
static void partner(ol_device_handle_t local) {
  for (;;) {
    int cmd = -1, done = 0;
    MPI_Request rq;
    MCK(MPI_Irecv(&cmd, 1, MPI_INT, 0, TAG, MPI_COMM_WORLD, &rq));
    for (double t0 = now_ns();;) {
      MCK(MPI_Test(&rq, &done, MPI_STATUS_IGNORE));
      if (done) break;
      if (now_ns() - t0 > PARTNER_WAIT_S * 1e9) {
        fprintf(stderr, "remote: rank 1: no word from rank 0 in %d s: ending\n", PARTNER_WAIT_S);
        exit(1);
      }
      nanosleep(&(struct timespec){0, 2000000}, NULL); // 2 ms: its wake-ups share a core with a proxy
    }
    if (cmd != CMD_ROUND) return;
    double rtt, bw;
    raw_round(1, local, &rtt, &bw);
  }
}

static bool told_done;
static void command(int cmd) {
  told_done |= cmd == CMD_DONE;
  MCK(MPI_Send(&cmd, 1, MPI_INT, 1, TAG, MPI_COMM_WORLD));
}

// rank 0 ending early (CK exits): rank 1 ends too. Registered after
// olInit, so it runs before the library's exit hook finalizes MPI.
static void end_partner(void) {
  int cmd = CMD_DONE;
  if (!told_done) MPI_Send(&cmd, 1, MPI_INT, 1, TAG, MPI_COMM_WORLD);
}

struct pick {
  ol_device_handle_t local, remote[2];
  int nremote;
};

// the local host device and the first two remote host devices
static bool pick_devices(ol_device_handle_t d, void *u) {
  struct pick *p = u;
  ol_platform_handle_t pl;
  ol_platform_backend_t b;
  char name[256];
  if (olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, sizeof pl, &pl) ||
      olGetPlatformInfo(pl, OL_PLATFORM_INFO_BACKEND, sizeof b, &b) ||
      olGetPlatformInfo(pl, OL_PLATFORM_INFO_NAME, sizeof name, name) || b != OL_PLATFORM_BACKEND_HOST)
    return true;
  if (!strncmp(name, "remote rank", 11)) {
    if (p->nremote < 2) p->remote[p->nremote++] = d;
  } else if (!p->local) {
    p->local = d;
  }
  return true;
}

static double med3(double *v) { return quantile(v, REPS, 0.5); }

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: remote KERNELS.so [ROUNDS]\n"); return 2; }
  int rounds = argc > 2 ? atoi(argv[2]) : 3;
  if (rounds < 1 || rounds > 64) rounds = 3;
  CK(olInit());
  int me, size;
  MCK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
  MCK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  struct pick p = {0};
  CK(olIterateDevices(pick_devices, &p));
  if (me == 1) {
    if (!p.local) { fprintf(stderr, "remote: rank 1 has no host device\n"); return 1; }
    partner(p.local);
    CK(olShutDown());
    return 0;
  }
  if (me != 0) { fprintf(stderr, "remote: rank %d: run as -np 2 remote : -np 2 offload-proxy\n", me); return 2; }
  atexit(end_partner);
  if (!p.local || p.nremote < 2) {
    fprintf(stderr, "remote: want the local host device and two remote host devices, found %d remote\n", p.nremote);
    return 1;
  }
  ol_device_handle_t a = p.remote[0], b = p.remote[1];
  ol_program_handle_t prog = bench_program(a, argv[1]);
  ol_symbol_handle_t k = bench_kernel(prog, "empty");
  ol_queue_handle_t q;
  CK(olCreateQueue(a, &q));
  ol_kernel_launch_size_args_t ls = {1, {1, 1, 1}, {1, 1, 1}, 0};
  // the application's buffer: pinned host memory, as for a GPU's fastest copies
  void *host, *da, *db;
  CK(olMemAlloc(p.local, OL_ALLOC_TYPE_HOST, BIG, &host));
  memset(host, 1, BIG);
  CK(olMemAlloc(a, OL_ALLOC_TYPE_DEVICE, BIG, &da));
  CK(olMemAlloc(b, OL_ALLOC_TYPE_DEVICE, BIG, &db));
  double *lt = malloc(LAUNCHES * sizeof *lt);
  double rtt[64], bw[64], lm[64], lp[64], lb[64], h2d[64], p2p[64];
  for (int r = 0; r < rounds; r++) {
    command(CMD_ROUND);
    raw_round(0, p.local, &rtt[r], &bw[r]);
    for (int i = 0; i < LAUNCHES / 10 + LAUNCHES; i++) {
      double t0 = now_ns();
      CK(olLaunchKernel(q, a, k, NULL, 0, &ls));
      CK(olSyncQueue(q));
      if (i >= LAUNCHES / 10) lt[i - LAUNCHES / 10] = now_ns() - t0;
    }
    lm[r] = quantile(lt, LAUNCHES, 0.5);
    lp[r] = quantile(lt, LAUNCHES, 0.99);
    double t0 = 0;
    for (int w = 0; w < 2; w++) { // the first is a warm-up
      t0 = now_ns();
      for (int i = 0; i < BATCH; i++) CK(olLaunchKernel(q, a, k, NULL, 0, &ls));
      CK(olSyncQueue(q));
    }
    lb[r] = (now_ns() - t0) / BATCH;
    double h[REPS + 1], pp[REPS + 1];
    for (int i = 0; i < REPS + 1; i++) { // the first is a warm-up
      t0 = now_ns();
      CK(olMemcpy(NULL, da, a, host, p.local, BIG));
      h[i] = BIG / (now_ns() - t0);
      t0 = now_ns();
      CK(olMemcpy(NULL, db, b, da, a, BIG));
      pp[i] = BIG / (now_ns() - t0);
    }
    h2d[r] = med3(h + 1);
    p2p[r] = med3(pp + 1);
  }
  command(CMD_DONE);
  // the copy arrived: read a byte of proxy B's copy back
  unsigned char back = 0;
  CK(olMemcpy(NULL, &back, p.local, (char *)db + BIG - 1, b, 1));
  if (back != 1) { fprintf(stderr, "remote: proxy B's copy reads %d, want 1\n", back); return 1; }
  printf("rounds %d\n", rounds);
  printf("mpi_rtt_ns %.0f\n", quantile(rtt, rounds, 0.5));
  printf("mpi_oneway_ns %.0f\n", quantile(rtt, rounds, 0.5) / 2);
  printf("mpi_bw_gbs %.2f\n", quantile(bw, rounds, 0.5));
  printf("remote_launch_ns %.0f\n", quantile(lm, rounds, 0.5));
  printf("remote_launch_p99_ns %.0f\n", quantile(lp, rounds, 0.5));
  printf("remote_batch_ns %.0f\n", quantile(lb, rounds, 0.5));
  printf("remote_h2d_gbs %.2f\n", quantile(h2d, rounds, 0.5));
  printf("remote_p2p_gbs %.2f\n", quantile(p2p, rounds, 0.5));
  CK(olMemFree(da));
  CK(olMemFree(db));
  CK(olMemFree(host));
  CK(olDestroyQueue(q));
  CK(olDestroyProgram(prog));
  CK(olShutDown());
  free(lt);
  return 0;
}
