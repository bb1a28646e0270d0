package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestSyncResultWriteJSON: WriteJSON writes json.Marshal's bytes for every
// shape of result: no views, nil views, views with every field, text that
// json escapes (HTML, quotes, control characters, invalid UTF-8), a feed
// whose notice spells the views' key.
func TestSyncResultWriteJSON(t *testing.T) {
	n := 60
	r := &Range{Start: 3, End: 7}
	full := BlockView{Block: "b1", Anchor: "call_1", Agent: "main", Turn: 2, Status: Patched,
		Sources: []Source{{URI: "file:///a<b>.go", Range: r, Text: "x := \"<&>\"\n\ty\u2028\x01\xff", Version: "sha256:ab", TotalLines: &n}, {URI: "res://k", Text: ""}},
		Notice:  "n", SupersededBy: "b9", Reason: "moved: lines 1-2 -> 3-4", Placement: "tail", Erratum: "[concord] e", View: "v"}
	for _, tc := range []struct {
		name string
		res  SyncResult
	}{
		{"zero", SyncResult{}},
		{"no views", SyncResult{Generation: 4, Full: true, Blocks: []BlockView{}, Flushed: true}},
		{"one view", SyncResult{Generation: 1, Blocks: []BlockView{{Block: "b1", Status: Valid}}}},
		{"many views", SyncResult{Generation: 9, Full: true, Blocks: []BlockView{full, {Block: "b2", Status: Invalid, Notice: `re-read "f"`}, full}, Flushed: true}},
		{"feed", SyncResult{Blocks: []BlockView{full}, Feed: &FeedStatus{State: FeedBehind, Unsent: 3, Notice: `"blocks":[]`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(tc.res)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := tc.res.WriteJSON(&got); err != nil {
				t.Fatal(err)
			}
			if got.String() != string(want) {
				t.Errorf("got  %s\nwant %s", got.String(), want)
			}
		})
	}
}

// TestSyncResultWriteJSONError: a writer's error ends the write and is
// returned.
func TestSyncResultWriteJSONError(t *testing.T) {
	res := SyncResult{Blocks: []BlockView{{Block: "b1", Sources: []Source{{Text: strings.Repeat("x", 100)}}}, {Block: "b2"}}}
	for limit := 0; limit < 160; limit += 7 {
		w := &failAfter{left: limit}
		if err := res.WriteJSON(w); !errors.Is(err, errFull) {
			t.Fatalf("limit %d: err %v, want %v", limit, err, errFull)
		}
	}
}

var errFull = errors.New("full")

type failAfter struct{ left int }

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.left {
		return 0, errFull
	}
	f.left -= len(p)
	return len(p), nil
}
