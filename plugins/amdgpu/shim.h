// Trampolines from Go to ROCr (libhsa-runtime64) entry points resolved with
// dlsym. The probing calls take the entry point's address first; the rest
// take the table of entry points (lgo_hsa_fns, in C memory). hsa_status_t
// and the info enums are int-sized; hsa_agent_t, hsa_signal_t,
// hsa_amd_memory_pool_t, hsa_executable_t and the other handle types are
// structs holding one uint64_t handle, passed here as that handle.
//
// The functions on the hot path (signals, copies, fills, packets) take and
// return scalars only, so that Go passes no pointer to its own memory.
#ifndef LGO_AMDGPU_SHIM_H
#define LGO_AMDGPU_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../plugin/fastalloc.h"

#define LGO_HIDDEN __attribute__((visibility("hidden")))

LGO_HIDDEN uint32_t lgo_hsa_init(uintptr_t fn);
LGO_HIDDEN uint32_t lgo_hsa_status_string(uintptr_t fn, uint32_t status, const char **text);
LGO_HIDDEN uint32_t lgo_hsa_system_get_info(uintptr_t fn, uint32_t attr, void *value);
LGO_HIDDEN uint32_t lgo_hsa_agent_get_info(uintptr_t fn, uint64_t agent, uint32_t attr, void *value);
LGO_HIDDEN uint32_t lgo_hsa_amd_memory_pool_get_info(uintptr_t fn, uint64_t pool, uint32_t attr, void *value);

// The iterators call the Go function lgoHsaCollect (an //export in
// collect.go) for each agent or memory pool, passing data through
// unchanged.
LGO_HIDDEN uint32_t lgo_hsa_iterate_agents(uintptr_t fn, uintptr_t data);
LGO_HIDDEN uint32_t lgo_hsa_amd_agent_iterate_memory_pools(uintptr_t fn, uint64_t agent, uintptr_t data);

// Entry points used after hsa_init, in one table per runtime.
typedef struct {
  uintptr_t shut_down, agent_memory_pool_get_info;
  uintptr_t pool_allocate, pool_free, allow_access, async_copy, fill, lock, unlock, pointer_info;
  uintptr_t signal_create, signal_destroy, signal_load, signal_store_screlease, signal_wait,
      async_handler;
  uintptr_t queue_create, queue_destroy, queue_load_read_index, queue_add_write_index;
  uintptr_t reader_create, reader_destroy, executable_create, executable_load, executable_freeze,
      executable_symbol_by_name, symbol_get_info, executable_destroy;
  // optional (0 when the runtime lacks them): profiling events, SVM prefetch
  uintptr_t profiling_enable, dispatch_time, svm_prefetch;
  // The plugin's locks of host memory for copies and registrations
  // (memory.go, tempLocks), atomic: how many the runtime holds now (raised
  // before hsa_amd_memory_lock, lowered after hsa_amd_memory_unlock) and
  // how many were ever taken (raised before the lock). See
  // lgo_hsa_copy_host.
  uint64_t tlocks_live, tlocks_taken;
} lgo_hsa_fns;

// A status and a value.
typedef struct {
  uint32_t st;
  uint64_t v;
} lgo_hsa_r;

LGO_HIDDEN uint32_t lgo_hsa_shut_down(const lgo_hsa_fns *f);
LGO_HIDDEN uint32_t lgo_hsa_agent_pool_access(const lgo_hsa_fns *f, uint64_t agent, uint64_t pool, uint32_t *access);

LGO_HIDDEN lgo_hsa_r lgo_hsa_pool_allocate(const lgo_hsa_fns *f, uint64_t pool, size_t size);
LGO_HIDDEN uint32_t lgo_hsa_pool_free(const lgo_hsa_fns *f, uintptr_t p);
LGO_HIDDEN uint32_t lgo_hsa_allow_access(const lgo_hsa_fns *f, const uint64_t *agents, uint32_t n, uintptr_t p);
LGO_HIDDEN lgo_hsa_r lgo_hsa_lock(const lgo_hsa_fns *f, uintptr_t p, size_t size, const uint64_t *agents, uint32_t n);
LGO_HIDDEN uint32_t lgo_hsa_unlock(const lgo_hsa_fns *f, uintptr_t p);
// The runtime pool's slabs (plugin.FastAllocDevice): an ol_fastalloc that
// allocates as the plugin's DriverAlloc does, DEVICE memory from dev_pool
// made reachable by the n_peers agents at peers, HOST and MANAGED memory
// from host_pool made reachable by the n_agents agents at agents (a pool
// of 0: that memory is not pooled). The arrays stay the caller's and must
// outlive it. NULL when out of memory; lgo_hsa_fastalloc_free releases it.
LGO_HIDDEN ol_fastalloc *lgo_hsa_fastalloc_new(const lgo_hsa_fns *f, uint64_t dev_pool, const uint64_t *peers,
                                               uint32_t n_peers, uint64_t host_pool, const uint64_t *agents,
                                               uint32_t n_agents);
LGO_HIDDEN void lgo_hsa_fastalloc_free(ol_fastalloc *a);
// What hsa_amd_pointer_info says of p: its type (hsa_amd_pointer_type_t;
// 0 when the runtime does not know it or the query fails), its owning
// agent, and the address a GPU uses for it (p itself for runtime
// allocations and unknown memory, the agent address of locked host
// memory).
typedef struct {
  uint32_t type;
  uint64_t owner;
  uintptr_t agent_addr;
} lgo_hsa_ptr;
LGO_HIDDEN lgo_hsa_ptr lgo_hsa_pointer_info(const lgo_hsa_fns *f, uintptr_t p);

// Copies size bytes after dep (0: none) completes, then decrements done.
LGO_HIDDEN uint32_t lgo_hsa_copy(const lgo_hsa_fns *f, uintptr_t dst, uint64_t dst_agent, uintptr_t src,
                                 uint64_t src_agent, size_t size, uint64_t dep, uint64_t done);
// lgo_hsa_copy after setting done to 1 (one crossing for a pooled signal,
// which the pool keeps as its last use left it).
LGO_HIDDEN uint32_t lgo_hsa_copy_armed(const lgo_hsa_fns *f, uintptr_t dst, uint64_t dst_agent, uintptr_t src,
                                       uint64_t src_agent, size_t size, uint64_t dep, uint64_t done);
// lgo_hsa_copy_armed between host memory and a GPU agent's memory, the
// host side (dst when to_host, else src) at the address the GPUs use for
// it (as lgo_hsa_pointer_info says); returns
// LGO_HSA_UNKNOWN_HOST_MEMORY without copying when the runtime does not
// know the host memory, or knows it as locked while locks of the
// plugin's may be held: it may know it only through one of those, which
// ends with the last copy or registration that uses it, so the copy must
// join that lock (Go, hostAddr) rather than use the memory as it finds it.
#define LGO_HSA_UNKNOWN_HOST_MEMORY 0xffffffffu
LGO_HIDDEN uint32_t lgo_hsa_copy_host(const lgo_hsa_fns *f, bool to_host, uintptr_t dst, uintptr_t src, uint64_t agent,
                                      size_t size, uint64_t dep, uint64_t done);
LGO_HIDDEN uint32_t lgo_hsa_fill(const lgo_hsa_fns *f, uintptr_t p, uint32_t value, size_t count);

LGO_HIDDEN lgo_hsa_r lgo_hsa_signal_create(const lgo_hsa_fns *f, int64_t value);
LGO_HIDDEN uint32_t lgo_hsa_signal_destroy(const lgo_hsa_fns *f, uint64_t s);
LGO_HIDDEN int64_t lgo_hsa_signal_load(const lgo_hsa_fns *f, uint64_t s);
LGO_HIDDEN void lgo_hsa_signal_store(const lgo_hsa_fns *f, uint64_t s, int64_t value);
// The completion signals of a queue's pending operations, oldest first:
// ring holds mask+1 handles, the n pending from index head on. Their
// operations complete in order, so the done ones are a prefix.
typedef struct {
  uint32_t done;  // how many are done (value below 1), from head on
  uint32_t bad;   // the first of those that failed (value below 0); done when none
  int64_t value;  // its value
} lgo_hsa_scan_r;
LGO_HIDDEN lgo_hsa_scan_r lgo_hsa_scan(const lgo_hsa_fns *f, const uint64_t *ring, uint32_t mask, uint32_t head,
                                       uint32_t n);
// Waits (blocked) until s is below 1 or about timeout_hint has passed;
// returns the value last seen.
LGO_HIDDEN int64_t lgo_hsa_signal_wait(const lgo_hsa_fns *f, uint64_t s, uint64_t timeout_hint);
// Has lgoHsaSignalReady(id) called on the runtime's handler thread once s
// is below 1.
LGO_HIDDEN uint32_t lgo_hsa_on_ready(const lgo_hsa_fns *f, uint64_t s, uintptr_t id);

// Creates an HSA queue whose errors go to lgoHsaQueueError(status, id).
LGO_HIDDEN lgo_hsa_r lgo_hsa_queue_create(const lgo_hsa_fns *f, uint64_t agent, uint32_t size, uintptr_t id);
LGO_HIDDEN uint32_t lgo_hsa_queue_destroy(const lgo_hsa_fns *f, uintptr_t q);

// Writes an AQL kernel dispatch packet (barrier bit set, system-scope
// fences) to q and rings its doorbell: the body first, then the 16-bit
// header with release ordering. dims is the number of grid dimensions;
// tag goes to the packet's reserved2 field, which the packet processor
// ignores (tools use it to tag packets; see coopTag).
LGO_HIDDEN void lgo_hsa_dispatch(const lgo_hsa_fns *f, uintptr_t q, uint16_t dims, uint16_t wx, uint16_t wy,
                                 uint16_t wz, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t private_size,
                                 uint32_t group_size, uint64_t kernel_object, uintptr_t kernarg, uint64_t tag,
                                 uint64_t done, bool arm);
// Writes an AQL barrier-AND packet waiting for dep0 and dep1 (0: none),
// then decrementing done (0: none), and rings the doorbell.
LGO_HIDDEN void lgo_hsa_barrier(const lgo_hsa_fns *f, uintptr_t q, uint64_t dep0, uint64_t dep1, uint64_t done);

// hsa_amd_profiling_set_profiler_enabled(q, 1): the packets of q record
// when they start and end in their completion signals.
LGO_HIDDEN uint32_t lgo_hsa_profiling_enable(const lgo_hsa_fns *f, uintptr_t q);
// When the packet that completed signal s (on a profiling queue of agent)
// ended, in system timestamp ticks.
LGO_HIDDEN lgo_hsa_r lgo_hsa_dispatch_end(const lgo_hsa_fns *f, uint64_t agent, uint64_t s);
// hsa_amd_svm_prefetch_async of [p, p+size) toward agent after dep (0:
// none); decrements done.
LGO_HIDDEN uint32_t lgo_hsa_svm_prefetch(const lgo_hsa_fns *f, uintptr_t p, size_t size, uint64_t agent, uint64_t dep,
                                         uint64_t done);

LGO_HIDDEN lgo_hsa_r lgo_hsa_reader_create(const lgo_hsa_fns *f, const void *image, size_t size);
LGO_HIDDEN uint32_t lgo_hsa_reader_destroy(const lgo_hsa_fns *f, uint64_t reader);
LGO_HIDDEN lgo_hsa_r lgo_hsa_executable_create(const lgo_hsa_fns *f, uint32_t profile);
LGO_HIDDEN uint32_t lgo_hsa_executable_load(const lgo_hsa_fns *f, uint64_t exe, uint64_t agent, uint64_t reader);
LGO_HIDDEN uint32_t lgo_hsa_executable_freeze(const lgo_hsa_fns *f, uint64_t exe);
LGO_HIDDEN uint32_t lgo_hsa_executable_destroy(const lgo_hsa_fns *f, uint64_t exe);
LGO_HIDDEN lgo_hsa_r lgo_hsa_symbol(const lgo_hsa_fns *f, uint64_t exe, const char *name, uint64_t agent);
LGO_HIDDEN uint32_t lgo_hsa_symbol_info(const lgo_hsa_fns *f, uint64_t sym, uint32_t attr, void *value);

// The host-function state of a library thread running one (see hostop.go).
LGO_HIDDEN uintptr_t lgo_hsa_running_queue(void);
LGO_HIDDEN uint64_t lgo_hsa_running_mark(void);
// Runs host function fn(user) with the state set to (queue, mark), then puts it back.
LGO_HIDDEN void lgo_hsa_run_host(uintptr_t queue, uint64_t mark, uintptr_t fn, uintptr_t user);

// The C submissions of a queue (cpath.c): copies and launches the
// runtime's C entry points hand to ol_fastq.copy and ol_fastq.launch are
// submitted here without entering Go. One lgo_hsa_cq per hwQueue; the
// queue's ol_fastq is followed by a pointer to it (fastq.State.Extra).
//
// lock is held (1) by whoever submits to the HSA queue or reads or writes
// the fields below it: Go (hwQueue.lock, which also holds hwQueue.mu) or
// C (a try: C declines when Go holds it). C operations take slots in order
// (sequence numbers next, mod cap): a signal, and a kernel-argument buffer
// once kargs is set. A copy completes its slot's signal; a launch only
// every cap/4 slots (the barrier bit orders the others), sigd says which.
// The operations are chained, so a done signal frees its slot and every
// slot before it (lgo_hsa_cq_reclaim, from freed on). Go turns the C
// operations not yet absorbed into one ring entry (hwQueue.absorb), which
// frees their slots once done, and takes the last one's signal out of its
// slot (a fresh one replaces it):
// events and later operations may refer to that one as long as they like,
// while the slots' signals are the slots' alone. When the last operation
// is a launch without a signal (last_nosig), absorb first puts a barrier-
// AND packet completing that signal after it (lgo_hsa_cq_seal).
#define LGO_HSA_CSLOTS 4096
#define LGO_HSA_CKARG 512 // bytes of a slot's kernel-argument buffer (kernargClass 1)
#define LGO_HSA_WANT_SLOTS 1u
#define LGO_HSA_WANT_KARGS 2u
typedef struct {
  uint32_t lock;
  uint32_t fault;  // the HSA queue failed (hwQueue.fault): C declines
  uint32_t want;   // what C found missing (LGO_HSA_WANT_*): Go makes it when it can
  uint32_t cap;    // slots with a signal (0, or a power of two)
  uint32_t broken; // Go could not replace a slot's signal: no more C submissions
  uint32_t kargs;  // every slot has a kernel-argument buffer
  uint32_t last_in_ring;
  uint32_t last_nosig; // the latest operation is a C launch without a signal: last is not its signal
  uint64_t last;       // the queue's latest operation (hwQueue.last; 0: none)
  // sequence numbers: the next C operation's, the first one absorb has
  // not seen, the first slot in use, the first whose signal (if any) was
  // not seen done
  uint64_t next, absorbed, freed, seen;
  uint64_t shift; // what Go took off the sequence numbers so far (hwQueue.growSlots)
  int64_t failed; // the value of a failed slot's signal that Go has not reported yet (0: none)
  uint64_t id;    // hwQueue.id (never reused)
  uintptr_t hq;   // hsa_queue_t *
  const lgo_hsa_fns *f;
  uint64_t agent;
  uint64_t sig[LGO_HSA_CSLOTS];
  uintptr_t karg[LGO_HSA_CSLOTS];
  uint8_t sigd[LGO_HSA_CSLOTS];
  // the kernel arguments a C launch last wrote (to kbuf): code object,
  // segment size, implicit arguments' offset, argument bytes copied, grid
  uintptr_t kbuf;
  uint64_t kobj, kn;
  int64_t koff;
  uint32_t kseg, kgeo[6];
} lgo_hsa_cq;
// lgo_hsa_cq_seal: a barrier-AND packet completing slot i's signal (set to
// 1 first), which becomes the queue's last.
LGO_HIDDEN void lgo_hsa_cq_seal(lgo_hsa_cq *c, uint32_t i);
// lgo_hsa_cq_reclaim looks at the signals from seen on, freeing the slots
// before the last done one and recording a failure in failed.
LGO_HIDDEN void lgo_hsa_cq_reclaim(lgo_hsa_cq *c);
// The queues' ol_fastq.copy and ol_fastq.launch.
LGO_HIDDEN void *lgo_hsa_fast_copy_fn(void);
LGO_HIDDEN void *lgo_hsa_fast_launch_fn(void);

// The C view of a kernel (plugin.FastKernel): what Queue.launch checks and
// writes. last_hw is the id of the HSA queue its program last saw a Go
// launch on (Program.queues); C launches only there.
typedef struct {
  uint64_t object;
  uint32_t seg, private_size, group_size, max_group;
  int64_t implicit_off, args_size; // -1: none, not known
  uint32_t group_max[3], grid_max[3];
  uint64_t total_max, lds_limit;
  uint64_t last_hw;
} lgo_hsa_fastk;
// Calls q's ol_fastq.copy or .launch (tests).
LGO_HIDDEN int lgo_hsa_fastq_copy(void *q, int dir, uint64_t dst, uint64_t src, uint64_t n);
LGO_HIDDEN int lgo_hsa_fastq_launch(void *q, const void *k, const void *args, uint64_t size, uint32_t gx, uint32_t gy,
                                    uint32_t gz, uint32_t bx, uint32_t by, uint32_t bz, uint64_t dyn);

#endif
