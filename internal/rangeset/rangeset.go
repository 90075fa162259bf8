// Package rangeset keeps disjoint address ranges [base, end) sorted by
// base: the runtime's allocation map (for its writers) and a proxy's
// record of each client's allocations use it. A new range overlaps a
// member exactly when the member with the largest base below its end ends
// after its base (members never overlap, so that one ends last), and an
// address lies in the member with the largest base at or below it, if in
// any; each step is O(log n). The caller locks.
package rangeset

// Set is the sorted set of disjoint ranges; its zero value is empty. It
// is a B+tree of bases and ends (no pointers for the collector to scan)
// whose deletions never merge nodes: an emptied leaf leaves its parent, an
// emptied inner node its own, so the height is that of the most members
// ever held at once.
//
// Inner nodes: kids[i] holds bases >= keys[i] (i >= 1) and < keys[i+1];
// keys[0] is never read. Leaves: keys (bases) and ends, sorted, linked in
// order through prev and next, never empty except an empty tree's root
// (kept, so that a set that empties and fills allocates nothing).
type Set struct {
	root *orderNode
	n    int
}

const orderMax = 64

type orderNode struct {
	n          int
	inner      bool
	keys, ends [orderMax]uint64     // ends: leaves
	kids       [orderMax]*orderNode // inner nodes (in the node: one cache miss less per level)
	prev, next *orderNode           // leaves
}

func (t *Set) Len() int { return t.n }

// route is the child of inner node nd whose range holds x: the last
// i >= 1 with keys[i] <= x, else 0 (keys[0] is never read).
func (nd *orderNode) route(x uint64) int { return nd.above(1, x) - 1 }

// upper is the first index of leaf nd whose key is > x.
func (nd *orderNode) upper(x uint64) int { return nd.above(0, x) }

// above is the first index i >= from of nd's keys with keys[i] > x (nd.n
// if none): the keys from there on are sorted.
func (nd *orderNode) above(from int, x uint64) int {
	lo, hi := from, nd.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if nd.keys[m] <= x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// leafFor is the leaf whose range holds x.
func (t *Set) leafFor(x uint64) *orderNode {
	nd := t.root
	for nd != nil && nd.inner {
		nd = nd.kids[nd.route(x)]
	}
	return nd
}

// Floor returns the base and end of the member with the largest base
// <= x.
func (t *Set) Floor(x uint64) (base, end uint64, ok bool) {
	lf := t.leafFor(x)
	if lf == nil {
		return 0, 0, false
	}
	if i := lf.upper(x) - 1; i >= 0 {
		return lf.keys[i], lf.ends[i], true
	}
	if p := lf.prev; p != nil && p.n > 0 {
		return p.keys[p.n-1], p.ends[p.n-1], true
	}
	return 0, 0, false
}

// Overlaps reports whether [base, end) overlaps a member.
func (t *Set) Overlaps(base, end uint64) bool {
	_, e, ok := t.Floor(end - 1)
	return ok && e > base
}

// Insert adds [base, end); the caller checked that it overlaps nothing.
func (t *Set) Insert(base, end uint64) {
	if t.root == nil {
		t.root = &orderNode{}
	}
	if k, r := t.insertAt(t.root, base, end); r != nil {
		old := t.root
		t.root = &orderNode{n: 2, inner: true}
		t.root.kids[0], t.root.kids[1] = old, r
		t.root.keys[1] = k
	}
	t.n++
}

// insertAt inserts into the subtree nd; when nd splits it returns the new
// right half and its lower bound.
func (t *Set) insertAt(nd *orderNode, base, end uint64) (uint64, *orderNode) {
	if !nd.inner {
		i := nd.upper(base)
		if nd.n < orderMax {
			nd.put(i, base, end, nil)
			return 0, nil
		}
		r := nd.split()
		r.prev, r.next = nd, nd.next
		if nd.next != nil {
			nd.next.prev = r
		}
		nd.next = r
		if i <= nd.n {
			nd.put(i, base, end, nil)
		} else {
			r.put(i-nd.n, base, end, nil)
		}
		return r.keys[0], r
	}
	i := nd.route(base)
	k, kid := t.insertAt(nd.kids[i], base, end)
	if kid == nil {
		return 0, nil
	}
	if nd.n < orderMax {
		nd.put(i+1, k, 0, kid)
		return 0, nil
	}
	r := nd.split()
	if i+1 <= nd.n {
		nd.put(i+1, k, 0, kid)
	} else {
		r.put(i+1-nd.n, k, 0, kid)
	}
	return r.keys[0], r
}

// put inserts key k (with end e, or child kid) at index i.
func (nd *orderNode) put(i int, k, e uint64, kid *orderNode) {
	copy(nd.keys[i+1:nd.n+1], nd.keys[i:nd.n])
	nd.keys[i] = k
	if nd.inner {
		copy(nd.kids[i+1:nd.n+1], nd.kids[i:nd.n])
		nd.kids[i] = kid
	} else {
		copy(nd.ends[i+1:nd.n+1], nd.ends[i:nd.n])
		nd.ends[i] = e
	}
	nd.n++
}

// split moves the upper half of the full node nd into a new node.
func (nd *orderNode) split() *orderNode {
	h := orderMax / 2
	r := &orderNode{n: nd.n - h, inner: nd.inner}
	copy(r.keys[:], nd.keys[h:nd.n])
	if nd.inner {
		copy(r.kids[:], nd.kids[h:nd.n])
		clear(nd.kids[h:nd.n])
	} else {
		copy(r.ends[:], nd.ends[h:nd.n])
	}
	nd.n = h
	return r
}

// Remove takes out the member whose base is exactly base and returns its
// end.
func (t *Set) Remove(base uint64) (uint64, bool) {
	if t.root == nil {
		return 0, false
	}
	end, ok, empty := t.removeAt(t.root, base)
	if !ok {
		return 0, false
	}
	t.n--
	if empty && t.root.inner {
		t.root = nil // (an inner root has two children or more: not reached)
	}
	// an emptied leaf root stays, for the next insert
	for t.root != nil && t.root.inner && t.root.n == 1 {
		t.root = t.root.kids[0]
	}
	return end, true
}

// removeAt removes base from the subtree nd; empty: nd is now empty (and
// unlinked if it is a leaf).
func (t *Set) removeAt(nd *orderNode, base uint64) (end uint64, ok, empty bool) {
	if !nd.inner {
		i := nd.upper(base) - 1
		if i < 0 || nd.keys[i] != base {
			return 0, false, false
		}
		end = nd.ends[i]
		copy(nd.keys[i:], nd.keys[i+1:nd.n])
		copy(nd.ends[i:], nd.ends[i+1:nd.n])
		nd.n--
		if nd.n > 0 {
			return end, true, false
		}
		if nd.prev != nil {
			nd.prev.next = nd.next
		}
		if nd.next != nil {
			nd.next.prev = nd.prev
		}
		nd.prev, nd.next = nil, nil
		return end, true, true
	}
	i := nd.route(base)
	end, ok, empty = t.removeAt(nd.kids[i], base)
	if !empty {
		return end, ok, false
	}
	copy(nd.keys[i:], nd.keys[i+1:nd.n])
	copy(nd.kids[i:], nd.kids[i+1:nd.n])
	nd.n--
	nd.kids[nd.n] = nil
	return end, true, nd.n == 0
}

// Each calls fn for every member in order of base.
func (t *Set) Each(fn func(base, end uint64)) {
	nd := t.root
	for nd != nil && nd.inner {
		nd = nd.kids[0]
	}
	for ; nd != nil; nd = nd.next {
		for i := 0; i < nd.n; i++ {
			fn(nd.keys[i], nd.ends[i])
		}
	}
}
