package host

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/host/sysinfo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type noEnv struct{}

func (noEnv) Lookup(string) (string, bool) { return "", false }

func TestHostPlatform(t *testing.T) {
	p, err := New().Init(noEnv{})
	if err != nil || p == nil {
		t.Fatalf("Init: %v", err)
	}
	defer p.Deinit()
	if p.Name() != "Host" || p.Backend() != ol.PlatformBackendHost || p.Version() != "v0.0.1" {
		t.Fatalf("platform %s %s %s", p.Name(), p.Backend(), p.Version())
	}
	devs := p.Devices()
	if len(devs) != 1 || !devs[0].IsHost() {
		t.Fatal("want one host device")
	}
	si := sysinfo.Read()
	info := devs[0].Info()
	if info.Type != ol.DeviceTypeHost || info.NumComputeUnits != si.LogicalCPUs || info.GlobalMemSize != si.MemTotal || info.Name != si.ModelName {
		t.Fatalf("info does not describe this machine: %+v", info)
	}
	if info.VectorWidthFloat != si.VectorBytes/4 || info.VectorWidthChar != si.VectorBytes {
		t.Fatalf("vector widths %d/%d for %d-byte vectors", info.VectorWidthChar, info.VectorWidthFloat, si.VectorBytes)
	}
}

func TestHostAlloc(t *testing.T) {
	d := &Device{}
	for _, size := range []uint64{1, 63, 64, 1000, 1 << 20} {
		p, err := d.Alloc(ol.AllocTypeDevice, size)
		if err != nil || p == 0 || p%64 != 0 {
			t.Fatalf("Alloc(%d) = %#x, %v", size, p, err)
		}
		if err := d.Free(p, ol.AllocTypeDevice); err != nil {
			t.Fatal(err)
		}
	}
}
