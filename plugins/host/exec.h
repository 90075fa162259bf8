// C side of the host CPU device: running kernels (work-group loops and
// fibers for barriers), host functions, copies, fills and program loading.
#ifndef LIBOFFLOAD_GO_HOST_EXEC_H
#define LIBOFFLOAD_GO_HOST_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include <offload/kernel.h>

// A set of fibers (one per work-item of a group kernel), reused across
// groups and launches by one worker at a time.
typedef struct ol_fiber_pool ol_fiber_pool;

ol_fiber_pool *ol_fiber_pool_new(void);
void ol_fiber_pool_free(ol_fiber_pool *pool);

// The shared part of a job (a launch, or a large copy) that several
// threads run together: each takes chunks of its units (groups, or copy
// blocks) until none is left. Chunks shrink as the job nears its end
// (each is the units left divided by twice the workers, at least
// min_chunk), so threads start on long contiguous runs and finish
// together. It lives in the queue's job (Go memory that holds no Go
// pointer); C uses it only during the calls below.
typedef struct ol_host_job_ctl {
  uint64_t next;   // first unit not yet taken (atomic)
  uint32_t failed; // (atomic)
  uint32_t workers;      // threads that may take part
  uint64_t total;        // units
  uint64_t min_chunk;
} ol_host_job_ctl;

// Marks the job failed: nobody takes another chunk.
void ol_host_job_fail(ol_host_job_ctl *ctl);

// Runs groups [group_begin, group_end) of a kernel. Returns 0, or an error
// text (static) when the fibers of a group kernel or the dynamic
// group-local memory cannot be had.
const char *ol_host_exec(const ol_host_kernel_desc *desc, const void *args,
                         const uint32_t num_groups[3], const uint32_t group_size[3],
                         uint64_t group_begin, uint64_t group_end, size_t dyn_shared,
                         ol_fiber_pool *pool);

// Runs chunks of a kernel's groups until none is left or the job failed.
// Returns 0, or an error text (static) when the fibers of a group kernel
// or the dynamic group-local memory cannot be had (the job is then failed).
const char *ol_host_exec_chunks(ol_host_job_ctl *ctl, const ol_host_kernel_desc *desc,
                                const void *args, const uint32_t num_groups[3],
                                const uint32_t group_size[3], size_t dyn_shared,
                                ol_fiber_pool *pool);
// Runs every group of a kernel at once, each on a thread of its own, with
// ol_grid_barrier() waiting for all of them (a cooperative launch). Every
// resource is had before any group starts, so a failure runs nothing.
// Returns 0, or an error text (static).
const char *ol_host_exec_coop(const ol_host_kernel_desc *desc, const void *args,
                              const uint32_t num_groups[3], const uint32_t group_size[3],
                              size_t dyn_shared);
// The error text of the exec functions above when a kernel called
// ol_grid_barrier() outside a cooperative launch, and whether msg is it.
extern const char ol_host_grid_misuse[];
int ol_host_is_grid_misuse(const char *msg);
// Kernels of these <offload/kernel.h> ABI versions run (later versions only
// added at the end of ol_host_launch).
#define OL_HOST_ABI_OLDEST 2
// Copies chunks of block-byte blocks of size bytes from src to dst (the
// ranges do not overlap) until none is left.
void ol_host_copy_chunks(ol_host_job_ctl *ctl, uintptr_t dst, uintptr_t src, uint64_t size,
                         uint64_t block);

// Calls fn(user) with token recorded as this thread's running host
// function; ol_host_current() returns it (0 outside host functions).
void ol_host_call(void *fn, void *user, uintptr_t token);
uintptr_t ol_host_current(void);
void ol_host_fill(void *dst, const void *pattern, size_t pattern_size, size_t size);

// Loads an ELF shared object privately from memory. Returns the handle and
// the load base (the address its symbol values are relative to), or NULL
// with a message in err.
// Copies an ELF image into a new sealed in-memory file and maps it
// read-only: the bytes to validate are the ones the loader will read.
// Returns the mapping (and the file in fd_out), or NULL with a message.
const void *ol_host_stage(const void *image, size_t size, int *fd_out, char *err, size_t err_size);
void ol_host_unstage(const void *map, size_t size);
// Loads a staged image privately. Returns the handle and the load base, or
// NULL with a message in err (the file stays open either way; *fd is its
// number, which may have moved if the loader still knew the first one).
void *ol_host_open(int *fd, uintptr_t *base_out, char *err, size_t err_size);
void ol_host_close_fd(int fd);
int ol_host_unload(void *handle, int fd, char *err, size_t err_size);
void *ol_host_sym(void *handle, const char *name);

#endif
