// demo: lists every platform and device with its key properties,
// round-trips a buffer through memory of the host device with olMemcpy, and
// runs SAXPY (examples/saxpy_kernel.c) on every device that can load it,
// checking the result and printing the bandwidth achieved.
//
// One source, two builds (make demo builds and runs both):
//   22.1: cc -std=c17 -I include/offload examples/demo.c -L build/lib -l:libLLVMOffload.so.22.1
//   23.1: cc -std=c17 -I include/23.1/offload examples/demo.c -L build/lib -l:libLLVMOffload.so.23.1
// With the 23.1 header (it defines OL_INIT_ARGS_INIT) the demo uses what
// LLVM 23.1 changed and added: olInit(InitArgs), olLaunchKernel with an
// argument array (NumArgs = 1: the kernel's argument struct, by value, as
// docs/kernels.md says), olQueryQueue, and profiling events
// (OL_EVENT_FLAGS_ENABLE_PROFILING) around the timed launches, whose device
// time olGetEventElapsedTime gives. A device that records no profiling
// events says so instead of a time.
#define _GNU_SOURCE // dladdr: which library file was loaded
#include <OffloadAPI.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                            \
  do {                                                                         \
    ol_result_t r_ = (call);                                                   \
    if (r_ != OL_SUCCESS) {                                                    \
      fprintf(stderr, "%s failed: code %d: %s\n", #call, (int)r_->Code,        \
              r_->Details ? r_->Details : "");                                 \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#ifdef OL_INIT_ARGS_INIT
#define RELEASE "23.1"
#else
#define RELEASE "22.1"
#endif

typedef struct {
  int count;
  ol_device_handle_t host;
  ol_device_handle_t all[64];
} demo_state;

static const char *backend_name(ol_platform_backend_t b) {
  switch (b) {
  case OL_PLATFORM_BACKEND_CUDA: return "CUDA";
  case OL_PLATFORM_BACKEND_AMDGPU: return "AMDGPU";
  case OL_PLATFORM_BACKEND_LEVEL_ZERO: return "Level Zero";
  case OL_PLATFORM_BACKEND_HOST: return "host";
  default: return "unknown";
  }
}

static void print_string(ol_device_handle_t d, ol_device_info_t prop, const char *label) {
  size_t size = 0;
  CHECK(olGetDeviceInfoSize(d, prop, &size));
  char *s = malloc(size);
  CHECK(olGetDeviceInfo(d, prop, size, s));
  printf("    %-22s %s\n", label, s);
  free(s);
}

static bool show_device(ol_device_handle_t d, void *user) {
  demo_state *st = user;
  ol_platform_handle_t p;
  ol_platform_backend_t backend;
  char pname[64];
  CHECK(olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, sizeof p, &p));
  CHECK(olGetPlatformInfo(p, OL_PLATFORM_INFO_NAME, sizeof pname, pname));
  CHECK(olGetPlatformInfo(p, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend));
  printf("device %d on platform \"%s\" (backend %s)\n", st->count++, pname, backend_name(backend));
  print_string(d, OL_DEVICE_INFO_NAME, "name");
  print_string(d, OL_DEVICE_INFO_VENDOR, "vendor");
  print_string(d, OL_DEVICE_INFO_DRIVER_VERSION, "driver");
  uint32_t units, clock, wg, vf;
  uint64_t mem, local;
  ol_dimensions_t dims;
  CHECK(olGetDeviceInfo(d, OL_DEVICE_INFO_NUM_COMPUTE_UNITS, sizeof units, &units));
  CHECK(olGetDeviceInfo(d, OL_DEVICE_INFO_MAX_CLOCK_FREQUENCY, sizeof clock, &clock));
  CHECK(olGetDeviceInfo(d, OL_DEVICE_INFO_GLOBAL_MEM_SIZE, sizeof mem, &mem));
  CHECK(olGetDeviceInfo(d, OL_DEVICE_INFO_WORK_GROUP_LOCAL_MEM_SIZE, sizeof local, &local));
  CHECK(olGetDeviceInfo(d, OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE, sizeof wg, &wg));
  CHECK(olGetDeviceInfo(d, OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION, sizeof dims, &dims));
  CHECK(olGetDeviceInfo(d, OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_FLOAT, sizeof vf, &vf));
  printf("    %-22s %u\n", "compute units", units);
  printf("    %-22s %u MHz\n", "max clock", clock);
  printf("    %-22s %.1f GiB\n", "global memory", mem / (1024.0 * 1024 * 1024));
  printf("    %-22s %llu KiB\n", "group-local memory", (unsigned long long)(local / 1024));
  printf("    %-22s %u (%u x %u x %u)\n", "max work-group size", wg, dims.x, dims.y, dims.z);
  printf("    %-22s %u\n", "float vector width", vf);
  ol_device_type_t type;
  CHECK(olGetDeviceInfo(d, OL_DEVICE_INFO_TYPE, sizeof type, &type));
  if (type == OL_DEVICE_TYPE_HOST) st->host = d;
  if (st->count <= 64) st->all[st->count - 1] = d;
  return true;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  void *buf = malloc(n > 0 ? n : 1);
  *size = fread(buf, 1, n, f);
  fclose(f);
  return buf;
}

struct saxpy_args {
  float a;
  const float *x;
  float *y;
  uint32_t n;
};

// Runs SAXPY over n floats on dev; returns 0 when the device cannot load the
// image (e.g. a GPU given a host image), 1 on success, exits on failure.
static int run_saxpy(ol_device_handle_t dev, ol_device_handle_t host, const void *image, size_t image_size) {
  bool valid = false;
  CHECK(olIsValidBinary(dev, image, image_size, &valid));
  if (!valid) return 0;
  char name[256];
  CHECK(olGetDeviceInfo(dev, OL_DEVICE_INFO_NAME, sizeof name, name));
  ol_program_handle_t prog;
  ol_symbol_handle_t kernel;
  CHECK(olCreateProgram(dev, image, image_size, &prog));
  CHECK(olGetSymbol(prog, "saxpy", OL_SYMBOL_KIND_KERNEL, &kernel));
  const uint32_t n = 1u << 24, group = 256;
  float *hx = malloc(n * sizeof *hx), *hy = malloc(n * sizeof *hy);
  for (uint32_t i = 0; i < n; i++) hx[i] = (float)(i % 1000), hy[i] = 1.0f;
  float *x, *y;
  CHECK(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, n * sizeof(float), (void **)&x));
  CHECK(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, n * sizeof(float), (void **)&y));
  CHECK(olMemcpy(NULL, x, dev, hx, host, n * sizeof(float)));
  CHECK(olMemcpy(NULL, y, dev, hy, host, n * sizeof(float)));
  ol_queue_handle_t q;
  CHECK(olCreateQueue(dev, &q));
  struct saxpy_args args = {2.0f, x, y, n};
  ol_kernel_launch_size_args_t size = {1, {n / group, 1, 1}, {group, 1, 1}, 0};
  const int reps = 10;
#ifdef OL_INIT_ARGS_INIT
  // 23.1: the arguments as an array of pointers and sizes; the kernel's one
  // argument is its struct
  void *arg_ptrs[1] = {&args};
  size_t arg_sizes[1] = {sizeof args};
#define LAUNCH() olLaunchKernel(q, dev, kernel, &size, NULL, 1, arg_ptrs, arg_sizes)
#else
#define LAUNCH() olLaunchKernel(q, dev, kernel, &args, sizeof args, &size)
#endif
  CHECK(LAUNCH()); // warm up: y = 2x + 1
  CHECK(olSyncQueue(q));
#ifdef OL_INIT_ARGS_INIT
  // profiling events around the timed launches (a device that records no
  // times answers OL_ERRC_UNSUPPORTED)
  ol_event_handle_t start = NULL, end = NULL;
  ol_result_t prof = olCreateEvent(q, OL_EVENT_FLAGS_ENABLE_PROFILING, &start);
  if (prof != OL_SUCCESS && prof->Code != OL_ERRC_UNSUPPORTED) CHECK(prof);
#endif
  double t0 = now();
  for (int r = 0; r < reps; r++) CHECK(LAUNCH());
#ifdef OL_INIT_ARGS_INIT
  if (prof == OL_SUCCESS) CHECK(olCreateEvent(q, OL_EVENT_FLAGS_ENABLE_PROFILING, &end));
#endif
  CHECK(olSyncQueue(q));
  double secs = now() - t0;
#ifdef OL_INIT_ARGS_INIT
  bool done = false;
  CHECK(olQueryQueue(q, &done));
  if (!done) {
    fprintf(stderr, "olQueryQueue: work left after olSyncQueue\n");
    exit(1);
  }
#endif
#undef LAUNCH
  CHECK(olMemcpy(NULL, hy, host, y, dev, n * sizeof(float)));
  uint32_t bad = 0;
  for (uint32_t i = 0; i < n; i++)
    if (hy[i] != 2.0f * (reps + 1) * (float)(i % 1000) + 1.0f) bad++;
  printf("SAXPY on %s: %u floats x %d launches, %s, %.1f GB/s (wall clock)\n", name, n, reps,
         bad ? "WRONG RESULT" : "result checked", 12.0 * n * reps / secs / 1e9);
#ifdef OL_INIT_ARGS_INIT
  if (prof == OL_SUCCESS) {
    float ms = 0;
    CHECK(olGetEventElapsedTime(start, end, &ms));
    printf("  kernel time of the %d launches: %.3f ms (olGetEventElapsedTime), %.1f GB/s\n", reps,
           ms, 12.0 * n * reps / (ms * 1e-3) / 1e9);
    CHECK(olDestroyEvent(start));
    CHECK(olDestroyEvent(end));
  } else {
    printf("  kernel time: not measured: olCreateEvent(OL_EVENT_FLAGS_ENABLE_PROFILING) returned "
           "OL_ERRC_UNSUPPORTED (%s)\n",
           prof->Details ? prof->Details : "");
  }
#endif
  CHECK(olDestroyQueue(q));
  CHECK(olMemFree(x));
  CHECK(olMemFree(y));
  CHECK(olDestroyProgram(prog));
  free(hx);
  free(hy);
  if (bad) exit(1);
  return 1;
}

static void usage(FILE *f, const char *prog) {
  fprintf(f,
          "usage: %s [IMAGE...]\n"
          "Lists every platform and device liboffload-go finds, round-trips a buffer\n"
          "through host-device memory with olMemcpy, and runs SAXPY on every device\n"
          "that can load one of the IMAGEs (tried in order: a host .so, PTX, an AMDGPU\n"
          "code object, built from examples/saxpy_kernel.c), checking the result and\n"
          "printing the bandwidth. Without IMAGEs, SAXPY is not run. Built with the\n"
          "23.1 header it launches with an argument array and measures the kernel\n"
          "time with profiling events, where the device records them.\n"
          "Environment: OFFLOAD_PLUGINS, OFFLOAD_TRACE and the others of\n"
          "docs/environment.md. Exit status: 0 when every check passed.\n",
          prog);
}

int main(int argc, char **argv) {
  for (int a = 1; a < argc; a++)
    if (!strcmp(argv[a], "-h") || !strcmp(argv[a], "--help")) {
      usage(stdout, argv[0]);
      return 0;
    } else if (argv[a][0] == '-') {
      fprintf(stderr, "%s: unknown option %s\n", argv[0], argv[a]);
      usage(stderr, argv[0]);
      return 2;
    }
  Dl_info lib;
  printf("liboffload-go demo, LLVM " RELEASE " ABI: %s\n",
         dladdr((void *)olInit, &lib) && lib.dli_fname ? lib.dli_fname : "libLLVMOffload.so." RELEASE);
#ifdef OL_INIT_ARGS_INIT
  ol_init_args_t init_args = OL_INIT_ARGS_INIT; // every platform
  CHECK(olInit(&init_args));
#else
  CHECK(olInit());
#endif
  demo_state st = {0};
  CHECK(olIterateDevices(show_device, &st));
  if (st.host == NULL) {
    fprintf(stderr, "no host device\n");
    return 1;
  }

  enum { N = 1 << 20 };
  unsigned char *src = malloc(N), *back = calloc(1, N);
  for (size_t i = 0; i < N; i++) src[i] = (unsigned char)(i * 7 + 3);
  void *dev = NULL;
  CHECK(olMemAlloc(st.host, OL_ALLOC_TYPE_DEVICE, N, &dev));
  CHECK(olMemcpy(NULL, dev, st.host, src, st.host, N));
  CHECK(olMemcpy(NULL, back, st.host, dev, st.host, N));
  int same = memcmp(src, back, N) == 0;
  printf("round trip of %d bytes through host device memory: %s\n", N, same ? "OK" : "MISMATCH");
  CHECK(olMemFree(dev));
  free(src);
  free(back);

  // SAXPY: the host image is argv[1]; GPU images, if given, follow.
  for (int d = 0; d < st.count && d < 64; d++) {
    int ran = 0;
    for (int a = 1; a < argc && !ran; a++) {
      size_t size = 0;
      void *image = read_file(argv[a], &size);
      if (!image) {
        fprintf(stderr, "cannot read %s\n", argv[a]);
        return 1;
      }
      ran = run_saxpy(st.all[d], st.host, image, size);
      free(image);
    }
    if (!ran && argc > 1) printf("SAXPY skipped on device %d: no image it can load\n", d);
  }
  CHECK(olShutDown());
  return same ? 0 : 1;
}
