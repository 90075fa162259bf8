// A program that uses liboffload-go the way a user's project would: built
// against the installed headers and library (CMake package, pkg-config or
// FetchContent). It loads the kernel image given as argv[1] on the host
// device, launches it over N elements, reads the result back and compares it
// with values computed here. Prints one line and exits 0 only if every
// element matches.
//
// The same source builds against either release's headers: with the 23.1
// header (which defines OL_INIT_ARGS_INIT) it calls 23.1's olInit(InitArgs),
// launches with an argument array (NumArgs, ArgPtrs, ArgSizes) and polls the
// queue with olQueryQueue, a 23.1-only function; the line it prints names
// the release it was built for.
// SPDX-License-Identifier: Apache-2.0
#include <offload.h>            // -I<includedir>
#include <offload/OffloadAPI.h> // the same header, by its LLVM path
#include <OffloadAPI.h>         // and as LLVM's users include it (-I<includedir>/offload)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CONSUMER
#define CONSUMER "consumer"
#endif

#ifdef OL_INIT_ARGS_INIT
#define RELEASE "23.1"
#else
#define RELEASE "22.1"
#endif

#define CHECK(call)                                                            \
  do {                                                                         \
    ol_result_t r_ = (call);                                                   \
    if (r_ != OL_SUCCESS) {                                                    \
      fprintf(stderr, CONSUMER ": %s failed: code %d: %s\n", #call,            \
              (int)r_->Code, r_->Details ? r_->Details : "");                  \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

struct scale_args {
  const uint32_t *in;
  uint32_t *out;
  uint32_t scale;
  uint32_t n;
};

static bool find_host(ol_device_handle_t dev, void *user) {
  ol_platform_handle_t platform;
  ol_platform_backend_t backend;
  CHECK(olGetDeviceInfo(dev, OL_DEVICE_INFO_PLATFORM, sizeof platform, &platform));
  CHECK(olGetPlatformInfo(platform, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend));
  if (backend != OL_PLATFORM_BACKEND_HOST) return true;
  *(ol_device_handle_t *)user = dev;
  return false;
}

static void *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  rewind(f);
  void *buf = len > 0 ? malloc((size_t)len) : NULL;
  if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *size = (size_t)len;
  return buf;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s KERNEL.so\n", argv[0]);
    return 2;
  }
  size_t image_size = 0;
  void *image = read_file(argv[1], &image_size);
  if (!image) {
    fprintf(stderr, CONSUMER ": cannot read %s\n", argv[1]);
    return 1;
  }

#ifdef OL_INIT_ARGS_INIT
  ol_init_args_t init_args = OL_INIT_ARGS_INIT;
  CHECK(olInit(&init_args));
#else
  CHECK(olInit());
#endif
  ol_device_handle_t host = NULL;
  CHECK(olIterateDevices(find_host, &host));
  if (!host) {
    fprintf(stderr, CONSUMER ": no host device\n");
    return 1;
  }
  ol_program_handle_t program;
  ol_symbol_handle_t kernel;
  CHECK(olCreateProgram(host, image, image_size, &program));
  CHECK(olGetSymbol(program, "scale_add_index", OL_SYMBOL_KIND_KERNEL, &kernel));

  enum { N = 5000, GROUP = 64 };
  const uint32_t scale = 7;
  uint32_t *in, *out;
  CHECK(olMemAlloc(host, OL_ALLOC_TYPE_HOST, N * sizeof *in, (void **)&in));
  CHECK(olMemAlloc(host, OL_ALLOC_TYPE_HOST, N * sizeof *out, (void **)&out));
  for (uint32_t i = 0; i < N; i++) in[i] = 3 * i + 1, out[i] = 0xdeadbeef;

  ol_queue_handle_t queue;
  CHECK(olCreateQueue(host, &queue));
  struct scale_args args = {in, out, scale, N};
  ol_kernel_launch_size_args_t size = {1, {(N + GROUP - 1) / GROUP, 1, 1}, {GROUP, 1, 1}, 0};
#ifdef OL_INIT_ARGS_INIT
  // the argument struct as the kernel's one argument
  void *arg_ptrs[1] = {&args};
  size_t arg_sizes[1] = {sizeof args};
  CHECK(olLaunchKernel(queue, host, kernel, &size, NULL, 1, arg_ptrs, arg_sizes));
  CHECK(olSyncQueue(queue));
  bool done = false;
  CHECK(olQueryQueue(queue, &done));
  if (!done) {
    fprintf(stderr, CONSUMER ": olQueryQueue says work is left after olSyncQueue\n");
    return 1;
  }
#else
  CHECK(olLaunchKernel(queue, host, kernel, &args, sizeof args, &size));
  CHECK(olSyncQueue(queue));
#endif

  uint32_t bad = 0;
  for (uint32_t i = 0; i < N; i++) {
    uint32_t want = (3 * i + 1) * scale + i;
    if (out[i] != want && bad++ < 5)
      fprintf(stderr, CONSUMER ": out[%u] = %u, want %u\n", i, out[i], want);
  }
  CHECK(olDestroyQueue(queue));
  CHECK(olMemFree(in));
  CHECK(olMemFree(out));
  CHECK(olDestroyProgram(program));
  CHECK(olShutDown());
  free(image);
  if (bad) {
    printf(CONSUMER ": %u of %u elements wrong\n", bad, (unsigned)N);
    return 1;
  }
  printf(CONSUMER ": release " RELEASE " API: kernel ran on the host device, %u elements checked\n", (unsigned)N);
  return 0;
}
