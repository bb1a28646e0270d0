package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/fileadapter"
	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/runtime"
	"github.com/concord-ctx/concord/runtime/keyed"
)

// TestRemoteChanged: a change another host made reaches the blocks that
// depend on it: a shared file is re-read (even with an unchanged stamp
// cache, the read decides), a keyed source is marked changed on that host.
func TestRemoteChanged(t *testing.T) {
	ctx := context.Background()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "a.txt")
	if err := os.WriteFile(file, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fileURI := "file://" + file
	tests := []struct {
		name    string
		observe bool   // the agent read the source first
		uri     string // the source the remote change names
		change  func() // what the other host did to it here
		rc      runtime.RemoteChange
		status  protocol.Status // "" = no block changed
		notice  string
		text    string
	}{
		{name: "keyed source marked changed on the host", observe: true, uri: "res://db/users/42",
			rc:     runtime.RemoteChange{Version: "v2", Host: "build-2", Agent: "writer"},
			status: protocol.Invalid, notice: "[concord] res://db/users/42 was changed on host build-2 by agent writer after this read"},
		{name: "keyed source without an agent", observe: true, uri: "res://db/users/43",
			rc:     runtime.RemoteChange{Version: "v2", Host: "build-3"},
			status: protocol.Invalid, notice: "was changed on host build-3 after this read"},
		{name: "keyed version already held", observe: true, uri: "res://db/users/44",
			rc: runtime.RemoteChange{Version: "v1", Host: "build-2"}},
		{name: "untracked source", uri: "res://db/users/45", rc: runtime.RemoteChange{Version: "v2", Host: "build-2"}},
		{name: "shared file re-read", observe: true, uri: fileURI,
			change: func() {
				if err := os.WriteFile(file, []byte("one\nTWO\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			rc: runtime.RemoteChange{Version: "sha256:whatever", Host: "build-2"}, status: protocol.Patched, text: "one\nTWO"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := runtime.New(runtime.Config{Options: protocol.InitializeParams{Placement: runtime.PlacementInplace}})
			defer m.Close()
			fa, err := fileadapter.New(fileadapter.Config{Roots: []string{root}, Mode: fileadapter.ModeHooks}, m.Hint)
			if err != nil {
				t.Fatal(err)
			}
			m.AddAdapter(fa)
			m.AddAdapter(keyed.New(nil))
			var block string
			if tt.observe {
				text, version := "one\ntwo\n", ""
				if !strings.HasPrefix(tt.uri, "file:") {
					text, version = "id: 42", "v1"
				}
				res, err := m.Observe(ctx, protocol.ObserveParams{Agent: "main", Anchor: "call_1",
					Sources: []protocol.Source{{URI: tt.uri, Text: text, Version: version}}})
				if err != nil || res.Status != protocol.Valid {
					t.Fatalf("observe: %+v, %v", res, err)
				}
				block = res.Block
				m.Sync(ctx, protocol.SyncParams{Agent: "main"}) // the model saw it
			}
			if tt.change != nil {
				tt.change()
			}
			tt.rc.URI = tt.uri
			ids, err := m.RemoteChanged(ctx, tt.rc)
			if err != nil {
				t.Fatal(err)
			}
			if tt.status == "" {
				if len(ids) != 0 {
					t.Fatalf("RemoteChanged changed %v, want nothing", ids)
				}
				if !tt.observe && m.Stats().Sources != 0 {
					t.Fatalf("an untracked source was registered: %+v", m.Stats())
				}
				return
			}
			if len(ids) != 1 || ids[0] != block {
				t.Fatalf("RemoteChanged = %v, want [%s]", ids, block)
			}
			res, err := m.Sync(ctx, protocol.SyncParams{Agent: "main"})
			if err != nil || len(res.Blocks) != 1 {
				t.Fatalf("sync: %+v, %v", res, err)
			}
			v := res.Blocks[0]
			if v.Status != tt.status || !strings.Contains(v.Notice, tt.notice) || tt.text != "" && (len(v.Sources) != 1 || v.Sources[0].Text != tt.text) {
				t.Fatalf("view %+v, want status %s, notice %q, text %q", v, tt.status, tt.notice, tt.text)
			}
			if tt.status != protocol.Invalid {
				return
			}
			// Another host's later change names that host; the source's
			// next report by this host's client brings the block back.
			if ids, _ := m.RemoteChanged(ctx, runtime.RemoteChange{URI: tt.uri, Version: "v3", Host: "build-9"}); len(ids) != 1 {
				t.Fatalf("second remote change changed %v", ids)
			}
			if res, _ := m.Sync(ctx, protocol.SyncParams{Agent: "main"}); len(res.Blocks) != 1 || !strings.Contains(res.Blocks[0].Notice, "build-9") {
				t.Fatalf("after the second change: %+v", res.Blocks)
			}
			text := "id: 42"
			if _, err := m.SourceChanged(ctx, protocol.SourceChangedParams{URI: tt.uri, Version: "v3", Text: &text}); err != nil {
				t.Fatal(err)
			}
			if res, _ := m.Sync(ctx, protocol.SyncParams{Agent: "main"}); len(res.Blocks) != 1 || res.Blocks[0].Status == protocol.Invalid {
				t.Fatalf("after this host's client reported the source: %+v", res.Blocks)
			}
		})
	}
}
