package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedFilesUpToDate regenerates in memory and compares with the
// checked-in files: CI fails when protocol.go changed without go generate.
func TestGeneratedFilesUpToDate(t *testing.T) {
	const root = "../../.."
	files, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(root, f.path))
		if err != nil {
			t.Errorf("%s: %v; run go generate ./protocol", f.path, err)
			continue
		}
		if !bytes.Equal(got, f.data) {
			t.Errorf("%s is stale (line %d differs); run go generate ./protocol and commit the result", f.path, firstDiffLine(got, f.data))
		}
	}
}

// firstDiffLine is the 1-based line where a and b first differ.
func firstDiffLine(a, b []byte) int {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}

// TestUpperSnake: Python constant names from Go ones, acronyms included.
func TestUpperSnake(t *testing.T) {
	for in, want := range map[string]string{
		"Version": "VERSION", "CodeParseError": "CODE_PARSE_ERROR", "MethodCancelRequest": "METHOD_CANCEL_REQUEST",
		"CodeUnsupportedProto": "CODE_UNSUPPORTED_PROTO", "FramingContentLength": "FRAMING_CONTENT_LENGTH", "ParseURI": "PARSE_URI",
	} {
		if got := upperSnake(in); got != want {
			t.Errorf("upperSnake(%q) = %q, want %q", in, got, want)
		}
	}
}
