package host

/*
#include "exec.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/internal/fault"
	"github.com/liboffload-go/liboffload-go/plugins/internal/sysmon"
)

// pool is a device's persistent goroutines, of two kinds that never wait
// for each other:
//
//   - queue runners run a queue's work when it arrives on an idle queue.
//     A runner may block (a host function, an olWaitEvents on another
//     queue), so runners are elastic: work for a queue goes to an idle
//     runner, or to a new one when all are busy; a runner whose queue is
//     done parks for the next (up to maxIdle of them, the rest exit).
//   - kernel workers (NumCPU−1, started with the first launch that can use
//     them) only ever run chunks of kernel groups, which never block on the
//     library, so a busy or blocked runner can never starve a kernel. They
//     help: the thread that runs a launch takes chunks too and can finish
//     the grid alone, so no launch waits for a worker to become free.
//
// Platform.Deinit waits for the queues' work and then joins all of them.
type pool struct {
	mu     sync.Mutex
	closed atomic.Bool    // set under mu; read without it by sysmon.Relax
	wg     sync.WaitGroup // every goroutine of the pool

	idle    []*runner // parked runners, most recent last
	maxIdle int
	// finishing: runners that let go of their queue and have not yet
	// looked for more work (raised without mu, lowered under it);
	// pending: queues handed to them meanwhile (never more than
	// finishing, so none waits behind a blocked runner)
	finishing atomic.Int32
	pending   []*queue

	helpers    int       // kernel workers started
	maxHelpers int       // NumCPU − 1
	work       sync.Cond // a job was posted, or the pool closed
	jobs       []*kernelJob
}

// runner is a queue runner; a queue sent on next wakes it when parked
// (nil ends it).
type runner struct {
	next    chan *queue
	leaving bool // counted in pool.finishing (only r's goroutine uses it)
}

func newPool() *pool {
	n := runtime.NumCPU()
	p := &pool{maxIdle: max(8, 4*n), maxHelpers: n - 1}
	p.work.L = &p.mu
	return p
}

// testHook, set only by tests, is called at named points of the work the
// pool's goroutines (and waiting threads) run, to inject failures.
var testHook atomic.Pointer[func(where string)]

func hook(where string) {
	if f := testHook.Load(); f != nil {
		(*f)(where)
	}
}

// internalError turns a recovered panic into the error of the queue (or
// launch) where it happened.
func internalError(where string, v any) error {
	return ol.Errorf(ol.ErrcUnknown, "host: internal error in a %s: %v", where, v)
}

// runQueue has q's work run on a runner goroutine: a parked one if any.
// The caller has counted q in Device.runners.
func (p *pool) runQueue(q *queue) {
	r, start := p.placeQueue(q)
	switch {
	case r != nil:
		r.next <- q
	case start:
		go p.runner(&runner{next: make(chan *queue, 1)}, q)
	}
}

// placeQueue finds q a parked runner (r), or queues it for a finishing
// one, or has the caller start a runner (start).
func (p *pool) placeQueue(q *queue) (r *runner, start bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fault.Point()
	if n := len(p.idle); n > 0 {
		r := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		return r, false
	}
	if len(p.pending) < int(p.finishing.Load()) {
		// a runner is about to look for work: no new goroutine
		p.pending = append(p.pending, q)
		return nil, false
	}
	p.wg.Add(1)
	return nil, true
}

// leaving notes that runner r lets go of its queue (called with the
// queue's lock held, before it can be seen idle).
func (p *pool) leaving(r *runner) {
	if !r.leaving {
		r.leaving = true
		p.finishing.Add(1)
	}
}

func (p *pool) runner(r *runner, q *queue) {
	defer p.wg.Done()
	for q != nil {
		q.runGuarded(r)
		// (a runner's own goroutine: no fault point, no entry point's
		// panic reaches it)
		p.mu.Lock()
		if r.leaving {
			r.leaving = false
			p.finishing.Add(-1)
		}
		if n := len(p.pending); n > 0 {
			// queued for a finishing runner; len(pending) <= finishing
			// still holds, as both dropped by one
			q = p.pending[0]
			copy(p.pending, p.pending[1:])
			p.pending[n-1] = nil
			p.pending = p.pending[:n-1]
			p.mu.Unlock()
			continue
		}
		if p.closed.Load() || len(p.idle) >= p.maxIdle {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, r)
		p.mu.Unlock()
		q = <-r.next
	}
}

// close ends every goroutine of the pool and waits for them. The queues'
// work has ended (Device.runners), so runners are parked or leaving and
// kernel workers have no job.
func (p *pool) close() {
	idle := func() []*runner {
		p.mu.Lock()
		defer p.mu.Unlock()
		fault.Point()
		p.closed.Store(true)
		idle := p.idle
		p.idle = nil
		p.work.Broadcast()
		return idle
	}()
	for _, r := range idle {
		r.next <- nil
	}
	p.wg.Wait()
}

// kernelJob is one launch being run: the thread running the launch (the
// queue's executor) takes chunks of groups, and so do the kernel workers
// that join, each in one call into C that takes chunks until none is left
// (ctl): a thread never comes back into Go between chunks, where it could
// lose its P and wait to be scheduled again mid-launch. Every queue embeds
// one (a queue runs one op at a time), so a launch allocates nothing. A
// large copy is a job too (k nil): its units are copyBlock-byte blocks of
// the range.
type kernelJob struct {
	k      *kernel
	argp   unsafe.Pointer
	ng, gs [3]C.uint32_t
	dyn    C.size_t
	total  uint64
	ctl    C.ol_host_job_ctl

	// a copy job's copy: copySize bytes from copySrc to copyDst
	copyDst, copySrc uintptr
	copySize         uint64

	// under pool.mu
	err error // first failure
	// kernel workers inside the job (changed under pool.mu; finish also
	// polls it without)
	helpers atomic.Int32
	listed  bool      // in pool.jobs: workers may join
	left    sync.Cond // signalled when helpers drops to 0 (L = &pool.mu)
}

// reset prepares j's chunks for workers (> 1) threads: the smallest chunk
// is 1/64 of a thread's share, small enough for them to finish together.
// The workers see it after pool.mu hands them the job.
func (j *kernelJob) reset(workers uint64) {
	j.ctl.total = C.uint64_t(j.total)
	j.ctl.workers = C.uint32_t(workers)
	j.ctl.min_chunk = C.uint64_t(max(j.total/(workers*64), 1))
	j.ctl.failed = 0
	j.ctl.next = 0
}

// runAll runs all of j on the calling thread, in one call into C.
func (j *kernelJob) runAll(fp *C.ol_fiber_pool) error {
	if j.k == nil {
		C.memcpy(ptr(j.copyDst), ptr(j.copySrc), C.size_t(j.copySize))
		return nil
	}
	msg := C.ol_host_exec(j.k.desc, j.argp, &j.ng[0], &j.gs[0], 0, C.uint64_t(j.total), j.dyn, fp)
	if msg != nil {
		return execError(j.k.name, msg)
	}
	return nil
}

// chunks runs chunks of j until none is left or the job failed.
func (j *kernelJob) chunks(fp *C.ol_fiber_pool) error {
	if j.k == nil {
		C.ol_host_copy_chunks(&j.ctl, C.uintptr_t(j.copyDst), C.uintptr_t(j.copySrc), C.uint64_t(j.copySize), copyBlock)
		return nil
	}
	msg := C.ol_host_exec_chunks(&j.ctl, j.k.desc, j.argp, &j.ng[0], &j.gs[0], j.dyn, fp)
	if msg != nil {
		return execError(j.k.name, msg)
	}
	return nil
}

// fail records the first failure of a job and stops it. Called with
// pool.mu held.
func (j *kernelJob) failLocked(err error) {
	if j.err == nil {
		j.err = err
	}
	C.ol_host_job_fail(&j.ctl)
}

// post offers j to the kernel workers, starting them the first time
// (and, beside them, a look for the Go runtime's monitor thread, which
// must not preempt them: plugins/internal/sysmon).
func (p *pool) post(j *kernelJob) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fault.Point()
	if p.helpers < p.maxHelpers && !p.closed.Load() {
		p.wg.Add(1 + p.maxHelpers - p.helpers)
		go func() {
			defer p.wg.Done()
			sysmon.Relax(p.closed.Load)
		}()
		for ; p.helpers < p.maxHelpers; p.helpers++ {
			go p.kernelWorker()
		}
	}
	j.listed = true
	p.jobs = append(p.jobs, j)
	p.work.Broadcast()
}

// finishSpin bounds how long finish polls for the workers to leave a job
// before it sleeps: the last of them is usually finishing its last small
// chunk, and waking a sleeping thread costs tens of microseconds on a
// virtual machine.
const finishSpin = 100 * time.Microsecond

// finish withdraws j and waits for the workers inside it to leave; it
// returns the first failure of a worker.
func (p *pool) finish(j *kernelJob) error {
	p.mu.Lock()
	// (unlocked and locked again below, with nothing between that can
	// panic: the deferred unlock always finds it held)
	defer p.mu.Unlock()
	fault.Point()
	p.unlistLocked(j)
	if j.helpers.Load() > 0 {
		p.mu.Unlock()
		for start := time.Now(); j.helpers.Load() > 0 && time.Since(start) < finishSpin; {
		}
		p.mu.Lock()
		fault.Point()
	}
	for j.helpers.Load() > 0 {
		j.left.Wait()
	}
	err := j.err
	j.err = nil
	return err
}

func (p *pool) unlistLocked(j *kernelJob) {
	if !j.listed {
		return
	}
	j.listed = false
	for i, x := range p.jobs {
		if x == j {
			n := copy(p.jobs[i:], p.jobs[i+1:])
			p.jobs[i+n] = nil
			p.jobs = p.jobs[:i+n]
			return
		}
	}
}

// kernelWorker joins posted jobs until the pool closes. Its fiber pool
// (for group kernels) is its own, made on first use.
func (p *pool) kernelWorker() {
	var fp *C.ol_fiber_pool
	defer func() {
		C.ol_fiber_pool_free(fp)
		p.wg.Done()
	}()
	// (a worker's own goroutine: no fault points)
	p.mu.Lock()
	for {
		for !p.closed.Load() && len(p.jobs) == 0 {
			p.work.Wait()
		}
		if p.closed.Load() {
			p.mu.Unlock()
			return
		}
		j := p.jobs[0]
		j.helpers.Add(1)
		p.mu.Unlock()

		err := p.help(j, &fp)

		p.mu.Lock()
		if err != nil {
			j.failLocked(err)
		}
		// nothing left to take: no other worker needs to look at it
		p.unlistLocked(j)
		if j.helpers.Add(-1) == 0 {
			j.left.Signal()
		}
	}
}

// help runs chunks of j; a panic becomes the launch's error.
func (p *pool) help(j *kernelJob, fp **C.ol_fiber_pool) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = internalError("kernel worker", v)
		}
	}()
	hook("kernel worker")
	if j.k != nil && j.k.group() && *fp == nil {
		if *fp = C.ol_fiber_pool_new(); *fp == nil {
			return nil // out of memory: leave the groups to the launch's thread
		}
	}
	return j.chunks(*fp)
}
