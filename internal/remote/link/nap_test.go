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
// nanosleep kept the processor, and the other goroutine waited for it.
func TestNapGivesUpTheProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var stop atomic.Bool
	var ran atomic.Int64 // nanoseconds the other goroutine ran within naps
	done := make(chan struct{})
	var inNap atomic.Bool
	go func() {
		defer close(done)
		last := time.Now()
		for !stop.Load() {
			now := time.Now()
			if inNap.Load() && now.Sub(last) < 100*time.Microsecond {
				ran.Add(int64(now.Sub(last)))
			}
			last = now
			runtime.Gosched()
		}
	}()
	const naps, each = 500, 20 * time.Microsecond
	start := time.Now()
	for range naps {
		inNap.Store(true)
		Nap(each)
		inNap.Store(false)
		runtime.Gosched()
	}
	total := time.Since(start)
	stop.Store(true)
	<-done
	// the other goroutine should have run through much of each nap
	// (measured: over half of the time here; a nap in nanosleep let it
	// run 0-10%, whenever Go's monitor thread took the processor back)
	if got := time.Duration(ran.Load()); got < total/4 {
		t.Errorf("another goroutine ran %v during %d naps of %v (%v in all): the nap kept the processor", got, naps, each, total)
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
