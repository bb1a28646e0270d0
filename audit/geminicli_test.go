package audit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// geminiChat is the session the real Gemini CLI 0.61.0 saved during the capture
// (testdata/gemini/README.md): 35 scripted tool calls, one turn each but the last (two), then
// "All done.". It reads notes.txt whole (call 3) and from line 2 (call 4), then replaces
// "second" in it (call 30) and overwrites it (call 33): both reads are stale from then on.
const geminiChat = "../testdata/gemini/chats/capture.jsonl"

func TestAuditGeminiCLIChat(t *testing.T) {
	data, err := os.ReadFile(geminiChat)
	if err != nil {
		t.Fatal(err)
	}
	// As Gemini CLI keeps it: ~/.gemini/tmp/<project>/chats/session-*.jsonl, with the project
	// root in <project>/.project_root. The copy names another root than the capture's; the
	// session context names the capture's, which is what a chat without .project_root gives.
	home := t.TempDir()
	chats := filepath.Join(home, ".gemini", "tmp", "proj", "chats")
	if err := os.MkdirAll(chats, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(chats, "session-2026-12-05T09-20-45260603.jsonl")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "tmp", "proj", ".project_root"), []byte("/elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ins, errs := Find([]string{filepath.Join(home, ".gemini", "tmp")})
	if len(errs) > 0 || len(ins) != 1 {
		t.Fatalf("inputs %v, errors %v: want the one chat", ins, errs)
	}
	s, err := Load(ins[0])
	if err != nil {
		t.Fatal(err)
	}
	if s.Format != FormatGeminiCLI || s.ID == "" {
		t.Fatalf("format %q, id %q", s.Format, s.ID)
	}
	const root = "/tmp/concord-gemini-capture/proj"
	tools, models := 0, 0
	for _, st := range s.Steps {
		switch {
		case st.Model:
			models++
		case st.Tool != nil:
			tools++
			if st.Tool.Cwd != root {
				t.Fatalf("cwd %q: the hash of /elsewhere is not the session's projectHash, so the session context's root is taken", st.Tool.Cwd)
			}
			if strings.Contains(st.Tool.Output, "<hook_context>") {
				t.Fatalf("%s: the hooks' context is not the tool's output: %q", st.Anchor, st.Tool.Output)
			}
		}
	}
	// 36 gemini messages (each rewritten when its tool calls finish, counted once); 36 tool
	// calls, read_many_files among them (not a tool of 0.61.0: its error is a result the model saw).
	if models != 36 || tools != 36 {
		t.Fatalf("%d model calls, %d tool results: want 36, 36", models, tools)
	}

	rep, err := Run(context.Background(), ins, Options{Timeline: true}, true, nil)
	if err != nil || len(rep.Errors) > 0 {
		t.Fatalf("%v %v", err, rep.Errors)
	}
	sr := rep.Sessions[0]
	for _, c := range []struct {
		what      string
		got, want int
	}{
		{"model calls", sr.Calls, 36},
		{"tool results", sr.ToolResults, 36},
		// read_file x10, the 4 greps with hits, cat -n x2, sed -n, grep -n, the parallel read.
		{"tracked views", sr.Views, 20},
		{"listings (glob x3, list_directory x2; one glob found nothing)", sr.Listings, 4},
		{"writes (replace, write_file x2)", sr.Writes, 3},
		{"writes the replay could not apply", sr.UnknownWrites, 0},
		// Nothing changed behind the agent's back (a whole read after a grep fills the file in).
		{"outside changes", sr.OutsideChanges, 0},
		{"stale read_file views (notes.txt, after the agent's own replace)", sr.ByFormat["gemini-cli/read_file"], 2},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.what, c.got, c.want)
		}
	}
	var notes *FileStat
	for i := range sr.Files {
		if strings.HasSuffix(sr.Files[i].File, "/notes.txt") {
			notes = &sr.Files[i]
		}
	}
	if notes == nil || notes.StaleViews != 2 {
		t.Errorf("notes.txt: %+v, want its 2 reads stale", notes)
	}
	if sr.Concord.Errata == 0 {
		t.Error("Concord would have sent no erratum for the stale notes.txt reads")
	}
}
