package main

import (
	"strconv"
	"strings"

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

// finish ends MPI once the Endpoint is closed (it waits for the job's
// other ranks to finalize, as MPI_Finalize does).
func finish() error { return mpi.Finalize() }
