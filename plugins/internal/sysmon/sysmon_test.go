package sysmon

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// SCHED_BATCH from <sched.h>.
const schedBatch = 3

// threads lists this process's thread ids.
func threads(t *testing.T) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, e := range ents {
		if id, err := strconv.Atoi(e.Name()); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// sleepingIn names the Go function a thread is in a system call from
// (resolved by the runtime's own symbol table, not by this package), or "".
func sleepingIn(tid int) string {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/syscall")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return "" // running
	}
	pc, err := strconv.ParseUint(strings.TrimPrefix(f[len(f)-1], "0x"), 16, 64)
	if err != nil {
		return ""
	}
	if fn := runtime.FuncForPC(uintptr(pc)); fn != nil {
		return fn.Name()
	}
	return ""
}

// TestRelaxMakesSysmonBatch: Relax marks one thread SCHED_BATCH, and that
// thread is the Go runtime's monitor: the only thread found sleeping in
// runtime.usleep while another goroutine sits in a call into C, and never
// one that runs goroutines (this one's thread stays SCHED_OTHER).
func TestRelaxMakesSysmonBatch(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self := gettid()
	busy := make(chan struct{})
	go func() { // a P in a long call into C: sysmon polls meanwhile
		sleepMS(200)
		close(busy)
	}()
	// A busy machine can keep sysmon runnable through a whole scan (Relax
	// gives up after maxAttempts per process): scan on until found.
	tid := Relax(nil)
	for i := 0; i < 100 && tid == 0; i++ {
		mu.Lock()
		tid = relaxLocked(scanSamples, nil)
		mu.Unlock()
	}
	if tid == 0 {
		t.Fatal("the sysmon thread was never found")
	}
	var batch []int
	for _, id := range threads(t) {
		if policy(id) == schedBatch {
			batch = append(batch, id)
		}
	}
	if len(batch) != 1 || batch[0] != tid {
		t.Fatalf("SCHED_BATCH threads %v, want only %d", batch, tid)
	}
	if tid == self || policy(self) == schedBatch {
		t.Fatalf("the calling thread %d was changed", self)
	}
	// sysmon sleeps in runtime.usleep between rounds (or in a futex when
	// the whole runtime is idle): sample until it is seen there.
	seen := ""
	for i := 0; i < 200 && seen != "runtime.usleep"; i++ {
		seen = sleepingIn(tid)
		sleepMS(1)
	}
	if seen != "runtime.usleep" {
		t.Fatalf("thread %d last seen in %q, never in runtime.usleep", tid, seen)
	}
	<-busy
	// once done, never again
	if again := Relax(nil); again != tid {
		t.Fatalf("second Relax = %d, want %d", again, tid)
	}
}

// TestFindStops: a scan ends at once when told to, finding nothing.
func TestFindStops(t *testing.T) {
	calls := 0
	if got := find(scanSamples, func() bool { calls++; return calls > 3 }); got != 0 || calls != 4 {
		t.Fatalf("find = %d after %d stop checks, want 0 after 4", got, calls)
	}
}
