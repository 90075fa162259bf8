package impl

import (
	"testing"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/host"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
)

// poolCycle allocates n blocks of sizes 1 B to 64 KiB from the host
// device, checks each through the map, and frees them in another order.
func poolCycle(t *testing.T, c *Context, n int) {
	t.Helper()
	dev := c.hostDevice()
	ptrs := make([]uintptr, n)
	sizes := make([]uint64, n)
	for i := range ptrs {
		sizes[i] = 1 + uint64(i*7919)%(64<<10)
		p, err := c.olMemAlloc(dev, ol.AllocTypeDevice, sizes[i])
		if err != nil {
			t.Fatal(err)
		}
		ptrs[i] = p
		if a, ok := c.mem.find(uint64(p) + sizes[i] - 1); !ok || a.base != uint64(p) || a.size != sizes[i] || a.slab == nil {
			t.Fatalf("block %#x of %d bytes: found %+v, %v", p, sizes[i], a, ok)
		}
	}
	for i := range ptrs {
		j := (i * 389) % n // 389 is prime to n below: every one once
		if err := c.olMemFree(ptrs[j]); err != nil {
			t.Fatal(err)
		}
		if err := c.olMemFree(ptrs[j]); err == nil {
			t.Fatalf("a second free of %#x succeeded", ptrs[j])
		}
	}
}

// With no idle memory allowed, freeing every block gives every slab back
// to the device at once; with the default bound they go back at teardown.
func TestPoolMemoryGoesBack(t *testing.T) {
	for _, idle := range []string{"0", ""} {
		t.Run("OFFLOAD_POOL_IDLE="+idle, func(t *testing.T) {
			t.Setenv(EnvPoolIdle, idle)
			start := host.SlabBytes()
			c, err := newContext(generations{}, []plugin.Plugin{host.New()})
			if err != nil {
				t.Fatal(err)
			}
			poolCycle(t, c, 1000)
			if idle == "0" && host.SlabBytes() != start {
				t.Errorf("after every free the pool still holds %d bytes of the device", host.SlabBytes()-start)
			}
			if idle == "" && host.SlabBytes() == start {
				t.Errorf("the pool kept nothing under the default bound")
			}
			if err := c.teardown(); err != nil {
				t.Fatal(err)
			}
			if host.SlabBytes() != start {
				t.Errorf("after teardown the pool still holds %d bytes of the device", host.SlabBytes()-start)
			}
		})
	}
}

func TestPoolIdleEnv(t *testing.T) {
	t.Setenv(EnvPoolIdle, "lots")
	if _, err := newContext(generations{}, []plugin.Plugin{host.New()}); err == nil {
		t.Fatal("a bound that is not a number was accepted")
	} else if code, _ := describe(err); code != ol.ErrcInvalidValue {
		t.Fatalf("code %v", code)
	}
	for in, want := range map[string]uint64{"": defaultPoolIdle, "0": 0, "12": 12, "3k": 3 << 10, "5M": 5 << 20, "2G": 2 << 30} {
		t.Setenv(EnvPoolIdle, in)
		if got, err := poolIdle(cEnv{}); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}
}
