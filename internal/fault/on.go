//go:build olfault

package fault

import (
	"bytes"
	"runtime"
	"strconv"
	"sync/atomic"
)

// armed holds the goroutine the next injection belongs to (0: none) and
// how many more points that goroutine passes before one panics.
var (
	armedG    atomic.Uint64
	countdown atomic.Int64
	fired     atomic.Bool
)

// Injected starts the text an injected panic carries (then where it was).
const Injected = "fault: injected panic"

// goid is the running goroutine's id (test builds only: it reads the stack
// header "goroutine N [").
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	n, _ := strconv.ParseUint(string(b), 10, 64)
	return n
}

// Arm makes the n-th point (1: the next) that the calling goroutine
// passes panic. Points other goroutines pass (queue workers, the deferred
// free worker) never fire.
func Arm(n int) {
	fired.Store(false)
	countdown.Store(int64(n))
	armedG.Store(goid())
}

// Disarm cancels an injection that has not fired and reports whether one
// fired since Arm.
func Disarm() bool {
	armedG.Store(0)
	return fired.Load()
}

// Point panics when it is the armed goroutine's chosen point.
func Point() {
	g := armedG.Load()
	if g == 0 || g != goid() {
		return
	}
	if countdown.Add(-1) == 0 {
		armedG.Store(0)
		fired.Store(true)
		_, file, line, _ := runtime.Caller(1)
		panic(Injected + " at " + file + ":" + strconv.Itoa(line))
	}
}
