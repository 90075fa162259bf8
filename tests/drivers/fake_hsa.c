/*
 * fake_hsa.c - a driver double of ROCr (libhsa-runtime64) for the AMDGPU
 * plugin's tests.
 *
 * It exports the HSA entry points the plugin resolves, with the runtime's C
 * signatures, struct layouts and enum values (taken from ROCm's public
 * hsa.h / hsa_ext_amd.h / amd_hsa_queue.h / amd_hsa_signal.h; the numbers
 * are written next to their names below), and behaves like the runtime
 * where the plugin's correctness depends on it. The Go tests build it with
 * `cc -shared -fPIC -I include` into a temporary directory and point
 * OFFLOAD_HSA_LIBRARY at the result; tests/drivers/fake_hsa_selftest.c
 * drives it the way a runtime user would (plugins/amdgpu/
 * fake_hsa_selftest_test.go builds and runs it).
 *
 * Fault injection, read with getenv when each call is made:
 *   FAKE_HSA_GPUS=<n>               GPU agents (default 0, at most 8); there
 *                                   is always one CPU agent first, which the
 *                                   plugin must skip (read at the hsa_init
 *                                   that starts the runtime)
 *   FAKE_HSA_GFX=<gfx>[,<gfx>...]   each GPU's target, e.g. gfx90a, gfx942,
 *                                   gfx1100, or with features
 *                                   gfx90a:sramecc+:xnack- (default gfx90a;
 *                                   the last entry repeats; read with
 *                                   FAKE_HSA_GPUS)
 *   FAKE_HSA_INIT_RESULT=<status>   what hsa_init returns (default 0)
 *   FAKE_HSA_ITERATE_RESULT=<st>    what hsa_iterate_agents returns instead
 *                                   of walking the agents (default: walk)
 *   FAKE_HSA_ALLOC_RESULT=<st>      what hsa_amd_memory_pool_allocate
 *                                   returns (e.g. 0x1008)
 *   FAKE_HSA_LOAD_RESULT=<st>       what hsa_executable_load_agent_code_object
 *                                   returns (e.g. 0x1010)
 *   FAKE_HSA_CTOR_RESULT=<st>       read when amdgcn.device.init or
 *                                   amdgcn.device.fini is dispatched: the
 *                                   kernel faults with this status instead
 *                                   of running (a constructor that faults)
 *   FAKE_HSA_SHUTDOWN_RESULT=<st>   what the final hsa_shut_down returns (the
 *                                   runtime is torn down all the same)
 *   FAKE_HSA_QUEUE_STUCK=1          read when a doorbell is written: the
 *                                   queue processes no packet after it (their
 *                                   completion signals never change)
 *   FAKE_HSA_COPY_ERROR=1           read by hsa_amd_memory_async_copy: the
 *                                   copy does not happen and its completion
 *                                   signal is set to -1 (how ROCr reports a
 *                                   failed copy)
 *   FAKE_HSA_HOLD=1                 the copy engine and the queues run only
 *                                   while somebody waits on a signal (a
 *                                   benchmark's mode, bench/run.sh; see held)
 *   FAKE_HSA_ALLOC_US=<n>           each hsa_amd_memory_pool_allocate and
 *                                   each hsa_amd_memory_pool_free sleeps n
 *                                   microseconds first, outside the lock (a
 *                                   real runtime's cost; default 0)
 *   FAKE_HSA_MEMORY_BYTES=<n>       device memory of each GPU: an
 *                                   allocation from a GPU's pool that would
 *                                   take its live bytes past n is
 *                                   HSA_STATUS_ERROR_OUT_OF_RESOURCES
 *                                   (default: the 16 GiB of address space)
 *
 * A missing symbol cannot be simulated at run time (the dynamic symbol table
 * is fixed when the library is linked); the tests hide symbols at link time
 * with a version script instead.
 *
 * Agents. Handles: 0x100 is the CPU, 0x200 + i is GPU i (0-based). GPU i:
 *   name = its gfx (default "gfx90a"), vendor "AMD", product
 *   "Fake AMD GPU <i>", UUID "GPU-00000000000000a<i>", workgroup max size
 *   1024, workgroup max dims 1024/1024/1024, grid max size 4294967295,
 *   grid max dims 4294967295/65535/65535 (made up to tell the dimensions
 *   apart), 104 + i compute units, max clock 1700 MHz, memory clock
 *   1600 MHz, wavefront 64 (32 for gfx10 and later), queues of 64 to 131072
 *   packets, ISA "amdgcn-amd-amdhsa--<target>" (handle 0x4000 + i).
 * Memory pools (handles):
 *   CPU 0x800  global, FINE_GRAINED | KERNARG_INIT, 16 GiB: system memory
 *   CPU 0x801  global, FINE_GRAINED, 16 GiB: system memory
 *   GPU i, 0x1000 * (i+1) + k:
 *     k=0 global FINE_GRAINED (i+1) GiB: memory the CPU can touch
 *     k=1 global COARSE_GRAINED (i+1) * 64 GiB: device memory
 *     k=2 group 64 KiB (no allocation)
 *   Device memory lives at addresses the CPU cannot touch: a mapping kept
 *   PROT_NONE (a CPU dereference faults) except while a kernel of the double
 *   runs; its bytes are reached through a second mapping of the same file,
 *   which only the double uses (copies, fills, peek/poke). Freed device
 *   memory stays inaccessible to copies, fills and kernels for a while (a
 *   bounded quarantine), so work that runs on it after
 *   hsa_amd_memory_pool_free ends the process with SIGSEGV.
 *   Access (hsa_amd_agent_memory_pool_get_info ACCESS): an agent's own pools
 *   ALLOWED_BY_DEFAULT; CPU pools for GPUs, and a GPU's global pools for
 *   other GPUs, DISALLOWED_BY_DEFAULT (hsa_amd_agents_allow_access grants
 *   it per allocation); device memory for the CPU, and group pools for
 *   other agents, NEVER_ALLOWED. Small system-memory allocations (64 KiB
 *   or less) start filled with 0xCD, as reused memory would: nothing is
 *   zero unless the caller zeroes it.
 *   hsa_amd_memory_lock makes host memory reachable by the GPUs named (all
 *   GPUs when none is named); agent_ptr == host_ptr.
 * Copies (hsa_amd_memory_async_copy) run on one thread of the double once
 *   their dependency signals are 0 (a negative dependency fails the copy:
 *   its completion signal is set to -1), then decrement the completion
 *   signal. The copy is made by the source agent if it is a GPU, else by the
 *   destination agent: that GPU must reach both buffers (pool allocations
 *   it was allowed, its own memory, locked memory, its code objects'
 *   globals), else HSA_STATUS_ERROR_INVALID_AGENT; memory the runtime does
 *   not know is HSA_STATUS_ERROR_INVALID_ARGUMENT. Between two CPU agents it
 *   is a plain copy of CPU-accessible memory. Both buffers are checked
 *   again when the copy runs: memory freed or unlocked meanwhile fails the
 *   copy (completion signal -1, an error counted) instead of crashing.
 * Signals: handles point at a 64-byte record laid out as amd_signal_t (kind
 *   at 0, value at 8). A wait honours timeout_hint in nanoseconds
 *   (HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY is 1 GHz). Async handlers run on
 *   one thread of the double, one at a time; every hsa_* call works there
 *   except a wait that would block: it returns the current value at once
 *   and counts an error (fake_hsa_errors). A handler returning true stays
 *   registered (and runs again while its condition holds). Destroying a
 *   signal that a pending copy or another registered handler uses is
 *   refused (HSA_STATUS_ERROR_INVALID_SIGNAL).
 * Queues: hsa_queue_create returns an hsa_queue_t inside a record laid out
 *   as amd_queue_t (write index at byte 56, read index at 128); its ring is
 *   CPU memory with every header INVALID. A thread per queue processes the
 *   packets up to the last index written to the doorbell signal, in order,
 *   one at a time (so the barrier bit always holds), each once its header
 *   type is no longer INVALID; afterwards the header is set back to INVALID,
 *   the read index advanced, and the completion signal decremented.
 *   Kernel-dispatch and barrier-AND packets are supported. Anything wrong in
 *   a packet (another type, bad dimensions, an unknown or unfrozen kernel
 *   object, kernarg memory outside an allowed KERNARG_INIT allocation,
 *   implicit arguments that disagree with the packet, too much group
 *   memory, partial work-groups) makes the queue fail: no later packet
 *   runs, the error is counted (fake_hsa_errors, fake_hsa_last_error) and
 *   the queue's callback is called with the status on the handler thread,
 *   as ROCr does (the callback may destroy the queue). Statuses: another
 *   packet type, bad dimensions, fence scope 3, partial work-groups:
 *   HSA_STATUS_ERROR_INVALID_PACKET_FORMAT; implicit arguments, group
 *   memory over 64 KiB, work-groups over 1024: INVALID_ARGUMENT; a kernel
 *   object the double did not hand out for this agent's frozen executable
 *   (or one of a destroyed executable: kernel objects are never reused):
 *   INVALID_CODE_SYMBOL; kernarg memory: MEMORY_APERTURE_VIOLATION; a dead
 *   dependency or completion signal: INVALID_SIGNAL; a negative barrier
 *   dependency: HSA_STATUS_ERROR. The failed packet's completion signal is
 *   left alone.
 *   Limits of the double: packets run one at a time in order (the barrier
 *   bit always holds); partial work-groups are refused; a kernel reaching
 *   host memory nobody allowed is not caught; code objects' globals live in
 *   the loaded host object, so the CPU can touch them.
 * Code objects: a host shared object built from tests/c/kernels, its ELF
 *   header dressed as an AMDGPU code object (e_machine 224, e_flags the
 *   gfx's EF_AMDGPU_MACH value plus the xnack/sramecc bits clang-22 writes:
 *   0x53f for gfx90a, 0x54c for gfx942, 0x41 for gfx1100). Loading it for
 *   an agent of another gfx (or with a contrary xnack/sramecc setting) is
 *   HSA_STATUS_ERROR_INVALID_ISA; bytes that are not such an ELF are
 *   HSA_STATUS_ERROR_INVALID_CODE_OBJECT. Kernels are "NAME.kd" (KERNEL):
 *   kernarg segment size align8(argument struct) + 256, alignment 8, group
 *   and private segment sizes 0; globals are "NAME" (VARIABLE). A dispatch
 *   runs the kernel over the whole grid with the host device's runner
 *   (plugins/host/exec.c), with group_segment_size bytes of dynamic group
 *   memory; a cooperative launch's dispatch (reserved2 "OLCOOP", set by
 *   the plugin) runs every work-group at once, one thread each, so that
 *   ol_grid_barrier() works (at most compute units x 16 groups). As ROCr, the double runs no constructor or destructor of a code
 *   object (its .init_array and .fini_array are taken from the host loader):
 *   an object that has them has the kernels clang emits to run them,
 *   "amdgcn.device.init.kd" and "amdgcn.device.fini.kd" (kernarg segment
 *   256 bytes, implicit arguments only, dynamic call stack), whose dispatch
 *   calls the .init_array entries in order (the .fini_array entries in
 *   reverse order), once per work-item; one whose packet gives no private
 *   segment (private_segment_size 0) faults:
 *   HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION.
 *
 * Test hooks (exported):
 *   int  fake_hsa_init_calls(void)   hsa_init calls so far
 *   long fake_hsa_live(const char *kind)  objects alive now plus those
 *        still alive at a final hsa_shut_down (leaked): "alloc", "signal",
 *        "queue", "executable", "lock", "handler", "reader", "copy"
 *        (pending copies), "bytes" (of pool allocations, in whole
 *        pages); -1 for another kind
 *   long fake_hsa_leaked(const char *kind)  only those counted at final
 *        hsa_shut_down calls
 *   int  fake_hsa_peek(const void *ptr, void *dst, size_t n)
 *   int  fake_hsa_poke(void *ptr, const void *src, size_t n)
 *        copy out of / into memory the runtime knows (device memory
 *        included): 0, or -1 if [ptr, ptr+n) is not inside one allocation
 *   int  fake_hsa_errors(void)        asynchronous errors so far (failed
 *        queues, blocking waits on the handler thread, invalid handles
 *        given to calls that return no status)
 *   const char *fake_hsa_last_error(void)  the latest error text, including
 *        those of refused calls ("" if none)
 *   long fake_hsa_dispatches(void)    kernels run
 *   long fake_hsa_copies(void)        copies done
 *   long fake_hsa_unordered(void)     packets processed without the barrier
 *        bit (a GPU may start them before the packets ahead of them end;
 *        the double runs them in order all the same)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <offload/kernel.h>

/* The host device's kernel runner runs the double's code objects. Hidden,
 * so that it never binds to the library's own copy. */
#pragma GCC visibility push(hidden)
#include "../../plugins/host/exec.c"
#pragma GCC visibility pop

/* ------------------------------------------------------------------ */
/* ABI: types and values of hsa.h / hsa_ext_amd.h                       */

typedef int hsa_status_t;
typedef struct { uint64_t handle; } hsa_agent_t;
typedef struct { uint64_t handle; } hsa_amd_memory_pool_t;
typedef struct { uint64_t handle; } hsa_signal_t;
typedef struct { uint64_t handle; } hsa_isa_t;
typedef struct { uint64_t handle; } hsa_executable_t;
typedef struct { uint64_t handle; } hsa_code_object_reader_t;
typedef struct { uint64_t handle; } hsa_loaded_code_object_t;
typedef struct { uint64_t handle; } hsa_executable_symbol_t;
typedef struct { uint32_t x, y, z; } hsa_dim3_t;
typedef int64_t hsa_signal_value_t; /* 64-bit (large model) */

/* hsa_status_t */
enum {
  HSA_STATUS_SUCCESS = 0x0,
  HSA_STATUS_INFO_BREAK = 0x1,
  HSA_STATUS_ERROR = 0x1000,
  HSA_STATUS_ERROR_INVALID_ARGUMENT = 0x1001,
  HSA_STATUS_ERROR_INVALID_QUEUE_CREATION = 0x1002,
  HSA_STATUS_ERROR_INVALID_ALLOCATION = 0x1003,
  HSA_STATUS_ERROR_INVALID_AGENT = 0x1004,
  HSA_STATUS_ERROR_INVALID_REGION = 0x1005,
  HSA_STATUS_ERROR_INVALID_SIGNAL = 0x1006,
  HSA_STATUS_ERROR_INVALID_QUEUE = 0x1007,
  HSA_STATUS_ERROR_OUT_OF_RESOURCES = 0x1008,
  HSA_STATUS_ERROR_INVALID_PACKET_FORMAT = 0x1009,
  HSA_STATUS_ERROR_RESOURCE_FREE = 0x100A,
  HSA_STATUS_ERROR_NOT_INITIALIZED = 0x100B,
  HSA_STATUS_ERROR_REFCOUNT_OVERFLOW = 0x100C,
  HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS = 0x100D,
  HSA_STATUS_ERROR_INVALID_INDEX = 0x100E,
  HSA_STATUS_ERROR_INVALID_ISA = 0x100F,
  HSA_STATUS_ERROR_INVALID_CODE_OBJECT = 0x1010,
  HSA_STATUS_ERROR_INVALID_EXECUTABLE = 0x1011,
  HSA_STATUS_ERROR_FROZEN_EXECUTABLE = 0x1012,
  HSA_STATUS_ERROR_INVALID_SYMBOL_NAME = 0x1013,
  HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED = 0x1014,
  HSA_STATUS_ERROR_VARIABLE_UNDEFINED = 0x1015,
  HSA_STATUS_ERROR_EXCEPTION = 0x1016,
  HSA_STATUS_ERROR_INVALID_ISA_NAME = 0x1017,
  HSA_STATUS_ERROR_INVALID_CODE_SYMBOL = 0x1018,
  HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL = 0x1019,
  HSA_STATUS_ERROR_INVALID_FILE = 0x1020,
  HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER = 0x1021,
  HSA_STATUS_ERROR_INVALID_CACHE = 0x1022,
  HSA_STATUS_ERROR_INVALID_WAVEFRONT = 0x1023,
  HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP = 0x1024,
  HSA_STATUS_ERROR_INVALID_RUNTIME_STATE = 0x1025,
  HSA_STATUS_ERROR_FATAL = 0x1026,
  /* hsa_ext_amd.h */
  HSA_STATUS_ERROR_INVALID_MEMORY_POOL = 40,
  HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION = 41,
  HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION = 42,
  HSA_STATUS_ERROR_MEMORY_FAULT = 43,
};

/* hsa_signal_condition_t */
enum { HSA_SIGNAL_CONDITION_EQ = 0, HSA_SIGNAL_CONDITION_NE = 1, HSA_SIGNAL_CONDITION_LT = 2, HSA_SIGNAL_CONDITION_GTE = 3 };
/* hsa_packet_type_t (header bits 0-7) */
enum {
  HSA_PACKET_TYPE_VENDOR_SPECIFIC = 0,
  HSA_PACKET_TYPE_INVALID = 1,
  HSA_PACKET_TYPE_KERNEL_DISPATCH = 2,
  HSA_PACKET_TYPE_BARRIER_AND = 3,
  HSA_PACKET_TYPE_AGENT_DISPATCH = 4,
  HSA_PACKET_TYPE_BARRIER_OR = 5,
};
/* hsa_packet_header_t: bit positions; widths 8, 1, 2, 2 */
enum { HSA_PACKET_HEADER_TYPE = 0, HSA_PACKET_HEADER_BARRIER = 8, HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE = 9,
       HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE = 11 };
/* hsa_queue_type_t; hsa_queue_feature_t */
enum { HSA_QUEUE_TYPE_MULTI = 0, HSA_QUEUE_TYPE_SINGLE = 1, HSA_QUEUE_FEATURE_KERNEL_DISPATCH = 1,
       HSA_QUEUE_FEATURE_AGENT_DISPATCH = 2 };
/* hsa_amd_segment_t; hsa_amd_memory_pool_global_flag_t */
enum { HSA_AMD_SEGMENT_GLOBAL = 0, HSA_AMD_SEGMENT_READONLY = 1, HSA_AMD_SEGMENT_PRIVATE = 2, HSA_AMD_SEGMENT_GROUP = 3 };
enum { FLAG_KERNARG_INIT = 1, FLAG_FINE_GRAINED = 2, FLAG_COARSE_GRAINED = 4 };
/* hsa_amd_memory_pool_access_t */
enum { ACCESS_NEVER_ALLOWED = 0, ACCESS_ALLOWED_BY_DEFAULT = 1, ACCESS_DISALLOWED_BY_DEFAULT = 2 };
/* hsa_amd_pointer_type_t */
enum { HSA_EXT_POINTER_TYPE_UNKNOWN = 0, HSA_EXT_POINTER_TYPE_HSA = 1, HSA_EXT_POINTER_TYPE_LOCKED = 2 };
/* hsa_symbol_kind_t */
enum { HSA_SYMBOL_KIND_VARIABLE = 0, HSA_SYMBOL_KIND_KERNEL = 1 };

/* hsa_queue_t (large model): 40 bytes */
typedef struct hsa_queue_s {
  uint32_t type;           /* hsa_queue_type32_t */
  uint32_t features;
  void *base_address;      /* the ring: size packets of 64 bytes */
  hsa_signal_t doorbell_signal;
  uint32_t size;           /* packets */
  uint32_t reserved1;
  uint64_t id;
} hsa_queue_t;
_Static_assert(sizeof(hsa_queue_t) == 40, "hsa_queue_t layout");
_Static_assert(offsetof(hsa_queue_t, doorbell_signal) == 16, "hsa_queue_t layout");
_Static_assert(offsetof(hsa_queue_t, id) == 32, "hsa_queue_t layout");

/* hsa_kernel_dispatch_packet_t: 64 bytes */
typedef struct {
  uint16_t header;
  uint16_t setup; /* bits 0-1: dimensions */
  uint16_t workgroup_size_x, workgroup_size_y, workgroup_size_z;
  uint16_t reserved0;
  uint32_t grid_size_x, grid_size_y, grid_size_z;
  uint32_t private_segment_size;
  uint32_t group_segment_size;
  uint64_t kernel_object;
  void *kernarg_address;
  uint64_t reserved2;
  hsa_signal_t completion_signal;
} dispatch_packet;
_Static_assert(sizeof(dispatch_packet) == 64, "dispatch packet layout");
_Static_assert(offsetof(dispatch_packet, kernel_object) == 32, "dispatch packet layout");
_Static_assert(offsetof(dispatch_packet, completion_signal) == 56, "dispatch packet layout");

/* hsa_barrier_and_packet_t: 64 bytes */
typedef struct {
  uint16_t header;
  uint16_t reserved0;
  uint32_t reserved1;
  hsa_signal_t dep_signal[5];
  uint64_t reserved2;
  hsa_signal_t completion_signal;
} barrier_packet;
_Static_assert(sizeof(barrier_packet) == 64, "barrier-AND packet layout");

/* hsa_amd_pointer_info_t: 56 bytes */
typedef struct {
  uint32_t size;
  uint32_t type; /* hsa_amd_pointer_type_t */
  void *agentBaseAddress;
  void *hostBaseAddress;
  size_t sizeInBytes;
  void *userData;
  hsa_agent_t agentOwner;
  uint32_t global_flags;
} pointer_info;
_Static_assert(sizeof(pointer_info) == 56, "hsa_amd_pointer_info_t layout");

/* ------------------------------------------------------------------ */
/* State                                                                */

#define MAX_GPUS 8
#define CPU_AGENT 0x100u
#define GPU_AGENT0 0x200u
#define CPU_POOL_KERNARG 0x800u
#define CPU_POOL_FINE 0x801u
#define ISA0 0x4000u
#define ACC_CPU (1u << 31)
#define GROUP_MEMORY 65536u
/* reserved2 of a cooperative launch's dispatch packet ("OLCOOP", see
 * plugins/amdgpu coopTag) */
#define COOP_TAG 0x504f4f434c4full
#define QUEUE_MIN 64u
#define QUEUE_MAX 131072u

/* One lock for everything. Callers' signal waits use cv (broadcast on
 * every signal change); the double's threads have their own condition
 * variables, woken only when there is something for them: the copy thread
 * (copy_cv), the handler thread (handler_cv), each queue's thread (its
 * cv: its doorbell, or a signal change while it waits at a barrier). */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* Unlinks and yields the first element E of the list at *HEAD (linked by
 * `next`) for which MATCH holds, or NULL (mu held). */
#define LIST_TAKE(head, type, E, match)                                        \
  ({                                                                           \
    type *taken_ = NULL;                                                       \
    for (type **p_ = (head); *p_; p_ = &(*p_)->next) {                         \
      type *E = *p_;                                                           \
      if (match) {                                                             \
        *p_ = E->next;                                                         \
        taken_ = E;                                                            \
        break;                                                                 \
      }                                                                        \
    }                                                                          \
    taken_;                                                                    \
  })

/* Appends E to the end of the list at *HEAD (linked by `next`; mu held). */
#define LIST_APPEND(head, type, e)                                             \
  do {                                                                         \
    type **t_ = (head);                                                        \
    while (*t_)                                                                \
      t_ = &(*t_)->next;                                                       \
    *t_ = (e);                                                                 \
  } while (0)

/* Loops over the list at *HEAD, unlinking each element E before the loop's
 * body runs on it; the list is empty at the end (mu held). */
#define LIST_DRAIN(head, type, E) for (type *E; (E = *(head)) != NULL && (*(head) = E->next, 1);)

static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t copy_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t handler_cv = PTHREAD_COND_INITIALIZER;

static int init_calls;
static int refs; /* hsa_init references */
static int ngpus;

struct gpu {
  char gfx[32];    /* "gfx90a" */
  char target[64]; /* "gfx90a" or "gfx90a:sramecc+:xnack-" */
  uint32_t mach;   /* EF_AMDGPU_MACH */
  int xnack, sramecc; /* -1 unspecified, 0 off, 1 on */
};
static struct gpu gpus[MAX_GPUS];

/* EF_AMDGPU_MACH_AMDGCN_* values (amd_hsa_elf.h), checked against
 * clang-22's output with readelf -h; features: the xnack/sramecc "any" bits
 * clang-22 sets by default (EF_AMDGPU_FEATURE_XNACK_ANY_V4 0x100,
 * EF_AMDGPU_FEATURE_SRAMECC_ANY_V4 0x400). */
static const struct { const char *gfx; uint32_t mach, any; } gfx_table[] = {
    {"gfx900", 0x02c, 0x100}, {"gfx906", 0x02f, 0x500}, {"gfx908", 0x030, 0x500},
    {"gfx90a", 0x03f, 0x500}, {"gfx942", 0x04c, 0x500}, {"gfx950", 0x04f, 0x500},
    {"gfx1030", 0x036, 0}, {"gfx1100", 0x041, 0}, {"gfx1101", 0x046, 0},
    {"gfx1102", 0x047, 0}, {"gfx1200", 0x048, 0}, {"gfx1201", 0x04e, 0},
};
#define EF_MACH_MASK 0x0ffu
#define EF_XNACK_MASK 0x300u
#define EF_SRAMECC_MASK 0xc00u

static long live_allocs, live_signals, live_queues, live_execs, live_locks, live_handlers, live_readers, live_copies,
    live_bytes;
static long leaked_allocs, leaked_signals, leaked_queues, leaked_execs, leaked_locks, leaked_handlers, leaked_readers,
    leaked_copies, leaked_bytes;
static int async_errors;
static char last_error[512];
static long dispatches, copies_done, unordered;

static __thread int on_handler_thread;

static long env_long(const char *name, long fallback) {
  const char *v = getenv(name);
  if (v == NULL || *v == '\0')
    return fallback;
  return strtol(v, NULL, 0);
}

static int initialised(void) { return __atomic_load_n(&refs, __ATOMIC_ACQUIRE) > 0; }

/* mu held */
static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
}

/* mu held: an error no status can report */
static void async_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void async_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  async_errors++;
}

int fake_hsa_init_calls(void) { return init_calls; }

int fake_hsa_errors(void) {
  pthread_mutex_lock(&mu);
  int n = async_errors;
  pthread_mutex_unlock(&mu);
  return n;
}

const char *fake_hsa_last_error(void) {
  static char copy[sizeof last_error];
  pthread_mutex_lock(&mu);
  memcpy(copy, last_error, sizeof copy);
  pthread_mutex_unlock(&mu);
  return copy;
}

long fake_hsa_dispatches(void) {
  pthread_mutex_lock(&mu);
  long n = dispatches;
  pthread_mutex_unlock(&mu);
  return n;
}

long fake_hsa_unordered(void) {
  pthread_mutex_lock(&mu);
  long n = unordered;
  pthread_mutex_unlock(&mu);
  return n;
}

long fake_hsa_copies(void) {
  pthread_mutex_lock(&mu);
  long n = copies_done;
  pthread_mutex_unlock(&mu);
  return n;
}

static long *live_counter(const char *kind, int leaked) {
  static const char *kinds[] = {"alloc", "signal", "queue", "executable", "lock", "handler", "reader", "copy", "bytes"};
  long *live[] = {&live_allocs, &live_signals, &live_queues, &live_execs, &live_locks, &live_handlers, &live_readers,
                  &live_copies, &live_bytes};
  long *dead[] = {&leaked_allocs, &leaked_signals, &leaked_queues, &leaked_execs, &leaked_locks, &leaked_handlers,
                  &leaked_readers, &leaked_copies, &leaked_bytes};
  for (size_t i = 0; kind && i < sizeof kinds / sizeof kinds[0]; i++)
    if (!strcmp(kind, kinds[i]))
      return leaked ? dead[i] : live[i];
  return NULL;
}

long fake_hsa_live(const char *kind) {
  pthread_mutex_lock(&mu);
  long *l = live_counter(kind, 0), *d = live_counter(kind, 1);
  long n = l ? *l + *d : -1;
  pthread_mutex_unlock(&mu);
  return n;
}

long fake_hsa_leaked(const char *kind) {
  pthread_mutex_lock(&mu);
  long *d = live_counter(kind, 1);
  long n = d ? *d : -1;
  pthread_mutex_unlock(&mu);
  return n;
}

/* ------------------------------------------------------------------ */
/* Init, status strings, system and agent info                          */

static void parse_gpus(void) {
  long n = env_long("FAKE_HSA_GPUS", 0);
  ngpus = n < 0 ? 0 : n > MAX_GPUS ? MAX_GPUS : (int)n;
  const char *list = getenv("FAKE_HSA_GFX");
  char entry[64] = "gfx90a";
  for (int i = 0; i < ngpus; i++) {
    if (list && *list) {
      size_t len = strcspn(list, ",");
      if (len > 0 && len < sizeof entry) {
        memcpy(entry, list, len);
        entry[len] = '\0';
      }
      list += len;
      if (*list == ',')
        list++;
    }
    struct gpu *g = &gpus[i];
    memset(g, 0, sizeof *g);
    snprintf(g->target, sizeof g->target, "%s", entry);
    size_t base = strcspn(entry, ":");
    snprintf(g->gfx, sizeof g->gfx, "%.*s", (int)base, entry);
    g->xnack = strstr(entry, ":xnack+") ? 1 : strstr(entry, ":xnack-") ? 0 : -1;
    g->sramecc = strstr(entry, ":sramecc+") ? 1 : strstr(entry, ":sramecc-") ? 0 : -1;
    g->mach = 0;
    for (size_t k = 0; k < sizeof gfx_table / sizeof gfx_table[0]; k++)
      if (!strcmp(gfx_table[k].gfx, g->gfx))
        g->mach = gfx_table[k].mach;
  }
}

hsa_status_t hsa_init(void) {
  pthread_mutex_lock(&mu);
  init_calls++;
  hsa_status_t st = (hsa_status_t)env_long("FAKE_HSA_INIT_RESULT", HSA_STATUS_SUCCESS);
  if (st == HSA_STATUS_SUCCESS) {
    if (refs == 0)
      parse_gpus();
    __atomic_store_n(&refs, refs + 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&mu);
  return st;
}

static const struct { hsa_status_t st; const char *text; } status_texts[] = {
    {HSA_STATUS_SUCCESS, "HSA_STATUS_SUCCESS: fake"},
    {HSA_STATUS_INFO_BREAK, "HSA_STATUS_INFO_BREAK: the callback stopped the iteration"},
    {HSA_STATUS_ERROR, "HSA_STATUS_ERROR: A generic error has occurred."},
    {HSA_STATUS_ERROR_INVALID_ARGUMENT, "HSA_STATUS_ERROR_INVALID_ARGUMENT: an argument is invalid"},
    {HSA_STATUS_ERROR_INVALID_QUEUE_CREATION, "HSA_STATUS_ERROR_INVALID_QUEUE_CREATION: the queue cannot be created"},
    {HSA_STATUS_ERROR_INVALID_ALLOCATION, "HSA_STATUS_ERROR_INVALID_ALLOCATION: the allocation is invalid"},
    {HSA_STATUS_ERROR_INVALID_AGENT, "HSA_STATUS_ERROR_INVALID_AGENT: the agent is invalid"},
    {HSA_STATUS_ERROR_INVALID_REGION, "HSA_STATUS_ERROR_INVALID_REGION: the region is invalid"},
    {HSA_STATUS_ERROR_INVALID_SIGNAL, "HSA_STATUS_ERROR_INVALID_SIGNAL: the signal is invalid"},
    {HSA_STATUS_ERROR_INVALID_QUEUE, "HSA_STATUS_ERROR_INVALID_QUEUE: the queue is invalid"},
    {HSA_STATUS_ERROR_OUT_OF_RESOURCES,
     "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources."},
    {HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: a packet is malformed"},
    {HSA_STATUS_ERROR_RESOURCE_FREE, "HSA_STATUS_ERROR_RESOURCE_FREE: a resource could not be released"},
    {HSA_STATUS_ERROR_NOT_INITIALIZED, "HSA_STATUS_ERROR_NOT_INITIALIZED: the runtime is not initialized"},
    {HSA_STATUS_ERROR_REFCOUNT_OVERFLOW, "HSA_STATUS_ERROR_REFCOUNT_OVERFLOW: too many references"},
    {HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS, "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS: the arguments do not fit together"},
    {HSA_STATUS_ERROR_INVALID_INDEX, "HSA_STATUS_ERROR_INVALID_INDEX: the index is invalid"},
    {HSA_STATUS_ERROR_INVALID_ISA, "HSA_STATUS_ERROR_INVALID_ISA: the instruction set architecture is invalid"},
    {HSA_STATUS_ERROR_INVALID_CODE_OBJECT, "HSA_STATUS_ERROR_INVALID_CODE_OBJECT: the code object is invalid"},
    {HSA_STATUS_ERROR_INVALID_EXECUTABLE, "HSA_STATUS_ERROR_INVALID_EXECUTABLE: the executable is invalid"},
    {HSA_STATUS_ERROR_FROZEN_EXECUTABLE, "HSA_STATUS_ERROR_FROZEN_EXECUTABLE: the executable is frozen"},
    {HSA_STATUS_ERROR_INVALID_SYMBOL_NAME, "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: no symbol has that name"},
    {HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED, "HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED: the variable is already defined"},
    {HSA_STATUS_ERROR_VARIABLE_UNDEFINED, "HSA_STATUS_ERROR_VARIABLE_UNDEFINED: the variable is undefined"},
    {HSA_STATUS_ERROR_EXCEPTION, "HSA_STATUS_ERROR_EXCEPTION: an exception was raised"},
    {HSA_STATUS_ERROR_INVALID_ISA_NAME, "HSA_STATUS_ERROR_INVALID_ISA_NAME: the ISA name is invalid"},
    {HSA_STATUS_ERROR_INVALID_CODE_SYMBOL, "HSA_STATUS_ERROR_INVALID_CODE_SYMBOL: the code symbol is invalid"},
    {HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL, "HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL: the executable symbol is invalid"},
    {HSA_STATUS_ERROR_INVALID_FILE, "HSA_STATUS_ERROR_INVALID_FILE: the file is invalid"},
    {HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER, "HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER: the code object reader is invalid"},
    {HSA_STATUS_ERROR_INVALID_CACHE, "HSA_STATUS_ERROR_INVALID_CACHE: the cache is invalid"},
    {HSA_STATUS_ERROR_INVALID_WAVEFRONT, "HSA_STATUS_ERROR_INVALID_WAVEFRONT: the wavefront is invalid"},
    {HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP, "HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP: the signal group is invalid"},
    {HSA_STATUS_ERROR_INVALID_RUNTIME_STATE, "HSA_STATUS_ERROR_INVALID_RUNTIME_STATE: the runtime is in a wrong state"},
    {HSA_STATUS_ERROR_FATAL, "HSA_STATUS_ERROR_FATAL: a fatal error happened"},
    {HSA_STATUS_ERROR_INVALID_MEMORY_POOL, "HSA_STATUS_ERROR_INVALID_MEMORY_POOL: the memory pool is invalid"},
    {HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION, "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: an access outside the agent's memory"},
    {HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION, "HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION: an illegal instruction ran"},
    {HSA_STATUS_ERROR_MEMORY_FAULT, "HSA_STATUS_ERROR_MEMORY_FAULT: a memory fault happened"},
};

hsa_status_t hsa_status_string(hsa_status_t st, const char **text) {
  if (text == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  for (size_t i = 0; i < sizeof status_texts / sizeof status_texts[0]; i++)
    if (status_texts[i].st == st) {
      *text = status_texts[i].text;
      return HSA_STATUS_SUCCESS;
    }
  return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* hsa_system_info_t: VERSION_MAJOR 0 and MINOR 1 (uint16_t), TIMESTAMP 2
 * and TIMESTAMP_FREQUENCY 3 (uint64_t), SIGNAL_MAX_WAIT 4 (uint64_t),
 * ENDIANNESS 5 (LITTLE 0), MACHINE_MODEL 6 (LARGE 1) */
hsa_status_t hsa_system_get_info(int attr, void *value) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (value == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  switch (attr) {
  case 0: *(uint16_t *)value = 1; return HSA_STATUS_SUCCESS;
  case 1: *(uint16_t *)value = 1; return HSA_STATUS_SUCCESS;
  case 2: *(uint64_t *)value = now_ns(); return HSA_STATUS_SUCCESS;
  case 3: *(uint64_t *)value = 1000000000u; return HSA_STATUS_SUCCESS;
  case 4: *(uint64_t *)value = UINT64_MAX; return HSA_STATUS_SUCCESS;
  case 5: *(int *)value = 0; return HSA_STATUS_SUCCESS;
  case 6: *(int *)value = 1; return HSA_STATUS_SUCCESS;
  }
  return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

/* gpu_index returns i for GPU agent i, -1 for the CPU, -2 if invalid. */
static int gpu_index(uint64_t agent) {
  if (agent == CPU_AGENT)
    return -1;
  if (agent >= GPU_AGENT0 && agent < GPU_AGENT0 + (uint64_t)ngpus)
    return (int)(agent - GPU_AGENT0);
  return -2;
}

hsa_status_t hsa_iterate_agents(hsa_status_t (*callback)(hsa_agent_t, void *), void *data) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (callback == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  const char *forced = getenv("FAKE_HSA_ITERATE_RESULT");
  if (forced != NULL && *forced != '\0')
    return (hsa_status_t)strtol(forced, NULL, 0);
  hsa_agent_t a = {CPU_AGENT};
  hsa_status_t st = callback(a, data);
  for (int i = 0; st == HSA_STATUS_SUCCESS && i < ngpus; i++) {
    a.handle = GPU_AGENT0 + (uint64_t)i;
    st = callback(a, data);
  }
  return st == HSA_STATUS_INFO_BREAK ? HSA_STATUS_SUCCESS : st;
}

static void put_string(void *value, const char *s) {
  /* The runtime writes char[64] attributes in full. */
  memset(value, 0, 64);
  strncpy((char *)value, s, 63);
}

/* hsa_agent_info_t: NAME 0 (char[64]), VENDOR_NAME 1 (char[64]), FEATURE 2
 * (hsa_agent_feature_t: KERNEL_DISPATCH 1, AGENT_DISPATCH 2), PROFILE 4
 * (BASE 0), WAVEFRONT_SIZE 6 (uint32_t), WORKGROUP_MAX_DIM 7 (uint16_t[3]),
 * WORKGROUP_MAX_SIZE 8 (uint32_t), GRID_MAX_DIM 9 (hsa_dim3_t),
 * GRID_MAX_SIZE 10 (uint32_t), QUEUES_MAX 12, QUEUE_MIN_SIZE 13,
 * QUEUE_MAX_SIZE 14 (uint32_t), QUEUE_TYPE 15 (hsa_queue_type32_t), NODE 16
 * (uint32_t), DEVICE 17 (hsa_device_type_t: CPU 0, GPU 1), ISA 19
 * (hsa_isa_t), VERSION_MAJOR 21, VERSION_MINOR 22 (uint16_t).
 * hsa_amd_agent_info_t: COMPUTE_UNIT_COUNT 0xA002, MAX_CLOCK_FREQUENCY
 * 0xA003, MEMORY_MAX_FREQUENCY 0xA008 (uint32_t), PRODUCT_NAME 0xA009
 * (char[64]), UUID 0xA011 (char[21]). */
hsa_status_t hsa_agent_get_info(hsa_agent_t agent, int attr, void *value) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (value == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  int i = gpu_index(agent.handle);
  if (i == -2)
    return HSA_STATUS_ERROR_INVALID_AGENT;
  char text[64];
  switch (attr) {
  case 17: *(int *)value = i < 0 ? 0 : 1; return HSA_STATUS_SUCCESS;
  case 0: put_string(value, i < 0 ? "Fake CPU" : gpus[i].gfx); return HSA_STATUS_SUCCESS;
  case 1: put_string(value, i < 0 ? "CPU" : "AMD"); return HSA_STATUS_SUCCESS;
  case 2: *(uint32_t *)value = i < 0 ? 2u : 1u; return HSA_STATUS_SUCCESS;
  case 4: *(int *)value = 0; return HSA_STATUS_SUCCESS;
  case 12: *(uint32_t *)value = i < 0 ? 0u : 128u; return HSA_STATUS_SUCCESS;
  case 13: *(uint32_t *)value = i < 0 ? 0u : QUEUE_MIN; return HSA_STATUS_SUCCESS;
  case 14: *(uint32_t *)value = i < 0 ? 0u : QUEUE_MAX; return HSA_STATUS_SUCCESS;
  case 15: *(uint32_t *)value = HSA_QUEUE_TYPE_MULTI; return HSA_STATUS_SUCCESS;
  case 16: *(uint32_t *)value = (uint32_t)(i + 1); return HSA_STATUS_SUCCESS;
  case 21: *(uint16_t *)value = 1; return HSA_STATUS_SUCCESS;
  case 22: *(uint16_t *)value = 1; return HSA_STATUS_SUCCESS;
  }
  if (i < 0)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT; /* the plugin only asks GPUs */
  switch (attr) {
  case 6: *(uint32_t *)value = strncmp(gpus[i].gfx, "gfx1", 4) == 0 && strlen(gpus[i].gfx) >= 7 ? 32u : 64u; return HSA_STATUS_SUCCESS;
  case 7: {
    uint16_t *d = value;
    d[0] = d[1] = d[2] = 1024;
    return HSA_STATUS_SUCCESS;
  }
  case 8: *(uint32_t *)value = 1024; return HSA_STATUS_SUCCESS;
  case 9: {
    hsa_dim3_t d = {4294967295u, 65535u, 65535u};
    memcpy(value, &d, sizeof d);
    return HSA_STATUS_SUCCESS;
  }
  case 10: *(uint32_t *)value = 4294967295u; return HSA_STATUS_SUCCESS;
  case 19: ((hsa_isa_t *)value)->handle = ISA0 + (uint64_t)i; return HSA_STATUS_SUCCESS;
  case 0xA002: *(uint32_t *)value = 104u + (uint32_t)i; return HSA_STATUS_SUCCESS;
  case 0xA003: *(uint32_t *)value = 1700; return HSA_STATUS_SUCCESS;
  case 0xA008: *(uint32_t *)value = 1600; return HSA_STATUS_SUCCESS;
  case 0xA009:
    snprintf(text, sizeof text, "Fake AMD GPU %d", i);
    put_string(value, text);
    return HSA_STATUS_SUCCESS;
  case 0xA011:
    snprintf(text, sizeof text, "GPU-00000000000000a%d", i % 10);
    memcpy(value, text, 21);
    ((char *)value)[20] = '\0';
    return HSA_STATUS_SUCCESS;
  }
  return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

/* ISAs: one per GPU agent, none for the CPU. hsa_isa_info_t: NAME_LENGTH 0
 * (uint32_t, without the NUL), NAME 1 (NAME_LENGTH bytes, no NUL). */
hsa_status_t hsa_agent_iterate_isas(hsa_agent_t agent, hsa_status_t (*callback)(hsa_isa_t, void *), void *data) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (callback == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  int i = gpu_index(agent.handle);
  if (i == -2)
    return HSA_STATUS_ERROR_INVALID_AGENT;
  if (i < 0)
    return HSA_STATUS_SUCCESS;
  hsa_status_t st = callback((hsa_isa_t){ISA0 + (uint64_t)i}, data);
  return st == HSA_STATUS_INFO_BREAK ? HSA_STATUS_SUCCESS : st;
}

hsa_status_t hsa_isa_get_info_alt(hsa_isa_t isa, int attr, void *value) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (value == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (isa.handle < ISA0 || isa.handle >= ISA0 + (uint64_t)ngpus)
    return HSA_STATUS_ERROR_INVALID_ISA;
  char name[128];
  snprintf(name, sizeof name, "amdgcn-amd-amdhsa--%s", gpus[isa.handle - ISA0].target);
  switch (attr) {
  case 0: *(uint32_t *)value = (uint32_t)strlen(name); return HSA_STATUS_SUCCESS;
  case 1: memcpy(value, name, strlen(name)); return HSA_STATUS_SUCCESS;
  }
  return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

/* ------------------------------------------------------------------ */
/* Memory pools                                                         */

struct pool {
  int agent;      /* -1 CPU, else GPU index */
  int segment;    /* HSA_AMD_SEGMENT_* */
  uint32_t flags; /* global flags */
  size_t size;
  int device;     /* device memory (the CPU cannot touch it) */
};

static int decode_pool(uint64_t h, struct pool *p) {
  memset(p, 0, sizeof *p);
  if (h == CPU_POOL_KERNARG || h == CPU_POOL_FINE) {
    p->agent = -1;
    p->segment = HSA_AMD_SEGMENT_GLOBAL;
    p->flags = h == CPU_POOL_KERNARG ? FLAG_FINE_GRAINED | FLAG_KERNARG_INIT : FLAG_FINE_GRAINED;
    p->size = (size_t)16 << 30;
    return 0;
  }
  uint64_t gpu = h / 0x1000u; /* i + 1 */
  uint64_t k = h % 0x1000u;
  if (gpu < 1 || gpu > (uint64_t)ngpus || k > 2)
    return -1;
  p->agent = (int)gpu - 1;
  p->segment = k == 2 ? HSA_AMD_SEGMENT_GROUP : HSA_AMD_SEGMENT_GLOBAL;
  p->flags = k == 0 ? FLAG_FINE_GRAINED : k == 1 ? FLAG_COARSE_GRAINED : 0;
  p->size = k == 0 ? (size_t)gpu << 30 : k == 1 ? (size_t)gpu << 36 : GROUP_MEMORY;
  p->device = k == 1;
  return 0;
}

hsa_status_t hsa_amd_agent_iterate_memory_pools(hsa_agent_t agent,
                                                hsa_status_t (*callback)(hsa_amd_memory_pool_t, void *),
                                                void *data) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (callback == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  int i = gpu_index(agent.handle);
  if (i == -2)
    return HSA_STATUS_ERROR_INVALID_AGENT;
  hsa_status_t st = HSA_STATUS_SUCCESS;
  if (i < 0) {
    st = callback((hsa_amd_memory_pool_t){CPU_POOL_KERNARG}, data);
    if (st == HSA_STATUS_SUCCESS)
      st = callback((hsa_amd_memory_pool_t){CPU_POOL_FINE}, data);
  }
  for (int k = 0; i >= 0 && st == HSA_STATUS_SUCCESS && k < 3; k++)
    st = callback((hsa_amd_memory_pool_t){0x1000u * (uint64_t)(i + 1) + (uint64_t)k}, data);
  return st == HSA_STATUS_INFO_BREAK ? HSA_STATUS_SUCCESS : st;
}

/* hsa_amd_memory_pool_info_t: SEGMENT 0 (hsa_amd_segment_t), GLOBAL_FLAGS 1
 * (uint32_t), SIZE 2 (size_t), RUNTIME_ALLOC_ALLOWED 5 (bool),
 * RUNTIME_ALLOC_GRANULE 6 and RUNTIME_ALLOC_ALIGNMENT 7 (size_t),
 * ACCESSIBLE_BY_ALL 15 (bool), ALLOC_MAX_SIZE 16 (size_t), LOCATION 17
 * (hsa_amd_memory_pool_location_t: CPU 0, GPU 1), RUNTIME_ALLOC_REC_GRANULE
 * 18 (size_t). */
hsa_status_t hsa_amd_memory_pool_get_info(hsa_amd_memory_pool_t pool, int attr, void *value) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (value == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  struct pool p;
  if (decode_pool(pool.handle, &p) != 0)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  int global = p.segment == HSA_AMD_SEGMENT_GLOBAL;
  switch (attr) {
  case 0: *(int *)value = p.segment; return HSA_STATUS_SUCCESS;
  case 1:
    if (!global)
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    *(uint32_t *)value = p.flags;
    return HSA_STATUS_SUCCESS;
  case 2: *(size_t *)value = p.size; return HSA_STATUS_SUCCESS;
  case 5: *(bool *)value = global; return HSA_STATUS_SUCCESS;
  case 6: case 7:
    *(size_t *)value = global ? 4096 : 0;
    return HSA_STATUS_SUCCESS;
  case 15: *(bool *)value = false; return HSA_STATUS_SUCCESS;
  case 16: *(size_t *)value = global ? p.size : 0; return HSA_STATUS_SUCCESS;
  case 17: *(int *)value = p.agent < 0 ? 0 : 1; return HSA_STATUS_SUCCESS;
  case 18: *(size_t *)value = global ? (size_t)2 << 20 : 0; return HSA_STATUS_SUCCESS;
  }
  return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

/* what agent i (-1 CPU) may do with pool p */
static int pool_access(int i, const struct pool *p) {
  if (i == p->agent)
    return ACCESS_ALLOWED_BY_DEFAULT;
  if (p->segment != HSA_AMD_SEGMENT_GLOBAL)
    return ACCESS_NEVER_ALLOWED;
  if (i < 0) /* the CPU and GPU memory */
    return p->device ? ACCESS_NEVER_ALLOWED : ACCESS_ALLOWED_BY_DEFAULT;
  return ACCESS_DISALLOWED_BY_DEFAULT;
}

/* hsa_amd_agent_memory_pool_info_t: ACCESS 0 (hsa_amd_memory_pool_access_t),
 * NUM_LINK_HOPS 1 (uint32_t) */
hsa_status_t hsa_amd_agent_memory_pool_get_info(hsa_agent_t agent, hsa_amd_memory_pool_t pool, int attr, void *value) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (value == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  int i = gpu_index(agent.handle);
  if (i == -2)
    return HSA_STATUS_ERROR_INVALID_AGENT;
  struct pool p;
  if (decode_pool(pool.handle, &p) != 0)
    return HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
  switch (attr) {
  case 0: *(int *)value = pool_access(i, &p); return HSA_STATUS_SUCCESS;
  case 1: *(uint32_t *)value = i == p.agent ? 0u : 1u; return HSA_STATUS_SUCCESS;
  }
  return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

/* ------------------------------------------------------------------ */
/* Allocations, device memory, locks                                    */

#define ARENA ((size_t)16 << 30) /* device address space per GPU */
#define MAX_BLOCKS 65536
#define POISON_LIMIT 65536

struct block {
  size_t off, size;
  int live;
  int quarantined; /* freed, not yet reusable (see enter_quarantine) */
};

struct arena {
  char *addr;    /* PROT_NONE but while kernels run: the device addresses */
  char *backing; /* the same bytes, for the double */
  size_t next;
  struct block *blocks;
  int nblocks;
  size_t live; /* bytes of its live blocks (FAKE_HSA_MEMORY_BYTES) */
};
static struct arena arenas[MAX_GPUS];

/* FAKE_HSA_ALLOC_US: what an allocation or a free of the runtime costs */
static void alloc_delay(void) {
  long us = env_long("FAKE_HSA_ALLOC_US", 0);
  if (us > 0) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
  }
}

struct region {
  uintptr_t addr;
  size_t size;
  char *bytes;     /* where the double reads and writes them */
  int owner;       /* -1 CPU, else GPU index */
  uint32_t flags;  /* pool global flags (locks: COARSE_GRAINED) */
  uint32_t access; /* bit i: GPU i; ACC_CPU: the CPU */
  int device;      /* in an arena (block is its index) */
  int block;
  int kind;        /* REGION_* */
  struct region *next;
};
enum { REGION_ALLOC, REGION_LOCK, REGION_GLOBAL };
/* pool allocations; locked host memory; code objects' globals (registered
 * when their symbol is looked up) */
static struct region *allocs, *locks, *globals;

static int arena_ready(int g) {
  struct arena *a = &arenas[g];
  if (a->addr)
    return 0;
  /* one file, mapped twice: at the device addresses without access, and
   * elsewhere for the double's own copies and fills */
  int fd = memfd_create("fake-hsa-device-memory", MFD_CLOEXEC);
  if (fd < 0)
    return -1;
  if (ftruncate(fd, (off_t)ARENA) != 0) {
    close(fd);
    return -1;
  }
  char *addr = mmap(NULL, ARENA, PROT_NONE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  char *backing = mmap(NULL, ARENA, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  close(fd);
  struct block *blocks = calloc(MAX_BLOCKS, sizeof *blocks);
  if (addr == MAP_FAILED || backing == MAP_FAILED || blocks == NULL) {
    if (addr != MAP_FAILED) munmap(addr, ARENA);
    if (backing != MAP_FAILED) munmap(backing, ARENA);
    free(blocks);
    return -1;
  }
  a->addr = addr;
  a->backing = backing;
  a->blocks = blocks;
  return 0;
}

/* Freed device memory is quarantined (quarantine.h). mu guards it. */
#define QUARANTINE_ARENA(g) (&arenas[g])
#include "quarantine.h"

/* while kernels of the double run, device memory is accessible at the
 * device addresses (but for the quarantined blocks) */
static void device_access(int on) {
  pthread_mutex_lock(&mu);
  if ((on && kernels_running++ == 0) || (!on && --kernels_running == 0)) {
    for (int g = 0; g < MAX_GPUS; g++)
      if (arenas[g].addr)
        mprotect(arenas[g].addr, ARENA, on ? PROT_READ | PROT_WRITE : PROT_NONE);
    if (on)
      protect_quarantine();
  }
  pthread_mutex_unlock(&mu);
}

static int in_arena(uintptr_t p) {
  for (int g = 0; g < MAX_GPUS; g++)
    if (arenas[g].addr && p >= (uintptr_t)arenas[g].addr && p - (uintptr_t)arenas[g].addr < ARENA)
      return 1;
  return 0;
}

static struct region *find_region(struct region *list, uintptr_t p) {
  for (struct region *r = list; r; r = r->next)
    if (p >= r->addr && p - r->addr < r->size)
      return r;
  return NULL;
}

static struct region *find_global(uintptr_t p); /* code objects' globals */

/* mu held: the region the runtime knows that holds p (allocations, locks,
 * code object globals) */
static struct region *known(uintptr_t p) {
  struct region *r = find_region(allocs, p);
  if (!r)
    r = find_region(locks, p);
  if (!r)
    r = find_global(p);
  return r;
}

/* mu held: a region of list holding all of [p, p+n) that bit may reach,
 * else one holding [p, p+n), else one holding p */
static struct region *best_region(struct region *list, uintptr_t p, size_t n, uint32_t bit, struct region *best) {
  for (struct region *r = list; r; r = r->next) {
    if (p < r->addr || p - r->addr >= r->size)
      continue;
    int fits = n <= r->size - (p - r->addr);
    int best_fits = best && n <= best->size - (p - best->addr);
    if (fits && (r->access & bit))
      return r;
    if (best == NULL || (fits && !best_fits))
      best = r;
  }
  return best;
}

/* mu held. Where the double reaches [p, p+n) on behalf of an agent (bit:
 * 1 << GPU index or ACC_CPU). A CPU reaches any memory but device memory. */
static hsa_status_t reach(uintptr_t p, size_t n, uint32_t bit, char **out, const char *what) {
  struct region *r = best_region(allocs, p, n, bit, NULL);
  if (r == NULL || !(r->access & bit) || n > r->size - (p - r->addr))
    r = best_region(locks, p, n, bit, r);
  if (r == NULL || !(r->access & bit) || n > r->size - (p - r->addr))
    r = best_region(globals, p, n, bit, r);
  if (r == NULL) {
    if (bit == ACC_CPU && !in_arena(p)) {
      *out = (char *)p;
      return HSA_STATUS_SUCCESS;
    }
    note("fake_hsa: %s %#lx is not memory the runtime knows (allocate it from a pool or lock it)", what,
         (unsigned long)p);
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  if (n > r->size - (p - r->addr)) {
    note("fake_hsa: %s [%#lx, +%zu) runs past the end of its allocation [%#lx, +%zu)", what, (unsigned long)p, n,
         (unsigned long)r->addr, r->size);
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  if (!(r->access & bit)) {
    note("fake_hsa: %s %#lx cannot be reached by agent %#x (hsa_amd_agents_allow_access or "
         "hsa_amd_memory_lock must name it)",
         what, (unsigned long)p, bit == ACC_CPU ? CPU_AGENT : GPU_AGENT0 + (unsigned)__builtin_ctz(bit));
    return HSA_STATUS_ERROR_INVALID_AGENT;
  }
  *out = r->bytes + (p - r->addr);
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_amd_memory_pool_allocate(hsa_amd_memory_pool_t pool, size_t size, uint32_t flags, void **ptr) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (ptr == NULL || size == 0 || (flags & ~7u) != 0)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  struct pool p;
  if (decode_pool(pool.handle, &p) != 0)
    return HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
  if (p.segment != HSA_AMD_SEGMENT_GLOBAL || size > p.size)
    return HSA_STATUS_ERROR_INVALID_ALLOCATION;
  hsa_status_t forced = (hsa_status_t)env_long("FAKE_HSA_ALLOC_RESULT", HSA_STATUS_SUCCESS);
  if (forced != HSA_STATUS_SUCCESS)
    return forced;
  alloc_delay();
  size_t rounded = (size + 4095) & ~(size_t)4095;
  const char *cap = getenv("FAKE_HSA_MEMORY_BYTES");
  size_t capacity = cap && *cap ? (size_t)strtoull(cap, NULL, 0) : ARENA;
  struct region *r = calloc(1, sizeof *r);
  if (r == NULL)
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  r->size = rounded;
  r->owner = p.agent;
  r->flags = p.flags;
  r->kind = REGION_ALLOC;
  r->access = p.agent < 0 ? ACC_CPU : (1u << p.agent) | (p.device ? 0 : ACC_CPU);
  pthread_mutex_lock(&mu);
  if (p.device) {
    struct arena *a = &arenas[p.agent];
    if (arena_ready(p.agent) != 0) {
      pthread_mutex_unlock(&mu);
      free(r);
      return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    if (rounded > capacity || a->live > capacity - rounded) {
      pthread_mutex_unlock(&mu);
      free(r);
      return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    struct block *b = NULL;
    for (int i = 0; i < a->nblocks && b == NULL; i++)
      if (!a->blocks[i].live && !a->blocks[i].quarantined && a->blocks[i].size >= rounded)
        b = &a->blocks[i];
    if (b == NULL) {
      if (a->nblocks == MAX_BLOCKS || a->next + rounded > ARENA) {
        pthread_mutex_unlock(&mu);
        free(r);
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
      }
      b = &a->blocks[a->nblocks++];
      b->off = a->next;
      b->size = rounded;
      a->next += rounded;
    }
    b->live = 1;
    a->live += rounded;
    r->device = 1;
    r->block = (int)(b - a->blocks);
    r->addr = (uintptr_t)a->addr + b->off;
    r->bytes = a->backing + b->off;
  } else {
    void *m = mmap(NULL, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
      pthread_mutex_unlock(&mu);
      free(r);
      return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    if (rounded <= POISON_LIMIT)
      memset(m, 0xcd, rounded);
    r->addr = (uintptr_t)m;
    r->bytes = m;
  }
  r->next = allocs;
  allocs = r;
  live_allocs++;
  live_bytes += (long)r->size;
  *ptr = (void *)r->addr;
  pthread_mutex_unlock(&mu);
  return HSA_STATUS_SUCCESS;
}

/* mu held */
static void release_region(struct region *r) {
  if (r->kind == REGION_ALLOC) {
    live_bytes -= (long)r->size;
    if (r->device) {
      arenas[r->owner].blocks[r->block].live = 0;
      arenas[r->owner].live -= r->size;
      enter_quarantine(r->owner, r->block);
    } else
      munmap((void *)r->addr, r->size);
  }
  free(r);
}

hsa_status_t hsa_amd_memory_pool_free(void *ptr) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (ptr == NULL)
    return HSA_STATUS_SUCCESS;
  alloc_delay();
  pthread_mutex_lock(&mu);
  struct region *r = LIST_TAKE(&allocs, struct region, e, e->addr == (uintptr_t)ptr);
  if (r) {
    release_region(r);
    live_allocs--;
  } else {
    note("fake_hsa: hsa_amd_memory_pool_free(%p): not an allocation of the runtime", ptr);
  }
  pthread_mutex_unlock(&mu);
  return r ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

hsa_status_t hsa_amd_agents_allow_access(uint32_t num_agents, const hsa_agent_t *agents, const uint32_t *flags,
                                         const void *ptr) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (num_agents == 0 || agents == NULL || flags != NULL || ptr == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&mu);
  struct region *r = find_region(allocs, (uintptr_t)ptr);
  if (r == NULL) {
    note("fake_hsa: hsa_amd_agents_allow_access(%p): not an allocation of the runtime", ptr);
    pthread_mutex_unlock(&mu);
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  uint32_t add = 0;
  for (uint32_t k = 0; k < num_agents; k++) {
    int i = gpu_index(agents[k].handle);
    if (i == -2) {
      pthread_mutex_unlock(&mu);
      return HSA_STATUS_ERROR_INVALID_AGENT;
    }
    struct pool p = {.agent = r->owner, .segment = HSA_AMD_SEGMENT_GLOBAL, .device = r->device};
    if (pool_access(i, &p) == ACCESS_NEVER_ALLOWED) {
      note("fake_hsa: hsa_amd_agents_allow_access: agent %#lx can never reach %p", (unsigned long)agents[k].handle, ptr);
      pthread_mutex_unlock(&mu);
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    add |= i < 0 ? ACC_CPU : 1u << i;
  }
  r->access |= add;
  pthread_mutex_unlock(&mu);
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_amd_memory_lock(void *host_ptr, size_t size, hsa_agent_t *agents, int num_agent, void **agent_ptr) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (size == 0 || host_ptr == NULL || agent_ptr == NULL || (agents != NULL && num_agent <= 0) ||
      (agents == NULL && num_agent != 0))
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  uint32_t access = ACC_CPU;
  for (int k = 0; k < num_agent; k++) {
    int i = gpu_index(agents[k].handle);
    if (i == -2)
      return HSA_STATUS_ERROR_INVALID_AGENT;
    if (i >= 0)
      access |= 1u << i;
  }
  if (agents == NULL)
    access |= (1u << ngpus) - 1;
  pthread_mutex_lock(&mu);
  if (in_arena((uintptr_t)host_ptr) || find_region(allocs, (uintptr_t)host_ptr) ||
      find_global((uintptr_t)host_ptr)) {
    note("fake_hsa: hsa_amd_memory_lock(%p): memory of the runtime, not host memory", host_ptr);
    pthread_mutex_unlock(&mu);
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  struct region *r = calloc(1, sizeof *r);
  if (r == NULL) {
    pthread_mutex_unlock(&mu);
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  }
  r->addr = (uintptr_t)host_ptr;
  r->size = size;
  r->bytes = host_ptr;
  r->owner = -1;
  r->flags = FLAG_COARSE_GRAINED;
  r->access = access;
  r->kind = REGION_LOCK;
  r->next = locks;
  locks = r;
  live_locks++;
  *agent_ptr = host_ptr;
  pthread_mutex_unlock(&mu);
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_amd_memory_unlock(void *host_ptr) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&mu);
  struct region *r = LIST_TAKE(&locks, struct region, e, e->addr == (uintptr_t)host_ptr);
  if (r) {
    free(r);
    live_locks--;
  } else {
    note("fake_hsa: hsa_amd_memory_unlock(%p): not locked", host_ptr);
  }
  pthread_mutex_unlock(&mu);
  return r ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

static hsa_agent_t agent_of(int i) { return (hsa_agent_t){i < 0 ? CPU_AGENT : GPU_AGENT0 + (uint64_t)i}; }

hsa_status_t hsa_amd_pointer_info(const void *ptr, pointer_info *info, void *(*alloc)(size_t),
                                  uint32_t *num_agents_accessible, hsa_agent_t **accessible) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (info == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  pointer_info out;
  memset(&out, 0, sizeof out);
  pthread_mutex_lock(&mu);
  struct region *r = known((uintptr_t)ptr);
  uint32_t access = 0;
  if (r) {
    out.type = r->kind == REGION_LOCK ? HSA_EXT_POINTER_TYPE_LOCKED : HSA_EXT_POINTER_TYPE_HSA;
    out.agentBaseAddress = (void *)r->addr;
    out.hostBaseAddress = r->device ? NULL : (void *)r->addr;
    out.sizeInBytes = r->size;
    out.agentOwner = agent_of(r->owner);
    out.global_flags = r->flags;
    access = r->access;
  }
  pthread_mutex_unlock(&mu);
  uint32_t size = info->size < sizeof out ? info->size : (uint32_t)sizeof out;
  out.size = size;
  memcpy(info, &out, size);
  if (num_agents_accessible != NULL && accessible != NULL && alloc != NULL) {
    uint32_t n = (uint32_t)__builtin_popcount(access);
    *num_agents_accessible = n;
    *accessible = NULL;
    if (n > 0) {
      hsa_agent_t *list = alloc(n * sizeof *list);
      if (list == NULL)
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
      uint32_t k = 0;
      if (access & ACC_CPU)
        list[k++] = agent_of(-1);
      for (int i = 0; i < ngpus; i++)
        if (access & (1u << i))
          list[k++] = agent_of(i);
      *accessible = list;
    }
  }
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_amd_memory_fill(void *ptr, uint32_t value, size_t count) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (ptr == NULL || ((uintptr_t)ptr & 3) != 0)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&mu);
  struct region *r = find_region(allocs, (uintptr_t)ptr);
  if (r == NULL || count > (r->size - ((uintptr_t)ptr - r->addr)) / 4) {
    note("fake_hsa: hsa_amd_memory_fill(%p, %zu words): %s", ptr, count,
         r ? "runs past the end of the allocation" : "not an allocation of the runtime");
    pthread_mutex_unlock(&mu);
    return HSA_STATUS_ERROR_INVALID_ALLOCATION;
  }
  char *b = r->bytes + ((uintptr_t)ptr - r->addr);
  for (size_t i = 0; i < count; i++)
    memcpy(b + 4 * i, &value, 4);
  pthread_mutex_unlock(&mu);
  return HSA_STATUS_SUCCESS;
}

/* fake_hsa_peek and fake_hsa_poke copy memory of the runtime out and in for
 * tests (the CPU cannot touch device memory directly). */
int fake_hsa_peek(const void *ptr, void *dst, size_t n) {
  pthread_mutex_lock(&mu);
  struct region *r = known((uintptr_t)ptr);
  int ok = r && n <= r->size - ((uintptr_t)ptr - r->addr);
  if (ok)
    memcpy(dst, r->bytes + ((uintptr_t)ptr - r->addr), n);
  pthread_mutex_unlock(&mu);
  return ok ? 0 : -1;
}

int fake_hsa_poke(void *ptr, const void *src, size_t n) {
  pthread_mutex_lock(&mu);
  struct region *r = known((uintptr_t)ptr);
  int ok = r && n <= r->size - ((uintptr_t)ptr - r->addr);
  if (ok)
    memcpy(r->bytes + ((uintptr_t)ptr - r->addr), src, n);
  pthread_mutex_unlock(&mu);
  return ok ? 0 : -1;
}

static struct region *find_global(uintptr_t p) { return find_region(globals, p); }

/* ------------------------------------------------------------------ */
/* Signals                                                              */

#define MAX_SIGNALS 65536

struct fake_queue;

/* Laid out as amd_signal_t where it matters: kind at 0 (1 user signal,
 * -1 doorbell), value at 8. */
struct fake_signal {
  int64_t kind;
  volatile int64_t value;
  struct fake_queue *queue; /* a doorbell's queue */
  uint32_t live, gen;
  uint32_t pending;         /* copies in flight that use it */
  uint32_t next_free;       /* index + 1 of the next free slot */
  /* when the packet that completed it started and ended, written only on
   * a queue with profiling enabled (as amd_signal_t's start_ts/end_ts):
   * a reused signal keeps its last packet's times until another profiled
   * packet completes it */
  uint64_t start_ts, end_ts;
} __attribute__((aligned(64)));
_Static_assert(offsetof(struct fake_signal, value) == 8, "amd_signal_t layout");
_Static_assert(sizeof(struct fake_signal) == 64, "one signal per 64 bytes");

static struct fake_signal *sigs; /* never freed: stale handles stay checkable */
static uint32_t sigs_used, sigs_free;

/* mu held */
static struct fake_signal *new_signal(int64_t kind, int64_t value) {
  if (sigs == NULL) {
    void *m = mmap(NULL, MAX_SIGNALS * sizeof *sigs, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED)
      return NULL;
    sigs = m;
  }
  struct fake_signal *s;
  if (sigs_free) {
    s = &sigs[sigs_free - 1];
    sigs_free = s->next_free;
  } else if (sigs_used < MAX_SIGNALS) {
    s = &sigs[sigs_used++];
  } else {
    return NULL;
  }
  uint32_t gen = s->gen + 1;
  memset(s, 0, sizeof *s);
  s->kind = kind;
  s->value = value;
  s->live = 1;
  s->gen = gen;
  return s;
}

/* mu held */
static void free_signal(struct fake_signal *s) {
  s->live = 0;
  s->kind = 0;
  s->next_free = sigs_free;
  sigs_free = (uint32_t)(s - sigs) + 1;
}

/* mu held: the live signal of a handle, or NULL */
static struct fake_signal *lookup_signal(uint64_t h) {
  if (sigs == NULL || h < (uintptr_t)sigs || h >= (uintptr_t)(sigs + sigs_used))
    return NULL;
  if ((h - (uintptr_t)sigs) % sizeof *sigs != 0)
    return NULL;
  struct fake_signal *s = (struct fake_signal *)(uintptr_t)h;
  return s->live ? s : NULL;
}

static int holds(int cond, int64_t v, int64_t c) {
  switch (cond) {
  case HSA_SIGNAL_CONDITION_EQ: return v == c;
  case HSA_SIGNAL_CONDITION_NE: return v != c;
  case HSA_SIGNAL_CONDITION_LT: return v < c;
  case HSA_SIGNAL_CONDITION_GTE: return v >= c;
  }
  return 0;
}

static void doorbell_rung(struct fake_queue *q, int64_t v, int stuck);
static void wake_threads(void);

/* mu held */
static void set_value(struct fake_signal *s, int64_t v, int stuck) {
  __atomic_store_n(&s->value, v, __ATOMIC_SEQ_CST);
  if (s->queue)
    doorbell_rung(s->queue, v, stuck);
  pthread_cond_broadcast(&cv);
  wake_threads();
}

hsa_status_t hsa_signal_create(hsa_signal_value_t initial, uint32_t num_consumers, const hsa_agent_t *consumers,
                               hsa_signal_t *signal) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (signal == NULL || (num_consumers > 0 && consumers == NULL))
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  for (uint32_t k = 0; k < num_consumers; k++)
    if (gpu_index(consumers[k].handle) == -2)
      return HSA_STATUS_ERROR_INVALID_AGENT;
  pthread_mutex_lock(&mu);
  struct fake_signal *s = new_signal(1, initial);
  if (s)
    live_signals++;
  pthread_mutex_unlock(&mu);
  if (s == NULL)
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  signal->handle = (uintptr_t)s;
  return HSA_STATUS_SUCCESS;
}

static int handler_uses(struct fake_signal *s); /* mu held */

hsa_status_t hsa_signal_destroy(hsa_signal_t signal) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (signal.handle == 0)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&mu);
  struct fake_signal *s = lookup_signal(signal.handle);
  hsa_status_t st = HSA_STATUS_SUCCESS;
  if (s == NULL || s->kind != 1) {
    note("fake_hsa: hsa_signal_destroy(%#lx): not a live signal", (unsigned long)signal.handle);
    st = HSA_STATUS_ERROR_INVALID_SIGNAL;
  } else if (s->pending) {
    note("fake_hsa: hsa_signal_destroy(%#lx): a copy in flight still uses it", (unsigned long)signal.handle);
    st = HSA_STATUS_ERROR_INVALID_SIGNAL;
  } else if (handler_uses(s)) {
    note("fake_hsa: hsa_signal_destroy(%#lx): an async handler is still registered on it",
         (unsigned long)signal.handle);
    st = HSA_STATUS_ERROR_INVALID_SIGNAL;
  } else {
    free_signal(s);
    live_signals--;
  }
  pthread_mutex_unlock(&mu);
  return st;
}

static hsa_signal_value_t load(hsa_signal_t signal, const char *fn) {
  pthread_mutex_lock(&mu);
  struct fake_signal *s = initialised() ? lookup_signal(signal.handle) : NULL;
  hsa_signal_value_t v = 0;
  if (s)
    v = __atomic_load_n(&s->value, __ATOMIC_SEQ_CST);
  else
    async_error("fake_hsa: %s(%#lx): not a live signal%s", fn, (unsigned long)signal.handle,
                initialised() ? "" : " (the runtime is not initialized)");
  pthread_mutex_unlock(&mu);
  return v;
}

hsa_signal_value_t hsa_signal_load_scacquire(hsa_signal_t signal) { return load(signal, "hsa_signal_load_scacquire"); }
hsa_signal_value_t hsa_signal_load_relaxed(hsa_signal_t signal) { return load(signal, "hsa_signal_load_relaxed"); }

static void store(hsa_signal_t signal, hsa_signal_value_t v, const char *fn) {
  int stuck = env_long("FAKE_HSA_QUEUE_STUCK", 0) != 0;
  pthread_mutex_lock(&mu);
  struct fake_signal *s = initialised() ? lookup_signal(signal.handle) : NULL;
  if (s)
    set_value(s, v, stuck);
  else
    async_error("fake_hsa: %s(%#lx): not a live signal%s", fn, (unsigned long)signal.handle,
                initialised() ? "" : " (the runtime is not initialized)");
  pthread_mutex_unlock(&mu);
}

void hsa_signal_store_relaxed(hsa_signal_t signal, hsa_signal_value_t v) { store(signal, v, "hsa_signal_store_relaxed"); }
void hsa_signal_store_screlease(hsa_signal_t signal, hsa_signal_value_t v) {
  store(signal, v, "hsa_signal_store_screlease");
}

/* FAKE_HSA_HOLD=1 (a benchmark's mode, bench/run.sh): the copy engine and
 * the queues run only while a thread waits on a signal (a queue also when
 * its ring is 7/8 full, so a producer never waits for room that only a
 * wait would make), as a GPU whose engines start at the sync. What a
 * submission costs is then the caller's own work, without the double's
 * threads competing for the CPU and its one lock. */
static int held(void) {
  static int v = -1;
  if (v < 0)
    v = env_long("FAKE_HSA_HOLD", 0) != 0;
  return v;
}
static int signal_waiters; /* mu held: threads in a signal wait */
static void wake_held(void);

/* timeout_hint is in nanoseconds (the timestamp frequency is 1 GHz);
 * UINT64_MAX waits for ever. Like ROCr's, the wait may return before the
 * condition holds: the caller checks the value. */
static hsa_signal_value_t wait(hsa_signal_t signal, int cond, hsa_signal_value_t cmp, uint64_t timeout, const char *fn) {
  pthread_mutex_lock(&mu);
  struct fake_signal *s = initialised() ? lookup_signal(signal.handle) : NULL;
  if (s == NULL || cond < 0 || cond > 3) {
    async_error("fake_hsa: %s(%#lx, condition %d): not a live signal or condition", fn, (unsigned long)signal.handle,
                cond);
    pthread_mutex_unlock(&mu);
    return 0;
  }
  uint32_t gen = s->gen;
  int64_t v = s->value;
  if (!holds(cond, v, cmp) && on_handler_thread && timeout > 0) {
    async_error("fake_hsa: %s(%#lx) would block the runtime's async handler thread", fn, (unsigned long)signal.handle);
    pthread_mutex_unlock(&mu);
    return v;
  }
  signal_waiters++;
  if (held())
    wake_held();
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  if (timeout != UINT64_MAX) {
    uint64_t ns = (uint64_t)deadline.tv_nsec + timeout % 1000000000u;
    deadline.tv_sec += (time_t)(timeout / 1000000000u + ns / 1000000000u);
    deadline.tv_nsec = (long)(ns % 1000000000u);
  }
  while (!holds(cond, v, cmp)) {
    if (timeout == UINT64_MAX)
      pthread_cond_wait(&cv, &mu);
    else if (pthread_cond_timedwait(&cv, &mu, &deadline) == ETIMEDOUT)
      break;
    if (!s->live || s->gen != gen) {
      async_error("fake_hsa: %s(%#lx): the signal was destroyed during the wait", fn, (unsigned long)signal.handle);
      break;
    }
    v = s->value;
  }
  signal_waiters--;
  pthread_mutex_unlock(&mu);
  return v;
}

hsa_signal_value_t hsa_signal_wait_scacquire(hsa_signal_t signal, int cond, hsa_signal_value_t cmp, uint64_t timeout,
                                             int wait_state) {
  (void)wait_state;
  return wait(signal, cond, cmp, timeout, "hsa_signal_wait_scacquire");
}

hsa_signal_value_t hsa_signal_wait_relaxed(hsa_signal_t signal, int cond, hsa_signal_value_t cmp, uint64_t timeout,
                                           int wait_state) {
  (void)wait_state;
  return wait(signal, cond, cmp, timeout, "hsa_signal_wait_relaxed");
}

/* ------------------------------------------------------------------ */
/* Threads of the double: copies, async handlers                        */

static void *copy_main(void *arg);
static void *handler_main(void *arg);
static pthread_t copy_thread, handler_thread;
static int copy_started, handler_started, copy_quit, handler_quit;

/* mu held */
static int start(pthread_t *t, int *started, void *(*fn)(void *)) {
  if (*started)
    return 0;
  if (pthread_create(t, NULL, fn, NULL) != 0)
    return -1;
  *started = 1;
  return 0;
}

struct copy {
  uintptr_t dst, src; /* checked again when the copy runs */
  uint32_t by;        /* the engine's agent bit */
  size_t n;
  struct fake_signal *done;
  struct fake_signal **deps;
  uint32_t ndeps;
  int fail; /* FAKE_HSA_COPY_ERROR */
  int prefetch; /* hsa_amd_svm_prefetch_async: nothing to copy; to agent index `by` */
  struct copy *next;
};
static struct copy *copies; /* in submission order */
static struct copy **copies_end = &copies; /* its last next field: appends are O(1) */

/* mu held */
static void append_copy(struct copy *c) {
  c->next = NULL;
  *copies_end = c;
  copies_end = &c->next;
}

hsa_status_t hsa_amd_memory_async_copy(void *dst, hsa_agent_t dst_agent, const void *src, hsa_agent_t src_agent,
                                       size_t size, uint32_t num_dep_signals, const hsa_signal_t *dep_signals,
                                       hsa_signal_t completion_signal) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (dst == NULL || src == NULL || completion_signal.handle == 0 || (num_dep_signals > 0 && dep_signals == NULL))
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  int fail = env_long("FAKE_HSA_COPY_ERROR", 0) != 0;
  pthread_mutex_lock(&mu);
  int di = dst_agent.handle ? gpu_index(dst_agent.handle) : -3;
  int si = src_agent.handle ? gpu_index(src_agent.handle) : -3;
  /* an agent of 0: the owner of the memory */
  if (di == -3) {
    struct region *r = known((uintptr_t)dst);
    di = r ? r->owner : -1;
  }
  if (si == -3) {
    struct region *r = known((uintptr_t)src);
    si = r ? r->owner : -1;
  }
  if (di == -2 || si == -2) {
    pthread_mutex_unlock(&mu);
    return HSA_STATUS_ERROR_INVALID_AGENT;
  }
  int by = si >= 0 ? si : di; /* the agent whose engine copies */
  uint32_t bit = by < 0 ? ACC_CPU : 1u << by;
  char *d, *s;
  hsa_status_t st = reach((uintptr_t)dst, size, bit, &d, "copy destination");
  (void)d;
  if (st == HSA_STATUS_SUCCESS)
    st = reach((uintptr_t)src, size, bit, &s, "copy source");
  (void)s;
  struct fake_signal *done = lookup_signal(completion_signal.handle);
  if (st == HSA_STATUS_SUCCESS && (done == NULL || done->kind != 1)) {
    note("fake_hsa: copy completion signal %#lx is not a live signal", (unsigned long)completion_signal.handle);
    st = HSA_STATUS_ERROR_INVALID_SIGNAL;
  }
  struct copy *c = NULL;
  if (st == HSA_STATUS_SUCCESS) {
    c = calloc(1, sizeof *c);
    if (c)
      c->deps = calloc(num_dep_signals + 1, sizeof *c->deps);
    if (c == NULL || c->deps == NULL)
      st = HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  }
  for (uint32_t k = 0; st == HSA_STATUS_SUCCESS && k < num_dep_signals; k++) {
    c->deps[k] = lookup_signal(dep_signals[k].handle);
    if (c->deps[k] == NULL || c->deps[k]->kind != 1) {
      note("fake_hsa: copy dependency %u (%#lx) is not a live signal", k, (unsigned long)dep_signals[k].handle);
      st = HSA_STATUS_ERROR_INVALID_SIGNAL;
    }
  }
  if (st == HSA_STATUS_SUCCESS && start(&copy_thread, &copy_started, copy_main) != 0)
    st = HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  if (st != HSA_STATUS_SUCCESS) {
    if (c)
      free(c->deps);
    free(c);
    pthread_mutex_unlock(&mu);
    return st;
  }
  c->dst = (uintptr_t)dst;
  c->src = (uintptr_t)src;
  c->by = bit;
  c->n = size;
  c->done = done;
  c->ndeps = num_dep_signals;
  c->fail = fail;
  done->pending++;
  for (uint32_t k = 0; k < c->ndeps; k++)
    c->deps[k]->pending++;
  append_copy(c);
  live_copies++;
  if (!held() || signal_waiters > 0)
    pthread_cond_signal(&copy_cv);
  pthread_mutex_unlock(&mu);
  return HSA_STATUS_SUCCESS;
}

/* mu held */
static void free_copy(struct copy *c) {
  c->done->pending--;
  for (uint32_t k = 0; k < c->ndeps; k++)
    c->deps[k]->pending--;
  free(c->deps);
  free(c);
  live_copies--;
}

/* mu held: 1 when every dependency is 0, -1 when one is negative */
static int deps_state(struct fake_signal **deps, uint32_t n) {
  int ready = 1;
  for (uint32_t k = 0; k < n; k++) {
    if (deps[k] == NULL)
      continue;
    int64_t v = deps[k]->value;
    if (v < 0)
      return -1;
    if (v != 0)
      ready = 0;
  }
  return ready;
}

/* A DMA copy is not memmove: one whose ranges overlap reads bytes it has
 * overwritten already (as an H200's copies do). The double copies such a
 * copy front to back in 8-byte pieces. */
static void dma_copy(char *dst, const char *src, size_t n) {
  if (dst == src || dst >= src + n || src >= dst + n) {
    memcpy(dst, src, n);
    return;
  }
  for (size_t i = 0; i < n; i += 8) {
    char piece[8];
    size_t k = n - i < 8 ? n - i : 8;
    memcpy(piece, src + i, k);
    memcpy(dst + i, piece, k);
  }
}

static long prefetches;
static int prefetch_last = -3;

static void *copy_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mu);
  while (!copy_quit) {
    if (held() && signal_waiters == 0) {
      pthread_cond_wait(&copy_cv, &mu);
      continue;
    }
    /* the first copy whose dependencies are met (engines run
     * independent copies in any order) */
    int state = 0;
    struct copy *c = NULL;
    for (struct copy **p = &copies; *p; p = &(*p)->next)
      if ((state = deps_state((*p)->deps, (*p)->ndeps)) != 0) {
        c = *p;
        *p = c->next;
        if (c->next == NULL)
          copies_end = p;
        break;
      }
    if (c == NULL) {
      pthread_cond_wait(&copy_cv, &mu);
      continue;
    }
    /* the memory may have been freed or unlocked since the copy was
     * submitted: a GPU would fault, the double fails the copy */
    char *d = NULL, *s = NULL;
    if (c->prefetch && state > 0) {
      /* the double's SVM memory is host memory every agent reads: the
       * prefetch only counts */
      prefetches++;
      prefetch_last = (int)c->by;
      set_value(c->done, c->done->value - 1, 0);
    } else if (state < 0 || c->fail) {
      note("fake_hsa: copy of %zu bytes failed: %s", c->n,
           state < 0 ? "a dependency signal is negative" : "FAKE_HSA_COPY_ERROR");
      set_value(c->done, -1, 0);
    } else if (reach(c->dst, c->n, c->by, &d, "copy destination (when the copy ran)") != HSA_STATUS_SUCCESS ||
               reach(c->src, c->n, c->by, &s, "copy source (when the copy ran)") != HSA_STATUS_SUCCESS) {
      async_errors++; /* last_error says what */
      set_value(c->done, -1, 0);
    } else {
      pthread_mutex_unlock(&mu);
      dma_copy(d, s, c->n);
      pthread_mutex_lock(&mu);
      copies_done++;
      set_value(c->done, c->done->value - 1, 0);
    }
    free_copy(c);
  }
  pthread_mutex_unlock(&mu);
  return NULL;
}

/* Async handlers and queue errors, delivered on one thread. */
struct handler {
  struct fake_signal *signal;
  uint32_t gen;
  int cond;
  int64_t value;
  bool (*fn)(hsa_signal_value_t, void *);
  void *arg;
  struct handler *next;
};
static struct handler *handlers, *running_handler;

struct queue_event {
  struct fake_queue *queue;
  hsa_status_t status;
  struct queue_event *next;
};
static struct queue_event *queue_events;
static struct fake_queue *delivering; /* whose callback runs now */

static int handler_uses(struct fake_signal *s) {
  for (struct handler *h = handlers; h; h = h->next)
    if (h->signal == s && h->gen == s->gen && h != running_handler)
      return 1;
  return 0;
}

hsa_status_t hsa_amd_signal_async_handler(hsa_signal_t signal, int cond, hsa_signal_value_t value,
                                          bool (*handler)(hsa_signal_value_t, void *), void *arg) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (handler == NULL || cond < 0 || cond > 3)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&mu);
  struct fake_signal *s = lookup_signal(signal.handle);
  if (s == NULL || s->kind != 1) {
    note("fake_hsa: hsa_amd_signal_async_handler(%#lx): not a live signal", (unsigned long)signal.handle);
    pthread_mutex_unlock(&mu);
    return HSA_STATUS_ERROR_INVALID_SIGNAL;
  }
  struct handler *h = calloc(1, sizeof *h);
  if (h == NULL || start(&handler_thread, &handler_started, handler_main) != 0) {
    free(h);
    pthread_mutex_unlock(&mu);
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  }
  *h = (struct handler){.signal = s, .gen = s->gen, .cond = cond, .value = value, .fn = handler, .arg = arg};
  LIST_APPEND(&handlers, struct handler, h);
  live_handlers++;
  pthread_cond_signal(&handler_cv);
  pthread_mutex_unlock(&mu);
  return HSA_STATUS_SUCCESS;
}

struct fake_queue;
static void deliver_queue_error(struct queue_event *e); /* called without mu */

static void *handler_main(void *arg) {
  (void)arg;
  on_handler_thread = 1;
  pthread_mutex_lock(&mu);
  while (!handler_quit) {
    if (queue_events) {
      struct queue_event *e = queue_events;
      queue_events = e->next;
      delivering = e->queue;
      pthread_mutex_unlock(&mu);
      deliver_queue_error(e);
      free(e);
      pthread_mutex_lock(&mu);
      delivering = NULL;
      pthread_cond_broadcast(&cv);
      continue;
    }
    /* off the list while it runs */
    struct handler *h = LIST_TAKE(&handlers, struct handler, x, holds(x->cond, x->signal->value, x->value));
    if (h == NULL) {
      pthread_cond_wait(&handler_cv, &mu);
      continue;
    }
    h->next = NULL;
    running_handler = h;
    int64_t v = h->signal->value;
    pthread_mutex_unlock(&mu);
    bool keep = h->fn(v, h->arg);
    pthread_mutex_lock(&mu);
    running_handler = NULL;
    if (keep && h->signal->live && h->signal->gen == h->gen && !handler_quit) {
      LIST_APPEND(&handlers, struct handler, h); /* to the back: the others get their turn */
    } else {
      free(h);
      live_handlers--;
    }
  }
  pthread_mutex_unlock(&mu);
  return NULL;
}

/* ------------------------------------------------------------------ */
/* Profiling and SVM prefetch                                           */

/* hsa_amd_profiling_dispatch_time_t: start and end of the packet that
 * completed a signal, in the system timestamp domain (the double's clock
 * is that domain: TIMESTAMP_FREQUENCY 1 GHz). The runtime reads what the
 * signal holds: zeros (or an earlier packet's times) when no packet of a
 * profiling queue completed it. */
typedef struct {
  uint64_t start, end;
} dispatch_time;

hsa_status_t hsa_amd_profiling_get_dispatch_time(hsa_agent_t agent, hsa_signal_t signal, dispatch_time *time) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (time == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&mu);
  int g = gpu_index(agent.handle);
  struct fake_signal *s = lookup_signal(signal.handle);
  hsa_status_t st = HSA_STATUS_SUCCESS;
  if (g < 0)
    st = HSA_STATUS_ERROR_INVALID_AGENT; /* a GPU's packets only */
  else if (s == NULL || s->kind != 1)
    st = HSA_STATUS_ERROR_INVALID_SIGNAL;
  else
    *time = (dispatch_time){s->start_ts, s->end_ts};
  pthread_mutex_unlock(&mu);
  return st;
}

long fake_hsa_prefetches(void) {
  pthread_mutex_lock(&mu);
  long n = prefetches;
  pthread_mutex_unlock(&mu);
  return n;
}

/* the agent of the latest prefetch: a GPU's index, -1 the CPU */
int fake_hsa_prefetch_last(void) {
  pthread_mutex_lock(&mu);
  int n = prefetch_last;
  pthread_mutex_unlock(&mu);
  return n;
}

/* As ROCr: the range is not checked here (the kernel driver moves what
 * it can, later); the agent and the signals are. It runs once every
 * dependency is 0, on the copy thread, in no order with other work. */
hsa_status_t hsa_amd_svm_prefetch_async(void *ptr, size_t size, hsa_agent_t agent, uint32_t num_dep_signals,
                                        const hsa_signal_t *dep_signals, hsa_signal_t completion_signal) {
  (void)ptr;
  (void)size;
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (num_dep_signals > 0 && dep_signals == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&mu);
  int g = gpu_index(agent.handle);
  hsa_status_t st = g == -2 ? HSA_STATUS_ERROR_INVALID_AGENT : HSA_STATUS_SUCCESS;
  struct fake_signal *done = lookup_signal(completion_signal.handle);
  if (st == HSA_STATUS_SUCCESS && (done == NULL || done->kind != 1))
    st = HSA_STATUS_ERROR_INVALID_SIGNAL;
  struct copy *c = NULL;
  if (st == HSA_STATUS_SUCCESS) {
    c = calloc(1, sizeof *c);
    if (c)
      c->deps = calloc(num_dep_signals + 1, sizeof *c->deps);
    if (c == NULL || c->deps == NULL)
      st = HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  }
  for (uint32_t k = 0; st == HSA_STATUS_SUCCESS && k < num_dep_signals; k++) {
    c->deps[k] = lookup_signal(dep_signals[k].handle);
    if (c->deps[k] == NULL || c->deps[k]->kind != 1)
      st = HSA_STATUS_ERROR_INVALID_SIGNAL;
  }
  if (st == HSA_STATUS_SUCCESS && start(&copy_thread, &copy_started, copy_main) != 0)
    st = HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  if (st != HSA_STATUS_SUCCESS) {
    if (c)
      free(c->deps);
    free(c);
    pthread_mutex_unlock(&mu);
    return st;
  }
  c->prefetch = 1;
  c->by = (uint32_t)g;
  c->done = done;
  c->ndeps = num_dep_signals;
  done->pending++;
  for (uint32_t k = 0; k < c->ndeps; k++)
    c->deps[k]->pending++;
  append_copy(c);
  live_copies++;
  if (!held() || signal_waiters > 0)
    pthread_cond_signal(&copy_cv);
  pthread_mutex_unlock(&mu);
  return HSA_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Queues                                                               */

/* Laid out as amd_queue_t where it matters: the hsa_queue_t first, the
 * write index at byte 56 and the read index at byte 128. */
struct fake_queue {
  hsa_queue_t hsa;
  uint32_t caps, reserved1[3];
  volatile uint64_t write_dispatch_id;
  uint32_t reserved2[16];
  volatile uint64_t read_dispatch_id;
  /* the double's own */
  int gpu;
  void (*callback)(hsa_status_t, hsa_queue_t *, void *);
  void *data;
  struct fake_signal *doorbell;
  int64_t rung; /* the highest packet index written to the doorbell */
  int stuck, failed, quit;
  int in_barrier;  /* its thread waits for dependencies */
  int profiling;   /* hsa_amd_profiling_set_profiler_enabled */
  pthread_cond_t cv; /* its thread waits on it */
  pthread_t thread;
  ol_fiber_pool *fibers;
  struct fake_queue *next;
} __attribute__((aligned(64)));
_Static_assert(offsetof(struct fake_queue, write_dispatch_id) == 56, "amd_queue_t layout");
_Static_assert(offsetof(struct fake_queue, read_dispatch_id) == 128, "amd_queue_t layout");

static struct fake_queue *queues;
static uint64_t next_queue_id;

/* mu held */
static void doorbell_rung(struct fake_queue *q, int64_t v, int stuck) {
  if (v > q->rung)
    q->rung = v;
  if (stuck)
    q->stuck = 1;
  if (!held() || signal_waiters > 0 ||
      __atomic_load_n(&q->write_dispatch_id, __ATOMIC_ACQUIRE) - q->read_dispatch_id >= q->hsa.size - q->hsa.size / 8)
    pthread_cond_signal(&q->cv);
}

/* mu held: a thread waits on a signal; held engines run */
static void wake_held(void) {
  pthread_cond_signal(&copy_cv);
  for (struct fake_queue *q = queues; q; q = q->next)
    pthread_cond_signal(&q->cv);
}

/* mu held: a signal changed */
static void wake_threads(void) {
  if (copies && (!held() || signal_waiters > 0))
    pthread_cond_signal(&copy_cv);
  if (handlers)
    pthread_cond_signal(&handler_cv);
  for (struct fake_queue *q = queues; q; q = q->next)
    if (q->in_barrier)
      pthread_cond_signal(&q->cv);
}

/* mu held: the queue fails; its callback hears of it on the handler
 * thread */
static void fail_queue(struct fake_queue *q, hsa_status_t st, const char *msg) {
  q->failed = 1;
  async_error("fake_hsa: queue %lu failed (%#x): %s", (unsigned long)q->hsa.id, (unsigned)st, msg);
  if (q->callback == NULL) {
    fprintf(stderr, "%s (the queue has no callback)\n", last_error);
    return;
  }
  struct queue_event *e = calloc(1, sizeof *e);
  if (e == NULL || start(&handler_thread, &handler_started, handler_main) != 0) {
    free(e);
    return;
  }
  e->queue = q;
  e->status = st;
  LIST_APPEND(&queue_events, struct queue_event, e);
  pthread_cond_signal(&handler_cv);
}

static void deliver_queue_error(struct queue_event *e) {
  /* a queue destroyed meanwhile took its events with it */
  e->queue->callback(e->status, &e->queue->hsa, e->queue->data);
}

struct fake_symbol;
static struct fake_symbol *lookup_kernel(uint64_t object, int gpu, char *msg, size_t size); /* mu held */
static const ol_host_kernel_desc *kernel_desc(struct fake_symbol *k, uint32_t *kernarg_size);
static int kernel_ctors(struct fake_symbol *k, uintptr_t *lo, uintptr_t *hi);

#define ERR(st, ...) (snprintf(msg, size, __VA_ARGS__), (st))

static const char *dim_name[3] = {"x", "y", "z"};

/* Checks the COv5 implicit arguments at the end of the kernarg segment
 * against the packet. */
static hsa_status_t check_implicit(const uint8_t *impl, const uint32_t grid[3], const uint32_t wg[3], uint32_t dims,
                                   char *msg, size_t size) {
  for (int d = 0; d < 3; d++) {
    uint32_t count;
    uint16_t group, rem;
    uint64_t offset;
    memcpy(&count, impl + 4 * d, 4);
    memcpy(&group, impl + 12 + 2 * d, 2);
    memcpy(&rem, impl + 18 + 2 * d, 2);
    memcpy(&offset, impl + 40 + 8 * d, 8);
    if (count != grid[d] / wg[d])
      return ERR(HSA_STATUS_ERROR_INVALID_ARGUMENT,
                 "implicit argument hidden_block_count_%s (implicit +%d) is %u, the packet's grid says %u", dim_name[d],
                 4 * d, count, grid[d] / wg[d]);
    if (group != wg[d])
      return ERR(HSA_STATUS_ERROR_INVALID_ARGUMENT,
                 "implicit argument hidden_group_size_%s (implicit +%d) is %u, the packet's workgroup says %u",
                 dim_name[d], 12 + 2 * d, group, wg[d]);
    if (rem != grid[d] % wg[d])
      return ERR(HSA_STATUS_ERROR_INVALID_ARGUMENT,
                 "implicit argument hidden_remainder_%s (implicit +%d) is %u, the packet says %u", dim_name[d],
                 18 + 2 * d, rem, grid[d] % wg[d]);
    if (offset != 0)
      return ERR(HSA_STATUS_ERROR_INVALID_ARGUMENT,
                 "implicit argument hidden_global_offset_%s (implicit +%d) is %lu, want 0", dim_name[d], 40 + 8 * d,
                 (unsigned long)offset);
  }
  uint16_t gdims;
  memcpy(&gdims, impl + 64, 2);
  if (gdims != dims)
    return ERR(HSA_STATUS_ERROR_INVALID_ARGUMENT,
               "implicit argument hidden_grid_dims (implicit +64) is %u, the packet's setup says %u", gdims, dims);
  for (int k = 0; k < 256; k++) {
    if ((k >= 0 && k < 24) || (k >= 40 && k < 66))
      continue;
    if (impl[k] != 0)
      return ERR(HSA_STATUS_ERROR_INVALID_ARGUMENT,
                 "implicit argument byte +%d is %#x: everything but the block counts, group sizes, remainders, "
                 "global offsets and grid dims must be zero",
                 k, impl[k]);
  }
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t run_dispatch(struct fake_queue *q, const dispatch_packet *p, char *msg, size_t size) {
  uint32_t dims = p->setup & 3u;
  uint32_t wg[3] = {p->workgroup_size_x, p->workgroup_size_y, p->workgroup_size_z};
  uint32_t grid[3] = {p->grid_size_x, p->grid_size_y, p->grid_size_z};
  if (dims < 1 || dims > 3)
    return ERR(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, "dispatch setup says %u dimensions", dims);
  for (uint32_t d = 0; d < 3; d++) {
    if (wg[d] == 0 || grid[d] == 0)
      return ERR(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, "workgroup_size_%s or grid_size_%s is 0", dim_name[d],
                 dim_name[d]);
    if (d >= dims && (wg[d] != 1 || grid[d] != 1))
      return ERR(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, "dimension %s is unused (%u dimensions) but its sizes are %u/%u",
                 dim_name[d], dims, wg[d], grid[d]);
    if (grid[d] % wg[d] != 0)
      return ERR(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
                 "grid_size_%s %u is not a multiple of workgroup_size_%s %u (partial work-groups: not in the double)",
                 dim_name[d], grid[d], dim_name[d], wg[d]);
  }
  if ((uint64_t)wg[0] * wg[1] * wg[2] > 1024 || wg[0] > 1024 || wg[1] > 1024 || wg[2] > 1024)
    return ERR(HSA_STATUS_ERROR_INVALID_ARGUMENT, "work-group %ux%ux%u is larger than 1024", wg[0], wg[1], wg[2]);
  if (grid[1] > 65535 || grid[2] > 65535)
    return ERR(HSA_STATUS_ERROR_INVALID_ARGUMENT, "grid %ux%ux%u is larger than the agent's 4294967295x65535x65535",
               grid[0], grid[1], grid[2]);
  /* 64 bits hold x*y; the total wraps only if it is far past the limit */
  unsigned __int128 items = (unsigned __int128)((uint64_t)grid[0] * grid[1]) * grid[2];
  if (items > 4294967295u)
    return ERR(HSA_STATUS_ERROR_INVALID_ARGUMENT, "grid %ux%ux%u has more work-items than the agent's GRID_MAX_SIZE 4294967295",
               grid[0], grid[1], grid[2]);
  if (p->group_segment_size > GROUP_MEMORY)
    return ERR(HSA_STATUS_ERROR_INVALID_ARGUMENT, "group_segment_size %u is larger than the agent's %u",
               p->group_segment_size, GROUP_MEMORY);
  pthread_mutex_lock(&mu);
  struct fake_symbol *k = lookup_kernel(p->kernel_object, q->gpu, msg, size);
  if (k == NULL) {
    pthread_mutex_unlock(&mu);
    return HSA_STATUS_ERROR_INVALID_CODE_SYMBOL;
  }
  uint32_t ks;
  const ol_host_kernel_desc *desc = kernel_desc(k, &ks);
  uintptr_t lo, hi;
  int special = kernel_ctors(k, &lo, &hi);
  uintptr_t ka = (uintptr_t)p->kernarg_address;
  struct region *r = find_region(allocs, ka);
  if (ka % 8 != 0 || r == NULL || !(r->flags & FLAG_KERNARG_INIT) || !(r->access & (1u << q->gpu)) ||
      ks > r->size - (ka - r->addr)) {
    pthread_mutex_unlock(&mu);
    return ERR(HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION,
               "kernarg_address %#lx (%u bytes): %s", (unsigned long)ka, ks,
               ka % 8 ? "not 8-byte aligned"
               : r == NULL ? "not an allocation of the runtime"
               : !(r->flags & FLAG_KERNARG_INIT) ? "not from a KERNARG_INIT pool"
               : !(r->access & (1u << q->gpu)) ? "the agent was not allowed access (hsa_amd_agents_allow_access)"
                                                : "the kernarg segment runs past the end of the allocation");
  }
  const uint8_t *args = (const uint8_t *)r->bytes + (ka - r->addr);
  pthread_mutex_unlock(&mu);
  hsa_status_t st = check_implicit(args + ks - 256, grid, wg, dims, msg, size);
  if (st != HSA_STATUS_SUCCESS)
    return st;
  uint32_t groups[3] = {grid[0] / wg[0], grid[1] / wg[1], grid[2] / wg[2]};
  uint64_t total = (uint64_t)groups[0] * groups[1] * groups[2];
  if (special) {
    /* amdgcn.device.init calls the functions from __init_array_start up to
     * __init_array_end, amdgcn.device.fini from __fini_array_end down to
     * __fini_array_start, as clang-22's kernels do: each work-item */
    /* their call stack (dynamic: they call through pointers) lives in the
     * private segment: without one, the GPU faults (the double assumes the
     * stack is used) */
    if (p->private_segment_size == 0)
      return ERR(HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION,
                 "amdgcn.device.%s has a dynamic call stack, but the packet's private_segment_size is 0",
                 special == 1 ? "init" : "fini");
    hsa_status_t forced = (hsa_status_t)env_long("FAKE_HSA_CTOR_RESULT", HSA_STATUS_SUCCESS);
    if (forced != HSA_STATUS_SUCCESS)
      return ERR(forced, "amdgcn.device.%s faulted (FAKE_HSA_CTOR_RESULT)", special == 1 ? "init" : "fini");
    uint64_t items = (uint64_t)grid[0] * grid[1] * grid[2];
    device_access(1);
    for (uint64_t n = 0; n < items; n++) {
      if (special == 1)
        for (uintptr_t a = lo; a < hi; a += 8)
          (*(void (**)(void))a)();
      else
        for (uintptr_t a = hi; a >= lo + 8; a -= 8)
          (*(void (**)(void))(a - 8))();
    }
    device_access(0);
    pthread_mutex_lock(&mu);
    dispatches++;
    pthread_mutex_unlock(&mu);
    return HSA_STATUS_SUCCESS;
  }
  /* A cooperative launch's packet (reserved2 tagged by the plugin, which
   * a GPU ignores): its grid fits on the GPU at once, so every group is
   * resident; the double runs each on a thread of its own so that the
   * grid barrier works. More groups than the GPU's work-group slots
   * (compute units x 16) would never all be resident: refused. */
  int coop = p->reserved2 == COOP_TAG;
  uint64_t slots = (104u + (uint64_t)q->gpu) * 16u;
  if (coop && total > slots)
    return ERR(HSA_STATUS_ERROR_INVALID_ARGUMENT, "a cooperative dispatch of %lu work-groups: the agent holds %lu at once",
               (unsigned long)total, (unsigned long)slots);
  device_access(1);
  const char *err = coop        ? ol_host_exec_coop(desc, args, groups, wg, p->group_segment_size)
                    : q->fibers ? ol_host_exec(desc, args, groups, wg, 0, total, p->group_segment_size, q->fibers)
                                : "cannot allocate fibers";
  device_access(0);
  if (err)
    return ERR(HSA_STATUS_ERROR_OUT_OF_RESOURCES, "the kernel could not run: %s", err);
  pthread_mutex_lock(&mu);
  dispatches++;
  pthread_mutex_unlock(&mu);
  return HSA_STATUS_SUCCESS;
}

/* -1: the queue is being destroyed */
static hsa_status_t run_barrier(struct fake_queue *q, const barrier_packet *p, char *msg, size_t size) {
  struct fake_signal *deps[5] = {0};
  pthread_mutex_lock(&mu);
  for (;;) {
    for (int k = 0; k < 5; k++) {
      if (p->dep_signal[k].handle == 0)
        continue;
      deps[k] = lookup_signal(p->dep_signal[k].handle);
      if (deps[k] == NULL || deps[k]->kind != 1) {
        pthread_mutex_unlock(&mu);
        return ERR(HSA_STATUS_ERROR_INVALID_SIGNAL, "barrier-AND dep_signal[%d] %#lx is not a live signal", k,
                   (unsigned long)p->dep_signal[k].handle);
      }
    }
    int state = deps_state(deps, 5);
    if (state < 0) {
      pthread_mutex_unlock(&mu);
      return ERR(HSA_STATUS_ERROR, "a barrier-AND dependency signal is negative (an error)");
    }
    if (state > 0 || q->quit)
      break;
    q->in_barrier = 1;
    pthread_cond_wait(&q->cv, &mu);
    q->in_barrier = 0;
  }
  int quit = q->quit;
  pthread_mutex_unlock(&mu);
  return quit ? -1 : HSA_STATUS_SUCCESS;
}

static void *queue_main(void *arg) {
  struct fake_queue *q = arg;
  char msg[400];
  const size_t size = sizeof msg;
  pthread_mutex_lock(&mu);
  while (!q->quit) {
    uint64_t r = q->read_dispatch_id;
    uint64_t w = __atomic_load_n(&q->write_dispatch_id, __ATOMIC_ACQUIRE);
    if (q->failed || q->stuck || r >= w || (int64_t)r > q->rung ||
        (held() && signal_waiters == 0 && w - r < q->hsa.size - q->hsa.size / 8)) {
      pthread_cond_wait(&q->cv, &mu);
      continue;
    }
    uint8_t *slot = (uint8_t *)q->hsa.base_address + (r & (q->hsa.size - 1)) * 64;
    uint16_t header = __atomic_load_n((uint16_t *)slot, __ATOMIC_ACQUIRE);
    uint32_t type = header & 0xffu;
    if (type == HSA_PACKET_TYPE_INVALID) {
      /* reserved and rung, but its header is not written yet */
      struct timespec t;
      clock_gettime(CLOCK_REALTIME, &t);
      t.tv_nsec += 200000;
      if (t.tv_nsec >= 1000000000) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000;
      }
      pthread_cond_timedwait(&q->cv, &mu, &t);
      continue;
    }
    pthread_mutex_unlock(&mu);
    union {
      uint8_t bytes[64];
      dispatch_packet dispatch;
      barrier_packet barrier;
    } packet;
    memcpy(&packet, slot, 64);
    msg[0] = '\0';
    uint32_t acquire = (header >> HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) & 3u;
    uint32_t release = (header >> HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE) & 3u;
    hsa_status_t st;
    uint64_t began = now_ns();
    if (acquire == 3 || release == 3)
      st = ERR(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, "packet %lu: fence scope 3 is reserved", (unsigned long)r);
    else if (type == HSA_PACKET_TYPE_KERNEL_DISPATCH)
      st = run_dispatch(q, &packet.dispatch, msg, size);
    else if (type == HSA_PACKET_TYPE_BARRIER_AND)
      st = run_barrier(q, &packet.barrier, msg, size);
    else
      st = ERR(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, "packet %lu has type %u: the double runs kernel dispatch (2) "
               "and barrier-AND (3) packets only", (unsigned long)r, type);
    pthread_mutex_lock(&mu);
    if (st == (hsa_status_t)-1)
      break;
    if (st != HSA_STATUS_SUCCESS) {
      fail_queue(q, st, msg);
      continue;
    }
    if (!(header & (1u << HSA_PACKET_HEADER_BARRIER)))
      unordered++;
    /* done: the slot is free again, then the completion signal */
    __atomic_store_n((uint16_t *)slot, (uint16_t)HSA_PACKET_TYPE_INVALID, __ATOMIC_RELEASE);
    __atomic_store_n(&q->read_dispatch_id, r + 1, __ATOMIC_RELEASE);
    hsa_signal_t done = packet.dispatch.completion_signal;
    if (done.handle != 0) {
      struct fake_signal *s = lookup_signal(done.handle);
      if (s == NULL || s->kind != 1) {
        snprintf(msg, size, "packet %lu: completion signal %#lx is not a live signal", (unsigned long)r,
                 (unsigned long)done.handle);
        fail_queue(q, HSA_STATUS_ERROR_INVALID_SIGNAL, msg);
        continue;
      }
      if (q->profiling) {
        s->start_ts = began;
        s->end_ts = now_ns();
      }
      set_value(s, s->value - 1, 0);
    }
    pthread_cond_broadcast(&cv);
  }
  pthread_mutex_unlock(&mu);
  ol_fiber_pool_free(q->fibers);
  q->fibers = NULL;
  return NULL;
}

hsa_status_t hsa_queue_create(hsa_agent_t agent, uint32_t size, uint32_t type,
                              void (*callback)(hsa_status_t, hsa_queue_t *, void *), void *data,
                              uint32_t private_segment_size, uint32_t group_segment_size, hsa_queue_t **queue) {
  (void)private_segment_size;
  (void)group_segment_size;
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (queue == NULL || size == 0 || (size & (size - 1)) != 0 || size < QUEUE_MIN || size > QUEUE_MAX)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  int i = gpu_index(agent.handle);
  if (i == -2)
    return HSA_STATUS_ERROR_INVALID_AGENT;
  if (i < 0 || (type != HSA_QUEUE_TYPE_MULTI && type != HSA_QUEUE_TYPE_SINGLE))
    return HSA_STATUS_ERROR_INVALID_QUEUE_CREATION;
  struct fake_queue *q = aligned_alloc(64, sizeof *q);
  void *ring = aligned_alloc(64, (size_t)size * 64);
  if (q == NULL || ring == NULL) {
    free(q);
    free(ring);
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  }
  memset(q, 0, sizeof *q);
  pthread_cond_init(&q->cv, NULL);
  q->fibers = ol_fiber_pool_new(); /* NULL: dispatches fail with OUT_OF_RESOURCES */
  memset(ring, 0, (size_t)size * 64);
  for (uint32_t k = 0; k < size; k++)
    ((uint16_t *)ring)[k * 32] = HSA_PACKET_TYPE_INVALID;
  pthread_mutex_lock(&mu);
  q->doorbell = new_signal(-1, 0);
  if (q->doorbell == NULL)
    goto fail;
  q->doorbell->queue = q;
  q->hsa.type = type;
  q->hsa.features = HSA_QUEUE_FEATURE_KERNEL_DISPATCH;
  q->hsa.base_address = ring;
  q->hsa.doorbell_signal.handle = (uintptr_t)q->doorbell;
  q->hsa.size = size;
  q->hsa.id = next_queue_id++;
  q->gpu = i;
  q->callback = callback;
  q->data = data;
  q->rung = -1;
  if (pthread_create(&q->thread, NULL, queue_main, q) != 0) {
    free_signal(q->doorbell);
    goto fail;
  }
  q->next = queues;
  queues = q;
  live_queues++;
  *queue = &q->hsa;
  pthread_mutex_unlock(&mu);
  return HSA_STATUS_SUCCESS;
fail:
  pthread_mutex_unlock(&mu);
  pthread_cond_destroy(&q->cv);
  ol_fiber_pool_free(q->fibers);
  free(q);
  free(ring);
  return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
}

/* mu held, q off the list: stops its thread and frees it */
static void end_queue(struct fake_queue *q) {
  q->quit = 1;
  pthread_cond_signal(&q->cv);
  struct queue_event *e;
  while ((e = LIST_TAKE(&queue_events, struct queue_event, x, x->queue == q)) != NULL)
    free(e);
  /* a callback of the queue running on the handler thread finishes first
   * (unless it is the one destroying the queue) */
  while (delivering == q && !on_handler_thread)
    pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  pthread_join(q->thread, NULL);
  pthread_mutex_lock(&mu);
  free_signal(q->doorbell);
  free(q->hsa.base_address);
  pthread_cond_destroy(&q->cv);
  free(q);
}

hsa_status_t hsa_amd_profiling_set_profiler_enabled(hsa_queue_t *queue, int enable) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (queue == NULL)
    return HSA_STATUS_ERROR_INVALID_QUEUE;
  pthread_mutex_lock(&mu);
  ((struct fake_queue *)queue)->profiling = enable != 0;
  pthread_mutex_unlock(&mu);
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_queue_destroy(hsa_queue_t *queue) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (queue == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&mu);
  struct fake_queue *q = LIST_TAKE(&queues, struct fake_queue, e, &e->hsa == queue);
  if (q) {
    end_queue(q);
    live_queues--;
  }
  pthread_mutex_unlock(&mu);
  return q ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR_INVALID_QUEUE;
}

/* The indices: no status to return, as in ROCr. */
#define QUEUE(q) ((struct fake_queue *)(uintptr_t)(q))
uint64_t hsa_queue_load_read_index_scacquire(const hsa_queue_t *q) {
  return __atomic_load_n(&QUEUE(q)->read_dispatch_id, __ATOMIC_ACQUIRE);
}
uint64_t hsa_queue_load_read_index_relaxed(const hsa_queue_t *q) {
  return __atomic_load_n(&QUEUE(q)->read_dispatch_id, __ATOMIC_RELAXED);
}
uint64_t hsa_queue_load_write_index_relaxed(const hsa_queue_t *q) {
  return __atomic_load_n(&QUEUE(q)->write_dispatch_id, __ATOMIC_RELAXED);
}
uint64_t hsa_queue_load_write_index_scacquire(const hsa_queue_t *q) {
  return __atomic_load_n(&QUEUE(q)->write_dispatch_id, __ATOMIC_ACQUIRE);
}
uint64_t hsa_queue_add_write_index_screlease(const hsa_queue_t *q, uint64_t v) {
  return __atomic_fetch_add(&QUEUE(q)->write_dispatch_id, v, __ATOMIC_RELEASE);
}
uint64_t hsa_queue_add_write_index_relaxed(const hsa_queue_t *q, uint64_t v) {
  return __atomic_fetch_add(&QUEUE(q)->write_dispatch_id, v, __ATOMIC_RELAXED);
}
uint64_t hsa_queue_add_write_index_scacq_screl(const hsa_queue_t *q, uint64_t v) {
  return __atomic_fetch_add(&QUEUE(q)->write_dispatch_id, v, __ATOMIC_ACQ_REL);
}

/* ------------------------------------------------------------------ */
/* Code objects, executables, symbols                                   */

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#endif
#define EM_AMDGPU_VALUE 224

struct fake_reader {
  const void *image; /* the caller's bytes, as in ROCr: they must outlive the reader */
  size_t size;
  struct fake_reader *next;
};

struct fake_object {
  void *handle;
  int fd;
  int gpu;
  /* its constructors and destructors, as ROCr has them (it runs none at
   * load): the loaded, relocated .init_array and .fini_array, [lo, hi),
   * which amdgcn.device.init and amdgcn.device.fini run (see take_ctors) */
  uintptr_t init_lo, init_hi, fini_lo, fini_hi;
  struct fake_object *next;
};

struct fake_symbol {
  int kind; /* HSA_SYMBOL_KIND_* */
  char name[128];
  int gpu;
  const ol_host_kernel_desc *desc; /* kernels */
  uint32_t kernarg_size;
  /* amdgcn.device.init (1) or amdgcn.device.fini (2), which run the
   * constructors (destructors) in [lo, hi), or 0 */
  int special;
  uintptr_t lo, hi;
  uintptr_t addr; /* variables */
  uint32_t size;
  /* kernels: the KERNEL_OBJECT handed out, never used again, so that a
   * packet naming a destroyed executable's kernel fails even when a new
   * symbol takes the old one's memory */
  uint64_t object;
  struct fake_exec *exec;
  struct fake_symbol *next;
};

struct fake_exec {
  int frozen;
  struct fake_object *objects;
  struct fake_symbol *symbols;
  struct fake_exec *next;
};

static struct fake_reader *readers;
static struct fake_exec *execs;

static struct fake_reader *lookup_reader(uint64_t h) {
  for (struct fake_reader *r = readers; r; r = r->next)
    if ((uintptr_t)r == h)
      return r;
  return NULL;
}

static struct fake_exec *lookup_exec(uint64_t h) {
  for (struct fake_exec *e = execs; e; e = e->next)
    if ((uintptr_t)e == h)
      return e;
  return NULL;
}

static struct fake_symbol *lookup_symbol(uint64_t h) {
  for (struct fake_exec *e = execs; e; e = e->next)
    for (struct fake_symbol *s = e->symbols; s; s = s->next)
      if ((uintptr_t)s == h)
        return s;
  return NULL;
}

static struct fake_symbol *lookup_kernel(uint64_t object, int gpu, char *msg, size_t size) {
  struct fake_symbol *k = NULL;
  for (struct fake_exec *e = execs; e && k == NULL; e = e->next)
    for (struct fake_symbol *s = e->symbols; s && k == NULL; s = s->next)
      if (s->kind == HSA_SYMBOL_KIND_KERNEL && s->object == object)
        k = s;
  if (k == NULL)
    snprintf(msg, size, "kernel_object %#lx is not a kernel of a live executable", (unsigned long)object);
  else if (!k->exec->frozen)
    snprintf(msg, size, "kernel_object %#lx (%s): its executable is not frozen", (unsigned long)object, k->name);
  else if (k->gpu != gpu)
    snprintf(msg, size, "kernel_object %#lx (%s) was loaded for agent %#x, not this queue's %#x", (unsigned long)object,
             k->name, GPU_AGENT0 + k->gpu, GPU_AGENT0 + gpu);
  else
    return k;
  return NULL;
}

/* The descriptor of amdgcn.device.init and amdgcn.device.fini: no
 * explicit arguments (run_dispatch runs them itself). */
static const ol_host_kernel_desc special_desc = {.magic = OL_HOST_KERNEL_MAGIC, .abi = OL_HOST_ABI};

/* mu held: 1 (2) if k is amdgcn.device.init (fini), with the array it
 * runs; 0 for another kernel */
static int kernel_ctors(struct fake_symbol *k, uintptr_t *lo, uintptr_t *hi) {
  *lo = k->lo;
  *hi = k->hi;
  return k->special;
}

static const ol_host_kernel_desc *kernel_desc(struct fake_symbol *k, uint32_t *kernarg_size) {
  *kernarg_size = k->kernarg_size;
  return k->desc;
}

hsa_status_t hsa_code_object_reader_create_from_memory(const void *image, size_t size, hsa_code_object_reader_t *out) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (image == NULL || size == 0 || out == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  struct fake_reader *r = calloc(1, sizeof *r);
  if (r == NULL)
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  r->image = image;
  r->size = size;
  pthread_mutex_lock(&mu);
  r->next = readers;
  readers = r;
  live_readers++;
  pthread_mutex_unlock(&mu);
  out->handle = (uintptr_t)r;
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_code_object_reader_destroy(hsa_code_object_reader_t reader) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&mu);
  struct fake_reader *r = LIST_TAKE(&readers, struct fake_reader, e, (uintptr_t)e == reader.handle);
  if (r) {
    free(r);
    live_readers--;
  }
  pthread_mutex_unlock(&mu);
  return r ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER;
}

/* profile: hsa_profile_t (BASE 0, FULL 1); rounding:
 * hsa_default_float_rounding_mode_t (DEFAULT 0, ZERO 1, NEAR 2) */
hsa_status_t hsa_executable_create_alt(int profile, int rounding, const char *options, hsa_executable_t *out) {
  (void)options;
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (out == NULL || profile < 0 || profile > 1 || rounding < 0 || rounding > 2)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  struct fake_exec *e = calloc(1, sizeof *e);
  if (e == NULL)
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  pthread_mutex_lock(&mu);
  e->next = execs;
  execs = e;
  live_execs++;
  pthread_mutex_unlock(&mu);
  out->handle = (uintptr_t)e;
  return HSA_STATUS_SUCCESS;
}

/* the extent of an ELF image: its section headers and segments */
static size_t elf_extent(const Elf64_Ehdr *e, size_t size) {
  size_t end = e->e_shoff + (size_t)e->e_shnum * e->e_shentsize;
  if (e->e_phoff > size || (size_t)e->e_phnum * sizeof(Elf64_Phdr) > size - e->e_phoff)
    return SIZE_MAX;
  const Elf64_Phdr *ph = (const Elf64_Phdr *)((const char *)e + e->e_phoff);
  for (int i = 0; i < e->e_phnum; i++)
    if (ph[i].p_offset + ph[i].p_filesz > end)
      end = ph[i].p_offset + ph[i].p_filesz;
  return end;
}

static hsa_status_t check_image(const struct fake_reader *r, int gpu) {
  const Elf64_Ehdr *e = r->image;
  if (r->size < sizeof *e || memcmp(e->e_ident, ELFMAG, SELFMAG) != 0 || e->e_ident[EI_CLASS] != ELFCLASS64) {
    note("fake_hsa: the code object is not a 64-bit ELF");
    return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  }
  if (e->e_machine != EM_AMDGPU_VALUE || e->e_type != ET_DYN) {
    note("fake_hsa: the code object has e_machine %u and e_type %u, want EM_AMDGPU (224) and ET_DYN", e->e_machine,
         e->e_type);
    return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  }
  if (elf_extent(e, r->size) > r->size) {
    note("fake_hsa: the code object is truncated (%zu bytes)", r->size);
    return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  }
  const struct gpu *g = &gpus[gpu];
  uint32_t mach = e->e_flags & EF_MACH_MASK, xnack = e->e_flags & EF_XNACK_MASK,
           sramecc = e->e_flags & EF_SRAMECC_MASK;
  /* xnack/sramecc: 0x100/0x400 any, 0x200/0x800 off, 0x300/0xc00 on */
  int xbad = g->xnack >= 0 && ((xnack == 0x200 && g->xnack) || (xnack == 0x300 && !g->xnack));
  int sbad = g->sramecc >= 0 && ((sramecc == 0x800 && g->sramecc) || (sramecc == 0xc00 && !g->sramecc));
  if (mach != g->mach || xbad || sbad) {
    note("fake_hsa: the code object's e_flags %#x (EF_AMDGPU_MACH %#x) do not fit agent %#x (%s, EF_AMDGPU_MACH %#x)",
         e->e_flags, mach, GPU_AGENT0 + gpu, g->target, g->mach);
    return HSA_STATUS_ERROR_INVALID_ISA;
  }
  return HSA_STATUS_SUCCESS;
}

/* ROCr runs no constructor or destructor of a code object: clang's
 * amdgcn.device.init and amdgcn.device.fini kernels run them when the
 * loader of the code object launches those. The double takes the image's
 * away from the host's dynamic loader (their dynamic tags become
 * DT_VALRNGLO, which it ignores) and keeps where the arrays are (their
 * virtual addresses; 0 when there is none), as fake_cuda.c does. */
static void take_ctors(Elf64_Ehdr *copy, size_t size, uintptr_t *init, size_t *ninit, uintptr_t *fini, size_t *nfini) {
  *init = *fini = 0;
  *ninit = *nfini = 0;
  Elf64_Phdr *ph = (Elf64_Phdr *)((char *)copy + copy->e_phoff);
  for (int i = 0; i < copy->e_phnum; i++) {
    if (ph[i].p_type != PT_DYNAMIC || ph[i].p_offset > size || ph[i].p_filesz > size - ph[i].p_offset)
      continue;
    Elf64_Dyn *dyn = (Elf64_Dyn *)((char *)copy + ph[i].p_offset);
    for (size_t k = 0; k < ph[i].p_filesz / sizeof *dyn && dyn[k].d_tag != DT_NULL; k++) {
      switch (dyn[k].d_tag) {
      case DT_INIT_ARRAY: *init = dyn[k].d_un.d_ptr; break;
      case DT_INIT_ARRAYSZ: *ninit = dyn[k].d_un.d_val / 8; break;
      case DT_FINI_ARRAY: *fini = dyn[k].d_un.d_ptr; break;
      case DT_FINI_ARRAYSZ: *nfini = dyn[k].d_un.d_val / 8; break;
      case DT_INIT:
      case DT_FINI:
        break;
      default:
        continue;
      }
      dyn[k].d_tag = DT_VALRNGLO;
    }
  }
  if (*init == 0)
    *ninit = 0;
  if (*fini == 0)
    *nfini = 0;
}

hsa_status_t hsa_executable_load_agent_code_object(hsa_executable_t exec, hsa_agent_t agent,
                                                   hsa_code_object_reader_t reader, const char *options,
                                                   hsa_loaded_code_object_t *loaded) {
  (void)options;
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&mu);
  struct fake_exec *e = lookup_exec(exec.handle);
  struct fake_reader *r = lookup_reader(reader.handle);
  int gpu = gpu_index(agent.handle);
  hsa_status_t st = e == NULL ? HSA_STATUS_ERROR_INVALID_EXECUTABLE
                    : e->frozen ? HSA_STATUS_ERROR_FROZEN_EXECUTABLE
                    : gpu < 0 ? HSA_STATUS_ERROR_INVALID_AGENT
                    : r == NULL ? HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER
                                : HSA_STATUS_SUCCESS;
  if (st == HSA_STATUS_SUCCESS)
    st = (hsa_status_t)env_long("FAKE_HSA_LOAD_RESULT", HSA_STATUS_SUCCESS);
  if (st == HSA_STATUS_SUCCESS)
    st = check_image(r, gpu);
  Elf64_Ehdr *copy = NULL;
  if (st == HSA_STATUS_SUCCESS) {
    copy = malloc(r->size);
    if (copy == NULL)
      st = HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    else
      memcpy(copy, r->image, r->size);
  }
  pthread_mutex_unlock(&mu);
  if (st != HSA_STATUS_SUCCESS)
    return st;
  /* undress: the host loader loads it */
  copy->e_machine = HOST_MACHINE;
  copy->e_flags = 0;
  copy->e_ident[EI_OSABI] = ELFOSABI_SYSV;
  copy->e_ident[EI_ABIVERSION] = 0;
  size_t size = r->size;
  uintptr_t init_at, fini_at;
  size_t ninit, nfini;
  take_ctors(copy, size, &init_at, &ninit, &fini_at, &nfini);
  char err[256];
  int fd = -1;
  const void *staged = ol_host_stage(copy, size, &fd, err, sizeof err);
  free(copy);
  void *h = NULL;
  uintptr_t base;
  if (staged) {
    ol_host_unstage(staged, size);
    h = ol_host_open(&fd, &base, err, sizeof err);
    if (h == NULL)
      ol_host_close_fd(fd);
  }
  struct fake_object *o = h ? calloc(1, sizeof *o) : NULL;
  pthread_mutex_lock(&mu);
  if (h == NULL || o == NULL) {
    note("fake_hsa: the code object cannot be loaded: %s", h ? "out of memory" : err);
    pthread_mutex_unlock(&mu);
    if (h)
      ol_host_unload(h, fd, err, sizeof err);
    return h ? HSA_STATUS_ERROR_OUT_OF_RESOURCES : HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  }
  o->handle = h;
  o->fd = fd;
  o->gpu = gpu;
  if (ninit) {
    o->init_lo = base + init_at;
    o->init_hi = o->init_lo + 8 * ninit;
  }
  if (nfini) {
    o->fini_lo = base + fini_at;
    o->fini_hi = o->fini_lo + 8 * nfini;
  }
  o->next = e->objects;
  e->objects = o;
  if (loaded)
    loaded->handle = (uintptr_t)o;
  pthread_mutex_unlock(&mu);
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_executable_freeze(hsa_executable_t exec, const char *options) {
  (void)options;
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&mu);
  struct fake_exec *e = lookup_exec(exec.handle);
  hsa_status_t st = e == NULL ? HSA_STATUS_ERROR_INVALID_EXECUTABLE
                    : e->frozen ? HSA_STATUS_ERROR_FROZEN_EXECUTABLE
                                : HSA_STATUS_SUCCESS;
  if (st == HSA_STATUS_SUCCESS)
    e->frozen = 1;
  pthread_mutex_unlock(&mu);
  return st;
}

/* mu held: a symbol of a loaded object, or NULL */
static struct fake_symbol *find_symbol(struct fake_exec *e, const char *name, int gpu) {
  for (struct fake_symbol *s = e->symbols; s; s = s->next)
    if (s->gpu == gpu && !strcmp(s->name, name))
      return s;
  size_t len = strlen(name);
  int kernel = len > 3 && !strcmp(name + len - 3, ".kd");
  for (struct fake_object *o = e->objects; o; o = o->next) {
    if (o->gpu != gpu)
      continue;
    struct fake_symbol s = {.gpu = gpu, .exec = e};
    snprintf(s.name, sizeof s.name, "%s", name);
    /* the kernels clang emits for a code object with constructors
     * (destructors): no arguments but the implicit ones */
    int special = !strcmp(name, "amdgcn.device.init.kd") && o->init_hi   ? 1
                  : !strcmp(name, "amdgcn.device.fini.kd") && o->fini_hi ? 2
                                                                         : 0;
    if (special) {
      static uint64_t specials;
      s.kind = HSA_SYMBOL_KIND_KERNEL;
      s.object = 0x4c0000000000ull + ++specials;
      s.desc = &special_desc;
      s.kernarg_size = 256;
      s.special = special;
      s.lo = special == 1 ? o->init_lo : o->fini_lo;
      s.hi = special == 1 ? o->init_hi : o->fini_hi;
    } else if (kernel) {
      char sym[160];
      snprintf(sym, sizeof sym, "__ol_kernel_%.*s", (int)(len - 3), name);
      const ol_host_kernel_desc *d = ol_host_sym(o->handle, sym);
      if (d == NULL || d->magic != OL_HOST_KERNEL_MAGIC || d->abi != OL_HOST_ABI)
        continue;
      static uint64_t objects;
      s.kind = HSA_SYMBOL_KIND_KERNEL;
      s.object = 0x4b0000000000ull + ++objects;
      s.desc = d;
      s.kernarg_size = ((d->args_size + 7u) & ~7u) + 256u;
    } else {
      void *p = ol_host_sym(o->handle, name);
      Dl_info info;
      const ElfW(Sym) *sym = NULL;
      if (p == NULL || !dladdr1(p, &info, (void **)&sym, RTLD_DL_SYMENT) || sym == NULL ||
          ELF64_ST_TYPE(sym->st_info) != STT_OBJECT)
        continue;
      s.kind = HSA_SYMBOL_KIND_VARIABLE;
      s.addr = (uintptr_t)p;
      s.size = (uint32_t)sym->st_size;
    }
    struct fake_symbol *n = malloc(sizeof *n);
    struct region *g = s.kind == HSA_SYMBOL_KIND_VARIABLE ? calloc(1, sizeof *g) : NULL;
    if (n == NULL || (s.kind == HSA_SYMBOL_KIND_VARIABLE && g == NULL)) {
      free(n);
      free(g);
      return NULL;
    }
    *n = s;
    n->next = e->symbols;
    e->symbols = n;
    if (g) {
      /* device memory of its agent for copies (the CPU can touch it in the
       * double, unlike on a GPU) */
      *g = (struct region){.addr = s.addr, .size = s.size ? s.size : 1, .bytes = (char *)s.addr, .owner = gpu,
                           .flags = FLAG_COARSE_GRAINED, .access = 1u << gpu, .kind = REGION_GLOBAL, .next = globals};
      globals = g;
    }
    return n;
  }
  return NULL;
}

hsa_status_t hsa_executable_get_symbol_by_name(hsa_executable_t exec, const char *name, const hsa_agent_t *agent,
                                               hsa_executable_symbol_t *out) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (name == NULL || out == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&mu);
  struct fake_exec *e = lookup_exec(exec.handle);
  hsa_status_t st = HSA_STATUS_SUCCESS;
  if (e == NULL) {
    st = HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  } else if (agent == NULL) {
    st = HSA_STATUS_ERROR_INVALID_SYMBOL_NAME; /* no program-allocation symbols */
  } else if (gpu_index(agent->handle) < 0) {
    st = HSA_STATUS_ERROR_INVALID_AGENT;
  } else {
    struct fake_symbol *s = find_symbol(e, name, gpu_index(agent->handle));
    if (s)
      out->handle = (uintptr_t)s;
    else {
      note("fake_hsa: no symbol %s for agent %#lx", name, (unsigned long)agent->handle);
      st = HSA_STATUS_ERROR_INVALID_SYMBOL_NAME;
    }
  }
  pthread_mutex_unlock(&mu);
  return st;
}

/* hsa_executable_symbol_info_t: TYPE 0 (hsa_symbol_kind_t), NAME_LENGTH 1
 * (uint32_t), NAME 2 (NAME_LENGTH bytes, no NUL), MODULE_NAME_LENGTH 3,
 * LINKAGE 5 (PROGRAM 1), VARIABLE_ALLOCATION 6 (AGENT 0),
 * VARIABLE_SEGMENT 7 (GLOBAL 0), VARIABLE_SIZE 9 (uint32_t),
 * VARIABLE_IS_CONST 10 (bool), KERNARG_SEGMENT_SIZE 11,
 * KERNARG_SEGMENT_ALIGNMENT 12, GROUP_SEGMENT_SIZE 13, PRIVATE_SEGMENT_SIZE
 * 14 (uint32_t), DYNAMIC_CALLSTACK 15 (bool), IS_DEFINITION 17 (bool),
 * AGENT 20 (hsa_agent_t), VARIABLE_ADDRESS 21 and KERNEL_OBJECT 22
 * (uint64_t). A kernel's attribute asked of a variable, or the reverse, is
 * HSA_STATUS_ERROR_INVALID_ARGUMENT. */
hsa_status_t hsa_executable_symbol_get_info(hsa_executable_symbol_t symbol, int attr, void *value) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (value == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&mu);
  struct fake_symbol *s = lookup_symbol(symbol.handle);
  if (s == NULL) {
    pthread_mutex_unlock(&mu);
    return HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL;
  }
  int kernel = s->kind == HSA_SYMBOL_KIND_KERNEL;
  hsa_status_t st = HSA_STATUS_SUCCESS;
  switch (attr) {
  case 0: *(int *)value = s->kind; break;
  case 1: *(uint32_t *)value = (uint32_t)strlen(s->name); break;
  case 2: memcpy(value, s->name, strlen(s->name)); break;
  case 3: *(uint32_t *)value = 0; break;
  case 5: *(int *)value = 1; break;
  case 17: *(bool *)value = true; break;
  case 20: *(hsa_agent_t *)value = agent_of(s->gpu); break;
  default:
    if (kernel) {
      switch (attr) {
      case 22: *(uint64_t *)value = s->object; break;
      case 11: *(uint32_t *)value = s->kernarg_size; break;
      case 12: *(uint32_t *)value = 8; break;
      case 13: case 14: *(uint32_t *)value = 0; break;
      case 15: *(bool *)value = s->special != 0; break; /* they call through pointers */
      default: st = HSA_STATUS_ERROR_INVALID_ARGUMENT;
      }
    } else {
      switch (attr) {
      case 21: *(uint64_t *)value = s->addr; break;
      case 9: *(uint32_t *)value = s->size; break;
      case 6: case 7: *(int *)value = 0; break;
      case 10: *(bool *)value = false; break;
      default: st = HSA_STATUS_ERROR_INVALID_ARGUMENT;
      }
    }
  }
  pthread_mutex_unlock(&mu);
  return st;
}

/* mu held, e off the list */
static void end_exec(struct fake_exec *e) {
  while (e->symbols) {
    struct fake_symbol *s = e->symbols;
    e->symbols = s->next;
    if (s->kind == HSA_SYMBOL_KIND_VARIABLE)
      free(LIST_TAKE(&globals, struct region, g, g->addr == s->addr && g->owner == s->gpu));
    free(s);
  }
  while (e->objects) {
    struct fake_object *o = e->objects;
    e->objects = o->next;
    char err[256];
    ol_host_unload(o->handle, o->fd, err, sizeof err);
    free(o);
  }
  free(e);
}

hsa_status_t hsa_executable_destroy(hsa_executable_t exec) {
  if (!initialised())
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&mu);
  struct fake_exec *e = LIST_TAKE(&execs, struct fake_exec, x, (uintptr_t)x == exec.handle);
  if (e) {
    end_exec(e);
    live_execs--;
  }
  pthread_mutex_unlock(&mu);
  return e ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR_INVALID_EXECUTABLE;
}

/* ------------------------------------------------------------------ */
/* Shut down                                                            */

/* mu held: frees a list of regions, counting them */
static void drop_regions(struct region **list, long *live, long *leaked) {
  LIST_DRAIN(list, struct region, r) {
    if (live && r->kind == REGION_ALLOC)
      leaked_bytes += (long)r->size;
    release_region(r);
    if (live) {
      (*live)--;
      (*leaked)++;
    }
  }
}

/* The final hsa_shut_down tears the runtime down: what is still alive is
 * counted as leaked (fake_hsa_leaked) and released. */
hsa_status_t hsa_shut_down(void) {
  pthread_mutex_lock(&mu);
  if (refs == 0) {
    pthread_mutex_unlock(&mu);
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  }
  if (refs > 1) {
    __atomic_store_n(&refs, refs - 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&mu);
    return HSA_STATUS_SUCCESS;
  }
  if (on_handler_thread) {
    note("fake_hsa: the final hsa_shut_down cannot run on the runtime's handler thread");
    pthread_mutex_unlock(&mu);
    return HSA_STATUS_ERROR;
  }
  /* stop the double's threads; what they leave is leaked */
  struct fake_queue *qs = queues;
  queues = NULL;
  LIST_DRAIN(&qs, struct fake_queue, q) {
    end_queue(q);
    live_queues--;
    leaked_queues++;
  }
  copy_quit = handler_quit = 1;
  pthread_cond_signal(&copy_cv);
  pthread_cond_signal(&handler_cv);
  int joined_copy = copy_started, joined_handler = handler_started;
  copy_started = handler_started = 0;
  pthread_mutex_unlock(&mu);
  if (joined_copy)
    pthread_join(copy_thread, NULL);
  if (joined_handler)
    pthread_join(handler_thread, NULL);
  pthread_mutex_lock(&mu);
  copy_quit = handler_quit = 0;
  LIST_DRAIN(&copies, struct copy, c) {
    free_copy(c);
    leaked_copies++;
  }
  copies_end = &copies;
  LIST_DRAIN(&handlers, struct handler, h) {
    free(h);
    live_handlers--;
    leaked_handlers++;
  }
  LIST_DRAIN(&queue_events, struct queue_event, e)
    free(e);
  for (uint32_t k = 0; k < sigs_used; k++)
    if (sigs[k].live && sigs[k].kind == 1) {
      free_signal(&sigs[k]);
      live_signals--;
      leaked_signals++;
    }
  LIST_DRAIN(&execs, struct fake_exec, e) {
    end_exec(e);
    live_execs--;
    leaked_execs++;
  }
  LIST_DRAIN(&readers, struct fake_reader, r) {
    free(r);
    live_readers--;
    leaked_readers++;
  }
  drop_regions(&allocs, &live_allocs, &leaked_allocs);
  drop_regions(&locks, &live_locks, &leaked_locks);
  drop_regions(&globals, NULL, NULL);
  clear_quarantine();
  for (int g = 0; g < MAX_GPUS; g++)
    if (arenas[g].addr) {
      arenas[g].nblocks = 0;
      arenas[g].next = 0;
    }
  __atomic_store_n(&refs, 0, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&mu);
  return (hsa_status_t)env_long("FAKE_HSA_SHUTDOWN_RESULT", HSA_STATUS_SUCCESS);
}
