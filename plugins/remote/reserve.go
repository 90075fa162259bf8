package remote

/*
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

// remote_reserve maps [addr, addr+len) inaccessible, where nothing of this
// process is mapped: 0, or the errno (EEXIST: something is there).
static int remote_reserve(uintptr_t addr, size_t len) {
  void *p = mmap((void *)addr, len, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (p == MAP_FAILED)
    return errno ? errno : EINVAL;
  if ((uintptr_t)p != addr) { // a kernel before 4.17 takes the flag as a hint
    munmap(p, len);
    return EEXIST;
  }
  return 0;
}
static void remote_unreserve(uintptr_t addr, size_t len) { munmap((void *)addr, len); }
static size_t remote_page(void) { return (size_t)sysconf(_SC_PAGESIZE); }
*/
import "C"

import (
	"sync"
)

// Remote device memory is another process's, but its addresses go into
// kernels and into olMemcpy, olGetMemInfo and olMemFree unchanged, where
// the runtime tells memories apart by address. So the range of every
// remote allocation is reserved in this process (mapped PROT_NONE with
// MAP_FIXED_NOREPLACE): no allocation of this process can land there
// later, and a remote range that overlaps memory of this process (or of
// another proxy: it is reserved too) is refused, and the device allocates
// again. A page that two allocations of one proxy share (the ends of small
// allocations) is counted; pages inside an allocation belong to it alone.
var reserved struct {
	sync.Mutex
	edges map[uintptr]edge // pages at the ends of allocations
}

type edge struct {
	rank int
	refs int
}

var pageSize = uintptr(C.remote_page())

// span is the reservation of one allocation: its end pages, and the pages
// between them, which it covers whole.
type span struct {
	first, last uintptr // the first and last pages
	inner, n    uintptr // [inner, inner+n): the whole pages between them
}

func spanOf(p uintptr, size uint64) span {
	first := p &^ (pageSize - 1)
	last := (p + uintptr(size) - 1) &^ (pageSize - 1)
	s := span{first: first, last: last}
	if last > first+pageSize {
		s.inner, s.n = first+pageSize, last-first-pageSize
	}
	return s
}

// ends lists the end pages (one for an allocation within a page).
func (s span) ends() []uintptr {
	if s.first == s.last {
		return []uintptr{s.first}
	}
	return []uintptr{s.first, s.last}
}

// reserve claims [p, p+size) for proxy rank; false if any of it is memory
// of this process or of another proxy.
func reserve(rank int, p uintptr, size uint64) bool {
	if size == 0 || p+uintptr(size) < p {
		return false
	}
	s := spanOf(p, size)
	reserved.Lock()
	defer reserved.Unlock()
	if reserved.edges == nil {
		reserved.edges = map[uintptr]edge{}
	}
	var took []uintptr // edge pages this call added
	undo := func() {
		for _, pg := range took {
			e := reserved.edges[pg]
			if e.refs--; e.refs == 0 {
				delete(reserved.edges, pg)
				C.remote_unreserve(C.uintptr_t(pg), C.size_t(pageSize))
			} else {
				reserved.edges[pg] = e
			}
		}
	}
	for _, pg := range s.ends() {
		if e, ok := reserved.edges[pg]; ok {
			if e.rank != rank {
				undo()
				return false
			}
			e.refs++
			reserved.edges[pg] = e
			took = append(took, pg)
			continue
		}
		if C.remote_reserve(C.uintptr_t(pg), C.size_t(pageSize)) != 0 {
			undo()
			return false
		}
		reserved.edges[pg] = edge{rank, 1}
		took = append(took, pg)
	}
	if s.n > 0 && C.remote_reserve(C.uintptr_t(s.inner), C.size_t(s.n)) != 0 {
		undo()
		return false
	}
	return true
}

// unreserve gives back what reserve claimed.
func unreserve(p uintptr, size uint64) {
	s := spanOf(p, size)
	reserved.Lock()
	defer reserved.Unlock()
	for _, pg := range s.ends() {
		e, ok := reserved.edges[pg]
		if !ok {
			continue
		}
		if e.refs--; e.refs == 0 {
			delete(reserved.edges, pg)
			C.remote_unreserve(C.uintptr_t(pg), C.size_t(pageSize))
		} else {
			reserved.edges[pg] = e
		}
	}
	if s.n > 0 {
		C.remote_unreserve(C.uintptr_t(s.inner), C.size_t(s.n))
	}
}
