/*
 * fake_cuda.c - a driver double for the CUDA plugin's tests.
 *
 * It exports the CUDA driver API entry points the plugin resolves, and all
 * those LLVM 22.1's CUDA plugin resolves (it refuses a driver that lacks
 * one), with the driver's C signatures, and answers them from made-up
 * devices. The Go tests build it with `cc -shared -fPIC` into a temporary
 * directory and point OFFLOAD_CUDA_LIBRARY at the result; the C suites and
 * the benchmark build it as libcuda.so (and libcuda.so.1) into a directory
 * on LD_LIBRARY_PATH, where LLVM's library finds it too.
 *
 * Fault injection, read with getenv when each call is made:
 *   FAKE_CUDA_DEVICES=<n>          devices cuDeviceGetCount reports (default 0)
 *   FAKE_CUDA_INIT_RESULT=<code>   what cuInit returns (default 0, CUDA_SUCCESS)
 *   FAKE_CUDA_COUNT_RESULT=<code>  what cuDeviceGetCount returns (default 0)
 *   FAKE_CUDA_VERSION=<n>          cuDriverGetVersion's value (default 12040)
 *   FAKE_CUDA_CC_MAJOR=<n>         every device's compute capability major
 *   FAKE_CUDA_MODULE_RESULT=<code> what cuModuleLoadDataEx returns
 *   FAKE_CUDA_ALLOC_RESULT=<code>  what cuMemAlloc returns (2: out of memory)
 *   FAKE_CUDA_RELEASE_RESULT=<code> what cuDevicePrimaryCtxRelease returns
 *   FAKE_CUDA_NO_PEER=1            no pair of GPUs can reach each other
 *   FAKE_CUDA_STREAM_BUSY=1        cuStreamQuery always answers NOT_READY
 *   FAKE_CUDA_HOLD_STREAMS=1       streams run their work only while somebody
 *                                  waits for it (bench/run.sh: what a
 *                                  submission costs, read once)
 *   FAKE_CUDA_FUNC_MAX_THREADS=<n> every function's MAX_THREADS_PER_BLOCK
 *                                  (default 1024); a bigger block is
 *                                  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
 *   FAKE_CUDA_ALLOC_US=<n>         each allocation (device, pinned host,
 *                                  managed) and each free of one sleeps n
 *                                  microseconds first, outside the lock (a
 *                                  real driver's cost; default 0)
 *   FAKE_CUDA_MEMORY_BYTES=<n>     device memory of each device: a
 *                                  cuMemAlloc that would take the live
 *                                  device bytes of its device past n is
 *                                  CUDA_ERROR_OUT_OF_MEMORY (default: the
 *                                  4 GiB of address space)
 *
 * A missing symbol cannot be simulated at run time (the dynamic symbol table
 * is fixed when the library is linked); the tests hide symbols at link time
 * with a version script instead (FAKE_CUDA_MISSING in the Go helper).
 *
 * Device i (0-based) has these properties:
 *   name "Fake CUDA GPU <i>", total memory (i+1) * 8 GiB,
 *   max threads per block 1024, block dims 1024/1024/64,
 *   grid dims 2147483647/65535/65535, 80 + i multiprocessors,
 *   clock 1530000 kHz, memory clock 877000 kHz, 48 KiB shared memory,
 *   UUID bytes 0xa0+i, 0x01, 0x02, ..., 0x0f, compute capability 8.0 for
 *   even i and 9.0 for odd i (sm_80, sm_90).
 *
 * fake_cuda_init_calls() returns how often cuInit was called, so tests can
 * check that the plugin initialises the driver only once.
 *
 * Beyond discovery it behaves like the driver where the plugin's
 * correctness depends on it:
 *   - primary contexts are reference counted; the current context is per
 *     thread, and every call that needs one fails with
 *     CUDA_ERROR_INVALID_CONTEXT on a thread without it;
 *   - device memory is address space the CPU cannot touch (reserved
 *     without access: a CPU read or write faults); its bytes live elsewhere
 *     and only the driver's copies and fills reach them; freed device
 *     memory stays inaccessible to them and to kernels for a while (a
 *     bounded quarantine), so work that runs on it after cuMemFree ends the
 *     process with SIGSEGV;
 *   - each stream runs its work in order on a thread of its own, so
 *     completion is asynchronous; host functions of all streams run one at
 *     a time on one callback thread, where every driver call fails with
 *     CUDA_ERROR_NOT_PERMITTED;
 *   - events capture a point of a stream when recorded; a wait captures it
 *     when submitted.
 *   - pageable host memory (not pinned, managed or registered) is staged:
 *     a host-to-device copy waits for the stream's earlier work and reads
 *     the source before it returns; a device-to-host copy returns when the
 *     data has arrived. Page-locked memory is read and written when the
 *     copy's turn on the stream comes.
 *   - context limits (cuCtxGetLimit/SetLimit) start at the driver's
 *     defaults; primary-context flags are kept per device, and the
 *     unversioned cuDevicePrimaryCtxSetFlags refuses an active context;
 *   - stream-ordered frees (cuMemFreeAsync) release memory when the stream
 *     reaches them; cuStreamAddCallback runs on the callback thread, as
 *     cuLaunchHostFunc;
 *   - cuModuleUnload ends its functions: a later call naming one is
 *     CUDA_ERROR_INVALID_HANDLE, and a launch of one still queued then
 *     aborts the process with a message (the driver would run code that is
 *     gone), so a backend that unloads too early fails its tests.
 * fake_cuda_live(kind) counts live objects ("ctxref", "alloc", "host",
 * "stream", "event", "register") for leak checks; "bytes" is the bytes of
 * live device allocations (as asked for, all devices).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>
#include <offload/kernel.h>

/* The host device's kernel runner runs the double's "modules": host shared
 * objects built from the kernel sources with <offload/kernel.h>. Hidden, so
 * that it never binds to the library's own copy. */
#pragma GCC visibility push(hidden)
#include "../../plugins/host/exec.c"
#pragma GCC visibility pop

typedef int CUresult;
typedef int CUdevice;
typedef struct {
  char bytes[16];
} CUuuid;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
  CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705,
  CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
  CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
  CUDA_ERROR_NOT_PERMITTED = 800,
  CUDA_ERROR_UNKNOWN = 999,
};

static int init_calls;
static int initialised;

static int env_int(const char *name, int fallback) {
  const char *v = getenv(name);
  if (v == NULL || *v == '\0')
    return fallback;
  return (int)strtol(v, NULL, 0);
}

static int num_devices(void) { return env_int("FAKE_CUDA_DEVICES", 0); }

static int valid_device(CUdevice dev) {
  return initialised && dev >= 0 && dev < num_devices();
}

int fake_cuda_init_calls(void) { return init_calls; }

CUresult cuInit(unsigned int flags) {
  init_calls++;
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r = env_int("FAKE_CUDA_INIT_RESULT", CUDA_SUCCESS);
  if (r == CUDA_SUCCESS)
    initialised = 1;
  return r;
}

CUresult cuDriverGetVersion(int *version) {
  if (version == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *version = env_int("FAKE_CUDA_VERSION", 12040);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  if (count == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = env_int("FAKE_CUDA_COUNT_RESULT", CUDA_SUCCESS);
  if (r != CUDA_SUCCESS)
    return r;
  *count = num_devices();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
  if (dev == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (ordinal < 0 || ordinal >= num_devices())
    return CUDA_ERROR_INVALID_DEVICE;
  *dev = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  if (name == NULL || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev))
    return CUDA_ERROR_INVALID_DEVICE;
  snprintf(name, (size_t)len, "Fake CUDA GPU %d", dev);
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  if (bytes == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev))
    return CUDA_ERROR_INVALID_DEVICE;
  *bytes = (size_t)(dev + 1) * ((size_t)8 << 30);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, int attr, CUdevice dev) {
  if (value == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev))
    return CUDA_ERROR_INVALID_DEVICE;
  switch (attr) {
  case 1: *value = 1024; break;        /* MAX_THREADS_PER_BLOCK */
  case 2: *value = 1024; break;        /* MAX_BLOCK_DIM_X */
  case 3: *value = 1024; break;        /* MAX_BLOCK_DIM_Y */
  case 4: *value = 64; break;          /* MAX_BLOCK_DIM_Z */
  case 5: *value = 2147483647; break;  /* MAX_GRID_DIM_X */
  case 6: *value = 65535; break;       /* MAX_GRID_DIM_Y */
  case 7: *value = 65535; break;       /* MAX_GRID_DIM_Z */
  case 8: *value = 49152; break;       /* MAX_SHARED_MEMORY_PER_BLOCK */
  case 13: *value = 1530000; break;    /* CLOCK_RATE, kHz */
  case 16: *value = 80 + dev; break;   /* MULTIPROCESSOR_COUNT */
  case 36: *value = 877000; break;     /* MEMORY_CLOCK_RATE, kHz */
  case 75: *value = env_int("FAKE_CUDA_CC_MAJOR", dev % 2 ? 9 : 8); break; /* COMPUTE_CAPABILITY_MAJOR */
  case 76: *value = 0; break;          /* COMPUTE_CAPABILITY_MINOR */
  case 97: *value = 98304; break;      /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
  /* the rest of what a runtime asks a device of this kind (an A100-like
   * sm_80 part), so that a client that queries them all finds them */
  case 9: *value = 65536; break;       /* TOTAL_CONSTANT_MEMORY */
  case 10: *value = 32; break;         /* WARP_SIZE */
  case 11: *value = 2147483647; break; /* MAX_PITCH */
  case 12: *value = 65536; break;      /* MAX_REGISTERS_PER_BLOCK */
  case 14: *value = 512; break;        /* TEXTURE_ALIGNMENT */
  case 15: *value = 1; break;          /* GPU_OVERLAP */
  case 17: *value = 0; break;          /* KERNEL_EXEC_TIMEOUT */
  case 18: *value = 0; break;          /* INTEGRATED */
  case 19: *value = 1; break;          /* CAN_MAP_HOST_MEMORY */
  case 20: *value = 0; break;          /* COMPUTE_MODE: DEFAULT */
  case 31: *value = 1; break;          /* CONCURRENT_KERNELS */
  case 32: *value = 0; break;          /* ECC_ENABLED */
  case 33: *value = 0x10 + dev; break; /* PCI_BUS_ID */
  case 34: *value = 0; break;          /* PCI_DEVICE_ID */
  case 37: *value = 5120; break;       /* GLOBAL_MEMORY_BUS_WIDTH, bits */
  case 38: *value = 41943040; break;   /* L2_CACHE_SIZE */
  case 39: *value = 2048; break;       /* MAX_THREADS_PER_MULTIPROCESSOR */
  case 40: *value = 2; break;          /* ASYNC_ENGINE_COUNT */
  case 41: *value = 1; break;          /* UNIFIED_ADDRESSING */
  case 50: *value = 0; break;          /* PCI_DOMAIN_ID */
  case 81: *value = 167936; break;     /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
  case 82: *value = 65536; break;      /* MAX_REGISTERS_PER_MULTIPROCESSOR */
  case 83: *value = 1; break;          /* MANAGED_MEMORY */
  case 84: *value = 0; break;          /* MULTI_GPU_BOARD */
  case 89: *value = 1; break;          /* CONCURRENT_MANAGED_ACCESS */
  case 90: *value = 1; break;          /* COMPUTE_PREEMPTION_SUPPORTED */
  case 95: *value = 1; break;          /* COOPERATIVE_LAUNCH */
  case 106: *value = 32; break;        /* MAX_BLOCKS_PER_MULTIPROCESSOR */
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
  if (uuid == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev))
    return CUDA_ERROR_INVALID_DEVICE;
  for (int i = 0; i < 16; i++)
    uuid->bytes[i] = (char)i;
  uuid->bytes[0] = (char)(0xa0 + dev);
  return CUDA_SUCCESS;
}

static const char *error_name(CUresult r) {
  switch (r) {
  case CUDA_SUCCESS: return "CUDA_SUCCESS";
  case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
  case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
  case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
  case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
  case CUDA_ERROR_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
  case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
  case CUDA_ERROR_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
  case CUDA_ERROR_NOT_READY: return "CUDA_ERROR_NOT_READY";
  case CUDA_ERROR_NOT_PERMITTED: return "CUDA_ERROR_NOT_PERMITTED";
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
  case CUDA_ERROR_UNKNOWN: return "CUDA_ERROR_UNKNOWN";
  case CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: return "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED";
  case CUDA_ERROR_PEER_ACCESS_NOT_ENABLED: return "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED";
  case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED: return "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED";
  /* the other codes the double returns */
  case 200: return "CUDA_ERROR_INVALID_IMAGE";
  case 218: return "CUDA_ERROR_INVALID_PTX";
  case 500: return "CUDA_ERROR_NOT_FOUND";
  case 708: return "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE";
  case 720: return "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE";
  }
  return NULL;
}

CUresult cuGetErrorName(CUresult r, const char **name) {
  if (name == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *name = error_name(r);
  return *name ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult r, const char **text) {
  if (text == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  switch (r) {
  case CUDA_ERROR_NO_DEVICE: *text = "no CUDA-capable device is detected"; break;
  case CUDA_ERROR_UNKNOWN: *text = "unknown error"; break;
  default: *text = error_name(r); break;
  }
  return *text ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------------------------ */
/* Contexts, memory, streams, events                                    */

#define MAX_DEVICES 8
#define ARENA ((size_t)1 << 32) /* device address space per device */
#define MAX_BLOCKS 65536

typedef uintptr_t CUdeviceptr;
typedef struct fake_ctx *CUcontext;
typedef struct fake_stream *CUstream;
typedef struct fake_event *CUevent;
typedef void (*CUhostFn)(void *);

struct block {
  size_t off, size; /* size: whole pages, the block's room */
  size_t used;      /* the bytes of the live allocation in it (its range) */
  int live;
  int quarantined; /* freed, not yet reusable (see cuMemFree_v2) */
};

struct fake_ctx {
  int dev, refs;
  char *addr;    /* reserved, no access: the device addresses */
  char *backing; /* their bytes */
  size_t next;
  struct block blocks[MAX_BLOCKS];
  int nblocks;
  size_t live_bytes; /* of the live allocations, as asked for */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct fake_ctx ctxs[MAX_DEVICES];
static __thread CUcontext current;
static __thread int in_callback;
static long live_allocs, live_host, live_streams, live_events, live_registered, live_modules;

static int peer_enabled[MAX_DEVICES][MAX_DEVICES];
long fake_cuda_live(const char *kind) {
  long n = -1;
  pthread_mutex_lock(&mu);
  if (!strcmp(kind, "ctxref")) {
    n = 0;
    for (int i = 0; i < MAX_DEVICES; i++)
      n += ctxs[i].refs;
  } else if (!strcmp(kind, "alloc")) n = live_allocs;
  else if (!strcmp(kind, "host")) n = live_host;
  else if (!strcmp(kind, "stream")) n = live_streams;
  else if (!strcmp(kind, "event")) n = live_events;
  else if (!strcmp(kind, "register")) n = live_registered;
  else if (!strcmp(kind, "module")) n = live_modules;
  else if (!strcmp(kind, "bytes")) {
    n = 0;
    for (int i = 0; i < MAX_DEVICES; i++)
      n += (long)ctxs[i].live_bytes;
  } else if (!strcmp(kind, "peer")) {
    n = 0;
    for (int i = 0; i < MAX_DEVICES; i++)
      for (int j = 0; j < MAX_DEVICES; j++)
        n += peer_enabled[i][j];
  }
  pthread_mutex_unlock(&mu);
  return n;
}

/* Every call below starts with this: no driver call from a host function,
 * and a context must be current on the calling thread. */
#define NEED_CTX()                                                          \
  do {                                                                      \
    if (in_callback) return CUDA_ERROR_NOT_PERMITTED;                       \
    if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;                    \
    if (current == NULL || current->refs == 0) return CUDA_ERROR_INVALID_CONTEXT; \
  } while (0)

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
  if (in_callback) return CUDA_ERROR_NOT_PERMITTED;
  if (ctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev) || dev >= MAX_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
  /* FAKE_CUDA_CTX_US: a real driver takes tens to hundreds of ms to make a
   * context; this makes each retain of an inactive one take that long */
  int delay_us = env_int("FAKE_CUDA_CTX_US", 0);
  pthread_mutex_lock(&mu);
  struct fake_ctx *c = &ctxs[dev];
  if (delay_us > 0 && c->refs == 0) {
    pthread_mutex_unlock(&mu);
    usleep((useconds_t)delay_us);
    pthread_mutex_lock(&mu);
  }
  if (c->addr == NULL) {
    /* one file, mapped twice: at the device addresses without access (a
     * CPU dereference faults; kernels of the double get access while they
     * run), and elsewhere for the driver's own copies and fills */
    int fd = memfd_create("fake-cuda-device-memory", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)ARENA) != 0) {
      pthread_mutex_unlock(&mu);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    c->dev = dev;
    c->addr = mmap(NULL, ARENA, PROT_NONE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    c->backing = mmap(NULL, ARENA, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    close(fd);
    if (c->addr == MAP_FAILED || c->backing == MAP_FAILED) {
      c->addr = NULL;
      pthread_mutex_unlock(&mu);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  c->refs++;
  *ctx = c;
  pthread_mutex_unlock(&mu);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  if (in_callback) return CUDA_ERROR_NOT_PERMITTED;
  if (!valid_device(dev) || dev >= MAX_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&mu);
  CUresult r = ctxs[dev].refs > 0 ? (ctxs[dev].refs--, CUDA_SUCCESS) : CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_unlock(&mu);
  /* an injected failure still drops the reference (nothing leaks) */
  return r == CUDA_SUCCESS ? env_int("FAKE_CUDA_RELEASE_RESULT", CUDA_SUCCESS) : r;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (in_callback) return CUDA_ERROR_NOT_PERMITTED;
  current = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *ctx) {
  if (in_callback) return CUDA_ERROR_NOT_PERMITTED;
  if (ctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  *ctx = current;
  return CUDA_SUCCESS;
}

/* device memory: translate an address to its bytes, or NULL when
 * [p, p+n) is not inside one live allocation of a device */
static char *device_bytes_locked(CUdeviceptr p, size_t n) {
  for (int d = 0; d < MAX_DEVICES; d++) {
    struct fake_ctx *c = &ctxs[d];
    if (c->addr == NULL || p < (uintptr_t)c->addr || p >= (uintptr_t)c->addr + ARENA)
      continue;
    size_t off = p - (uintptr_t)c->addr;
    for (int i = 0; i < c->nblocks; i++) {
      struct block *b = &c->blocks[i];
      if (b->live && off >= b->off && off - b->off <= b->used && n <= b->used - (off - b->off))
        return c->backing + off;
    }
    return NULL;
  }
  return NULL;
}

static char *device_bytes(CUdeviceptr p, size_t n) {
  pthread_mutex_lock(&mu);
  char *b = device_bytes_locked(p, n);
  pthread_mutex_unlock(&mu);
  return b;
}

static int is_device_address(uintptr_t p) {
  for (int d = 0; d < MAX_DEVICES; d++)
    if (ctxs[d].addr != NULL && p >= (uintptr_t)ctxs[d].addr && p < (uintptr_t)ctxs[d].addr + ARENA)
      return 1;
  return 0;
}

/* FAKE_CUDA_ALLOC_US: what a driver allocation or free costs */
static void alloc_delay(void) {
  int us = env_int("FAKE_CUDA_ALLOC_US", 0);
  if (us > 0) {
    struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
  }
}

CUresult cuMemAlloc_v2(CUdeviceptr *out, size_t size) {
  NEED_CTX();
  if (out == NULL || size == 0) return CUDA_ERROR_INVALID_VALUE;
  CUresult forced = env_int("FAKE_CUDA_ALLOC_RESULT", CUDA_SUCCESS);
  if (forced != CUDA_SUCCESS) return forced;
  alloc_delay();
  /* whole pages: a freed block's pages are made inaccessible */
  size_t rounded = (size + 4095) & ~(size_t)4095;
  const char *cap = getenv("FAKE_CUDA_MEMORY_BYTES");
  size_t capacity = cap && *cap ? (size_t)strtoull(cap, NULL, 0) : ARENA;
  pthread_mutex_lock(&mu);
  struct fake_ctx *c = current;
  if (size > capacity || c->live_bytes > capacity - size) {
    pthread_mutex_unlock(&mu);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  struct block *b = NULL;
  for (int i = 0; i < c->nblocks && b == NULL; i++)
    if (!c->blocks[i].live && !c->blocks[i].quarantined && c->blocks[i].size >= rounded) b = &c->blocks[i];
  if (b == NULL) {
    if (c->nblocks == MAX_BLOCKS || c->next + rounded > ARENA) {
      pthread_mutex_unlock(&mu);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    b = &c->blocks[c->nblocks++];
    b->off = c->next;
    b->size = rounded;
    c->next += rounded;
  }
  b->live = 1;
  b->used = size;
  c->live_bytes += size;
  live_allocs++;
  *out = (uintptr_t)c->addr + b->off;
  pthread_mutex_unlock(&mu);
  return CUDA_SUCCESS;
}

/* cuMemFree_v2 quarantines freed device memory (quarantine.h). mu guards it. */
#define QUARANTINE_ARENA(d) (&ctxs[d])
#include "quarantine.h"

/* the kinds of host memory the driver knows (struct host_alloc, below) */
enum host_kind { HOST_PINNED, HOST_MANAGED, HOST_REGISTERED };
static CUresult host_free(void *p, enum host_kind kind);

CUresult cuMemFree_v2(CUdeviceptr p) {
  NEED_CTX();
  alloc_delay();
  if (!is_device_address(p)) return host_free((void *)p, HOST_MANAGED);
  pthread_mutex_lock(&mu);
  for (int d = 0; d < MAX_DEVICES; d++) {
    struct fake_ctx *c = &ctxs[d];
    for (int i = 0; c->addr && i < c->nblocks; i++)
      if (c->blocks[i].live && (uintptr_t)c->addr + c->blocks[i].off == p) {
        c->blocks[i].live = 0;
        c->live_bytes -= c->blocks[i].used;
        enter_quarantine(d, i);
        live_allocs--;
        pthread_mutex_unlock(&mu);
        return CUDA_SUCCESS;
      }
  }
  pthread_mutex_unlock(&mu);
  return CUDA_ERROR_INVALID_VALUE;
}

/* Host memory the driver knows: pinned and managed allocations (managed
 * memory is CPU-accessible in the double, as on the driver), whose bytes
 * the double owns, and registered (page-locked) ranges of the caller's
 * (enum host_kind, above). */
struct host_alloc {
  void *p;
  size_t size;
  enum host_kind kind;
  struct host_alloc *next;
};
static struct host_alloc *host_allocs;

/* mu held: the live count of a kind */
static long *host_live(enum host_kind kind) { return kind == HOST_REGISTERED ? &live_registered : &live_host; }

/* Whether [a, a+n) lies in H's range. */
static int contains(const struct host_alloc *h, uintptr_t a, size_t n) {
  uintptr_t lo = (uintptr_t)h->p;
  return a >= lo && a - lo <= h->size && n <= h->size - (a - lo);
}

static CUresult host_add(void *p, size_t size, enum host_kind kind) {
  struct host_alloc *h = malloc(sizeof *h);
  if (h == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  h->p = p;
  h->size = size;
  h->kind = kind;
  pthread_mutex_lock(&mu);
  h->next = host_allocs;
  host_allocs = h;
  (*host_live(kind))++;
  pthread_mutex_unlock(&mu);
  return CUDA_SUCCESS;
}

/* Unlinks and yields the entry of KIND starting at P, or NULL. */
static struct host_alloc *host_take(void *p, enum host_kind kind) {
  struct host_alloc *dead = NULL;
  pthread_mutex_lock(&mu);
  for (struct host_alloc **h = &host_allocs; *h; h = &(*h)->next)
    if ((*h)->p == p && (*h)->kind == kind) {
      dead = *h;
      *h = dead->next;
      (*host_live(kind))--;
      break;
    }
  pthread_mutex_unlock(&mu);
  return dead;
}

static CUresult host_alloc(void **out, size_t size, enum host_kind kind) {
  if (out == NULL || size == 0) return CUDA_ERROR_INVALID_VALUE;
  void *p;
  if (posix_memalign(&p, 4096, size) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = host_add(p, size, kind);
  if (r != CUDA_SUCCESS) {
    free(p);
    return r;
  }
  *out = p;
  return CUDA_SUCCESS;
}

static CUresult host_free(void *p, enum host_kind kind) {
  struct host_alloc *dead = host_take(p, kind);
  if (dead == NULL) return CUDA_ERROR_INVALID_VALUE;
  free(dead->p);
  free(dead);
  return CUDA_SUCCESS;
}

CUresult cuMemAllocHost_v2(void **out, size_t size) {
  NEED_CTX();
  alloc_delay();
  return host_alloc(out, size, HOST_PINNED);
}

CUresult cuMemFreeHost(void *p) {
  NEED_CTX();
  alloc_delay();
  return host_free(p, HOST_PINNED);
}

CUresult cuMemAllocManaged(CUdeviceptr *out, size_t size, unsigned int flags) {
  NEED_CTX();
  if (flags != 1 && flags != 2) return CUDA_ERROR_INVALID_VALUE;
  alloc_delay();
  return host_alloc((void **)out, size, HOST_MANAGED);
}

CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned int flags) {
  NEED_CTX();
  (void)flags;
  if (p == NULL || size == 0 || is_device_address((uintptr_t)p)) return CUDA_ERROR_INVALID_VALUE;
  /* memory the driver has page-locked already (pinned or managed
   * allocations, registered ranges) cannot be registered (again) */
  int known = 0;
  pthread_mutex_lock(&mu);
  for (struct host_alloc *h = host_allocs; h && !known; h = h->next)
    known = (uintptr_t)p < (uintptr_t)h->p + h->size && (uintptr_t)h->p < (uintptr_t)p + size;
  pthread_mutex_unlock(&mu);
  if (known) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  return host_add(p, size, HOST_REGISTERED);
}

CUresult cuMemHostUnregister(void *p) {
  NEED_CTX();
  struct host_alloc *dead = host_take(p, HOST_REGISTERED);
  if (dead == NULL) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  free(dead);
  return CUDA_SUCCESS;
}

/* Whether [p, p+n) lies in page-locked memory the driver can reach without
 * staging: pinned and managed allocations and registered ranges. Anything
 * else is pageable. */
static int page_locked(const void *p, size_t n) {
  int found = 0;
  pthread_mutex_lock(&mu);
  for (struct host_alloc *h = host_allocs; h && !found; h = h->next)
    found = contains(h, (uintptr_t)p, n);
  pthread_mutex_unlock(&mu);
  return found;
}

/* mu held: the device whose loaded module holds [p, p+n) (its globals,
 * device memory on the driver), or -1 */
static int module_memory_locked(uintptr_t p, size_t n);

/* Whether the driver can write [p, p+n) with a memset or a copy: device
 * memory (allocations, module globals) and page-locked host memory, not
 * pageable memory. */
static int driver_memory(uintptr_t p, size_t n) {
  if (is_device_address(p) || page_locked((const void *)p, n)) return 1;
  pthread_mutex_lock(&mu);
  int dev = module_memory_locked(p, n);
  pthread_mutex_unlock(&mu);
  return dev >= 0;
}

/* ---- streams: a thread each, running ops in order ---- */

enum op_kind { OP_COPY, OP_SET, OP_HOST, OP_WAIT, OP_LAUNCH, OP_FREE, OP_STAMP, OP_PREFETCH };
struct fake_function;
struct stamp;
struct op {
  enum op_kind kind;
  char *dst;
  const char *src;
  size_t n, elem;
  uint32_t value;
  CUhostFn fn;
  void *user;
  CUstream wait_stream;
  unsigned long wait_mark;
  struct fake_function *func;
  uint32_t grid[3], block[3], shared;
  int coop; /* a cooperative launch: every block runs at once */
  void *owned; /* a staging buffer the op frees when it has run */
  struct stamp *stamp; /* OP_STAMP: where the time the stream got there goes */
  struct op *next;
};
static void run_launch(CUstream s, struct op *o);
static void run_free(struct op *o);

struct fake_stream {
  pthread_t thread;
  ol_fiber_pool *fibers; /* for kernels with barriers, used by the stream's thread */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct op *head, *tail;
  unsigned long submitted, completed;
  int quit;
  int waiters; /* threads waiting for the stream's progress (hold mode) */
};

/* FAKE_CUDA_HOLD_STREAMS=1 (a benchmark's mode, bench/run.sh): a stream's
 * thread runs its operations only while somebody waits for them (a sync,
 * an event sync, a wait of another stream), as a GPU whose engine starts
 * at the sync. What a submission costs is then the caller's own work,
 * without the stream thread competing for the CPU and the stream's lock. */
static int hold_streams(void) {
  static int v = -1;
  if (v < 0) v = env_int("FAKE_CUDA_HOLD_STREAMS", 0) != 0;
  return v;
}

/* WAIT_FOR(s, cond) waits (s->mu held) until cond holds, counted as a
 * waiter of s so that a held stream runs. */
#define WAIT_FOR(s, cond)                                                      \
  do {                                                                         \
    (s)->waiters++;                                                            \
    if (hold_streams())                                                        \
      pthread_cond_broadcast(&(s)->cv);                                        \
    while (!(cond))                                                            \
      pthread_cond_wait(&(s)->cv, &(s)->mu);                                   \
    (s)->waiters--;                                                            \
  } while (0)

struct fake_event {
  CUstream stream;
  unsigned long mark;
  unsigned flags;     /* CU_EVENT_DISABLE_TIMING (2): no timestamp */
  struct stamp *stamp; /* a timing event's latest record */
};

/* The time a stream reached a timing event's record, taken by an op of
 * the stream (the driver's timestamp is the GPU's, at that point, not the
 * time of cuEventRecord). Shared by the event and the op until both let
 * go; refs under ev_mu. */
struct stamp {
  int refs;
  int done;
  long long ns;
};

/* An event's record (stream and mark) is read and written whole under
 * ev_mu: a wait or query captures one record, never half of a new one,
 * as with the driver. */
static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;

static struct fake_event ev_capture(CUevent e) {
  pthread_mutex_lock(&ev_mu);
  struct fake_event r = *e;
  pthread_mutex_unlock(&ev_mu);
  return r;
}

/* Host functions of every stream run on one callback thread, one at a
 * time, as the driver may run them: a stream waits until its callback has
 * returned. A callback that waits for another stream's callback waits
 * forever, here as there. */
static pthread_mutex_t cb_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cb_cv = PTHREAD_COND_INITIALIZER;
static CUhostFn cb_fn;
static void *cb_user;
static unsigned long cb_posted, cb_done;
static int cb_started;

static void *callback_main(void *arg) {
  (void)arg;
  in_callback = 1;
  pthread_mutex_lock(&cb_mu);
  for (;;) {
    while (cb_done == cb_posted)
      pthread_cond_wait(&cb_cv, &cb_mu);
    CUhostFn fn = cb_fn;
    void *user = cb_user;
    pthread_mutex_unlock(&cb_mu);
    fn(user);
    pthread_mutex_lock(&cb_mu);
    cb_done++;
    pthread_cond_broadcast(&cb_cv);
  }
  return NULL;
}

static void run_callback(CUhostFn fn, void *user) {
  pthread_mutex_lock(&cb_mu);
  if (!cb_started) {
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_create(&t, &a, callback_main, NULL);
    pthread_attr_destroy(&a);
    cb_started = 1;
  }
  /* one callback at a time: wait for the thread to be free, post, wait */
  while (cb_done != cb_posted)
    pthread_cond_wait(&cb_cv, &cb_mu);
  cb_fn = fn;
  cb_user = user;
  unsigned long mine = ++cb_posted;
  pthread_cond_broadcast(&cb_cv);
  while (cb_done < mine)
    pthread_cond_wait(&cb_cv, &cb_mu);
  pthread_mutex_unlock(&cb_mu);
}

/* The driver's copies are not memmove: a copy whose ranges overlap reads
 * bytes it has overwritten already (on an H200 a 50-byte copy to 10 bytes
 * above its source got 28 bytes wrong). The double copies such a copy
 * front to back in 8-byte pieces, as a DMA engine may. */
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

static void stamp_now(struct stamp *t);
static void run_prefetch(struct op *o);

static void run_op(CUstream s, struct op *o) {
  switch (o->kind) {
  case OP_LAUNCH:
    run_launch(s, o);
    break;
  case OP_COPY:
    dma_copy(o->dst, o->src, o->n);
    break;
  case OP_SET:
    for (size_t i = 0; i < o->n; i++) {
      if (o->elem == 1) ((uint8_t *)o->dst)[i] = (uint8_t)o->value;
      else if (o->elem == 2) memcpy(o->dst + 2 * i, &(uint16_t){(uint16_t)o->value}, 2);
      else memcpy(o->dst + 4 * i, &o->value, 4);
    }
    break;
  case OP_HOST:
    run_callback(o->fn, o->user);
    break;
  case OP_FREE:
    run_free(o);
    break;
  case OP_STAMP:
    stamp_now(o->stamp);
    break;
  case OP_PREFETCH:
    run_prefetch(o);
    break;
  case OP_WAIT:
    pthread_mutex_lock(&o->wait_stream->mu);
    WAIT_FOR(o->wait_stream, o->wait_stream->completed >= o->wait_mark);
    pthread_mutex_unlock(&o->wait_stream->mu);
    break;
  }
}

static void *stream_main(void *arg) {
  CUstream s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while ((s->head == NULL || (hold_streams() && s->waiters == 0)) && !s->quit)
      pthread_cond_wait(&s->cv, &s->mu);
    if (s->head == NULL)
      break;
    struct op *o = s->head;
    pthread_mutex_unlock(&s->mu);
    run_op(s, o);
    free(o->owned);
    pthread_mutex_lock(&s->mu);
    s->head = o->next;
    if (s->head == NULL)
      s->tail = NULL;
    s->completed++;
    free(o);
    pthread_cond_broadcast(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
  if (s->fibers) ol_fiber_pool_free(s->fibers);
  return NULL;
}

/* push_mark puts an op on the stream and gives its place (the count of
 * completed ops once it has run). */
static CUresult push_mark(CUstream s, struct op o, unsigned long *mark) {
  if (s == NULL) return CUDA_ERROR_INVALID_HANDLE; /* the double has no legacy stream */
  struct op *p = malloc(sizeof *p);
  if (p == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = o;
  p->next = NULL;
  pthread_mutex_lock(&s->mu);
  if (s->tail) s->tail->next = p;
  else s->head = p;
  s->tail = p;
  *mark = ++s->submitted;
  if (!hold_streams() || s->waiters > 0) /* a held stream has nothing to run */
    pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  return CUDA_SUCCESS;
}

static CUresult push(CUstream s, struct op o) {
  unsigned long mark;
  return push_mark(s, o, &mark);
}

/* wait_mark blocks until the stream has run its ops up to mark. */
static void wait_mark(CUstream s, unsigned long mark) {
  pthread_mutex_lock(&s->mu);
  WAIT_FOR(s, s->completed >= mark);
  pthread_mutex_unlock(&s->mu);
}

CUresult cuStreamCreate(CUstream *out, unsigned int flags) {
  NEED_CTX();
  (void)flags;
  if (out == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUstream s = calloc(1, sizeof *s);
  if (s == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  if (pthread_create(&s->thread, NULL, stream_main, s) != 0) {
    free(s);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_lock(&mu);
  live_streams++;
  pthread_mutex_unlock(&mu);
  *out = s;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream s) {
  NEED_CTX();
  if (s == NULL) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&s->mu);
  WAIT_FOR(s, s->completed >= s->submitted);
  pthread_mutex_unlock(&s->mu);
  return CUDA_SUCCESS;
}

CUresult cuStreamQuery(CUstream s) {
  NEED_CTX();
  if (s == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (env_int("FAKE_CUDA_STREAM_BUSY", 0)) return CUDA_ERROR_NOT_READY; /* a stream that never says it is idle */
  pthread_mutex_lock(&s->mu);
  CUresult r = s->completed < s->submitted ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
  pthread_mutex_unlock(&s->mu);
  return r;
}

/* Like the driver, destroying a stream with work lets the work finish. */
CUresult cuStreamDestroy_v2(CUstream s) {
  NEED_CTX();
  if (s == NULL) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&s->mu);
  s->quit = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  /* the struct stays: events recorded on the stream stay valid */
  pthread_mutex_lock(&mu);
  live_streams--;
  pthread_mutex_unlock(&mu);
  return CUDA_SUCCESS;
}

static CUresult copy(CUstream s, char *dst, const char *src, size_t n) {
  return push(s, (struct op){.kind = OP_COPY, .dst = dst, .src = src, .n = n});
}

/* device memory or CPU-visible memory (managed, pinned): what a device
 * address may be under unified addressing */
static char *any_bytes(uintptr_t p, size_t n) {
  if (is_device_address(p)) return device_bytes(p, n);
  return (char *)p;
}

/* Pageable host memory is what the driver must stage, and it does so as
 * the real driver may: a host-to-device copy waits for the stream's earlier
 * work, then reads the source into a staging buffer before it returns (the
 * caller may reuse the source at once; the device side of the copy still
 * runs in stream order); a device-to-host copy returns only when the data
 * is in the destination. Page-locked memory is read and written by the
 * stream when the copy's turn comes, as the real driver's DMA does. */
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
  NEED_CTX();
  char *d = any_bytes(dst, n);
  if (d == NULL || dst == 0 || src == NULL || is_device_address((uintptr_t)src)) return CUDA_ERROR_INVALID_VALUE;
  /* a pageable destination is no device memory: refused, as on the driver */
  if (!driver_memory(dst, n)) return CUDA_ERROR_INVALID_VALUE;
  if (s == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (page_locked(src, n)) return copy(s, d, src, n);
  pthread_mutex_lock(&s->mu);
  unsigned long before = s->submitted;
  pthread_mutex_unlock(&s->mu);
  wait_mark(s, before);
  char *stage = malloc(n);
  if (stage == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  memcpy(stage, src, n);
  CUresult r = push(s, (struct op){.kind = OP_COPY, .dst = d, .src = stage, .n = n, .owned = stage});
  if (r != CUDA_SUCCESS) free(stage);
  return r;
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
  NEED_CTX();
  const char *sp = any_bytes(src, n);
  if (sp == NULL || dst == NULL || is_device_address((uintptr_t)dst)) return CUDA_ERROR_INVALID_VALUE;
  if (s == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (page_locked(dst, n)) return copy(s, dst, sp, n);
  unsigned long mark;
  CUresult r = push_mark(s, (struct op){.kind = OP_COPY, .dst = dst, .src = sp, .n = n}, &mark);
  if (r == CUDA_SUCCESS) wait_mark(s, mark);
  return r;
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  NEED_CTX();
  char *d = any_bytes(dst, n);
  const char *sp = any_bytes(src, n);
  if (d == NULL || sp == NULL) return CUDA_ERROR_INVALID_VALUE;
  return copy(s, d, sp, n);
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream s) {
  NEED_CTX();
  if (dctx == NULL || sctx == NULL || dctx->refs == 0 || sctx->refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  return cuMemcpyDtoDAsync_v2(dst, src, n, s);
}

/* The driver's memsets reach device memory and the host memory it knows
 * (pinned, managed, registered); pageable memory is CUDA_ERROR_INVALID_VALUE. */
static CUresult set(CUstream s, CUdeviceptr dst, uint32_t v, size_t n, size_t elem) {
  char *d = any_bytes(dst, n * elem);
  if (d == NULL || (dst % elem) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!driver_memory(dst, n * elem)) return CUDA_ERROR_INVALID_VALUE;
  return push(s, (struct op){.kind = OP_SET, .dst = d, .n = n, .elem = elem, .value = v});
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
  NEED_CTX();
  return set(s, dst, v, n, 1);
}
CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short v, size_t n, CUstream s) {
  NEED_CTX();
  return set(s, dst, v, n, 2);
}
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, CUstream s) {
  NEED_CTX();
  return set(s, dst, v, n, 4);
}

CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *user) {
  NEED_CTX();
  if (fn == NULL) return CUDA_ERROR_INVALID_VALUE;
  return push(s, (struct op){.kind = OP_HOST, .fn = fn, .user = user});
}

CUresult cuEventCreate(CUevent *out, unsigned int flags) {
  NEED_CTX();
  /* DEFAULT, BLOCKING_SYNC (1), DISABLE_TIMING (2), INTERPROCESS (4) */
  if (out == NULL || (flags & ~7u) != 0) return CUDA_ERROR_INVALID_VALUE;
  *out = calloc(1, sizeof **out);
  if (*out == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  (*out)->flags = flags;
  pthread_mutex_lock(&mu);
  live_events++;
  pthread_mutex_unlock(&mu);
  return CUDA_SUCCESS;
}

static void stamp_drop_locked(struct stamp *t) {
  if (t != NULL && --t->refs == 0) free(t);
}

static void stamp_now(struct stamp *t) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  pthread_mutex_lock(&ev_mu);
  t->ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
  t->done = 1;
  stamp_drop_locked(t);
  pthread_mutex_unlock(&ev_mu);
}

CUresult cuEventRecord(CUevent e, CUstream s) {
  NEED_CTX();
  if (e == NULL || s == NULL) return CUDA_ERROR_INVALID_HANDLE;
  unsigned long mark;
  struct stamp *t = NULL;
  if (!(e->flags & 2)) {
    /* a timing event: an op of the stream takes the time when the
     * stream gets there; the event completes with it */
    t = calloc(1, sizeof *t);
    if (t == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    t->refs = 2;
    CUresult r = push_mark(s, (struct op){.kind = OP_STAMP, .stamp = t}, &mark);
    if (r != CUDA_SUCCESS) {
      free(t);
      return r;
    }
  } else {
    pthread_mutex_lock(&s->mu);
    mark = s->submitted;
    pthread_mutex_unlock(&s->mu);
  }
  pthread_mutex_lock(&ev_mu);
  e->stream = s;
  e->mark = mark;
  if (e->flags & 2) {
    stamp_drop_locked(e->stamp);
    e->stamp = NULL;
  } else {
    stamp_drop_locked(e->stamp);
    e->stamp = t;
  }
  pthread_mutex_unlock(&ev_mu);
  return CUDA_SUCCESS;
}

/* As on the driver: an event created with DISABLE_TIMING, or one never
 * recorded, is CUDA_ERROR_INVALID_HANDLE; one the stream has not reached
 * yet CUDA_ERROR_NOT_READY. */
CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  NEED_CTX();
  if (ms == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (start == NULL || end == NULL) return CUDA_ERROR_INVALID_HANDLE;
  CUevent evs[2] = {start, end};
  long long ns[2];
  for (int i = 0; i < 2; i++) {
    struct fake_event r = ev_capture(evs[i]);
    if ((r.flags & 2) || r.stamp == NULL) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&r.stream->mu);
    int reached = r.stream->completed >= r.mark;
    pthread_mutex_unlock(&r.stream->mu);
    if (!reached) return CUDA_ERROR_NOT_READY;
    pthread_mutex_lock(&ev_mu);
    ns[i] = evs[i]->stamp ? evs[i]->stamp->ns : 0;
    pthread_mutex_unlock(&ev_mu);
  }
  *ms = (float)((double)(ns[1] - ns[0]) / 1e6);
  return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent e) {
  NEED_CTX();
  if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
  struct fake_event r0 = ev_capture(e);
  if (r0.stream == NULL) return CUDA_SUCCESS;
  pthread_mutex_lock(&r0.stream->mu);
  CUresult r = r0.stream->completed >= r0.mark ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  pthread_mutex_unlock(&r0.stream->mu);
  return r;
}

CUresult cuEventSynchronize(CUevent e) {
  NEED_CTX();
  if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
  struct fake_event r = ev_capture(e);
  if (r.stream == NULL) return CUDA_SUCCESS;
  pthread_mutex_lock(&r.stream->mu);
  WAIT_FOR(r.stream, r.stream->completed >= r.mark);
  pthread_mutex_unlock(&r.stream->mu);
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent e) {
  NEED_CTX();
  if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&ev_mu);
  stamp_drop_locked(e->stamp);
  pthread_mutex_unlock(&ev_mu);
  free(e);
  pthread_mutex_lock(&mu);
  live_events--;
  pthread_mutex_unlock(&mu);
  return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
  NEED_CTX();
  (void)flags;
  if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
  struct fake_event r = ev_capture(e); /* later records do not move this wait */
  if (r.stream == NULL || r.stream == s) return s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
  return push(s, (struct op){.kind = OP_WAIT, .wait_stream = r.stream, .wait_mark = r.mark});
}

/* fake_cuda_peek and fake_cuda_poke copy device memory out and in for
 * tests (the CPU cannot touch it directly). */
int fake_cuda_poke(CUdeviceptr dst, const void *src, size_t n) {
  pthread_mutex_lock(&mu);
  char *p = device_bytes_locked(dst, n);
  if (p) memcpy(p, src, n);
  pthread_mutex_unlock(&mu);
  return p ? 0 : -1;
}

int fake_cuda_peek(void *dst, CUdeviceptr src, size_t n) {
  pthread_mutex_lock(&mu);
  const char *p = device_bytes_locked(src, n);
  if (p) memcpy(dst, p, n);
  pthread_mutex_unlock(&mu);
  return p ? 0 : -1;
}

/* A host function for tests: counts its calls and records what a driver
 * call made from it returns (CUDA_ERROR_NOT_PERMITTED on the driver's
 * callback thread, CUDA_SUCCESS on a thread of the library). */
static int hostfn_calls, hostfn_last = -1;
void fake_cuda_test_hostfn(void *user) {
  CUcontext c;
  (void)user;
  int r = cuCtxGetCurrent(&c);
  pthread_mutex_lock(&mu);
  hostfn_calls++;
  hostfn_last = r;
  pthread_mutex_unlock(&mu);
}
int fake_cuda_test_hostfn_calls(void) { return hostfn_calls; }
int fake_cuda_test_hostfn_last(void) { return hostfn_last; }

/* ---- modules: host shared objects dressed as cubins ---- */

/* A "cubin" of the double is a host shared object built from the kernel
 * sources whose ELF header says EM_CUDA (190) with the SM in e_flags (and,
 * as nvcc writes it, OS ABI 51 and ABI version 7); the double restores the
 * host machine and OS ABI and loads it with the host device's loader. PTX it cannot run: it refuses it with a JIT log, as a driver
 * refuses PTX it cannot compile. */
#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#endif

typedef struct fake_module *CUmodule;
typedef struct fake_function *CUfunction;

struct fake_function {
  const ol_host_kernel_desc *desc;
  char name[128];
  int dead; /* its module was unloaded (atomic) */
  struct fake_function *next;
  /* nvptx$device$init (1) or nvptx$device$fini (2), whose array bounds are
   * in slots (see "constructors" below), or 0 */
  int special;
  uintptr_t *slots;
};

/* The descriptor of nvptx$device$init and nvptx$device$fini: no
 * parameters (run_launch runs them itself). */
static const ol_host_kernel_desc special_desc = {.magic = OL_HOST_KERNEL_MAGIC};

/* Functions of unloaded modules are kept, dead, so that a stale CUfunction
 * is refused (CUDA_ERROR_INVALID_HANDLE, as the driver does) instead of
 * aliasing a function of a later module. */
static struct fake_function *dead_functions;

static int dead_function(CUfunction f) { return __atomic_load_n(&f->dead, __ATOMIC_ACQUIRE); }

struct fake_module {
  void *handle;
  int fd;
  struct fake_function *functions;
  int dev;             /* the device of the context it was loaded in */
  uintptr_t lo, hi;    /* its loaded segments: its globals are device memory */
  struct fake_module *next;
  /* Constructors, as the driver has them (it runs none at load): the
   * image's .init_array and .fini_array (relocated, in the loaded image),
   * the objects naming their entries (__init_array_object_* symbols of the
   * image's symbol table; clang's NVPTX lowering emits them in PTX, the
   * fake cubins get them with objcopy), and the globals
   * __init_array_start/_end, __fini_array_start/_end (slots 0-3), which
   * nvptx$device$init/fini read. */
  size_t ninit, nfini;
  uintptr_t slots[4];
  struct ctor_object {
    char name[96];
    uintptr_t addr;
  } *objects;
  size_t nobjects;
};

/* live modules (under mu), for module_memory */
static struct fake_module *modules;

/* mu held: the device whose module's segments hold [p, p+n), or -1 */
static int module_memory_locked(uintptr_t p, size_t n) {
  for (struct fake_module *m = modules; m; m = m->next) {
    if (p >= m->lo && p < m->hi && n <= m->hi - p) return m->dev;
    uintptr_t s = (uintptr_t)m->slots;
    if (p >= s && p < s + sizeof m->slots && n <= s + sizeof m->slots - p) return m->dev;
  }
  return -1;
}

/* The driver runs no constructor or destructor of a module: the double
 * takes the image's away from the dynamic loader (their dynamic tags
 * become DT_VALRNGLO, which it ignores) and keeps where the arrays are. */
static void take_ctors(Elf64_Ehdr *copy, uintptr_t *init, size_t *ninit, uintptr_t *fini, size_t *nfini) {
  *init = *fini = 0;
  *ninit = *nfini = 0;
  Elf64_Phdr *ph = (Elf64_Phdr *)((char *)copy + copy->e_phoff);
  for (int i = 0; i < copy->e_phnum; i++) {
    if (ph[i].p_type != PT_DYNAMIC) continue;
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
}

/* The image's __init_array_object_* and __fini_array_object_* symbols
 * (its symbol table), at their loaded addresses. */
static void find_ctor_objects(const Elf64_Ehdr *e, uintptr_t base, struct fake_module *m) {
  const Elf64_Shdr *sh = (const Elf64_Shdr *)((const char *)e + e->e_shoff);
  for (int i = 0; i < e->e_shnum; i++) {
    if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= e->e_shnum) continue;
    const Elf64_Sym *sym = (const Elf64_Sym *)((const char *)e + sh[i].sh_offset);
    const char *str = (const char *)e + sh[sh[i].sh_link].sh_offset;
    size_t n = sh[i].sh_size / sizeof *sym;
    for (size_t k = 0; k < n; k++) {
      const char *name = str + sym[k].st_name;
      if (strncmp(name, "__init_array_object_", 20) && strncmp(name, "__fini_array_object_", 20)) continue;
      if (strlen(name) >= sizeof m->objects->name) continue;
      struct ctor_object *grown = realloc(m->objects, (m->nobjects + 1) * sizeof *grown);
      if (grown == NULL) return;
      m->objects = grown;
      snprintf(m->objects[m->nobjects].name, sizeof m->objects->name, "%s", name);
      m->objects[m->nobjects++].addr = base + sym[k].st_value;
    }
  }
}

static int launches;

int fake_cuda_launches(void) { return launches; }

static void jit_log(unsigned n, int *opts, void **vals, const char *text) {
  char *buf = NULL;
  size_t size = 0;
  for (unsigned i = 0; i < n; i++) {
    if (opts[i] == 5) buf = vals[i];
    if (opts[i] == 6) size = (size_t)(uintptr_t)vals[i];
  }
  if (buf && size) snprintf(buf, size, "%s", text);
}

/* the size of an ELF image: the furthest of its section headers and
 * segments */
static size_t elf_size(const Elf64_Ehdr *e) {
  size_t end = e->e_shoff + (size_t)e->e_shnum * e->e_shentsize;
  const Elf64_Phdr *ph = (const Elf64_Phdr *)((const char *)e + e->e_phoff);
  for (int i = 0; i < e->e_phnum; i++)
    if (ph[i].p_offset + ph[i].p_filesz > end) end = ph[i].p_offset + ph[i].p_filesz;
  return end;
}

CUresult cuModuleLoadDataEx(CUmodule *out, const void *image, unsigned n, int *opts, void **vals) {
  NEED_CTX();
  if (out == NULL || image == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUresult forced = env_int("FAKE_CUDA_MODULE_RESULT", CUDA_SUCCESS);
  if (forced != CUDA_SUCCESS) {
    jit_log(n, opts, vals, "fake_cuda: module load failure injected by FAKE_CUDA_MODULE_RESULT");
    return forced;
  }
  const Elf64_Ehdr *e = image;
  if (memcmp(e->e_ident, ELFMAG, SELFMAG) != 0) {
    jit_log(n, opts, vals, "fake_cuda: this double cannot compile PTX; give it a host shared object dressed as a cubin");
    return 218; /* CUDA_ERROR_INVALID_PTX */
  }
  if (e->e_machine != 190 || e->e_type != ET_DYN) return 200; /* CUDA_ERROR_INVALID_IMAGE */
  size_t size = elf_size(e);
  Elf64_Ehdr *copy = malloc(size);
  if (copy == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  memcpy(copy, image, size);
  copy->e_machine = HOST_MACHINE;
  copy->e_flags = 0;
  copy->e_ident[EI_OSABI] = ELFOSABI_SYSV; /* a cubin's say CUDA (51), ABI version 7 */
  copy->e_ident[EI_ABIVERSION] = 0;
  uintptr_t init_at, fini_at;
  size_t ninit, nfini;
  take_ctors(copy, &init_at, &ninit, &fini_at, &nfini);
  char err[256];
  int fd = -1;
  const void *staged = ol_host_stage(copy, size, &fd, err, sizeof err);
  free(copy);
  if (staged == NULL) {
    jit_log(n, opts, vals, err);
    return 200;
  }
  ol_host_unstage(staged, size);
  uintptr_t base;
  void *h = ol_host_open(&fd, &base, err, sizeof err);
  if (h == NULL) {
    ol_host_close_fd(fd);
    jit_log(n, opts, vals, err);
    return 200;
  }
  CUmodule m = calloc(1, sizeof *m);
  m->handle = h;
  m->fd = fd;
  m->dev = current->dev;
  m->ninit = init_at ? ninit : 0;
  m->nfini = fini_at ? nfini : 0;
  find_ctor_objects(e, base, m);
  m->lo = UINTPTR_MAX;
  const Elf64_Phdr *ph = (const Elf64_Phdr *)((const char *)e + e->e_phoff);
  for (int i = 0; i < e->e_phnum; i++)
    if (ph[i].p_type == PT_LOAD) {
      if (base + ph[i].p_vaddr < m->lo) m->lo = base + ph[i].p_vaddr;
      if (base + ph[i].p_vaddr + ph[i].p_memsz > m->hi) m->hi = base + ph[i].p_vaddr + ph[i].p_memsz;
    }
  pthread_mutex_lock(&mu);
  m->next = modules;
  modules = m;
  live_modules++;
  pthread_mutex_unlock(&mu);
  *out = m;
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule m) {
  NEED_CTX();
  if (m == NULL) return CUDA_ERROR_INVALID_HANDLE;
  char err[256];
  pthread_mutex_lock(&mu);
  for (struct fake_module **x = &modules; *x; x = &(*x)->next)
    if (*x == m) {
      *x = m->next;
      break;
    }
  while (m->functions) {
    struct fake_function *f = m->functions;
    m->functions = f->next;
    __atomic_store_n(&f->dead, 1, __ATOMIC_RELEASE);
    f->next = dead_functions;
    dead_functions = f;
  }
  pthread_mutex_unlock(&mu);
  ol_host_unload(m->handle, m->fd, err, sizeof err);
  free(m->objects);
  free(m);
  pthread_mutex_lock(&mu);
  live_modules--;
  pthread_mutex_unlock(&mu);
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *out, CUmodule m, const char *name) {
  NEED_CTX();
  /* an empty name is CUDA_ERROR_INVALID_VALUE on the driver (R580), not NOT_FOUND */
  if (out == NULL || m == NULL || name == NULL || !*name || strlen(name) >= 100) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  for (struct fake_function *f = m->functions; f; f = f->next)
    if (!strcmp(f->name, name)) {
      *out = f;
      pthread_mutex_unlock(&mu);
      return CUDA_SUCCESS;
    }
  /* the kernels clang emits for a module with constructors (destructors) */
  int special = !strcmp(name, "nvptx$device$init") && m->ninit ? 1 : !strcmp(name, "nvptx$device$fini") && m->nfini ? 2 : 0;
  char sym[128];
  snprintf(sym, sizeof sym, "__ol_kernel_%s", name);
  const ol_host_kernel_desc *desc = special ? &special_desc : ol_host_sym(m->handle, sym);
  if (desc == NULL || desc->magic != OL_HOST_KERNEL_MAGIC) {
    pthread_mutex_unlock(&mu);
    return 500; /* CUDA_ERROR_NOT_FOUND */
  }
  struct fake_function *f = calloc(1, sizeof *f);
  f->desc = desc;
  f->special = special;
  f->slots = special == 1 ? &m->slots[0] : &m->slots[2];
  snprintf(f->name, sizeof f->name, "%s", name);
  f->next = m->functions;
  m->functions = f;
  *out = f;
  pthread_mutex_unlock(&mu);
  return CUDA_SUCCESS;
}

CUresult cuModuleGetGlobal_v2(CUdeviceptr *ptr, size_t *bytes, CUmodule m, const char *name) {
  NEED_CTX();
  if (m == NULL || name == NULL || !*name) return CUDA_ERROR_INVALID_VALUE;
  /* the name of a kernel is CUDA_ERROR_INVALID_VALUE on the driver (R580),
   * any other name that is not a variable CUDA_ERROR_NOT_FOUND */
  char ksym[128];
  snprintf(ksym, sizeof ksym, "__ol_kernel_%s", name);
  const ol_host_kernel_desc *kd = strlen(name) < 100 ? ol_host_sym(m->handle, ksym) : NULL;
  if (kd != NULL && kd->magic == OL_HOST_KERNEL_MAGIC) return CUDA_ERROR_INVALID_VALUE;
  static const char *const bounds[4] = {"__init_array_start", "__init_array_end", "__fini_array_start",
                                        "__fini_array_end"};
  for (int i = 0; i < 4; i++)
    if (!strcmp(name, bounds[i]) && (i < 2 ? m->ninit : m->nfini)) {
      if (ptr) *ptr = (uintptr_t)&m->slots[i];
      if (bytes) *bytes = sizeof m->slots[i];
      return CUDA_SUCCESS;
    }
  for (size_t i = 0; i < m->nobjects; i++)
    if (!strcmp(name, m->objects[i].name)) {
      if (ptr) *ptr = m->objects[i].addr;
      if (bytes) *bytes = 8;
      return CUDA_SUCCESS;
    }
  void *p = ol_host_sym(m->handle, name);
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  if (p == NULL || !dladdr1(p, &info, (void **)&sym, RTLD_DL_SYMENT) || sym == NULL ||
      (ELF64_ST_TYPE(sym->st_info) != STT_OBJECT && ELF64_ST_TYPE(sym->st_info) != STT_TLS))
    return 500; /* only data is a global variable */
  if (ptr) *ptr = (uintptr_t)p;
  if (bytes) *bytes = sym->st_size;
  return CUDA_SUCCESS;
}

/* A function's block limit (its registers bound it below the device's
 * 1024 on the driver): FAKE_CUDA_FUNC_MAX_THREADS, default 1024. */
static int func_max_threads(void) { return env_int("FAKE_CUDA_FUNC_MAX_THREADS", 1024); }

CUresult cuFuncGetAttribute(int *value, int attr, CUfunction f) {
  NEED_CTX();
  if (value == NULL || f == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (dead_function(f)) return CUDA_ERROR_INVALID_HANDLE;
  if (attr != 0) return CUDA_ERROR_INVALID_VALUE; /* MAX_THREADS_PER_BLOCK only */
  *value = f->special ? 1 : func_max_threads(); /* .maxntid 1 */
  return CUDA_SUCCESS;
}

#define OPTIN_SHARED 98304
CUresult cuFuncSetAttribute(CUfunction f, int attr, int value) {
  NEED_CTX();
  if (f == NULL || attr != 8 || value < 0 || value > OPTIN_SHARED) return CUDA_ERROR_INVALID_VALUE;
  if (dead_function(f)) return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxPotentialBlockSize(int *min_grid, int *block, CUfunction f, void *fn, size_t dyn, int limit) {
  NEED_CTX();
  (void)fn;
  (void)limit;
  if (min_grid == NULL || block == NULL || f == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (dead_function(f)) return CUDA_ERROR_INVALID_HANDLE;
  *block = dyn <= 49152 ? 1024 : 256;
  *min_grid = 160;
  return CUDA_SUCCESS;
}

/* while a kernel of the double runs, device memory is accessible at the
 * device addresses */
static void device_access(int on) {
  pthread_mutex_lock(&mu);
  if ((on && kernels_running++ == 0) || (!on && --kernels_running == 0)) {
    for (int d = 0; d < MAX_DEVICES; d++)
      if (ctxs[d].addr) mprotect(ctxs[d].addr, ARENA, on ? PROT_READ | PROT_WRITE : PROT_NONE);
    if (on) protect_quarantine();
  }
  pthread_mutex_unlock(&mu);
}

static void run_launch(CUstream s, struct op *o) {
  if (dead_function(o->func)) {
    /* the driver would run code that is gone; the double stops loudly */
    fprintf(stderr, "fake_cuda: a queued launch of kernel %s runs after cuModuleUnload of its module\n", o->func->name);
    abort();
  }
  if (o->func->special) {
    /* nvptx$device$init calls the functions from __init_array_start up to
     * __init_array_end, nvptx$device$fini from __fini_array_end down to
     * __fini_array_start, as the kernels clang emits do */
    device_access(1);
    uintptr_t lo = o->func->slots[0], hi = o->func->slots[1];
    if (o->func->special == 1)
      for (uintptr_t a = lo; a < hi; a += 8) (*(void (**)(void))a)();
    else
      for (uintptr_t a = hi; a >= lo + 8; a -= 8) (*(void (**)(void))(a - 8))();
    device_access(0);
    free(o->dst);
    return;
  }
  if (s->fibers == NULL) s->fibers = ol_fiber_pool_new();
  uint64_t groups = (uint64_t)o->grid[0] * o->grid[1] * o->grid[2];
  device_access(1);
  if (o->coop) {
    /* every block on a thread of its own, as every block of a cooperative
     * grid is resident on the GPU: the grid barrier works */
    const char *err = ol_host_exec_coop(o->func->desc, o->dst, o->grid, o->block, o->shared);
    if (err) {
      fprintf(stderr, "fake_cuda: cooperative launch of %s: %s\n", o->func->name, err);
      abort();
    }
  } else {
    ol_host_exec(o->func->desc, o->dst, o->grid, o->block, 0, groups, o->shared, s->fibers);
  }
  device_access(0);
  free(o->dst);
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream s, void **params, void **extra) {
  NEED_CTX();
  if (f == NULL || params != NULL) return CUDA_ERROR_INVALID_VALUE;
  if (dead_function(f)) return CUDA_ERROR_INVALID_HANDLE;
  if (!gx || !gy || !gz || !bx || !by || !bz || (uint64_t)bx * by * bz > 1024 || bz > 64) return CUDA_ERROR_INVALID_VALUE;
  const void *args = NULL;
  size_t size = 0;
  for (int i = 0; extra && extra[i] != NULL; i += 2) {
    if (extra[i] == (void *)1) args = extra[i + 1];
    else if (extra[i] == (void *)2) size = *(size_t *)extra[i + 1];
    else return CUDA_ERROR_INVALID_VALUE;
  }
  if (size < f->desc->args_size) return CUDA_ERROR_INVALID_VALUE;
  /* as on the driver (R580): argument bytes for a kernel without
   * parameters, and a block past the function's limit, are
   * CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES */
  if ((f->desc->args_size == 0 && size > 0) || (uint64_t)bx * by * bz > (uint64_t)(f->special ? 1 : func_max_threads()))
    return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  char *copy = malloc(size ? size : 1);
  if (copy == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  if (size) memcpy(copy, args, size);
  pthread_mutex_lock(&mu);
  launches++;
  pthread_mutex_unlock(&mu);
  return push(s, (struct op){.kind = OP_LAUNCH, .func = f, .dst = copy, .grid = {gx, gy, gz},
                             .block = {bx, by, bz}, .shared = shared});
}

CUresult cuCtxGetDevice(CUdevice *dev);

/* Blocks of block_size threads with dyn bytes of dynamic shared memory
 * that one multiprocessor holds at once: the fewest its block slots (32),
 * threads (2048) and shared memory (164 KiB) allow. */
static int blocks_per_sm(CUfunction f, int block_size, size_t dyn) {
  if (block_size <= 0 || block_size > (f->special ? 1 : func_max_threads()) || dyn > OPTIN_SHARED) return 0;
  int n = 32;
  if (2048 / block_size < n) n = 2048 / block_size;
  if (dyn && 167936 / dyn < (size_t)n) n = (int)(167936 / dyn);
  return n;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction f, int block_size, size_t dyn) {
  NEED_CTX();
  if (blocks == NULL || f == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (dead_function(f)) return CUDA_ERROR_INVALID_HANDLE;
  *blocks = blocks_per_sm(f, block_size, dyn);
  return CUDA_SUCCESS;
}

static uint32_t num_params(CUfunction f);
static ol_host_param param(CUfunction f, size_t i);

/* As the driver: the arguments come only as kernelParams, one pointer per
 * parameter (each copied to its offset in the argument block); a grid
 * larger than the device holds resident is
 * CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE. The blocks then all run at once
 * (run_launch). */
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                   unsigned bz, unsigned shared, CUstream s, void **params) {
  NEED_CTX();
  if (f == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (dead_function(f)) return CUDA_ERROR_INVALID_HANDLE;
  if (!gx || !gy || !gz || !bx || !by || !bz || (uint64_t)bx * by * bz > 1024 || bz > 64) return CUDA_ERROR_INVALID_VALUE;
  size_t size = f->desc->args_size;
  uint32_t n = num_params(f);
  for (uint32_t i = 0; i < n; i++)
    if (params == NULL || params[i] == NULL) return CUDA_ERROR_INVALID_VALUE;
  if ((uint64_t)bx * by * bz > (uint64_t)(f->special ? 1 : func_max_threads())) return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  CUdevice dev = 0;
  cuCtxGetDevice(&dev);
  int sms = 0;
  cuDeviceGetAttribute(&sms, 16, dev);
  uint64_t resident = (uint64_t)blocks_per_sm(f, (int)(bx * by * bz), shared) * (uint64_t)sms;
  if ((uint64_t)gx * gy * gz > resident) return 720; /* CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE */
  char *copy = malloc(size ? size : 1);
  if (copy == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  memset(copy, 0, size ? size : 1);
  for (uint32_t i = 0; i < n; i++) {
    ol_host_param p = param(f, i);
    memcpy(copy + p.offset, params[i], p.size);
  }
  pthread_mutex_lock(&mu);
  launches++;
  pthread_mutex_unlock(&mu);
  return push(s, (struct op){.kind = OP_LAUNCH, .func = f, .dst = copy, .grid = {gx, gy, gz},
                             .block = {bx, by, bz}, .shared = shared, .coop = 1});
}

/* CU_POINTER_ATTRIBUTE_MEMORY_TYPE (2): CU_MEMORYTYPE_HOST (1) or DEVICE
 * (2); CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL (9). Memory the driver does not
 * know is CUDA_ERROR_INVALID_VALUE, as for pageable memory on the driver. */
CUresult cuPointerGetAttribute(void *out, int attr, CUdeviceptr p) {
  NEED_CTX();
  if (out == NULL) return CUDA_ERROR_INVALID_VALUE;
  int dev = -1, host = 0;
  pthread_mutex_lock(&mu);
  for (int d = 0; d < MAX_DEVICES; d++)
    if (ctxs[d].addr && p >= (uintptr_t)ctxs[d].addr && p < (uintptr_t)ctxs[d].addr + ARENA)
      dev = d;
  int managed = 0;
  for (struct host_alloc *h = host_allocs; h && dev < 0 && !host; h = h->next)
    if (contains(h, p, 1) && h->kind != HOST_REGISTERED) { /* any address inside, as on the driver */
      host = 1;
      managed = h->kind == HOST_MANAGED;
    }
  int global = dev < 0 && !host ? module_memory_locked(p, 1) : -1; /* a module's global: device memory */
  pthread_mutex_unlock(&mu);
  if (dev < 0 && !host && global < 0) return CUDA_ERROR_INVALID_VALUE;
  if (dev >= 0 && device_bytes(p, 1) == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (global >= 0) dev = global;
  switch (attr) {
  case 2: *(unsigned *)out = dev >= 0 ? 2 : 1; return CUDA_SUCCESS;
  case 8: *(unsigned *)out = managed; return CUDA_SUCCESS; /* CU_POINTER_ATTRIBUTE_IS_MANAGED */
  case 9: *(int *)out = dev >= 0 ? dev : 0; return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

/* The parameters the kernel's descriptor records (<offload/kernel.h> ABI
 * 4: those the kernel has on a GPU); a descriptor of an older ABI: one, the
 * argument struct. */
static uint32_t num_params(CUfunction f) {
  if (f->desc->abi >= 4) return f->desc->num_params;
  return f->desc->args_size > 0;
}
static ol_host_param param(CUfunction f, size_t i) {
  if (f->desc->abi >= 4) return ol_host_kernel_params(f->desc)[i];
  return (ol_host_param){0, f->desc->args_size};
}

CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t *offset, size_t *size) {
  NEED_CTX();
  if (f == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (dead_function(f)) return CUDA_ERROR_INVALID_HANDLE;
  if (index >= num_params(f)) return CUDA_ERROR_INVALID_VALUE; /* past the last (or no) parameter */
  ol_host_param p = param(f, index);
  if (offset) *offset = p.offset;
  if (size) *size = p.size;
  return CUDA_SUCCESS;
}

/* Prefetch of managed memory (the double's managed memory is host memory
 * that every device reads, so nothing moves): checked as the driver
 * checks, run in stream order, counted for tests. CU_DEVICE_CPU is -1. */
static int prefetches;
static int prefetch_last_dev = -2;
int fake_cuda_prefetches(void) { return __atomic_load_n(&prefetches, __ATOMIC_ACQUIRE); }
int fake_cuda_prefetch_last_device(void) { return __atomic_load_n(&prefetch_last_dev, __ATOMIC_ACQUIRE); }

static void run_prefetch(struct op *o) {
  __atomic_store_n(&prefetch_last_dev, (int)o->value, __ATOMIC_RELEASE);
  __atomic_add_fetch(&prefetches, 1, __ATOMIC_ACQ_REL);
}

static CUresult prefetch(CUdeviceptr p, size_t n, int dst, CUstream s) {
  if (dst != -1 && !valid_device(dst)) return CUDA_ERROR_INVALID_DEVICE;
  if (n == 0) return CUDA_ERROR_INVALID_VALUE;
  int managed = 0;
  pthread_mutex_lock(&mu);
  for (struct host_alloc *h = host_allocs; h && !managed; h = h->next)
    managed = h->kind == HOST_MANAGED && contains(h, p, n);
  pthread_mutex_unlock(&mu);
  if (!managed) return CUDA_ERROR_INVALID_VALUE; /* only managed memory moves */
  if (s == NULL) return CUDA_ERROR_INVALID_HANDLE;
  return push(s, (struct op){.kind = OP_PREFETCH, .value = (uint32_t)dst});
}

CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUdevice dst, CUstream s) {
  NEED_CTX();
  return prefetch(p, n, dst, s);
}

/* CUDA 12.2+: the destination as a CUmemLocation (type 1 device, 2 host) */
typedef struct {
  int type, id;
} CUmemLocation;
CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned int flags, CUstream s) {
  NEED_CTX();
  if (flags != 0 || (loc.type != 1 && loc.type != 2)) return CUDA_ERROR_INVALID_VALUE;
  return prefetch(p, n, loc.type == 2 ? -1 : loc.id, s);
}

/* Peer access: every pair of fake GPUs can reach each other. Enabling is
 * per (current context, peer) pair, as on the driver; enabling twice is
 * CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, disabling what is not enabled
 * CUDA_ERROR_PEER_ACCESS_NOT_ENABLED. */

CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer) {
  if (in_callback) return CUDA_ERROR_NOT_PERMITTED;
  if (can == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev) || !valid_device(peer) || dev >= MAX_DEVICES || peer >= MAX_DEVICES)
    return CUDA_ERROR_INVALID_DEVICE;
  *can = dev != peer && env_int("FAKE_CUDA_NO_PEER", 0) == 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
  NEED_CTX();
  if (peer == NULL || flags != 0 || peer == current) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  int *e = &peer_enabled[current->dev][peer->dev];
  CUresult r = *e ? CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED : CUDA_SUCCESS;
  *e = 1;
  pthread_mutex_unlock(&mu);
  return r;
}

CUresult cuCtxDisablePeerAccess(CUcontext peer) {
  NEED_CTX();
  if (peer == NULL) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  int *e = &peer_enabled[current->dev][peer->dev];
  CUresult r = *e ? CUDA_SUCCESS : CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  *e = 0;
  pthread_mutex_unlock(&mu);
  return r;
}

/* ------------------------------------------------------------------ */
/* The rest of the driver API that runtimes resolve when they load the   */
/* driver: contexts' device, limits and primary-context flags, the       */
/* synchronous copies, 2D fills, stream-ordered allocation, stream       */
/* callbacks and the unversioned cuEventDestroy. LLVM's CUDA plugin      */
/* resolves all of them at load (and refuses a driver that lacks one).   */

CUresult cuCtxGetDevice(CUdevice *dev) {
  NEED_CTX();
  if (dev == NULL) return CUDA_ERROR_INVALID_VALUE;
  *dev = current->dev;
  return CUDA_SUCCESS;
}

/* Context limits (CUlimit): stack size per thread, printf FIFO, malloc
 * heap, runtime sync depth, pending launches, L2 fetch granularity,
 * persisting L2 size; the driver's defaults, per primary context. */
#define NLIMITS 7
static const size_t limit_defaults[NLIMITS] = {1024, 1 << 20, 8 << 20, 2, 2048, 32, 0};
static size_t limits[MAX_DEVICES][NLIMITS];
static int limits_set[MAX_DEVICES];

CUresult cuCtxGetLimit(size_t *value, int limit) {
  NEED_CTX();
  if (value == NULL || limit < 0 || limit >= NLIMITS) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  *value = limits_set[current->dev] & (1 << limit) ? limits[current->dev][limit] : limit_defaults[limit];
  pthread_mutex_unlock(&mu);
  return CUDA_SUCCESS;
}

CUresult cuCtxSetLimit(int limit, size_t value) {
  NEED_CTX();
  if (limit < 0 || limit >= NLIMITS) return CUDA_ERROR_INVALID_VALUE;
  if (limit == 5 && value != 0 && value != 32 && value != 64 && value != 128) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  limits[current->dev][limit] = value;
  limits_set[current->dev] |= 1 << limit;
  pthread_mutex_unlock(&mu);
  return CUDA_SUCCESS;
}

/* Primary context flags (scheduling policy and the like): kept per device
 * across retains and releases. The unversioned SetFlags refuses while the
 * context is active (CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, 708); _v2 may
 * change them at any time. */
static unsigned primary_flags[MAX_DEVICES];

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
  if (in_callback) return CUDA_ERROR_NOT_PERMITTED;
  if (flags == NULL || active == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev) || dev >= MAX_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&mu);
  *flags = primary_flags[dev];
  *active = ctxs[dev].refs > 0;
  pthread_mutex_unlock(&mu);
  return CUDA_SUCCESS;
}

static CUresult set_primary_flags(CUdevice dev, unsigned int flags, int refuse_active) {
  if (in_callback) return CUDA_ERROR_NOT_PERMITTED;
  if (!valid_device(dev) || dev >= MAX_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
  unsigned sched = flags & 0x7; /* AUTO 0, SPIN 1, YIELD 2, BLOCKING_SYNC 4 */
  if ((flags & ~0x3fu) != 0 || (sched != 0 && sched != 1 && sched != 2 && sched != 4)) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  CUresult r = refuse_active && ctxs[dev].refs > 0 ? 708 : CUDA_SUCCESS;
  if (r == CUDA_SUCCESS) primary_flags[dev] = flags;
  pthread_mutex_unlock(&mu);
  return r;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) { return set_primary_flags(dev, flags, 0); }
CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) { return set_primary_flags(dev, flags, 1); }

/* The unversioned names whose signature did not change. */
CUresult cuEventDestroy(CUevent e) { return cuEventDestroy_v2(e); }

/* Synchronous copies (on the legacy default stream, which in the double,
 * as for a runtime that uses only non-blocking streams, orders with no
 * stream): done when they return. */
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  NEED_CTX();
  if (dst == 0 || src == NULL || is_device_address((uintptr_t)src)) return CUDA_ERROR_INVALID_VALUE;
  char *d = any_bytes(dst, n);
  if (d == NULL) return CUDA_ERROR_INVALID_VALUE;
  memmove(d, src, n);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  NEED_CTX();
  if (dst == NULL || src == 0 || is_device_address((uintptr_t)dst)) return CUDA_ERROR_INVALID_VALUE;
  const char *sp = any_bytes(src, n);
  if (sp == NULL) return CUDA_ERROR_INVALID_VALUE;
  memmove(dst, sp, n);
  return CUDA_SUCCESS;
}

/* 2D fills: HEIGHT rows of WIDTH elements, rows PITCH bytes apart. Every
 * row is checked before any is queued. */
static CUresult set2d(CUstream s, CUdeviceptr dst, size_t pitch, uint32_t v, size_t width, size_t height, size_t elem) {
  if (s == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (height > 1 && pitch < width * elem) return CUDA_ERROR_INVALID_VALUE;
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  for (size_t r = 0; r < height; r++)
    if (any_bytes(dst + r * pitch, width * elem) == NULL || (dst + r * pitch) % elem != 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t r = 0; r < height; r++) {
    CUresult res = set(s, dst + r * pitch, v, width, elem);
    if (res != CUDA_SUCCESS) return res;
  }
  return CUDA_SUCCESS;
}

CUresult cuMemsetD2D8Async(CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s) {
  NEED_CTX();
  return set2d(s, dst, pitch, v, w, h, 1);
}
CUresult cuMemsetD2D16Async(CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s) {
  NEED_CTX();
  return set2d(s, dst, pitch, v, w, h, 2);
}
CUresult cuMemsetD2D32Async(CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s) {
  NEED_CTX();
  return set2d(s, dst, pitch, v, w, h, 4);
}

/* Stream-ordered allocation: the memory is the context's, usable by the
 * stream's later work; a stream-ordered free releases it when the stream
 * reaches it (the stream's thread frees it in the context it was queued
 * from). */
CUresult cuMemAllocAsync(CUdeviceptr *out, size_t size, CUstream s) {
  NEED_CTX();
  if (s == NULL) return CUDA_ERROR_INVALID_HANDLE;
  return cuMemAlloc_v2(out, size);
}

CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) {
  NEED_CTX();
  if (s == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (!is_device_address(p) || device_bytes(p, 1) == NULL) return CUDA_ERROR_INVALID_VALUE;
  return push(s, (struct op){.kind = OP_FREE, .dst = (char *)p, .user = current});
}

static void run_free(struct op *o) {
  CUcontext saved = current;
  current = o->user;
  CUresult r = cuMemFree_v2((CUdeviceptr)o->dst);
  current = saved;
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "fake_cuda: a stream-ordered free of %p failed (%d): freed twice?\n", (void *)o->dst, r);
    abort();
  }
}

/* cuStreamAddCallback: the older form of cuLaunchHostFunc, whose callback
 * also gets the stream and a status; it runs on the same callback thread,
 * under the same rules (no driver calls from it). */
typedef void (*CUstreamCallback)(CUstream, CUresult, void *);
struct stream_callback {
  CUstreamCallback fn;
  CUstream stream;
  void *user;
};

static void run_stream_callback(void *arg) {
  struct stream_callback c = *(struct stream_callback *)arg;
  free(arg);
  c.fn(c.stream, CUDA_SUCCESS, c.user);
}

CUresult cuStreamAddCallback(CUstream s, CUstreamCallback fn, void *user, unsigned int flags) {
  NEED_CTX();
  if (fn == NULL || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (s == NULL) return CUDA_ERROR_INVALID_HANDLE;
  struct stream_callback *c = malloc(sizeof *c);
  if (c == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *c = (struct stream_callback){fn, s, user};
  CUresult r = push(s, (struct op){.kind = OP_HOST, .fn = run_stream_callback, .user = c});
  if (r != CUDA_SUCCESS) free(c);
  return r;
}
