// Command gen writes every file of the repository that is derived from the
// API specification in api/offload.json. Run it from the repository root
// (make generate). With -check it writes nothing and fails when a generated
// file is missing or differs from what the specification gives.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"strings"

	"github.com/liboffload-go/liboffload-go/api"
)

// outputs lists the generated files, relative to the repository root.
// The Go code is made from the whole spec (every form of every function:
// one build holds them all); what is one release's ABI (header, C entry
// points, version script, ABI test inputs) is made once per release.
func outputs(s *api.Spec) map[string]string {
	out := map[string]string{
		"cmd/liboffload/zexports.go":    genExports(s),
		"api/ol/zenums.go":              genEnums(s),
		"impl/zentry.go":                genEntry(s),
		"impl/zdeviceinfo.go":           genImplDeviceInfo(s),
		"impl/zsnapshot.go":             genSnapshot(s),
		"impl/zrelease.go":              genImplReleases(s),
		"cmd/liboffload/zapi.h":         genReleaseHeader(s),
		"plugins/plugin/zdeviceinfo.go": genPluginDeviceInfo(s),
		"python/liboffload/_api.py":     genPython(s),
		"docs/api.md":                   genAPIDocs(s),
		"cmd/liboffload/zchecks.h":      genCChecks(s),
	}
	for i, r := range s.Releases {
		rs := s.ForRelease(r.Name)
		sfx := releaseSuffix(s, i)
		out[r.Include+"/offload/OffloadAPI.h"] = genHeader(rs)
		out[r.Include+"/offload.h"] = genForwardHeader()
		out["cmd/liboffload/zshims"+sfx+".c"] = genShims(rs, buildConstraint(s, i))
		out["cmd/liboffload/zrelease"+releaseTag(s, i)+".go"] = genRelease(s, i)
		out["cmd/liboffload/exports"+sfx+".map"] = genExportsMap(rs)
		out["impl/zrelease"+releaseTag(s, i)+".go"] = genImplRelease(s, i)
		out["tests/c/abi/zabi_layout"+sfx+".c"] = genABILayout(rs)
		out["tests/c/abi/zabi_functions"+sfx+".txt"] = genABIFunctionList(rs)
	}
	return out
}

func main() {
	root := flag.String("root", ".", "repository root")
	check := flag.Bool("check", false, "compare instead of writing; exit 1 on a difference")
	flag.Parse()
	s, err := api.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	stale := 0
	for rel, text := range outputs(s) {
		if strings.HasSuffix(rel, ".go") {
			src, err := format.Source([]byte(text))
			if err != nil {
				fmt.Fprintf(os.Stderr, "gen: %s: %v\n", rel, err)
				os.Exit(2)
			}
			text = string(src)
		}
		path := filepath.Join(*root, rel)
		old, _ := os.ReadFile(path)
		if bytes.Equal(old, []byte(text)) {
			continue
		}
		if *check {
			fmt.Fprintf(os.Stderr, "gen: %s is out of date (run make generate)\n", rel)
			stale++
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Printf("gen: wrote %s\n", rel)
	}
	if stale > 0 {
		os.Exit(1)
	}
}
