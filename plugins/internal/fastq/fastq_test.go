package fastq

import (
	"runtime"
	"testing"
	"time"
	"unsafe"
)

// A state starts zeroed, its idle mark never goes down, its stop reasons
// are separate bits; a recycled block starts zeroed again.
func TestState(t *testing.T) {
	s := New(24, nil, nil)
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
		d := New(0, nil, nil)
		d.Begun.Add(7)
		d.Stop(Failed)
	}
	for range 50 {
		runtime.GC()
		time.Sleep(time.Millisecond) // cleanups run on their own goroutine
		n := New(0, nil, nil)
		if b, _ := n.Submitted(); b != 0 || n.Stopped(Held|Failed) {
			t.Fatal("a recycled block was not zeroed")
		}
	}
	runtime.KeepAlive(s)
}

// stand-ins for a plugin's C functions: never called, only told apart
// (package variables, which the garbage collector neither moves nor frees)
var fakeCopy, fakeLaunch byte

// A block of a queue that takes C submissions is recycled only for such a
// queue, with its counts: a submission pair a late C path makes on it (one
// that loaded the block before its queue was released) never leaves the
// next queue with begun and handed apart. The next queue starts seen idle,
// with its copy and launch functions and zeroed extra bytes.
func TestSubmittingBlocksKeepTheirCounts(t *testing.T) {
	copyFn, launchFn := unsafe.Pointer(&fakeCopy), unsafe.Pointer(&fakeLaunch)
	var dirty []unsafe.Pointer
	for range 64 {
		d := New(16, copyFn, nil)
		d.Begun.Add(5)  // begun by a late path before the recycling
		d.Handed.Add(4) // ... its end comes after
		d.Stop(Failed)
		*(*uint64)(d.Extra) = 99
		dirty = append(dirty, d.Ptr())
	}
	var got *State
	for range 100 {
		runtime.GC()
		time.Sleep(time.Millisecond)
		n := New(16, nil, launchFn)
		for _, p := range dirty {
			if n.Ptr() == p {
				got = n
			}
		}
		if got != nil {
			break
		}
		z := New(0, nil, nil) // a plain queue never gets such a block
		for _, p := range dirty {
			if z.Ptr() == p {
				t.Fatal("a block of a submitting queue was given to a queue without C submissions")
			}
		}
	}
	if got == nil {
		t.Fatal("no block of a submitting queue was recycled")
	}
	if got.Stopped(Held|Failed) || *(*uint64)(got.Extra) != 0 || got.c.copy != nil || got.c.launch != (*[0]byte)(launchFn) {
		t.Fatal("the recycled block kept its stop reasons, extra bytes or functions")
	}
	got.Handed.Add(1) // the late path's end
	if b, whole := got.Submitted(); !whole || !got.IdleAt(b) {
		t.Fatalf("the next queue is not seen idle once the late pair ends (begun %d, whole %v)", b, whole)
	}
}
