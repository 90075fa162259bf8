package api

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the spec parser: it never panics, and
// a spec it accepts keeps the properties the generator relies on (unique
// function names, known types, checks that name parameters) and reads back
// the same after being written out again.
func FuzzParse(f *testing.F) {
	// (The real spec is not a seed: mutating and minimising 70 KB inputs
	// stalls the fuzzer; Load parses it in every generator test.)
	f.Add([]byte(`{"functions":[{"name":"olX","desc":"d","params":[],"checks":[]}]}`))
	f.Add([]byte(`{"functions":[{"name":"olX","desc":"d","params":[{"name":"A","type":"nonsense_t","dir":"in","desc":"d"}],"checks":[]}]}`))
	f.Add([]byte(`{"functions":[{"name":"olX","desc":"d","params":[],"checks":[{"errc":"OL_ERRC_NOPE","cond":"NULL == A"}]}]}`))
	f.Add([]byte(`{"functions":[{"name":"olX","desc":"d","params":[{"name":"A","type":"void *","dir":"in","desc":"d"}],"checks":[{"errc":"OL_ERRC_INVALID_NULL_POINTER","cond":"NULL == A"}]}],"enums":[{"name":"ol_errc_t","values":[{"name":"OL_ERRC_INVALID_NULL_POINTER","value":3}]}]}`))
	f.Add([]byte(`{"functions":[`))
	f.Add([]byte(markSpec)) // the versioned, list and ranges marks
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			if s != nil {
				t.Fatal("Parse returned a spec with an error")
			}
			return
		}
		names := map[string]bool{}
		for _, fn := range s.Functions {
			if names[fn.Name] {
				t.Fatalf("accepted %s twice", fn.Name)
			}
			names[fn.Name] = true
			for _, p := range fn.Params {
				if s.Classify(p.Type).Kind == KindUnknown {
					t.Fatalf("accepted %s.%s of unknown type %q", fn.Name, p.Name, p.Type)
				}
			}
		}
		if len(s.Functions) == 0 {
			t.Fatal("accepted a spec without functions")
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("an accepted spec does not write out: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("an accepted spec, written out, is refused: %v", err)
		}
		if !reflect.DeepEqual(s, again) {
			t.Fatal("an accepted spec reads back differently after being written out")
		}
	})
}
