package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/rpc/transcript"
)

// TestQueryWatched: through the real binary with fsnotify watching, a
// grep -rl result is recognized as a query source; a file created in a
// new subdirectory under its scope makes the server send blocksChanged (a
// real fsnotify event, no sync asked for it), and the next sync carries
// the result re-run, in place, as the terminal would show it now.
func TestQueryWatched(t *testing.T) {
	for _, watch := range []string{"fsnotify", "hooks"} {
		t.Run(watch, func(t *testing.T) {
			t.Parallel()
			c := startServe(t)
			hints := make(chan protocol.BlocksChangedParams, 16)
			c.HandleBlocksChanged(func(p protocol.BlocksChangedParams) {
				select {
				case hints <- p:
				default:
				}
			})
			root := tempRoot(t)
			transcript.AtomicWrite(t, filepath.Join(root, "src/app.py"), []byte("# TODO: flags\n"))
			transcript.AtomicWrite(t, filepath.Join(root, "src/lib/util.py"), []byte("x = 1\n"))
			initialize(t, c, root, watch)
			ctx := context.Background()
			args, _ := json.Marshal(map[string]string{"command": "grep -rl TODO src | sort"})
			exit := 0
			var rec protocol.RecognizeResult
			if err := c.Call(ctx, protocol.MethodRecognize, protocol.RecognizeParams{Agent: "main", Turn: 1, Anchor: "call_1",
				Call: protocol.ToolCall{Runtime: "openhands", Tool: "terminal", Arguments: args, Output: "src/app.py", ExitCode: &exit, Cwd: root}}, &rec); err != nil {
				t.Fatal(err)
			}
			if rec.Kind != "query" || rec.Status != protocol.Valid || len(rec.Sources) != 1 {
				t.Fatalf("recognize = %+v, want a valid query block", rec)
			}
			transcript.AtomicWrite(t, filepath.Join(root, "src/new/deep/todo.py"), []byte("# TODO: more\n"))
			if watch == "fsnotify" {
				select {
				case h := <-hints:
					if len(h.Agents) != 1 || h.Agents[0] != "main" {
						t.Errorf("blocksChanged agents = %v, want [main]", h.Agents)
					}
				case <-time.After(30 * time.Second): // a lost watch fails instead of hanging
					t.Fatal("no blocksChanged after a file was created under the query's scope")
				}
			}
			var sync protocol.SyncResult
			if err := c.Call(ctx, protocol.MethodSync, protocol.SyncParams{Agent: "main", Turn: 2}, &sync); err != nil {
				t.Fatal(err)
			}
			want := "src/app.py\nsrc/new/deep/todo.py"
			if len(sync.Blocks) != 1 || sync.Blocks[0].Status != protocol.Patched || sync.Blocks[0].View != want {
				t.Fatalf("sync = %+v, want the block patched with view %q", sync, want)
			}
		})
	}
}
