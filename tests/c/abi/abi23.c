// LLVM 23.1 ABI facts, written by hand (NOT generated from api/offload.json).
//
// Every expected value, type, offset and prototype below was typed from
// docs/liboffload-23-reference.md (sections 2-5, in the shared docs), and,
// for what 23.1 leaves unchanged, from LLVM's installed 22.1 header
// /usr/lib/llvm-22/include/offload/OffloadAPI.h (read, not included). So a
// wrong spec, and with it a wrong generated include/23.1/offload/OffloadAPI.h,
// fails here. Built against our 23.1 header as C17 and as C++17
// (tests/c/abi/run23.sh); most facts are compile-time (static assertions and
// assignments to function-pointer variables of exact types), the rest run
// against libLLVMOffload.so.23.1. C++ also tells an enum type from uint32_t,
// which C's type compatibility cannot.
#include <OffloadAPI.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
#include <type_traits>
#define SA(c, m) static_assert(c, m)
#define IS(expr, ...) (std::is_same<decltype(expr), __VA_ARGS__>::value)
#define LANG "C++17"
#else
#define SA(c, m) _Static_assert(c, m)
#define IS(expr, ...) _Generic((expr), __VA_ARGS__: 1, default: 0)
#define LANG "C17"
#endif

static int facts;                // compile-time facts (each one also a static assertion)
static int passed, failed;       // runtime checks

// ---- things 23.1 does not have (post-branch main, drafts, 22.1 leftovers) ----
// Declaring a file-scope variable of the same name fails to compile when the
// header declares that function, enumerator or type.
#define ABSENT(x) static int x;
#define ABSENT_LIST(X)                                                       \
  X(olMemAllocHost) X(olMemAllocAlignedHost) X(olCreateContext)              \
  X(olDestroyContext) X(olGetContextInfo) X(olGetContextInfoSize)            \
  X(olIterateSymbols) X(olPlatformRegisterRPCCallback) X(olMemcpyRect)       \
  X(olIteratePlatforms) X(ol_context_info_t) X(ol_symbol_iterate_cb_t)       \
  X(ol_platform_rpc_cb_t) X(ol_shut_down_params_t)                           \
  X(OL_SYMBOL_INFO_NAME) X(OL_ERRC_INVALID_CONTEXT)                          \
  X(OL_DEVICE_INFO_NUM_LANES) X(OL_DEVICE_INFO_DRIVER_ID)                    \
  X(OL_DEVICE_INFO_CONTEXT_GROUP_INDEX) X(OL_QUEUE_INFO_CONTEXT)             \
  X(OL_USM_MIGRATION_FLAG_HOST_TO_DEVICE) X(OL_USM_MIGRATION_FLAG_DEVICE_TO_HOST)
ABSENT_LIST(ABSENT)
#define ABSENT_USE(x) (void)x; ++facts;

// ---- the two new macros are initialisers, also of static objects ----
static const ol_init_args_t init_default = OL_INIT_ARGS_INIT;
static const ol_kernel_launch_prop_t prop_end = OL_KERNEL_LAUNCH_PROP_END;

#ifdef __cplusplus
constexpr ol_init_args_t init_constexpr = OL_INIT_ARGS_INIT;
static_assert(init_constexpr.Size == 24 && init_constexpr.NumPlatforms == 0 &&
                  init_constexpr.Platforms == nullptr,
              "OL_INIT_ARGS_INIT == {sizeof(ol_init_args_t), 0, NULL}");
constexpr ol_kernel_launch_prop_t end_constexpr = OL_KERNEL_LAUNCH_PROP_END;
static_assert(end_constexpr.type == OL_KERNEL_LAUNCH_PROP_TYPE_NONE && end_constexpr.data == nullptr,
              "OL_KERNEL_LAUNCH_PROP_END == {OL_KERNEL_LAUNCH_PROP_TYPE_NONE, NULL}");
#endif

// ---- helpers ----
#define EQ(e, v)                                   \
  do {                                             \
    SA((long long)(e) == (long long)(v), #e " == " #v); \
    ++facts;                                       \
  } while (0)
#define TYPE(expr, ...)                            \
  do {                                             \
    SA(IS(expr, __VA_ARGS__), #expr " has type " #__VA_ARGS__); \
    ++facts;                                       \
  } while (0)
// an enum: its typedef names the enum tag of the same name, it is 4 bytes,
// and FORCE_UINT32 is 0x7fffffff
#define ENUM(t, prefix)                                        \
  do {                                                         \
    TYPE((t)0, enum t);                                        \
    EQ(sizeof(t), 4);                                          \
    EQ(prefix##FORCE_UINT32, 0x7fffffff);                      \
  } while (0)
// a member at an offset with a type
#define MEMBER(s, m, off, ...)                                 \
  do {                                                         \
    EQ(offsetof(s, m), off);                                   \
    TYPE(((s *)0)->m, __VA_ARGS__);                            \
  } while (0)
// param-struct member number i (every member is a pointer: 8 bytes each)
#define P(s, i, m, ...) MEMBER(s, m, 8 * (i), __VA_ARGS__)
#define PSIZE(s, n) EQ(sizeof(s), 8 * (n))

static void check(int ok, const char *what) {
  if (ok) {
    ++passed;
  } else {
    ++failed;
    printf("FAIL %s\n", what);
  }
}
#define CHECK(c) check((c) ? 1 : 0, #c)

typedef void (*any_fn)(void);  // the generic function-pointer type
struct fn_entry { const char *name; any_fn fn; };
static struct fn_entry fns[80];
static int nfns;

// A function and its WithCodeLoc twin: both have exactly the prototype
// written here (static assertion) and are assigned to a variable of that
// exact function-pointer type (a compile error when the header differs).
#define FN(f, ...)                                                              \
  do {                                                                             \
    SA(IS(&f, ol_result_t (*)(__VA_ARGS__)), #f "(" #__VA_ARGS__ ")");       \
    SA(IS(&f##WithCodeLoc, ol_result_t (*)(__VA_ARGS__, ol_code_location_t *)), \
       #f "WithCodeLoc(" #__VA_ARGS__ ", ol_code_location_t *)");              \
    ol_result_t (*p)(__VA_ARGS__) = f;                                          \
    ol_result_t (*q)(__VA_ARGS__, ol_code_location_t *) = f##WithCodeLoc;       \
    fns[nfns].name = #f; fns[nfns++].fn = (any_fn)p;                            \
    fns[nfns].name = #f "WithCodeLoc"; fns[nfns++].fn = (any_fn)q;              \
    facts += 2;                                                                    \
  } while (0)

static void enums(void) {
  // ---- changed or new in 23.1 (reference section 3) ----
  ENUM(ol_device_info_t, OL_DEVICE_INFO_);
  EQ(OL_DEVICE_INFO_TYPE, 0);
  EQ(OL_DEVICE_INFO_PLATFORM, 1);
  EQ(OL_DEVICE_INFO_NAME, 2);
  EQ(OL_DEVICE_INFO_PRODUCT_NAME, 3);
  EQ(OL_DEVICE_INFO_UID, 4);
  EQ(OL_DEVICE_INFO_VENDOR, 5);
  EQ(OL_DEVICE_INFO_DRIVER_VERSION, 6);
  EQ(OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE, 7);
  EQ(OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION, 8);
  EQ(OL_DEVICE_INFO_MAX_WORK_SIZE, 9);
  EQ(OL_DEVICE_INFO_MAX_WORK_SIZE_PER_DIMENSION, 10);
  EQ(OL_DEVICE_INFO_VENDOR_ID, 11);
  EQ(OL_DEVICE_INFO_NUM_COMPUTE_UNITS, 12);
  EQ(OL_DEVICE_INFO_MAX_CLOCK_FREQUENCY, 13);
  EQ(OL_DEVICE_INFO_MEMORY_CLOCK_RATE, 14);
  EQ(OL_DEVICE_INFO_ADDRESS_BITS, 15);
  EQ(OL_DEVICE_INFO_MAX_MEM_ALLOC_SIZE, 16);
  EQ(OL_DEVICE_INFO_GLOBAL_MEM_SIZE, 17);
  EQ(OL_DEVICE_INFO_WORK_GROUP_LOCAL_MEM_SIZE, 18);
  EQ(OL_DEVICE_INFO_SINGLE_FP_CONFIG, 19);
  EQ(OL_DEVICE_INFO_DOUBLE_FP_CONFIG, 20);
  EQ(OL_DEVICE_INFO_HALF_FP_CONFIG, 21);
  EQ(OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_CHAR, 22);
  EQ(OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_SHORT, 23);
  EQ(OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_INT, 24);
  EQ(OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_LONG, 25);
  EQ(OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_FLOAT, 26);
  EQ(OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_DOUBLE, 27);
  EQ(OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_HALF, 28);
  EQ(OL_DEVICE_INFO_SINGLE_FP_SUPPORT, 29);
  EQ(OL_DEVICE_INFO_DOUBLE_FP_SUPPORT, 30);
  EQ(OL_DEVICE_INFO_HALF_FP_SUPPORT, 31);
  EQ(OL_DEVICE_INFO_COOPERATIVE_LAUNCH_SUPPORT, 32);
  EQ(OL_DEVICE_INFO_LAST, 33);

  ENUM(ol_event_flags_t, OL_EVENT_FLAGS_);
  EQ(OL_EVENT_FLAGS_NONE, 0);
  EQ(OL_EVENT_FLAGS_ENABLE_PROFILING, 1);
  EQ(OL_EVENT_FLAGS_LAST, 2);

  ENUM(ol_kernel_launch_prop_type_t, OL_KERNEL_LAUNCH_PROP_TYPE_);
  EQ(OL_KERNEL_LAUNCH_PROP_TYPE_NONE, 0);
  EQ(OL_KERNEL_LAUNCH_PROP_TYPE_IS_COOPERATIVE, 1);
  EQ(OL_KERNEL_LAUNCH_PROP_TYPE_LAST, 2);

  ENUM(ol_memory_register_flag_t, OL_MEMORY_REGISTER_FLAG_);
  EQ(OL_MEMORY_REGISTER_FLAG_LOCK_MEMORY, 1);
  EQ(OL_MEMORY_REGISTER_FLAG_UNLOCK_MEMORY, 2);
  EQ(OL_MEMORY_REGISTER_FLAG_LAST, 4);

  ENUM(ol_mem_migration_flag_t, OL_MEM_MIGRATION_FLAG_);
  EQ(OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE, 1);
  EQ(OL_MEM_MIGRATION_FLAG_DEVICE_TO_HOST, 2);
  EQ(OL_MEM_MIGRATION_FLAG_LAST, 4);

  // ---- unchanged from 22.1 (values copied by hand from LLVM's 22.1 header) ----
  ENUM(ol_errc_t, OL_ERRC_);
  EQ(OL_ERRC_SUCCESS, 0);
  EQ(OL_ERRC_UNKNOWN, 1);
  EQ(OL_ERRC_HOST_IO, 2);
  EQ(OL_ERRC_INVALID_BINARY, 3);
  EQ(OL_ERRC_INVALID_NULL_POINTER, 4);
  EQ(OL_ERRC_INVALID_ARGUMENT, 5);
  EQ(OL_ERRC_NOT_FOUND, 6);
  EQ(OL_ERRC_OUT_OF_RESOURCES, 7);
  EQ(OL_ERRC_INVALID_SIZE, 8);
  EQ(OL_ERRC_INVALID_ENUMERATION, 9);
  EQ(OL_ERRC_HOST_TOOL_NOT_FOUND, 10);
  EQ(OL_ERRC_INVALID_VALUE, 11);
  EQ(OL_ERRC_UNIMPLEMENTED, 12);
  EQ(OL_ERRC_UNSUPPORTED, 13);
  EQ(OL_ERRC_ASSEMBLE_FAILURE, 14);
  EQ(OL_ERRC_COMPILE_FAILURE, 15);
  EQ(OL_ERRC_LINK_FAILURE, 16);
  EQ(OL_ERRC_BACKEND_FAILURE, 17);
  EQ(OL_ERRC_UNINITIALIZED, 18);
  EQ(OL_ERRC_INVALID_NULL_HANDLE, 19);
  EQ(OL_ERRC_INVALID_PLATFORM, 20);
  EQ(OL_ERRC_INVALID_DEVICE, 21);
  EQ(OL_ERRC_INVALID_QUEUE, 22);
  EQ(OL_ERRC_INVALID_EVENT, 23);
  EQ(OL_ERRC_SYMBOL_KIND, 24);
  EQ(OL_ERRC_LAST, 25);

  ENUM(ol_alloc_type_t, OL_ALLOC_TYPE_);
  EQ(OL_ALLOC_TYPE_HOST, 0);
  EQ(OL_ALLOC_TYPE_DEVICE, 1);
  EQ(OL_ALLOC_TYPE_MANAGED, 2);
  EQ(OL_ALLOC_TYPE_LAST, 3);

  ENUM(ol_device_fp_capability_flag_t, OL_DEVICE_FP_CAPABILITY_FLAG_);
  EQ(OL_DEVICE_FP_CAPABILITY_FLAG_CORRECTLY_ROUNDED_DIVIDE_SQRT, 1);
  EQ(OL_DEVICE_FP_CAPABILITY_FLAG_ROUND_TO_NEAREST, 2);
  EQ(OL_DEVICE_FP_CAPABILITY_FLAG_ROUND_TO_ZERO, 4);
  EQ(OL_DEVICE_FP_CAPABILITY_FLAG_ROUND_TO_INF, 8);
  EQ(OL_DEVICE_FP_CAPABILITY_FLAG_INF_NAN, 16);
  EQ(OL_DEVICE_FP_CAPABILITY_FLAG_DENORM, 32);
  EQ(OL_DEVICE_FP_CAPABILITY_FLAG_FMA, 64);
  EQ(OL_DEVICE_FP_CAPABILITY_FLAG_SOFT_FLOAT, 128);
  EQ(OL_DEVICE_FP_CAPABILITY_FLAG_LAST, 256);

  ENUM(ol_device_type_t, OL_DEVICE_TYPE_);
  EQ(OL_DEVICE_TYPE_DEFAULT, 0);
  EQ(OL_DEVICE_TYPE_ALL, 1);
  EQ(OL_DEVICE_TYPE_GPU, 2);
  EQ(OL_DEVICE_TYPE_CPU, 3);
  EQ(OL_DEVICE_TYPE_HOST, 4);
  EQ(OL_DEVICE_TYPE_LAST, 5);

  ENUM(ol_event_info_t, OL_EVENT_INFO_);
  EQ(OL_EVENT_INFO_QUEUE, 0);
  EQ(OL_EVENT_INFO_IS_COMPLETE, 1);
  EQ(OL_EVENT_INFO_LAST, 2);

  ENUM(ol_mem_info_t, OL_MEM_INFO_);
  EQ(OL_MEM_INFO_DEVICE, 0);
  EQ(OL_MEM_INFO_BASE, 1);
  EQ(OL_MEM_INFO_SIZE, 2);
  EQ(OL_MEM_INFO_TYPE, 3);
  EQ(OL_MEM_INFO_LAST, 4);

  ENUM(ol_platform_backend_t, OL_PLATFORM_BACKEND_);
  EQ(OL_PLATFORM_BACKEND_UNKNOWN, 0);
  EQ(OL_PLATFORM_BACKEND_CUDA, 1);
  EQ(OL_PLATFORM_BACKEND_AMDGPU, 2);
  EQ(OL_PLATFORM_BACKEND_LEVEL_ZERO, 3);
  EQ(OL_PLATFORM_BACKEND_HOST, 4);
  EQ(OL_PLATFORM_BACKEND_LAST, 5);

  ENUM(ol_platform_info_t, OL_PLATFORM_INFO_);
  EQ(OL_PLATFORM_INFO_NAME, 0);
  EQ(OL_PLATFORM_INFO_VENDOR_NAME, 1);
  EQ(OL_PLATFORM_INFO_VERSION, 2);
  EQ(OL_PLATFORM_INFO_BACKEND, 3);
  EQ(OL_PLATFORM_INFO_LAST, 4);

  ENUM(ol_queue_info_t, OL_QUEUE_INFO_);
  EQ(OL_QUEUE_INFO_DEVICE, 0);
  EQ(OL_QUEUE_INFO_EMPTY, 1);
  EQ(OL_QUEUE_INFO_LAST, 2);

  ENUM(ol_symbol_info_t, OL_SYMBOL_INFO_);
  EQ(OL_SYMBOL_INFO_KIND, 0);
  EQ(OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, 1);
  EQ(OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, 2);
  EQ(OL_SYMBOL_INFO_LAST, 3);

  ENUM(ol_symbol_kind_t, OL_SYMBOL_KIND_);
  EQ(OL_SYMBOL_KIND_KERNEL, 0);
  EQ(OL_SYMBOL_KIND_GLOBAL_VARIABLE, 1);
  EQ(OL_SYMBOL_KIND_LAST, 2);

  // ---- macros ----
  EQ(OL_VERSION_MAJOR, 0);
  EQ(OL_VERSION_MINOR, 0);
  EQ(OL_VERSION_PATCH, 1);
}

static void types(void) {
  // handles (unchanged; ol_context_handle_t declared though unused in 23.1)
  TYPE((ol_context_handle_t)0, struct ol_context_impl_t *);
  TYPE((ol_device_handle_t)0, struct ol_device_impl_t *);
  TYPE((ol_event_handle_t)0, struct ol_event_impl_t *);
  TYPE((ol_platform_handle_t)0, struct ol_platform_impl_t *);
  TYPE((ol_program_handle_t)0, struct ol_program_impl_t *);
  TYPE((ol_queue_handle_t)0, struct ol_queue_impl_t *);
  TYPE((ol_symbol_handle_t)0, struct ol_symbol_impl_t *);
  // typedefs
  TYPE((ol_result_t)0, const struct ol_error_struct_t *);
  TYPE((ol_device_fp_capability_flags_t)0, uint32_t);
  TYPE((ol_memory_register_flags_t)0, uint32_t);
  TYPE((ol_mem_migration_flags_t)0, uint32_t);
  TYPE((ol_device_iterate_cb_t)0, bool (*)(ol_device_handle_t, void *));
  TYPE((ol_host_function_cb_t)0, void (*)(void *));

  // ---- structs (x86_64, reference section 4) ----
  EQ(sizeof(ol_init_args_t), 24);
  MEMBER(ol_init_args_t, Size, 0, size_t);
  MEMBER(ol_init_args_t, NumPlatforms, 8, uint32_t);
  MEMBER(ol_init_args_t, Platforms, 16, const ol_platform_backend_t *);

  EQ(sizeof(ol_kernel_launch_prop_t), 16);
  MEMBER(ol_kernel_launch_prop_t, type, 0, ol_kernel_launch_prop_type_t);
  MEMBER(ol_kernel_launch_prop_t, data, 8, void *);

  EQ(sizeof(ol_kernel_launch_size_args_t), 40);
  MEMBER(ol_kernel_launch_size_args_t, Dimensions, 0, size_t);
  MEMBER(ol_kernel_launch_size_args_t, NumGroups, 8, ol_dimensions_t);
  MEMBER(ol_kernel_launch_size_args_t, GroupSize, 20, ol_dimensions_t);
  MEMBER(ol_kernel_launch_size_args_t, DynSharedMemory, 32, size_t);

  EQ(sizeof(ol_code_location_t), 24);
  MEMBER(ol_code_location_t, FunctionName, 0, const char *);
  MEMBER(ol_code_location_t, SourceFile, 8, const char *);
  MEMBER(ol_code_location_t, LineNumber, 16, uint32_t);
  MEMBER(ol_code_location_t, ColumnNumber, 20, uint32_t);

  EQ(sizeof(ol_dimensions_t), 12);
  MEMBER(ol_dimensions_t, x, 0, uint32_t);
  MEMBER(ol_dimensions_t, y, 4, uint32_t);
  MEMBER(ol_dimensions_t, z, 8, uint32_t);

  EQ(sizeof(ol_error_struct_t), 16);
  MEMBER(ol_error_struct_t, Code, 0, ol_errc_t);
  MEMBER(ol_error_struct_t, Details, 8, const char *);
}

// Parameter structs: one per function with parameters, members p<Param> of
// type pointer-to-parameter-type, in parameter order (reference section 2).
static void params(void) {
  // new or changed in 23.1 (reference section 4)
  PSIZE(ol_init_params_t, 1);
  P(ol_init_params_t, 0, pInitArgs, const ol_init_args_t **);

  PSIZE(ol_create_event_params_t, 3);
  P(ol_create_event_params_t, 0, pQueue, ol_queue_handle_t *);
  P(ol_create_event_params_t, 1, pFlags, ol_event_flags_t *);
  P(ol_create_event_params_t, 2, pEvent, ol_event_handle_t **);

  PSIZE(ol_launch_kernel_params_t, 8);
  P(ol_launch_kernel_params_t, 0, pQueue, ol_queue_handle_t *);
  P(ol_launch_kernel_params_t, 1, pDevice, ol_device_handle_t *);
  P(ol_launch_kernel_params_t, 2, pKernel, ol_symbol_handle_t *);
  P(ol_launch_kernel_params_t, 3, pLaunchSizeArgs, const ol_kernel_launch_size_args_t **);
  P(ol_launch_kernel_params_t, 4, pProperties, const ol_kernel_launch_prop_t **);
  P(ol_launch_kernel_params_t, 5, pNumArgs, size_t *);
  P(ol_launch_kernel_params_t, 6, pArgPtrs, void ***);
  P(ol_launch_kernel_params_t, 7, pArgSizes, const size_t **);

  PSIZE(ol_mem_unregister_params_t, 3);
  P(ol_mem_unregister_params_t, 0, pDevice, ol_device_handle_t *);
  P(ol_mem_unregister_params_t, 1, pPtr, void **);
  P(ol_mem_unregister_params_t, 2, pFlags, ol_memory_register_flags_t *);

  PSIZE(ol_query_queue_params_t, 2);
  P(ol_query_queue_params_t, 0, pQueue, ol_queue_handle_t *);
  P(ol_query_queue_params_t, 1, pIsQueueWorkCompleted, bool **);

  PSIZE(ol_get_event_elapsed_time_params_t, 3);
  P(ol_get_event_elapsed_time_params_t, 0, pStartEvent, ol_event_handle_t *);
  P(ol_get_event_elapsed_time_params_t, 1, pEndEvent, ol_event_handle_t *);
  P(ol_get_event_elapsed_time_params_t, 2, pElapsedTime, float **);

  PSIZE(ol_get_kernel_max_cooperative_group_count_params_t, 4);
  P(ol_get_kernel_max_cooperative_group_count_params_t, 0, pDevice, ol_device_handle_t *);
  P(ol_get_kernel_max_cooperative_group_count_params_t, 1, pKernel, ol_symbol_handle_t *);
  P(ol_get_kernel_max_cooperative_group_count_params_t, 2, pLaunchSizeArgs, const ol_kernel_launch_size_args_t **);
  P(ol_get_kernel_max_cooperative_group_count_params_t, 3, pMaxGroupCount, uint32_t **);

  PSIZE(ol_mem_alloc_aligned_params_t, 5);
  P(ol_mem_alloc_aligned_params_t, 0, pDevice, ol_device_handle_t *);
  P(ol_mem_alloc_aligned_params_t, 1, pType, ol_alloc_type_t *);
  P(ol_mem_alloc_aligned_params_t, 2, pSize, size_t *);
  P(ol_mem_alloc_aligned_params_t, 3, pAlignment, size_t *);
  P(ol_mem_alloc_aligned_params_t, 4, pAllocationOut, void ***);

  PSIZE(ol_mem_prefetch_params_t, 5);
  P(ol_mem_prefetch_params_t, 0, pQueue, ol_queue_handle_t *);
  P(ol_mem_prefetch_params_t, 1, pCount, size_t *);
  P(ol_mem_prefetch_params_t, 2, pMems, const void ***);
  P(ol_mem_prefetch_params_t, 3, pSizes, const size_t **);
  P(ol_mem_prefetch_params_t, 4, pFlags, ol_mem_migration_flags_t *);

  // unchanged (as in LLVM's 22.1 header)
  PSIZE(ol_calculate_optimal_occupancy_params_t, 4);
  P(ol_calculate_optimal_occupancy_params_t, 0, pDevice, ol_device_handle_t *);
  P(ol_calculate_optimal_occupancy_params_t, 1, pKernel, ol_symbol_handle_t *);
  P(ol_calculate_optimal_occupancy_params_t, 2, pSharedMemory, size_t *);
  P(ol_calculate_optimal_occupancy_params_t, 3, pGroupSize, size_t **);

  PSIZE(ol_create_program_params_t, 4);
  P(ol_create_program_params_t, 0, pDevice, ol_device_handle_t *);
  P(ol_create_program_params_t, 1, pProgData, const void **);
  P(ol_create_program_params_t, 2, pProgDataSize, size_t *);
  P(ol_create_program_params_t, 3, pProgram, ol_program_handle_t **);

  PSIZE(ol_create_queue_params_t, 2);
  P(ol_create_queue_params_t, 0, pDevice, ol_device_handle_t *);
  P(ol_create_queue_params_t, 1, pQueue, ol_queue_handle_t **);

  PSIZE(ol_destroy_event_params_t, 1);
  P(ol_destroy_event_params_t, 0, pEvent, ol_event_handle_t *);
  PSIZE(ol_destroy_program_params_t, 1);
  P(ol_destroy_program_params_t, 0, pProgram, ol_program_handle_t *);
  PSIZE(ol_destroy_queue_params_t, 1);
  P(ol_destroy_queue_params_t, 0, pQueue, ol_queue_handle_t *);

  PSIZE(ol_get_device_info_params_t, 4);
  P(ol_get_device_info_params_t, 0, pDevice, ol_device_handle_t *);
  P(ol_get_device_info_params_t, 1, pPropName, ol_device_info_t *);
  P(ol_get_device_info_params_t, 2, pPropSize, size_t *);
  P(ol_get_device_info_params_t, 3, pPropValue, void **);
  PSIZE(ol_get_device_info_size_params_t, 3);
  P(ol_get_device_info_size_params_t, 0, pDevice, ol_device_handle_t *);
  P(ol_get_device_info_size_params_t, 1, pPropName, ol_device_info_t *);
  P(ol_get_device_info_size_params_t, 2, pPropSizeRet, size_t **);

  PSIZE(ol_get_event_info_params_t, 4);
  P(ol_get_event_info_params_t, 0, pEvent, ol_event_handle_t *);
  P(ol_get_event_info_params_t, 1, pPropName, ol_event_info_t *);
  P(ol_get_event_info_params_t, 2, pPropSize, size_t *);
  P(ol_get_event_info_params_t, 3, pPropValue, void **);
  PSIZE(ol_get_event_info_size_params_t, 3);
  P(ol_get_event_info_size_params_t, 0, pEvent, ol_event_handle_t *);
  P(ol_get_event_info_size_params_t, 1, pPropName, ol_event_info_t *);
  P(ol_get_event_info_size_params_t, 2, pPropSizeRet, size_t **);

  PSIZE(ol_get_mem_info_params_t, 4);
  P(ol_get_mem_info_params_t, 0, pPtr, const void **);
  P(ol_get_mem_info_params_t, 1, pPropName, ol_mem_info_t *);
  P(ol_get_mem_info_params_t, 2, pPropSize, size_t *);
  P(ol_get_mem_info_params_t, 3, pPropValue, void **);
  PSIZE(ol_get_mem_info_size_params_t, 3);
  P(ol_get_mem_info_size_params_t, 0, pPtr, const void **);
  P(ol_get_mem_info_size_params_t, 1, pPropName, ol_mem_info_t *);
  P(ol_get_mem_info_size_params_t, 2, pPropSizeRet, size_t **);

  PSIZE(ol_get_platform_info_params_t, 4);
  P(ol_get_platform_info_params_t, 0, pPlatform, ol_platform_handle_t *);
  P(ol_get_platform_info_params_t, 1, pPropName, ol_platform_info_t *);
  P(ol_get_platform_info_params_t, 2, pPropSize, size_t *);
  P(ol_get_platform_info_params_t, 3, pPropValue, void **);
  PSIZE(ol_get_platform_info_size_params_t, 3);
  P(ol_get_platform_info_size_params_t, 0, pPlatform, ol_platform_handle_t *);
  P(ol_get_platform_info_size_params_t, 1, pPropName, ol_platform_info_t *);
  P(ol_get_platform_info_size_params_t, 2, pPropSizeRet, size_t **);

  PSIZE(ol_get_queue_info_params_t, 4);
  P(ol_get_queue_info_params_t, 0, pQueue, ol_queue_handle_t *);
  P(ol_get_queue_info_params_t, 1, pPropName, ol_queue_info_t *);
  P(ol_get_queue_info_params_t, 2, pPropSize, size_t *);
  P(ol_get_queue_info_params_t, 3, pPropValue, void **);
  PSIZE(ol_get_queue_info_size_params_t, 3);
  P(ol_get_queue_info_size_params_t, 0, pQueue, ol_queue_handle_t *);
  P(ol_get_queue_info_size_params_t, 1, pPropName, ol_queue_info_t *);
  P(ol_get_queue_info_size_params_t, 2, pPropSizeRet, size_t **);

  PSIZE(ol_get_symbol_params_t, 4);
  P(ol_get_symbol_params_t, 0, pProgram, ol_program_handle_t *);
  P(ol_get_symbol_params_t, 1, pName, const char **);
  P(ol_get_symbol_params_t, 2, pKind, ol_symbol_kind_t *);
  P(ol_get_symbol_params_t, 3, pSymbol, ol_symbol_handle_t **);

  PSIZE(ol_get_symbol_info_params_t, 4);
  P(ol_get_symbol_info_params_t, 0, pSymbol, ol_symbol_handle_t *);
  P(ol_get_symbol_info_params_t, 1, pPropName, ol_symbol_info_t *);
  P(ol_get_symbol_info_params_t, 2, pPropSize, size_t *);
  P(ol_get_symbol_info_params_t, 3, pPropValue, void **);
  PSIZE(ol_get_symbol_info_size_params_t, 3);
  P(ol_get_symbol_info_size_params_t, 0, pSymbol, ol_symbol_handle_t *);
  P(ol_get_symbol_info_size_params_t, 1, pPropName, ol_symbol_info_t *);
  P(ol_get_symbol_info_size_params_t, 2, pPropSizeRet, size_t **);

  PSIZE(ol_is_valid_binary_params_t, 4);
  P(ol_is_valid_binary_params_t, 0, pDevice, ol_device_handle_t *);
  P(ol_is_valid_binary_params_t, 1, pProgData, const void **);
  P(ol_is_valid_binary_params_t, 2, pProgDataSize, size_t *);
  P(ol_is_valid_binary_params_t, 3, pValid, bool **);

  PSIZE(ol_iterate_devices_params_t, 2);
  P(ol_iterate_devices_params_t, 0, pCallback, ol_device_iterate_cb_t *);
  P(ol_iterate_devices_params_t, 1, pUserData, void **);

  PSIZE(ol_launch_host_function_params_t, 3);
  P(ol_launch_host_function_params_t, 0, pQueue, ol_queue_handle_t *);
  P(ol_launch_host_function_params_t, 1, pCallback, ol_host_function_cb_t *);
  P(ol_launch_host_function_params_t, 2, pUserData, void **);

  PSIZE(ol_mem_alloc_params_t, 4);
  P(ol_mem_alloc_params_t, 0, pDevice, ol_device_handle_t *);
  P(ol_mem_alloc_params_t, 1, pType, ol_alloc_type_t *);
  P(ol_mem_alloc_params_t, 2, pSize, size_t *);
  P(ol_mem_alloc_params_t, 3, pAllocationOut, void ***);

  PSIZE(ol_mem_fill_params_t, 5);
  P(ol_mem_fill_params_t, 0, pQueue, ol_queue_handle_t *);
  P(ol_mem_fill_params_t, 1, pPtr, void **);
  P(ol_mem_fill_params_t, 2, pPatternSize, size_t *);
  P(ol_mem_fill_params_t, 3, pPatternPtr, const void **);
  P(ol_mem_fill_params_t, 4, pFillSize, size_t *);

  PSIZE(ol_mem_free_params_t, 1);
  P(ol_mem_free_params_t, 0, pAddress, void **);

  PSIZE(ol_mem_register_params_t, 5);
  P(ol_mem_register_params_t, 0, pDevice, ol_device_handle_t *);
  P(ol_mem_register_params_t, 1, pPtr, void **);
  P(ol_mem_register_params_t, 2, pSize, size_t *);
  P(ol_mem_register_params_t, 3, pFlags, ol_memory_register_flags_t *);
  P(ol_mem_register_params_t, 4, pPinnedPtr, void ***);

  PSIZE(ol_memcpy_params_t, 6);
  P(ol_memcpy_params_t, 0, pQueue, ol_queue_handle_t *);
  P(ol_memcpy_params_t, 1, pDstPtr, void **);
  P(ol_memcpy_params_t, 2, pDstDevice, ol_device_handle_t *);
  P(ol_memcpy_params_t, 3, pSrcPtr, const void **);
  P(ol_memcpy_params_t, 4, pSrcDevice, ol_device_handle_t *);
  P(ol_memcpy_params_t, 5, pSize, size_t *);

  PSIZE(ol_sync_event_params_t, 1);
  P(ol_sync_event_params_t, 0, pEvent, ol_event_handle_t *);
  PSIZE(ol_sync_queue_params_t, 1);
  P(ol_sync_queue_params_t, 0, pQueue, ol_queue_handle_t *);

  PSIZE(ol_wait_events_params_t, 3);
  P(ol_wait_events_params_t, 0, pQueue, ol_queue_handle_t *);
  P(ol_wait_events_params_t, 1, pEvents, ol_event_handle_t **);
  P(ol_wait_events_params_t, 2, pNumEvents, size_t *);
}

// The 40 functions of 23.1 (reference section 2): 4 changed, 5 added, 31
// unchanged from 22.1.
static void prototypes(void) {
  // changed in 23.1
  FN(olInit, const ol_init_args_t *);
  FN(olCreateEvent, ol_queue_handle_t, ol_event_flags_t, ol_event_handle_t *);
  FN(olLaunchKernel, ol_queue_handle_t, ol_device_handle_t, ol_symbol_handle_t,
     const ol_kernel_launch_size_args_t *, const ol_kernel_launch_prop_t *, size_t, void **,
     const size_t *);
  FN(olMemUnregister, ol_device_handle_t, void *, ol_memory_register_flags_t);
  // added in 23.1
  FN(olQueryQueue, ol_queue_handle_t, bool *);
  FN(olGetEventElapsedTime, ol_event_handle_t, ol_event_handle_t, float *);
  FN(olGetKernelMaxCooperativeGroupCount, ol_device_handle_t, ol_symbol_handle_t,
     const ol_kernel_launch_size_args_t *, uint32_t *);
  FN(olMemAllocAligned, ol_device_handle_t, ol_alloc_type_t, size_t, size_t, void **);
  FN(olMemPrefetch, ol_queue_handle_t, size_t, const void **, const size_t *, ol_mem_migration_flags_t);
  // unchanged from 22.1
  {  // olShutDown has no parameters
    SA(IS(&olShutDown, ol_result_t (*)(void)), "olShutDown(void)");
    SA(IS(&olShutDownWithCodeLoc, ol_result_t (*)(ol_code_location_t *)), "olShutDownWithCodeLoc");
    ol_result_t (*p)(void) = olShutDown;
    ol_result_t (*q)(ol_code_location_t *) = olShutDownWithCodeLoc;
    fns[nfns].name = "olShutDown"; fns[nfns++].fn = (any_fn)p;
    fns[nfns].name = "olShutDownWithCodeLoc"; fns[nfns++].fn = (any_fn)q;
    facts += 2;
  }
  FN(olIterateDevices, ol_device_iterate_cb_t, void *);
  FN(olGetPlatformInfo, ol_platform_handle_t, ol_platform_info_t, size_t, void *);
  FN(olGetPlatformInfoSize, ol_platform_handle_t, ol_platform_info_t, size_t *);
  FN(olGetDeviceInfo, ol_device_handle_t, ol_device_info_t, size_t, void *);
  FN(olGetDeviceInfoSize, ol_device_handle_t, ol_device_info_t, size_t *);
  FN(olCreateQueue, ol_device_handle_t, ol_queue_handle_t *);
  FN(olDestroyQueue, ol_queue_handle_t);
  FN(olSyncQueue, ol_queue_handle_t);
  FN(olGetQueueInfo, ol_queue_handle_t, ol_queue_info_t, size_t, void *);
  FN(olGetQueueInfoSize, ol_queue_handle_t, ol_queue_info_t, size_t *);
  FN(olWaitEvents, ol_queue_handle_t, ol_event_handle_t *, size_t);
  FN(olDestroyEvent, ol_event_handle_t);
  FN(olSyncEvent, ol_event_handle_t);
  FN(olGetEventInfo, ol_event_handle_t, ol_event_info_t, size_t, void *);
  FN(olGetEventInfoSize, ol_event_handle_t, ol_event_info_t, size_t *);
  FN(olCreateProgram, ol_device_handle_t, const void *, size_t, ol_program_handle_t *);
  FN(olDestroyProgram, ol_program_handle_t);
  FN(olIsValidBinary, ol_device_handle_t, const void *, size_t, bool *);
  FN(olGetSymbol, ol_program_handle_t, const char *, ol_symbol_kind_t, ol_symbol_handle_t *);
  FN(olGetSymbolInfo, ol_symbol_handle_t, ol_symbol_info_t, size_t, void *);
  FN(olGetSymbolInfoSize, ol_symbol_handle_t, ol_symbol_info_t, size_t *);
  FN(olCalculateOptimalOccupancy, ol_device_handle_t, ol_symbol_handle_t, size_t, size_t *);
  FN(olLaunchHostFunction, ol_queue_handle_t, ol_host_function_cb_t, void *);
  FN(olMemAlloc, ol_device_handle_t, ol_alloc_type_t, size_t, void **);
  FN(olMemFree, void *);
  FN(olMemcpy, ol_queue_handle_t, void *, ol_device_handle_t, const void *, ol_device_handle_t, size_t);
  FN(olMemFill, ol_queue_handle_t, void *, size_t, const void *, size_t);
  FN(olMemRegister, ol_device_handle_t, void *, size_t, ol_memory_register_flags_t, void **);
  FN(olGetMemInfo, const void *, ol_mem_info_t, size_t, void *);
  FN(olGetMemInfoSize, const void *, ol_mem_info_t, size_t *);
}

static ol_errc_t code(ol_result_t r) { return r == OL_SUCCESS ? OL_ERRC_SUCCESS : r->Code; }

static bool first_device(ol_device_handle_t d, void *u) {
  *(ol_device_handle_t *)u = d;
  return false;
}

// A few calls through the 23.1 prototypes on the library (the host device):
// the new parameters arrive where the reference puts them.
static void runtime(void) {
  // the macros' values
  CHECK(OL_SUCCESS == NULL);
  CHECK(init_default.Size == sizeof(ol_init_args_t) && init_default.Size == 24);
  CHECK(init_default.NumPlatforms == 0 && init_default.Platforms == NULL);
  CHECK(prop_end.type == OL_KERNEL_LAUNCH_PROP_TYPE_NONE && prop_end.data == NULL);
  bool coop = true;
  ol_kernel_launch_prop_t props[] = {{OL_KERNEL_LAUNCH_PROP_TYPE_IS_COOPERATIVE, &coop},
                                     OL_KERNEL_LAUNCH_PROP_END};
  CHECK(sizeof(props) == 32 && props[1].type == OL_KERNEL_LAUNCH_PROP_TYPE_NONE);
  // every function and twin was taken (and, linked, resolved)
  CHECK(nfns == 80);
  int nonnull = 0;
  for (int i = 0; i < nfns; i++) nonnull += fns[i].fn != NULL;
  CHECK(nonnull == 80);

  // olInit's argument checks (reference 2.1), on the first olInit only
  ol_init_args_t args = OL_INIT_ARGS_INIT;
  args.Size = 8;
  CHECK(code(olInit(&args)) == OL_ERRC_INVALID_SIZE);
  args.Size = sizeof args;
  args.NumPlatforms = 1;
  CHECK(code(olInit(&args)) == OL_ERRC_INVALID_NULL_POINTER);
  args.NumPlatforms = 0;
  CHECK(olInit(&args) == OL_SUCCESS);
  CHECK(olInit(NULL) == OL_SUCCESS);  // NULL: the default, all platforms
  ol_device_handle_t dev = NULL;
  CHECK(olIterateDevices(first_device, &dev) == OL_SUCCESS && dev != NULL);
  // 29..32 are 1-byte bools (every device of this library answers them)
  for (int p = OL_DEVICE_INFO_SINGLE_FP_SUPPORT; p <= OL_DEVICE_INFO_COOPERATIVE_LAUNCH_SUPPORT; p++) {
    size_t n = 0;
    ol_result_t r = olGetDeviceInfoSize(dev, (ol_device_info_t)p, &n);
    char what[96];
    snprintf(what, sizeof what, "device info %d: olGetDeviceInfoSize == 1 (bool), olGetDeviceInfo answers", p);
    bool b = false;
    check(r == OL_SUCCESS && n == 1 && olGetDeviceInfo(dev, (ol_device_info_t)p, 1, &b) == OL_SUCCESS, what);
  }
  size_t lastsize = 0;
  CHECK(code(olGetDeviceInfoSize(dev, OL_DEVICE_INFO_LAST, &lastsize)) == OL_ERRC_INVALID_ENUMERATION);

  ol_queue_handle_t q = NULL;
  CHECK(olCreateQueue(dev, &q) == OL_SUCCESS);
  ol_event_handle_t ev = NULL;
  CHECK(code(olCreateEvent(NULL, OL_EVENT_FLAGS_NONE, &ev)) == OL_ERRC_INVALID_NULL_HANDLE);
  CHECK(code(olCreateEvent(q, OL_EVENT_FLAGS_NONE, NULL)) == OL_ERRC_INVALID_NULL_POINTER);
  CHECK(olCreateEvent(q, OL_EVENT_FLAGS_NONE, &ev) == OL_SUCCESS && ev != NULL);
  CHECK(olSyncEvent(ev) == OL_SUCCESS && olDestroyEvent(ev) == OL_SUCCESS);
  // profiling events: elapsed time in milliseconds between two of them
  ol_event_handle_t e0 = NULL, e1 = NULL;
  CHECK(olCreateEvent(q, OL_EVENT_FLAGS_ENABLE_PROFILING, &e0) == OL_SUCCESS);
  CHECK(olCreateEvent(q, OL_EVENT_FLAGS_ENABLE_PROFILING, &e1) == OL_SUCCESS);
  float ms = -1;
  CHECK(olSyncEvent(e1) == OL_SUCCESS && olGetEventElapsedTime(e0, e1, &ms) == OL_SUCCESS && ms >= 0);
  CHECK(code(olGetEventElapsedTime(e0, e1, NULL)) == OL_ERRC_INVALID_NULL_POINTER);
  CHECK(olDestroyEvent(e0) == OL_SUCCESS && olDestroyEvent(e1) == OL_SUCCESS);
  CHECK(code(olGetEventElapsedTime(NULL, NULL, NULL)) == OL_ERRC_INVALID_NULL_HANDLE);
  CHECK(olQueryQueue(q, NULL) == OL_SUCCESS);  // IsQueueWorkCompleted is optional
  bool done = false;
  CHECK(olQueryQueue(q, &done) == OL_SUCCESS && done);

  void *mem = NULL;
  CHECK(code(olMemAllocAligned(dev, OL_ALLOC_TYPE_HOST, 0, 64, &mem)) == OL_ERRC_INVALID_SIZE);
  CHECK(code(olMemAllocAligned(dev, OL_ALLOC_TYPE_HOST, 64, 0, &mem)) == OL_ERRC_INVALID_ARGUMENT);
  CHECK(code(olMemAllocAligned(dev, OL_ALLOC_TYPE_HOST, 64, 48, &mem)) == OL_ERRC_INVALID_ARGUMENT);
  CHECK(olMemAllocAligned(dev, OL_ALLOC_TYPE_HOST, 100, 256, &mem) == OL_SUCCESS && mem != NULL &&
        (uintptr_t)mem % 256 == 0);  // HOST is accepted in 23.1
  const void *mems[1] = {mem};
  size_t sizes[1] = {100};
  CHECK(olMemPrefetch(q, 0, NULL, NULL, 0) == OL_SUCCESS);  // Count 0: nothing to do
  CHECK(code(olMemPrefetch(q, 1, NULL, sizes, OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE)) == OL_ERRC_INVALID_NULL_POINTER);
  CHECK(code(olMemPrefetch(q, 1, mems, NULL, OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE)) == OL_ERRC_INVALID_NULL_POINTER);
  CHECK(code(olMemPrefetch(q, 1, mems, sizes, OL_MEM_MIGRATION_FLAG_LAST)) == OL_ERRC_INVALID_ENUMERATION);
  CHECK(olMemPrefetch(q, 1, mems, sizes, OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE) == OL_SUCCESS);
  CHECK(olSyncQueue(q) == OL_SUCCESS);
  if (mem) CHECK(olMemFree(mem) == OL_SUCCESS);
  CHECK(code(olMemUnregister(dev, NULL, OL_MEMORY_REGISTER_FLAG_UNLOCK_MEMORY)) == OL_ERRC_INVALID_NULL_POINTER);
  // olLaunchKernel's generated checks (reference 2.1): ArgPtrs and ArgSizes both or neither
  ol_kernel_launch_size_args_t ls;
  memset(&ls, 0, sizeof ls);
  ls.Dimensions = 1;
  ls.NumGroups.x = ls.NumGroups.y = ls.NumGroups.z = 1;
  ls.GroupSize.x = ls.GroupSize.y = ls.GroupSize.z = 1;
  CHECK(code(olLaunchKernel(q, dev, NULL, &ls, props, 0, NULL, NULL)) == OL_ERRC_INVALID_NULL_HANDLE);
  CHECK(olDestroyQueue(q) == OL_SUCCESS);
  CHECK(olShutDown() == OL_SUCCESS && olShutDown() == OL_SUCCESS);
}

int main(void) {
  ABSENT_LIST(ABSENT_USE)
  enums();
  types();
  params();
  prototypes();
  runtime();
  printf("abi23.c (%s): %d facts held at compile time; runtime %d passed, %d failed\n", LANG, facts,
         passed, failed);
  return failed == 0 ? 0 : 1;
}
