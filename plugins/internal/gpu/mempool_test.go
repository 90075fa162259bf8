package gpu

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
)

// fakeMem is a driver with a capacity: it hands out distinct addresses and
// counts what is live.
type fakeMem struct {
	mu            sync.Mutex
	next          uintptr
	live          map[uintptr]uint64
	bytes, limit  uint64
	allocs, frees int
}

func newFakeMem(limit uint64) *fakeMem {
	return &fakeMem{next: 1 << 40, live: map[uintptr]uint64{}, limit: limit}
}

func (f *fakeMem) DriverAlloc(kind ol.AllocType, size uint64) (uintptr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.bytes+size > f.limit {
		return 0, ol.Errorf(ol.ErrcOutOfResources, "fake: out of memory for %d bytes", size)
	}
	p := f.next
	f.next += uintptr(size+4095) &^ 4095
	f.live[p] = size
	f.bytes += size
	f.allocs++
	return p, nil
}

func (f *fakeMem) DriverFree(p uintptr, kind ol.AllocType) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.live[p]
	if !ok {
		return fmt.Errorf("fake: %#x is not live", p)
	}
	delete(f.live, p)
	f.bytes -= n
	f.frees++
	return nil
}

func (f *fakeMem) count() (int, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.live), f.bytes
}

// The classes cover every size up to MaxPooled, each at most a quarter
// larger than what it serves (512 bytes at least), growing with the size.
func TestSizeClasses(t *testing.T) {
	prev := -1
	for size := uint64(1); size <= MaxPooled; size++ {
		c := sizeClass(size)
		if c < prev || c >= numClasses {
			t.Fatalf("size %d: class %d after %d (of %d)", size, c, prev, numClasses)
		}
		prev = c
		n := classSize(c)
		if n < size || (size > 512 && 4*n > 5*size) || (size <= 512 && n != 512) {
			t.Fatalf("size %d: class %d has %d bytes", size, c, n)
		}
		if c > 0 && classSize(c-1) >= size {
			t.Fatalf("size %d: class %d (%d bytes) while the class below (%d bytes) fits", size, c, n, classSize(c-1))
		}
	}
	if classSize(numClasses-1) != MaxPooled {
		t.Fatalf("the largest class has %d bytes", classSize(numClasses-1))
	}
}

func TestMemPoolsReuseAndRelease(t *testing.T) {
	f := newFakeMem(1 << 40)
	m := NewMemPools(f, 1<<30)
	a, err := m.Alloc(ol.AllocTypeDevice, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Free(a, ol.AllocTypeDevice); err != nil {
		t.Fatal(err)
	}
	b, _ := m.Alloc(ol.AllocTypeDevice, 900) // same class: the cached block
	if b != a || f.allocs != 1 {
		t.Fatalf("the freed block was not reused: %#x then %#x, %d driver allocations", a, b, f.allocs)
	}
	_ = m.Free(b, ol.AllocTypeDevice)
	if err := m.Free(b, ol.AllocTypeDevice); !strings.Contains(fmt.Sprint(err), "freed already") {
		t.Fatalf("a second free of a cached block: %v", err)
	}
	if n, _ := f.count(); n != 1 {
		t.Fatalf("a second free of a cached block reached the driver: %d live", n)
	}
	b, _ = m.Alloc(ol.AllocTypeDevice, 900)
	h, _ := m.Alloc(ol.AllocTypeHost, 900) // another kind: its own block
	if h == a {
		t.Fatal("a device block was handed out as host memory")
	}
	big, _ := m.Alloc(ol.AllocTypeDevice, MaxPooled+1)
	for _, p := range []struct {
		p uintptr
		k ol.AllocType
	}{{b, ol.AllocTypeDevice}, {h, ol.AllocTypeHost}, {big, ol.AllocTypeDevice}} {
		if err := m.Free(p.p, p.k); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := f.count(); n != 2 || m.Idle() != 2*uint64(classSize(sizeClass(1000))) {
		t.Fatalf("after the frees: %d live driver allocations (want the 2 cached), %d idle bytes", n, m.Idle())
	}
	if err := m.Release(); err != nil {
		t.Fatal(err)
	}
	if n, bytes := f.count(); n != 0 || bytes != 0 || m.Idle() != 0 {
		t.Fatalf("after Release: %d live driver allocations of %d bytes, %d idle", n, bytes, m.Idle())
	}
}

// Idle memory stays within the bound: frees past it go to the driver.
func TestMemPoolsIdleBound(t *testing.T) {
	f := newFakeMem(1 << 40)
	const bound = 3 << 20
	m := NewMemPools(f, bound)
	var ps []uintptr
	for i := 0; i < 10; i++ {
		p, err := m.Alloc(ol.AllocTypeDevice, MaxPooled)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	for _, p := range ps {
		if err := m.Free(p, ol.AllocTypeDevice); err != nil {
			t.Fatal(err)
		}
	}
	if _, bytes := f.count(); bytes != bound || m.Idle() != bound {
		t.Fatalf("%d driver bytes live, %d idle, want %d (the bound)", bytes, m.Idle(), bound)
	}
	// a bound of 0: nothing is cached
	m0 := NewMemPools(f, 0)
	p, _ := m0.Alloc(ol.AllocTypeDevice, 4096)
	_ = m0.Free(p, ol.AllocTypeDevice)
	if _, bytes := f.count(); bytes != bound {
		t.Fatalf("with a bound of 0 a freed block stayed: %d driver bytes", bytes)
	}
}

// An allocation the driver refuses for lack of memory releases the cache
// and is tried again; without cached memory the failure is returned.
func TestMemPoolsOutOfMemoryRetry(t *testing.T) {
	f := newFakeMem(8 << 20)
	m := NewMemPools(f, 1<<30)
	var ps []uintptr
	for i := 0; i < 6; i++ {
		p, err := m.Alloc(ol.AllocTypeDevice, MaxPooled)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	for _, p := range ps {
		_ = m.Free(p, ol.AllocTypeDevice)
	}
	p, err := m.Alloc(ol.AllocTypeDevice, 4<<20) // 6 MiB cached + 4 > 8
	if err != nil {
		t.Fatalf("the allocation failed with 6 MiB cached: %v", err)
	}
	if m.Idle() != 0 {
		t.Fatalf("%d bytes still cached after the retry", m.Idle())
	}
	if _, err := m.Alloc(ol.AllocTypeDevice, 5<<20); !outOfMemory(err) {
		t.Fatalf("with nothing cached: %v, want out of resources", err)
	}
	_ = m.Free(p, ol.AllocTypeDevice)
}

// A cycle of a cached size costs no Go allocation.
func TestMemPoolsNoGoAllocation(t *testing.T) {
	m := NewMemPools(newFakeMem(1<<40), 1<<30)
	p, _ := m.Alloc(ol.AllocTypeDevice, 4096)
	_ = m.Free(p, ol.AllocTypeDevice)
	if n := testing.AllocsPerRun(1000, func() {
		p, _ := m.Alloc(ol.AllocTypeDevice, 4096)
		_ = m.Free(p, ol.AllocTypeDevice)
	}); n != 0 {
		t.Errorf("an Alloc/Free cycle allocates %v times", n)
	}
}

// Threads allocating, freeing and releasing at once never get one block
// twice, and everything returns to the driver at the end.
func TestMemPoolsConcurrent(t *testing.T) {
	f := newFakeMem(1 << 40)
	m := NewMemPools(f, 8<<20)
	var mu sync.Mutex
	owned := map[uintptr]bool{}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				size := uint64(1 + (i*7919+g*104729)%(2*MaxPooled))
				p, err := m.Alloc(ol.AllocTypeDevice, size)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if owned[p] {
					t.Errorf("%#x handed out twice", p)
				}
				owned[p] = true
				mu.Unlock()
				if i%500 == 0 {
					_ = m.Release()
				}
				mu.Lock()
				delete(owned, p)
				mu.Unlock()
				if err := m.Free(p, ol.AllocTypeDevice); err != nil {
					t.Error(err)
				}
			}
		}(g)
	}
	wg.Wait()
	if err := m.Release(); err != nil {
		t.Fatal(err)
	}
	if n, bytes := f.count(); n != 0 || bytes != 0 {
		t.Fatalf("%d driver allocations (%d bytes) left", n, bytes)
	}
}

func BenchmarkMemPoolsCycle(b *testing.B) {
	m := NewMemPools(newFakeMem(1<<40), 1<<30)
	for i := 0; i < b.N; i++ {
		p, _ := m.Alloc(ol.AllocTypeDevice, 65536)
		_ = m.Free(p, ol.AllocTypeDevice)
	}
}
