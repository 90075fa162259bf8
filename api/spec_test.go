package api

import (
	"strings"
	"testing"
)

// markSpec is a small spec with each mark of 23.1's kinds of argument: a
// versioned struct with a counted array and a later field, a list whose
// entries' data are typed by their enum value, and parallel arrays.
// Each edit replaces one piece of it to break one rule.
const markSpec = `{"releases":[{"name":"1.0","soname":"l.so.1.0","include":"include","desc":"d"}],
"enums":[{"name":"x_prop_type_t","desc":"d","values":[{"name":"X_PROP_END","value":0,"desc":"d"},{"name":"X_PROP_A","value":1,"desc":"d","data":"uint32_t"},{"name":"X_PROP_B","value":2,"desc":"d","data":"bool"}]}],
"structs":[
 {"name":"x_args_t","desc":"d","size":"Size","fields":[{"name":"Size","type":"size_t","desc":"d"},{"name":"Count","type":"uint32_t","desc":"d"},{"name":"Items","type":"const uint32_t *","desc":"d","count":"Count"},{"name":"Later","type":"size_t","desc":"d","optional":true}]},
 {"name":"x_prop_t","desc":"d","fields":[{"name":"type","type":"x_prop_type_t","desc":"d"},{"name":"data","type":"void *","desc":"d"}]}],
"functions":[{"name":"olX","desc":"d","checks":[],"params":[
 {"name":"Args","type":"const x_args_t *","dir":"in","desc":"d","optional":true,"ptr":"versioned"},
 {"name":"Props","type":"const x_prop_t *","dir":"in","desc":"d","optional":true,"ptr":"list","end":"X_PROP_END"},
 {"name":"N","type":"size_t","dir":"in","desc":"d"},
 {"name":"Ptrs","type":"void **","dir":"in","desc":"d","optional":true,"ptr":"ranges","count":"N","size":"Sizes"},
 {"name":"Sizes","type":"const size_t *","dir":"in","desc":"d","optional":true,"ptr":"values","count":"N"}]}]}`

// markSpecWith parses the spec of the mark tests, with edits applied.
func markSpecWith(t *testing.T, edits ...string) (*Spec, error) {
	t.Helper()
	s := markSpec
	for i := 0; i < len(edits); i += 2 {
		if !strings.Contains(s, edits[i]) {
			t.Fatalf("the mark spec has no %q", edits[i])
		}
		s = strings.Replace(s, edits[i], edits[i+1], 1)
	}
	return Parse([]byte(s))
}

func TestSpecMarks(t *testing.T) {
	s, err := markSpecWith(t)
	if err != nil {
		t.Fatal(err)
	}
	st, e, err := s.ListOf(s.Functions[0].Params[1])
	if err != nil || st.Name != "x_prop_t" || e.Name != "x_prop_type_t" {
		t.Fatalf("ListOf: %v %v %v", st, e, err)
	}
	for _, c := range []struct {
		why   string
		edits []string
	}{
		{"ranges whose size is not a parameter", []string{`"size":"Sizes"`, `"size":"Nope"`}},
		{"ranges whose sizes have another count", []string{`"ptr":"values","count":"N"`, `"ptr":"values","count":"Ptrs"`}},
		{"ranges whose sizes are not values", []string{`"ptr":"values","count":"N"`, `"ptr":"handles","count":"N"`}},
		{"versioned on a struct without size", []string{`"size":"Size",`, ``}},
		{"a size field that is not first", []string{`"size":"Size"`, `"size":"Count"`}},
		{"a required field after an optional one", []string{`{"name":"Count","type":"uint32_t","desc":"d"}`, `{"name":"Count","type":"uint32_t","desc":"d","optional":true}`}},
		{"an optional size field", []string{`{"name":"Size","type":"size_t","desc":"d"}`, `{"name":"Size","type":"size_t","desc":"d","optional":true}`}},
		{"a count naming no field", []string{`"count":"Count"`, `"count":"Nope"`}},
		{"a count on a scalar", []string{`{"name":"Later","type":"size_t","desc":"d","optional":true}`, `{"name":"Later","type":"size_t","desc":"d","optional":true,"count":"Count"}`}},
		{"a count outside a versioned struct", []string{`{"name":"data","type":"void *","desc":"d"}`, `{"name":"data","type":"void *","desc":"d","count":"type"}`}},
		{"a list end that is no value", []string{`"end":"X_PROP_END"`, `"end":"X_PROP_NONE"`}},
		{"a list without an end", []string{`,"end":"X_PROP_END"`, ``}},
		{"an end on another mark", []string{`"ptr":"values","count":"N"`, `"ptr":"values","count":"N","end":"X_PROP_END"`}},
		{"a list value without a data type", []string{`,"data":"bool"`, ``}},
		{"a list value of an unreadable data type", []string{`"data":"bool"`, `"data":"float"`}},
		{"a list entry without a data pointer", []string{`{"name":"data","type":"void *","desc":"d"}`, `{"name":"data","type":"size_t","desc":"d"}`}},
		{"a list of a struct without an enum", []string{`"type":"const x_prop_t *"`, `"type":"const x_args_t *"`}},
	} {
		if _, err := markSpecWith(t, c.edits...); err == nil {
			t.Errorf("accepted %s", c.why)
		}
	}
}
