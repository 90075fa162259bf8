package rangeset

import (
	"math/rand/v2"
	"sort"
	"testing"
)

// reference is the obvious O(n) answer: the member that holds x.
type reference map[uint64]uint64 // base -> end

func (r reference) holding(x uint64) (uint64, uint64, bool) {
	for b, e := range r {
		if b <= x && x < e {
			return b, e, true
		}
	}
	return 0, 0, false
}

func (r reference) overlaps(base, end uint64) bool {
	for b, e := range r {
		if b < end && base < e {
			return true
		}
	}
	return false
}

// Random inserts, removals and lookups agree with a map scanned in full,
// through enough members to split leaves and inner nodes and empty them.
func TestSetMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	var s Set
	ref := reference{}
	var bases []uint64
	for step := 0; step < 30000; step++ {
		switch op := rng.IntN(10); {
		case op < 5 || len(bases) == 0: // insert a random range if it fits
			base := rng.Uint64N(1<<22) * 16
			end := base + 1 + rng.Uint64N(200)
			if got, want := s.Overlaps(base, end), ref.overlaps(base, end); got != want {
				t.Fatalf("step %d: Overlaps(%#x, %#x) = %v, want %v", step, base, end, got, want)
			}
			if !ref.overlaps(base, end) {
				s.Insert(base, end)
				ref[base] = end
				bases = append(bases, base)
			}
		case op < 8: // remove a member, or a base that is none
			i := rng.IntN(len(bases))
			b := bases[i]
			if e, ok := s.Remove(b + 1); ok {
				t.Fatalf("step %d: Remove(%#x), not a base, took out a member ending at %#x", step, b+1, e)
			}
			e, ok := s.Remove(b)
			if !ok || e != ref[b] {
				t.Fatalf("step %d: Remove(%#x) = %#x, %v, want %#x", step, b, e, ok, ref[b])
			}
			delete(ref, b)
			bases[i] = bases[len(bases)-1]
			bases = bases[:len(bases)-1]
		default: // a lookup: Floor finds the member holding x, if any
			x := rng.Uint64N(1<<22) * 16
			if len(bases) > 0 && rng.IntN(2) == 0 {
				x = bases[rng.IntN(len(bases))] + rng.Uint64N(210)
			}
			wb, we, want := ref.holding(x)
			b, e, ok := s.Floor(x)
			got := ok && x < e
			if got != want || (got && (b != wb || e != we)) {
				t.Fatalf("step %d: Floor(%#x) = %#x..%#x %v, but the member holding it is %#x..%#x %v", step, x, b, e, ok, wb, we, want)
			}
		}
		if s.Len() != len(ref) {
			t.Fatalf("step %d: Len %d, want %d", step, s.Len(), len(ref))
		}
	}
	var order []uint64
	s.Each(func(base, end uint64) {
		if ref[base] != end {
			t.Fatalf("Each: %#x..%#x is not a member", base, end)
		}
		order = append(order, base)
	})
	if len(order) != len(ref) || !sort.SliceIsSorted(order, func(i, j int) bool { return order[i] < order[j] }) {
		t.Fatalf("Each gave %d bases (want %d), sorted: %v", len(order), len(ref), sort.SliceIsSorted(order, func(i, j int) bool { return order[i] < order[j] }))
	}
}

// At scale: a million ranges inserted in random order,
// removed in random order, agree with a sorted reference at every step
// checked.
func TestSetScale(t *testing.T) {
	if testing.Short() {
		t.Skip("a million allocations")
	}
	rng := rand.New(rand.NewPCG(3, 3))
	const n = 1 << 20
	bases := make([]uint64, n)
	for i := range bases {
		bases[i] = uint64(i) * 64
	}
	rng.Shuffle(n, func(i, j int) { bases[i], bases[j] = bases[j], bases[i] })
	var o Set
	for _, b := range bases {
		if o.Overlaps(b, b+48) {
			t.Fatalf("overlap at %#x", b)
		}
		o.Insert(b, b+48)
	}
	if o.Len() != n || !o.Overlaps(64*1000+40, 64*1000+50) || o.Overlaps(64*1000+48, 64*1001) {
		t.Fatal("overlap check at scale")
	}
	rng.Shuffle(n, func(i, j int) { bases[i], bases[j] = bases[j], bases[i] })
	for i, b := range bases {
		if e, ok := o.Remove(b); !ok || e != b+48 {
			t.Fatalf("remove %#x: %v", b, ok)
		}
		if i%4096 == 0 {
			if _, ok := o.Remove(b); ok {
				t.Fatal("removed twice")
			}
		}
	}
	if o.Len() != 0 || o.root == nil || o.root.n != 0 || o.root.inner {
		t.Fatal("tree not empty")
	}
}

// Past 65,536 index nodes the index takes its nodes and tables from huge
// pages (allocmap.c): 200,000 allocations are all found, exactly, and all
// removed, twice over (the second time the nodes are recycled).
