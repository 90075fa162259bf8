package mpi

/*
#include "olmpi.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/internal/cmem"
	"github.com/liboffload-go/liboffload-go/internal/remote/link"
)

// Raw MPI, timed in C, for make bench's baselines (bench/mpilink): the
// same ranks measured through the Endpoint and through MPI's own
// blocking calls, in the same run. Both sides call the same function.

// RawPingPong times iters round trips of size bytes with peer (MPI_Send
// then MPI_Recv on the initiator, the reverse on the other side).
func RawPingPong(peer, size, iters int, initiator bool) (time.Duration, error) {
	return raw(peer, size, iters, initiator, true)
}

// RawStream times iters messages of size bytes from the sender to peer,
// and a one-byte answer once all arrived.
func RawStream(peer, size, iters int, sender bool) (time.Duration, error) {
	return raw(peer, size, iters, sender, false)
}

func raw(peer, size, iters int, first, pingpong bool) (time.Duration, error) {
	state.mu.Lock()
	ok := state.inited
	state.mu.Unlock()
	if !ok {
		return 0, fmt.Errorf("mpi: not initialised")
	}
	buf, err := cmem.Calloc(uint64(max(size, 1)), "mpi: bench buffer")
	if err != nil {
		return 0, err
	}
	defer cmem.Free(buf)
	// touched before the clock starts: MPI's best, not first-touch page
	// faults (costly in a virtual machine)
	b := unsafe.Slice((*byte)(buf), max(size, 1))
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	f := C.int(0)
	if first {
		f = 1
	}
	var ns C.int64_t
	if pingpong {
		ns = C.olm_raw_pingpong(C.int(peer), tagRawBench, buf, C.int(size), C.int(iters), f)
	} else {
		ns = C.olm_raw_stream(C.int(peer), tagRawBench, buf, C.int(size), C.int(iters), f)
	}
	if ns < 0 {
		return 0, fmt.Errorf("mpi: raw exchange with rank %d failed", peer)
	}
	return time.Duration(ns), nil
}

// sendRaw sends b to rank on tag as one MPI message, waiting at most 10 s
// (the tests' way to put foreign messages on the transport's tag).
func sendRaw(rank, tag int, b []byte) error {
	buf, err := cmem.Calloc(uint64(max(len(b), 1)), "mpi: raw message")
	if err != nil {
		return err
	}
	copy(unsafe.Slice((*byte)(buf), len(b)), b)
	var reqs [1]C.uintptr_t
	if rc := C.olm_isend(buf, C.int(len(b)), C.int(rank), C.int(tag), &reqs[0]); rc != 0 {
		cmem.Free(buf)
		return mpiError("MPI_Isend", rc)
	}
	if ok, err := waitAll(link.Backoff{Spin: DefaultSpin}, reqs[:], time.Now().Add(10*time.Second), nil); !ok {
		abandon(nil, buf)
		if err == nil {
			err = fmt.Errorf("mpi: a raw message to rank %d not taken", rank)
		}
		return err
	}
	cmem.Free(buf)
	return nil
}
