package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/audit/golden from this run")

const stores = "../testdata/audit/sessions"

const goldenDir = "../testdata/audit/golden"

// golden compares got with testdata/audit/golden/name (or rewrites it).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join(goldenDir, name)
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./audit -run %s -update)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from this run (go test ./audit -update to accept):\n--- got\n%s", file, got)
	}
}

// condensedID is the OpenHands session whose history the SDK's
// LLMSummarizingCondenser condensed twice.
const condensedID = "c4d6379d-cf4e-5874-9058-3a909ff3eeec"

// TestAuditRealStores replays the sessions the pinned OpenHands SDK and
// OpenCode really wrote (testdata/audit/README.md) and checks the reports
// against the goldens, and the facts each scenario was scripted to show.
func TestAuditRealStores(t *testing.T) {
	for dir, n := range map[string]int{"openhands": 3, "opencode": 3, "openai": 2} {
		t.Run(dir, func(t *testing.T) {
			ins, errs := Find([]string{filepath.Join(stores, dir)})
			if len(errs) > 0 || len(ins) != n {
				t.Fatalf("inputs %v, errors %v: want the %d captured sessions", ins, errs, n)
			}
			rep, err := Run(context.Background(), ins, Options{}, true, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Errors) > 0 {
				t.Fatalf("errors: %v", rep.Errors)
			}
			var js bytes.Buffer
			enc := json.NewEncoder(&js)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				t.Fatal(err)
			}
			golden(t, dir+".json", js.Bytes())
			var txt bytes.Buffer
			if err := rep.WriteText(&txt); err != nil {
				t.Fatal(err)
			}
			golden(t, dir+".txt", txt.Bytes())
			for _, s := range rep.Sessions {
				// Every scenario reads a file, then it changes (the agent's
				// edit or behind its back) while the read is in context.
				if s.StaleViews == 0 || s.StaleCalls == 0 || s.Concord.Errata+s.Concord.InPlace == 0 {
					t.Errorf("%s: no stale view found or repaired: %+v", s.File, s)
				}
				if s.Calls < 4 {
					t.Errorf("%s: %d model calls, the script made at least 4", s.File, s.Calls)
				}
				if filepath.Base(s.File) == "compacted.json" {
					// OpenCode compacted after call 3: the read its edit made
					// stale was carried by calls 3 and 4 (the summary's), then
					// left the prompt.
					if s.Condensations != 1 || s.StaleViews != 1 || s.StaleCalls != 2 || s.Calls != 5 {
						t.Errorf("compacted session: %d condensations, %d stale views, %d of %d calls; want 1, 1, 2 of 5",
							s.Condensations, s.StaleViews, s.StaleCalls, s.Calls)
					}
					// Its summary ("ok", the assistant message marked
					// summary) is tracked, built from the reads it
					// replaced; it restates no line, so nothing makes it stale.
					if s.Summaries != 1 || s.StaleSummaries != 0 {
						t.Errorf("compacted session: %d summaries, %d stale; want 1, 0", s.Summaries, s.StaleSummaries)
					}
				}
				if s.Session == condensedID {
					// The SDK's condenser forgot the first four calls' results:
					// the whole-file view went stale at the edit after it and
					// was carried 2 calls; the view of lines 10-14 went stale
					// only after it had been forgotten.
					if s.Condensations != 2 || s.StaleViews != 1 || s.Duration.Max != 2 {
						t.Errorf("condensed session: %d condensations, %d stale views carried at most %d calls; want 2, 1, 2",
							s.Condensations, s.StaleViews, s.Duration.Max)
					}
					// Each Condensation's summary is tracked (the second
					// replaces the first, "<id>-summary", and takes its
					// provenance on); neither quotes a line that changed.
					if s.Summaries != 2 || s.StaleSummaries != 0 {
						t.Errorf("condensed session: %d summaries, %d stale; want 2, 0", s.Summaries, s.StaleSummaries)
					}
				}
			}
		})
	}
}

// treeSum is a checksum of every file (path, mode, content) under root.
func treeSum(t *testing.T, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v %d\n", p, info.Mode(), info.Size())
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAuditDamagedInputs: unknown and damaged files each get an error
// naming them, the other sessions are audited all the same, and nothing
// under the input changes.
func TestAuditDamagedInputs(t *testing.T) {
	root := t.TempDir()
	copyTree(t, filepath.Join(stores, "openhands"), filepath.Join(root, "openhands"))
	copyTree(t, filepath.Join(stores, "opencode"), filepath.Join(root, "opencode"))
	bad := map[string]string{
		"truncated.json":   `{"info": {"id": "ses_x"}, "messages": [`,
		"unknown.json":     `{"hello": "world"}`,
		"notjson.jsonl":    "this is not json\n",
		"orphan-tool.json": `[{"role":"tool","tool_call_id":"nope","content":"x"}]`,
		"opencode.db":      "SQLite format 3\x00 the rest of a database",
	}
	for name, text := range bad {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A conversation with one event cut short.
	broken := filepath.Join(root, "openhands-broken")
	copyTree(t, filepath.Join(stores, "openhands"), broken)
	events, _ := filepath.Glob(filepath.Join(broken, "*", "events", "event-00003-*.json"))
	if len(events) == 0 {
		t.Fatal("no event-00003 to damage")
	}
	if err := os.WriteFile(events[0], []byte(`{"kind": "ObservationEvent", "observation": `), 0o644); err != nil {
		t.Fatal(err)
	}
	before := treeSum(t, root)

	// A file named outright is read whatever its name (a directory search
	// takes .json and .jsonl files only).
	ins, errs := Find([]string{root, filepath.Join(root, "missing"), filepath.Join(root, "opencode.db")})
	rep, err := Run(context.Background(), ins, Options{Timeline: true}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep.Errors = append(errs, rep.Errors...)
	if after := treeSum(t, root); after != before {
		t.Fatal("the audit changed its input tree")
	}
	named := map[string]string{}
	for _, e := range rep.Errors {
		named[filepath.Base(e.File)] = e.Error
	}
	for _, want := range []string{"truncated.json", "unknown.json", "notjson.jsonl", "orphan-tool.json", "missing", "opencode.db", filepath.Base(filepath.Dir(filepath.Dir(events[0])))} {
		if _, ok := named[want]; !ok {
			t.Errorf("no error names %s; errors: %v", want, rep.Errors)
		}
	}
	if msg := named["unknown.json"]; !strings.Contains(msg, "not a session") {
		t.Errorf("unknown.json: %q does not say what is accepted", msg)
	}
	if msg := named["opencode.db"]; !strings.Contains(msg, "opencode export") {
		t.Errorf("opencode.db: %q does not say to export the sessions", msg)
	}
	// The 6 good sessions, and the broken copy's 2 other conversations.
	if rep.Totals.Sessions != 8 {
		t.Errorf("%d sessions audited, want 8; errors %v", rep.Totals.Sessions, rep.Errors)
	}
}

// TestProgressBar: the bar is drawn in place and ends its line at the
// last input; a pipe or a buffer is no terminal (no bar there).
func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	p := ProgressBar(&b)
	for i := 1; i <= 4; i++ {
		p(i, 4)
	}
	want := "\r[#######.......................] 1/4 sessions" +
		"\r[###############...............] 2/4 sessions" +
		"\r[######################........] 3/4 sessions" +
		"\r[##############################] 4/4 sessions\n"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if IsTerminal(&b) || IsTerminal(w) {
		t.Error("a buffer or a pipe taken for a terminal")
	}
}

// TestAuditOpenAIMatchesOpenHands: the same two OpenHands sessions, once
// from the SDK's persisted events and once as the model received them (an
// OpenAI-format message list), give the same stale figures.
func TestAuditOpenAIMatchesOpenHands(t *testing.T) {
	audit := func(path string) *SessionReport {
		t.Helper()
		ins, errs := Find([]string{path})
		if len(errs) > 0 || len(ins) != 1 {
			t.Fatalf("%s: %v %v", path, ins, errs)
		}
		rep, err := Run(context.Background(), ins, Options{}, true, nil)
		if err != nil || len(rep.Errors) > 0 {
			t.Fatal(err, rep.Errors)
		}
		return rep.Sessions[0]
	}
	for name, store := range map[string]string{
		"read-edit-read":  "0f70993276f454b88faa740cf601b85e",
		"changed-outside": "8e87b4649a375a76a5266a829b0e05e7",
	} {
		t.Run(name, func(t *testing.T) {
			oh := audit(filepath.Join(stores, "openhands", store))
			oa := audit(filepath.Join(stores, "openai", "openhands-"+name+".json"))
			type figures struct {
				Calls, StaleCalls, Views, StaleViews, StaleTokens int
				ByKind, ByFormat                                  map[string]int
				Duration                                          Duration
				Errata, InPlace                                   int
			}
			fig := func(s *SessionReport) figures {
				return figures{s.Calls, s.StaleCalls, s.Views, s.StaleViews, s.StaleTokens, s.ByKind, s.ByFormat, s.Duration,
					s.Concord.Errata, s.Concord.InPlace}
			}
			if a, b := fig(oh), fig(oa); fmt.Sprint(a) != fmt.Sprint(b) {
				t.Errorf("persisted events: %+v\nmessage list:     %+v", a, b)
			}
		})
	}
}

// TestFind: a conversation is found from its directory, its events/
// directory or any directory above, once; JSON files are inputs whatever
// their name; other files in a searched directory are left alone.
func TestFind(t *testing.T) {
	conv := filepath.Join(stores, "openhands", "0f70993276f454b88faa740cf601b85e")
	for _, paths := range [][]string{
		{conv},
		{filepath.Join(conv, "events")},
		{conv, filepath.Join(conv, "events"), filepath.Join(stores, "openhands")},
	} {
		ins, errs := Find(paths)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		n := 0
		for _, in := range ins {
			if in.Path == conv && in.Dir {
				n++
			}
		}
		if n != 1 {
			t.Errorf("Find(%v) = %v: want %s once", paths, ins, conv)
		}
	}
	dir := t.TempDir()
	for name, text := range map[string]string{"a.json": "[]", "b.JSONL": "", "notes.txt": "x"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ins, errs := Find([]string{dir})
	if len(errs) > 0 || len(ins) != 2 || filepath.Base(ins[0].Path) != "a.json" || filepath.Base(ins[1].Path) != "b.JSONL" {
		t.Errorf("Find(%s) = %v, %v: want a.json and b.JSONL", dir, ins, errs)
	}
}
