package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/rpc/transcript"
)

// TestSummaryErratumAfterFileChange drives the real binary over stdio as a
// binding does around a compaction (issue 36): config.yaml is read, the
// runtime compacts the read into a summary that restates retry_limit, an
// editor saves a change to that line behind the agent's back, fsnotify
// makes the server hint the agent (blocksChanged), and the next sync
// corrects the summary: an erratum naming it, the file and lines and what
// they say now (auto: the summary was sent), or the summary as written
// followed by the correction (inplace). A later change to a line the
// summary never mentions says nothing.
func TestSummaryErratumAfterFileChange(t *testing.T) {
	const summary = "Summary: config.yaml sets retry_limit to 3 for the eu-west region."
	for _, placement := range []string{protocol.PlacementAuto, protocol.PlacementInplace} {
		t.Run(placement, func(t *testing.T) {
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
			path := filepath.Join(root, "config.yaml")
			transcript.AtomicWrite(t, path, []byte("name: demo\nretry_limit: 3\ntimeout_seconds: 30\nregion: eu-west\n"))
			ctx := context.Background()
			var init protocol.InitializeResult
			if err := c.Call(ctx, protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersion: protocol.Version, Roots: []string{root},
				Watch: protocol.WatchFsnotify, Placement: placement}, &init); err != nil {
				t.Fatal(err)
			}
			call := func(method string, params, result any) {
				t.Helper()
				if err := c.Call(ctx, method, params, result); err != nil {
					t.Fatalf("%s: %v", method, err)
				}
			}
			var obs protocol.ObserveResult
			call(protocol.MethodObserve, protocol.ObserveParams{Agent: "main", Turn: 1, Anchor: "call_1",
				Sources: []protocol.Source{{URI: fileURI(path), Range: &protocol.Range{Start: 1, End: 4}, Text: "name: demo\nretry_limit: 3\ntimeout_seconds: 30\nregion: eu-west"}}}, &obs)
			var sync protocol.SyncResult
			call(protocol.MethodSync, protocol.SyncParams{Agent: "main", Turn: 1}, &sync)
			var comp protocol.CompactedResult
			call(protocol.MethodCompacted, protocol.CompactedParams{Agent: "main", Anchor: "msg_sum", Text: summary, Replaced: []string{"call_1"}}, &comp)
			if comp.Derived == "" || len(comp.Released) != 1 || len(comp.Provenance) != 1 || comp.Provenance[0].URI != fileURI(path) || comp.Provenance[0].EndLine != 4 {
				t.Fatalf("compacted = %+v", comp)
			}
			call(protocol.MethodSync, protocol.SyncParams{Agent: "main", Turn: 2, PrefixRebuilt: true}, &sync)
			if len(sync.Blocks) != 0 {
				t.Fatalf("nothing changed, yet %+v", sync.Blocks)
			}

			transcript.AtomicWrite(t, path, []byte("name: demo\nretry_limit: 5\ntimeout_seconds: 30\nregion: eu-west\n"))
			select {
			case h := <-hints:
				if len(h.Agents) != 1 || h.Agents[0] != "main" {
					t.Errorf("blocksChanged agents = %v, want [main]", h.Agents)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("no blocksChanged within 20s of the edit")
			}
			call(protocol.MethodSync, protocol.SyncParams{Agent: "main", Turn: 3}, &sync)
			want := "[concord] The summary in msg_sum is outdated: " + path + " lines 1-4, which it was built from, changed (now lines 1-4):\n-2: retry_limit: 3\n+2: retry_limit: 5"
			if len(sync.Blocks) != 1 {
				t.Fatalf("sync = %+v, want the summary's correction", sync)
			}
			v := sync.Blocks[0]
			switch placement {
			case protocol.PlacementAuto:
				if v.Anchor != "msg_sum" || v.Status != protocol.DerivedStale || v.Placement != protocol.PlacementTail || v.Erratum != want || v.Show != nil {
					t.Fatalf("view %+v\nwant the erratum %q", v, want)
				}
			default:
				if v.Anchor != "msg_sum" || v.Status != protocol.DerivedStale || v.Placement != "" || v.Show == nil || *v.Show != summary+"\n\n"+want {
					t.Fatalf("view %+v\nwant the summary, then %q", v, want)
				}
			}

			// A line the summary never mentions: no correction (the default
			// rule). The sync's own verify pass reads the changed file, so
			// one sync shows whatever the change gives.
			transcript.AtomicWrite(t, path, []byte("name: demo\nretry_limit: 5\ntimeout_seconds: 90\nregion: eu-west\n"))
			call(protocol.MethodSync, protocol.SyncParams{Agent: "main", Turn: 4}, &sync)
			if len(sync.Blocks) != 0 {
				t.Fatalf("a change to an unmentioned line corrected the summary: %+v", sync.Blocks)
			}
			var st protocol.StatsResult
			call(protocol.MethodStats, nil, &st)
			if st.Blocks[protocol.DerivedStale] != 1 || st.Reconciliations["compacted"] != 1 || !strings.Contains(v.Reason, "changed") {
				t.Errorf("stats %+v, reason %q", st, v.Reason)
			}
		})
	}
}
