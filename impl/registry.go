package impl

import (
	"github.com/liboffload-go/liboffload-go/plugins/host"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// builtinPlugins lists the backends in platform order. The host platform
// comes last, as in LLVM 22.1.
func builtinPlugins() []plugin.Plugin {
	return []plugin.Plugin{host.New()}
}
