package audit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// codexHome lays the rollouts the real Codex CLI wrote (testdata/codex,
// internal/codexrun TestCapture) out as Codex keeps them, under a fresh
// CODEX_HOME, with the project at an absolute path.
func codexHome(t *testing.T, sessions ...string) string {
	home := t.TempDir()
	for _, s := range sessions {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "codex", s, "rollout.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		rel, err := os.ReadFile(filepath.Join("..", "testdata", "codex", s, "rollout-path.txt"))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.NewReplacer("{WS}", "/home/dev/"+s, "{HOME}", home).Replace(string(data))
		p := filepath.Join(home, strings.TrimSpace(string(rel)))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// TestAuditCodexRollouts audits $CODEX_HOME/sessions as a user would
// (`concord audit ~/.codex/sessions`) and checks the figures against what
// each captured session was scripted to do.
func TestAuditCodexRollouts(t *testing.T) {
	t.Setenv("CODEX_HOME", codexHome(t, "exec", "stale"))
	dir, err := CodexSessions()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(os.Getenv("CODEX_HOME"), "sessions"); dir != want {
		t.Fatalf("CodexSessions() = %s, want %s", dir, want)
	}
	ins, errs := Find([]string{dir})
	if len(errs) > 0 || len(ins) != 2 {
		t.Fatalf("inputs %v, errors %v: want the 2 rollouts", ins, errs)
	}
	rep, err := Run(context.Background(), ins, Options{}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) > 0 {
		t.Fatalf("errors: %v", rep.Errors)
	}
	for _, s := range rep.Sessions {
		if s.Format != FormatCodex {
			t.Errorf("%s: format %q", s.File, s.Format)
		}
		switch {
		case strings.Contains(s.File, "01a2457b-700e"): // exec
			// 21 model calls; 22 results (21 tool calls and a web search); the
			// reads: sed -n, cat ×3, nl -ba, rg -n, cat in a workdir, head | grep
			// (8 views; failures, the cut and the running command are events); 7
			// files written by the 5 applied patches (a move writes 2), of which
			// the 2 added ones have a known content.
			check(t, "exec", map[string]int{"modelCalls": s.Calls, "toolResults": s.ToolResults, "trackedViews": s.Views,
				"writes": s.Writes, "unknownWrites": s.UnknownWrites, "listings": s.Listings, "staleViews": s.StaleViews,
				"unrecognized": s.Unrecognized},
				map[string]int{"modelCalls": 21, "toolResults": 22, "trackedViews": 8, "writes": 7, "unknownWrites": 5,
					"listings": 1, "staleViews": 0, "unrecognized": 0})
		default: // stale
			// cat, sed -n, nl -ba, rg -n, ls, then b.txt and main.go change and
			// b.txt is read again: its first view is stale in the last call.
			check(t, "stale", map[string]int{"modelCalls": s.Calls, "toolResults": s.ToolResults, "trackedViews": s.Views,
				"staleViews": s.StaleViews, "staleCalls": s.StaleCalls, "outsideChanges": s.OutsideChanges, "errata": s.Concord.Errata,
				"listings": s.Listings},
				map[string]int{"modelCalls": 7, "toolResults": 6, "trackedViews": 5, "staleViews": 1, "staleCalls": 1,
					"outsideChanges": 1, "errata": 1, "listings": 1})
			if len(s.Files) != 1 || s.Files[0].File != "/home/dev/stale/sub/b.txt" {
				t.Errorf("stale: worst files %+v, want sub/b.txt alone", s.Files)
			}
		}
	}
}

func check(t *testing.T, name string, got, want map[string]int) {
	t.Helper()
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %s = %d, want %d", name, k, got[k], w)
		}
	}
}

func TestCodexSessionsDefault(t *testing.T) {
	t.Setenv("CODEX_HOME", "")
	t.Setenv("HOME", "/home/dev")
	if dir, err := CodexSessions(); err != nil || dir != "/home/dev/.codex/sessions" {
		t.Errorf("CodexSessions() = %s, %v", dir, err)
	}
}

func TestDiffHunks(t *testing.T) {
	got := diffHunks("@@ -1,3 +1,3 @@\n keep\n-old line\n+new line\n keep too\n@@ -9 +9 @@\n-x\n+y\n")
	want := [][2]string{{"keep\nold line\nkeep too", "keep\nnew line\nkeep too"}, {"x", "y"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("diffHunks = %q", got)
	}
}
