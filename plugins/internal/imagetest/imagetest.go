// Package imagetest is test scaffolding for the program-image checks of
// the GPU plugins: it builds real images (gcc, clang-22) and hand-made
// headers, and drives olIsValidBinary and olCreateProgram through the
// runtime's entry points on the devices of a driver double. Only the
// plugins' external tests import it (it imports the runtime, which imports
// the plugins).
package imagetest

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/liboffload-go/liboffload-go/api/ol"
	"github.com/liboffload-go/liboffload-go/impl"
	"github.com/liboffload-go/liboffload-go/plugins/amdgpu"
	"github.com/liboffload-go/liboffload-go/plugins/cuda"
	"github.com/liboffload-go/liboffload-go/plugins/host"
	"github.com/liboffload-go/liboffload-go/plugins/internal/fakedriver"
	"github.com/liboffload-go/liboffload-go/tests/go/ccb"
)

// Images are real images of tests/c/kernels/foo.c, by name: "so" (gcc
// -shared -fPIC), "ptx80" and "ptx90a" (clang-22, the NVPTX flags of
// tests/c/device/Makefile), "gfx90a", "gfx942:xnack+" and "gfx9-generic"
// (AMDGPU code objects). A missing compiler fails the test: CI installs
// gcc and clang-22.
func Images(t *testing.T) map[string][]byte {
	t.Helper()
	root := fakedriver.ModuleRoot(t)
	src := filepath.Join(root, "tests", "c", "kernels", "foo.c")
	inc := "-I" + filepath.Join(root, "include")
	dir := t.TempDir()
	ptx := func(sm, isa string) []string {
		return []string{"clang-22", "--target=nvptx64-nvidia-cuda", "-march=" + sm, "-Xclang", "-target-feature",
			"-Xclang", "+" + isa, "-nogpulib", "-ffreestanding", "-O2", "-S"}
	}
	amd := func(cpu string) []string {
		return []string{"clang-22", "--target=amdgcn-amd-amdhsa", "-mcpu=" + cpu, "-nogpulib", "-ffreestanding", "-O2"}
	}
	out := map[string][]byte{}
	for name, cmd := range map[string][]string{
		"so":            {"gcc", "-std=gnu17", "-O2", "-fPIC", "-shared"},
		"ptx80":         ptx("sm_80", "ptx78"),
		"ptx90a":        ptx("sm_90a", "ptx80"),
		"gfx90a":        amd("gfx90a"),
		"gfx942:xnack+": amd("gfx942:xnack+"),
		"gfx9-generic":  amd("gfx9-generic"),
	} {
		if _, err := exec.LookPath(cmd[0]); err != nil {
			t.Fatalf("%s is needed to build the test images: %v", cmd[0], err)
		}
		path := filepath.Join(dir, strings.NewReplacer(":", "_", "+", "p").Replace(name))
		args := append(cmd[1:], inc, src, "-o", path)
		if msg, err := exec.Command(cmd[0], args...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(cmd, " "), err, msg)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	return out
}

// HostDesc is how the classifier names this machine's shared objects.
func HostDesc() string {
	if runtime.GOARCH == "arm64" {
		return "an AArch64 ELF shared object"
	}
	return "an x86-64 ELF shared object"
}

// Cubin is the ELF header of a CUDA cubin for sm (ABI version 7: the SM in
// the low byte of e_flags, 0x800 for sm_XXa).
func Cubin(sm int, accel bool) []byte {
	h := make([]byte, 64)
	copy(h, "\x7fELF\x02\x01\x01\x33\x07")
	binary.LittleEndian.PutUint16(h[16:], 2)   // ET_EXEC
	binary.LittleEndian.PutUint16(h[18:], 190) // EM_CUDA
	f := uint32(sm) | 0x400
	if accel {
		f |= 0x800
	}
	binary.LittleEndian.PutUint32(h[48:], f)
	return h
}

// Fatbin is a CUDA fatbin header with no entries.
func Fatbin() []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint32(b, 0xba55ed50)
	binary.LittleEndian.PutUint16(b[4:], 1)
	binary.LittleEndian.PutUint16(b[6:], 16)
	return b
}

// Bundle is a clang offload bundle header with one entry for triple.
func Bundle(triple string) []byte {
	b := []byte("__CLANG_OFFLOAD_BUNDLE__")
	b = binary.LittleEndian.AppendUint64(b, 1)
	b = binary.LittleEndian.AppendUint64(b, 4096)
	b = binary.LittleEndian.AppendUint64(b, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(triple)))
	return append(b, triple...)
}

// OffloadBinary is the start of an LLVM offload binary (magic and version).
func OffloadBinary() []byte { return []byte{0x10, 0xff, 0x10, 0xad, 1, 0, 0, 0} }

// Init points the runtime at lib through env (e.g. OFFLOAD_CUDA_LIBRARY),
// initialises it with OFFLOAD_PLUGINS=plugin and returns the devices, the
// plugin's GPUs first and the host device last. olShutDown runs at cleanup.
func Init(t *testing.T, plugin string, env map[string]string) []uintptr {
	t.Helper()
	impl.UsePlugins(amdgpu.New(), cuda.New(), host.New())
	t.Setenv(impl.EnvPlugins, plugin)
	for k, v := range env {
		t.Setenv(k, v)
	}
	if r := impl.OlInit(nil); r != 0 {
		t.Fatalf("olInit: %s: %s", impl.ResultCode(r), impl.ResultDetails(r))
	}
	t.Cleanup(func() {
		if r := impl.OlShutDown(nil); r != 0 {
			t.Errorf("olShutDown: %s: %s", impl.ResultCode(r), impl.ResultDetails(r))
		}
	})
	it := ccb.NewIter(0)
	defer it.Free()
	if r := impl.OlIterateDevices(it.Callback(), it.User(), nil); r != 0 {
		t.Fatalf("olIterateDevices: %s", impl.ResultDetails(r))
	}
	var devs []uintptr
	for i := 0; i < it.Count(); i++ {
		devs = append(devs, it.Device(i))
	}
	return devs
}

func ptr(img []byte) unsafe.Pointer {
	if len(img) == 0 {
		return unsafe.Pointer(new(byte)) // a non-NULL pointer to no bytes
	}
	return unsafe.Pointer(&img[0])
}

// IsValid is olIsValidBinary's answer, which must come with OL_SUCCESS.
func IsValid(t *testing.T, dev uintptr, img []byte) bool {
	t.Helper()
	var valid bool
	if r := impl.OlIsValidBinary(dev, ptr(img), uint64(len(img)), unsafe.Pointer(&valid), nil); r != 0 {
		t.Fatalf("olIsValidBinary: %s: %s", impl.ResultCode(r), impl.ResultDetails(r))
	}
	return valid
}

// Create calls olCreateProgram and returns its result code and details (a
// program it creates is destroyed).
func Create(t *testing.T, dev uintptr, img []byte) (ol.Errc, string) {
	t.Helper()
	var p uintptr
	r := impl.OlCreateProgram(dev, ptr(img), uint64(len(img)), unsafe.Pointer(&p), nil)
	if r == 0 {
		if r := impl.OlDestroyProgram(p, nil); r != 0 {
			t.Fatalf("olDestroyProgram: %s", impl.ResultDetails(r))
		}
		return ol.ErrcSuccess, ""
	}
	return impl.ResultCode(r), impl.ResultDetails(r)
}
