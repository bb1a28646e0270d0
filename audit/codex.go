package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/concord-ctx/concord/recognize"
)

// Codex CLI (0.169.0) writes each session as a rollout,
// $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl (CODEX_HOME
// defaults to ~/.codex), one JSON object a line (testdata/codex/README.md):
//
//	{"timestamp": "…", "ordinal": N, "type": "session_meta", "payload": {"id", "cwd", "cli_version", …}}
//	{"type": "turn_context", "payload": {"cwd", …}}
//	{"type": "response_item", "payload": {"type": "function_call", "name", "arguments", "call_id"}}
//	{"type": "response_item", "payload": {"type": "function_call_output", "call_id", "output"}}
//	{"type": "response_item", "payload": {"type": "custom_tool_call", "name": "apply_patch", "input", "call_id"}}
//	{"type": "event_msg", "payload": {"type": "item_completed", "item": {"type": "FileChange", "id", "changes"}}}
//
// response_item lines are the model's items exactly as sent: a tool's output
// is the text the model saw (exec_command's header included). A model call
// is each run of the model's own items (assistant messages, reasoning, tool
// calls) after anything else; each call carried every item before it.
type cxLine struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type cxItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Content   []struct {
		Text string `json:"text"`
	} `json:"content"`
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
	Action json.RawMessage `json:"action"`
	ID     string          `json:"id"`
}

// cxMeta is a session_meta's or turn_context's payload.
type cxMeta struct {
	ID  string `json:"id"`
	Cwd string `json:"cwd"`
}

// cxEvent is an event_msg's payload (only item_completed is read).
type cxEvent struct {
	Type string `json:"type"`
	Item *struct {
		Type    string          `json:"type"`
		ID      string          `json:"id"`
		Changes json.RawMessage `json:"changes"`
	} `json:"item"`
}

// CodexSessions is where Codex keeps its rollouts: $CODEX_HOME/sessions,
// else ~/.codex/sessions.
func CodexSessions() (string, error) {
	if h := os.Getenv("CODEX_HOME"); h != "" {
		return filepath.Join(h, "sessions"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("codex sessions: %w", err)
	}
	return filepath.Join(home, ".codex", "sessions"), nil
}

// isCodexRollout reports whether data's first line is a rollout's
// session_meta.
func isCodexRollout(data []byte) bool {
	first, _, _ := bytes.Cut(data, []byte("\n"))
	var l struct {
		Type    string `json:"type"`
		Payload struct {
			ID         string `json:"id"`
			CLIVersion string `json:"cli_version"`
		} `json:"payload"`
	}
	return json.Unmarshal(first, &l) == nil && l.Type == "session_meta" && l.Payload.ID != "" && l.Payload.CLIVersion != ""
}

// cxModelItems are the items a model call produces.
var cxModelItems = map[string]bool{"function_call": true, "custom_tool_call": true, "reasoning": true,
	"web_search_call": true, "local_shell_call": true, "tool_search_call": true}

// cxParse is one rollout being read into a session.
type cxParse struct {
	s       *Session
	calls   map[string]cxPending
	changes map[string]json.RawMessage // call id -> FileChange.changes
	cwd     string
	inCall  bool // the last item was the model's
}

// cxPending is a tool call the model made, until its output is read.
type cxPending struct {
	name string
	args json.RawMessage
}

func parseCodex(file string, data []byte) (*Session, error) {
	p := &cxParse{s: &Session{File: file, Format: FormatCodex}, calls: map[string]cxPending{}, changes: map[string]json.RawMessage{}}
	s := p.s
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 256<<20)
	for n := 1; sc.Scan(); n++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var l cxLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		at, _ := time.Parse(time.RFC3339Nano, l.Timestamp)
		switch l.Type {
		case "session_meta", "turn_context":
			var m cxMeta
			if err := json.Unmarshal(l.Payload, &m); err != nil {
				return nil, fmt.Errorf("line %d: %s: %w", n, l.Type, err)
			}
			if l.Type == "session_meta" && s.ID == "" {
				s.ID = m.ID
			}
			if m.Cwd != "" {
				p.cwd = m.Cwd
			}
		case "event_msg":
			var e cxEvent
			if json.Unmarshal(l.Payload, &e) == nil && e.Type == "item_completed" && e.Item != nil && e.Item.Type == "FileChange" {
				p.changes[e.Item.ID] = e.Item.Changes
			}
		case "response_item":
			var it cxItem
			if err := json.Unmarshal(l.Payload, &it); err != nil {
				return nil, fmt.Errorf("line %d: response_item: %w", n, err)
			}
			p.item(it, at.UTC())
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if s.ID == "" {
		return nil, errors.New("a codex rollout without session_meta")
	}
	return s, nil
}

// item is one response item: the model's (a new model call when it follows
// anything else), or a tool's output.
func (p *cxParse) item(it cxItem, at time.Time) {
	model := cxModelItems[it.Type] || it.Type == "message" && it.Role == "assistant"
	if model && !p.inCall {
		p.s.Steps = append(p.s.Steps, Step{Model: true, Time: at})
	}
	p.inCall = model
	switch it.Type {
	case "message":
		chars := 0
		for _, c := range it.Content {
			chars += len(c.Text)
		}
		p.s.Steps = append(p.s.Steps, Step{Chars: chars})
	case "reasoning":
		chars := 0
		for _, c := range it.Summary {
			chars += len(c.Text)
		}
		p.s.Steps = append(p.s.Steps, Step{Chars: chars})
	case "function_call":
		args := json.RawMessage(it.Arguments)
		if !json.Valid(args) {
			args = nil
		}
		p.calls[it.CallID] = cxPending{it.Name, args}
		p.s.Steps = append(p.s.Steps, Step{Chars: len(it.Arguments)})
	case "custom_tool_call":
		// Freeform input (apply_patch's patch): the arguments the hook shows, {"command": INPUT}.
		args, _ := json.Marshal(map[string]string{"command": it.Input})
		p.calls[it.CallID] = cxPending{it.Name, args}
		p.s.Steps = append(p.s.Steps, Step{Chars: len(it.Input)})
	case "web_search_call":
		call := &recognize.Call{Runtime: recognize.Codex, Tool: "web_search", Args: it.Action, Cwd: p.cwd}
		p.s.Steps = append(p.s.Steps, Step{Tool: call, Anchor: it.ID, Time: at, Chars: len(it.Action)})
	case "function_call_output", "custom_tool_call_output":
		c, ok := p.calls[it.CallID]
		if !ok {
			return // an output of a call the rollout does not hold
		}
		out := cxOutputText(it.Output)
		call := &recognize.Call{Runtime: recognize.Codex, Tool: c.name, Args: c.args, Output: out, Cwd: p.cwd,
			Metadata: p.changes[it.CallID]}
		p.s.Steps = append(p.s.Steps, Step{Tool: call, Anchor: it.CallID, Time: at, Chars: len(out)})
	}
}

// cxOutputText is a tool output's text as the model saw it: a string, or
// content parts (an image shows as "[image]").
func cxOutputText(out json.RawMessage) string {
	var s string
	if json.Unmarshal(out, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(out, &parts) != nil {
		return string(out)
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Text != "" {
			b.WriteString(p.Text)
		} else if strings.Contains(p.Type, "image") {
			b.WriteString("[image]")
		}
	}
	return b.String()
}

// cxChange is one file of a FileChange (Codex's record of apply_patch).
type cxChange struct {
	Type        string  `json:"type"` // add, update, delete
	Content     string  `json:"content"`
	UnifiedDiff string  `json:"unified_diff"`
	MovePath    *string `json:"move_path"`
}

// applyCodexPatch brings p to what apply_patch left, from Codex's record
// of the change: an added file's content, an update's hunks applied to the
// known text; false for a deletion, a move, or a hunk on unknown lines.
func (r *replayer) applyCodexPatch(call *recognize.Call, p string) bool {
	var ch map[string]cxChange
	if json.Unmarshal(call.Metadata, &ch) != nil {
		return false
	}
	c, ok := ch[p]
	if !ok {
		return false
	}
	switch {
	case c.Type == "add":
		r.v.setWhole(p, c.Content)
		return true
	case c.Type == "update" && c.MovePath == nil:
		for _, h := range diffHunks(c.UnifiedDiff) {
			if !r.v.replace(p, h[0], h[1], false) {
				return false
			}
		}
		return true
	}
	return false
}

// diffHunks are a unified diff's hunks as (old text, new text) pairs, each
// the hunk's context and removed (resp. added) lines joined by "\n".
func diffHunks(diff string) [][2]string {
	var out [][2]string
	var old, nw []string
	flush := func() {
		if len(old) > 0 || len(nw) > 0 {
			out = append(out, [2]string{strings.Join(old, "\n"), strings.Join(nw, "\n")})
		}
		old, nw = nil, nil
	}
	for _, ln := range strings.Split(strings.TrimSuffix(diff, "\n"), "\n") {
		switch {
		case strings.HasPrefix(ln, "@@"):
			flush()
		case strings.HasPrefix(ln, "-"):
			old = append(old, ln[1:])
		case strings.HasPrefix(ln, "+"):
			nw = append(nw, ln[1:])
		case strings.HasPrefix(ln, " "):
			old, nw = append(old, ln[1:]), append(nw, ln[1:])
		case ln == `\ No newline at end of file`:
		}
	}
	flush()
	return out
}
