package main

import (
	"time"

	"github.com/liboffload-go/liboffload-go/internal/mpi"
	"github.com/liboffload-go/liboffload-go/internal/remote/link"
)

// connect returns the proxy's Endpoint of the MPI job (internal/mpi) and
// how many application ranks end the job (mpi.Clients: by the launch's
// own word where it gives one, not by which proxies answered discovery in
// time; 0 in a job of the proxy alone: it then ends only when it is
// killed, as mpirun does at the job's end).
func connect() (link.Endpoint, int, error) {
	ep, err := mpi.Open(link.Proxy, 0)
	if err != nil {
		return nil, 0, err
	}
	return ep, mpi.Clients(ep), nil
}

// finishBound bounds the wait for the job's other ranks to finalize.
const finishBound = 30 * time.Second

// finish ends MPI once the Endpoint is closed (it waits for the job's
// other ranks to finalize, as MPI_Finalize does, at most finishBound:
// past it the proxy exits without, which --enable-recovery tolerates).
func finish() error { return mpi.FinalizeWithin(finishBound) }
