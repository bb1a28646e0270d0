package audit

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// The parsers take any bytes without panicking, and whatever session they
// make replays without panicking.

func replayAny(t *testing.T, s *Session, err error) {
	if err != nil {
		return
	}
	// An error is a fair answer (it names the step); a panic is not.
	if _, err := Replay(context.Background(), s, Options{Timeline: true}); err != nil {
		t.Log(err)
	}
}

func seeds(f *testing.F, glob string) {
	files, _ := filepath.Glob(glob)
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
}

func FuzzParseOpenAI(f *testing.F) {
	f.Add([]byte(`[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"read","arguments":"{\"filePath\":\"/a\"}"}}]},{"role":"tool","tool_call_id":"c","content":"<path>/a</path>\n<type>file</type>\n<content>\n1: x\n\n(End of file - total 1 lines)\n</content>"}]`))
	f.Add([]byte("{\"role\":\"user\",\"content\":\"x\"}\n{\"role\":\"assistant\",\"content\":\"y\"}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseOpenAI("f.json", data)
		replayAny(t, s, err)
	})
}

func FuzzParseOpenCode(f *testing.F) {
	seeds(f, filepath.Join(stores, "opencode", "*.json"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseOpenCode("f.json", data)
		replayAny(t, s, err)
	})
}

// FuzzOpenHandsEvent: one event file, in place of a real conversation's
// fourth event.
func FuzzOpenHandsEvent(f *testing.F) {
	seeds(f, filepath.Join(stores, "openhands", "*", "events", "event-0000[2-7]-*.json"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		ev := filepath.Join(dir, "events")
		if err := os.Mkdir(ev, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ev, "event-00000-a.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ev, "event-00001-b.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := loadOpenHands(dir)
		replayAny(t, s, err)
	})
}

// FuzzParseCodex: a rollout (the real ones, with the project at /w, seed it).
func FuzzParseCodex(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "codex", "*", "rollout.jsonl"))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(bytes.ReplaceAll(data, []byte("{WS}"), []byte("/w")))
		}
	}
	f.Add([]byte(`{"type":"session_meta","payload":{"id":"s","cwd":"/w","cli_version":"0.169.0"}}` + "\n" +
		`{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"cat a\"}","call_id":"c"}}` + "\n" +
		`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"Process exited with code 0\nOutput:\nx\n"}}` + "\n"))
	f.Add([]byte(`{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"FileChange","id":"c","changes":{"/w/a":{"type":"update","unified_diff":"@@\n-x\n+y\n","move_path":null}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseCodex("f.jsonl", data)
		replayAny(t, s, err)
	})
}

// FuzzParseClaudeCode: a transcript (the real ones Claude Code 2.1.328
// wrote, and a compaction whose summary restates a line that then changes,
// seed it).
func FuzzParseClaudeCode(f *testing.F) {
	seeds(f, filepath.Join("..", "testdata", "claudecode", "*", "home", ".claude", "projects", "*", "*.jsonl"))
	f.Add([]byte(ccSummaryTranscript("retry_limit is 3", "retry_limit: 5\n", true)))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseClaudeCode("f.jsonl", data)
		replayAny(t, s, err)
	})
}
