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
MAP     := $(CURDIR)/cmd/liboffload/exports.map
MAP23   := $(CURDIR)/cmd/liboffload/exports_23_1.map
SOURCES := $(shell find api cmd impl internal plugins -type f \( -name '*.go' -o -name '*.c' -o -name '*.h' -o -name '*.json' -o -name '*.map' \)) go.mod go.sum $(shell find include -name '*.h')
# lld, like LLVM's own build: GNU ld would also export an absolute VERS1.0 symbol
LDFLAGS := -extldflags '-fuse-ld=lld -B/usr/lib/llvm-22/bin -Wl,--version-script=$(MAP) -Wl,-soname,libLLVMOffload.so.22.1'
LDFLAGS23 := -extldflags '-fuse-ld=lld -B/usr/lib/llvm-22/bin -Wl,--version-script=$(MAP23) -Wl,-soname,libLLVMOffload.so.23.1'

.PHONY: all lib generate check-generated demo test check deps-check test-static test-go test-abi test-c test-python test-cgocheck2 fuzz bench setup clean install uninstall test-install gpu-check

all: lib

lib: $(LIBS)

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
test: deps-check $(LIBS)
	$(MAKE) --no-print-directory test-static test-go test-abi test-c test-python test-cgocheck2 test-install
	@echo "make test: all suites passed"

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

# The fault-injection build (internal/fault, tag olfault) panics after each
# lock an entry point takes: no panic may leave a lock held.
# Then the memory-growth checks once more without -race (the race
# detector's own memory grows with the work, which would hide a leak).
test-go:
	$(GO) test -race -count=1 ./...
	$(GO) test -race -count=1 -tags ol23 ./impl/ ./cmd/...
	$(GO) test -race -count=1 -tags olfault -run 'TestPanicsReleaseLocks' ./tests/go/
	$(GO) test -count=1 -run 'IsFlat$$' ./plugins/cuda/
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
# the image classifier returns a one-line description for any bytes
# (FuzzClassify); a CUDA image whose headers point outside it never reaches
# the driver (FuzzCheckCUDA); the spec parser never panics and what it accepts reads
# back the same (FuzzParse).
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

# run.sh: the 22.1 library and header against LLVM's installed 22.1 ones;
# run23.sh: the 23.1 library and header against facts written by hand from
# the 23.1 reference (no LLVM 23.1 exists here; not generated from the spec).
test-abi: $(LIBS)
	bash tests/c/abi/run.sh $(CURDIR)/$(LIB)
	bash tests/c/abi/run23.sh $(CURDIR)/$(LIB23) $(CURDIR)/$(LIB)
	bash tests/devinfo/run.sh $(CURDIR)/$(LIBDIR)

# The device suite and the lifecycle tests run against both libraries
# (RELEASE=23.1: the same sources through tests/c/common/olrelease.h, and
# the device tests of the 23.1 calls, TESTS23 of tests/c/device/Makefile).
test-c: $(LIBS)
	$(MAKE) --no-print-directory -C tests/c/conformance check IMPL=ours
	$(MAKE) --no-print-directory -C tests/c/conformance check IMPL=llvm
	$(MAKE) --no-print-directory -C tests/c/conformance check-fake-cuda IMPL=ours
	$(MAKE) --no-print-directory -C tests/c/conformance check-fake-cuda IMPL=llvm
	$(MAKE) --no-print-directory -C tests/c/lifecycle check IMPL=ours
	$(MAKE) --no-print-directory -C tests/c/lifecycle check IMPL=ours RELEASE=23.1
	$(MAKE) --no-print-directory -C tests/c/device check
	$(MAKE) --no-print-directory -C tests/c/device check-fake-cuda
	$(MAKE) --no-print-directory -C tests/c/device check-fake-amdgpu
	$(MAKE) --no-print-directory -C tests/c/device check-fake-mixed
	$(MAKE) --no-print-directory -C tests/c/device check RELEASE=23.1
	$(MAKE) --no-print-directory -C tests/c/device check-fake-cuda RELEASE=23.1
	$(MAKE) --no-print-directory -C tests/c/device check-fake-amdgpu RELEASE=23.1
	$(MAKE) --no-print-directory -C tests/c/device check-fake-mixed RELEASE=23.1

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
test-cgocheck2: $(CHECKLIB) $(CHECKLIB23)
	$(MAKE) --no-print-directory -C tests/c/conformance check IMPL=ours LIBDIR=$(CURDIR)/$(dir $(CHECKLIB)) BUILD=$(CURDIR)/$(BUILD)/tests/conformance-cgocheck2
	$(MAKE) --no-print-directory -C tests/c/device check LIBDIR=$(CURDIR)/$(dir $(CHECKLIB)) BUILD=$(CURDIR)/$(BUILD)/tests/c-device-cgocheck2
	$(MAKE) --no-print-directory -C tests/c/lifecycle check IMPL=ours LIBDIR=$(CURDIR)/$(dir $(CHECKLIB)) BUILD=$(CURDIR)/$(BUILD)/tests/lifecycle-cgocheck2
	$(MAKE) --no-print-directory -C tests/c/device check-fake-cuda check-fake-amdgpu RELEASE=23.1 TESTS="launch23 event23 memory23 kernel" LIBDIR=$(CURDIR)/$(dir $(CHECKLIB23)) BUILD=$(CURDIR)/$(BUILD)/tests/c-device-23.1-cgocheck2

# The Python tests run against python/ of the checkout, then once more
# against the copy pip installs into $(PYSITE) (offline: the package's build
# backend is in-tree), which proves the package installs and works installed;
# each with both libraries, 22.1 and 23.1 (the 23.1 features must work with
# 23.1 and raise ReleaseError with 22.1).
PYSITE := $(BUILD)/python-site
test-python: $(LIBS)
	OFFLOAD_LIB=$(abspath $(LIB)) python3 -m unittest discover -s tests/python -v
	OFFLOAD_LIB=$(abspath $(LIB23)) python3 -m unittest discover -s tests/python -v
	rm -rf $(PYSITE)
	PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 python3 -m pip install --quiet --no-index --no-deps --target $(PYSITE) ./python
	OFFLOAD_LIB=$(abspath $(LIB)) LIBOFFLOAD_TEST_INSTALLED=$(abspath $(PYSITE)) python3 -m unittest discover -s tests/python
	OFFLOAD_LIB=$(abspath $(LIB23)) LIBOFFLOAD_TEST_INSTALLED=$(abspath $(PYSITE)) python3 -m unittest discover -s tests/python

# Install and use: make install into temporary prefixes (staged with DESTDIR
# and not); a CMake find_package consumer, a pkg-config + make consumer and a
# FetchContent consumer of this tree each run a kernel on the host device;
# make uninstall must leave the prefix empty (tests/consumers/run.sh).
test-install: $(LIBS)
	LIBOFFLOAD_BUILD=$(abspath $(BUILD)) bash tests/consumers/run.sh

clean:
	rm -rf $(BUILD)

# ---- install ----------------------------------------------------------------
# make install [PREFIX=/usr/local] [DESTDIR=staging root] [libdir=…] [includedir=…]
# installs the library and its links into libdir, the headers into
# includedir, pkg-config files (offload, LLVMOffload) and CMake packages
# (Offload, liboffload-go; target offload::offload), and a manifest that
# make uninstall (same PREFIX and DESTDIR) removes exactly (scripts/install.sh).
PREFIX     ?= /usr/local
libdir     ?= $(PREFIX)/lib
includedir ?= $(PREFIX)/include
install: $(LIBS)
	@PREFIX='$(PREFIX)' DESTDIR='$(DESTDIR)' libdir='$(libdir)' includedir='$(includedir)' bash scripts/install.sh install $(abspath $(LIBDIR))

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
bench: $(LIB)
	BASELINE='$(BASELINE)' bash bench/run.sh
