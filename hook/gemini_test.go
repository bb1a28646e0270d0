package hook

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeminiCLIParseCaptured reads every hook input the real Gemini CLI 0.61.0 gave during the
// capture (testdata/gemini/hooks): each parses, means what its event means, and each AfterTool
// is a call as recognize takes it, the model's text its output.
func TestGeminiCLIParseCaptured(t *testing.T) {
	files, err := filepath.Glob("../testdata/gemini/hooks/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no captured hook inputs: %v", err)
	}
	kinds := map[Kind]int{}
	anchors := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := GeminiCLI{}.Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		kinds[ev.Kind]++
		var raw struct {
			Event    string `json:"hook_event_name"`
			Response struct {
				LLMContent any `json:"llmContent"`
				Error      any `json:"error"`
			} `json:"tool_response"`
		}
		_ = json.Unmarshal(data, &raw)
		if ev.Name != raw.Event || ev.Session == "" || ev.Agent != MainAgent || ev.Cwd != "/tmp/concord-gemini-capture/proj" {
			t.Errorf("%s: %+v", f, ev)
		}
		if ev.Kind != KindToolDone {
			continue
		}
		if ev.Call.Runtime != "gemini-cli" || ev.Call.Tool == "" || ev.Call.Output != raw.Response.LLMContent || ev.Call.Error != (raw.Response.Error != nil) {
			t.Errorf("%s: call %+v", f, ev.Call)
		}
		if anchors[ev.Anchor] || !strings.Contains(ev.Anchor, " at ") {
			t.Errorf("%s: anchor %q repeated or without its time", f, ev.Anchor)
		}
		anchors[ev.Anchor] = true
	}
	// 35 tool calls ran (read_many_files is no tool: no AfterTool); PreCompress, fired before
	// every model call, is not a compaction.
	if kinds[KindToolDone] != 35 || kinds[KindPrompt] != 1 || kinds[KindSessionStart] != 1 || kinds[KindSessionEnd] != 1 || kinds[KindPreCompact] != 0 {
		t.Errorf("kinds: %v", kinds)
	}
}

func TestGeminiCLIParse(t *testing.T) {
	for _, tc := range []struct{ name, input, err, anchor string }{
		{"no session", `{"hook_event_name":"AfterTool","tool_name":"read_file"}`, "no session_id", ""},
		{"no tool", `{"session_id":"s","hook_event_name":"AfterTool"}`, "without tool_name", ""},
		{"not JSON", `{`, "hook input", ""},
		{"relative to cwd", `{"session_id":"s","cwd":"/p","hook_event_name":"AfterTool","timestamp":"2026-12-05T09:20:14.902Z","tool_name":"read_file","tool_input":{"file_path":"/p/src/a.go"},"tool_response":{"llmContent":"x"}}`, "", "read_file src/a.go at 09:20:14.902"},
		{"a long command is cut", `{"session_id":"s","cwd":"/p","hook_event_name":"AfterTool","timestamp":"t","tool_name":"run_shell_command","tool_input":{"command":"` + strings.Repeat("x", 100) + `"},"tool_response":{"llmContent":"x"}}`, "", "run_shell_command " + strings.Repeat("x", 59) + "… at t"},
		{"no argument", `{"session_id":"s","hook_event_name":"AfterTool","timestamp":"t","tool_name":"write_todos","tool_input":{},"tool_response":{"llmContent":"x"}}`, "", "write_todos at t"},
	} {
		ev, err := GeminiCLI{}.Parse([]byte(tc.input))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || ev.Anchor != tc.anchor {
			t.Errorf("%s: anchor %q (%v), want %q", tc.name, ev.Anchor, err, tc.anchor)
		}
	}
}

func TestGeminiCLIAnswer(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		name string
		text string
		want string
	}{
		{KindToolDone, "AfterTool", "fix", `{"hookSpecificOutput":{"additionalContext":"fix","hookEventName":"AfterTool"}}` + "\n"},
		{KindPrompt, "BeforeAgent", "fix", `{"hookSpecificOutput":{"additionalContext":"fix","hookEventName":"BeforeAgent"}}` + "\n"},
		{KindToolDone, "AfterTool", "", ""},
		{KindSessionStart, "SessionStart", "fix", ""},
	} {
		if got := string(GeminiCLI{}.Answer(Event{Kind: tc.kind, Name: tc.name}, tc.text)); got != tc.want {
			t.Errorf("%s %q: %q, want %q", tc.name, tc.text, got, tc.want)
		}
	}
}
