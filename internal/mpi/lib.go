// Package mpi is the remote platform's transport over Open MPI: a
// link.Endpoint between the ranks of an MPI job (docs/remote.md).
//
// Open MPI is loaded at run time (dlopen of libmpi.so.40, RTLD_LOCAL; its
// ABI is declared in olmpi.h), so that building and loading the library
// never needs MPI; nothing here runs until Open is called.
//
// The transport uses MPI_COMM_WORLD with tags of its own (TagBase and
// up): a private communicator (MPI_Comm_dup) is collective over every
// rank, and ranks that never offload would never join it. An application
// that also uses MPI_COMM_WORLD must keep off these tags and must not
// receive with MPI_ANY_TAG on it.
package mpi

/*
#cgo LDFLAGS: -ldl
#include "olmpi.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/internal/cmem"
)

// Thread support levels (MPI_THREAD_*; Open MPI's enum order).
var threadLevels = []string{"MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE"}

const threadMultiple = 3

func levelName(l int) string {
	if l >= 0 && l < len(threadLevels) {
		return threadLevels[l]
	}
	return fmt.Sprintf("thread level %d", l)
}

// The process's MPI: loaded once, initialised once (MPI cannot be
// initialised again after MPI_Finalize), kept until the process exits
// unless Finalize is called.
var state struct {
	mu      sync.Mutex
	loaded  string // the library loaded, "" before
	loadErr error
	inited  bool // MPI usable at MULTIPLE
	ours    bool // this package called MPI_Init_thread
	final   bool // Finalize ran
	fin     chan chan error
	rank    int
	size    int
	host    string
	open    bool // an Endpoint is open
}

func mpiError(call string, rc C.int) error {
	var buf [300]C.char
	C.olm_error_string(rc, &buf[0], C.size_t(len(buf)))
	return fmt.Errorf("mpi: %s: %s", call, C.GoString(&buf[0]))
}

// Available reports whether the Open MPI library can be loaded (lib ""
// is DefaultLibrary); the error says why not. It does not initialise MPI.
func Available(lib string) error {
	state.mu.Lock()
	defer state.mu.Unlock()
	return loadLocked(lib)
}

func loadLocked(lib string) error {
	if lib == "" {
		lib = DefaultLibrary
	}
	if state.loaded != "" {
		if state.loaded != lib {
			return fmt.Errorf("mpi: %s is loaded already; %s cannot be loaded beside it", state.loaded, lib)
		}
		return nil
	}
	var buf [512]C.char
	if C.olm_load((*C.char)(cmem.CName(lib)), &buf[0], C.size_t(len(buf))) != 0 {
		// dlopen may succeed later (a library path set up by then): not kept
		return fmt.Errorf("mpi: cannot load Open MPI: %s", C.GoString(&buf[0]))
	}
	state.loaded = lib
	return nil
}

// initLocked makes MPI usable at MPI_THREAD_MULTIPLE: initialises it when
// nobody has, or checks the level the application initialised it with.
func initLocked(lib string) error {
	if err := loadLocked(lib); err != nil {
		return err
	}
	if state.final {
		return fmt.Errorf("mpi: MPI was finalized in this process and cannot be initialised again")
	}
	if state.inited {
		return nil
	}
	var fin C.int
	if rc := C.olm_finalized(&fin); rc != 0 {
		return mpiError("MPI_Finalized", rc)
	}
	if fin != 0 {
		return fmt.Errorf("mpi: the application finalized MPI; it cannot be initialised again")
	}
	var flag C.int
	if rc := C.olm_initialized(&flag); rc != 0 {
		return mpiError("MPI_Initialized", rc)
	}
	if flag != 0 {
		var lvl C.int
		if rc := C.olm_query_thread(&lvl); rc != 0 {
			return mpiError("MPI_Query_thread", rc)
		}
		if lvl < threadMultiple {
			return fmt.Errorf("mpi: the application initialised MPI with %s; the remote platform needs MPI_THREAD_MULTIPLE (MPI_Init_thread with MPI_THREAD_MULTIPLE)", levelName(int(lvl)))
		}
	} else {
		// MPI_Finalize belongs on the thread that initialised MPI: that
		// thread stays locked to a goroutine that waits for Finalize.
		started := make(chan error)
		state.fin = make(chan chan error)
		go mpiThread(started, state.fin)
		if err := <-started; err != nil {
			state.fin = nil
			return err
		}
		state.ours = true
	}
	var rank, size C.int
	if rc := C.olm_world(&rank, &size); rc != 0 {
		return mpiError("MPI_Comm_rank", rc)
	}
	var name [512]C.char
	var n C.int
	host := "unknown host"
	if C.olm_processor_name(&name[0], &n) == 0 && n > 0 && int(n) < len(name) {
		host = C.GoStringN(&name[0], n)
	}
	state.rank, state.size, state.host, state.inited = int(rank), int(size), host, true
	return nil
}

func mpiThread(started chan<- error, fin <-chan chan error) {
	runtime.LockOSThread() // never unlocked: the thread is MPI's main thread
	var lvl C.int
	if rc := C.olm_init_thread(threadMultiple, &lvl); rc != 0 {
		started <- mpiError("MPI_Init_thread", rc)
		return
	}
	// errors come back as codes rather than ending the job (only on the
	// MPI this package initialised: an application's setting is its own)
	if rc := C.olm_errors_return(); rc != 0 {
		started <- mpiError("MPI_Comm_set_errhandler", rc)
		return
	}
	if lvl < threadMultiple {
		started <- fmt.Errorf("mpi: Open MPI offers %s only; the remote platform needs MPI_THREAD_MULTIPLE (an Open MPI built with thread support)", levelName(int(lvl)))
		return
	}
	started <- nil
	reply := <-fin
	if rc := C.olm_finalize(); rc != 0 {
		reply <- mpiError("MPI_Finalize", rc)
		return
	}
	reply <- nil
}

// Finalize calls MPI_Finalize if this package initialised MPI (an
// application's MPI is the application's to finalize). Only a process
// that will use MPI no more may call it (offload-proxy at its end): MPI
// cannot be initialised again. Open MPI's MPI_Finalize waits for every
// rank of the job to finalize too.
func Finalize() error {
	state.mu.Lock()
	defer state.mu.Unlock()
	if state.open {
		return fmt.Errorf("mpi: Finalize with an Endpoint open")
	}
	if !state.ours || state.final {
		return nil
	}
	reply := make(chan error)
	state.fin <- reply
	err := <-reply
	state.final, state.inited = true, false
	return err
}

// World returns this process's rank, the job's size and this machine's
// name, initialising MPI as Open does.
func World(lib string) (rank, size int, host string, err error) {
	state.mu.Lock()
	defer state.mu.Unlock()
	if err := initLocked(lib); err != nil {
		return 0, 0, "", err
	}
	return state.rank, state.size, state.host, nil
}

// C memory that MPI may still read or write (a request that never
// completed): never freed, never reused. Pinned Go memory likewise stays
// pinned.
var abandoned struct {
	mu      sync.Mutex
	pinners []*runtime.Pinner
	bufs    []unsafe.Pointer
}

func abandon(p *runtime.Pinner, buf unsafe.Pointer) {
	abandoned.mu.Lock()
	defer abandoned.mu.Unlock()
	if p != nil {
		abandoned.pinners = append(abandoned.pinners, p)
	}
	if buf != nil {
		abandoned.bufs = append(abandoned.bufs, buf)
	}
}

// initApp initialises MPI as an application would, at level (the tests'
// stand-in for an application that called MPI_Init_thread itself).
func initApp(lib string, level int) (int, error) {
	state.mu.Lock()
	defer state.mu.Unlock()
	if err := loadLocked(lib); err != nil {
		return 0, err
	}
	var got C.int
	if rc := C.olm_init_thread(C.int(level), &got); rc != 0 {
		return 0, mpiError("MPI_Init_thread", rc)
	}
	return int(got), nil
}
