package host

import (
	"math/rand/v2"
	"testing"
)

// TestQueueFedFasterThanItRunsStaysSmall: a queue that never goes idle,
// its executor always some way behind the pushes, keeps its list of ops
// near the number pending (blocks the executor emptied are reused or
// dropped) and runs them in order. A slice with a moving head held every
// op since the queue was last idle: 10,000 here.
func TestQueueFedFasterThanItRunsStaysSmall(t *testing.T) {
	d := newTestDevice(t)
	pq, err := d.NewQueue()
	if err != nil {
		t.Fatal(err)
	}
	q := pq.(*queue)
	defer func() { _ = q.Sync(); _ = q.Release() }()
	const chunks, perChunk = 100, 100
	var ran []int // appended by the ops, which run one at a time, in order
	push := func(i int) error { return q.HostCall(func() error { ran = append(ran, i); return nil }) }
	// gate k holds the executor until the chunk after k is queued, so the
	// queue is never empty
	gates := make([]chan struct{}, chunks+1)
	reached := make([]chan struct{}, chunks+1)
	gate := func(k int) error {
		gates[k], reached[k] = make(chan struct{}), make(chan struct{})
		return q.HostCall(func() error { close(reached[k]); <-gates[k]; return nil })
	}
	if err := gate(0); err != nil {
		t.Fatal(err)
	}
	maxCap := 0
	for k := 0; k < chunks; k++ {
		for i := range perChunk {
			if err := push(k*perChunk + i); err != nil {
				t.Fatal(err)
			}
		}
		if err := gate(k + 1); err != nil {
			t.Fatal(err)
		}
		<-reached[k]
		close(gates[k])
		q.mu.Lock()
		maxCap = max(maxCap, q.ops.slots())
		q.mu.Unlock()
	}
	<-reached[chunks]
	close(gates[chunks])
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	if len(ran) != chunks*perChunk {
		t.Fatalf("%d ops ran, want %d", len(ran), chunks*perChunk)
	}
	for i, v := range ran {
		if v != i {
			t.Fatalf("op %d ran as the %dth", v, i)
		}
	}
	if maxCap > 8*perChunk {
		t.Errorf("the queue's list of ops grew to %d slots with at most %d ops pending", maxCap, 2*perChunk+2)
	}
}

// opList against a slice: random pushes and pops keep first-in first-out
// order across blocks, each visits the pending ops in order and stops
// when told, popped slots keep no reference, and an emptied list keeps
// only its first block and the spares.
func TestOpListIsFIFO(t *testing.T) {
	var l opList
	var ref []uint64
	next := uint64(1)
	rng := rand.New(rand.NewPCG(11, 2))
	for step := 0; step < 200000; step++ {
		burst := step%5000 < 2500 // long runs of mostly pushes, then of pops
		if (burst && rng.IntN(4) != 0) || (!burst && rng.IntN(4) == 0) || len(ref) == 0 {
			l.push(op{mark: next, call: func() error { return nil }})
			ref = append(ref, next)
			next++
		} else {
			if f := l.front(); f == nil || f.mark != ref[0] {
				t.Fatalf("step %d: front %v, want mark %d", step, f, ref[0])
			}
			if o := l.pop(); o.mark != ref[0] || o.call == nil {
				t.Fatalf("step %d: popped mark %d, want %d", step, o.mark, ref[0])
			}
			ref = ref[1:]
		}
		if l.len() != len(ref) {
			t.Fatalf("step %d: len %d, want %d", step, l.len(), len(ref))
		}
		if step%997 == 0 {
			i, stop := 0, len(ref)/2
			l.each(func(o *op) bool {
				if o.mark != ref[i] {
					t.Fatalf("step %d: each gave mark %d at %d, want %d", step, o.mark, i, ref[i])
				}
				i++
				return i < stop
			})
			if len(ref) > 0 && i != max(stop, 1) {
				t.Fatalf("step %d: each visited %d ops, want %d", step, i, max(stop, 1))
			}
		}
	}
	for len(ref) > 0 {
		l.pop()
		ref = ref[1:]
	}
	if l.front() != nil || l.slots() > (1+spareBlocks)*opBlock {
		t.Fatalf("an empty list: front %v, %d slots", l.front(), l.slots())
	}
	for c := l.head; c != nil; c = c.next {
		for i := range c.ops {
			if c.ops[i].call != nil {
				t.Fatalf("slot %d of an empty list still holds a function", i)
			}
		}
	}
}

// slots is the number of op slots the list holds, spare blocks included.
func (l *opList) slots() int {
	n := l.spares
	for c := l.head; c != nil; c = c.next {
		n++
	}
	return n * opBlock
}
