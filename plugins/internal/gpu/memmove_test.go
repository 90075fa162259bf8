package gpu

import (
	"bytes"
	"testing"
)

// Memmove's pieces, each copied front to back one byte at a time (a copy
// that is not memmove), give memmove's result for every overlap, with and
// without a buffer.
func TestMemmove(t *testing.T) {
	const n = 64
	for size := uint64(1); size <= 40; size++ {
		for src := uint64(0); src+size <= n; src += 3 {
			for dst := uint64(0); dst+size <= n; dst++ {
				if !Overlap(uintptr(dst), uintptr(src), size) {
					if dst != src && (dst < src+size && src < dst+size) {
						t.Fatalf("Overlap(%d, %d, %d) = false", dst, src, size)
					}
					continue
				}
				for _, tmpSize := range []uint64{0, 1, 7, 64} {
					mem := make([]byte, 2*n) // [0, n): the ranges; [n, 2n): the buffer
					for i := range mem {
						mem[i] = byte(i*7 + 1)
					}
					want := append([]byte(nil), mem[:n]...)
					copy(want[dst:dst+size], want[src:src+size])
					tmp := uintptr(0)
					if tmpSize > 0 {
						tmp = n
					}
					pieces := 0
					err := Memmove(uintptr(dst), uintptr(src), size, tmp, tmpSize, func(d, s uintptr, m uint64) error {
						pieces++
						if tmp == 0 && Overlap(d, s, m) {
							t.Fatalf("a piece overlaps itself: %d bytes from %d to %d", m, s, d)
						}
						for i := uint64(0); i < m; i++ {
							mem[uint64(d)+i] = mem[uint64(s)+i]
						}
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(mem[:n], want) {
						t.Fatalf("%d bytes from %d to %d (buffer %d): got %v, want %v", size, src, dst, tmpSize, mem[:n], want)
					}
					if tmp == 0 && uint64(pieces) != MemmovePieces(uintptr(dst), uintptr(src), size) {
						t.Errorf("%d pieces, MemmovePieces says %d", pieces, MemmovePieces(uintptr(dst), uintptr(src), size))
					}
				}
			}
		}
	}
}
