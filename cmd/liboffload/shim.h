// Shared by the generated entry points: the public header, the Go exports
// and the guard that refuses calls from a child created by fork().
#ifndef LIBOFFLOAD_GO_SHIM_H
#define LIBOFFLOAD_GO_SHIM_H

#include <stdint.h>

#include "offload.h"
#include "_cgo_export.h"

// Set in the child of a fork(): the Go runtime's threads did not survive it,
// so entering Go could hang. Calls return ol_fork_result instead.
extern volatile int ol_forked_child;
extern const ol_error_struct_t ol_fork_result;

#define OL_FORK_GUARD()                                                        \
  do {                                                                         \
    if (__builtin_expect(ol_forked_child, 0))                                  \
      return &ol_fork_result;                                                  \
  } while (0)

#endif
