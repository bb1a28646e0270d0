package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/rpc/client"
)

// TestRereadMemoryFlat (issue 32): a session in a hook runtime re-reads one
// file all day. Each `cat -n F` through recognize supersedes the read
// before it, with a sync after each, through the real binary. The core
// keeps a bounded audit trail of superseded reads, so once the trail is
// full the server's live heap must not grow with the reads: after N and 2N
// reads it differs by at most 1 KB per read. (Before the intake kept each
// block's renderer in the core, the server's per-block map of recognized
// results grew 105 KB per read without bound.)
func TestRereadMemoryFlat(t *testing.T) {
	n := reliabilitySize(1200, 3000) // past the audit trail's 1,024 superseded reads at both points
	root := tempRoot(t)
	file := filepath.Join(root, "big.txt")
	var b strings.Builder
	for i := 0; b.Len() < 25<<10; i++ {
		fmt.Fprintf(&b, "line %d of a file that an agent reads again and again, %s\n", i, strings.Repeat("x", i%40))
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder // cat -n's output
	for i, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		fmt.Fprintf(&out, "%6d\t%s\n", i+1, l)
	}
	c := startServe(t)
	initialize(t, c, root, "hooks")
	args, _ := json.Marshal(map[string]string{"command": "cat -n big.txt"})
	meta := json.RawMessage(`{"exit":0,"truncated":false}`)
	read := func(i int) {
		p := protocol.RecognizeParams{Agent: "main", Turn: i + 1, Anchor: fmt.Sprintf("call_%d", i),
			Call: protocol.ToolCall{Runtime: "opencode", Tool: "bash", Arguments: args, Output: out.String(), Cwd: root, Metadata: meta}}
		var res protocol.RecognizeResult
		if err := c.Call(context.Background(), protocol.MethodRecognize, p, &res); err != nil {
			t.Fatalf("read %d: recognize: %v", i, err)
		}
		if res.Kind != "read" || res.Block == "" || (i > 0 && len(res.Superseded) != 1) {
			t.Fatalf("read %d: %+v, want a read block superseding the one before", i, res)
		}
		if err := c.Call(context.Background(), protocol.MethodSync, protocol.SyncParams{Agent: "main", Turn: i + 1}, nil); err != nil {
			t.Fatalf("read %d: sync: %v", i, err)
		}
	}
	for i := range n {
		read(i)
	}
	atN := heapAfter(t, c)
	for i := n; i < 2*n; i++ {
		read(i)
	}
	at2N := heapAfter(t, c)
	perRead := float64(at2N.HeapLiveBytes-atN.HeapLiveBytes) / float64(n)
	rss, _ := vmRSS(c.Pid())
	t.Logf("FIGURE reread: live heap after %d reads %d kB, after %d reads %d kB: %+.0f bytes per read; rss %d kB; blocks %v",
		n, atN.HeapLiveBytes>>10, 2*n, at2N.HeapLiveBytes>>10, perRead, rss, at2N.Blocks)
	if perRead > 1024 {
		t.Errorf("live heap grew %.0f bytes per superseded read (limit 1024)", perRead)
	}
	if at2N.Blocks[protocol.Valid] != 1 {
		t.Errorf("blocks %v: want the newest read valid", at2N.Blocks)
	}
}

// heapAfter is the server's stats, with its live heap as of its last
// collection (frequent: every read allocates the 25 KB request).
func heapAfter(t *testing.T, c *client.Client) protocol.StatsResult {
	t.Helper()
	var st protocol.StatsResult
	if err := c.Call(context.Background(), protocol.MethodStats, struct{}{}, &st); err != nil {
		t.Fatalf("stats: %v", err)
	}
	if st.HeapLiveBytes == 0 {
		t.Fatalf("stats: no heapLiveBytes: %+v", st)
	}
	return st
}
