package host

import (
	"sort"

	"github.com/liboffload-go/liboffload-go/api/ol"
)

// pinned is a registered host range with the number of registrations that
// fall inside it.
type pinned struct {
	start, end uint64
	users      int
}

// Register implements plugin.Device. Host memory is already usable by the
// host device; registration only keeps the reference-counted book LLVM
// keeps: the same or a contained range adds a user, a partial overlap is
// refused. The device address is the host address.
func (d *Device) Register(ptr uintptr, size uint64) (uintptr, error) {
	start, end := uint64(ptr), uint64(ptr)+size
	if end < start {
		return 0, ol.Errorf(ol.ErrcInvalidSize, "Ptr %#x + Size %d wraps around the end of the address space", start, size)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	i := sort.Search(len(d.pinned), func(i int) bool { return d.pinned[i].end > start })
	if i < len(d.pinned) && d.pinned[i].start < end {
		p := d.pinned[i]
		if p.start <= start && end <= p.end {
			p.users++
			return ptr, nil
		}
		return 0, ol.Errorf(ol.ErrcInvalidArgument, "partial overlapping not allowed in locked buffers: [%#x, %#x) overlaps the registered [%#x, %#x)", start, end, p.start, p.end)
	}
	d.pinned = append(d.pinned, nil)
	copy(d.pinned[i+1:], d.pinned[i:])
	d.pinned[i] = &pinned{start: start, end: end, users: 1}
	return ptr, nil
}

// Unregister implements plugin.Device: drops one user of the range that
// contains ptr.
func (d *Device) Unregister(ptr uintptr) error {
	a := uint64(ptr)
	d.mu.Lock()
	defer d.mu.Unlock()
	i := sort.Search(len(d.pinned), func(i int) bool { return d.pinned[i].end > a })
	if i == len(d.pinned) || d.pinned[i].start > a {
		return ol.Errorf(ol.ErrcInvalidArgument, "cannot find locked buffer: %#x was not registered with olMemRegister", a)
	}
	if d.pinned[i].users--; d.pinned[i].users == 0 {
		d.pinned = append(d.pinned[:i], d.pinned[i+1:]...)
	}
	return nil
}
