# liboffload-go: build, generate, test, demo, benchmark.
GO      ?= go
CC      ?= gcc
BUILD   := build
LIBDIR  := $(BUILD)/lib
LIB     := $(LIBDIR)/libLLVMOffload.so.22.1
MAP     := $(CURDIR)/cmd/liboffload/exports.map
SOURCES := $(shell find api cmd impl plugins -type f \( -name '*.go' -o -name '*.c' -o -name '*.h' -o -name '*.json' -o -name '*.map' \)) go.mod go.sum include/offload.h
LDFLAGS := -extldflags '-Wl,--version-script=$(MAP) -Wl,-soname,libLLVMOffload.so.22.1'

.PHONY: all lib generate check-generated demo test test-go test-c test-python bench setup clean

all: lib

lib: $(LIB)

$(LIB): $(SOURCES)
	@mkdir -p $(LIBDIR)
	$(GO) build -buildmode=c-shared -trimpath -ldflags "$(LDFLAGS)" -o $@ ./cmd/liboffload
	@rm -f $(LIBDIR)/libLLVMOffload.so.22.h
	@ln -sf libLLVMOffload.so.22.1 $(LIBDIR)/libLLVMOffload.so
	@ln -sf libLLVMOffload.so.22.1 $(LIBDIR)/liboffload.so

generate:
	$(GO) run ./api/gen

check-generated:
	$(GO) run ./api/gen -check

clean:
	rm -rf $(BUILD)
