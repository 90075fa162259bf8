package gpu

// Copies between overlapping ranges. The GPU drivers' copies are not
// memmove: a copy whose destination overlaps its source (inside one
// allocation) may read bytes it has overwritten already (on an H200, a
// 50-byte cuMemcpyDtoDAsync to 10 bytes above its source got 28 bytes
// wrong). olMemcpy promises memmove's result, so the backends split such
// a copy into copies whose ranges do not overlap (Memmove).

// Overlap reports whether a copy of size bytes from src to dst overlaps
// itself: the ranges share bytes and are not the same range (which a copy
// leaves as it is, whatever the order of its bytes).
func Overlap(dst, src uintptr, size uint64) bool {
	return dst != src && distance(dst, src) < size
}

func distance(a, b uintptr) uint64 {
	if a > b {
		return uint64(a - b)
	}
	return uint64(b - a)
}

// MemmovePieces is the number of copies Memmove makes without a buffer
// for an overlapping copy: pieces as long as the distance between the
// ranges. A backend takes a buffer when there would be too many.
func MemmovePieces(dst, src uintptr, size uint64) uint64 {
	d := distance(dst, src)
	return (size + d - 1) / d
}

// Memmove makes an overlapping copy of size bytes from src to dst as
// copies (made with copy, which run in the order they are made, as on a
// queue) that together give memmove's result. Without a buffer (tmp 0)
// each piece is at most as long as the distance between the ranges, so no
// piece overlaps itself; with one (tmpSize bytes at tmp, memory the copies
// reach that overlaps neither range) each piece of up to tmpSize bytes is
// copied to tmp and from there to its place. The pieces go from the end
// when dst is above src (a piece only overwrites source bytes that have
// been copied already) and from the start when it is below.
func Memmove(dst, src uintptr, size uint64, tmp uintptr, tmpSize uint64, copy func(dst, src uintptr, n uint64) error) error {
	piece := distance(dst, src)
	if tmp != 0 {
		piece = tmpSize
	}
	if piece == 0 {
		return nil // the same range: nothing changes
	}
	for done := uint64(0); done < size; {
		n := min(piece, size-done)
		off := done
		if dst > src {
			off = size - done - n
		}
		d, s := dst+uintptr(off), src+uintptr(off)
		if tmp == 0 {
			if err := copy(d, s, n); err != nil {
				return err
			}
		} else {
			if err := copy(tmp, s, n); err != nil {
				return err
			}
			if err := copy(d, tmp, n); err != nil {
				return err
			}
		}
		done += n
	}
	return nil
}
