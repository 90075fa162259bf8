// Command offload-proxy serves the devices of its machine to the
// applications of an MPI job (docs/remote.md):
//
//	mpirun -np 1 ./app : -np 2 offload-proxy
//
// It initialises the same plugins as the library (AMDGPU, CUDA, host, in
// the library's order) and answers the remote protocol
// (internal/remote/server) until the job ends: the MPI transport closes,
// every application rank has sent Exit, or SIGTERM/SIGINT.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/liboffload-go/liboffload-go/internal/remote/server"
	"github.com/liboffload-go/liboffload-go/plugins/amdgpu"
	"github.com/liboffload-go/liboffload-go/plugins/cuda"
	"github.com/liboffload-go/liboffload-go/plugins/host"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

type osEnv struct{}

func (osEnv) Lookup(k string) (string, bool) { return os.LookupEnv(k) }

func main() { os.Exit(run()) }

func run() int {
	// The devices come up before the proxy joins the job: a client that
	// has found the proxy (discovery) asks for its platforms at once and
	// waits OFFLOAD_REMOTE_TIMEOUT at most, which plugin start-up on a
	// loaded machine could otherwise take up.
	var platforms []plugin.Platform
	var initErrs []string
	for _, p := range []plugin.Plugin{amdgpu.New(), cuda.New(), host.New()} {
		pl, err := p.Init(osEnv{})
		if err != nil {
			initErrs = append(initErrs, fmt.Sprintf("platform %s: %v", p.Name(), err))
			continue
		}
		if pl == nil {
			continue
		}
		if len(pl.Devices()) == 0 {
			_ = pl.Deinit()
			continue
		}
		platforms = append(platforms, pl)
	}
	ep, clients, err := connect()
	if err != nil {
		fmt.Fprintf(os.Stderr, "offload-proxy: %v\n", err)
		for _, pl := range platforms {
			_ = pl.Deinit()
		}
		return 1
	}
	for _, e := range initErrs {
		fmt.Fprintf(os.Stderr, "offload-proxy rank %d: %s\n", ep.Rank(), e)
	}
	s := server.New(ep, platforms, os.Stderr)
	s.Clients = clients
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		_ = ep.Close()
	}()
	rc := 0
	if err := s.Serve(); err != nil {
		fmt.Fprintf(os.Stderr, "offload-proxy rank %d: %v\n", ep.Rank(), err)
		rc = 1
	}
	for _, pl := range platforms {
		if err := pl.Drain(); err != nil {
			fmt.Fprintf(os.Stderr, "offload-proxy rank %d: %s: %v\n", ep.Rank(), pl.Name(), err)
		}
		_ = pl.Deinit()
	}
	_ = ep.Close()
	if err := finish(); err != nil {
		fmt.Fprintf(os.Stderr, "offload-proxy rank %d: %v\n", ep.Rank(), err)
	}
	return rc
}
