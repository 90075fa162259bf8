// Package pinned keeps the reference-counted host ranges of olMemRegister
// for a device: registering a range inside a registered one adds a user, a
// partial overlap is refused, and the last olMemUnregister of a range
// releases it. Backends call the driver only for the first and the last.
package pinned

import (
	"sort"
	"sync"

	"github.com/liboffload-go/liboffload-go/api/ol"
)

type rng struct {
	start, end uint64
	users      int
}

// Ranges is a device's registered ranges; the zero value is empty.
type Ranges struct {
	mu     sync.Mutex
	sorted []*rng // by start
}

// Add registers [ptr, ptr+size). first reports a new range (the backend
// locks it now, and calls Drop if that fails); otherwise ptr lies inside a
// registered range, which has one more user.
func (r *Ranges) Add(ptr uintptr, size uint64) (first bool, err error) {
	start, end := uint64(ptr), uint64(ptr)+size
	if end < start {
		return false, ol.Errorf(ol.ErrcInvalidSize, "Ptr %#x + Size %d wraps around the end of the address space", start, size)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	i := sort.Search(len(r.sorted), func(i int) bool { return r.sorted[i].end > start })
	if i < len(r.sorted) && r.sorted[i].start < end {
		p := r.sorted[i]
		if p.start <= start && end <= p.end {
			p.users++
			return false, nil
		}
		return false, ol.Errorf(ol.ErrcInvalidArgument, "partial overlapping not allowed in locked buffers: [%#x, %#x) overlaps the registered [%#x, %#x)", start, end, p.start, p.end)
	}
	r.sorted = append(r.sorted, nil)
	copy(r.sorted[i+1:], r.sorted[i:])
	r.sorted[i] = &rng{start: start, end: end, users: 1}
	return true, nil
}

// Drop forgets the range that starts at ptr whatever its users (a lock
// that failed).
func (r *Ranges) Drop(ptr uintptr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, p := range r.sorted {
		if p.start == uint64(ptr) {
			r.sorted = append(r.sorted[:i], r.sorted[i+1:]...)
			return
		}
	}
}

// Remove drops one user of the range that contains ptr. last reports that
// it was the last one: the backend unlocks the range, which starts at start.
func (r *Ranges) Remove(ptr uintptr) (last bool, start uintptr, err error) {
	a := uint64(ptr)
	r.mu.Lock()
	defer r.mu.Unlock()
	i := sort.Search(len(r.sorted), func(i int) bool { return r.sorted[i].end > a })
	if i == len(r.sorted) || r.sorted[i].start > a {
		return false, 0, ol.Errorf(ol.ErrcInvalidArgument, "cannot find locked buffer: %#x was not registered with olMemRegister", a)
	}
	p := r.sorted[i]
	if p.users--; p.users > 0 {
		return false, 0, nil
	}
	r.sorted = append(r.sorted[:i], r.sorted[i+1:]...)
	return true, uintptr(p.start), nil
}

// Len is the number of registered ranges.
func (r *Ranges) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sorted)
}

// Reset forgets every range (the device is shutting down).
func (r *Ranges) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sorted = nil
}
