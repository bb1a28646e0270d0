package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/concord-ctx/concord/recognize"
)

// FormatGeminiCLI is a chat Gemini CLI saved.
const FormatGeminiCLI = "gemini-cli"

// Gemini CLI (0.61.0) saves each session as JSONL at
// ~/.gemini/tmp/<project>/chats/session-<date>-<id8>.jsonl (captured in
// testdata/gemini/chats):
//
//	{"sessionId": …, "projectHash": sha256(project root), "startTime": …, "kind": "main"}
//	{"$set": {"messages": [{…the session context…}], "lastUpdated": …}}
//	{"id": …, "timestamp": …, "type": "user", "content": [{"text": …}]}
//	{"id": …, "timestamp": …, "type": "gemini", "content": "…", "tokens": {…},
//	 "toolCalls": [{"id", "name", "args", "result": [{"functionResponse": {…}}],
//	                "status", "timestamp", "resultDisplay"}]}
//
// A message is written again, same id, as it grows (a gemini message gets
// its toolCalls when they finish): the last record of an id wins, in the
// place of its first. Each gemini message is one model call; the user
// message that carries the functionResponse parts repeats the tool calls'
// results and is not counted again. <project>/.project_root names the
// project root; without it, the session context's workspace directory does.
type gcChatHead struct {
	SessionID   string `json:"sessionId"`
	ProjectHash string `json:"projectHash"`
}

type gcMessage struct {
	ID        string          `json:"id"`
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []gcToolCall    `json:"toolCalls"`
}

type gcToolCall struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Args          json.RawMessage `json:"args"`
	Status        string          `json:"status"`
	Timestamp     string          `json:"timestamp"`
	Result        []gcPart        `json:"result"`
	ResultDisplay json.RawMessage `json:"resultDisplay"`
}

type gcPart struct {
	Text             string `json:"text"`
	FunctionResponse *struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		Response struct {
			Output *string `json:"output"`
			Error  *string `json:"error"`
		} `json:"response"`
	} `json:"functionResponse"`
}

// isGeminiChat reports whether data's first line is a Gemini CLI chat's head.
func isGeminiChat(data []byte) bool {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	var h gcChatHead
	return json.Unmarshal(line, &h) == nil && h.SessionID != "" && len(h.ProjectHash) == 64
}

// gcHookContext is what AfterTool hooks appended to a result (Concord's own
// errata among them): not the tool's output.
var gcHookContext = lazyRegexp(`(?s)\n\n<hook_context>.*</hook_context>\z`)

var gcWorkspaceDir = lazyRegexp(`\*\*Workspace Directories:\*\*\n  - ([^\n]+)\n`)

func parseGeminiCLI(file string, data []byte) (*Session, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	var head gcChatHead
	var order []string
	msgs := map[string]gcMessage{}
	add := func(m gcMessage) {
		if _, ok := msgs[m.ID]; !ok {
			order = append(order, m.ID)
		}
		msgs[m.ID] = m
	}
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if n == 1 {
			if err := json.Unmarshal(line, &head); err != nil || head.SessionID == "" {
				return nil, errors.New("a gemini cli chat without its session line")
			}
			continue
		}
		var rec struct {
			Set *struct {
				Messages []gcMessage `json:"messages"`
			} `json:"$set"`
			gcMessage
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, fmt.Errorf("gemini cli chat line %d: %w", n, err)
		}
		switch {
		case rec.Set != nil && rec.Set.Messages != nil:
			order, msgs = nil, map[string]gcMessage{}
			for _, m := range rec.Set.Messages {
				add(m)
			}
		case rec.Set == nil && rec.ID != "":
			add(rec.gcMessage)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("gemini cli chat: %w", err)
	}
	s := &Session{ID: head.SessionID, File: file, Format: FormatGeminiCLI}
	cwd := gcProjectRoot(file, head.ProjectHash, order, msgs)
	for _, id := range order {
		m := msgs[id]
		at := gcTime(m.Timestamp)
		switch m.Type {
		case "gemini":
			s.Steps = append(s.Steps, Step{Model: true, Time: at, Chars: len(gcText(m.Content))})
			for _, tc := range m.ToolCalls {
				if st, ok := gcToolStep(tc, cwd); ok {
					s.Steps = append(s.Steps, st)
				}
			}
		case "user":
			if !gcHasResponse(m.Content) {
				s.Steps = append(s.Steps, Step{Chars: len(gcText(m.Content))})
			}
		}
	}
	return s, nil
}

// gcToolStep is one finished tool call as the model was shown it.
func gcToolStep(tc gcToolCall, cwd string) (Step, bool) {
	var out string
	failed, found := false, false
	for _, p := range tc.Result {
		if fr := p.FunctionResponse; fr != nil && !found {
			found = true
			switch {
			case fr.Response.Output != nil:
				out = *fr.Response.Output
			case fr.Response.Error != nil:
				out, failed = *fr.Response.Error, true
			}
		}
	}
	if !found {
		return Step{}, false // never finished: the model was not shown a result
	}
	out = gcHookContext().ReplaceAllString(out, "")
	call := &recognize.Call{Runtime: recognize.GeminiCLI, Tool: tc.Name, Args: tc.Args, Output: out, Cwd: cwd,
		Error: failed || tc.Status == "error"}
	st := Step{Tool: call, Anchor: tc.ID, Time: gcTime(tc.Timestamp), Chars: len(tc.Args) + len(out)}
	// An edit's display keeps the file's whole new content.
	var d struct {
		NewContent *string `json:"newContent"`
	}
	if !call.Error && (tc.Name == "replace" || tc.Name == "write_file") && json.Unmarshal(tc.ResultDisplay, &d) == nil && d.NewContent != nil {
		st.After = d.NewContent
	}
	return st, true
}

// gcProjectRoot is the session's project root: <project>/.project_root
// beside chats/, when it hashes to the session's projectHash, else the
// workspace directory its session context names.
func gcProjectRoot(file, hash string, order []string, msgs map[string]gcMessage) string {
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(file)), ".project_root")); err == nil {
		root := strings.TrimSpace(string(b))
		if sum := sha256.Sum256([]byte(root)); hex.EncodeToString(sum[:]) == hash {
			return root
		}
	}
	for _, id := range order {
		if m := gcWorkspaceDir().FindStringSubmatch(gcText(msgs[id].Content)); m != nil {
			return m[1]
		}
	}
	return ""
}

// gcText is a message's text: a string, or its parts' text.
func gcText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var parts []gcPart
	_ = json.Unmarshal(content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func gcHasResponse(content json.RawMessage) bool {
	var parts []gcPart
	if json.Unmarshal(content, &parts) != nil {
		return false
	}
	for _, p := range parts {
		if p.FunctionResponse != nil {
			return true
		}
	}
	return false
}

func gcTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}
