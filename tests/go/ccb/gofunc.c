// The C side of GoFunc: a host function that calls the registered Go
// function named by its user pointer.
#include <stdint.h>
#include "_cgo_export.h"

static void ccb_gofunc(void *user) { ccbGoFuncCall((uintptr_t)user); }
void *ccb_gofunc_ptr(void) { return (void *)ccb_gofunc; }
