package link

import (
	"runtime"
	"sort"
	"sync/atomic"
	"testing"
	"time"
)

// TestNapGivesUpTheProcessor: with one processor (a rank bound to one
// core), a goroutine napping lets another run meanwhile. A nap in
// nanosleep kept the processor: the other goroutine ran during a nap only
// when Go's monitor thread took the processor back (in 0-10% of 20 µs
// naps here; with the nap parking, in all of them).
func TestNapGivesUpTheProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var stop atomic.Bool
	var turns atomic.Int64 // the other goroutine's loops
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			turns.Add(1)
			runtime.Gosched()
		}
	}()
	const naps = 500
	shared := 0
	for range naps {
		before := turns.Load()
		Nap(20 * time.Microsecond)
		if turns.Load() != before {
			shared++
		}
		runtime.Gosched()
	}
	stop.Store(true)
	<-done
	t.Logf("another goroutine ran during %d of %d naps", shared, naps)
	if shared < naps/2 {
		t.Errorf("another goroutine ran during %d of %d naps: the nap kept the processor", shared, naps)
	}
}

// TestNapWakesOnTime: a short nap in an otherwise idle process ends about
// when asked. A Go timer alone woke 1 ms late at best there (Go's poller
// waits in whole milliseconds, with one processor); the timerfd ends
// that wait.
func TestNapWakesOnTime(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // a rank bound to a core
	const n = 51
	var took []time.Duration
	for range n {
		t0 := time.Now()
		Nap(20 * time.Microsecond)
		took = append(took, time.Since(t0))
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	if med := took[n/2]; med >= 900*time.Microsecond {
		t.Errorf("naps of 20 µs took %v (median; fastest %v): woken by the poller's millisecond timeout, not the timerfd", med, took[0])
	}
}
