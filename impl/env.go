package impl

/*
#include <stdlib.h>
*/
import "C"

import "github.com/liboffload-go/liboffload-go/internal/cmem"

// cEnv reads the environment through the C library. Go's os.Getenv sees
// only the environment as it was when the runtime started, which misses
// variables the host program set later with setenv.
type cEnv struct{}

func (cEnv) Lookup(name string) (string, bool) {
	v := C.getenv((*C.char)(cmem.CName(name)))
	if v == nil {
		return "", false
	}
	return C.GoString(v), true
}

// Environment variables of the library. All are read at each real (0→1)
// olInit; presence is what counts for the switches.
const (
	EnvTrace             = "OFFLOAD_TRACE"
	EnvTraceFile         = "OFFLOAD_TRACE_FILE"
	EnvDisableValidation = "OFFLOAD_DISABLE_VALIDATION"
	EnvLeakCheck         = "OFFLOAD_LEAK_CHECK"
	EnvPlugins           = "OFFLOAD_PLUGINS"
)
