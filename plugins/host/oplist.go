package host

// opList is a queue's pending ops, first in first out, in blocks of
// opBlock ops linked in order. A push writes the next slot of the last
// block and a pop takes the first slot of the first; a block the executor
// has emptied is kept for the next push (up to spareBlocks of them), so a
// queue fed faster than it runs neither grows one large slice, clearing
// and copying it at each doubling, nor hands the collector a new one
// after every idle spell: 10,000 launches queued before a sync grew and
// cleared slices of up to 2 MB each time, an eighth of the pushes' time.
// Its zero value is empty. The queue's lock guards it.
type opList struct {
	head, tail *opChunk
	first      int // index of the first op in head
	n          int // ops in the list
	spare      *opChunk
	spares     int
}

const (
	opBlock     = 64
	spareBlocks = 2
)

type opChunk struct {
	ops  [opBlock]op
	used int // slots written
	next *opChunk
}

func (l *opList) len() int { return l.n }

// push appends o.
func (l *opList) push(o op) {
	if l.tail == nil || l.tail.used == opBlock {
		c := l.spare
		if c != nil {
			l.spare, l.spares = c.next, l.spares-1
			c.next = nil
		} else {
			c = new(opChunk)
		}
		if l.tail == nil {
			l.head, l.first = c, 0
		} else {
			l.tail.next = c
		}
		l.tail = c
	}
	l.tail.ops[l.tail.used] = o
	l.tail.used++
	l.n++
}

// front is the first op, or nil when the list is empty.
func (l *opList) front() *op {
	if l.n == 0 {
		return nil
	}
	return &l.head.ops[l.first]
}

// pop takes out the first op (the list is not empty); its slot keeps no
// reference to the op's kernel, arguments or function.
func (l *opList) pop() op {
	c := l.head
	o := c.ops[l.first]
	c.ops[l.first] = op{}
	l.first++
	l.n--
	if l.first == c.used {
		// the block is spent: the next one is first, or the list is
		// empty and this block starts over
		if c.next == nil {
			c.used, l.first = 0, 0
		} else {
			l.head, l.first = c.next, 0
			c.used, c.next = 0, nil
			if l.spares < spareBlocks {
				c.next, l.spare = l.spare, c
				l.spares++
			}
		}
	}
	return o
}

// each calls fn for the ops in order until fn returns false.
func (l *opList) each(fn func(*op) bool) {
	for c, i := l.head, l.first; c != nil; c, i = c.next, 0 {
		for ; i < c.used; i++ {
			if !fn(&c.ops[i]) {
				return
			}
		}
	}
}
