package main

import (
	"fmt"
	"strings"

	"github.com/liboffload-go/liboffload-go/api"
)

// snapMaxKinds is OL_SNAP_MAX_KINDS (impl/snapshot.h): the fixed kinds the
// snapshot has room for.
const snapMaxKinds = 4

// snapKind is a fixed handle kind (api.Handle.Fixed) whose info queries the
// C entry points answer from the snapshot (impl/snapshot.h).
type snapKind struct {
	index int       // its directory slot in the snapshot
	kind  string    // "device"
	enum  *api.Enum // its info enum
	query string    // the impl method both info calls share: deviceInfo
	// iterate is olIterate<Kind>s(Callback, UserData) when the API has it:
	// the C entry point calls Callback for the handles of the snapshot's
	// list (Context.<kind>List, in its order).
	iterate *api.Function
}

// snapKinds lists the fixed kinds in spec order. Every one must have an
// info pair olGet<Kind>Info / olGet<Kind>InfoSize whose first parameter is
// the handle and whose second is the property.
func snapKinds(s *api.Spec) []snapKind {
	var out []snapKind
	for _, h := range s.Handles {
		if !h.Fixed {
			continue
		}
		name := "olGet" + camel(h.Kind) + "Info"
		f := s.FunctionByName(name)
		if f == nil || len(f.Params) != 4 || f.Params[0].Type != h.Name || f.Params[1].Name != "PropName" {
			panic("gen: fixed handle " + h.Name + " has no info query " + name + "(handle, PropName, PropSize, PropValue)")
		}
		query, _, ok := infoPair(s, f)
		e := s.EnumByName(f.Params[1].Type)
		if !ok || e == nil || !e.InfoEnum() {
			panic("gen: " + name + " is not an info pair over an info enum")
		}
		max := int64(-1)
		for _, v := range e.Values {
			if v.Value < 0 {
				panic("gen: " + e.Name + " has a negative value")
			}
			if v.Value > max {
				max = v.Value
			}
		}
		if max >= 0xff {
			panic("gen: " + e.Name + " has too many values for the snapshot")
		}
		k := snapKind{index: len(out), kind: h.Kind, enum: e, query: query}
		for i := range s.Functions {
			g := &s.Functions[i]
			if g.Name != "olIterate"+camel(h.Kind)+"s" {
				continue
			}
			cb := s.CallbackByName(g.Params[0].Type)
			if len(g.Params) != 2 || cb == nil || len(cb.Params) != 2 || cb.Params[0].Type != h.Name || cb.Ret != "bool" {
				panic("gen: " + g.Name + " is not (Callback(handle, user) -> bool, UserData)")
			}
			k.iterate = g
		}
		out = append(out, k)
	}
	if len(out) > snapMaxKinds {
		panic("gen: more fixed kinds than the snapshot has room for")
	}
	return out
}

// snapFast is the fast path the shim of f starts with, or "".
func snapFast(s *api.Spec, f *api.Function) string {
	for _, k := range snapKinds(s) {
		if it := k.iterate; it != nil && f.Name == it.Name {
			cbp, user := it.Params[0].Name, it.Params[1].Name
			h := s.CallbackByName(it.Params[0].Type).Params[0].Type
			return fmt.Sprintf(`  if (%[1]s != NULL) {
    uint64_t snap_[64];
    int n_ = ol_snap_list(%[2]d, snap_, 64);
    if (n_ >= 0) {
      for (int i_ = 0; i_ < n_; i_++)
        if (!%[1]s((%[3]s)(uintptr_t)snap_[i_], %[4]s))
          break;
      return OL_SUCCESS;
    }
  }
`, cbp, k.index, h, user)
		}
		base := "olGet" + camel(k.kind) + "Info"
		if f.Name != base && f.Name != base+"Size" {
			continue
		}
		h := "(uint64_t)(uintptr_t)" + f.Params[0].Name
		switch f.Name {
		case base:
			return fmt.Sprintf("  if (ol_snap_info(%d, %s, (uint32_t)PropName, PropSize, PropValue))\n    return OL_SUCCESS;\n", k.index, h)
		case base + "Size":
			return fmt.Sprintf("  if (ol_snap_size(%d, %s, (uint32_t)PropName, PropSizeRet))\n    return OL_SUCCESS;\n", k.index, h)
		}
	}
	return ""
}

// genSnapshot writes impl/zsnapshot.go: the snapshot of every fixed
// kind's objects, each property asked through the same query the Go entry
// points use.
func genSnapshot(s *api.Spec) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("// %s\n\npackage impl\n\nimport \"github.com/liboffload-go/liboffload-go/api/ol\"\n\n", genLine)
	w("// snapshot lays out the answer to every info query of every object of\n")
	w("// the fixed kinds (api/offload.json), through the Go path's own queries.\n")
	w("func (c *Context) snapshot(b *snapBuilder) {\n")
	for _, k := range snapKinds(s) {
		props := int64(0)
		for _, v := range k.enum.Values {
			if v.Value+1 > props {
				props = v.Value + 1
			}
		}
		obj := camel(k.kind)
		w("\tb.kind(%d, c.%ss.used.Load(), %d)\n", k.index, k.kind, props)
		w("\tc.%ss.each(func(h uintptr, o *%s) {\n", k.kind, obj)
		w("\t\tfor _, p := range [...]ol.%s{", goTypeName(k.enum.Name))
		for i, v := range k.enum.Values {
			if i > 0 {
				w(", ")
			}
			w("ol.%s", goEnumConst(k.enum, v.Name))
		}
		w("} {\n")
		w("\t\t\tv, err := c.%s(o, p)\n", k.query)
		w("\t\t\tb.value(%d, h, uint32(p), v, err)\n\t\t}\n\t})\n", k.index)
		if k.iterate != nil {
			w("\t{\n\t\tlst := b.list(%d, len(c.%sList))\n", k.index, k.kind)
			w("\t\tfor i, o := range c.%sList {\n\t\t\tlst[i] = uint64(o.h)\n\t\t}\n\t}\n", k.kind)
		}
	}
	w("}\n")
	return b.String()
}

// cFast names, by function name and variant, the C fast path (impl/allocmap.h, impl/pool.h, impl/queuemirror.h, impl/doneevents.h) each of these entry points
// tries first, called with all its parameters in order: it answers only
// successes (1), else the shim calls Go, which gives every error.
var cFast = map[string]struct {
	fn     string
	params int
}{
	"olMemAlloc":         {"ol_fast_alloc", 4},
	"olMemFree":          {"ol_fast_free", 1},
	"olMemcpy":           {"ol_fast_memcpy", 6},
	"olGetMemInfo":       {"ol_fast_meminfo", 4},
	"olGetMemInfoSize":   {"ol_fast_meminfo_size", 3},
	"olSyncQueue":        {"ol_fast_sync", 1},
	"olCreateEvent":      {"ol_fast_event", 2},
	"olCreateEvent23":    {"ol_fast_event23", 3},
	"olLaunchKernel":     {"ol_fast_launch", 6},
	"olLaunchKernel23":   {"ol_fast_launch23", 8},
	"olSyncEvent":        {"ol_fast_sync_event", 1},
	"olDestroyEvent":     {"ol_fast_destroy_event", 1},
	"olGetEventInfo":     {"ol_fast_event_info", 4},
	"olGetEventInfoSize": {"ol_fast_event_info_size", 3},
	"olWaitEvents":       {"ol_fast_wait_events", 3},
}

// fastPath is the C fast path the shim of f starts with, or "".
func fastPath(f *api.Function) string {
	fp, ok := cFast[f.Name+f.Variant]
	if !ok {
		return ""
	}
	if len(f.Params) != fp.params {
		panic(fmt.Sprintf("gen: %s has %d parameters; its fast path %s takes %d", f.Name, len(f.Params), fp.fn, fp.params))
	}
	var args []string
	for _, p := range f.Params {
		args = append(args, p.Name)
	}
	return fmt.Sprintf("  if (%s(%s))\n    return OL_SUCCESS;\n", fp.fn, strings.Join(args, ", "))
}
