package cuda

import (
	"reflect"
	"testing"
)

// The lowered constructors and destructors of PTX text, as clang-22 emits
// them (tests/c/kernels/global_ctor.c and global_dtor.c), are found and
// ordered by priority, then as listed.
func TestCtorObjectsOfPTX(t *testing.T) {
	ptx := []byte(`.version 7.8
.target sm_80
.address_size 64
.func fill_global
();
.func late
();
.func first
();
.visible .global .align 4 .b8 global[256];
.visible .const .align 8 .u64 __init_array_object_late_9d_65535 = late;
.visible .const .align 8 .u64 __init_array_object_fill_global_2d84fce18e3b20d9_65535 = fill_global;
.visible .const .align 8 .u64 __init_array_object_first_1a_101 = first;
.visible .const .align 8 .u64 __fini_array_object_write_target_da1e51e0b7ff7954_65535 = write_target;
.weak .global .align 8 .u64 __init_array_start;
.weak .global .align 8 .u64 __init_array_end;
.weak .entry nvptx$device$init()
{
	ld.global.b64 	%rd3, [__init_array_start];
}
`)
	ctors, dtors := ctorObjects(ptx)
	wantCtors := []string{"__init_array_object_first_1a_101", "__init_array_object_late_9d_65535", "__init_array_object_fill_global_2d84fce18e3b20d9_65535"}
	if !reflect.DeepEqual(ctors, wantCtors) {
		t.Errorf("constructors %q, want %q", ctors, wantCtors)
	}
	if want := []string{"__fini_array_object_write_target_da1e51e0b7ff7954_65535"}; !reflect.DeepEqual(dtors, want) {
		t.Errorf("destructors %q, want %q", dtors, want)
	}
	if c, d := ctorObjects([]byte(".version 7.8\n.target sm_80\n.visible .entry foo()\n{\n\tret;\n}\n")); c != nil || d != nil {
		t.Errorf("an image without constructors: %q %q", c, d)
	}
}
