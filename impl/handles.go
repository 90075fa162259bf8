package impl

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/fault"
)

// A handle is a 64-bit value, never an address:
//
//	bits 63..56  tag 0xB0 | kind
//	bits 55..24  generation of its slot (32 bits)
//	bits 23..0   slot index
//
// Generations do not restart at an initialisation: each table's slots
// start at the generation after the highest one the previous
// initialisation handed out for that kind (see Context.generations), so a
// handle from an earlier initialisation never matches a new one. A handle
// value can come back only after 2^32 generations of one slot: with freed
// slots waiting behind reuseDelay others, that is more than 2^38 creations
// of objects of one kind, or 2^32 initialisations.
//
// The top byte makes every handle a non-canonical x86-64 address, so a
// caller that dereferences one faults at once instead of reading memory.
// Lookups are lock-free; insertions and removals take the table's mutex.
type kind uint8

const (
	kindPlatform kind = 1 + iota
	kindDevice
	kindQueue
	kindEvent
	kindProgram
	kindSymbol
	kindCount
)

var kindNames = [kindCount]string{"", "platform", "device", "queue", "event", "program", "symbol"}

// kindCodes is the error code for an unusable handle of each kind.
var kindCodes = [kindCount]ol.Errc{0, ol.ErrcInvalidPlatform, ol.ErrcInvalidDevice, ol.ErrcInvalidQueue, ol.ErrcInvalidEvent, ol.ErrcInvalidArgument, ol.ErrcInvalidArgument}

const (
	tagBase   = 0xB0
	tagShift  = 56
	genShift  = 24
	indexBits = 24
	indexMask = 1<<indexBits - 1
	chunkBits = 4
	chunkSize = 1 << chunkBits
	// reuseDelay keeps freed slots out of use until this many others are
	// free, so one slot's generation advances once per reuseDelay+1
	// creations at most.
	reuseDelay = 64
)

type entry[T any] struct {
	h uintptr
	v *T
}

type slot[T any] struct {
	cur atomic.Pointer[entry[T]]
	gen uint32 // last generation handed out; guarded by table.mu
}

type chunk[T any] [chunkSize]slot[T]

// table maps handles of one kind to objects.
type table[T any] struct {
	kind   kind
	base   uint32 // first generation of this initialisation
	chunks atomic.Pointer[[]*chunk[T]]
	used   atomic.Uint32 // slots ever handed out

	mu    sync.Mutex
	free  []uint32 // FIFO of released slots
	live  int
	top   uint32 // highest generation handed out (base-1: none yet)
	limit uint32 // the highest slot index it hands out
}

// newTable returns an empty table whose handles start at generation base.
func newTable[T any](k kind, base uint32) *table[T] {
	t := &table[T]{kind: k, base: base, top: base - 1, limit: indexMask}
	empty := []*chunk[T]{}
	t.chunks.Store(&empty)
	return t
}

func (t *table[T]) slot(i uint32) *slot[T] {
	cs := *t.chunks.Load()
	ci := int(i >> chunkBits)
	if ci >= len(cs) {
		return nil
	}
	return &cs[ci][i&(chunkSize-1)]
}

// insert stores v and returns its new handle.
func (t *table[T]) insert(v *T) (uintptr, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fault.Point()
	return t.insertLocked(&entry[T]{v: v}, nil)
}

// insertAll stores &vs[i] with handle hs[i], under one lock and with one
// allocation, and returns how many it stored (all, unless the table is
// full). set gives each object its handle before the table holds it.
func (t *table[T]) insertAll(vs []T, hs []uintptr, set func(v *T, h uintptr)) int {
	es := make([]entry[T], len(vs))
	t.mu.Lock()
	defer t.mu.Unlock()
	fault.Point()
	for i := range vs {
		es[i].v = &vs[i]
		h, err := t.insertLocked(&es[i], func(h uintptr) { set(&vs[i], h) })
		if err != nil {
			return i
		}
		hs[i] = h
	}
	return len(vs)
}

// insertLocked files e (its value set) under a new handle (t.mu held);
// set, if not nil, learns the handle first.
func (t *table[T]) insertLocked(e *entry[T], set func(h uintptr)) (uintptr, error) {
	var i uint32
	if len(t.free) > reuseDelay {
		i = t.free[0]
		t.free = t.free[1:]
	} else {
		i = t.used.Load()
		if i > t.limit {
			return 0, ol.Errorf(ol.ErrcOutOfResources, "too many live %s objects (limit %d)", kindNames[t.kind], t.limit+1)
		}
		cs := *t.chunks.Load()
		if int(i>>chunkBits) >= len(cs) {
			// Readers hold older slice headers; append only writes past
			// their length, so they never see a half-written element.
			c := new(chunk[T])
			for j := range c {
				c[j].gen = t.base - 1
			}
			grown := append(cs, c)
			t.chunks.Store(&grown)
		}
		t.used.Store(i + 1)
	}
	s := t.slot(i)
	s.gen++
	if int32(s.gen-t.top) > 0 {
		t.top = s.gen
	}
	h := uintptr(tagBase|t.kind)<<tagShift | uintptr(s.gen)<<genShift | uintptr(i)
	e.h = h
	if set != nil {
		set(h)
	}
	s.cur.Store(e)
	t.live++
	return h, nil
}

// remove forgets h; it reports whether h was live.
func (t *table[T]) remove(h uintptr) bool {
	i := uint32(h & indexMask)
	t.mu.Lock()
	defer t.mu.Unlock()
	fault.Point()
	s := t.slot(i)
	if s == nil {
		return false
	}
	e := s.cur.Load()
	if e == nil || e.h != h {
		return false
	}
	s.cur.Store(nil)
	t.free = append(t.free, i)
	t.live--
	return true
}

// get decodes a required handle; param names the argument in errors.
func (t *table[T]) get(h uintptr, param string) (*T, error) {
	if h != 0 {
		if s := t.slot(uint32(h & indexMask)); s != nil {
			if e := s.cur.Load(); e != nil && e.h == h {
				return e.v, nil
			}
		}
	}
	return nil, t.explain(h, param)
}

// optional decodes a handle that may be NULL.
func (t *table[T]) optional(h uintptr, param string) (*T, error) {
	if h == 0 {
		return nil, nil
	}
	return t.get(h, param)
}

// explain says why h is not a live handle of this table.
func (t *table[T]) explain(h uintptr, param string) error {
	if err := t.wrongKind(h, param); err != nil {
		return err
	}
	gen := uint32(h >> genShift)
	if int32(gen-t.base) < 0 {
		return t.gone(h, param, handleEarlier)
	}
	destroyed := func() bool {
		t.mu.Lock()
		defer t.mu.Unlock()
		fault.Point()
		s := t.slot(uint32(h & indexMask))
		return s != nil && int32(s.gen-gen) >= 0
	}()
	if destroyed {
		return t.gone(h, param, handleDestroyed)
	}
	return t.gone(h, param, handleNeverMade)
}

// wrongKind is the error for h when it is NULL or not a handle of this
// table's kind, else nil.
func (t *table[T]) wrongKind(h uintptr, param string) error {
	want := kindNames[t.kind]
	code := kindCodes[t.kind]
	if h == 0 {
		return ol.Errorf(ol.ErrcInvalidNullHandle, "%s is NULL", param)
	}
	tag := h >> tagShift
	k := kind(tag & 0x0f)
	if tag&0xf0 != tagBase || k == 0 || k >= kindCount {
		return ol.Errorf(code, "%s (%#x) is not a valid %s handle", param, h, want)
	}
	if k != t.kind {
		return ol.Errorf(code, "%s (%#x) is %s %s handle, not %s %s handle", param, h, article(kindNames[k]), kindNames[k], article(want), want)
	}
	return nil
}

// What a handle of the right kind that is not live is.
type handleState int

const (
	handleNeverMade handleState = iota
	handleDestroyed
	handleEarlier // of an earlier initialisation
)

// gone is the error for h, a handle of this table's kind in state st.
func (t *table[T]) gone(h uintptr, param string, st handleState) error {
	want, code := kindNames[t.kind], kindCodes[t.kind]
	switch st {
	case handleEarlier:
		return ol.Errorf(code, "%s (%#x) is %s %s handle from an earlier initialisation of the library", param, h, article(want), want)
	case handleDestroyed:
		return ol.Errorf(code, "%s (%#x) refers to %s %s that was already destroyed", param, h, article(want), want)
	}
	return ol.Errorf(code, "%s (%#x) is not a valid %s handle", param, h, want)
}

// nextBase is the first generation the next initialisation's table of
// this kind uses: past every generation this one handed out.
func (t *table[T]) nextBase() uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	fault.Point()
	return t.top + 1
}

func article(noun string) string {
	if strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an"
	}
	return "a"
}

// each calls fn for every live object (in slot order).
func (t *table[T]) each(fn func(h uintptr, v *T)) {
	n := t.used.Load()
	for i := uint32(0); i < n; i++ {
		if e := t.slot(i).cur.Load(); e != nil {
			fn(e.h, e.v)
		}
	}
}

// count returns the number of live objects.
func (t *table[T]) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	fault.Point()
	return t.live
}
