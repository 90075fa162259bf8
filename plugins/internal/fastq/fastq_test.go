package fastq

import (
	"runtime"
	"testing"
	"time"
)

// A state starts zeroed, its idle mark never goes down, its stop reasons
// are separate bits; a recycled block starts zeroed again.
func TestState(t *testing.T) {
	s := New(24)
	if b, whole := s.Submitted(); b != 0 || !whole || !s.IdleAt(0) || s.Stopped(Held|Failed) {
		t.Fatal("a new state is not zeroed")
	}
	s.Begun.Add(3)
	if _, whole := s.Submitted(); whole {
		t.Fatal("3 begun, none handed: not whole")
	}
	s.Handed.Add(3)
	s.SawIdle(3)
	s.SawIdle(2)
	if !s.IdleAt(3) {
		t.Fatal("the idle mark went down")
	}
	s.Stop(Held)
	s.Stop(Failed)
	s.Go(Held)
	if s.Stopped(Held) || !s.Stopped(Failed) {
		t.Fatal("stop reasons are not separate")
	}
	// dirty blocks go back to the pool once unreachable
	for range 64 {
		d := New(0)
		d.Begun.Add(7)
		d.Stop(Failed)
	}
	for range 50 {
		runtime.GC()
		time.Sleep(time.Millisecond) // cleanups run on their own goroutine
		n := New(0)
		if b, _ := n.Submitted(); b != 0 || n.Stopped(Held|Failed) {
			t.Fatal("a recycled block was not zeroed")
		}
	}
	runtime.KeepAlive(s)
}
