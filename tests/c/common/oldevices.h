/* oldevices.h: the device fixture of the C test suites of liboffload-go
 * (tests/c/device, through hcheck.h). On the checks of olcheck.h. The
 * conformance suite keeps its own host_device() (check.h): its trace tests
 * expect exactly the calls that one makes.
 *
 * olc_list_devices: every device in olIterateDevices order, each with its
 * backend and its index among that backend's devices ("host:0", "cuda:1").
 * olc_select_devices: the devices to test, from OFFLOAD_TEST_DEVICES: a
 * comma list of `backend` (every device of that backend) or
 * `backend:index`, with backend one of host, cuda, amdgpu; or `all`. Unset
 * or empty: every device found. A name that matches no device is a failure
 * ("no device matches ..."), never a skip.
 * olc_host_device: the host device (NULL, and no failure, if none).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef TESTS_C_COMMON_OLDEVICES_H
#define TESTS_C_COMMON_OLDEVICES_H

#include "olcheck.h"

static inline bool olc_find_host(ol_device_handle_t d, void *user) {
  ol_device_type_t t;
  if (olGetDeviceInfo(d, OL_DEVICE_INFO_TYPE, sizeof t, &t) == NULL &&
      t == OL_DEVICE_TYPE_HOST) {
    *(ol_device_handle_t *)user = d;
    return false;
  }
  return true;
}

/* ---------------------------------------------------- device selection --- */

#define OLC_MAX_DEVICES 64

/* A selected device, by backend and index: handles do not survive a full
 * olShutDown, these do. */
typedef struct olc_devsel {
  ol_platform_backend_t backend;
  unsigned index;
} olc_devsel;

static olc_devsel olc_sel[OLC_MAX_DEVICES];
static int olc_nsel;

static inline ol_platform_backend_t olc_device_backend(ol_device_handle_t d) {
  ol_platform_handle_t p = NULL;
  ol_platform_backend_t b = OL_PLATFORM_BACKEND_UNKNOWN;
  if (olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, sizeof p, &p) == NULL)
    olGetPlatformInfo(p, OL_PLATFORM_INFO_BACKEND, sizeof b, &b);
  return b;
}

/* Every device in olIterateDevices order, with its backend and index. */
typedef struct olc_devlist {
  int n;
  ol_device_handle_t dev[OLC_MAX_DEVICES];
  olc_devsel sel[OLC_MAX_DEVICES];
} olc_devlist;

static inline bool olc_list_fn(ol_device_handle_t d, void *user) {
  olc_devlist *l = user;
  if (l->n >= OLC_MAX_DEVICES)
    return false;
  ol_platform_backend_t b = olc_device_backend(d);
  unsigned idx = 0;
  for (int i = 0; i < l->n; i++)
    idx += l->sel[i].backend == b;
  l->dev[l->n] = d;
  l->sel[l->n].backend = b;
  l->sel[l->n].index = idx;
  l->n++;
  return true;
}

static inline void olc_list_devices(olc_devlist *l) {
  l->n = 0;
  olIterateDevices(olc_list_fn, l);
}

static inline bool olc_parse_backend(const char *s, size_t n, ol_platform_backend_t *b) {
  static const ol_platform_backend_t all[] = {OL_PLATFORM_BACKEND_HOST, OL_PLATFORM_BACKEND_CUDA,
                                              OL_PLATFORM_BACKEND_AMDGPU,
                                              OL_PLATFORM_BACKEND_LEVEL_ZERO};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    const char *name = olc_backend_name(all[i]);
    if (strlen(name) == n && strncmp(name, s, n) == 0) {
      *b = all[i];
      return true;
    }
  }
  return false;
}

static inline void olc_select(const olc_devsel *s) {
  for (int i = 0; i < olc_nsel; i++)
    if (olc_sel[i].backend == s->backend && olc_sel[i].index == s->index)
      return;
  if (olc_nsel < OLC_MAX_DEVICES)
    olc_sel[olc_nsel++] = *s;
}

/* Reads OFFLOAD_TEST_DEVICES into olc_sel; an entry that matches no device
 * is a failure. */
static inline void olc_select_devices(void) {
  olc_devlist l;
  olc_list_devices(&l);
  const char *env = getenv("OFFLOAD_TEST_DEVICES");
  olc_nsel = 0;
  olc_test = "device selection";
  if (!env || !*env || strcmp(env, "all") == 0) {
    for (int i = 0; i < l.n; i++)
      olc_select(&l.sel[i]);
    return;
  }
  const char *p = env;
  while (*p) {
    size_t len = strcspn(p, ",");
    char item[64];
    snprintf(item, sizeof item, "%.*s", (int)(len < 63 ? len : 63), p);
    p += len + (p[len] == ',');
    if (!*item)
      continue;
    if (strcmp(item, "all") == 0) {
      for (int i = 0; i < l.n; i++)
        olc_select(&l.sel[i]);
      continue;
    }
    char *colon = strchr(item, ':');
    size_t blen = colon ? (size_t)(colon - item) : strlen(item);
    ol_platform_backend_t b;
    char *end = NULL;
    unsigned long idx = colon ? strtoul(colon + 1, &end, 10) : 0;
    if (!olc_parse_backend(item, blen, &b) || (colon && (end == colon + 1 || *end))) {
      olc_fail(__FILE__, __LINE__,
                "OFFLOAD_TEST_DEVICES: \"%s\" is not backend or backend:index (backends: "
                "host, cuda, amdgpu) or all",
                item);
      continue;
    }
    int found = 0;
    for (int i = 0; i < l.n; i++)
      if (l.sel[i].backend == b && (!colon || l.sel[i].index == idx)) {
        olc_select(&l.sel[i]);
        found++;
      }
    if (!found)
      olc_fail(__FILE__, __LINE__, "OFFLOAD_TEST_DEVICES: no device matches %s", item);
  }
}

/* The host device, or NULL. */
static inline ol_device_handle_t olc_host_device(void) {
  ol_device_handle_t h = NULL;
  if (olIterateDevices(olc_find_host, &h) != NULL)
    return NULL;
  return h;
}

#endif /* TESTS_C_COMMON_OLDEVICES_H */
