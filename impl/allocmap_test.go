package impl

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
)

// refMap is the allocation map's reference: a sorted slice.
type refMap struct{ s []alloc }

func (r *refMap) find(p uint64) (alloc, bool) {
	i := sort.Search(len(r.s), func(i int) bool { return r.s[i].end() > p })
	if i < len(r.s) && r.s[i].base <= p {
		return r.s[i], true
	}
	return alloc{}, false
}

func (r *refMap) insert(a alloc) bool {
	if a.size == 0 || a.base+a.size < a.base {
		return false
	}
	i := sort.Search(len(r.s), func(i int) bool { return r.s[i].end() > a.base })
	if i < len(r.s) && r.s[i].base < a.end() {
		return false
	}
	r.s = append(r.s, alloc{})
	copy(r.s[i+1:], r.s[i:])
	r.s[i] = a
	return true
}

func (r *refMap) remove(base uint64) bool {
	i := sort.Search(len(r.s), func(i int) bool { return r.s[i].base >= base })
	if i < len(r.s) && r.s[i].base == base {
		r.s = append(r.s[:i], r.s[i+1:]...)
		return true
	}
	return false
}

// randSize draws sizes of every level of the index, small ones most.
func randSize(rng *rand.Rand) uint64 {
	switch rng.IntN(10) {
	case 0:
		return 1 + rng.Uint64N(1<<rng.IntN(63))
	case 1, 2:
		return 1 + rng.Uint64N(1<<20)
	}
	return 1 + rng.Uint64N(300)
}

// The map against its reference: random inserts (some overlapping, of
// every level, near the ends of the address space too), exact-base
// removals and interior lookups agree, and so do snapshot and drain.
func TestAllocMapMatchesReference(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		m, ref := newAllocMap(), &refMap{}
		region := uint64(1) << (12 + 4*seed) // denser or sparser
		var near uint64
		if seed == 4 {
			near = ^uint64(0) - region // the top of the address space
		}
		addr := func() uint64 { return near + rng.Uint64N(region) }
		for i := 0; i < 20000; i++ {
			switch op := rng.IntN(10); {
			case op < 4:
				a := alloc{base: addr(), size: randSize(rng)}
				if got, want := m.insert(&a), ref.insert(a); got != want {
					t.Fatalf("seed %d: insert %#x+%d = %v, want %v", seed, a.base, a.size, got, want)
				}
			case op < 6 && len(ref.s) > 0:
				a := ref.s[rng.IntN(len(ref.s))]
				base := a.base
				if rng.IntN(4) == 0 {
					base += rng.Uint64N(a.size) // interior: refused unless 0
				}
				got, found := m.removeBase(base)
				want := ref.remove(base)
				if found != want || (found && (got.base != a.base || got.size != a.size)) {
					t.Fatalf("seed %d: removeBase(%#x) = %+v, want %v", seed, base, got, want)
				}
			default:
				p := addr()
				if len(ref.s) > 0 && rng.IntN(2) == 0 {
					a := ref.s[rng.IntN(len(ref.s))]
					p = a.base + rng.Uint64N(a.size)
				}
				got, ok := m.find(p)
				want, wok := ref.find(p)
				if ok != wok || got != want {
					t.Fatalf("seed %d: find(%#x) = %+v %v, want %+v %v", seed, p, got, ok, want, wok)
				}
			}
		}
		snap := m.snapshot()
		if len(snap) != len(ref.s) {
			t.Fatalf("seed %d: snapshot has %d, want %d", seed, len(snap), len(ref.s))
		}
		for i, a := range snap {
			if *a != ref.s[i] {
				t.Fatalf("seed %d: snapshot[%d] = %+v, want %+v", seed, i, *a, ref.s[i])
			}
		}
		if n := len(m.drain()); n != len(ref.s) {
			t.Fatalf("seed %d: drained %d, want %d", seed, n, len(ref.s))
		}
		if _, ok := m.find(ref.s[0].base); ok || len(m.snapshot()) != 0 {
			t.Fatalf("seed %d: allocations left after drain", seed)
		}
		m.release()
	}
}

// Lookups run without a lock while other threads add and remove
// allocations: a reader always finds the allocations that stay, exactly,
// and never one that was never there.
func TestAllocMapConcurrentReaders(t *testing.T) {
	m := newAllocMap()
	defer m.release()
	const stay = 2000
	for i := uint64(0); i < stay; i++ {
		if !m.insert(&alloc{base: 1<<20 + i*256, size: 100 + i%100}) {
			t.Fatal("insert refused")
		}
	}
	var stop atomic.Bool
	var writers, readers sync.WaitGroup
	for w := 0; w < 2; w++ {
		writers.Add(1)
		go func(w uint64) {
			defer writers.Done()
			rng := rand.New(rand.NewPCG(w, 1))
			for i := 0; i < 30000; i++ {
				// churn in the gaps of the ones that stay, and far away
				base := 1<<20 + rng.Uint64N(stay)*256 + 200 + w*20
				if rng.IntN(2) == 0 {
					base = 1<<40 + rng.Uint64N(1<<30)
				}
				if m.insert(&alloc{base: base, size: 1 + rng.Uint64N(16)}) {
					m.removeBase(base)
				}
			}
		}(uint64(w))
	}
	for r := 0; r < 2; r++ {
		readers.Add(1)
		go func(r uint64) {
			defer readers.Done()
			rng := rand.New(rand.NewPCG(r, 2))
			for !stop.Load() {
				i := rng.Uint64N(stay)
				base := 1<<20 + i*256
				a, ok := m.find(base + rng.Uint64N(100+i%100))
				if !ok || a.base != base || a.size != 100+i%100 {
					t.Errorf("find in allocation %d: %+v %v", i, a, ok)
					return
				}
				if _, ok := m.find(base + 256 - 1); ok {
					t.Errorf("found an allocation at the end of gap %d", i)
					return
				}
			}
		}(uint64(r))
	}
	writers.Wait()
	stop.Store(true)
	readers.Wait()
}

func TestAllocMapHugeChunks(t *testing.T) {
	if testing.Short() {
		t.Skip("200,000 allocations")
	}
	rng := rand.New(rand.NewPCG(9, 9))
	m := newAllocMap()
	defer m.release()
	const n = 200000
	for round := 0; round < 2; round++ {
		as := make([]alloc, n)
		for i := range as {
			as[i] = alloc{base: 1<<40 + uint64(i)*512 + rng.Uint64N(200), size: 32 + rng.Uint64N(225)}
			if !m.insert(&as[i]) {
				t.Fatalf("insert %d", i)
			}
		}
		for i, a := range as {
			if got, ok := m.find(a.base + rng.Uint64N(a.size)); !ok || got != a {
				t.Fatalf("find %d: %+v %v, want %+v", i, got, ok, a)
			}
		}
		for i := range as {
			if got, ok := m.removeBase(as[i].base); !ok || got != as[i] {
				t.Fatalf("remove %d: %+v %v", i, got, ok)
			}
		}
		if _, ok := m.find(as[0].base); ok || len(m.snapshot()) != 0 {
			t.Fatal("allocations left")
		}
	}
}

// BenchmarkAllocMapChurn: remove a random live allocation and insert one
// of another size in its place, with 1,000 or 1,000,000 live (the map's
// own cost, without a device; make bench measures the API calls).
func BenchmarkAllocMapChurn(b *testing.B) {
	for _, n := range []int{1000, 1000000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(5, 5))
			m := newAllocMap()
			defer m.release()
			bases := make([]uint64, n)
			for i := range bases {
				bases[i] = 1<<32 + uint64(i)*512 + rng.Uint64N(200)
				m.insert(&alloc{base: bases[i], size: 32 + rng.Uint64N(225)})
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				j := rng.IntN(n)
				m.removeBase(bases[j])
				m.insert(&alloc{base: bases[j], size: 32 + rng.Uint64N(225)})
			}
		})
	}
}

// BenchmarkAllocMapRemove: the parts of olMemFree's map step with 1,000
// or 1,000,000 live, in batches of 10,000 random live allocations removed
// in random order (timed) and put back (not timed): "order" is the
// writers' B+tree alone, "map" the whole removeBase (tree and C index).
func BenchmarkAllocMapRemove(b *testing.B) {
	for _, part := range []string{"order", "map"} {
		for _, n := range []int{1000, 1000000} {
			b.Run(fmt.Sprint(part, "/", n), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(7, 7))
				m := newAllocMap()
				defer m.release()
				bases := make([]uint64, n)
				sizes := make([]uint64, n)
				for i := range bases {
					bases[i] = 1<<32 + uint64(i)*512 + rng.Uint64N(200)
					sizes[i] = 32 + rng.Uint64N(225)
					m.insert(&alloc{base: bases[i], size: sizes[i]})
				}
				batch := min(10000, n/2)
				idx := make([]int, batch)
				taken := make([]bool, n)
				b.ResetTimer()
				for done := 0; done < b.N; {
					b.StopTimer()
					for k := range idx {
						idx[k] = rng.IntN(n)
						for taken[idx[k]] {
							idx[k] = rng.IntN(n)
						}
						taken[idx[k]] = true
					}
					for _, j := range idx {
						taken[j] = false
					}
					k := min(batch, b.N-done)
					b.StartTimer()
					for _, j := range idx[:k] {
						if part == "order" {
							m.order.Remove(bases[j])
						} else {
							m.removeBase(bases[j])
						}
					}
					b.StopTimer()
					for _, j := range idx[:k] {
						if part == "order" {
							m.order.Insert(bases[j], bases[j]+sizes[j])
						} else {
							m.insert(&alloc{base: bases[j], size: sizes[j]})
						}
					}
					done += k
					b.StartTimer()
				}
			})
		}
	}
}
