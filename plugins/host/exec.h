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

// Runs groups [group_begin, group_end) of a kernel. Returns 0, or an error
// text (static) when the fibers of a group kernel cannot be created.
const char *ol_host_exec(const ol_host_kernel_desc *desc, const void *args,
                         const uint32_t num_groups[3], const uint32_t group_size[3],
                         uint64_t group_begin, uint64_t group_end, size_t dyn_shared,
                         ol_fiber_pool *pool);

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
// NULL with a message in err (the file stays open either way).
void *ol_host_open(int fd, uintptr_t *base_out, char *err, size_t err_size);
void ol_host_close_fd(int fd);
int ol_host_unload(void *handle, int fd, char *err, size_t err_size);
void *ol_host_sym(void *handle, const char *name);

#endif
