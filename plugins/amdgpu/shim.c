// C side of the HSA trampolines declared in shim.h.
#include "shim.h"

#include "_cgo_export.h"

typedef struct {
  uint64_t handle;
} lgo_hsa_handle_t;

typedef uint32_t (*lgo_hsa_init_t)(void);
typedef uint32_t (*lgo_hsa_status_string_t)(uint32_t, const char **);
typedef uint32_t (*lgo_hsa_system_get_info_t)(uint32_t, void *);
typedef uint32_t (*lgo_hsa_handle_get_info_t)(lgo_hsa_handle_t, uint32_t, void *);
typedef uint32_t (*lgo_hsa_handle_cb_t)(lgo_hsa_handle_t, void *);
typedef uint32_t (*lgo_hsa_iterate_agents_t)(lgo_hsa_handle_cb_t, void *);
typedef uint32_t (*lgo_hsa_iterate_pools_t)(lgo_hsa_handle_t, lgo_hsa_handle_cb_t, void *);

// collect is the C callback handed to the driver: it forwards each handle to
// Go. It is a cgo export, not a purego callback (those are limited in number
// and never freed).
static uint32_t collect(lgo_hsa_handle_t h, void *data) {
  return lgoHsaCollect(h.handle, (uintptr_t)data);
}

uint32_t lgo_hsa_init(uintptr_t fn) { return ((lgo_hsa_init_t)fn)(); }

uint32_t lgo_hsa_status_string(uintptr_t fn, uint32_t status, const char **text) {
  *text = NULL;
  return ((lgo_hsa_status_string_t)fn)(status, text);
}

uint32_t lgo_hsa_system_get_info(uintptr_t fn, uint32_t attr, void *value) {
  return ((lgo_hsa_system_get_info_t)fn)(attr, value);
}

uint32_t lgo_hsa_agent_get_info(uintptr_t fn, uint64_t agent, uint32_t attr, void *value) {
  lgo_hsa_handle_t a = {agent};
  return ((lgo_hsa_handle_get_info_t)fn)(a, attr, value);
}

uint32_t lgo_hsa_amd_memory_pool_get_info(uintptr_t fn, uint64_t pool, uint32_t attr, void *value) {
  lgo_hsa_handle_t p = {pool};
  return ((lgo_hsa_handle_get_info_t)fn)(p, attr, value);
}

uint32_t lgo_hsa_iterate_agents(uintptr_t fn, uintptr_t data) {
  return ((lgo_hsa_iterate_agents_t)fn)(collect, (void *)data);
}

uint32_t lgo_hsa_amd_agent_iterate_memory_pools(uintptr_t fn, uint64_t agent, uintptr_t data) {
  lgo_hsa_handle_t a = {agent};
  return ((lgo_hsa_iterate_pools_t)fn)(a, collect, (void *)data);
}
