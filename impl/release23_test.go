package impl

import (
	"errors"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

func errCode(t *testing.T, err error, want ol.Errc, text string) {
	t.Helper()
	var oe *ol.Error
	if !errors.As(err, &oe) || oe.Code != want || !strings.Contains(oe.Details, text) {
		t.Fatalf("got %v, want %s containing %q", err, want, text)
	}
}

// Without parameter information no layout of several arguments is known:
// the launch is refused naming the kernel (packing them like the members
// of a C struct, alignment guessed from each size, put a struct {int a;
// int b;} after an int at offset 8 where C puts it at 4, and the kernel
// computed a wrong result). One argument is the whole block; none is none.
func TestLayOutArgsUnknownParams(t *testing.T) {
	k := &Symbol{name: "composite", kernel: plainKernel{}}
	n, f, out := int32(1), [2]int32{2, 3}, uintptr(0x1000)
	ptrs := []unsafe.Pointer{unsafe.Pointer(&n), unsafe.Pointer(&f), unsafe.Pointer(&out)}
	for _, cnt := range []int{2, 3} {
		_, _, err := layOutArgs(k, views(ptrs[:cnt], []uint64{4, 8, 8}[:cnt]), []uint64{4, 8, 8}[:cnt], nil)
		errCode(t, err, ol.ErrcInvalidArgument, `kernel "composite"`)
	}
	if buf, _, err := layOutArgs(k, nil, nil, nil); err != nil || len(buf) != 0 {
		t.Fatalf("no arguments: %v %v", buf, err)
	}
	buf, inPlace, err := layOutArgs(k, views(ptrs[1:2], []uint64{8}), []uint64{8}, nil)
	if err != nil || !inPlace || unsafe.Pointer(&buf[0]) != unsafe.Pointer(&f) || len(buf) != 8 {
		t.Fatalf("one argument: %d bytes, in place %v, err %v", len(buf), inPlace, err)
	}
	// a NULL pointer with a size
	_, _, err = layOutArgs(k, [][]byte{nil}, []uint64{4}, nil)
	errCode(t, err, ol.ErrcInvalidNullPointer, "ArgPtrs[0] is NULL")
}

// Parameters the device reports as huge are refused, not allocated (1 TiB
// made the Go runtime end the process).
func TestLayOutArgsHugeParams(t *testing.T) {
	k := &Symbol{name: "k", kernel: paramKernel{params: []plugin.Param{{Offset: 0, Size: 1}, {Offset: 1 << 39, Size: 1}}}}
	a := byte(1)
	_, _, err := layOutArgs(k, [][]byte{{a}, {a}}, []uint64{1, 1}, nil)
	errCode(t, err, ol.ErrcInvalidSize, "take")
}

// One argument of a kernel without parameter information is the caller's
// memory itself, whatever size it claims (22.1's ArgumentsData), so the
// runtime never copies (or allocates) a claimed 1 TiB.
func TestLayOutArgsLoneArgumentInPlace(t *testing.T) {
	k := &Symbol{name: "k", kernel: plainKernel{}}
	// the caller's memory is C memory, as from C (a view of Go memory
	// claiming 1 TiB would trip the race detector's pointer checks)
	page, err := syscall.Mmap(-1, 0, 4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(page)
	x := unsafe.Pointer(&page[0])
	buf, inPlace, err := layOutArgs(k, views([]unsafe.Pointer{x}, []uint64{1 << 40}), []uint64{1 << 40}, make([]byte, 0, 64))
	if err != nil || !inPlace || len(buf) != 1<<40 || unsafe.Pointer(&buf[0]) != x {
		t.Fatalf("got %d bytes in place %v, err %v", len(buf), inPlace, err)
	}
	if buf, inPlace, err := layOutArgs(k, [][]byte{nil}, []uint64{0}, nil); err != nil || !inPlace || len(buf) != 0 {
		t.Fatalf("an empty argument: %d bytes, in place %v, err %v", len(buf), inPlace, err)
	}
}

// views makes the argument views the generated layer hands layOutArgs
// (userRanges): nil for a NULL pointer.
func views(ptrs []unsafe.Pointer, sizes []uint64) [][]byte {
	out := make([][]byte, len(ptrs))
	for i, p := range ptrs {
		if p != nil {
			out[i] = unsafe.Slice((*byte)(p), sizes[i])
		}
	}
	return out
}

type plainKernel struct{ plugin.Kernel }

type paramKernel struct {
	plugin.Kernel
	params []plugin.Param
}

func (k paramKernel) Params() ([]plugin.Param, bool) { return k.params, true }

// Where the device knows the parameters (a C struct's members here, the
// Go compiler's layout of the same members the reference on amd64), each
// argument goes to its offset, padding zero, and the block ends where the
// last parameter does.
func TestLayOutArgsLikeTheirStruct(t *testing.T) {
	type args struct {
		a uint8
		b float32
		c *int
		d uint16
		e uint64
		f [3]float32 // a 12-byte struct of floats: 4-aligned
		g uint8
	}
	target := 5
	v := args{a: 7, b: 1.5, c: &target, d: 9, e: 1 << 40, f: [3]float32{1, 2, 3}, g: 4}
	offs := []uintptr{unsafe.Offsetof(v.a), unsafe.Offsetof(v.b), unsafe.Offsetof(v.c), unsafe.Offsetof(v.d), unsafe.Offsetof(v.e), unsafe.Offsetof(v.f), unsafe.Offsetof(v.g)}
	sizes := []uint64{1, 4, 8, 2, 8, 12, 1}
	var params []plugin.Param
	for i, o := range offs {
		params = append(params, plugin.Param{Offset: uint64(o), Size: sizes[i]})
	}
	k := &Symbol{name: "k", kernel: paramKernel{params: params}}
	ptrs := []unsafe.Pointer{unsafe.Pointer(&v.a), unsafe.Pointer(&v.b), unsafe.Pointer(&v.c), unsafe.Pointer(&v.d), unsafe.Pointer(&v.e), unsafe.Pointer(&v.f), unsafe.Pointer(&v.g)}
	buf, inPlace, err := layOutArgs(k, views(ptrs, sizes), sizes, nil)
	if err != nil || inPlace {
		t.Fatal(err, inPlace)
	}
	wb := unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v))
	if len(buf) != int(unsafe.Offsetof(v.g))+1 {
		t.Fatalf("%d bytes, want %d", len(buf), unsafe.Offsetof(v.g)+1)
	}
	inArg := make([]bool, len(buf))
	for i, o := range offs {
		for j := uint64(0); j < sizes[i]; j++ {
			inArg[o+uintptr(j)] = true
		}
	}
	for i := range buf {
		if inArg[i] && buf[i] != wb[i] || !inArg[i] && buf[i] != 0 {
			t.Fatalf("byte %d is %#x, want %#x (argument byte %v)", i, buf[i], wb[i], inArg[i])
		}
	}
}

// Where the device knows the parameters, each argument goes to its offset
// and a wrong count or size is refused naming the argument.
func TestLayOutArgsAtParameterOffsets(t *testing.T) {
	k := &Symbol{name: "saxpy", kernel: paramKernel{params: []plugin.Param{{Offset: 0, Size: 4}, {Offset: 16, Size: 8}}}}
	a, p := uint32(0xdeadbeef), uint64(0x1122334455667788)
	buf, inPlace, err := layOutArgs(k, views([]unsafe.Pointer{unsafe.Pointer(&a), unsafe.Pointer(&p)}, []uint64{4, 8}), []uint64{4, 8}, nil)
	if err != nil || inPlace {
		t.Fatal(err)
	}
	if len(buf) != 24 || *(*uint32)(unsafe.Pointer(&buf[0])) != a || *(*uint64)(unsafe.Pointer(&buf[16])) != p {
		t.Fatalf("layout %x", buf)
	}
	for i := 4; i < 16; i++ {
		if buf[i] != 0 {
			t.Fatalf("padding byte %d is %d, want 0", i, buf[i])
		}
	}
	_, _, err = layOutArgs(k, views([]unsafe.Pointer{unsafe.Pointer(&a)}, []uint64{4}), []uint64{4}, nil)
	errCode(t, err, ol.ErrcInvalidArgument, `kernel "saxpy" takes 2 arguments; NumArgs is 1`)
	_, _, err = layOutArgs(k, views([]unsafe.Pointer{unsafe.Pointer(&a), unsafe.Pointer(&a)}, []uint64{4, 4}), []uint64{4, 4}, nil)
	errCode(t, err, ol.ErrcInvalidArgument, `ArgSizes[1] is 4; argument 1 of kernel "saxpy" is 8 bytes`)
}

func TestLaunchProps(t *testing.T) {
	yes, no := true, false
	end := ol.KernelLaunchProp{Type: ol.KernelLaunchPropTypeNone}
	coop := func(b *bool) ol.KernelLaunchProp {
		return ol.KernelLaunchProp{Type: ol.KernelLaunchPropTypeIsCooperative, Data: unsafe.Pointer(b)}
	}
	for _, c := range []struct {
		list []ol.KernelLaunchProp
		want bool
		code ol.Errc
		text string
	}{
		{list: []ol.KernelLaunchProp{end}},
		{list: []ol.KernelLaunchProp{coop(&yes), end}, want: true},
		{list: []ol.KernelLaunchProp{coop(&yes), coop(&no), end}},
		{list: []ol.KernelLaunchProp{{Type: 7}, end}, code: ol.ErrcInvalidEnumeration, text: "Properties[0].type is 7"},
		{list: []ol.KernelLaunchProp{coop(&yes), {Type: ol.KernelLaunchPropTypeIsCooperative}, end}, code: ol.ErrcInvalidNullPointer, text: "Properties[1]"},
	} {
		props, err := listKernelLaunchProp("Properties", unsafe.Pointer(&c.list[0]), nil)
		if c.code != 0 {
			errCode(t, err, c.code, c.text)
			continue
		}
		if err != nil || launchProps(props) != c.want || len(props) != len(c.list)-1 {
			t.Fatalf("%v: %v %v, want %v", c.list, props, err, c.want)
		}
	}
	if props, err := listKernelLaunchProp("Properties", nil, nil); props != nil || err != nil || launchProps(props) {
		t.Fatal("a NULL list is no property")
	}
	// a list without its end is walked no further than maxListEntries
	long := make([]ol.KernelLaunchProp, maxListEntries)
	for i := range long {
		long[i] = coop(&yes)
	}
	_, err := listKernelLaunchProp("Properties", unsafe.Pointer(&long[0]), nil)
	errCode(t, err, ol.ErrcInvalidArgument, "Properties has no OL_KERNEL_LAUNCH_PROP_TYPE_NONE entry in its first 1024")
	// a C bool is any nonzero byte
	b := uint8(2)
	props, err := listKernelLaunchProp("Properties", unsafe.Pointer(&[]ol.KernelLaunchProp{{Type: ol.KernelLaunchPropTypeIsCooperative, Data: unsafe.Pointer(&b)}, end}[0]), nil)
	if err != nil || !launchProps(props) {
		t.Fatalf("a bool byte of 2: %v %v", props, err)
	}
}

type namedPlugin struct {
	plugin.Plugin
	name string
}

func (p namedPlugin) Name() string { return p.name }

func TestPickPlatforms(t *testing.T) {
	all := []plugin.Plugin{namedPlugin{name: "cuda"}, namedPlugin{name: "amdgpu"}, namedPlugin{name: "host"}}
	names := func(ps []plugin.Plugin) string {
		var n []string
		for _, p := range ps {
			n = append(n, p.Name())
		}
		return strings.Join(n, ",")
	}
	// the caller's struct as C lays it out (ol.InitArgs mirrors it; the
	// ABI tests compare its layout with the C compiler's)
	read := func(a ol.InitArgs) (*initArgsValue, error) { return readInitArgs("InitArgs", unsafe.Pointer(&a)) }
	pick := func(list ...ol.PlatformBackend) ([]plugin.Plugin, error) {
		a := ol.InitArgs{Size: uint64(unsafe.Sizeof(ol.InitArgs{})), NumPlatforms: uint32(len(list))}
		if len(list) > 0 {
			a.Platforms = unsafe.Pointer(&list[0])
		}
		v, err := read(a)
		if err != nil {
			return nil, err
		}
		return pickPlatforms(v, all)
	}
	for _, c := range []struct {
		list []ol.PlatformBackend
		want string
	}{
		{nil, "cuda,amdgpu,host"},
		{[]ol.PlatformBackend{ol.PlatformBackendCuda}, "cuda,host"},
		{[]ol.PlatformBackend{ol.PlatformBackendHost}, "host"},
		{[]ol.PlatformBackend{ol.PlatformBackendLevelZero}, "host"}, // no plugin: nothing more starts
		{[]ol.PlatformBackend{ol.PlatformBackendAmdgpu, ol.PlatformBackendCuda}, "cuda,amdgpu,host"},
	} {
		got, err := pick(c.list...)
		if err != nil || names(got) != c.want {
			t.Errorf("%v: %s %v, want %s", c.list, names(got), err, c.want)
		}
	}
	_, err := pick(ol.PlatformBackendCuda, ol.PlatformBackendLast)
	errCode(t, err, ol.ErrcInvalidEnumeration, "InitArgs->Platforms[1] is 5")
	_, err = read(ol.InitArgs{Size: 16})
	errCode(t, err, ol.ErrcInvalidSize, "InitArgs->Size is 16, less than sizeof(ol_init_args_t) = 24: InitArgs->Platforms does not fit")
	_, err = read(ol.InitArgs{Size: 4})
	errCode(t, err, ol.ErrcInvalidSize, "InitArgs->Size does not fit")
	_, err = read(ol.InitArgs{Size: 24, NumPlatforms: 2})
	errCode(t, err, ol.ErrcInvalidNullPointer, "InitArgs->NumPlatforms is 2 but InitArgs->Platforms is NULL")
	// NumPlatforms 0 never looks at Platforms; a larger Size (a later
	// struct) is read as far as this one goes. Written as C lays the struct
	// out (Size at 0, NumPlatforms at 8, Platforms at 16), with addresses
	// no Go pointer may hold.
	raw := func(words ...uint64) (*initArgsValue, error) {
		return readInitArgs("InitArgs", unsafe.Pointer(&words[0]))
	}
	if v, err := raw(64, 0, 8, 0xdead, 0xbeef, 0, 0, 0); err != nil || v.Platforms != nil || v.Size != 64 {
		t.Fatalf("NumPlatforms 0: %+v %v", v, err)
	}
	// a huge count at a garbage address near the top is refused before any
	// entry is read
	_, err = raw(24, 1<<31, ^uint64(0)-4095)
	errCode(t, err, ol.ErrcInvalidSize, "InitArgs->NumPlatforms is 2147483648")
	if v, err := readInitArgs("InitArgs", nil); v != nil || err != nil {
		t.Fatal("NULL InitArgs:", v, err)
	}
}

// misalignedDevice hands out addresses 16 bytes past a 1 MiB boundary, from
// a range no host memory uses, and records what it frees.
type misalignedDevice struct {
	fakeDevice
	next  uintptr
	freed []uintptr
}

func (d *misalignedDevice) Alloc(kind ol.AllocType, size uint64) (uintptr, error) {
	p := d.next
	d.next += (uintptr(size) + 2<<20) &^ (1<<20 - 1)
	return p, nil
}

func (d *misalignedDevice) Free(ptr uintptr, kind ol.AllocType) error {
	d.freed = append(d.freed, ptr)
	return nil
}

// An alignment the device does not give is made by over-allocating; the
// caller sees the aligned base and the size asked for, and olMemFree of
// that base frees what the device returned.
func TestMemAllocAlignedPads(t *testing.T) {
	n := 0
	pl := &fakePlatform{name: "M", deinits: &n}
	c, err := newContext(generations{}, []plugin.Plugin{&fakePlugin{name: "m", p: pl}})
	if err != nil {
		t.Fatal(err)
	}
	dev := &misalignedDevice{next: 0x7e0000100010}
	c.deviceList[0].d = dev
	for _, align := range []uint64{1, 16, 32, 4096, 1 << 20} {
		p, err := c.olMemAllocAligned(c.deviceList[0], ol.AllocTypeDevice, 1000, align)
		if err != nil {
			t.Fatal(err)
		}
		if uint64(p)%align != 0 {
			t.Fatalf("alignment %d: %#x", align, p)
		}
		a, ok := c.mem.find(uint64(p) + 999)
		if !ok || a.base != uint64(p) || a.size != 1000 {
			t.Fatalf("alignment %d: the map has %+v for %#x", align, a, p)
		}
		raw := dev.next
		if err := c.olMemFree(p); err != nil {
			t.Fatal(err)
		}
		last := dev.freed[len(dev.freed)-1]
		if align <= 16 && last != p {
			t.Fatalf("alignment %d: freed %#x, want the base %#x (no padding needed)", align, last, p)
		}
		if align > 16 && (last == p || last > p || p-last >= uintptr(align)) {
			t.Fatalf("alignment %d: freed %#x for base %#x (allocation before %#x)", align, last, p, raw)
		}
	}
	_, err = c.olMemAllocAligned(c.deviceList[0], ol.AllocTypeDevice, 10, 24)
	errCode(t, err, ol.ErrcInvalidArgument, "Alignment 24 is not a power of two")
	if left := len(c.mem.snapshot()); left != 0 {
		t.Fatalf("%d allocations left", left)
	}
	if err := c.teardown(); err != nil {
		t.Fatal(err)
	}
}

// The C launch path lays 23.1's arguments out itself (ol_qmirror_lay_out);
// for any kernel parameters and arguments it gives the bytes layOutArgs
// gives, or leaves the layout to Go: always where layOutArgs fails, and
// where the bytes are more than it lays out on its stack. data: per
// argument a size byte (0-15, or 16+ for a larger size) and a flag byte
// (NULL pointer, parameter size off by one, parameter offset shifted).
func FuzzLayOutArgsInC(f *testing.F) {
	f.Add(false, []byte{1, 0, 4, 0, 8, 0, 2, 0}, uint8(0))
	f.Add(true, []byte{4, 0, 8, 0}, uint8(3))
	f.Add(true, []byte{12, 0}, uint8(0))
	f.Add(false, []byte{20, 0}, uint8(0))
	f.Add(true, []byte{8, 1, 4, 2}, uint8(1))
	f.Add(false, []byte{}, uint8(0))
	f.Add(true, []byte{200, 0, 3, 4}, uint8(9))
	f.Add(true, []byte{12, 4}, uint8(8))             // one parameter, not at offset 0
	f.Add(false, []byte{4, 0, 8, 0, 8, 0}, uint8(0)) // several, parameters unknown: refused
	f.Fuzz(func(t *testing.T, known bool, data []byte, gap uint8) {
		n := min(len(data)/2, 64)
		sizes := make([]uint64, n)
		nulls := make([]bool, n)
		var params []plugin.Param
		var off uint64
		for i := range n {
			sz := uint64(data[2*i] & 0x7f)
			if data[2*i]&0x80 != 0 {
				sz = uint64(data[2*i]) * 40 // past the C stack buffer together
			}
			flags := data[2*i+1]
			sizes[i] = sz
			nulls[i] = flags&1 != 0 && sz > 0
			p := plugin.Param{Offset: off, Size: sz}
			if flags&2 != 0 {
				p.Size++
			}
			if flags&4 != 0 {
				p.Offset += uint64(gap)
			}
			params = append(params, p)
			off = p.Offset + p.Size + uint64(gap&7)
		}
		if known && gap&0x40 != 0 && n > 0 {
			params = params[:n-1] // a count that does not match
		}
		var blob []byte
		for i, sz := range sizes {
			for j := range sz {
				blob = append(blob, byte(31*i+int(j)+1))
			}
		}
		ptrs := make([]unsafe.Pointer, n)
		for i, sz := range sizes {
			if !nulls[i] && sz > 0 {
				ptrs[i] = unsafe.Pointer(&blob[sum(sizes[:i])])
			}
		}
		var kernel plugin.Kernel = plainKernel{}
		if known {
			kernel = paramKernel{params: params}
		}
		want, _, err := layOutArgs(&Symbol{name: "k", kernel: kernel}, views(ptrs, sizes), sizes, nil)
		got, ok := layOutInC(params, known, sizes, blob, nulls)
		if !ok {
			if err == nil && len(want) <= 4096 && !(n == 1 && (!known || params[0].Offset == 0)) {
				t.Fatalf("C left a layout of %d bytes to Go that Go makes (sizes %v, params %v)", len(want), sizes, params)
			}
			return
		}
		if err != nil {
			t.Fatalf("C laid out what Go refuses (%v): sizes %v, params %v, nulls %v", err, sizes, params, nulls)
		}
		if string(got) != string(want) {
			t.Fatalf("C laid out %v, Go %v (sizes %v, params %v)", got, want, sizes, params)
		}
	})
}

func sum(v []uint64) (s uint64) {
	for _, x := range v {
		s += x
	}
	return s
}

// The generated reading of 23.1's parallel argument arrays (the ranges
// mark): every entry is checked before the method gets its views.
func TestUserRanges(t *testing.T) {
	// heap memory (it never moves), and the pointer array as C passes it:
	// words holding addresses
	a, b := &[4]byte{1, 2, 3, 4}, &[2]byte{5, 6}
	ptrs := []uintptr{uintptr(unsafe.Pointer(a)), 0, uintptr(unsafe.Pointer(b))}
	got, err := userRanges("olLaunchKernel", "ArgPtrs", "ArgSizes", unsafe.Pointer(&ptrs[0]), []uint64{4, 0, 2}, nil)
	if err != nil || len(got) != 3 || string(got[0]) != "\x01\x02\x03\x04" || got[1] != nil || string(got[2]) != "\x05\x06" {
		t.Fatalf("views %v, %v", got, err)
	}
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	_, err = userRanges("olLaunchKernel", "ArgPtrs", "ArgSizes", unsafe.Pointer(&ptrs[0]), []uint64{4, 8, 2}, nil)
	errCode(t, err, ol.ErrcInvalidNullPointer, "ArgPtrs[1] is NULL but ArgSizes[1] is 8")
	_, err = userRanges("olLaunchKernel", "ArgPtrs", "ArgSizes", unsafe.Pointer(&ptrs[0]), []uint64{4, 0, 1 << 48}, nil)
	errCode(t, err, ol.ErrcInvalidSize, "ArgSizes[2] is 281474976710656")
	// an address near the top with a size that wraps, never viewed
	top := []uint64{^uint64(0) - 15}
	_, err = userRanges("olLaunchKernel", "ArgPtrs", "ArgSizes", unsafe.Pointer(&top[0]), []uint64{32}, nil)
	errCode(t, err, ol.ErrcInvalidSize, "ArgSizes[0] is 32")
	if got, err := userRanges("olLaunchKernel", "ArgPtrs", "ArgSizes", nil, nil, nil); got != nil || err != nil {
		t.Fatal("no arguments:", got, err)
	}
}
