// The few Open MPI 4.x calls the transport makes, reached through dlopen
// and dlsym so that nothing links libmpi or needs mpi.h. Open MPI's ABI as
// declared here (facts from its mpi.h, not included): every handle is a
// pointer, the predefined ones are the addresses of exported globals
// (ompi_mpi_comm_world, ompi_mpi_byte, ...), MPI_Status is three public
// ints followed by an int and a size_t, MPI_THREAD_MULTIPLE is 3.
#ifndef OLMPI_H
#define OLMPI_H

#include <stddef.h>
#include <stdint.h>

// olm_load opens lib (dlopen RTLD_NOW|RTLD_LOCAL) and resolves every
// entry point; 0 on success, else -1 with a message in err.
int olm_load(const char *lib, char *err, size_t errlen);

int olm_initialized(int *flag);
int olm_finalized(int *flag);
// olm_init_thread: MPI_Init_thread(NULL, NULL, required, provided).
int olm_init_thread(int required, int *provided);
int olm_query_thread(int *provided);
int olm_finalize(void);
// olm_errors_return makes MPI_COMM_WORLD's errors return codes.
int olm_errors_return(void);
int olm_world(int *rank, int *size);
int olm_processor_name(char *name, int *len);
void olm_error_string(int code, char *buf, size_t len);

// Point-to-point on MPI_COMM_WORLD with MPI_BYTE; requests and matched
// messages are MPI's pointers, kept by Go as uintptr_t.
int olm_isend(const void *buf, int count, int dest, int tag, uintptr_t *req);
int olm_irecv(void *buf, int count, int src, int tag, uintptr_t *req);
// olm_test: *done = 1 once the request completed (then *req is null).
int olm_test(uintptr_t *req, int *done);
// olm_cancel cancels an incomplete receive and waits (bounded by MPI) for
// it; *cancelled = 1 when it really was cancelled.
int olm_cancel(uintptr_t *req, int *cancelled);

// The two hot paths in one call each (a cgo call costs about 100 ns).
// Their results go to an olm_out in C memory that the caller keeps: one
// pointer for cgo to check instead of one per result.
typedef struct {
  uintptr_t req, posted;
  int done, step, found, src, count, waiting;
} olm_out;
// olm_post_copy: stage = kind followed by n bytes of body, MPI_Isend of
// it to dest on tag, then one MPI_Test: o->done = 1 when MPI has taken it
// (stage is free again), else o->req is the send in flight. o->step names
// the call that failed (1 MPI_Isend, 2 MPI_Test).
int olm_post_copy(void *stage, unsigned char kind, const void *body, int n, int dest, int tag, olm_out *o);
// olm_poll_posted: the receive of the next message on tag from any source
// stays posted into buf between calls (o->posted), so that a message that
// arrives meanwhile goes straight there: MPI's fastest path (a round trip
// of two ranks polling took 0.9-1.1 us so on the test machine, 1.4 us
// probing for each message and then receiving it). It posts the receive
// if none is, then tests it once: o->found = 1 when a message is in buf
// (o->src, o->count; the next call posts anew). A message of more than
// cap bytes (none of the transport's) is dropped: o->found = 1, o->count
// = -1. With check set and nothing found, it also probes for a message on
// tag without receiving it: o->waiting = 1 when one waits, which means
// the posted receive is held by a message not fully arrived. o->step
// names the call that failed (1 MPI_Irecv, 2 MPI_Test, 3 MPI_Iprobe).
int olm_poll_posted(int tag, void *buf, int cap, int check, olm_out *o);
#define OLM_ERR_TRUNCATE 15 // Open MPI's MPI_ERR_TRUNCATE

// The baselines of make bench: MPI's own blocking calls, timed in C.
// olm_raw_pingpong: iters round trips of bytes with peer (the initiator
// sends first); returns the nanoseconds of all of them, or -1.
int64_t olm_raw_pingpong(int peer, int tag, void *buf, int bytes, int iters, int initiator);
// olm_raw_stream: iters messages of bytes from the sender to peer, then
// one byte back; returns the nanoseconds, or -1.
int64_t olm_raw_stream(int peer, int tag, void *buf, int bytes, int iters, int sender);

#endif

// olm_register_atexit registers (once) an atexit handler that calls the
// Go function olmpiAtExit.
void olm_register_atexit(void);
// olm_exit calls the C library's exit (the tests' stand-in for an
// application's return from main: Go's os.Exit skips atexit handlers).
void olm_exit(int code);
