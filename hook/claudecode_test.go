package hook

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/protocol"
)

func TestClaudeCodeParse(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  Event
		err   string
	}{
		{"read", `{"session_id":"s","transcript_path":"/t","cwd":"/p","hook_event_name":"PostToolUse","tool_name":"Read",
			"tool_input":{"file_path":"/p/a"},"tool_response":{"type":"text","file":{"filePath":"/p/a","content":"x"}},"tool_use_id":"toolu_1"}`,
			Event{Kind: KindToolDone, Name: "PostToolUse", Session: "s", Agent: MainAgent, Cwd: "/p", Anchor: "toolu_1",
				Call: protocol.ToolCall{Runtime: "claude-code", Tool: "Read", Arguments: json.RawMessage(`{"file_path":"/p/a"}`),
					Metadata: json.RawMessage(`{"type":"text","file":{"filePath":"/p/a","content":"x"}}`), Cwd: "/p"}}, ""},
		{"subagent's tool", `{"session_id":"s","cwd":"/p","hook_event_name":"PostToolUse","agent_id":"a1","agent_type":"Explore","tool_name":"Bash",
			"tool_input":{"command":"ls"},"tool_response":{"stdout":"x"},"tool_use_id":"toolu_2"}`,
			Event{Kind: KindToolDone, Name: "PostToolUse", Session: "s", Agent: "a1", Cwd: "/p", Anchor: "toolu_2",
				Call: protocol.ToolCall{Runtime: "claude-code", Tool: "Bash", Arguments: json.RawMessage(`{"command":"ls"}`),
					Metadata: json.RawMessage(`{"stdout":"x"}`), Cwd: "/p"}}, ""},
		{"prompt", `{"session_id":"s","cwd":"/p","hook_event_name":"UserPromptSubmit","prompt":"hi"}`,
			Event{Kind: KindPrompt, Name: "UserPromptSubmit", Session: "s", Agent: MainAgent, Cwd: "/p"}, ""},
		{"compacted", `{"session_id":"s","cwd":"/p","hook_event_name":"SessionStart","source":"compact"}`,
			Event{Kind: KindSessionStart, Name: "SessionStart", Session: "s", Agent: MainAgent, Cwd: "/p", Source: "compact"}, ""},
		{"pre-compact: the summary comes after", `{"session_id":"s","cwd":"/p","hook_event_name":"PreCompact","trigger":"manual"}`,
			Event{Kind: KindOther, Name: "PreCompact", Session: "s", Agent: MainAgent, Cwd: "/p"}, ""},
		{"post-compact", `{"session_id":"s","cwd":"/p","hook_event_name":"PostCompact","trigger":"auto","compact_summary":"<summary>retries is 3</summary>"}`,
			Event{Kind: KindCompacted, Name: "PostCompact", Session: "s", Agent: MainAgent, Cwd: "/p", Summary: "<summary>retries is 3</summary>"}, ""},
		{"subagent stop", `{"session_id":"s","cwd":"/p","hook_event_name":"SubagentStop","agent_id":"a1","agent_transcript_path":"/t2"}`,
			Event{Kind: KindSubagentStop, Name: "SubagentStop", Session: "s", Agent: "a1", Cwd: "/p"}, ""},
		{"end", `{"session_id":"s","cwd":"/p","hook_event_name":"SessionEnd","reason":"other"}`,
			Event{Kind: KindSessionEnd, Name: "SessionEnd", Session: "s", Agent: MainAgent, Cwd: "/p"}, ""},
		{"an event of no interest", `{"session_id":"s","hook_event_name":"Stop"}`,
			Event{Kind: KindOther, Name: "Stop", Session: "s", Agent: MainAgent}, ""},
		{"no session", `{"hook_event_name":"Stop"}`, Event{}, "no session_id"},
		{"not JSON", `{`, Event{}, "claude-code hook input"},
		{"tool without id", `{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Read"}`, Event{}, "without tool_name or tool_use_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ClaudeCode{}.Parse([]byte(tt.input))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestClaudeCodeAnswer(t *testing.T) {
	tests := []struct {
		ev   Event
		text string
		want string
	}{
		{Event{Kind: KindToolDone, Name: "PostToolUse"}, "[concord] a\n[concord] b",
			`{"hookSpecificOutput":{"additionalContext":"[concord] a\n[concord] b","hookEventName":"PostToolUse"}}` + "\n"},
		{Event{Kind: KindPrompt, Name: "UserPromptSubmit"}, "x", `{"hookSpecificOutput":{"additionalContext":"x","hookEventName":"UserPromptSubmit"}}` + "\n"},
		{Event{Kind: KindToolDone, Name: "PostToolUse"}, "", ""},
		{Event{Kind: KindSessionEnd, Name: "SessionEnd"}, "x", ""},
	}
	for _, tt := range tests {
		if got := string(ClaudeCode{}.Answer(tt.ev, tt.text)); got != tt.want {
			t.Errorf("%s %q: got %q, want %q", tt.ev.Name, tt.text, got, tt.want)
		}
	}
}

// FuzzClaudeCodeParse: any input parses or fails without a panic, and a
// parsed event always has a session and an agent, and a tool event its
// anchor and tool.
func FuzzClaudeCodeParse(f *testing.F) {
	for _, s := range []string{
		`{"session_id":"s","cwd":"/p","hook_event_name":"PostToolUse","tool_name":"Read","tool_input":{},"tool_response":{},"tool_use_id":"t"}`,
		`{"session_id":"s","hook_event_name":"SubagentStop","agent_id":"a"}`,
		`{"session_id":"s","hook_event_name":"SessionStart","source":"compact"}`,
		`{"session_id":"","hook_event_name":"PostToolUse"}`,
		`[]`, `null`, `{"session_id":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		ev, err := ClaudeCode{}.Parse(in)
		if err != nil {
			return
		}
		if ev.Session == "" || ev.Agent == "" {
			t.Fatalf("%q: event %+v", in, ev)
		}
		if ev.Kind == KindToolDone && (ev.Anchor == "" || ev.Call.Tool == "" || ev.Call.Runtime != ClaudeCodeRuntime) {
			t.Fatalf("%q: tool event %+v", in, ev)
		}
		if out := (ClaudeCode{}).Answer(ev, "x"); out != nil && !json.Valid(out) {
			t.Fatalf("answer %q", out)
		}
	})
}
