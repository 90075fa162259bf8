package remote

import (
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/remote/link"
	"github.com/liboffload-go/liboffload-go/internal/remote/server"
	"github.com/liboffload-go/liboffload-go/plugins/host"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// OFFLOAD_REMOTE=loopback[:N] (a test mode, N from 1 to 16, default 1)
// serves N proxies' host devices from this process over link.Pipe, without
// MPI: the whole remote path (protocol, server, this plugin and the
// runtime above it) runs in one process, so that the C suites can test it
// anywhere. The proxies and their host platforms live until the process
// exits, like an MPI Endpoint.
var loopback struct {
	sync.Mutex
	ep link.Endpoint
	n  int
}

func parseLoopback(mode string) (int, bool, error) {
	rest, ok := strings.CutPrefix(mode, "loopback")
	if !ok {
		return 0, false, nil
	}
	if rest == "" {
		return 1, true, nil
	}
	n, err := strconv.Atoi(strings.TrimPrefix(rest, ":"))
	if !strings.HasPrefix(rest, ":") || err != nil || n < 1 || n > 16 {
		return 0, true, ol.Errorf(ol.ErrcInvalidValue, "%s=%q: loopback takes 1 to 16 proxies (loopback:N)", EnvRemote, mode)
	}
	return n, true, nil
}

func loopbackEndpoint(n int) (link.Endpoint, error) {
	loopback.Lock()
	defer loopback.Unlock()
	if loopback.ep != nil {
		if loopback.n != n {
			return nil, ol.Errorf(ol.ErrcInvalidValue, "%s: this process already serves %d loopback proxies", EnvRemote, loopback.n)
		}
		return loopback.ep, nil
	}
	ends := link.Pipe(1, n)
	for _, e := range ends[1:] {
		pl, err := host.New().Init(osEnv{})
		if err != nil {
			return nil, err
		}
		go func() { _ = server.New(e, []plugin.Platform{pl}, os.Stderr).Serve() }()
	}
	loopback.ep, loopback.n = ends[0], n
	return ends[0], nil
}

type osEnv struct{}

func (osEnv) Lookup(k string) (string, bool) { return os.LookupEnv(k) }
