package impl

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// countingProgram counts Unload calls and notes one made while a user of
// the program is inside the plugin.
type countingProgram struct {
	unloads, inside atomic.Int32
	early           atomic.Bool
}

func (p *countingProgram) Kernel(string) (plugin.Kernel, error)   { return nil, nil }
func (p *countingProgram) Global(string) (uintptr, uint64, error) { return 0, 0, nil }
func (p *countingProgram) Unload() error {
	if p.inside.Load() != 0 {
		p.early.Store(true)
	}
	p.unloads.Add(1)
	return nil
}

// Calls racing the destroy either run with the program loaded or are
// refused with a clear error, and the program is unloaded exactly once,
// after the last of them.
func TestProgramUseRacesDestroy(t *testing.T) {
	c := &Context{programs: newTable[Program](kindProgram, 1), symbols: newTable[Symbol](kindSymbol, 1)}
	for round := 0; round < 200; round++ {
		cp := &countingProgram{}
		p := &Program{p: cp, symbols: map[symbolKey]*Symbol{}}
		p.refs.Store(1)
		var err error
		if p.h, err = c.programs.insert(p); err != nil {
			t.Fatal(err)
		}
		k := &Symbol{program: p, kind: ol.SymbolKindKernel, name: "k"}
		var wg sync.WaitGroup
		var bad atomic.Value
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					if err := p.use("olLaunchKernel", k); err != nil {
						var oe *ol.Error
						if !errors.As(err, &oe) || oe.Code != ol.ErrcInvalidArgument || !strings.Contains(oe.Details, "was destroyed") {
							bad.Store(err.Error())
						}
						return
					}
					cp.inside.Add(1)
					cp.inside.Add(-1)
					_ = p.release()
				}
			}()
		}
		if err := c.olDestroyProgram(p); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if v := bad.Load(); v != nil {
			t.Fatalf("round %d: a refused call said %v", round, v)
		}
		if n := cp.unloads.Load(); n != 1 || cp.early.Load() {
			t.Fatalf("round %d: %d unloads (want 1), one while a call was in the plugin: %v", round, n, cp.early.Load())
		}
	}
}
