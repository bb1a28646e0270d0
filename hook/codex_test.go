package hook

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestCodexParse(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  Event
		err   string
	}{
		{"start", `{"session_id":"s","transcript_path":"/t","cwd":"/p","hook_event_name":"SessionStart","model":"m","permission_mode":"default","source":"startup"}`,
			Event{Kind: KindSessionStart, Name: "SessionStart", Session: "s", Agent: MainAgent, Cwd: "/p", Source: "startup"}, ""},
		{"prompt", `{"session_id":"s","turn_id":"t","cwd":"/p","hook_event_name":"UserPromptSubmit","prompt":"hi"}`,
			Event{Kind: KindPrompt, Name: "UserPromptSubmit", Session: "s", Agent: MainAgent, Cwd: "/p"}, ""},
		{"end", `{"session_id":"s","cwd":"/p","hook_event_name":"SessionEnd","reason":"other"}`,
			Event{Kind: KindSessionEnd, Name: "SessionEnd", Session: "s", Agent: MainAgent, Cwd: "/p"}, ""},
		{"stop", `{"session_id":"s","hook_event_name":"Stop"}`, Event{Kind: KindOther, Name: "Stop", Session: "s", Agent: MainAgent}, ""},
		{"no session", `{"hook_event_name":"Stop"}`, Event{}, "no session_id"},
		{"not JSON", `[`, Event{}, "codex hook input"},
		{"tool without id", `{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash"}`, Event{}, "without tool_name or tool_use_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Codex{}.Parse([]byte(tt.input))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != tt.want.Kind || got.Name != tt.want.Name || got.Session != tt.want.Session ||
				got.Agent != tt.want.Agent || got.Cwd != tt.want.Cwd || got.Source != tt.want.Source {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

var exitLine = regexp.MustCompile(`(?m)^Process exited with code (\d+)$`)

// TestCodexParseCaptured parses every PostToolUse the real Codex CLI ran
// (testdata/codex/exec) with its rollout in place: a command's exit code is
// the one the model was shown, its output is the hook's tool_response.
func TestCodexParseCaptured(t *testing.T) {
	dir := t.TempDir()
	rollout, err := os.ReadFile("../testdata/codex/exec/rollout.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rollout.jsonl")
	if err := os.WriteFile(path, rollout, 0o644); err != nil {
		t.Fatal(err)
	}
	var shown []struct {
		Type   string          `json:"type"`
		CallID string          `json:"call_id"`
		Output json.RawMessage `json:"output"`
	}
	data, err := os.ReadFile("../testdata/codex/exec/model-input.json")
	if err != nil || json.Unmarshal(data, &shown) != nil {
		t.Fatalf("model-input.json: %v", err)
	}
	exits := map[string]int{}
	for _, it := range shown {
		var s string
		if it.Type == "function_call_output" && json.Unmarshal(it.Output, &s) == nil {
			if m := exitLine.FindStringSubmatch(s); m != nil {
				exits[it.CallID], _ = strconv.Atoi(m[1])
			}
		}
	}
	hooks, err := os.ReadFile("../testdata/codex/exec/hooks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(hooks))
	sc.Buffer(nil, 1<<20)
	bash, failed := 0, 0
	for sc.Scan() {
		var in map[string]any
		if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
			t.Fatal(err)
		}
		if in["hook_event_name"] != "PostToolUse" {
			continue
		}
		in["transcript_path"] = path
		line, _ := json.Marshal(in)
		ev, err := Codex{}.Parse(line)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind != KindToolDone || ev.Anchor != in["tool_use_id"] || ev.Call.Runtime != "codex" || ev.Call.Cwd != in["cwd"] {
			t.Errorf("%s: %+v", in["tool_use_id"], ev)
		}
		if s, ok := in["tool_response"].(string); ok && ev.Call.Output != s {
			t.Errorf("%s: output %q, want the tool_response", ev.Anchor, ev.Call.Output)
		}
		if ev.Call.Tool != "Bash" {
			if ev.Call.ExitCode != nil {
				t.Errorf("%s: %s has an exit code", ev.Anchor, ev.Call.Tool)
			}
			continue
		}
		bash++
		// A command polled by write_stdin (its own output says it was still
		// running) exited 0 in the poll's output.
		want := exits[ev.Anchor]
		if ev.Call.ExitCode == nil || *ev.Call.ExitCode != want {
			t.Errorf("%s: exit code %v, want %d", ev.Anchor, ev.Call.ExitCode, want)
		}
		if want != 0 {
			failed++
		}
	}
	if bash < 10 || failed != 2 {
		t.Errorf("%d commands, %d failed: want the capture's (over 10, 2 failed)", bash, failed)
	}
	// A rollout that does not hold the command: no exit code.
	if got := codexExitCode(path, "call_999"); got != nil {
		t.Errorf("exit code of an unknown call: %d", *got)
	}
	if got := codexExitCode(filepath.Join(dir, "none"), "call_1"); got != nil {
		t.Errorf("exit code from a missing rollout: %d", *got)
	}
}

// TestCodexExitCodeLongRollout: the rollout is read from its end, more of
// it as needed: a command far from the end (past the first chunks, its
// line cut by a chunk's start) is found, and the last record of an id
// wins.
func TestCodexExitCodeLongRollout(t *testing.T) {
	rec := func(id string, code int) string {
		return fmt.Sprintf(`{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":%q,"exit_code":%d}}}`+"\n", id, code)
	}
	var b strings.Builder
	b.WriteString(rec("call_early", 3))
	b.WriteString(rec("call_twice", 1))
	for i := 0; b.Len() < 700<<10; i++ {
		fmt.Fprintf(&b, `{"type":"response_item","payload":{"type":"message","content":"filler %d %s"}}`+"\n", i, strings.Repeat("x", i%977))
	}
	b.WriteString(rec("call_twice", 2))
	b.WriteString(rec("call_late", 0))
	path := filepath.Join(t.TempDir(), "rollout.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]int{"call_early": 3, "call_twice": 2, "call_late": 0} {
		if got := codexExitCode(path, id); got == nil || *got != want {
			t.Errorf("%s: exit code %v, want %d", id, got, want)
		}
	}
	if got := codexExitCode(path, "call_none"); got != nil {
		t.Errorf("an unknown call: exit code %d", *got)
	}
}

func TestCodexAnswer(t *testing.T) {
	ev := Event{Kind: KindToolDone, Name: "PostToolUse"}
	if got := string((Codex{}).Answer(ev, "x")); got != `{"hookSpecificOutput":{"additionalContext":"x","hookEventName":"PostToolUse"}}`+"\n" {
		t.Errorf("answer %q", got)
	}
	if (Codex{}).Answer(ev, "") != nil || (Codex{}).Answer(Event{Kind: KindSessionEnd}, "x") != nil {
		t.Error("an answer with nothing to say")
	}
}

func FuzzCodexParse(f *testing.F) {
	f.Add([]byte(`{"session_id":"s","cwd":"/p","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"cat a"},"tool_response":"x\n","tool_use_id":"call_1"}`))
	f.Add([]byte(`{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"view_image","tool_input":{"path":"i.png"},"tool_response":[{"type":"input_image"}],"tool_use_id":"c"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := Codex{}.Parse(data)
		if err != nil {
			return
		}
		if ev.Session == "" || ev.Kind == KindToolDone && (ev.Anchor == "" || ev.Call.Tool == "") {
			t.Fatalf("an event without what it needs: %+v", ev)
		}
	})
}
