// liboffload-go kernel header: write a kernel once, build it three ways.
//
//   host CPU device:  gcc/clang -O2 -fPIC -shared kernel.c -o kernel.so
//   NVIDIA (PTX):     clang --target=nvptx64-nvidia-cuda -march=sm_80 -nogpulib -ffreestanding ...
//   AMD GPU:          clang --target=amdgcn-amd-amdhsa -mcpu=gfx90a -nogpulib -ffreestanding ...
//
// A kernel takes one argument struct by value. olLaunchKernel's
// ArgumentsData/ArgumentsSize are exactly the bytes of that struct, on every
// device, so a host program builds one argument buffer for all of them:
//
//   struct saxpy_args { float a; const float *x; float *y; uint32_t n; };
//   OL_KERNEL(saxpy, struct saxpy_args, args) {
//     uint32_t i = ol_global_id(0);
//     if (i < args.n) args.y[i] = args.a * args.x[i] + args.y[i];
//   }
//
// Kernels that use ol_barrier() are declared with OL_GROUP_KERNEL instead.
// On GPUs the two are the same; on the host CPU a plain kernel runs each
// work-group as a loop the compiler can optimise, while a group kernel runs
// every work-item on its own small stack so that barriers work. Calling
// ol_barrier() in a plain OL_KERNEL is a compile error on the host.
//
// Index functions (dimension d is 0, 1 or 2):
//   ol_thread_id(d)   work-item index within its group
//   ol_group_id(d)    group index within the grid
//   ol_group_size(d)  work-items per group
//   ol_num_groups(d)  groups in the grid
//   ol_global_id(d)   ol_group_id(d) * ol_group_size(d) + ol_thread_id(d)
//   ol_global_size(d) ol_num_groups(d) * ol_group_size(d)
// On the host they are available inside kernel bodies (they read the
// current work-item, a hidden parameter of the body).
//
// Group-local memory:
//   OL_GROUP_LOCAL(float, tile[256]);  static, one copy per work-group
//   ol_dyn_shared()                    the launch's DynSharedMemory bytes
// Global variables visible to olGetSymbol: OL_GLOBAL uint32_t table[64];
//
// SPDX-License-Identifier: Apache-2.0
#ifndef LIBOFFLOAD_GO_KERNEL_H
#define LIBOFFLOAD_GO_KERNEL_H

#include <stdint.h>

#if defined(__NVPTX__) || defined(__AMDGPU__)
/* ---------------------------------------------------------------- GPUs */
#include <gpuintrin.h>

#define OL_KERNEL(name, type, arg) __gpu_kernel void name(type arg)
#define OL_GROUP_KERNEL(name, type, arg) __gpu_kernel void name(type arg)
#define OL_KERNEL_NOARGS(name) __gpu_kernel void name(void)
#define OL_GROUP_KERNEL_NOARGS(name) __gpu_kernel void name(void)
#define OL_GLOBAL __attribute__((visibility("protected")))
#define OL_GROUP_LOCAL(type, decl)                                             \
  static __gpu_local __attribute__((loader_uninitialized)) type decl
#define ol_thread_id(d) __gpu_thread_id(d)
#define ol_group_id(d) __gpu_block_id(d)
#define ol_group_size(d) __gpu_num_threads(d)
#define ol_num_groups(d) __gpu_num_blocks(d)
#define ol_barrier() __gpu_sync_threads()
extern __gpu_local char __ol_dyn_shared[];
#define ol_dyn_shared() ((void *)__ol_dyn_shared)

#else
/* ------------------------------------------------------------ host CPU */
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

// What the runtime passes to a kernel. The layout is the ABI between this
// header and liboffload-go's host device (version OL_HOST_ABI).
#define OL_HOST_ABI 2
#define OL_HOST_KERNEL_MAGIC 0x4f4c4b31u /* "OLK1" */

typedef struct ol_host_launch {
  uint32_t num_groups[3];
  uint32_t group_size[3];
  uint64_t group_begin; // linear index of the first group to run
  uint64_t group_end;   // one past the last group to run
  void *dyn_shared;     // DynSharedMemory bytes for the group being run
} ol_host_launch;

// A work-item of a plain kernel.
typedef struct ol_host_item {
  uint32_t local[3];
  uint32_t group[3];
  uint32_t global[3];
  const ol_host_launch *launch;
} ol_host_item;

// A work-item of a group kernel: it can wait at the group's barrier.
typedef struct ol_host_sync_item {
  uint32_t local[3];
  uint32_t group[3];
  uint32_t global[3];
  const ol_host_launch *launch;
  void (*barrier)(struct ol_host_sync_item *self);
  void *scheduler;
} ol_host_sync_item;

enum { OL_HOST_KERNEL_LOOP = 0, OL_HOST_KERNEL_GROUP = 1 };

// Each kernel exports a descriptor named __ol_kernel_<name>. It points at
// module-local functions, so a kernel named like a function of another
// library (read, write, step, ...) can never be bound to that function.
typedef struct ol_host_kernel_desc {
  uint32_t magic;
  uint32_t abi;
  uint32_t kind;      // OL_HOST_KERNEL_LOOP or OL_HOST_KERNEL_GROUP
  uint32_t args_size; // bytes of the argument struct
  void (*loop)(const void *args, const ol_host_launch *launch);
  void (*item)(const void *args, ol_host_sync_item *item);
} ol_host_kernel_desc;

#ifdef __cplusplus
#define OL_EXPORT extern "C" __attribute__((visibility("default"), used))
#else
#define OL_EXPORT __attribute__((visibility("default"), used))
#endif

// Runs groups [group_begin, group_end) of a plain kernel: the body is
// inlined into the work-item loop.
#define OL__LOOP(name, type, arg, copy, size)                                        \
  static inline void name##__ol_body(type arg, const ol_host_item *__ol_wi)     \
      __attribute__((unused));                                                 \
  static void name##__ol_loop(const void *__ol_args,                           \
                              const ol_host_launch *__ol_l) {                  \
    type __ol_a;                                                               \
    copy;                                                                      \
    ol_host_item __ol_w;                                                       \
    __ol_w.launch = __ol_l;                                                    \
    const uint32_t __ol_nx = __ol_l->num_groups[0];                            \
    const uint32_t __ol_ny = __ol_l->num_groups[1];                            \
    for (uint64_t __ol_g = __ol_l->group_begin; __ol_g < __ol_l->group_end;    \
         __ol_g++) {                                                           \
      __ol_w.group[0] = (uint32_t)(__ol_g % __ol_nx);                          \
      __ol_w.group[1] = (uint32_t)((__ol_g / __ol_nx) % __ol_ny);              \
      __ol_w.group[2] = (uint32_t)(__ol_g / ((uint64_t)__ol_nx * __ol_ny));    \
      const uint32_t __ol_sx = __ol_l->group_size[0];                          \
      const uint32_t __ol_sy = __ol_l->group_size[1];                          \
      const uint32_t __ol_sz = __ol_l->group_size[2];                          \
      const uint32_t __ol_bx = __ol_w.group[0] * __ol_sx;                      \
      for (uint32_t __ol_z = 0; __ol_z < __ol_sz; __ol_z++) {                  \
        __ol_w.local[2] = __ol_z;                                              \
        __ol_w.global[2] = __ol_w.group[2] * __ol_sz + __ol_z;                 \
        for (uint32_t __ol_y = 0; __ol_y < __ol_sy; __ol_y++) {                \
          __ol_w.local[1] = __ol_y;                                            \
          __ol_w.global[1] = __ol_w.group[1] * __ol_sy + __ol_y;               \
          /* The global id is the induction variable (a launch never has      \
             more than 2^32-1 work-items in a dimension, so it cannot wrap):  \
             accesses indexed by ol_global_id(0) vectorise. */                 \
          for (uint32_t __ol_gx = __ol_bx; __ol_gx < __ol_bx + __ol_sx;        \
               __ol_gx++) {                                                    \
            __ol_w.local[0] = __ol_gx - __ol_bx;                               \
            __ol_w.global[0] = __ol_gx;                                        \
            name##__ol_body(__ol_a, &__ol_w);                                  \
          }                                                                    \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }                                                                            \
  OL_EXPORT void name(const void *__ol_args, const ol_host_launch *__ol_l) {   \
    name##__ol_loop(__ol_args, __ol_l);                                        \
  }                                                                            \
  OL_EXPORT const ol_host_kernel_desc __ol_kernel_##name = {                   \
      OL_HOST_KERNEL_MAGIC, OL_HOST_ABI, OL_HOST_KERNEL_LOOP, size,            \
      name##__ol_loop, 0};                                                     \
  static inline void name##__ol_body(                                          \
      type arg, __attribute__((unused)) const ol_host_item *__ol_wi)

// Runs one work-item of a group kernel on its own stack.
#define OL__GROUP(name, type, arg, copy, size)                                       \
  static void name##__ol_body(type arg, ol_host_sync_item *__ol_wi);           \
  static void name##__ol_item(const void *__ol_args,                           \
                              ol_host_sync_item *__ol_i) {                     \
    type __ol_a;                                                               \
    copy;                                                                      \
    name##__ol_body(__ol_a, __ol_i);                                           \
  }                                                                            \
  OL_EXPORT void name(const void *__ol_args, ol_host_sync_item *__ol_i) {      \
    name##__ol_item(__ol_args, __ol_i);                                        \
  }                                                                            \
  OL_EXPORT const ol_host_kernel_desc __ol_kernel_##name = {                   \
      OL_HOST_KERNEL_MAGIC, OL_HOST_ABI, OL_HOST_KERNEL_GROUP, size, 0,        \
      name##__ol_item};                                                        \
  static void name##__ol_body(                                                 \
      type arg, __attribute__((unused)) ol_host_sync_item *__ol_wi)

#define OL_KERNEL(name, type, arg)                                             \
  OL__LOOP(name, type, arg, memcpy(&__ol_a, __ol_args, sizeof __ol_a),         \
           sizeof(type))
#define OL_GROUP_KERNEL(name, type, arg)                                       \
  OL__GROUP(name, type, arg, memcpy(&__ol_a, __ol_args, sizeof __ol_a),        \
            sizeof(type))
#define OL_KERNEL_NOARGS(name)                                                 \
  OL__LOOP(name, int, __ol_unused __attribute__((unused)),                     \
           (void)__ol_args; __ol_a = 0, 0)
#define OL_GROUP_KERNEL_NOARGS(name)                                           \
  OL__GROUP(name, int, __ol_unused __attribute__((unused)),                    \
            (void)__ol_args; __ol_a = 0, 0)

// Protected: the module's own code always uses its own copy, even if the
// host program defines a variable of the same name. (C++ does not mangle
// variables of the global namespace.)
#define OL_GLOBAL __attribute__((visibility("protected")))
// One copy per host thread; all work-items of a group run on one thread.
#define OL_GROUP_LOCAL(type, decl) static __thread type decl

#define ol_thread_id(d) (__ol_wi->local[(d)])
#define OL__HOST_GLOBAL_ID(d) (__ol_wi->global[(d)])
#define ol_group_id(d) (__ol_wi->group[(d)])
#define ol_group_size(d) (__ol_wi->launch->group_size[(d)])
#define ol_num_groups(d) (__ol_wi->launch->num_groups[(d)])
#define ol_dyn_shared() (__ol_wi->launch->dyn_shared)
// Only group kernels have a barrier member: a plain kernel fails to compile.
#define ol_barrier() (__ol_wi->barrier(__ol_wi))

#ifdef __cplusplus
}
#endif
#endif

#ifdef OL__HOST_GLOBAL_ID
#define ol_global_id(d) OL__HOST_GLOBAL_ID(d)
#else
#define ol_global_id(d) (ol_group_id(d) * ol_group_size(d) + ol_thread_id(d))
#endif
#define ol_global_size(d) (ol_num_groups(d) * ol_group_size(d))

#endif // LIBOFFLOAD_GO_KERNEL_H
