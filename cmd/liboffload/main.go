// Command liboffload is the C shared library libLLVMOffload.so.22.1. It is
// built with -buildmode=c-shared; the exported C functions are the shims in
// zshims.c, which call the Go functions of zexports.go. All logic lives in
// the impl and plugins packages.
package main

// #cgo CFLAGS: -I${SRCDIR}/../../include -O2 -Wall
// #cgo LDFLAGS: -lpthread
import "C"

func main() {}
