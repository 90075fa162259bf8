// Finding the Go runtime's monitor thread (see sysmon.go).
#ifndef LIBOFFLOAD_GO_SYSMON_H
#define LIBOFFLOAD_GO_SYSMON_H

// A sample reads one file per thread; it reads at most this many (and in
// a process with more threads, sysmon may go unseen).
#define OL_SYSMON_MAX_THREADS 512

// Sleeps interval_us, then looks for the threads of this process, other
// than the calling one, that sleep in nanosleep called from this object's
// code, and counts each in tids/counts (n entries so far, at most max).
// Returns the new n.
int ol_sysmon_sample(int interval_us, int *tids, int *counts, int n, int max);

// Makes thread tid SCHED_BATCH if it is SCHED_OTHER. Returns 0 on success,
// else an errno value (ESRCH, EPERM, or EINVAL when its policy is another).
int ol_sysmon_batch(int tid);

// The policy of thread tid (sched_getscheduler), or -1.
int ol_sysmon_policy(int tid);

// This thread's id.
int ol_sysmon_gettid(void);

// Sleeps ms milliseconds in C (tests: a thread that holds its P in a
// long call into C).
void ol_sysmon_sleep_ms(int ms);

#endif
