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
	ep, clients, err := connect()
	if err != nil {
		fmt.Fprintf(os.Stderr, "offload-proxy: %v\n", err)
		return 1
	}
	var platforms []plugin.Platform
	for _, p := range []plugin.Plugin{amdgpu.New(), cuda.New(), host.New()} {
		pl, err := p.Init(osEnv{})
		if err != nil {
			fmt.Fprintf(os.Stderr, "offload-proxy rank %d: platform %s: %v\n", ep.Rank(), p.Name(), err)
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
