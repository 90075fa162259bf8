package impl

import (
	"testing"

	"github.com/liboffload-go/liboffload-go/plugins/host"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// BenchmarkSnapshot is what the info snapshot adds to the first query of
// an initialisation (the host platform and device): laying it out and
// publishing it.
func BenchmarkSnapshot(b *testing.B) {
	c, err := newContext(generations{}, []plugin.Plugin{host.New()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.teardown()
	for b.Loop() {
		c.snap.Store(snapPending)
		c.snapshotOnce()
	}
	c.unpublishSnapshot()
}
