package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
			// small.txt changed behind the agent's back while its two whole
			// reads (the first, and the same Read again) and its line-2
			// window were in context: all three went stale, carried one
			// call, and one erratum would have said so.
			if s.StaleViews != 3 || s.StaleCalls != 1 || s.Concord.Errata != 1 || s.OutsideChanges == 0 {
				t.Errorf("read: %d stale views in %d calls, %d errata, %d outside changes; want 3, 1, 1, >0",
					s.StaleViews, s.StaleCalls, s.Concord.Errata, s.OutsideChanges)
			}
		case scn == "compact":
			// An automatic compaction, then /compact: each drops results,
			// and each summary (the fake model's, restating nothing) is
			// tracked, built from the reads it replaced.
			if s.Condensations != 2 || s.Summaries != 2 || s.StaleSummaries != 0 {
				t.Errorf("compact: %d condensations, %d summaries (%d stale); want 2, 2, 0", s.Condensations, s.Summaries, s.StaleSummaries)
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

// ccSummaryTranscript is a Claude Code transcript in the format 2.1.328
// wrote in testdata/claudecode/compact: the agent reads config.yaml, the
// session is compacted (a compact_boundary, then the user record marked
// isCompactSummary that holds the summary), and the agent reads the file
// again, which shows it as now.
func ccSummaryTranscript(summary, now string, boundary bool) string {
	const cwd = "/w"
	ts := func(s int) string { return fmt.Sprintf("2026-12-05T09:19:%02d.000Z", s) }
	rec := func(v map[string]any) string {
		v["sessionId"], v["cwd"] = "s-sum", cwd
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return string(b)
	}
	read := func(id, uuid, content string, at int) []string {
		lines := strings.Split(content, "\n")
		var shown []string
		for i, l := range lines {
			shown = append(shown, fmt.Sprintf("%d\t%s", i+1, l))
		}
		return []string{
			rec(map[string]any{"type": "assistant", "uuid": "a-" + uuid, "timestamp": ts(at), "message": map[string]any{
				"id": "msg_" + id, "role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Read",
					"input": map[string]any{"file_path": cwd + "/config.yaml"}}}}}),
			rec(map[string]any{"type": "user", "uuid": uuid, "timestamp": ts(at + 1), "message": map[string]any{
				"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": strings.Join(shown, "\n")}}},
				"toolUseResult": map[string]any{"type": "text", "file": map[string]any{"filePath": cwd + "/config.yaml", "content": content,
					"numLines": len(lines), "startLine": 1, "totalLines": len(lines)}}}),
		}
	}
	answer := func(id string, at int) string {
		return rec(map[string]any{"type": "assistant", "uuid": "a-" + id, "timestamp": ts(at), "message": map[string]any{
			"id": "msg_" + id, "role": "assistant", "content": []any{map[string]any{"type": "text", "text": "ok"}}}})
	}
	const was = "retry_limit: 3\nregion: eu-west\nowner: ops team\n"
	lines := []string{rec(map[string]any{"type": "user", "uuid": "u1", "timestamp": ts(0), "message": map[string]any{"role": "user", "content": "check the config"}})}
	lines = append(lines, read("toolu_1", "r1", was, 1)...)
	lines = append(lines, answer("m2", 3))
	if boundary {
		lines = append(lines,
			rec(map[string]any{"type": "system", "subtype": "compact_boundary", "uuid": "cb1", "timestamp": ts(4), "parentUuid": nil,
				"logicalParentUuid": "a-m2", "content": "Conversation compacted", "compactMetadata": map[string]any{"trigger": "manual",
					"preservedMessages": map[string]any{"uuids": []string{}, "allUuids": []string{}}}}),
			rec(map[string]any{"type": "attachment", "uuid": "at1", "timestamp": ts(4)}))
		if summary != "" {
			lines = append(lines, rec(map[string]any{"type": "user", "uuid": "sum1", "timestamp": ts(4), "isCompactSummary": true,
				"isVisibleInTranscriptOnly": true, "message": map[string]any{"role": "user", "content": "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\nSummary:\n" + summary}}))
		}
	}
	lines = append(lines, read("toolu_2", "r2", now, 5)...)
	lines = append(lines, answer("m4", 7), answer("m5", 8))
	return strings.Join(lines, "\n") + "\n"
}

// TestAuditClaudeCodeSummary: a compaction summary restating a line of a
// read is tracked; when a later read shows that line changed, the summary
// is stale for every later call it stays in the prompt, and Concord would
// have sent one correction; a change to a line it never restated (under the
// default rule, derived: mentioned) makes no stale summary.
func TestAuditClaudeCodeSummary(t *testing.T) {
	t.Parallel()
	const summary = "The agent read /w/config.yaml: retry_limit is 3 and the region is eu-west."
	tests := []struct {
		name                       string
		summary, now               string
		boundary                   bool
		condensations, summaries   int
		staleSummaries, staleCalls int
		errata                     int
	}{
		{name: "restated line changed", summary: summary, now: "retry_limit: 5\nregion: eu-west\nowner: ops team\n",
			boundary: true, condensations: 1, summaries: 1, staleSummaries: 1, staleCalls: 2, errata: 1},
		{name: "unrestated line changed", summary: summary, now: "retry_limit: 3\nregion: eu-west\nowner: platform team\n",
			boundary: true, condensations: 1, summaries: 1},
		{name: "unchanged", summary: summary, now: "retry_limit: 3\nregion: eu-west\nowner: ops team\n",
			boundary: true, condensations: 1, summaries: 1},
		{name: "compaction without a summary record", now: "retry_limit: 5\nregion: eu-west\nowner: ops team\n",
			boundary: true, condensations: 1},
		// The read itself stays in the prompt, stale: Concord corrects it.
		{name: "no compaction", now: "retry_limit: 5\nregion: eu-west\nowner: ops team\n", errata: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data := []byte(ccSummaryTranscript(tc.summary, tc.now, tc.boundary))
			if !isClaudeCode(data) {
				t.Fatal("not detected as a Claude Code transcript")
			}
			s, err := parseClaudeCode("s-sum.jsonl", data)
			if err != nil {
				t.Fatal(err)
			}
			sr, err := Replay(context.Background(), s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if sr.Condensations != tc.condensations || sr.Summaries != tc.summaries || sr.StaleSummaries != tc.staleSummaries ||
				sr.StaleSummaryCalls != tc.staleCalls {
				t.Errorf("%d condensations, %d summaries, %d stale, carried stale by %d calls; want %d, %d, %d, %d",
					sr.Condensations, sr.Summaries, sr.StaleSummaries, sr.StaleSummaryCalls,
					tc.condensations, tc.summaries, tc.staleSummaries, tc.staleCalls)
			}
			if sr.Concord.Errata != tc.errata {
				t.Errorf("Concord would have sent %d errata, want %d", sr.Concord.Errata, tc.errata)
			}
			rep := NewReport(Options{})
			rep.Add(sr, true)
			var txt bytes.Buffer
			if err := rep.WriteText(&txt); err != nil {
				t.Fatal(err)
			}
			line := fmt.Sprintf("Compaction summaries: %d tracked, %d stale", tc.summaries, tc.staleSummaries)
			if got := strings.Contains(txt.String(), line); got != (tc.summaries > 0) {
				t.Errorf("text report (want %q: %v):\n%s", line, tc.summaries > 0, txt.String())
			}
			var page bytes.Buffer
			if err := rep.WriteHTML(&page); err != nil {
				t.Fatal(err)
			}
			row := fmt.Sprintf("<tr><th>Compaction summaries</th><td class=\"n\">%d tracked, %d stale", tc.summaries, tc.staleSummaries)
			if got := strings.Contains(page.String(), row); got != (tc.summaries > 0) {
				t.Errorf("HTML report: row %q present %v, want %v", row, got, tc.summaries > 0)
			}
		})
	}
}

// TestClaudeCodeCompactSummaries: in the transcript Claude Code 2.1.328
// wrote (testdata/claudecode/compact), each compact_boundary's step carries
// the summary of the isCompactSummary record after it, anchored by that
// record's uuid, and the second compaction (/compact) replaces the first
// summary along with the reads.
func TestClaudeCodeCompactSummaries(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../testdata/claudecode/compact/home/.claude/projects/*/*.jsonl")
	if err != nil || len(files) != 1 {
		t.Fatalf("capture %v (%v): want one transcript", files, err)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	s, err := parseClaudeCode(files[0], data)
	if err != nil {
		t.Fatal(err)
	}
	var got []Step
	for _, st := range s.Steps {
		if st.Forget != nil {
			got = append(got, st)
		}
	}
	const first, second = "1a3f6adb-dec5-4e17-8536-04ea357ec3e6", "b45a4e49-2bb1-4e3f-b0be-aa551108c62e"
	if len(got) != 2 || got[0].SummaryAnchor != first || got[1].SummaryAnchor != second {
		t.Fatalf("compactions %+v; want 2, anchored %s and %s", got, first, second)
	}
	for _, st := range got {
		if !strings.Contains(st.Summary, "Summary:\nThe fake model's summary of the session so far.") {
			t.Errorf("summary %s: %q lacks the fake model's summary", st.SummaryAnchor, st.Summary)
		}
	}
	if !slices.Contains(got[1].Forget, first) || slices.Contains(got[0].Forget, first) {
		t.Errorf("forgotten %v then %v: want the first summary replaced by the second compaction only", got[0].Forget, got[1].Forget)
	}
}
