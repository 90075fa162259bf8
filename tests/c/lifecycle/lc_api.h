/* The entry points a dlopen-cycle test calls, looked up with dlsym after
 * each dlopen (the library is never linked, so it can be unloaded), and
 * CALL, which counts and reports a failed call. Shared by rss_cycles and
 * driver_cycles. */
#ifndef LC_API_H
#define LC_API_H

#include "lc_common.h"

#include <dlfcn.h>

static struct api {
  __typeof__(&olInit) init;
  __typeof__(&olShutDown) shutdown;
  __typeof__(&olIterateDevices) iterate;
  __typeof__(&olGetDeviceInfo) info;
  __typeof__(&olMemAlloc) alloc;
  __typeof__(&olMemFree) free;
  __typeof__(&olMemcpy) memcpy;
  __typeof__(&olCreateProgram) create_program;
  __typeof__(&olDestroyProgram) destroy_program;
  __typeof__(&olGetSymbol) symbol;
  __typeof__(&olCreateQueue) create_queue;
  __typeof__(&olSyncQueue) sync_queue;
  __typeof__(&olDestroyQueue) destroy_queue;
  __typeof__(&olLaunchKernel) launch;
  __typeof__(&olMemFill) fill;
  __typeof__(&olCreateEvent) create_event;
  __typeof__(&olWaitEvents) wait_events;
  __typeof__(&olDestroyEvent) destroy_event;
  __typeof__(&olLaunchHostFunction) host_function;
} api;

/* Failed calls so far: a cycle test ends with a check that there were none. */
static long bad_calls;

#define CALL(expr, ...)                                                        \
  do {                                                                         \
    ol_result_t r_ = (expr);                                                   \
    if (r_ != NULL) {                                                          \
      bad_calls++;                                                             \
      LC_QUIET_CHECK(false, "%s -> %u %s", #expr, lc_code(r_),                 \
                     lc_details(r_));                                          \
      __VA_ARGS__;                                                             \
    }                                                                          \
  } while (0)

/* Fills api from lib; false (and a failed check) when a symbol is missing. */
static bool lookup(void *lib) {
#define SYM(field, name)                                                       \
  api.field = (__typeof__(api.field))dlsym(lib, name);                         \
  if (!api.field) {                                                            \
    LC_CHECK(false, "dlsym(%s) failed", name);                                 \
    return false;                                                              \
  }
  SYM(init, "olInit");
  SYM(shutdown, "olShutDown");
  SYM(iterate, "olIterateDevices");
  SYM(info, "olGetDeviceInfo");
  SYM(alloc, "olMemAlloc");
  SYM(free, "olMemFree");
  SYM(memcpy, "olMemcpy");
  SYM(create_program, "olCreateProgram");
  SYM(destroy_program, "olDestroyProgram");
  SYM(symbol, "olGetSymbol");
  SYM(create_queue, "olCreateQueue");
  SYM(sync_queue, "olSyncQueue");
  SYM(destroy_queue, "olDestroyQueue");
  SYM(launch, "olLaunchKernel");
  SYM(fill, "olMemFill");
  SYM(create_event, "olCreateEvent");
  SYM(wait_events, "olWaitEvents");
  SYM(destroy_event, "olDestroyEvent");
  SYM(host_function, "olLaunchHostFunction");
#undef SYM
  return true;
}

#endif
