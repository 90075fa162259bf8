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
// Or it takes several parameters, given as (type, name) pairs (at most 32;
// a type with a comma in it needs a typedef):
//
//   OL_KERNEL_PARAMS(saxpy2, (float, a), (const float *, x), (float *, y)) {
//     y[ol_global_id(0)] += a * x[ol_global_id(0)];
//   }
//
// On GPUs that is a kernel with those parameters; on the host its
// parameters are the members of a struct in that order, whose bytes a
// 22.1 launch passes (ArgumentsData), and the image records each
// parameter's offset and size, as a GPU code object does, so that 23.1's
// olLaunchKernel (ArgPtrs/ArgSizes, one per parameter) places them and
// checks their sizes. OL_GROUP_KERNEL_PARAMS and OL_PHASED_KERNEL_PARAMS
// are the same for the other two kinds below.
//
// Kernels that use ol_barrier() are declared with OL_GROUP_KERNEL instead.
// On GPUs the two are the same; on the host CPU a plain kernel runs each
// work-group as a loop the compiler can optimise, while a group kernel runs
// every work-item on its own small stack so that barriers work. Calling
// ol_barrier() in a plain OL_KERNEL is a compile error on the host.
//
// A group kernel whose barriers are all reached by the whole group together
// (outside per-item branches) runs much faster on the host written in phases:
//
//   OL_PHASED_KERNEL(k, struct k_args, a) {
//     OL_GROUP_LOCAL(float, tile[256]);
//     OL_PRIVATE(float, acc);               // one per work-item, kept across barriers
//     OL_FOR_ITEMS { ol_private(acc) = 0; tile[ol_thread_id(0)] = ...; }
//     ol_barrier();
//     OL_FOR_ITEMS { ol_private(acc) += tile[...]; }
//   }
//
// Code outside OL_FOR_ITEMS is the group's: it runs once per group on the
// host and in every work-item on a GPU, so it may only compute values that
// are the same for the whole group (from arguments, group ids and sizes).
// Each OL_FOR_ITEMS block is a loop over the group's work-items on the host
// and the work-item's own code on a GPU; ol_barrier() goes between blocks.
// docs/kernels.md has the rules.
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
// Grid-wide barrier: ol_grid_barrier() waits for every work-item of the
// grid. Only in a cooperative launch (OL_KERNEL_LAUNCH_PROP_TYPE_IS_COOPERATIVE,
// at most olGetKernelMaxCooperativeGroupCount groups) of an OL_GROUP_KERNEL
// or an OL_PHASED_KERNEL (between OL_FOR_ITEMS blocks), reached by every
// work-item of the grid alike. docs/kernels.md has the rules.
//
// SPDX-License-Identifier: Apache-2.0
#ifndef LIBOFFLOAD_GO_KERNEL_H
#define LIBOFFLOAD_GO_KERNEL_H

#include <stdint.h>

// OL__MAP(m, sep, k, x1, ..., xn) is m(k, x1) sep() ... sep() m(k, xn), for
// the (type, name) pairs of a kernel's parameters (at most 32).
#define OL__CAT(a, b) OL__CAT_(a, b)
#define OL__CAT_(a, b) a##b
#define OL__COMMA() ,
#define OL__NOTHING()
#define OL__NARG(...) OL__NARG_(__VA_ARGS__, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define OL__NARG_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, _32, n, ...) n
#define OL__MAP(m, sep, k, ...) OL__CAT(OL__MAP_, OL__NARG(__VA_ARGS__))(m, sep, k, __VA_ARGS__)
// A parameter's declaration.
#define OL__PDECL(k, p) OL__PDECL_ p
#define OL__PDECL_(t, n) t n
#define OL__MAP_1(m, sep, k, x) m(k, x)
#define OL__MAP_2(m, sep, k, x, ...) m(k, x) sep() OL__MAP_1(m, sep, k, __VA_ARGS__)
#define OL__MAP_3(m, sep, k, x, ...) m(k, x) sep() OL__MAP_2(m, sep, k, __VA_ARGS__)
#define OL__MAP_4(m, sep, k, x, ...) m(k, x) sep() OL__MAP_3(m, sep, k, __VA_ARGS__)
#define OL__MAP_5(m, sep, k, x, ...) m(k, x) sep() OL__MAP_4(m, sep, k, __VA_ARGS__)
#define OL__MAP_6(m, sep, k, x, ...) m(k, x) sep() OL__MAP_5(m, sep, k, __VA_ARGS__)
#define OL__MAP_7(m, sep, k, x, ...) m(k, x) sep() OL__MAP_6(m, sep, k, __VA_ARGS__)
#define OL__MAP_8(m, sep, k, x, ...) m(k, x) sep() OL__MAP_7(m, sep, k, __VA_ARGS__)
#define OL__MAP_9(m, sep, k, x, ...) m(k, x) sep() OL__MAP_8(m, sep, k, __VA_ARGS__)
#define OL__MAP_10(m, sep, k, x, ...) m(k, x) sep() OL__MAP_9(m, sep, k, __VA_ARGS__)
#define OL__MAP_11(m, sep, k, x, ...) m(k, x) sep() OL__MAP_10(m, sep, k, __VA_ARGS__)
#define OL__MAP_12(m, sep, k, x, ...) m(k, x) sep() OL__MAP_11(m, sep, k, __VA_ARGS__)
#define OL__MAP_13(m, sep, k, x, ...) m(k, x) sep() OL__MAP_12(m, sep, k, __VA_ARGS__)
#define OL__MAP_14(m, sep, k, x, ...) m(k, x) sep() OL__MAP_13(m, sep, k, __VA_ARGS__)
#define OL__MAP_15(m, sep, k, x, ...) m(k, x) sep() OL__MAP_14(m, sep, k, __VA_ARGS__)
#define OL__MAP_16(m, sep, k, x, ...) m(k, x) sep() OL__MAP_15(m, sep, k, __VA_ARGS__)
#define OL__MAP_17(m, sep, k, x, ...) m(k, x) sep() OL__MAP_16(m, sep, k, __VA_ARGS__)
#define OL__MAP_18(m, sep, k, x, ...) m(k, x) sep() OL__MAP_17(m, sep, k, __VA_ARGS__)
#define OL__MAP_19(m, sep, k, x, ...) m(k, x) sep() OL__MAP_18(m, sep, k, __VA_ARGS__)
#define OL__MAP_20(m, sep, k, x, ...) m(k, x) sep() OL__MAP_19(m, sep, k, __VA_ARGS__)
#define OL__MAP_21(m, sep, k, x, ...) m(k, x) sep() OL__MAP_20(m, sep, k, __VA_ARGS__)
#define OL__MAP_22(m, sep, k, x, ...) m(k, x) sep() OL__MAP_21(m, sep, k, __VA_ARGS__)
#define OL__MAP_23(m, sep, k, x, ...) m(k, x) sep() OL__MAP_22(m, sep, k, __VA_ARGS__)
#define OL__MAP_24(m, sep, k, x, ...) m(k, x) sep() OL__MAP_23(m, sep, k, __VA_ARGS__)
#define OL__MAP_25(m, sep, k, x, ...) m(k, x) sep() OL__MAP_24(m, sep, k, __VA_ARGS__)
#define OL__MAP_26(m, sep, k, x, ...) m(k, x) sep() OL__MAP_25(m, sep, k, __VA_ARGS__)
#define OL__MAP_27(m, sep, k, x, ...) m(k, x) sep() OL__MAP_26(m, sep, k, __VA_ARGS__)
#define OL__MAP_28(m, sep, k, x, ...) m(k, x) sep() OL__MAP_27(m, sep, k, __VA_ARGS__)
#define OL__MAP_29(m, sep, k, x, ...) m(k, x) sep() OL__MAP_28(m, sep, k, __VA_ARGS__)
#define OL__MAP_30(m, sep, k, x, ...) m(k, x) sep() OL__MAP_29(m, sep, k, __VA_ARGS__)
#define OL__MAP_31(m, sep, k, x, ...) m(k, x) sep() OL__MAP_30(m, sep, k, __VA_ARGS__)
#define OL__MAP_32(m, sep, k, x, ...) m(k, x) sep() OL__MAP_31(m, sep, k, __VA_ARGS__)

#if defined(__NVPTX__) || defined(__AMDGPU__)
/* ---------------------------------------------------------------- GPUs */
#include <gpuintrin.h>

#define OL_KERNEL(name, type, arg) __gpu_kernel void name(type arg)
#define OL_GROUP_KERNEL(name, type, arg) __gpu_kernel void name(type arg)
#define OL_KERNEL_NOARGS(name) __gpu_kernel void name(void)
#define OL_GROUP_KERNEL_NOARGS(name) __gpu_kernel void name(void)
#define OL_PHASED_KERNEL(name, type, arg) __gpu_kernel void name(type arg)
#define OL_PHASED_KERNEL_NOARGS(name) __gpu_kernel void name(void)
#define OL_KERNEL_PARAMS(name, ...)                                            \
  __gpu_kernel void name(OL__MAP(OL__PDECL, OL__COMMA, name, __VA_ARGS__))
#define OL_GROUP_KERNEL_PARAMS(name, ...) OL_KERNEL_PARAMS(name, __VA_ARGS__)
#define OL_PHASED_KERNEL_PARAMS(name, ...) OL_KERNEL_PARAMS(name, __VA_ARGS__)
// A one-pass loop: break and continue end the work-item's block, as on the host.
#define OL_FOR_ITEMS for (int __ol_once = 1; __ol_once; __ol_once = 0)
#define OL_PRIVATE(type, name) type name[1]
#define ol_private(name) ((name)[0])
#define OL_GLOBAL __attribute__((visibility("protected")))
#define OL_GROUP_LOCAL(type, decl)                                             \
  static __gpu_local __attribute__((loader_uninitialized)) type decl
#define ol_thread_id(d) __gpu_thread_id(d)
#define ol_group_id(d) __gpu_block_id(d)
#define ol_group_size(d) __gpu_num_threads(d)
#define ol_num_groups(d) __gpu_num_blocks(d)
#define ol_barrier() __gpu_sync_threads()
extern __gpu_local char __ol_dyn_shared[];

// The grid barrier's state, one per program: arrivals at the current
// barrier and its generation, which the last arrival advances (so the state
// is back to no arrivals after every barrier, and after every launch).
static __gpu_global uint32_t __ol_grid_arrived, __ol_grid_generation;

// Every work-item publishes its writes device-wide, the group meets, one
// work-item of the group arrives for it and waits for the other groups,
// the group meets again and every work-item sees the other groups' writes.
static inline __attribute__((always_inline)) void ol__grid_barrier(void) {
  __scoped_atomic_thread_fence(__ATOMIC_RELEASE, __MEMORY_SCOPE_DEVICE);
  __gpu_sync_threads();
  if (__gpu_thread_id(0) == 0 && __gpu_thread_id(1) == 0 && __gpu_thread_id(2) == 0) {
    const uint32_t groups = __gpu_num_blocks(0) * __gpu_num_blocks(1) * __gpu_num_blocks(2);
    // read before arriving: it cannot advance until this group has arrived
    const uint32_t gen = __scoped_atomic_load_n(&__ol_grid_generation, __ATOMIC_ACQUIRE, __MEMORY_SCOPE_DEVICE);
    // the group's writes (ordered before this by the group barrier) go
    // before the arrival, whatever ordering the target gives the add itself
    __scoped_atomic_thread_fence(__ATOMIC_ACQ_REL, __MEMORY_SCOPE_DEVICE);
    if (__scoped_atomic_fetch_add(&__ol_grid_arrived, 1u, __ATOMIC_ACQ_REL, __MEMORY_SCOPE_DEVICE) == groups - 1) {
      // the last one: nobody arrives again before the generation moves
      __scoped_atomic_store_n(&__ol_grid_arrived, 0u, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
      __scoped_atomic_store_n(&__ol_grid_generation, gen + 1, __ATOMIC_RELEASE, __MEMORY_SCOPE_DEVICE);
    } else {
      while (__scoped_atomic_load_n(&__ol_grid_generation, __ATOMIC_ACQUIRE, __MEMORY_SCOPE_DEVICE) == gen)
        __gpu_thread_suspend();
    }
    __scoped_atomic_thread_fence(__ATOMIC_ACQ_REL, __MEMORY_SCOPE_DEVICE);
  }
  __gpu_sync_threads();
  __scoped_atomic_thread_fence(__ATOMIC_ACQUIRE, __MEMORY_SCOPE_DEVICE);
}
#define ol_grid_barrier() ol__grid_barrier()
#define ol_dyn_shared() ((void *)__ol_dyn_shared)

#else
/* ------------------------------------------------------------ host CPU */
#include <stddef.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

// What the runtime passes to a kernel. The layout is the ABI between this
// header and liboffload-go's host device (version OL_HOST_ABI; version 3
// added the grid barrier at the end, so ABI 2 kernels still run; version 4
// added the parameter list to the kernel descriptor).
#define OL_HOST_ABI 4
#define OL_HOST_KERNEL_MAGIC 0x4f4c4b31u /* "OLK1" */

typedef struct ol_host_launch {
  uint32_t num_groups[3];
  uint32_t group_size[3];
  uint64_t group_begin; // linear index of the first group to run
  uint64_t group_end;   // one past the last group to run
  void *dyn_shared;     // DynSharedMemory bytes for the group being run
  // Waits for every group of the grid (ol_grid_barrier); grid is the
  // runtime's. Outside a cooperative launch it reports a misuse instead.
  void (*grid_barrier)(const struct ol_host_launch *self);
  void *grid;
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

// A phased kernel (OL_PHASED_KERNEL) is an OL_HOST_KERNEL_LOOP kernel to
// the runtime; these two types are private to this header. Outside
// OL_FOR_ITEMS the kernel sees the group (no work-item ids; a barrier does
// nothing there: the blocks before it have run for every work-item)...
typedef struct ol_host_phase_group {
  uint32_t group[3];
  uint32_t size[3];
  const ol_host_launch *launch;
} ol_host_phase_group;

// ...and inside it one work-item (ol_barrier() there does not compile).
// lin is the item's linear index in the group.
typedef struct ol_host_phase_item {
  uint32_t local[3];
  uint32_t group[3];
  uint32_t global[3];
  uint32_t size[3];
  size_t lin;
  const ol_host_launch *launch;
} ol_host_phase_item;

typedef struct ol__items_scope {
  int done;
} ol__items_scope;

// The most work-items a group can have on the host device (OL_PRIVATE
// reserves this many copies).
#define OL_HOST_MAX_GROUP 1024

enum { OL_HOST_KERNEL_LOOP = 0, OL_HOST_KERNEL_GROUP = 1 };

// One parameter of a kernel: where its bytes are in the argument block
// and how many there are.
typedef struct ol_host_param {
  uint32_t offset;
  uint32_t size;
} ol_host_param;

// Each kernel exports a descriptor named __ol_kernel_<name>. It points at
// module-local functions, so a kernel named like a function of another
// library (read, write, step, ...) can never be bound to that function.
// From ABI 4 on, num_params ol_host_param follow it in the same object
// (ol_host_kernel_params); images of ABI 2 and 3 end the descriptor before
// num_params and do not say what their parameters are.
typedef struct ol_host_kernel_desc {
  uint32_t magic;
  uint32_t abi;
  uint32_t kind;      // OL_HOST_KERNEL_LOOP or OL_HOST_KERNEL_GROUP
  uint32_t args_size; // bytes of the argument block (where the last parameter ends)
  void (*loop)(const void *args, const ol_host_launch *launch);
  void (*item)(const void *args, ol_host_sync_item *item);
  uint32_t num_params; // ABI 4 and later
  uint32_t reserved;   // zero
} ol_host_kernel_desc;

// The parameters of an ABI 4 (or later) kernel.
static inline const ol_host_param *ol_host_kernel_params(const ol_host_kernel_desc *d) {
  return (const ol_host_param *)(const void *)(d + 1);
}

// The exported descriptor of kernel name: its np parameter records (the
// parenthesised list plist) follow it in one object, so that one symbol
// says everything and no pointer needs relocating.
#define OL__DESC(name, kind, size, loop, item, np, plist)                      \
  struct name##__ol_desc {                                                     \
    ol_host_kernel_desc desc;                                                  \
    ol_host_param params[(np) > 0 ? (np) : 1];                                 \
  };                                                                           \
  OL_EXPORT const struct name##__ol_desc __ol_kernel_##name = {                \
      {OL_HOST_KERNEL_MAGIC, OL_HOST_ABI, kind, (uint32_t)(size), loop, item,  \
       (uint32_t)(np), 0},                                                     \
      {OL__UNPAREN plist}};
#define OL__UNPAREN(...) __VA_ARGS__

#ifdef __cplusplus
#define OL_EXPORT extern "C" __attribute__((visibility("default"), used))
#else
#define OL_EXPORT __attribute__((visibility("default"), used))
#endif

// The coordinates of linear group n of a grid of num_groups (x fastest).
static inline void ol__group_of(uint64_t n, const uint32_t num_groups[3], uint32_t group[3]) {
  const uint64_t nx = num_groups[0], ny = num_groups[1];
  group[0] = (uint32_t)(n % nx);
  group[1] = (uint32_t)((n / nx) % ny);
  group[2] = (uint32_t)(n / (nx * ny));
}

// The exported entry point and descriptor of a kernel whose groups run
// through loop (plain and phased kernels).
#define OL__EXPORT_LOOP_KERNEL(name, loop, argsize, np, plist)                 \
  OL_EXPORT void name(const void *__ol_args, const ol_host_launch *__ol_l) {   \
    loop(__ol_args, __ol_l);                                                   \
  }                                                                            \
  OL__DESC(name, OL_HOST_KERNEL_LOOP, argsize, loop, 0, np, plist)

// The work-item loop whose ids the compiler can bound (below): global x
// ids under OL__SPLIT_LIMIT, groups of at most OL__SPLIT_GROUP items.
#define OL__SPLIT_LIMIT 0x40000000u
#define OL__SPLIT_GROUP 1024u
// v, with nothing known about it to the optimiser.
static inline uint32_t ol__opaque(uint32_t v) {
  __asm__("" : "+r"(v));
  return v;
}
#define OL__OPAQUE(v) ol__opaque(v)

// The work-items of one row of a plain kernel's group: global x ids
// [begin, end), the global id the loop's induction variable.
#define OL__ITEMS_X(name, ocall, begin, end)                                   \
  for (uint32_t __ol_gx = (begin); __ol_gx < (end); __ol_gx++) {               \
    __ol_w.local[0] = __ol_gx - (begin);                                       \
    __ol_w.global[0] = __ol_gx;                                                \
    name##__ol_body(OL__UNPAREN ocall, &__ol_w);                               \
  }

// Runs groups [group_begin, group_end) of a plain kernel: the body is
// inlined into the work-item loop. The body's parameters are odecl, given
// the values ocall (both in parentheses) from __ol_a, of type `type`, that
// copy fills from the argument block of size bytes; np parameters,
// recorded as plist (see OL__ONE, OL__NONE and OL__PARAMS below).
#define OL__LOOP(name, type, odecl, ocall, copy, size, np, plist)              \
  static inline void name##__ol_body(OL__UNPAREN odecl,                        \
                                     const ol_host_item *__ol_wi)              \
      __attribute__((unused));                                                 \
  static void name##__ol_loop(const void *__ol_args,                           \
                              const ol_host_launch *__ol_l) {                  \
    type __ol_a;                                                               \
    copy;                                                                      \
    ol_host_item __ol_w;                                                       \
    __ol_w.launch = __ol_l;                                                    \
    for (uint64_t __ol_g = __ol_l->group_begin; __ol_g < __ol_l->group_end;    \
         __ol_g++) {                                                           \
      ol__group_of(__ol_g, __ol_l->num_groups, __ol_w.group);                  \
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
          /* The global id is the induction variable, so that accesses         \
             indexed by ol_global_id(0) vectorise. Below 2^30 the masks are    \
             no-ops that bound the id for the compiler: it then knows the id   \
             cannot wrap and splits the loop at a bounds check such as         \
             if (i < n), leaving a check-free loop to vectorise. (OL__OPAQUE   \
             keeps the compiler from dropping the masks as no-ops.) */         \
          if (__ol_bx < OL__SPLIT_LIMIT && __ol_sx <= OL__SPLIT_GROUP) {       \
            const uint32_t __ol_b =                                            \
                OL__OPAQUE(__ol_bx) & (OL__SPLIT_LIMIT - 1);                   \
            const uint32_t __ol_e =                                            \
                __ol_b + (OL__OPAQUE(__ol_sx) & (2 * OL__SPLIT_GROUP - 1));    \
            OL__ITEMS_X(name, ocall, __ol_b, __ol_e);                          \
          } else {                                                             \
            OL__ITEMS_X(name, ocall, __ol_bx, __ol_bx + __ol_sx);              \
          }                                                                    \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }                                                                            \
  OL__EXPORT_LOOP_KERNEL(name, name##__ol_loop, size, np, plist)               \
  static inline void name##__ol_body(                                          \
      OL__UNPAREN odecl, __attribute__((unused)) const ol_host_item *__ol_wi)

// Runs one work-item of a group kernel on its own stack.
#define OL__GROUP(name, type, odecl, ocall, copy, size, np, plist)             \
  static void name##__ol_body(OL__UNPAREN odecl, ol_host_sync_item *__ol_wi);  \
  static void name##__ol_item(const void *__ol_args,                           \
                              ol_host_sync_item *__ol_i) {                     \
    type __ol_a;                                                               \
    copy;                                                                      \
    name##__ol_body(OL__UNPAREN ocall, __ol_i);                                \
  }                                                                            \
  OL_EXPORT void name(const void *__ol_args, ol_host_sync_item *__ol_i) {      \
    name##__ol_item(__ol_args, __ol_i);                                        \
  }                                                                            \
  OL__DESC(name, OL_HOST_KERNEL_GROUP, size, 0, name##__ol_item, np, plist)    \
  static void name##__ol_body(                                                 \
      OL__UNPAREN odecl, __attribute__((unused)) ol_host_sync_item *__ol_wi)

// Runs groups [group_begin, group_end) of a phased kernel: the body runs
// once per group, its OL_FOR_ITEMS blocks loop over the work-items.
static inline ol_host_phase_item ol__phase_first(const ol_host_phase_group *g) {
  ol_host_phase_item it;
  for (int d = 0; d < 3; d++) {
    it.local[d] = 0;
    it.group[d] = g->group[d];
    it.global[d] = g->group[d] * g->size[d];
    it.size[d] = g->size[d];
  }
  it.lin = 0;
  it.launch = g->launch;
  return it;
}
#define OL__PHASED(name, type, odecl, ocall, copy, argsize, np, plist)         \
  static inline __attribute__((always_inline)) void name##__ol_body(           \
      OL__UNPAREN odecl, const ol_host_phase_group *__ol_wi,                   \
      const ol_host_phase_group *__ol_grp);                                    \
  static void name##__ol_loop(const void *__ol_args,                           \
                              const ol_host_launch *__ol_l) {                  \
    type __ol_a;                                                               \
    copy;                                                                      \
    ol_host_phase_group __ol_g;                                                \
    __ol_g.launch = __ol_l;                                                    \
    for (int __ol_d = 0; __ol_d < 3; __ol_d++)                                 \
      __ol_g.size[__ol_d] = __ol_l->group_size[__ol_d];                        \
    for (uint64_t __ol_n = __ol_l->group_begin; __ol_n < __ol_l->group_end;    \
         __ol_n++) {                                                           \
      ol__group_of(__ol_n, __ol_l->num_groups, __ol_g.group);                  \
      name##__ol_body(OL__UNPAREN ocall, &__ol_g, &__ol_g);                    \
    }                                                                          \
  }                                                                            \
  OL__EXPORT_LOOP_KERNEL(name, name##__ol_loop, argsize, np, plist)            \
  static inline __attribute__((always_inline)) void name##__ol_body(           \
      OL__UNPAREN odecl, __attribute__((unused)) const ol_host_phase_group *__ol_wi, \
      __attribute__((unused)) const ol_host_phase_group *__ol_grp)

// The work-items of the group in order (x fastest), the global x id as the
// induction variable so that the block vectorises. The innermost two
// one-pass loops make break/continue end only this work-item's block, and
// shadow __ol_grp with a struct so that a nested OL_FOR_ITEMS does not compile.
#define OL_FOR_ITEMS                                                           \
  for (ol_host_phase_item __ol_it = ol__phase_first(__ol_grp);                 \
       __ol_it.local[2] < __ol_it.size[2];                                     \
       __ol_it.local[2]++, __ol_it.global[2]++)                                \
    for (__ol_it.local[1] = 0,                                                 \
        __ol_it.global[1] = __ol_it.group[1] * __ol_it.size[1];                \
         __ol_it.local[1] < __ol_it.size[1];                                   \
         __ol_it.local[1]++, __ol_it.global[1]++)                              \
      for (uint32_t __ol_gx = __ol_it.group[0] * __ol_it.size[0], __ol_lx = 0; \
           __ol_gx < __ol_it.group[0] * __ol_it.size[0] + __ol_it.size[0];     \
           __ol_gx++, __ol_lx++)                                               \
        for (const ol_host_phase_item *__ol_wi =                               \
                 (__ol_it.global[0] = __ol_gx, __ol_it.local[0] = __ol_lx,     \
                  __ol_it.lin = ((size_t)__ol_it.local[2] * __ol_it.size[1] +  \
                                 __ol_it.local[1]) * __ol_it.size[0] +         \
                                (size_t)__ol_lx,                               \
                  &__ol_it);                                                   \
             __ol_wi; __ol_wi = 0)                                             \
          for (ol__items_scope __ol_grp = {0}; !__ol_grp.done;                 \
               __ol_grp.done = 1)

// One value per work-item that lives across barriers (a work-item's other
// variables end with its OL_FOR_ITEMS block).
#define OL_PRIVATE(type, name)                                                 \
  type name[OL_HOST_MAX_GROUP] __attribute__((aligned(64)))
#define ol_private(name) ((name)[__ol_wi->lin])

// The forms of a kernel's parameter list for the macros above: one struct
// (recorded as one parameter at offset 0), none, or (type, name) pairs
// (the members of struct name##__ol_params, each recorded).
#define OL__ONE(type, arg)                                                     \
  type, (type arg), (__ol_a), memcpy(&__ol_a, __ol_args, sizeof __ol_a),       \
      sizeof(type), 1, ({0, (uint32_t)sizeof(type)})
#define OL__NONE                                                               \
  int, (int __ol_unused __attribute__((unused))), (__ol_a),                    \
      (void)__ol_args; __ol_a = 0, 0, 0, ({0, 0})
// The block ends where the last parameter does (a second struct with one
// char more finds it): no trailing padding, as on GPUs.
#define OL__PARAMS(name, ...)                                                  \
  struct name##__ol_params, (OL__MAP(OL__PDECL, OL__COMMA, name, __VA_ARGS__)), \
      (OL__MAP(OL__PCALL, OL__COMMA, name, __VA_ARGS__)),                      \
      memcpy(&__ol_a, __ol_args, offsetof(struct name##__ol_end, __ol_end)),   \
      offsetof(struct name##__ol_end, __ol_end), OL__NARG(__VA_ARGS__),        \
      (OL__MAP(OL__PRECORD, OL__COMMA, name, __VA_ARGS__))
#define OL__PARAM_STRUCTS(name, ...)                                           \
  struct name##__ol_params {                                                   \
    OL__MAP(OL__PMEMBER, OL__NOTHING, name, __VA_ARGS__)                       \
  };                                                                           \
  struct name##__ol_end {                                                      \
    OL__MAP(OL__PMEMBER, OL__NOTHING, name, __VA_ARGS__)                       \
    char __ol_end;                                                             \
  };
#define OL__PCALL(k, p) OL__PCALL_ p
#define OL__PCALL_(t, n) __ol_a.n
#define OL__PMEMBER(k, p) OL__PMEMBER_ p
#define OL__PMEMBER_(t, n) t n;
#define OL__PRECORD(k, p) OL__PRECORD_I(k, OL__UNPAREN p)
#define OL__PRECORD_I(...) OL__PRECORD_(__VA_ARGS__)
#define OL__PRECORD_(k, t, n)                                                  \
  {(uint32_t)offsetof(struct k##__ol_params, n),                               \
   (uint32_t)sizeof(((struct k##__ol_params *)0)->n)}

#define OL__LOOP_I(...) OL__LOOP(__VA_ARGS__)
#define OL__GROUP_I(...) OL__GROUP(__VA_ARGS__)
#define OL__PHASED_I(...) OL__PHASED(__VA_ARGS__)
#define OL_KERNEL(name, type, arg) OL__LOOP_I(name, OL__ONE(type, arg))
#define OL_GROUP_KERNEL(name, type, arg) OL__GROUP_I(name, OL__ONE(type, arg))
#define OL_PHASED_KERNEL(name, type, arg) OL__PHASED_I(name, OL__ONE(type, arg))
#define OL_KERNEL_NOARGS(name) OL__LOOP_I(name, OL__NONE)
#define OL_GROUP_KERNEL_NOARGS(name) OL__GROUP_I(name, OL__NONE)
#define OL_PHASED_KERNEL_NOARGS(name) OL__PHASED_I(name, OL__NONE)
#define OL_KERNEL_PARAMS(name, ...)                                            \
  OL__PARAM_STRUCTS(name, __VA_ARGS__)                                         \
  OL__LOOP_I(name, OL__PARAMS(name, __VA_ARGS__))
#define OL_GROUP_KERNEL_PARAMS(name, ...)                                      \
  OL__PARAM_STRUCTS(name, __VA_ARGS__)                                         \
  OL__GROUP_I(name, OL__PARAMS(name, __VA_ARGS__))
#define OL_PHASED_KERNEL_PARAMS(name, ...)                                     \
  OL__PARAM_STRUCTS(name, __VA_ARGS__)                                         \
  OL__PHASED_I(name, OL__PARAMS(name, __VA_ARGS__))

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
// A group kernel's work-item waits at the barrier; between the blocks of a
// phased kernel it does nothing. Anywhere else (a plain kernel, inside
// OL_FOR_ITEMS) it does not compile.
static inline void ol__sync_barrier(ol_host_sync_item *it) { it->barrier(it); }
static inline void ol__phase_barrier(const ol_host_phase_group *g) { (void)g; }
// The grid barrier: a group kernel's work-items meet at the group's
// barrier, the first work-item waits for the other groups (its group's
// thread has nothing else to run meanwhile) and the group meets again; a
// phased kernel's group (the blocks before it have run for every
// work-item) waits directly. Each group of a cooperative launch has its
// own thread.
static inline void ol__sync_grid_barrier(ol_host_sync_item *it) {
  it->barrier(it);
  if (it->local[0] == 0 && it->local[1] == 0 && it->local[2] == 0) it->launch->grid_barrier(it->launch);
  it->barrier(it);
}
static inline void ol__phase_grid_barrier(const ol_host_phase_group *g) { g->launch->grid_barrier(g->launch); }
#ifdef __cplusplus
extern "C++" {
static inline void ol__barrier(ol_host_sync_item *it) { ol__sync_barrier(it); }
static inline void ol__barrier(const ol_host_phase_group *g) { ol__phase_barrier(g); }
static inline void ol__grid_barrier(ol_host_sync_item *it) { ol__sync_grid_barrier(it); }
static inline void ol__grid_barrier(const ol_host_phase_group *g) { ol__phase_grid_barrier(g); }
}
#define ol_barrier() ol__barrier(__ol_wi)
#define ol_grid_barrier() ol__grid_barrier(__ol_wi)
#else
#define ol_barrier()                                                           \
  _Generic(__ol_wi, ol_host_sync_item *: ol__sync_barrier,                     \
           const ol_host_phase_group *: ol__phase_barrier)(__ol_wi)
#define ol_grid_barrier()                                                      \
  _Generic(__ol_wi, ol_host_sync_item *: ol__sync_grid_barrier,                \
           const ol_host_phase_group *: ol__phase_grid_barrier)(__ol_wi)
#endif

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
