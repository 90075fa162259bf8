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

void ol_host_call(void *fn, void *user);
void ol_host_fill(void *dst, const void *pattern, size_t pattern_size, size_t size);

// Loads an ELF shared object privately from memory. Returns the handle, or
// NULL with a message in err.
void *ol_host_load(const void *image, size_t size, int *fd_out, char *err, size_t err_size);
int ol_host_unload(void *handle, int fd, char *err, size_t err_size);
void *ol_host_sym(void *handle, const char *name);

#endif
