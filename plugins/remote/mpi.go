package remote

import (
	"sync"
	"time"

	"github.com/liboffload-go/liboffload-go/internal/mpi"
	"github.com/liboffload-go/liboffload-go/internal/remote/link"
	"github.com/liboffload-go/liboffload-go/internal/remote/wire"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// exitBound bounds MPI_Finalize at the process's exit (it waits for every
// rank of the job: the proxies end once every client has said Exit).
const exitBound = 30 * time.Second

var exitOnce sync.Once

// mpiConnector is the default Connector: under an MPI launch with other
// ranks (internal/mpi.Launched) or OFFLOAD_REMOTE=mpi, the client's
// Endpoint of internal/mpi (Open MPI, loaded at run time). At the
// process's exit every proxy is told Exit, so that it can end and the
// job's MPI_Finalize can complete.
func mpiConnector(env plugin.Env, want bool) (link.Endpoint, error) {
	if !want && !mpi.Launched(env.Lookup) {
		return nil, nil
	}
	ep, err := mpi.Open(link.Client, 0)
	if err != nil {
		return nil, err
	}
	exitOnce.Do(func() {
		mpi.AtExit(func() { sayExit(ep) }, exitBound)
	})
	return ep, nil
}

// sayExit tells every proxy that this client has ended (each proxy ends
// once every client of the job has).
func sayExit(ep link.Endpoint) {
	flushAll() // requests still in batches go first
	b, _ := wire.Encode(&wire.Msg{Op: wire.OpExit})
	for _, p := range ep.Proxies() {
		_ = ep.Send(p.Rank, b, time.Second)
	}
	if f, ok := ep.(interface{ Flush(time.Duration) }); ok {
		f.Flush(time.Second)
	}
	// closed, so that MPI_Finalize runs next (internal/mpi's exit hook
	// skips it while an Endpoint is open): the proxies, told Exit, are in
	// MPI_Finalize, which Open MPI completes only once every rank has
	// called it; a client that exited without it left them hanging there
	// in some jobs (a proxy's goroutines all in finish, MPI_Finalize)
	_ = ep.Close()
}

func init() { connector = mpiConnector }
