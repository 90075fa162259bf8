package remote

import (
	"syscall"
	"testing"
	"unsafe"
)

// a range free in this process: mapped, then given back
func freeRange(t *testing.T, pages int) uintptr {
	b, err := syscall.Mmap(-1, 0, pages*int(pageSize), syscall.PROT_NONE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	p := uintptr(unsafe.Pointer(&b[0]))
	if err := syscall.Munmap(b); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReserve(t *testing.T) {
	pg := pageSize
	base := freeRange(t, 16)
	type step struct {
		rank int
		p    uintptr
		size uint64
		ok   bool
	}
	steps := []step{
		{1, base + 100, 50, true},                  // one page
		{1, base + 200, 100, true},                 // shares that page: same proxy
		{2, base + 300, 10, false},                 // another proxy on that page
		{1, base + 2*pg + 8, uint64(3 * pg), true}, // ends on pages 2 and 5, pages 3-4 whole
		{2, base + 3*pg + 16, 10, false},           // inside rank 1's whole pages
		{1, base + 3*pg + 16, 10, false},           // (also for rank 1: nothing else overlaps there)
		{2, base + 5*pg + 64, 10, false},           // rank 1's end page
		{2, base + 8*pg, uint64(2 * pg), true},     // free pages: another proxy is fine
	}
	var got []step
	for i, s := range steps {
		if ok := reserve(s.rank, s.p, s.size); ok != s.ok {
			t.Fatalf("step %d: reserve(%d, %#x, %d) = %v", i, s.rank, s.p, s.size, ok)
		} else if ok {
			got = append(got, s)
		}
	}
	// memory of this process is refused
	b, err := syscall.Mmap(-1, 0, int(pg), syscall.PROT_READ, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	if reserve(1, uintptr(unsafe.Pointer(&b[0]))+8, 16) {
		t.Fatal("a range of this process's own memory was reserved")
	}
	for _, s := range got {
		unreserve(s.p, s.size)
	}
	if len(reserved.edges) != 0 {
		t.Fatalf("%d end pages left", len(reserved.edges))
	}
	// all given back: rank 2 may now use what rank 1 had
	if !reserve(2, base+3*pg+16, 10) {
		t.Fatal("a released range stayed reserved")
	}
	unreserve(base+3*pg+16, 10)
}
