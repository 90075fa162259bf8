package host

import (
	"reflect"
	"testing"

	"go.uber.org/goleak"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/plugins/host/sysinfo"
	"github.com/liboffload-go/liboffload-go/plugins/plugin"
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
	if info.Type != plugin.Some(ol.DeviceTypeHost) || info.NumComputeUnits != plugin.Some(si.LogicalCPUs) ||
		info.GlobalMemSize != plugin.Some(si.MemTotal) || info.Name != plugin.Some(si.ModelName) {
		t.Fatalf("info does not describe this machine: %+v", info)
	}
	if info.NativeVectorWidthFloat != plugin.Some(si.VectorBytes/4) || info.NativeVectorWidthChar != plugin.Some(si.VectorBytes) {
		t.Fatalf("vector widths %v/%v for %d-byte vectors", info.NativeVectorWidthChar, info.NativeVectorWidthFloat, si.VectorBytes)
	}
	// the host plugin answers every property it can
	v := reflect.ValueOf(*info)
	for i := range v.NumField() {
		if !v.Field(i).FieldByName("OK").Bool() {
			t.Errorf("host device leaves %s unset", v.Type().Field(i).Name)
		}
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
