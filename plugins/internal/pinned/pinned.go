// Package pinned keeps the reference-counted host ranges of olMemRegister
// for a device: registering a range inside a registered one adds a user, a
// partial overlap is refused, and the last olMemUnregister of a range
// releases it. Backends call the driver only for the first and the last.
// Each range carries a value of the backend's (V: what the driver said when
// the range was locked; struct{} when there is nothing to keep).
package pinned

import (
	"sort"
	"sync"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/fault"
)

type rng[V any] struct {
	start, end uint64
	users      int
	val        V
}

// Ranges is a device's registered ranges; the zero value is empty.
type Ranges[V any] struct {
	mu     sync.Mutex
	sorted []*rng[V] // by start
}

// Add registers [ptr, ptr+size). first reports a new range (the backend
// locks it now, and calls Drop if that fails); otherwise ptr lies inside a
// registered range, which has one more user. The new range's value is the
// zero V.
func (r *Ranges[V]) Add(ptr uintptr, size uint64) (first bool, err error) {
	first, _, _, err = r.add(ptr, size, nil)
	return first, err
}

// AddLocked is Add for a backend that keeps a value per range: lock locks
// a new range and returns its value, under the one mutex of r, so that a
// registration inside the range, which returns the start and value of the
// range that contains ptr, waits for it. A new range whose lock fails is
// not added.
func (r *Ranges[V]) AddLocked(ptr uintptr, size uint64, lock func() (V, error)) (start uintptr, val V, err error) {
	_, start, val, err = r.add(ptr, size, lock)
	return start, val, err
}

func (r *Ranges[V]) add(ptr uintptr, size uint64, lock func() (V, error)) (first bool, at uintptr, val V, err error) {
	start, end := uint64(ptr), uint64(ptr)+size
	if end < start {
		return false, 0, val, ol.Errorf(ol.ErrcInvalidSize, "Ptr %#x + Size %d wraps around the end of the address space", start, size)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fault.Point()
	i := sort.Search(len(r.sorted), func(i int) bool { return r.sorted[i].end > start })
	if i < len(r.sorted) && r.sorted[i].start < end {
		p := r.sorted[i]
		if p.start <= start && end <= p.end {
			p.users++
			return false, uintptr(p.start), p.val, nil
		}
		return false, 0, val, ol.Errorf(ol.ErrcInvalidArgument, "partial overlapping not allowed in locked buffers: [%#x, %#x) overlaps the registered [%#x, %#x)", start, end, p.start, p.end)
	}
	if lock != nil {
		if val, err = lock(); err != nil {
			return false, 0, val, err
		}
	}
	r.sorted = append(r.sorted, nil)
	copy(r.sorted[i+1:], r.sorted[i:])
	r.sorted[i] = &rng[V]{start: start, end: end, users: 1, val: val}
	return true, ptr, val, nil
}

// Drop forgets the range that starts at ptr whatever its users (a lock
// that failed).
func (r *Ranges[V]) Drop(ptr uintptr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fault.Point()
	for i, p := range r.sorted {
		if p.start == uint64(ptr) {
			r.sorted = append(r.sorted[:i], r.sorted[i+1:]...)
			return
		}
	}
}

// Remove drops one user of the range that contains ptr. last reports that
// it was the last one: the backend unlocks the range, which starts at
// start and had the value val.
func (r *Ranges[V]) Remove(ptr uintptr) (last bool, start uintptr, val V, err error) {
	a := uint64(ptr)
	r.mu.Lock()
	defer r.mu.Unlock()
	fault.Point()
	i := sort.Search(len(r.sorted), func(i int) bool { return r.sorted[i].end > a })
	if i == len(r.sorted) || r.sorted[i].start > a {
		return false, 0, val, ol.Errorf(ol.ErrcInvalidArgument, "cannot find locked buffer: %#x was not registered with olMemRegister", a)
	}
	p := r.sorted[i]
	if p.users--; p.users > 0 {
		return false, 0, val, nil
	}
	r.sorted = append(r.sorted[:i], r.sorted[i+1:]...)
	return true, uintptr(p.start), p.val, nil
}

// Len is the number of registered ranges.
func (r *Ranges[V]) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	fault.Point()
	return len(r.sorted)
}

// Reset forgets every range (the device is shutting down), calling each
// (if not nil) with the start and value of every range first, under the
// mutex of r.
func (r *Ranges[V]) Reset(each func(start uintptr, val V)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fault.Point()
	if each != nil {
		for _, p := range r.sorted {
			each(uintptr(p.start), p.val)
		}
	}
	r.sorted = nil
}
