package mpi

/*
#include "olmpi.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// At the exit of a process that initialised MPI through this package,
// MPI_Finalize must run, or Open MPI's mpirun calls the exit abnormal and
// ends the whole job (without --enable-recovery). But Open MPI's
// MPI_Finalize waits until every rank of the job finalizes: the proxies
// must first be told that this client is done. AtExit lets the remote
// plugin do that (hooks), then finalizes, waiting at most its bound.
var atExit struct {
	mu    sync.Mutex
	hooks []func()
	bound time.Duration
}

// AtExit registers hook to run when the process exits through the C
// library's exit (an application returning from main, Python ending;
// not Go's os.Exit), before MPI_Finalize, which this package then calls
// if it initialised MPI, waiting at most bound (the last bound given) for
// the other ranks to finalize; past it the process exits without.
func AtExit(hook func(), bound time.Duration) {
	atExit.mu.Lock()
	if hook != nil {
		atExit.hooks = append(atExit.hooks, hook)
	}
	atExit.bound = bound
	atExit.mu.Unlock()
	C.olm_register_atexit()
}

//export olmpiAtExit
func olmpiAtExit() {
	atExit.mu.Lock()
	hooks, bound := atExit.hooks, atExit.bound
	atExit.hooks = nil
	atExit.mu.Unlock()
	for i := len(hooks) - 1; i >= 0; i-- {
		func() {
			defer func() {
				if r := recover(); r != nil {
					fmt.Fprintln(os.Stderr, "liboffload-go: remote: exit hook:", r)
				}
			}()
			hooks[i]()
		}()
	}
	state.mu.Lock()
	open := state.open
	state.mu.Unlock()
	if open {
		// an Endpoint still open: nothing may run on it after Finalize
		return
	}
	if err := FinalizeWithin(bound); err != nil {
		fmt.Fprintln(os.Stderr, "liboffload-go: remote:", err)
	}
}

// FinalizeWithin is Finalize waiting at most bound: Open MPI's
// MPI_Finalize waits for every rank of the job, and one that never
// finalizes (a rank that died, an application that exits without) may
// keep it waiting for good (seen: a proxy beside one killed by
// remotefault, on a loaded machine, until the job's bound). Past the
// bound it returns an error and MPI_Finalize goes on in the background:
// only a process about to exit may call it.
func FinalizeWithin(bound time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- Finalize() }()
	select {
	case err := <-done:
		return err
	case <-time.After(bound):
		return fmt.Errorf("MPI_Finalize did not return within %v (a rank of the job that never finalizes): exiting without it", bound)
	}
}

// exitC ends the process through the C library's exit.
func exitC(code int) { C.olm_exit(C.int(code)) }
