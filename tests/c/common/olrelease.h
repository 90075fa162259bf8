/* olrelease.h: one test source for both releases of the library (LLVM
 * 22.1's ABI, libLLVMOffload.so.22.1, and 23.1's, libLLVMOffload.so.23.1).
 * olcheck.h includes it after <OffloadAPI.h>; which header that is (the
 * Makefiles' RELEASE: include/offload or include/23.1/offload) decides.
 *
 *   OLC_RELEASE        22 or 23 (23 when the header defines OL_INIT_ARGS_INIT,
 *                      a macro only 23.1 has)
 *   OLC_RELEASE_NAME   "22.1" or "23.1"
 *   OLC_INIT_ARG       nothing (22.1) or NULL (23.1): `fn(OLC_INIT_ARG)` calls
 *                      a pointer to olInit of either release with no platform
 *                      list (the dlopen tests)
 *
 * Against the 23.1 header, the 22.1 spellings of the four calls 23.1
 * changed keep working, as function-like macros that call the 23.1 form
 * with its new parameters at their neutral values:
 *   olInit()                        -> olInit(NULL)             (every platform)
 *   olCreateEvent(q, &e)            -> olCreateEvent(q, OL_EVENT_FLAGS_NONE, &e)
 *   olMemUnregister(d, p)           -> olMemUnregister(d, p, 0)
 *   olLaunchKernel(q, d, k, args, size, &l)
 *                                   -> the argument struct as ONE argument:
 *                                      NumArgs = size ? 1 : 0, ArgPtrs = {args},
 *                                      ArgSizes = {size}, no properties
 * and the same for their ...WithCodeLoc twins. The kernels of
 * tests/c/kernels take one struct (OL_KERNEL), so one argument of the
 * struct's size is what a device that knows the kernel's parameters
 * expects; those of several parameters (params.c) are launched by
 * launch23.c with one argument each.
 * A test that calls the 23.1 form itself puts the name in parentheses,
 * `(olLaunchKernel)(q, d, k, &l, props, n, ptrs, sizes)`, which a
 * function-like macro does not expand.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef TESTS_C_COMMON_OLRELEASE_H
#define TESTS_C_COMMON_OLRELEASE_H

#include <stddef.h>

#include <OffloadAPI.h>

#ifdef OL_INIT_ARGS_INIT
#define OLC_RELEASE 23
#define OLC_RELEASE_NAME "23.1"
#define OLC_INIT_ARG NULL

/* Defined before the macros below, so these call the real functions. */
static inline ol_result_t olc_launch22(ol_queue_handle_t q, ol_device_handle_t d,
                                       ol_symbol_handle_t k, const void *args, size_t size,
                                       const ol_kernel_launch_size_args_t *l) {
  void *ptrs[1] = {(void *)args};
  size_t sizes[1] = {size};
  return olLaunchKernel(q, d, k, l, NULL, size ? 1 : 0, ptrs, sizes);
}

static inline ol_result_t olc_launch22_loc(ol_queue_handle_t q, ol_device_handle_t d,
                                           ol_symbol_handle_t k, const void *args, size_t size,
                                           const ol_kernel_launch_size_args_t *l,
                                           ol_code_location_t *loc) {
  void *ptrs[1] = {(void *)args};
  size_t sizes[1] = {size};
  return olLaunchKernelWithCodeLoc(q, d, k, l, NULL, size ? 1 : 0, ptrs, sizes, loc);
}

#define olInit() olInit(NULL)
#define olInitWithCodeLoc(loc) olInitWithCodeLoc(NULL, loc)
#define olCreateEvent(q, e) olCreateEvent(q, OL_EVENT_FLAGS_NONE, e)
#define olCreateEventWithCodeLoc(q, e, loc) olCreateEventWithCodeLoc(q, OL_EVENT_FLAGS_NONE, e, loc)
#define olMemUnregister(d, p) olMemUnregister(d, p, 0)
#define olMemUnregisterWithCodeLoc(d, p, loc) olMemUnregisterWithCodeLoc(d, p, 0, loc)
#define olLaunchKernel(q, d, k, args, size, l) olc_launch22(q, d, k, args, size, l)
#define olLaunchKernelWithCodeLoc(q, d, k, args, size, l, loc)                 \
  olc_launch22_loc(q, d, k, args, size, l, loc)

#else
#define OLC_RELEASE 22
#define OLC_RELEASE_NAME "22.1"
#define OLC_INIT_ARG
#endif

#endif /* TESTS_C_COMMON_OLRELEASE_H */
