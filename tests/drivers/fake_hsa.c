/*
 * fake_hsa.c - a driver double (ROCr, libhsa-runtime64) for the AMDGPU
 * plugin's tests.
 *
 * It exports the HSA entry points the plugin resolves, with the runtime's C
 * signatures, and answers them from made-up agents. The Go tests build it
 * with `cc -shared -fPIC` into a temporary directory and point
 * OFFLOAD_HSA_LIBRARY at the result.
 *
 * Fault injection, read with getenv when each call is made:
 *   FAKE_HSA_GPUS=<n>               GPU agents (default 0); there is always
 *                                   one CPU agent first, which the plugin
 *                                   must skip
 *   FAKE_HSA_INIT_RESULT=<status>   what hsa_init returns (default 0)
 *   FAKE_HSA_ITERATE_RESULT=<st>    what hsa_iterate_agents returns instead
 *                                   of walking the agents (default: walk)
 *
 * A missing symbol cannot be simulated at run time (the dynamic symbol table
 * is fixed when the library is linked); the tests hide symbols at link time
 * with a version script instead.
 *
 * Agent handles: 0x100 is the CPU, 0x200 + i is GPU i (0-based). GPU i has:
 *   name "gfx90a", vendor "AMD", product "Fake AMD GPU <i>",
 *   UUID "GPU-00000000000000a<i>", workgroup max size 1024, workgroup max
 *   dims 1024/1024/1024, grid max size 4294967295, grid max dims
 *   4294967295/65535/65535 (made up to tell the dimensions apart),
 *   104 + i compute units, max clock 1700 MHz, memory clock 1600 MHz.
 * Its memory pools (handle 0x1000 * (i+1) + k):
 *   k=0 global fine-grained  (i+1) * 1 GiB
 *   k=1 global coarse-grained (i+1) * 64 GiB
 *   k=2 group 64 KiB
 *
 * fake_hsa_init_calls() returns how often hsa_init was called.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int hsa_status_t;
typedef struct {
  uint64_t handle;
} hsa_agent_t;
typedef struct {
  uint64_t handle;
} hsa_amd_memory_pool_t;
typedef struct {
  uint32_t x, y, z;
} hsa_dim3_t;

enum {
  HSA_STATUS_SUCCESS = 0,
  HSA_STATUS_INFO_BREAK = 0x1,
  HSA_STATUS_ERROR = 0x1000,
  HSA_STATUS_ERROR_INVALID_ARGUMENT = 0x1001,
  HSA_STATUS_ERROR_INVALID_AGENT = 0x1004,
  HSA_STATUS_ERROR_OUT_OF_RESOURCES = 0x1008,
  HSA_STATUS_ERROR_NOT_INITIALIZED = 0x100B,
};

#define CPU_AGENT 0x100u
#define GPU_AGENT0 0x200u

static int init_calls;
static int initialised;

static long env_long(const char *name, long fallback) {
  const char *v = getenv(name);
  if (v == NULL || *v == '\0')
    return fallback;
  return strtol(v, NULL, 0);
}

static int num_gpus(void) { return (int)env_long("FAKE_HSA_GPUS", 0); }

/* gpu_index returns i for GPU agent i, -1 for the CPU, -2 if invalid. */
static int gpu_index(uint64_t agent) {
  if (agent == CPU_AGENT)
    return -1;
  if (agent >= GPU_AGENT0 && agent < GPU_AGENT0 + (uint64_t)num_gpus())
    return (int)(agent - GPU_AGENT0);
  return -2;
}

int fake_hsa_init_calls(void) { return init_calls; }

hsa_status_t hsa_init(void) {
  init_calls++;
  hsa_status_t st = (hsa_status_t)env_long("FAKE_HSA_INIT_RESULT", HSA_STATUS_SUCCESS);
  if (st == HSA_STATUS_SUCCESS)
    initialised = 1;
  return st;
}

hsa_status_t hsa_status_string(hsa_status_t st, const char **text) {
  if (text == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  switch (st) {
  case HSA_STATUS_SUCCESS: *text = "HSA_STATUS_SUCCESS: fake"; break;
  case HSA_STATUS_ERROR: *text = "HSA_STATUS_ERROR: A generic error has occurred."; break;
  case HSA_STATUS_ERROR_OUT_OF_RESOURCES:
    *text = "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.";
    break;
  default: return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_system_get_info(int attr, void *value) {
  if (!initialised)
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (value == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  switch (attr) {
  case 0: *(uint16_t *)value = 1; return HSA_STATUS_SUCCESS; /* VERSION_MAJOR */
  case 1: *(uint16_t *)value = 1; return HSA_STATUS_SUCCESS; /* VERSION_MINOR */
  }
  return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

hsa_status_t hsa_iterate_agents(hsa_status_t (*callback)(hsa_agent_t, void *), void *data) {
  if (!initialised)
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (callback == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  const char *forced = getenv("FAKE_HSA_ITERATE_RESULT");
  if (forced != NULL && *forced != '\0')
    return (hsa_status_t)strtol(forced, NULL, 0);
  hsa_agent_t a = {CPU_AGENT};
  hsa_status_t st = callback(a, data);
  for (int i = 0; st == HSA_STATUS_SUCCESS && i < num_gpus(); i++) {
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

hsa_status_t hsa_agent_get_info(hsa_agent_t agent, int attr, void *value) {
  if (!initialised)
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (value == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  int i = gpu_index(agent.handle);
  if (i == -2)
    return HSA_STATUS_ERROR_INVALID_AGENT;
  char text[64];
  switch (attr) {
  case 17: /* DEVICE */
    *(int *)value = i < 0 ? 0 /* CPU */ : 1 /* GPU */;
    return HSA_STATUS_SUCCESS;
  case 0: /* NAME */
    put_string(value, i < 0 ? "Fake CPU" : "gfx90a");
    return HSA_STATUS_SUCCESS;
  case 1: /* VENDOR_NAME */
    put_string(value, i < 0 ? "CPU" : "AMD");
    return HSA_STATUS_SUCCESS;
  }
  if (i < 0)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT; /* the plugin only asks GPUs */
  switch (attr) {
  case 7: { /* WORKGROUP_MAX_DIM, uint16_t[3] */
    uint16_t *d = value;
    d[0] = d[1] = d[2] = 1024;
    return HSA_STATUS_SUCCESS;
  }
  case 8: *(uint32_t *)value = 1024; return HSA_STATUS_SUCCESS; /* WORKGROUP_MAX_SIZE */
  case 9: { /* GRID_MAX_DIM */
    hsa_dim3_t d = {4294967295u, 65535u, 65535u};
    memcpy(value, &d, sizeof d);
    return HSA_STATUS_SUCCESS;
  }
  case 10: *(uint32_t *)value = 4294967295u; return HSA_STATUS_SUCCESS; /* GRID_MAX_SIZE */
  case 0xA002: *(uint32_t *)value = 104u + (uint32_t)i; return HSA_STATUS_SUCCESS; /* COMPUTE_UNIT_COUNT */
  case 0xA003: *(uint32_t *)value = 1700; return HSA_STATUS_SUCCESS; /* MAX_CLOCK_FREQUENCY */
  case 0xA008: *(uint32_t *)value = 1600; return HSA_STATUS_SUCCESS; /* MEMORY_MAX_FREQUENCY */
  case 0xA009: /* PRODUCT_NAME */
    snprintf(text, sizeof text, "Fake AMD GPU %d", i);
    put_string(value, text);
    return HSA_STATUS_SUCCESS;
  case 0xA011: /* UUID, char[21] */
    snprintf(text, sizeof text, "GPU-00000000000000a%d", i % 10);
    memcpy(value, text, 21);
    ((char *)value)[20] = '\0';
    return HSA_STATUS_SUCCESS;
  }
  return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

hsa_status_t hsa_amd_agent_iterate_memory_pools(hsa_agent_t agent,
                                                hsa_status_t (*callback)(hsa_amd_memory_pool_t, void *),
                                                void *data) {
  if (!initialised)
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (callback == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  int i = gpu_index(agent.handle);
  if (i < 0)
    return HSA_STATUS_ERROR_INVALID_AGENT;
  hsa_status_t st = HSA_STATUS_SUCCESS;
  for (int k = 0; st == HSA_STATUS_SUCCESS && k < 3; k++) {
    hsa_amd_memory_pool_t p = {0x1000u * (uint64_t)(i + 1) + (uint64_t)k};
    st = callback(p, data);
  }
  return st == HSA_STATUS_INFO_BREAK ? HSA_STATUS_SUCCESS : st;
}

hsa_status_t hsa_amd_memory_pool_get_info(hsa_amd_memory_pool_t pool, int attr, void *value) {
  if (!initialised)
    return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (value == NULL)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  uint64_t gpu = pool.handle / 0x1000u; /* i + 1 */
  int k = (int)(pool.handle % 0x1000u);
  if (gpu < 1 || gpu > (uint64_t)num_gpus() || k > 2)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  switch (attr) {
  case 0: /* SEGMENT */
    *(int *)value = k == 2 ? 3 /* GROUP */ : 0 /* GLOBAL */;
    return HSA_STATUS_SUCCESS;
  case 1: /* GLOBAL_FLAGS */
    if (k == 2)
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    *(uint32_t *)value = k == 0 ? 2u /* FINE_GRAINED */ | 1u /* KERNARG_INIT */ : 4u /* COARSE_GRAINED */;
    return HSA_STATUS_SUCCESS;
  case 2: /* SIZE, size_t */
    if (k == 0)
      *(size_t *)value = (size_t)gpu << 30;
    else if (k == 1)
      *(size_t *)value = (size_t)gpu << 36;
    else
      *(size_t *)value = 65536;
    return HSA_STATUS_SUCCESS;
  }
  return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}
