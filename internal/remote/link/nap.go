package link

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// Nap sleeps about d and gives up its processor meanwhile, so that the
// process's other goroutines run (a rank bound to one core has one: a
// goroutine napping in nanosleep held it, and a queue's goroutine sending
// a copy waited for the nap to end: 2-3 GB/s where MPI moves 7).
//
// It parks on a Go timer. That alone wakes on time while other goroutines
// run, but about 1 ms late in an idle process, whose thread waits in
// epoll with millisecond timeouts (measured: time.Sleep(20 µs) took
// 1.1 ms). So the nap also arms a timerfd that Go's poller watches: its
// expiry ends that epoll wait at d (20 µs naps took 60-70 µs here,
// nanosleep 110 µs). Without a timerfd (none left, or the kernel refuses)
// it naps in nanosleep, processor held, as before.
func Nap(d time.Duration) {
	a := takeAlarm()
	if a == nil {
		ts := syscall.NsecToTimespec(d.Nanoseconds())
		syscall.Nanosleep(&ts, nil)
		return
	}
	a.arm(d)
	time.Sleep(d)
	a.drain()
	giveAlarm(a)
}

// alarm is a timerfd registered with Go's poller (an os.File of a
// non-blocking descriptor is). Nothing reads it through the File: its
// expiry only has to wake the poller. Its system calls are raw (they never
// block): as ordinary ones they woke Go's monitor thread, which then
// polled every 20 µs (an idle rank switched threads 3,200 times a second,
// 1,250 so, as many as with time.Sleep alone).
type alarm struct {
	f  *os.File
	fd uintptr
}

// Alarms are kept for reuse, one per napping goroutine at a time; a nap
// finding none free makes one, and one more than fit here is closed.
var alarms = make(chan *alarm, 32)

func takeAlarm() *alarm {
	select {
	case a := <-alarms:
		return a
	default:
	}
	const clockMonotonic = 1
	fd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		return nil
	}
	return &alarm{f: os.NewFile(fd, "offload-nap-timerfd"), fd: fd}
}

func giveAlarm(a *alarm) {
	select {
	case alarms <- a:
	default:
		a.f.Close()
	}
}

// arm sets the timer to expire once, d from now.
func (a *alarm) arm(d time.Duration) {
	var spec struct{ interval, value syscall.Timespec }
	spec.value = syscall.NsecToTimespec(max(d.Nanoseconds(), 1))
	syscall.RawSyscall6(syscall.SYS_TIMERFD_SETTIME, a.fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
}

// drain disarms the timer; setting it also clears an expiry not read, so
// the next arm's expiry makes the descriptor readable anew (the poller
// watches edges).
func (a *alarm) drain() {
	var spec struct{ interval, value syscall.Timespec }
	syscall.RawSyscall6(syscall.SYS_TIMERFD_SETTIME, a.fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
}
