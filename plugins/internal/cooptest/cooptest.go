// Package cooptest checks a backend's cooperative launches with the
// kernels of tests/c/kernels/coop.c (its comment says what they compute).
package cooptest

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// Want is out of coop.c's kernels for a grid of n work-items in groups of
// g after rounds rounds.
func Want(n, g, rounds uint32) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = rounds*((uint32(i)+g)%n+1) + n*rounds*(rounds-1)/2
	}
	return out
}

// Args is coop.c's struct coop_args.
func Args(slots, out uintptr, rounds uint32) []byte {
	b := make([]byte, 24)
	binary.LittleEndian.PutUint64(b[0:], uint64(slots))
	binary.LittleEndian.PutUint64(b[8:], uint64(out))
	binary.LittleEndian.PutUint32(b[16:], rounds)
	return b
}

// Run launches kernel k of coop.c on q (a queue of dev) with groups
// groups of size work-items, through launch (LaunchCooperative, or Launch
// to see what happens without), and returns out and the launch's error
// (from the call or from the sync).
func Run(t *testing.T, dev plugin.Device, q plugin.Queue, k plugin.Kernel, groups, size, rounds uint32,
	launch func(plugin.Kernel, []byte, plugin.LaunchSize) error) ([]uint32, error) {
	t.Helper()
	n := uint64(groups) * uint64(size)
	slots, err := dev.Alloc(ol.AllocTypeDevice, 4*n)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(slots, ol.AllocTypeDevice)
	out, err := dev.Alloc(ol.AllocTypeDevice, 4*n)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(out, ol.AllocTypeDevice)
	var zero uint32
	for _, p := range []uintptr{slots, out} {
		if err := q.Fill(p, unsafe.Pointer(&zero), 4, 4*n); err != nil {
			t.Fatal(err)
		}
	}
	s := plugin.LaunchSize{NumGroups: ol.Dimensions{X: groups, Y: 1, Z: 1}, GroupSize: ol.Dimensions{X: size, Y: 1, Z: 1}}
	lerr := launch(k, Args(slots, out, rounds), s)
	got := make([]uint32, n)
	if err := q.CopyFromDevice(uintptr(unsafe.Pointer(&got[0])), out, dev, 4*n); err != nil {
		t.Fatal(err)
	}
	serr := q.Sync()
	return got, errors.Join(lerr, serr)
}

// Check runs kernel k cooperatively on dev with groups of size work-items
// and checks its result.
func Check(t *testing.T, dev plugin.Device, k plugin.Kernel, groups, size, rounds uint32) {
	t.Helper()
	q, err := dev.NewQueue()
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	cq, ok := q.(plugin.CooperativeQueue)
	if !ok {
		t.Fatalf("%T is not a plugin.CooperativeQueue", q)
	}
	got, err := Run(t, dev, q, k, groups, size, rounds, cq.LaunchCooperative)
	if err != nil {
		t.Fatalf("%d groups of %d, %d rounds: %v", groups, size, rounds, err)
	}
	want := Want(groups*size, size, rounds)
	bad := 0
	for i := range got {
		if got[i] != want[i] {
			if bad < 5 {
				t.Errorf("%d groups of %d, %d rounds: out[%d] = %d, want %d", groups, size, rounds, i, got[i], want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d work-items wrong", bad, len(got))
	}
}

// Max is k's MaxCooperativeGroups for groups of size, checked to be sane.
func Max(t *testing.T, k plugin.Kernel, size uint32, dynShared uint64) uint32 {
	t.Helper()
	ck, ok := k.(plugin.CooperativeKernel)
	if !ok {
		t.Fatalf("%T is not a plugin.CooperativeKernel", k)
	}
	m, err := ck.MaxCooperativeGroups(ol.Dimensions{X: size, Y: 1, Z: 1}, dynShared)
	if err != nil {
		t.Fatal(err)
	}
	if m == 0 {
		t.Fatalf("MaxCooperativeGroups(%d) is 0", size)
	}
	return m
}

// CheckTooLarge checks that a cooperative launch of max+1 groups is
// refused with code, naming both numbers (at the call or the sync).
func CheckTooLarge(t *testing.T, dev plugin.Device, k plugin.Kernel, size, max uint32, code ol.Errc, words ...string) {
	t.Helper()
	q, err := dev.NewQueue()
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	cq := q.(plugin.CooperativeQueue)
	_, err = Run(t, dev, q, k, max+1, size, 1, cq.LaunchCooperative)
	var oe *ol.Error
	if !errors.As(err, &oe) || oe.Code != code {
		t.Fatalf("a cooperative launch of %d groups (the most is %d): %v, want %v", max+1, max, err, code)
	}
	for _, w := range append(words, itoa(max+1), itoa(max)) {
		if !strings.Contains(oe.Details, w) {
			t.Errorf("the refusal %q does not say %q", oe.Details, w)
		}
	}
}

func itoa(v uint32) string {
	var b [10]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}
