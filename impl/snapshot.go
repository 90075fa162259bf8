package impl

// #include "snapshot.h"
import "C"

import (
	"sync"

	"github.com/liboffload-go/liboffload-go/internal/fault"
)

// The info snapshot (snapshot.h): once per initialisation (at its first
// info query or device iteration, see snapshotOnce) the runtime writes the
// answer of every info query on the objects of the fixed kinds (platforms
// and devices: they live for the whole initialisation and a plugin fills
// their properties once), and the device list, into C memory, so that the
// C entry points answer successful queries (and olIterateDevices) without
// entering Go. Only successes are stored: a query that fails here (a
// property the plugin did not provide) keeps its size 0 and takes the Go
// path, as does every call with a bad handle, property, size or pointer, so
// every error and Detail stays the Go path's own. With tracing on nothing
// is published: every call must be traced.

const (
	snapMaxKinds = C.OL_SNAP_MAX_KINDS
	snapMaxValue = C.OL_SNAP_MAX_VALUE
)

// The C readers find a slot by the handle's index bits (this does not
// compile when the two differ).
const _ = uint(indexMask-C.OL_SNAP_INDEX_MASK) + uint(C.OL_SNAP_INDEX_MASK-indexMask)

// snapBuilder lays out one snapshot.
type snapBuilder struct {
	words []uint64
	// per kind: first record word, properties per object, slots
	first, props, slots [snapMaxKinds]uint64
}

// newSnapBuilder starts with the whole directory (every kind's directory
// and iteration words), zero until kind and list fill them in, in the
// buffer of the last snapshot.
func newSnapBuilder() *snapBuilder {
	w := snapWords[:0]
	if cap(w) < 1024 {
		w = make([]uint64, 0, 1024)
	}
	return &snapBuilder{words: append(w, make([]uint64, 2*snapMaxKinds)...)}
}

// kind reserves the records of kind k: slots objects of props properties.
func (b *snapBuilder) kind(k int, slots uint32, props int) {
	if props > 0xff || slots > indexMask {
		return // not representable: the kind is left out (Go answers)
	}
	b.first[k], b.props[k], b.slots[k] = uint64(len(b.words)), uint64(props), uint64(slots)
	b.words = append(b.words, make([]uint64, int(slots)*(props+1))...)
	b.words[k] = b.first[k]<<32 | b.props[k]<<24 | b.slots[k]
}

// value stores the answer to property prop of the object h of kind k: v
// as the Go path writes it, unless the query fails.
func (b *snapBuilder) value(k int, h uintptr, prop uint32, v infoValue, err error) {
	idx := uint64(h & indexMask)
	if idx >= b.slots[k] || uint64(prop) >= b.props[k] {
		return
	}
	rec := b.first[k] + idx*(b.props[k]+1)
	b.words[rec] = uint64(h)
	if err != nil {
		return
	}
	n := v.size()
	if n == 0 || n > snapMaxValue {
		return
	}
	var buf [snapMaxValue / 8]uint64
	if v.writeWords(buf[:], n) != nil {
		return
	}
	b.words[rec+1+uint64(prop)] = uint64(len(b.words))<<32 | n
	b.words = append(b.words, buf[:(n+7)/8]...)
}

// list reserves kind k's n handles in iteration order, for the caller to
// fill in.
func (b *snapBuilder) list(k int, n int) []uint64 {
	at := len(b.words)
	b.words[snapMaxKinds+k] = 1<<63 | uint64(at)<<32 | uint64(n)
	b.words = append(b.words, make([]uint64, n)...)
	return b.words[at:]
}

// snapMu guards the publishing of the snapshot (the C writers must be
// one at a time) and snapWords. It is never held while waiting for
// anything else; OlShutDown takes it under life.mu.
var snapMu sync.Mutex

// snapWords is the layout buffer, kept between initialisations so that
// publishing allocates nothing once it has grown: a program that
// initialises the library over and over makes no garbage for it (the
// lifecycle suite's dlopen cycles count threads, which a collection can
// add).
var snapWords []uint64

// States of Context.snap.
const (
	snapPending   = iota // not yet published
	snapPublished        // published
	snapGone             // unpublished for good: the final olShutDown
)

// snapshotOnce publishes c's snapshot unless it was already published or
// c is shut down, or tracing is on (every call must then be traced). It
// runs at the first info query or device iteration of the initialisation
// that reaches Go, not in olInit: the host device reads its description
// on the first query (RATIONALE.md), and a program that never asks pays
// nothing.
func (c *Context) snapshotOnce() {
	if c.snap.Load() != snapPending || c.trace != nil {
		return
	}
	snapMu.Lock()
	defer snapMu.Unlock()
	fault.Point()
	if c.snap.Load() != snapPending {
		return
	}
	b := newSnapBuilder()
	c.snapshot(b)
	// C copies the laid-out words into its static array (a *uint64 is a
	// *C.uint64_t: no unsafe conversion)
	C.ol_snap_publish((*C.uint64_t)(&b.words[0]), C.size_t(len(b.words)))
	snapWords = b.words
	c.snap.Store(snapPublished)
}

// unpublishSnapshot sends every later query to the Go path for good; the
// final olShutDown calls it before the context stops being current.
func (c *Context) unpublishSnapshot() {
	snapMu.Lock()
	defer snapMu.Unlock()
	fault.Point()
	c.snap.Store(snapGone)
	C.ol_snap_unpublish()
}
