package link

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
)

// Backoff paces a loop that polls for messages (MPI's blocking calls spin,
// so nothing blocks in MPI). It polls without sleeping while the
// transport is busy: within Spin (OFFLOAD_REMOTE_SPIN) of the wait's first
// pause, or of the last pause that saw Activity change. Between those
// polls it yields the processor, to the process's other goroutines and
// then to other processes: with more ranks than cores, the peer it waits
// for may need this core. Past Spin it sleeps, from 20 µs doubling to
// 1 ms, but at most an eighth of the time idle so far: an idle rank costs
// little CPU, a busy one answers within microseconds, and a message after
// a long idle time is noticed late by at most about an eighth of it.
//
// The zero Backoff is ready; it reads the clock only when it pauses, so a
// wait whose message is already there costs no clock read.
type Backoff struct {
	Spin time.Duration
	// Activity (nil: none) counts the messages sent and received: a
	// counter, not a time, so that a message costs no clock read.
	Activity *atomic.Int64
	// Due (nil: never) counts answers this process waits for; while it is
	// above 0 each sleep is at most DueNap.
	Due     *atomic.Int32
	started bool
	from    time.Duration // Now at the first pause, or when Activity last changed
	seen    int64         // Activity then
	sleep   time.Duration
}

// epoch anchors Now.
var epoch = time.Now()

// Now is the time since the process started, on the monotonic clock: for
// waits and ages. It costs one clock read where time.Now costs two (the
// wall clock too): 28 against 55 ns under KVM, and a round trip read the
// clock about ten times.
func Now() time.Duration { return time.Since(epoch) }

// At is t on Now's scale, without reading the clock (t must hold a
// monotonic reading: from time.Now, not a parsed or Unix time).
func At(t time.Time) time.Duration { return t.Sub(epoch) }

// HotSpin is how long after the last message a wait polls without
// yielding its thread: a reply due within a few round trips is noticed at
// once (sched_yield cost 1-2 µs a poll here, and a poll that yields each
// time noticed a reply 1.8 µs late on average).
const HotSpin = 50 * time.Microsecond

const (
	sleepMin = 20 * time.Microsecond
	sleepMax = time.Millisecond
)

// DueNap bounds the sleeps of a process that waits for an answer (a
// call's reply, a copy's PeerDone) past its spin, as after a long copy or
// kernel: naps of up to 1 ms noticed such an answer 1-2.5 ms after it was
// sent, 7-10% of a 256 MiB copy between proxies. Four times as many
// wake-ups while an answer is due cost little.
const DueNap = 250 * time.Microsecond

// Pause waits a little before the next poll; false once deadline passed
// (a zero deadline never passes).
func (b *Backoff) Pause(deadline time.Time) bool {
	now := Now()
	if !deadline.IsZero() && now >= At(deadline) {
		return false
	}
	var seen int64
	if b.Activity != nil {
		seen = b.Activity.Load()
	}
	if !b.started || seen != b.seen {
		b.started, b.from, b.seen = true, now, seen
	}
	idle := now - b.from
	if idle < b.Spin {
		b.sleep = 0
		if idle < HotSpin {
			runtime.Gosched()
		} else {
			Yield()
		}
		return true
	}
	d := b.nap(idle)
	if !deadline.IsZero() {
		d = min(d, At(deadline)-now+time.Microsecond)
	}
	Nap(d)
	return true
}

// nap is the next sleep of a wait idle for idle past its spin time.
func (b *Backoff) nap(idle time.Duration) time.Duration {
	if b.sleep == 0 {
		b.sleep = sleepMin
	} else {
		b.sleep = min(2*b.sleep, sleepMax)
	}
	d := max(sleepMin, min(b.sleep, idle/8))
	if b.Due != nil && b.Due.Load() > 0 {
		d = min(d, DueNap)
	}
	return d
}

// Yield lets the process's other goroutines run, then other threads.
func Yield() {
	runtime.Gosched()
	syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
}

// YieldThread lets other threads run without Go's scheduler, for a
// goroutine that may be locked to its thread (a C thread's call into the
// library): there runtime.Gosched hands the thread's processor to another
// thread and takes it back, two thread wake-ups each time.
func YieldThread() {
	syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
}
