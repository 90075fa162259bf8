package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/liboffload-go/liboffload-go/internal/mpi"
	"github.com/liboffload-go/liboffload-go/internal/remote/link"
)

// connect returns the proxy's Endpoint of the MPI job (internal/mpi) and
// how many application ranks end the job: the ranks that are not proxies
// (0 when the launcher does not say the job's size: the proxy then ends
// only when it is killed, as mpirun does at the job's end).
func connect() (link.Endpoint, int, error) {
	ep, err := mpi.Open(link.Proxy, 0)
	if err != nil {
		return nil, 0, err
	}
	size := 0
	for _, v := range []string{"OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "SLURM_NPROCS", "PMI_SIZE"} {
		if s, ok := mpi.Getenv(v); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n > 0 {
				size = n
				break
			}
		}
	}
	clients := 0
	if size > 0 {
		// every rank but this one and the other proxies
		clients = max(size-1-len(ep.Proxies()), 0)
	}
	return ep, clients, nil
}

// finishBound bounds MPI_Finalize: it waits for every rank of the job,
// and a client that died (or exited without it) never comes.
const finishBound = 30 * time.Second

// finish ends MPI once the Endpoint is closed (it waits for the job's
// other ranks to finalize, as MPI_Finalize does, at most finishBound;
// past it the proxy exits without).
func finish() error {
	done := make(chan error, 1)
	go func() { done <- mpi.Finalize() }()
	select {
	case err := <-done:
		return err
	case <-time.After(finishBound):
		return fmt.Errorf("MPI_Finalize did not return within %v (a rank of the job that never finalizes): exiting without it", finishBound)
	}
}
