package host

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
)

// vmFlags returns the kernel's VmFlags line for the mapping that holds
// addr, from /proc/self/smaps (the kernel's own account of the advice).
func vmFlags(t *testing.T, addr uintptr) string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return line
		}
	}
	t.Fatalf("no mapping in /proc/self/smaps holds %#x", addr)
	return ""
}

// Allocations of 2 MiB and more start on a 2 MiB boundary, and the kernel
// records the huge-page advice for their whole range ("hg" in VmFlags);
// smaller ones keep the 64-byte alignment.
func TestHostAllocAsksForHugePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skipf("this kernel has no transparent huge pages: %v", err)
	}
	d := &Device{}
	for _, size := range []uint64{2 << 20, 2<<20 + 1, 9 << 20, 64 << 20} {
		p, err := d.Alloc(ol.AllocTypeDevice, size)
		if err != nil || p == 0 || p%(2<<20) != 0 {
			t.Fatalf("Alloc(%d) = %#x, %v: want a 2 MiB-aligned address", size, p, err)
		}
		for _, at := range []uintptr{p, p + uintptr(size) - 1} {
			if flags := vmFlags(t, at); !strings.Contains(" "+flags+" ", " hg ") {
				t.Errorf("Alloc(%d): the mapping at %#x has no huge-page advice: %s", size, at, flags)
			}
		}
		if err := d.Free(p, ol.AllocTypeDevice); err != nil {
			t.Fatal(err)
		}
	}
	p, err := d.Alloc(ol.AllocTypeDevice, 2<<20-64)
	if err != nil || p%64 != 0 {
		t.Fatalf("Alloc(2 MiB - 64) = %#x, %v", p, err)
	}
	if err := d.Free(p, ol.AllocTypeDevice); err != nil {
		t.Fatal(err)
	}
}
