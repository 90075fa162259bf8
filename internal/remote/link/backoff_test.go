package link

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestBackoffIdle: an idle wait sleeps (little CPU) and ends at its deadline.
func TestBackoffIdle(t *testing.T) {
	b := Backoff{Spin: time.Millisecond}
	deadline := time.Now().Add(50 * time.Millisecond)
	n := 0
	for b.Pause(deadline) {
		n++
	}
	if late := time.Since(deadline); late > 20*time.Millisecond {
		t.Errorf("ended %v after its deadline", late)
	}
	// a busy spin would poll millions of times in 50 ms
	if n > 20000 {
		t.Errorf("%d polls in 50 ms: spinning, not sleeping", n)
	}
}

// TestBackoffSpinsWhileBusy: a wait does not sleep within the spin time
// of the last message (a change of Activity), however long it has
// waited, and sleeps past it.
func TestBackoffSpinsWhileBusy(t *testing.T) {
	var activity atomic.Int64
	b := Backoff{Spin: 20 * time.Millisecond, Activity: &activity}
	b.Pause(time.Time{})
	for range 3 {
		time.Sleep(30 * time.Millisecond) // past the spin time of the start,
		activity.Add(1)                   // but a message came
		b.Pause(time.Time{})
		if b.sleep != 0 {
			t.Fatalf("slept %v right after a message", b.sleep)
		}
	}
	time.Sleep(30 * time.Millisecond)
	b.Pause(time.Time{})
	if b.sleep == 0 {
		t.Fatalf("a wait idle for 30 ms past a 20 ms spin time did not sleep")
	}
	// with no spin time (OFFLOAD_REMOTE_SPIN=0) it sleeps at once
	c := Backoff{Activity: &activity}
	activity.Add(1)
	c.Pause(time.Time{})
	if c.sleep == 0 {
		t.Fatalf("a wait with no spin time did not sleep")
	}
}

// TestBackoffNapsShortWhileDue: past the spin time naps grow to 1 ms,
// but while an answer is due (Due above 0) to DueNap at most, and back
// once nothing is due.
func TestBackoffNapsShortWhileDue(t *testing.T) {
	var due atomic.Int32
	b := Backoff{Due: &due}
	longest := func() time.Duration {
		var m time.Duration
		for range 20 {
			m = max(m, b.nap(time.Hour))
		}
		return m
	}
	if m := longest(); m != sleepMax {
		t.Fatalf("idle naps grew to %v, want %v", m, sleepMax)
	}
	due.Add(1)
	if m := longest(); m != DueNap {
		t.Fatalf("naps while an answer is due grew to %v, want %v", m, DueNap)
	}
	due.Add(-1)
	if m := longest(); m != sleepMax {
		t.Fatalf("naps once nothing is due grew to %v, want %v", m, sleepMax)
	}
}
