package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuditClaudeCode replays the transcripts the real Claude Code 2.1.328
// wrote (testdata/claudecode/*/home/.claude/projects, each a directory of
// project directories as `concord audit ~/.claude/projects` finds it) and
// checks the report against its goldens and the facts each scenario was
// scripted to show.
func TestAuditClaudeCode(t *testing.T) {
	roots, err := filepath.Glob("../testdata/claudecode/*/home/.claude/projects")
	if err != nil || len(roots) != 6 {
		t.Fatalf("capture roots %v (%v): want the 6 scenarios", roots, err)
	}
	ins, errs := Find(roots)
	// 6 sessions and the agent scenario's subagent; its .meta.json is no input.
	if len(errs) > 0 || len(ins) != 7 {
		t.Fatalf("inputs %v, errors %v: want 7 transcripts", ins, errs)
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
	golden(t, "claudecode.json", js.Bytes())
	var txt bytes.Buffer
	if err := rep.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	golden(t, "claudecode.txt", txt.Bytes())

	calls := 0
	for _, s := range rep.Sessions {
		if s.Format != FormatClaudeCode {
			t.Errorf("%s: format %q", s.File, s.Format)
		}
		calls += s.Calls
		scn := strings.Split(filepath.ToSlash(s.File), "/")[3]
		sub := strings.Contains(s.File, "/subagents/")
		switch {
		case scn == "read":
			// small.txt changed behind the agent's back while its whole
			// read and its line-2 window were in context: both went stale,
			// carried one call, and one erratum would have said so.
			if s.StaleViews != 2 || s.StaleCalls != 1 || s.Concord.Errata != 1 || s.OutsideChanges == 0 {
				t.Errorf("read: %d stale views in %d calls, %d errata, %d outside changes; want 2, 1, 1, >0",
					s.StaleViews, s.StaleCalls, s.Concord.Errata, s.OutsideChanges)
			}
		case scn == "compact":
			// An automatic compaction, then /compact: each drops results.
			if s.Condensations != 2 {
				t.Errorf("compact: %d condensations, want 2", s.Condensations)
			}
		case scn == "agent" && sub:
			// The subagent is its own session: its id is the agent id,
			// its two tool results (Read, cat -n) its own.
			if s.Session == "" || strings.HasPrefix(s.Session, "11111111") || s.ToolResults != 2 {
				t.Errorf("subagent: session %q with %d tool results; want its agent id and 2", s.Session, s.ToolResults)
			}
		case scn == "edit":
			if s.Writes < 5 {
				t.Errorf("edit: %d writes, the script made 5", s.Writes)
			}
		}
	}
	if calls != 72 {
		t.Errorf("%d model calls in all, the captures hold 72", calls)
	}
}

// TestClaudeCodeTranscript: one API response written as several assistant
// records (parallel tool calls) is one model call; a compaction forgets
// the results it does not preserve.
func TestClaudeCodeTranscript(t *testing.T) {
	lines := []string{
		`{"type":"queue-operation","sessionId":"s1","operation":"enqueue"}`,
		`{"type":"user","uuid":"u1","sessionId":"s1","cwd":"/w","message":{"role":"user","content":"go"}}`,
		`{"type":"assistant","uuid":"a1","sessionId":"s1","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/w/a"}}]}}`,
		`{"type":"assistant","uuid":"a2","sessionId":"s1","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"/w/b"}}]}}`,
		`{"type":"user","uuid":"r1","sessionId":"s1","cwd":"/w","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"1\tx"}]},"toolUseResult":{"type":"text","file":{"filePath":"/w/a","content":"x","numLines":1,"startLine":1,"totalLines":1}}}`,
		`{"type":"user","uuid":"r2","sessionId":"s1","cwd":"/w","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"1\ty"}]}]},"toolUseResult":"Error: no"}`,
		`{"type":"system","subtype":"compact_boundary","sessionId":"s1","compactMetadata":{"trigger":"auto","preservedMessages":{"allUuids":["r2"]}}}`,
		`{"type":"assistant","uuid":"a3","sessionId":"s1","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"done"}]}}`,
	}
	data := []byte(strings.Join(lines, "\n") + "\n")
	if !isClaudeCode(data) {
		t.Fatal("not detected as a Claude Code transcript")
	}
	s, err := parseClaudeCode("s1.jsonl", data)
	if err != nil {
		t.Fatal(err)
	}
	models, tools := 0, map[string]string{}
	var forgot []string
	for _, st := range s.Steps {
		if st.Model {
			models++
		}
		if st.Tool != nil {
			tools[st.Anchor] = st.Tool.Tool + " " + st.Tool.Output + " " + string(st.Tool.Metadata)
		}
		forgot = append(forgot, st.Forget...)
	}
	if s.ID != "s1" || models != 2 {
		t.Errorf("session %q with %d model calls; want s1 and 2", s.ID, models)
	}
	if !strings.HasPrefix(tools["t1"], "Read 1\tx {") || tools["t2"] != `Read 1	y "Error: no"` {
		t.Errorf("tool steps %q", tools)
	}
	if len(forgot) != 1 || forgot[0] != "t1" {
		t.Errorf("the compaction forgot %v; want [t1]", forgot)
	}
}
