package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/runtime"
)

// TestRootErrorNamesTheRoot: a root that cannot be used is invalid params
// naming its index (fileadapter.RootError), whatever the paths look like;
// serve used to search the error text for each quoted root.
func TestRootErrorNamesTheRoot(t *testing.T) {
	good := t.TempDir()
	file := filepath.Join(good, "f.txt")
	if err := os.WriteFile(file, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		roots []string
		field string
	}{
		{[]string{good, filepath.Join(good, "missing")}, "roots[1]"},
		{[]string{file, good}, "roots[0]"},                     // not a directory
		{[]string{good, good + "/sub/../missing"}, "roots[1]"}, // the message quotes a cleaned path
		{[]string{filepath.Join(good, "missing"), good}, "roots[0]"},
	} {
		_, _, err := New(Options{})(context.Background(), Config{Options: protocol.InitializeParams{Roots: tc.roots, Watch: protocol.WatchHooks}})
		var fe *protocol.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%v: err %v, want a field error naming %s", tc.roots, err, tc.field)
		}
	}
}

// TestNoRoots: a session without roots refuses files and serves keyed
// sources; its watch mode is hooks.
func TestNoRoots(t *testing.T) {
	core, watch, err := New(Options{})(context.Background(), Config{Options: protocol.InitializeParams{Roots: []string{}}})
	if err != nil || watch != protocol.WatchHooks {
		t.Fatalf("New: %v, watch %q", err, watch)
	}
	defer core.Close()
	_, err = core.Observe(context.Background(), protocol.ObserveParams{Agent: "a", Sources: []protocol.Source{{URI: "file:///etc/hostname", Text: "x"}}})
	if !errors.Is(err, runtime.ErrOutsideRoots) {
		t.Errorf("file in a session without roots: %v, want ErrOutsideRoots", err)
	}
	o, err := core.Observe(context.Background(), protocol.ObserveParams{Agent: "a", Sources: []protocol.Source{{URI: "res://db/1", Text: "x", Version: "v1"}}})
	if err != nil || o.Status != protocol.Valid {
		t.Errorf("keyed source: %+v %v", o, err)
	}
}
