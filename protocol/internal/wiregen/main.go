// Command wiregen writes the bindings' wire types from package protocol, so
// a field is added in one place (protocol/protocol.go): a JSON Schema
// document (protocol/schema.json), then from it the TypeScript types
// (bindings/ts/src/wire.ts) and Python TypedDicts
// (bindings/python/concord_openhands/wire.py). Run it with
// go generate ./protocol; a test fails while a checked-in file is stale.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// The generated files, relative to the repository root.
const (
	schemaPath = "protocol/schema.json"
	tsPath     = "bindings/ts/src/wire.ts"
	pyPath     = "bindings/python/concord_openhands/wire.py"
	protoDir   = "protocol"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	files, err := generate(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wiregen:", err)
		os.Exit(1)
	}
	for _, f := range files {
		p := filepath.Join(*root, f.path)
		if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, f.data) {
			continue // unchanged: keep the file's time (make rebuilds nothing)
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "wiregen:", err)
			os.Exit(1)
		}
	}
}

type file struct {
	path string
	data []byte
}

// generate is every generated file's content, for the repository at root.
func generate(root string) ([]file, error) {
	doc, err := build(filepath.Join(root, protoDir))
	if err != nil {
		return nil, fmt.Errorf("read package protocol: %w", err)
	}
	schema, err := doc.encode()
	if err != nil {
		return nil, err
	}
	sub, err := forBindings(doc)
	if err != nil {
		return nil, err
	}
	ts, err := typeScript(sub)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tsPath, err)
	}
	py, err := python(sub)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pyPath, err)
	}
	return []file{{schemaPath, schema}, {tsPath, ts}, {pyPath, py}}, nil
}
