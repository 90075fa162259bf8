// Package sysmon keeps the Go runtime's monitor thread (sysmon) from
// preempting the threads that run kernels.
//
// Whenever a thread enters the library after all of its Go threads were
// idle, sysmon wakes from its deep sleep and polls every 20 µs for about
// the next millisecond, or longer while a thread stays in a call into C
// (as a thread running a kernel does). When every core runs a kernel
// thread, each of those wake-ups preempts one of them: on a 2-core machine
// that costs a memory-bound kernel about a fifth of its speed
// (docs/benchmarks.md). Relax finds the sysmon thread and makes it
// SCHED_BATCH: the kernel then no longer lets its wake-ups preempt a
// running thread; it runs at the next scheduler tick or on an idle core,
// and none of its work (retaking Ps from long calls, preempting long
// goroutines, forcing a periodic GC) needs to be sooner than that.
//
// sysmon is recognised as the only thread that sleeps in nanosleep called
// from this object's code (Go's usleep, which sysmon sleeps in between its
// rounds) in at least two of 40 samples 50 µs apart (and no other thread is); nothing is changed
// unless exactly one thread matches, and only a SCHED_OTHER thread is
// changed. The call into C that samples wakes sysmon if it was in its
// deep sleep, so it is seen.
package sysmon

/*
#include "sysmon.h"
*/
import "C"

import (
	"sync"

	"github.com/liboffload-go/liboffload-go/internal/fault"
)

var (
	mu       sync.Mutex
	done     bool // sysmon found and relaxed (or cannot be)
	attempts int
	tid      int
)

// maxAttempts bounds the scans of a process: sysmon is caught only while
// it polls, and a loaded machine can keep it runnable (not sleeping)
// through a whole scan.
const maxAttempts = 4

// Relax looks for sysmon (sampling for about 2 ms) and makes it
// SCHED_BATCH, once per process; it gives up early when stop (if not nil)
// returns true between samples. It returns sysmon's thread id when that
// is done, else 0.
func Relax(stop func() bool) int {
	mu.Lock()
	defer mu.Unlock()
	fault.Point()
	if done || attempts >= maxAttempts {
		return tid
	}
	attempts++
	return relaxLocked(scanSamples, stop)
}

const scanSamples = 40

func relaxLocked(samples int, stop func() bool) int {
	t := find(samples, stop)
	if t == 0 {
		return 0
	}
	done = true
	if C.ol_sysmon_batch(C.int(t)) == 0 {
		tid = t
	}
	return tid
}

// find samples the threads 50 µs apart, each sample its own call into C
// (entering C wakes sysmon if it has gone to its deep sleep), and returns
// the one thread seen in nanosleep from this object's code at least twice,
// if no other was; else 0.
func find(samples int, stop func() bool) int {
	const max = 16
	var tids, counts [max]C.int
	n := C.int(0)
	for i := 0; i < samples; i++ {
		if stop != nil && stop() {
			return 0
		}
		n = C.ol_sysmon_sample(50, &tids[0], &counts[0], n, max)
	}
	found := 0
	for i := 0; i < int(n); i++ {
		if counts[i] < 2 {
			continue
		}
		if found != 0 {
			return 0
		}
		found = int(tids[i])
	}
	return found
}

// policy returns thread tid's scheduling policy (sched_getscheduler), or -1.
func policy(tid int) int { return int(C.ol_sysmon_policy(C.int(tid))) }

// gettid returns the calling thread's id.
func gettid() int { return int(C.ol_sysmon_gettid()) }

// sleepMS sleeps in C, holding the calling goroutine's P in a call into C.
func sleepMS(ms int) { C.ol_sysmon_sleep_ms(C.int(ms)) }
