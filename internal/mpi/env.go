package mpi

/*
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/liboffload-go/liboffload-go/internal/cmem"
)

// Environment variables of the MPI transport (docs/environment.md).
const (
	// EnvRemote switches the remote platform: unset (or "auto") uses it
	// when Launched says so, "mpi" always, "off" never.
	EnvRemote = "OFFLOAD_REMOTE"
	// EnvLibrary names the Open MPI library to load (default libmpi.so.40).
	EnvLibrary = "OFFLOAD_REMOTE_MPI_LIBRARY"
	// EnvDiscovery bounds how long Open waits for the answers of discovery.
	EnvDiscovery = "OFFLOAD_REMOTE_DISCOVERY_TIMEOUT"
	// EnvStall bounds how long the rest of a message whose start arrived
	// is waited for (a sender that died in the middle of it).
	EnvStall = "OFFLOAD_REMOTE_STALL_TIMEOUT"
	// EnvProxyRanks lists the proxies' ranks (comma-separated) for
	// launchers that do not say which program each rank runs.
	EnvProxyRanks = "OFFLOAD_REMOTE_PROXY_RANKS"
	// EnvSpin is how long a rank keeps polling without sleeping after its
	// last message, and a caller waiting for a reply polls itself.
	EnvSpin = "OFFLOAD_REMOTE_SPIN"
)

// DefaultLibrary is Open MPI 4.x's soname (5.x keeps it).
const DefaultLibrary = "libmpi.so.40"

// Defaults of Options.
const (
	DefaultDiscovery = 10 * time.Second
	DefaultStall     = 30 * time.Second
	DefaultSpin      = time.Millisecond
	maxSpin          = time.Second
)

// Env looks a variable up; Getenv is the process's (through the C
// library, so that a host program's setenv is seen, as impl does).
type Env func(name string) (string, bool)

// Getenv reads the environment through the C library: Go's os.Getenv sees
// only the environment as it was when the runtime started.
func Getenv(name string) (string, bool) {
	v := C.getenv((*C.char)(cmem.CName(name)))
	if v == nil {
		return "", false
	}
	return C.GoString(v), true
}

// Mode is the value of OFFLOAD_REMOTE.
type Mode int

const (
	// Auto uses MPI when the process runs under an MPI launcher with
	// other ranks (Launched).
	Auto Mode = iota
	// Force uses MPI even without a launcher seen (OFFLOAD_REMOTE=mpi).
	Force
	// Off never uses MPI (OFFLOAD_REMOTE=off).
	Off
)

// RemoteMode parses OFFLOAD_REMOTE: unset, "" or "auto" is Auto, "mpi"
// Force, "off" Off (case-insensitive); anything else is an error naming
// the accepted values.
func RemoteMode(env Env) (Mode, error) {
	v, ok := env(EnvRemote)
	if !ok {
		return Auto, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "auto":
		return Auto, nil
	case "mpi":
		return Force, nil
	case "off":
		return Off, nil
	}
	return Auto, fmt.Errorf("%s=%q: expected mpi, off or auto", EnvRemote, v)
}

// Launched reports whether env (Getenv: the process's) is that of a rank
// of an MPI job with other ranks: Open MPI's mpirun (OMPI_COMM_WORLD_SIZE
// > 1), or Slurm's srun with PMIx (PMIX_RANK set and SLURM_NTASKS, or
// SLURM_NPROCS, > 1). It reads the environment only: nothing is loaded.
func Launched(env Env) bool {
	if n, ok := envInt(env, "OMPI_COMM_WORLD_SIZE"); ok {
		return n > 1
	}
	if _, ok := env("PMIX_RANK"); ok {
		for _, v := range []string{"SLURM_NTASKS", "SLURM_NPROCS"} {
			if n, ok := envInt(env, v); ok {
				return n > 1
			}
		}
	}
	return false
}

// Use says whether the remote platform should start: OFFLOAD_REMOTE's
// Force, or Auto and Launched. The error is a malformed OFFLOAD_REMOTE.
func Use(env Env) (bool, error) {
	m, err := RemoteMode(env)
	if err != nil {
		return false, err
	}
	switch m {
	case Force:
		return true, nil
	case Off:
		return false, nil
	}
	return Launched(env), nil
}

func envInt(env Env, name string) (int, bool) {
	v, ok := env(name)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	return n, err == nil
}

// Options tune Open; OptionsFromEnv fills them from the environment.
type Options struct {
	// Library is the MPI library to dlopen.
	Library string
	// Discovery bounds the wait for the other ranks' answers in Open.
	Discovery time.Duration
	// Stall bounds the wait for the rest of a message whose first part
	// arrived, and for a reply to a discovery hello.
	Stall time.Duration
	// ProxyRanks, when not nil, are the ranks that are proxies: discovery
	// asks them only and waits for each of them.
	ProxyRanks []int
	// Spin is how long the Endpoint polls without sleeping after the
	// last message it sent or received (0: it sleeps at once).
	Spin time.Duration
}

// OptionsFromEnv reads EnvLibrary, EnvDiscovery, EnvStall and
// EnvProxyRanks and EnvSpin; durations are Go durations ("5s", "250ms") or a number
// of seconds.
func OptionsFromEnv(env Env) (Options, error) {
	o := Options{Library: DefaultLibrary, Discovery: DefaultDiscovery, Stall: DefaultStall, Spin: DefaultSpin}
	if v, ok := env(EnvLibrary); ok && v != "" {
		o.Library = v
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{EnvDiscovery, &o.Discovery}, {EnvStall, &o.Stall}} {
		v, ok := env(d.name)
		if !ok || v == "" {
			continue
		}
		t, err := parseDuration(v)
		if err != nil {
			return o, fmt.Errorf("%s=%q: %v", d.name, v, err)
		}
		*d.dst = t
	}
	if v, ok := env(EnvSpin); ok && strings.TrimSpace(v) != "" {
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && f == 0 {
			o.Spin = 0
		} else if t, err := parseDuration(v); err != nil || t > maxSpin {
			return o, fmt.Errorf("%s=%q: not a duration from 0 to %v (250us, 2ms) or a number of seconds", EnvSpin, v, maxSpin)
		} else {
			o.Spin = t
		}
	}
	if v, ok := env(EnvProxyRanks); ok {
		r, err := parseRanks(v)
		if err != nil {
			return o, fmt.Errorf("%s=%q: %v", EnvProxyRanks, v, err)
		}
		o.ProxyRanks = r
	}
	return o, nil
}

func parseDuration(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f <= 0 || f > 1e6 {
			return 0, fmt.Errorf("seconds out of range (0, 1e6]")
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	t, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("not a duration (5s, 250ms) or a number of seconds")
	}
	if t <= 0 {
		return 0, fmt.Errorf("must be positive")
	}
	return t, nil
}

func parseRanks(v string) ([]int, error) {
	r := []int{}
	for _, f := range strings.FieldsFunc(v, func(c rune) bool { return c == ',' || c == ' ' }) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a rank", f)
		}
		r = append(r, n)
	}
	return r, nil
}

// appContexts returns the ranks [lo, hi) of this process's application
// context (the program of an MPMD launch it belongs to) and of every
// context, from Open MPI's OMPI_APP_CTX_NUM_PROCS (each context's rank
// count, in rank order) and OMPI_MCA_orte_app_num (this process's
// context). ok is false when they are absent or disagree with rank and
// size. (Open MPI 4.1's OMPI_FIRST_RANKS reads "0 0" for two contexts:
// not usable.)
func appContexts(env Env, rank, size int) (ctxs [][2]int, own int, ok bool) {
	v, ok1 := env("OMPI_APP_CTX_NUM_PROCS")
	own, ok2 := envInt(env, "OMPI_MCA_orte_app_num")
	if !ok1 || !ok2 {
		return nil, 0, false
	}
	lo := 0
	for _, f := range strings.Fields(v) {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, 0, false
		}
		ctxs = append(ctxs, [2]int{lo, lo + n})
		lo += n
	}
	if lo != size || own < 0 || own >= len(ctxs) || rank < ctxs[own][0] || rank >= ctxs[own][1] {
		return nil, 0, false
	}
	return ctxs, own, true
}
