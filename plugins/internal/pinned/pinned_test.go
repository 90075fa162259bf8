package pinned

import (
	"errors"
	"testing"
	"time"
)

// A registration inside a range whose first registration is still locking
// it waits for the lock and gets the range's value (before, it could see
// the range without its value and return the host address).
func TestAddLockedWaitsForTheFirstRegistration(t *testing.T) {
	var r Ranges[uintptr]
	entered, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, _, err := r.AddLocked(0x1000, 0x1000, func() (uintptr, error) {
			close(entered)
			<-release
			return 0xa000, nil
		})
		first <- err
	}()
	<-entered
	type result struct {
		start, val uintptr
		err        error
	}
	inner := make(chan result, 1)
	go func() {
		start, val, err := r.AddLocked(0x1800, 0x10, func() (uintptr, error) {
			t.Error("the inner registration locked a range of its own")
			return 0, nil
		})
		inner <- result{start, val, err}
	}()
	select {
	case res := <-inner:
		t.Fatalf("the inner registration returned %+v while the range was still being locked", res)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if res := <-inner; res.err != nil || res.start != 0x1000 || res.val != 0xa000 {
		t.Errorf("inner registration: %+v, want start 0x1000 and value 0xa000", res)
	}
	// two users: the first Remove keeps the range, the second returns it
	if last, _, _, err := r.Remove(0x1800); err != nil || last {
		t.Errorf("first Remove: last %v, %v", last, err)
	}
	if last, start, val, err := r.Remove(0x1000); err != nil || !last || start != 0x1000 || val != 0xa000 {
		t.Errorf("second Remove: last %v start %#x value %#x, %v", last, start, val, err)
	}
	if r.Len() != 0 {
		t.Errorf("%d ranges left", r.Len())
	}
}

// A new range whose lock fails is not added; Reset reports every range.
func TestAddLockedFailureAndReset(t *testing.T) {
	var r Ranges[int]
	boom := errors.New("boom")
	if _, _, err := r.AddLocked(0x1000, 0x100, func() (int, error) { return 0, boom }); err != boom || r.Len() != 0 {
		t.Errorf("failed lock: %v, %d ranges", err, r.Len())
	}
	for i, p := range []uintptr{0x1000, 0x3000} {
		if _, _, err := r.AddLocked(p, 0x100, func() (int, error) { return i + 1, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := r.AddLocked(0x10f0, 0x20, func() (int, error) { return 9, nil }); err == nil {
		t.Error("a partial overlap was accepted")
	}
	got := map[uintptr]int{}
	r.Reset(func(start uintptr, v int) { got[start] = v })
	if len(got) != 2 || got[0x1000] != 1 || got[0x3000] != 2 || r.Len() != 0 {
		t.Errorf("Reset saw %v, %d ranges left", got, r.Len())
	}
}
