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
func outputs(s *api.Spec) map[string]string {
	return map[string]string{
		"include/offload/OffloadAPI.h":   genHeader(s),
		"include/offload.h":              genForwardHeader(),
		"cmd/liboffload/zshims.c":        genShims(s),
		"cmd/liboffload/zexports.go":     genExports(s),
		"cmd/liboffload/exports.map":     genExportsMap(s),
		"api/ol/zenums.go":               genEnums(s),
		"impl/zentry.go":                 genEntry(s),
		"impl/zdeviceinfo.go":            genImplDeviceInfo(s),
		"impl/zsnapshot.go":              genSnapshot(s),
		"plugins/plugin/zdeviceinfo.go":  genPluginDeviceInfo(s),
		"tests/c/abi/zabi_layout.c":      genABILayout(s),
		"tests/c/abi/zabi_functions.txt": genABIFunctionList(s),
		"python/liboffload/_api.py":      genPython(s),
		"docs/api.md":                    genAPIDocs(s),
	}
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
