package recognize_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/recognize"
)

// The Claude Code corpus (testdata/recognize/claudecode.corpus.json) is made
// from the captures in testdata/claudecode: every PostToolUse and
// PostToolUseFailure hook input as a Call (tool_name, tool_input,
// tool_response as Metadata, cwd), with the text the model saw from the
// session transcript as Output. Its workspace is each scenario's project as
// it was at the end of the capture ({WS} is /tmp/concord-claudecode).
// `go test ./recognize -run TestClaudeCodeCorpus -update` rewrites it.

const ccCaptureBase = "/tmp/concord-claudecode"

func TestClaudeCodeCorpus(t *testing.T) {
	c := ccBuildCorpus(t)
	data, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, '\n')
	file := "../testdata/recognize/claudecode.corpus.json"
	if *update {
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(data, want) {
		t.Errorf("%s is not what testdata/claudecode makes; run `go test ./recognize -run TestClaudeCodeCorpus -update`", file)
	}
}

type ccCase struct {
	Name  string          `json:"name"`
	Shows string          `json:"shows"`
	Call  json.RawMessage `json:"call"`
}

type ccCorpus struct {
	Source    string            `json:"source"`
	License   string            `json:"license"`
	Note      string            `json:"note,omitempty"`
	Workspace map[string]string `json:"workspace"`
	Cases     []ccCase          `json:"cases"`
}

func ccBuildCorpus(t *testing.T) ccCorpus {
	t.Helper()
	c := ccCorpus{
		Source:    "testdata/claudecode (@anthropic-ai/claude-code 2.1.328, captured by go test ./internal/claudetest -capture)",
		License:   "Apache-2.0 (this repository)",
		Note:      "the workspace is each scenario's project at the end of its capture; calls whose files changed later (read after an outside change, edits) are recognized against that end state",
		Workspace: map[string]string{"outside.txt": "outside the project\n"},
	}
	dirs, err := filepath.Glob("../testdata/claudecode/*/hooks.jsonl")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no captures: %v", err)
	}
	sort.Strings(dirs)
	for _, hooksFile := range dirs {
		dir := filepath.Dir(hooksFile)
		scn := filepath.Base(dir)
		var files map[string]string
		readJSON(t, filepath.Join(dir, "project.json"), &files)
		for rel, text := range files {
			c.Workspace[scn+"/project/"+rel] = text
		}
		shown := ccTranscriptResults(t, dir)
		for _, h := range readJSONL(t, hooksFile) {
			ev, _ := h["hook_event_name"].(string)
			if ev != "PostToolUse" && ev != "PostToolUseFailure" {
				continue
			}
			tool, _ := h["tool_name"].(string)
			id, _ := h["tool_use_id"].(string)
			call := map[string]any{
				"runtime": recognize.ClaudeCode, "tool": tool, "arguments": h["tool_input"],
				"output": shown[id], "cwd": h["cwd"],
			}
			if ev == "PostToolUseFailure" {
				call["error"] = true
			} else {
				call["metadata"] = h["tool_response"]
			}
			raw, err := json.Marshal(call)
			if err != nil {
				t.Fatal(err)
			}
			raw = bytes.ReplaceAll(raw, []byte(ccCaptureBase), []byte("{WS}"))
			args, _ := json.Marshal(h["tool_input"])
			args = bytes.ReplaceAll(args, []byte(ccCaptureBase+"/"+scn+"/project/"), nil)
			name := scn + " " + tool + " " + string(args)
			if len(name) > 120 {
				name = name[:120]
			}
			if _, agent := h["agent_id"]; agent {
				name += " (subagent)"
			}
			c.Cases = append(c.Cases, ccCase{Name: name, Shows: ccShows(tool, h, ev), Call: raw})
		}
	}
	return c
}

// ccShows labels what a call showed the model, by the tool and what it
// answered (not by what the recognizer makes of it).
func ccShows(tool string, h map[string]any, ev string) string {
	if ev != "PostToolUse" {
		return "none"
	}
	in, _ := h["tool_input"].(map[string]any)
	resp, _ := h["tool_response"].(map[string]any)
	switch tool {
	case "Read":
		if resp["type"] == "text" {
			return "file-read"
		}
	case "Edit", "Write", "NotebookEdit", "MultiEdit":
		return "write"
	case "Glob":
		return "listing"
	case "Grep":
		switch resp["mode"] {
		case "content":
			if resp["content"] == "" {
				return "none"
			}
			if in["-n"] == false {
				return "grep-unnumbered"
			}
			return "grep-numbered"
		default:
			return "grep-names"
		}
	case "Bash":
		cmd, _ := in["command"].(string)
		prog, _, _ := strings.Cut(strings.TrimPrefix(cmd, "cd sub && "), " ")
		switch prog {
		case "cat", "sed", "head", "tail":
			return "file-read"
		case "grep":
			if strings.Contains(cmd, " -c") || strings.Contains(cmd, "-rl") {
				return "grep-names"
			}
			return "grep-numbered"
		case "find", "ls":
			return "listing"
		}
	}
	return "none"
}

// ccTranscriptResults maps tool_use_id to the tool_result text the session
// transcripts (main and subagents) recorded.
func ccTranscriptResults(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(filepath.Join(dir, "home"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		for _, rec := range readJSONL(t, p) {
			msg, _ := rec["message"].(map[string]any)
			if rec["type"] != "user" || msg == nil {
				continue
			}
			blocks, _ := msg["content"].([]any)
			for _, b := range blocks {
				b, _ := b.(map[string]any)
				if b["type"] != "tool_result" {
					continue
				}
				id, _ := b["tool_use_id"].(string)
				switch c := b["content"].(type) {
				case string:
					out[id] = c
				case []any:
					var texts []string
					for _, e := range c {
						if e, _ := e.(map[string]any); e["type"] == "text" {
							s, _ := e["text"].(string)
							texts = append(texts, s)
						}
					}
					out[id] = strings.Join(texts, "\n")
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func readJSONL(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestClaudeCodeHookOnly: a hook has the structured result but not the
// text the model saw; every call recognizes the same without it.
func TestClaudeCodeHookOnly(t *testing.T) {
	file := "../testdata/recognize/claudecode.corpus.json"
	c := loadCorpus(t, file)
	ws := workspace(t, c)
	for _, cs := range c.Cases {
		var call recognize.Call
		if err := json.Unmarshal([]byte(strings.ReplaceAll(string(cs.Call), "{WS}", ws)), &call); err != nil {
			t.Fatal(err)
		}
		withText, err := recognize.Recognize(context.Background(), call, recognize.OS{})
		if err != nil {
			t.Fatal(err)
		}
		call.Output = ""
		hookOnly, err := recognize.Recognize(context.Background(), call, recognize.OS{})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(withText)
		b, _ := json.Marshal(hookOnly)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: with the text %s, from the hook alone %s", cs.Name, a, b)
		}
	}
}

// FuzzClaudeCode: any Read, Grep or Bash result (structured answer and
// text) recognizes without a panic, and a tracked read prints back the
// text the model saw.
func FuzzClaudeCode(f *testing.F) {
	f.Add("Read", `{"file_path":"/w/a.txt"}`, "1\talpha\n2\tbeta\n3", `{"type":"text","file":{"filePath":"/w/a.txt","content":"alpha\nbeta\n","numLines":3,"startLine":1,"totalLines":3}}`)
	f.Add("Read", `{"file_path":"/w/a.txt","offset":2,"limit":1}`, "2\tbeta", `{"type":"text","file":{"filePath":"/w/a.txt","content":"beta","numLines":1,"startLine":2,"totalLines":3}}`)
	f.Add("Read", `{"file_path":"/w/a.txt"}`, "5\tx\n6\ty\n7", ``)
	f.Add("Grep", `{"pattern":"two","output_mode":"content","-n":true}`, "a.txt:1:one two", `{"mode":"content","content":"a.txt:1:one two","numLines":1}`)
	f.Add("Grep", `{"pattern":"two","output_mode":"count"}`, "a.txt:2\n\nFound 2 total occurrences across 1 file.", `{"mode":"count","content":"a.txt:2","numFiles":1}`)
	f.Add("Bash", `{"command":"cat -n a.txt"}`, "1\talpha", `{"stdout":"     1\talpha","stderr":""}`)
	f.Add("Glob", `{"pattern":"*.txt"}`, "a.txt", `{"filenames":["a.txt"],"truncated":false}`)
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, tool, args, output, meta string) {
		if !json.Valid([]byte(args)) || meta != "" && !json.Valid([]byte(meta)) {
			return
		}
		args = strings.ReplaceAll(args, "/w/", dir+"/")
		call := recognize.Call{Runtime: recognize.ClaudeCode, Tool: tool, Args: json.RawMessage(args), Output: output, Cwd: dir}
		if meta != "" {
			call.Metadata = json.RawMessage(strings.ReplaceAll(meta, "/w/", dir+"/"))
		}
		res, err := recognize.Recognize(context.Background(), call, recognize.OS{})
		if err != nil {
			return
		}
		if res.Kind == recognize.KindRead && output != "" {
			if got := res.Render(res.Parts); strings.TrimSpace(got) != strings.TrimSpace(output) {
				t.Errorf("%s read renders %q, the model saw %q", tool, got, output)
			}
		}
	})
}
