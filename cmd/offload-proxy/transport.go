package main

import (
	"os"
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
	if name, value, set := mpiDefault(osEnv{}); set {
		os.Setenv(name, value)
	}
	ep, err := mpi.Open(link.Proxy, 0)
	if err != nil {
		return nil, 0, err
	}
	return ep, mpi.Clients(ep), nil
}

// mpiDefault is the MPI setting the proxy makes before MPI starts, unless
// the launch set it (set false then). Open MPI, finding more ranks than
// cores, yields the processor in every call that polls and finds nothing
// (mpi_yield_when_idle): the proxy's waits pace themselves (link.Backoff:
// they yield past their first 50 µs and sleep when idle), and that second
// yield, 1.4 µs a poll here, came on top of each reply: a remote launch +
// sync took 7.7 µs in a four-rank job on two cores, 5.8-6.1 µs without.
func mpiDefault(env interface{ Lookup(string) (string, bool) }) (name, value string, set bool) {
	const yield = "OMPI_MCA_mpi_yield_when_idle"
	if _, ok := env.Lookup(yield); ok {
		return "", "", false
	}
	return yield, "0", true
}

// finishBound bounds the wait for the job's other ranks to finalize.
const finishBound = 30 * time.Second

// finish ends MPI once the Endpoint is closed (it waits for the job's
// other ranks to finalize, as MPI_Finalize does, at most finishBound:
// past it the proxy exits without, which --enable-recovery tolerates).
func finish() error { return mpi.FinalizeWithin(finishBound) }
