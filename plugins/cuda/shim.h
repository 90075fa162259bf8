// Trampolines for the CUDA driver API. Each takes the address of an entry
// point (from dlsym) and calls it with the driver's C signature; the ones
// that need a context first make ctx current on the calling thread through
// cuCtxSetCurrent (set), in the same C call, so that a goroutine moving to
// another thread between two calls can never issue a driver call without
// the right context. CUdeviceptr, CUcontext, CUstream and CUevent are
// passed as uintptr_t (all 64-bit).
#ifndef LIBOFFLOAD_GO_CUDA_SHIM_H
#define LIBOFFLOAD_GO_CUDA_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include "../plugin/fastalloc.h"
#include "../plugin/fastq.h"

// Entry points that run with a context, in one struct per driver.
typedef struct {
  uintptr_t set_current;
  uintptr_t mem_alloc, mem_free, mem_alloc_host, mem_free_host, mem_alloc_managed;
  uintptr_t host_register, host_unregister;
  uintptr_t stream_create, stream_destroy, stream_sync, stream_query, stream_wait_event;
  uintptr_t event_create, event_destroy, event_record, event_query, event_sync;
  uintptr_t copy_htod, copy_dtoh, copy_dtod, copy_peer;
  uintptr_t memset8, memset16, memset32;
  uintptr_t launch_host_func;
  uintptr_t module_load, module_unload, module_get_function, module_get_global;
  uintptr_t launch_kernel, func_get_attribute, func_set_attribute, occupancy_max_block;
  uintptr_t pointer_get_attribute;
  uintptr_t func_get_param_info; // optional (R550+): 0 when the driver lacks it
  // optional: cuLaunchCooperativeKernel, cuOccupancyMaxActiveBlocksPerMultiprocessor
  uintptr_t launch_coop, occupancy_active_blocks;
  // optional: profiling events and prefetch (0 when the driver lacks them)
  uintptr_t event_elapsed, mem_prefetch, mem_prefetch_v2;
} lgo_cu_fns;

int lgo_cu_primary_ctx_retain(uintptr_t fn, uintptr_t *ctx, int dev);
int lgo_cu_primary_ctx_release(uintptr_t fn, int dev);
// Enables (enable != 0) or disables access from ctx to peer's memory:
// cuDeviceCanAccessPeer first when enabling; *done says whether this call
// changed it (not: already so, or the GPUs cannot reach each other).
int lgo_cu_peer(const lgo_cu_fns *f, uintptr_t can_access, uintptr_t change, uintptr_t ctx, int dev,
                uintptr_t peer_ctx, int peer_dev, int enable, int *done);

int lgo_cu_alloc(const lgo_cu_fns *f, uintptr_t ctx, int kind, uintptr_t *out, size_t size);
int lgo_cu_free(const lgo_cu_fns *f, uintptr_t ctx, int host, uintptr_t p);
// The runtime pool's slabs (plugin.FastAllocDevice): an ol_fastalloc whose
// alloc and free are lgo_cu_alloc and lgo_cu_free with ctx current
// (OL_ALLOC_TYPE_* numbers the kinds as lgo_cu_alloc does); NULL when out
// of memory. lgo_cu_fastalloc_free releases it (Deinit).
ol_fastalloc *lgo_cu_fastalloc_new(const lgo_cu_fns *f, uintptr_t ctx);
void lgo_cu_fastalloc_free(ol_fastalloc *a);
int lgo_cu_register(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t p, size_t size);
int lgo_cu_unregister(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t p);

int lgo_cu_stream_create(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t *out);
int lgo_cu_event_create(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t *out);
// op: 0 stream destroy, 1 stream sync, 2 stream query, 3 event destroy,
// 4 event query, 5 event sync
int lgo_cu_handle_op(const lgo_cu_fns *f, uintptr_t ctx, int op, uintptr_t h);
int lgo_cu_event_record(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t ev, uintptr_t stream);
int lgo_cu_stream_wait(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t stream, uintptr_t ev);

// dir: 0 host to device, 1 device to host, 2 device to device
// What lgo_cu_fast_copy needs of a queue: the plugin's part of its
// ol_fastq (fastq.State.Extra).
typedef struct {
  const lgo_cu_fns *f;
  uintptr_t ctx, stream;
} lgo_cu_fastq;
void lgo_cu_fast_init(lgo_cu_fastq *x, const lgo_cu_fns *f, uintptr_t ctx, uintptr_t stream);
// lgo_cu_fast_copy_fn is the queues' ol_fastq.copy: a copy the runtime
// submits from C, as Queue.copy does for one that does not overlap.
void *lgo_cu_fast_copy_fn(void);

// A kernel's C view (plugin.FastKernel): what lgo_cu_fast_launch checks
// and launches, as Queue.launch does.
typedef struct {
  uintptr_t fn;
  uint64_t param_bytes; // where the parameters end, when params_known
  uint32_t params_known, max_threads;
  uint32_t block_max[3], grid_max[3];
  uint64_t shared_limit; // dynamic shared memory without an attribute call
  // the last queue the program registered the kernel's launches on
  // (Program.queues); written with atomic stores
  uintptr_t last_q;
} lgo_cu_fastk;
// lgo_cu_fast_launch_fn is the queues' ol_fastq.launch.
void *lgo_cu_fast_launch_fn(void);

int lgo_cu_copy(const lgo_cu_fns *f, uintptr_t ctx, int dir, uintptr_t dst, uintptr_t src, size_t n, uintptr_t stream);
int lgo_cu_copy_peer(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t dst, uintptr_t dctx, uintptr_t src,
                     uintptr_t sctx, size_t n, uintptr_t stream);
// width 1, 2 or 4 bytes; n counts elements
int lgo_cu_memset(const lgo_cu_fns *f, uintptr_t ctx, int width, uintptr_t dst, uint32_t value, size_t n,
                  uintptr_t stream);
// Queues lgo_cu_host_trampoline(id) on the stream.
int lgo_cu_host_func(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t stream, uintptr_t id);

// Loads an image (PTX text NUL-terminated, cubin or fatbin) into a module;
// the JIT's error and info logs go to the two buffers.
int lgo_cu_module_load(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t *mod, const void *image, char *err_log,
                       size_t err_size, char *info_log, size_t info_size);
int lgo_cu_module_unload(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t mod);
int lgo_cu_module_get_function(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t *fn, uintptr_t mod, const char *name);
int lgo_cu_module_get_global(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t *ptr, size_t *size, uintptr_t mod,
                             const char *name);
int lgo_cu_func_attribute(const lgo_cu_fns *f, uintptr_t ctx, int *value, int attr, uintptr_t fn);
int lgo_cu_func_set_attribute(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t fn, int attr, int value);
int lgo_cu_occupancy(const lgo_cu_fns *f, uintptr_t ctx, int *min_grid, int *block, uintptr_t fn, size_t dyn_shared);
// Launches fn with the argument buffer as it is (CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE).
int lgo_cu_launch(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t fn, uint32_t gx, uint32_t gy, uint32_t gz,
                  uint32_t bx, uint32_t by, uint32_t bz, uint32_t shared, uintptr_t stream, const void *args,
                  size_t args_size);

// Launches fn cooperatively (cuLaunchCooperativeKernel). That entry point
// takes the arguments only as kernelParams, one pointer per parameter: they
// point into args at the offsets of params, nparams (offset, size) pairs
// the kernel read from cuFuncGetParamInfo once (nparams -1 without it: a
// kernel of <offload/kernel.h> has one parameter, the argument struct, at
// offset 0). CUDA_ERROR_INVALID_VALUE when a parameter lies past args_size.
int lgo_cu_launch_coop(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t fn, uint32_t gx, uint32_t gy, uint32_t gz,
                       uint32_t bx, uint32_t by, uint32_t bz, uint32_t shared, uintptr_t stream, const void *args,
                       size_t args_size, const uint64_t *params, int nparams);
// The blocks of block_size threads with dyn_shared bytes of dynamic shared
// memory that one multiprocessor holds at once.
int lgo_cu_active_blocks(const lgo_cu_fns *f, uintptr_t ctx, int *blocks, uintptr_t fn, int block_size,
                         size_t dyn_shared);

// CU_POINTER_ATTRIBUTE_MEMORY_TYPE and _DEVICE_ORDINAL of p: 0 and both
// set, or the driver's error (unknown memory).
int lgo_cu_pointer_info(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t p, unsigned *type, int *ordinal);
// CU_POINTER_ATTRIBUTE_MEMORY_TYPE of p (1 host, 2 device, ...), or 0
// when the driver does not know p (pageable memory) or the call fails.
unsigned lgo_cu_pointer_type(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t p);
// Parameter i of fn (cuFuncGetParamInfo): the driver's result.
int lgo_cu_param_info(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t fn, size_t i, size_t *off, size_t *size);

// A timing event (no CU_EVENT_DISABLE_TIMING).
int lgo_cu_event_create_timed(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t *out);
int lgo_cu_event_elapsed(const lgo_cu_fns *f, uintptr_t ctx, float *ms, uintptr_t start, uintptr_t end);
// Whether p is managed memory (CU_POINTER_ATTRIBUTE_IS_MANAGED); 0 also
// when the driver does not know p.
unsigned lgo_cu_is_managed(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t p);
// Prefetches [p, p+n) to device ordinal dev, or to the host (dev -1).
int lgo_cu_prefetch(const lgo_cu_fns *f, uintptr_t ctx, uintptr_t p, size_t n, int dev, uintptr_t stream);

// The host-function state of a library thread running one (see queue.go).
uintptr_t lgo_cu_running_queue(void);
uint64_t lgo_cu_running_mark(void);
// Runs host function fn(user) with the state set to (queue, mark), then puts it back.
void lgo_cu_run_host(uintptr_t queue, uint64_t mark, uintptr_t fn, uintptr_t user);

#endif
