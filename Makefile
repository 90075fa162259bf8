# liboffload-go: build, generate, test, demo, benchmark.
GO      ?= go
CC      ?= gcc
BUILD   := build
LIBDIR  := $(BUILD)/lib
# Two libraries from one source: LLVM 22.1's ABI (the default build) and
# LLVM 23.1's (the ol23 build tag); libLLVMOffload.so names the newest.
LIB     := $(LIBDIR)/libLLVMOffload.so.22.1
LIB23   := $(LIBDIR)/libLLVMOffload.so.23.1
LIBS    := $(LIB) $(LIB23)
# the proxy of the remote platform (docs/remote.md)
PROXY   := $(BUILD)/bin/offload-proxy
MAP     := $(CURDIR)/cmd/liboffload/exports.map
MAP23   := $(CURDIR)/cmd/liboffload/exports_23_1.map
SOURCES := $(shell find api cmd impl internal plugins -type f \( -name '*.go' -o -name '*.c' -o -name '*.h' -o -name '*.json' -o -name '*.map' \)) go.mod go.sum $(shell find include -name '*.h')
# lld, like LLVM's own build: GNU ld would also export an absolute VERS1.0 symbol
LDFLAGS := -extldflags '-fuse-ld=lld -B/usr/lib/llvm-22/bin -Wl,--version-script=$(MAP) -Wl,-soname,libLLVMOffload.so.22.1'
LDFLAGS23 := -extldflags '-fuse-ld=lld -B/usr/lib/llvm-22/bin -Wl,--version-script=$(MAP23) -Wl,-soname,libLLVMOffload.so.23.1'

.PHONY: all lib generate check-generated demo test check deps-check test-static test-go test-go-race test-go-ol23 test-fuzz test-abi test-c test-conformance test-lifecycle test-images test-remote test-device-22 test-device-23 test-python test-cgocheck2 sanitize fuzz bench bench-mpi setup clean install uninstall test-install gpu-check

all: lib

lib: $(LIBS) $(PROXY)

$(LIB): $(SOURCES) | deps-check
	@mkdir -p $(LIBDIR)
	$(GO) build -buildmode=c-shared -trimpath -ldflags "$(LDFLAGS)" -o $@ ./cmd/liboffload
	@rm -f $(LIBDIR)/libLLVMOffload.so.22.h

$(LIB23): $(SOURCES) | deps-check
	@mkdir -p $(LIBDIR)
	$(GO) build -tags ol23 -buildmode=c-shared -trimpath -ldflags "$(LDFLAGS23)" -o $@ ./cmd/liboffload
	@rm -f $(LIBDIR)/libLLVMOffload.so.23.h
	@ln -sf libLLVMOffload.so.23.1 $(LIBDIR)/libLLVMOffload.so
	@ln -sf libLLVMOffload.so.23.1 $(LIBDIR)/liboffload.so

$(PROXY): $(SOURCES) | deps-check
	@mkdir -p $(BUILD)/bin
	$(GO) build -trimpath -o $@ ./cmd/offload-proxy

generate:
	$(GO) run ./api/gen

check-generated:
	$(GO) run ./api/gen -check

# ---- set-up -------------------------------------------------------------
setup:
	bash scripts/deps.sh
	$(GO) mod download

# ---- main job: build the libraries and run the demo on the host device -----
# examples/demo.c twice: demo with the 22.1 header and library, demo23 with
# the 23.1 ones (argument arrays, olQueryQueue, profiling events).
demo: deps-check $(LIBS)
	@mkdir -p $(BUILD)/bin
	$(CC) -std=c17 -O2 -Wall -Wextra -Werror -I include/offload examples/demo.c -o $(BUILD)/bin/demo -L$(LIBDIR) -l:libLLVMOffload.so.22.1 -Wl,-rpath,'$$ORIGIN/../lib'
	$(CC) -std=c17 -O2 -Wall -Wextra -Werror -I include/23.1/offload examples/demo.c -o $(BUILD)/bin/demo23 -L$(LIBDIR) -l:libLLVMOffload.so.23.1 -Wl,-rpath,'$$ORIGIN/../lib'
	$(CC) -std=gnu17 -O3 -fPIC -shared -Wall -Werror -I include examples/saxpy_kernel.c -o $(BUILD)/bin/saxpy_kernel.so
	clang-22 --target=nvptx64-nvidia-cuda -march=sm_80 -Xclang -target-feature -Xclang +ptx78 -nogpulib -ffreestanding -O2 -I include -S examples/saxpy_kernel.c -o $(BUILD)/bin/saxpy_kernel.ptx
	for gfx in gfx90a gfx942; do clang-22 --target=amdgcn-amd-amdhsa -mcpu=$$gfx -nogpulib -ffreestanding -O2 -I include examples/saxpy_kernel.c -o $(BUILD)/bin/saxpy_kernel.$$gfx.hsaco || exit 1; done
	$(BUILD)/bin/demo $(BUILD)/bin/saxpy_kernel.so $(BUILD)/bin/saxpy_kernel.ptx $(BUILD)/bin/saxpy_kernel.gfx90a.hsaco $(BUILD)/bin/saxpy_kernel.gfx942.hsaco
	@echo
	$(BUILD)/bin/demo23 $(BUILD)/bin/saxpy_kernel.so $(BUILD)/bin/saxpy_kernel.ptx $(BUILD)/bin/saxpy_kernel.gfx90a.hsaco $(BUILD)/bin/saxpy_kernel.gfx942.hsaco

# ---- tests ---------------------------------------------------------------
# make test runs every suite, TEST_JOBS at a time (the machine's cores by
# default; TEST_JOBS=1 runs them one after another). The suites write no
# file another one reads or writes; each prints its output whole when it
# ends (--output-sync), and every suite runs to its end even when another
# fails (-k), so that one run shows every failure. What does not depend on a suite is built or run once for all of
# them: the kernel images (test-images), the GPU images' compile check, and
# the kernel rules and loop (with the 22.1 host run). Longest first, so
# that the last to start are short.
TEST_JOBS ?= $(shell nproc)
TEST_SUITES := test-go-race test-device-22 test-fuzz sanitize test-device-23 test-cgocheck2 \
	test-static test-lifecycle test-python test-conformance test-go-ol23 test-abi test-install test-remote
test: deps-check $(LIBS)
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory -k -j$(TEST_JOBS) --output-sync=target $(TEST_SUITES) && \
	echo "make test: all suites passed in $$(( $$(date +%s) - start )) s"

deps-check:
	@bash scripts/deps.sh

# The inner loop: static checks, the Go tests with -race but without
# fuzzing (each package's seed corpora still run), and the device suite on
# the host device, against both libraries. About a minute on a 2-core machine with a warm build
# cache; make test (all of it, every device double) before a merge.
check: deps-check $(LIBS)
	$(MAKE) --no-print-directory test-static
	$(GO) test -race -count=1 ./...
	$(MAKE) --no-print-directory -C tests/c/device check
	$(MAKE) --no-print-directory -C tests/c/device check RELEASE=23.1
	@echo "make check: static checks, Go tests and the host device suite (22.1 and 23.1 libraries) passed (make test runs everything)"

test-static:
	@test -z "$$(gofmt -l api cmd impl internal plugins tests)" || { echo "gofmt needed:"; gofmt -l api cmd impl internal plugins tests; exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags ol23 ./cmd/... ./impl/...
	$(GO) run ./api/gen -check
	@! grep -rn --include='*.go' --exclude='*_test.go' -E '\bC\.(malloc|calloc|CBytes|CString)\(' api cmd impl internal plugins \
	  || { echo "use internal/cmem: cgo's C.malloc, C.calloc, C.CBytes and C.CString end the process when malloc fails"; exit 1; }

# The Go tests: with -race, the packages the ol23 tag changes once more
# with it, the fault-injection build (internal/fault, tag olfault: it panics
# after each lock an entry point takes, and no panic may leave a lock held),
# then the memory-growth checks once more without -race (the race
# detector's own memory grows with the work, which would hide a leak), and
# every fuzz target for 10,000 inputs.
# -timeout 30m: go test's 10 minutes per package is a bound on a package's
# whole run, which a loaded machine running the other suites beside it can
# pass without anything hanging (each test bounds its own waits).
test-go: test-go-race test-go-ol23 test-fuzz
test-go-race:
	$(GO) test -race -count=1 -timeout 30m ./...
test-go-ol23:
	$(GO) test -race -count=1 -tags ol23 ./impl/ ./cmd/...
	$(GO) test -race -count=1 -tags olfault -run 'TestPanicsReleaseLocks' ./tests/go/
	$(GO) test -count=1 -run 'IsFlat$$' ./plugins/cuda/
test-fuzz:
	$(MAKE) --no-print-directory fuzz FUZZTIME=10000x

# Fuzz targets: damaged kernel images must be refused or load, never end the
# process (FuzzLoadProgram loads them; FuzzCheck only validates); copies and
# fills of any size do what a byte model says or fail with INVALID_SIZE
# (FuzzMemRanges, which also runs each operation on a fake GPU and requires the
# same result codes and bytes read back: differential); launches are refused exactly past the device's
# limits (FuzzLaunchGrid); no value but a live handle decodes (FuzzHandleDecode;
# FuzzEventHandleDecode: events, those of idle queues kept in C included);
# the C launch path lays 23.1's arguments out as the Go path does, or leaves
# them to it (FuzzLayOutArgsInC: differential);
# the MPI transport's framing decodes any bytes on its tag to a frame
# within its bounds that encodes back the same, or refuses them (FuzzFrame);
# the image classifier returns a one-line description for any bytes
# (FuzzClassify); a CUDA image whose headers point outside it never reaches
# the driver (FuzzCheckCUDA); the spec parser never panics and what it accepts reads
# back the same (FuzzParse); a remote-protocol message decodes or is refused,
# never a panic (FuzzDecode).
# Each runs for FUZZTIME: 100,000 inputs here, 10,000 in make test (a count,
# not a duration: Go 1.26's fuzz coordinator can report a spurious "context
# deadline exceeded" when a duration runs out, golang/go#75804). Their
# seed corpus (and any crash found, under testdata/fuzz) also runs in plain
# go test.
FUZZTIME ?= 100000x
# a failing target prints the inputs it wrote under testdata/fuzz, so that a
# crash found on a CI machine can be replayed here
FUZZ_FAILED = sh -c 'for f in $$(git ls-files --others --exclude-standard "$$1/testdata/fuzz"); do echo "== $$f"; cat "$$f"; done; exit 1' fuzz-failed
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzLoadProgram$$' -fuzztime=$(FUZZTIME) ./plugins/host/ || $(FUZZ_FAILED) ./plugins/host
	$(GO) test -run='^$$' -fuzz='^FuzzCheck$$' -fuzztime=$(FUZZTIME) ./plugins/host/internal/elfcheck/ || $(FUZZ_FAILED) ./plugins/host/internal/elfcheck
	$(GO) test -run='^$$' -fuzz='^FuzzMemRanges$$' -fuzztime=$(FUZZTIME) ./tests/go/ || $(FUZZ_FAILED) ./tests/go
	$(GO) test -run='^$$' -fuzz='^FuzzLaunchGrid$$' -fuzztime=$(FUZZTIME) ./tests/go/ || $(FUZZ_FAILED) ./tests/go
	$(GO) test -run='^$$' -fuzz='^FuzzHandleDecode$$' -fuzztime=$(FUZZTIME) ./impl/ || $(FUZZ_FAILED) ./impl
	$(GO) test -run='^$$' -fuzz='^FuzzEventHandleDecode$$' -fuzztime=$(FUZZTIME) ./impl/ || $(FUZZ_FAILED) ./impl
	$(GO) test -run='^$$' -fuzz='^FuzzLayOutArgsInC$$' -fuzztime=$(FUZZTIME) ./impl/ || $(FUZZ_FAILED) ./impl
	$(GO) test -run='^$$' -fuzz='^FuzzClassify$$' -fuzztime=$(FUZZTIME) ./plugins/image/ || $(FUZZ_FAILED) ./plugins/image
	$(GO) test -run='^$$' -fuzz='^FuzzCheckCUDA$$' -fuzztime=$(FUZZTIME) ./plugins/image/ || $(FUZZ_FAILED) ./plugins/image
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) ./api/ || $(FUZZ_FAILED) ./api
	$(GO) test -run='^$$' -fuzz='^FuzzDecode$$' -fuzztime=$(FUZZTIME) ./internal/remote/wire/ || $(FUZZ_FAILED) ./internal/remote/wire
	$(GO) test -run='^$$' -fuzz='^FuzzFrame$$' -fuzztime=$(FUZZTIME) ./internal/mpi/ || $(FUZZ_FAILED) ./internal/mpi

# run.sh: the 22.1 library and header against LLVM's installed 22.1 ones;
# run23.sh: the 23.1 library and header against facts written by hand from
# the 23.1 reference (no LLVM 23.1 exists here; not generated from the spec).
test-abi: $(LIBS)
	bash tests/c/abi/run.sh $(CURDIR)/$(LIB)
	bash tests/c/abi/run23.sh $(CURDIR)/$(LIB23) $(CURDIR)/$(LIB)
	bash tests/devinfo/run.sh $(CURDIR)/$(LIBDIR)

# The C suites: conformance (ours and LLVM's library), lifecycle and the
# device suite, against both libraries (RELEASE=23.1: the same sources
# through tests/c/common/olrelease.h, and the device tests of the 23.1
# calls, TESTS23 of tests/c/device/Makefile).
test-c: test-conformance test-lifecycle test-device-22 test-device-23

# The remote platform (docs/remote.md, "What is tested where"): the device
# suite on two proxies' host devices served in-process over the remote
# protocol (OFFLOAD_REMOTE=loopback:2, no MPI), both releases (23.1: the
# tests of its calls); then under mpirun (tests/remote/mpirun.sh, each test
# program beside two offload-proxy ranks): the device suite on the
# proxies' host devices with the fault tests (a proxy killed, a proxy
# stopped, with work queued), on the proxies' fake CUDA and AMD GPUs (the
# driver doubles); the conformance suite beside two proxies' host devices,
# in loopback and under mpirun, and its test_gpu on a proxy's fake CUDA GPUs; and the Python package on a proxy's device,
# both libraries.
test-remote: test-images $(LIBS) $(PROXY)
	$(MAKE) --no-print-directory -C tests/c/device check-remote
	$(MAKE) --no-print-directory -C tests/c/device check-remote RELEASE=23.1 REMOTE_TESTS="launch23 event23 memory23"
	$(MAKE) --no-print-directory -C tests/c/device check-remote-mpi
	$(MAKE) --no-print-directory -C tests/c/device check-remote-mpi-fake
	$(MAKE) --no-print-directory -C tests/c/conformance check-remote IMPL=ours BUILD=$(CURDIR)/$(BUILD)/tests/conformance-remote
	$(MAKE) --no-print-directory -C tests/c/conformance check-remote-mpi IMPL=ours BUILD=$(CURDIR)/$(BUILD)/tests/conformance-remote OFFLOAD_PROXY=$(abspath $(PROXY))
	$(MAKE) --no-print-directory -C tests/c/conformance check-remote-mpi-fake-cuda IMPL=ours BUILD=$(CURDIR)/$(BUILD)/tests/conformance-remote OFFLOAD_PROXY=$(abspath $(PROXY))
	bash tests/remote/python.sh $(PYTHON) $(abspath $(PROXY)) $(abspath $(LIB)) $(abspath $(LIB23))

test-conformance: $(LIBS)
	$(MAKE) --no-print-directory -C tests/c/conformance check IMPL=ours
	$(MAKE) --no-print-directory -C tests/c/conformance check IMPL=llvm
	$(MAKE) --no-print-directory -C tests/c/conformance check-fake-cuda IMPL=ours
	$(MAKE) --no-print-directory -C tests/c/conformance check-fake-cuda IMPL=llvm

test-lifecycle: $(LIBS)
	$(MAKE) --no-print-directory -C tests/c/lifecycle check IMPL=ours
	$(MAKE) --no-print-directory -C tests/c/lifecycle check IMPL=ours RELEASE=23.1

# The kernel images every run of the device suite loads (host objects, the
# doubles' dressed copies, PTX and AMDGPU code objects), built once before
# the suites that share them run side by side.
test-images:
	$(MAKE) --no-print-directory -C tests/c/device images

# 22.1: every test on every device, with the checks that run no library
# code (kernel rules and loop) once.
test-device-22: test-images $(LIBS)
	$(MAKE) --no-print-directory -C tests/c/device check
	$(MAKE) --no-print-directory -C tests/c/device check-fake-cuda
	$(MAKE) --no-print-directory -C tests/c/device check-fake-amdgpu
	$(MAKE) --no-print-directory -C tests/c/device check-fake-mixed

# 23.1: every test on the host device; on the doubles the tests whose subject
# is a call 23.1 changed or added (RELEASE_TESTS of tests/c/device/Makefile):
# the others make the same runtime calls through the same generated entry
# layer as with 22.1, which test-device-22 runs on every device.
test-device-23: test-images $(LIBS)
	$(MAKE) --no-print-directory -C tests/c/device check RELEASE=23.1 CHECK_EXTRAS=
	$(MAKE) --no-print-directory -C tests/c/device check-fake-cuda RELEASE=23.1 TESTS='$$(RELEASE_TESTS)'
	$(MAKE) --no-print-directory -C tests/c/device check-fake-amdgpu RELEASE=23.1 TESTS='$$(RELEASE_TESTS)'
	$(MAKE) --no-print-directory -C tests/c/device check-fake-mixed RELEASE=23.1 MIXED_TESTS='$$(RELEASE_MIXED_TESTS)'

# The C suites once more against a build that checks every pointer passed
# between Go and C (GOEXPERIMENT=cgocheck2): no Go pointer may end up in C memory.
CHECKLIB := $(BUILD)/cgocheck2/lib/libLLVMOffload.so.22.1
$(CHECKLIB): $(SOURCES) | deps-check
	@mkdir -p $(dir $@)
	GOEXPERIMENT=cgocheck2 $(GO) build -buildmode=c-shared -trimpath -ldflags "$(LDFLAGS)" -o $@ ./cmd/liboffload
	@rm -f $(dir $@)libLLVMOffload.so.22.h

CHECKLIB23 := $(BUILD)/cgocheck2/lib/libLLVMOffload.so.23.1
$(CHECKLIB23): $(SOURCES) | deps-check
	@mkdir -p $(dir $@)
	GOEXPERIMENT=cgocheck2 $(GO) build -tags ol23 -buildmode=c-shared -trimpath -ldflags "$(LDFLAGS23)" -o $@ ./cmd/liboffload
	@rm -f $(dir $@)libLLVMOffload.so.23.h

# (the 23.1 library also on both driver doubles: its new calls reach the
# GPU backends' cgo paths: parameter layouts, cooperative launches, timing
# events, prefetch)
test-cgocheck2: test-images $(CHECKLIB) $(CHECKLIB23)
	$(MAKE) --no-print-directory -C tests/c/conformance check IMPL=ours LIBDIR=$(CURDIR)/$(dir $(CHECKLIB)) BUILD=$(CURDIR)/$(BUILD)/tests/conformance-cgocheck2
	$(MAKE) --no-print-directory -C tests/c/device check CHECK_EXTRAS= LIBDIR=$(CURDIR)/$(dir $(CHECKLIB)) BUILD=$(CURDIR)/$(BUILD)/tests/c-device-cgocheck2
	$(MAKE) --no-print-directory -C tests/c/lifecycle check IMPL=ours LIBDIR=$(CURDIR)/$(dir $(CHECKLIB)) BUILD=$(CURDIR)/$(BUILD)/tests/lifecycle-cgocheck2
	$(MAKE) --no-print-directory -C tests/c/device check-fake-cuda check-fake-amdgpu RELEASE=23.1 TESTS="launch23 event23 memory23 kernel" LIBDIR=$(CURDIR)/$(dir $(CHECKLIB23)) BUILD=$(CURDIR)/$(BUILD)/tests/c-device-23.1-cgocheck2

# ---- sanitizers ----------------------------------------------------------
# The runtime's and the plugins' C code, which Go's race detector does not
# see: (1) ThreadSanitizer, then ASan + UBSan, over stress programs of the
# lock-free C structures built standalone (tests/c/stress; RATIONALE.md,
# "Why does ThreadSanitizer run over standalone C stress programs?"); (2)
# a library built with go build -asan and UBSan (its cgo C code
# instrumented) under part of the device suite, on the host device and on
# both driver doubles, and the lifecycle tests, all built with the same
# sanitizers (the doubles too). A report fails the run. Left out, to keep
# it to a few CPU-minutes: the 23.1 library; freequeued (3 minutes under
# ASan) and, on the doubles, the tests of device info, programs, symbols
# and images (Go code, the same C paths as the tests kept); the lifecycle
# tests that bound RSS growth across cycles (dlopen_cycles, rss_cycles:
# ASan's quarantine of freed memory grows RSS by design; driver_cycles runs,
# its RSS bound reported as a skip under ASan).
ASANLIB := $(BUILD)/asan/lib/libLLVMOffload.so.22.1
# -ftls-model=initial-exec: the doubles are dlopen'd, and LeakSanitizer
# (GCC 12's, glibc 2.36) misreads the dynamic TLS blocks of their threads
# ("Tracer caught signal 11" at exit); static TLS avoids them
SAN_CFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -ftls-model=initial-exec
SAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/c/sanitize/lsan.supp:print_suppressions=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
SAN_DEVICE_TESTS := device memory queue event hostfunc program symbol kernel waitevents occupancy leakcheck robust corrupt_image prograce cuda_image inflight crosswait idlequeue
SAN_DOUBLE_TESTS := memory queue event hostfunc kernel waitevents leakcheck robust prograce inflight idlequeue
SAN_DEVICE := $(MAKE) --no-print-directory -C tests/c/device LIBDIR=$(CURDIR)/$(dir $(ASANLIB)) \
	BUILD=$(CURDIR)/$(BUILD)/tests/c-device-asan SANITIZE='$(SAN_CFLAGS)' GPU_COMPILE= CHECK_EXTRAS=
$(ASANLIB): $(SOURCES) | deps-check
	@mkdir -p $(dir $@)
	CGO_CFLAGS='-O1 -g -fno-omit-frame-pointer -fsanitize=undefined -fno-sanitize-recover=all' CGO_LDFLAGS='-fsanitize=undefined' \
	  $(GO) build -asan -buildmode=c-shared -trimpath -ldflags "$(LDFLAGS)" -o $@ ./cmd/liboffload
	@rm -f $(dir $@)libLLVMOffload.so.22.h

sanitize: test-images $(ASANLIB)
	$(MAKE) --no-print-directory -C tests/c/stress check
	$(SAN_ENV) $(SAN_DEVICE) check TESTS="$(SAN_DEVICE_TESTS)"
	$(SAN_ENV) $(SAN_DEVICE) check-fake-cuda TESTS="$(SAN_DOUBLE_TESTS)"
	$(SAN_ENV) $(SAN_DEVICE) check-fake-amdgpu TESTS="$(SAN_DOUBLE_TESTS)"
	$(SAN_ENV) $(MAKE) --no-print-directory -C tests/c/lifecycle check IMPL=ours LIBDIR=$(CURDIR)/$(dir $(ASANLIB)) \
	  BUILD=$(CURDIR)/$(BUILD)/tests/lifecycle-asan CFLAGS='-O1 -g $(SAN_CFLAGS)' SANITIZE='$(SAN_CFLAGS)' \
	  SKIP='dlopen_cycles rss_cycles'
	@echo "make sanitize: no sanitizer report"

# The Python tests run against python/ of the checkout, then once more
# against the copy pip installs into $(PYSITE) (offline: the package's build
# backend is in-tree), which proves the package installs and works installed;
# each with both libraries, 22.1 and 23.1 (the 23.1 features must work with
# 23.1 and raise ReleaseError with 22.1).
PYSITE := $(BUILD)/python-site
# The first python3 that imports NumPy (python3-numpy is Debian's, for
# /usr/bin/python3; a python3 earlier on PATH may lack it), so that the array
# tests run rather than skip; else python3, and they report skips.
ifeq ($(origin PYTHON),undefined)
PYTHON := $(or $(firstword $(foreach p,python3 /usr/bin/python3,$(if $(shell $(p) -c 'import numpy' 2>/dev/null && echo y),$(p)))),python3)
endif
test-python: $(LIBS)
	OFFLOAD_LIB=$(abspath $(LIB)) $(PYTHON) -m unittest discover -s tests/python -v
	OFFLOAD_LIB=$(abspath $(LIB23)) $(PYTHON) -m unittest discover -s tests/python -v
	rm -rf $(PYSITE)
	PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 $(PYTHON) -m pip install --quiet --no-index --no-deps --target $(PYSITE) ./python
	OFFLOAD_LIB=$(abspath $(LIB)) LIBOFFLOAD_TEST_INSTALLED=$(abspath $(PYSITE)) $(PYTHON) -m unittest discover -s tests/python
	OFFLOAD_LIB=$(abspath $(LIB23)) LIBOFFLOAD_TEST_INSTALLED=$(abspath $(PYSITE)) $(PYTHON) -m unittest discover -s tests/python

# Install and use: make install into temporary prefixes (staged with DESTDIR
# and not); a CMake find_package consumer, a pkg-config + make consumer and a
# FetchContent consumer of this tree each run a kernel on the host device;
# make uninstall must leave the prefix empty (tests/consumers/run.sh).
test-install: $(LIBS) $(PROXY)
	LIBOFFLOAD_BUILD=$(abspath $(BUILD)) bash tests/consumers/run.sh

clean:
	rm -rf $(BUILD)

# ---- install ----------------------------------------------------------------
# make install [PREFIX=/usr/local] [DESTDIR=staging root] [bindir=…] [libdir=…] [includedir=…]
# installs offload-proxy into bindir, the library and its links into libdir, the headers into
# includedir, pkg-config files (offload, LLVMOffload) and CMake packages
# (Offload, liboffload-go; target offload::offload), and a manifest that
# make uninstall (same PREFIX and DESTDIR) removes exactly (scripts/install.sh).
PREFIX     ?= /usr/local
bindir     ?= $(PREFIX)/bin
libdir     ?= $(PREFIX)/lib
includedir ?= $(PREFIX)/include
install: $(LIBS) $(PROXY)
	@PREFIX='$(PREFIX)' DESTDIR='$(DESTDIR)' bindir='$(bindir)' libdir='$(libdir)' includedir='$(includedir)' bash scripts/install.sh install $(abspath $(LIBDIR)) $(abspath $(dir $(PROXY)))

uninstall:
	@PREFIX='$(PREFIX)' DESTDIR='$(DESTDIR)' bash scripts/install.sh uninstall

# ---- gpu-check: the device suite for a GPU machine without Go or compilers ----
# Packs $(BUILD)/gpu-check/ (and gpu-check.tar.gz): the library and its
# links, the device-suite and lifecycle test programs (run path relative to
# themselves), the kernel images (.so, .ptx, .<gfx>.hsaco) and run.sh, which
# runs every suite on every device found and prints the totals. Then runs
# that run.sh here (on the host device when there is no GPU). Copy the
# folder to a GPU machine and run gpu-check/run.sh there.
GPUCHECK := $(BUILD)/gpu-check
gpu-check: $(LIBS)
	bash tests/c/device/gpu_check_pack.sh $(CURDIR) $(abspath $(LIBDIR)) $(abspath $(GPUCHECK))
	bash $(GPUCHECK)/run.sh

# ---- benchmarks (not tests) -------------------------------------------------
# make bench BASELINE=<git revision> also compares this build with the
# library built from that revision, in the same run. Its baselines' Debian
# packages (PoCL) are installed by scripts/deps.sh --bench when run as root;
# a missing one is named in the output (and fails the run with CI=true).
# The remote rows (bench/remote.sh) run offload-proxy under mpirun.
bench: $(LIB) $(PROXY)
	BASELINE='$(BASELINE)' bash bench/run.sh

# The remote platform's MPI baseline alone: MPI's round trip, one-way
# latency and 256 MiB bandwidth on two ranks, raw and through internal/mpi
# (bench/mpilink.sh; also a helper of make bench's remote rows).
bench-mpi:
	bash bench/mpilink.sh
