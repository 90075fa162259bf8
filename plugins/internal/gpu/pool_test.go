package gpu

import "testing"

func TestPool(t *testing.T) {
	var p Pool[*int]
	if p.Get() != nil {
		t.Fatal("an empty pool gave an object")
	}
	a, b, c := new(int), new(int), new(int)
	if !p.Put(a, 2) || !p.Put(b, 2) || p.Put(c, 2) {
		t.Fatal("Put does not keep to the bound")
	}
	p.Push(c)
	if p.Len() != 3 || p.Get() != c || p.Get() != b {
		t.Fatal("not last in, first out")
	}
	if all := p.Take(); len(all) != 1 || all[0] != a || p.Len() != 0 {
		t.Fatalf("Take: %v", all)
	}
	p.Put(a, 1)
	if n := testing.AllocsPerRun(100, func() { p.Put(p.Get(), 1) }); n != 0 {
		t.Errorf("Get and Put allocate %v times", n)
	}
}
