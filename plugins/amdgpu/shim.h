// Trampolines from Go to ROCr (libhsa-runtime64) entry points resolved with
// dlsym. Each takes the entry point's address first. hsa_status_t and the
// info enums are int-sized; hsa_agent_t and hsa_amd_memory_pool_t are
// structs holding one uint64_t handle, passed here as that handle.
#ifndef LGO_AMDGPU_SHIM_H
#define LGO_AMDGPU_SHIM_H

#include <stddef.h>
#include <stdint.h>

#define LGO_HIDDEN __attribute__((visibility("hidden")))

LGO_HIDDEN uint32_t lgo_hsa_init(uintptr_t fn);
LGO_HIDDEN uint32_t lgo_hsa_status_string(uintptr_t fn, uint32_t status, const char **text);
LGO_HIDDEN uint32_t lgo_hsa_system_get_info(uintptr_t fn, uint32_t attr, void *value);
LGO_HIDDEN uint32_t lgo_hsa_agent_get_info(uintptr_t fn, uint64_t agent, uint32_t attr, void *value);
LGO_HIDDEN uint32_t lgo_hsa_amd_memory_pool_get_info(uintptr_t fn, uint64_t pool, uint32_t attr, void *value);

// The two iterators call the Go function lgoHsaCollect (an //export in
// collect.go) for each agent or pool, passing data through unchanged.
LGO_HIDDEN uint32_t lgo_hsa_iterate_agents(uintptr_t fn, uintptr_t data);
LGO_HIDDEN uint32_t lgo_hsa_amd_agent_iterate_memory_pools(uintptr_t fn, uint64_t agent, uintptr_t data);

#endif
