package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/concord-ctx/concord/recognize"
)

// FormatClaudeCode is a Claude Code session transcript.
const FormatClaudeCode = "claude-code"

// Claude Code (2.1.328, testdata/claudecode) writes each session to
// ~/.claude/projects/<cwd with / as ->/<session id>.jsonl, one record a line:
//
//	{"type": "user", "uuid", "timestamp", "cwd", "sessionId",
//	 "message": {"role": "user", "content": "prompt" | [{"type": "tool_result",
//	             "tool_use_id", "content": "text" | [blocks], "is_error"}]},
//	 "toolUseResult": {…the tool's structured answer, as its PostToolUse hook has it…}}
//	{"type": "assistant", "message": {"id": "msg_…", "content": [{"type": "text"|"tool_use", …}]}}
//	{"type": "system", "subtype": "compact_boundary",
//	 "compactMetadata": {"trigger": "auto"|"manual", "preservedMessages": {"allUuids": [...]}}}
//	{"type": "user", "isCompactSummary": true, "uuid",
//	 "message": {"role": "user", "content": "This session is being continued … Summary:\n…"}}
//
// and records of other types (attachment, api-request, queue-operation,
// last-prompt, …) that carry no tool call. One API response may be written
// as several assistant records with the same message id: they are one model
// call. A compaction boundary drops every tool result from the prompt but
// those whose record it preserves; the next user record marked
// isCompactSummary (after the boundary's attachments) is the summary that
// takes their place, anchored by its uuid. A later boundary that does not
// preserve it drops that summary too.
//
// A subagent (the Agent tool) writes its own transcript under
// <session id>/subagents/agent-<id>.jsonl (records marked isSidechain, with
// agentId): it has its own context, so the audit reads it as a session of
// its own (another agent), named by the agent id.

// ccRecord is one transcript line, as far as the audit reads it.
type ccRecord struct {
	Type          string          `json:"type"`
	Subtype       string          `json:"subtype"`
	UUID          string          `json:"uuid"`
	Timestamp     string          `json:"timestamp"`
	Cwd           string          `json:"cwd"`
	SessionID     string          `json:"sessionId"`
	AgentID       string          `json:"agentId"`
	IsSidechain   bool            `json:"isSidechain"`
	CompactSum    bool            `json:"isCompactSummary"` // the summary after a compact_boundary
	Message       *ccMessage      `json:"message"`
	ToolUseResult json.RawMessage `json:"toolUseResult"`
	Compact       *struct {
		Preserved *struct {
			AllUUIDs []string `json:"allUuids"`
		} `json:"preservedMessages"`
	} `json:"compactMetadata"`
}

type ccMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type ccBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// isClaudeCode reports whether data's first record is a Claude Code
// transcript's: a JSON object with a sessionId and a type.
func isClaudeCode(data []byte) bool {
	line, _, _ := bytes.Cut(bytes.TrimSpace(data), []byte("\n"))
	var r struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
	}
	return json.Unmarshal(line, &r) == nil && r.Type != "" && r.SessionID != ""
}

// ccToolUse is a tool call the model made, until its result is read.
type ccToolUse struct {
	name  string
	input json.RawMessage
}

// ccParse is one transcript being read into a session.
type ccParse struct {
	s        *Session
	uses     map[string]ccToolUse
	resultOf map[string]string // tool_use_id -> the record (uuid) holding its result
	anchors  []string          // results in the context, oldest first
	charsOf  map[string]int
	lastMsg  string // the assistant message the last records belong to
	// compacted: the index of the step of the last compaction boundary,
	// until its summary is read (-1: none awaited).
	compacted int
}

func parseClaudeCode(file string, data []byte) (*Session, error) {
	p := &ccParse{s: &Session{File: file, Format: FormatClaudeCode}, uses: map[string]ccToolUse{},
		resultOf: map[string]string{}, charsOf: map[string]int{}, compacted: -1}
	s := p.s
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for n := 1; sc.Scan(); n++ {
		var r ccRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("claude code transcript line %d: %w", n, err)
		}
		if s.ID == "" && r.SessionID != "" {
			s.ID = r.SessionID
		}
		if r.AgentID != "" && r.IsSidechain {
			s.ID = r.AgentID
		}
		at, _ := time.Parse(time.RFC3339Nano, r.Timestamp)
		switch {
		case r.Type == "system" && r.Subtype == "compact_boundary":
			p.compact(r, at)
		case r.Type == "assistant" && r.Message != nil:
			p.assistant(r, at)
		case r.Type == "user" && r.Message != nil:
			p.user(r, at)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("claude code transcript: %w", err)
	}
	if s.ID == "" {
		s.ID = baseName(file)
	}
	if len(s.Steps) == 0 {
		return nil, errors.New("a claude code transcript without messages")
	}
	return s, nil
}

// compact is a compaction boundary: every result it did not preserve
// leaves the context.
func (p *ccParse) compact(r ccRecord, at time.Time) {
	keep := map[string]bool{}
	if r.Compact != nil && r.Compact.Preserved != nil {
		for _, u := range r.Compact.Preserved.AllUUIDs {
			keep[u] = true
		}
	}
	st := Step{Time: at}
	var kept []string
	for _, a := range p.anchors {
		if keep[p.resultOf[a]] {
			kept = append(kept, a)
			continue
		}
		st.Forget = append(st.Forget, a)
		st.ForgetChars += p.charsOf[a]
	}
	p.anchors = kept
	p.compacted = -1
	if len(st.Forget) > 0 {
		p.s.Steps = append(p.s.Steps, st)
		p.compacted = len(p.s.Steps) - 1
	}
	p.lastMsg = ""
}

// summary is the compaction summary after a boundary: it joins the
// boundary's step, and stays in the context (as an anchor a later boundary
// may drop) like a tool result.
func (p *ccParse) summary(r ccRecord, text string) {
	if p.compacted < 0 || r.UUID == "" || strings.TrimSpace(text) == "" {
		return
	}
	st := &p.s.Steps[p.compacted]
	st.Summary, st.SummaryAnchor = text, r.UUID
	p.compacted = -1
	p.anchors = append(p.anchors, r.UUID)
	p.resultOf[r.UUID] = r.UUID
	p.charsOf[r.UUID] = len(text)
}

// assistant is a record of the model's answer: a model call when it starts
// a new message, then its text and tool calls.
func (p *ccParse) assistant(r ccRecord, at time.Time) {
	p.compacted = -1 // the model answered: no summary is coming
	if r.Message.ID == "" || r.Message.ID != p.lastMsg {
		p.s.Steps = append(p.s.Steps, Step{Model: true, Time: at})
		p.lastMsg = r.Message.ID
	}
	for _, b := range ccBlocks(r.Message.Content) {
		switch b.Type {
		case "text", "thinking":
			p.s.Steps = append(p.s.Steps, Step{Chars: len(b.Text)})
		case "tool_use":
			p.uses[b.ID] = ccToolUse{name: b.Name, input: b.Input}
			p.s.Steps = append(p.s.Steps, Step{Chars: len(b.Input)})
		}
	}
}

// user is a prompt, or the tool results the runtime sent back.
func (p *ccParse) user(r ccRecord, at time.Time) {
	p.lastMsg = ""
	if r.CompactSum {
		p.summary(r, ccResultText(r.Message.Content))
	}
	var prompt string
	if json.Unmarshal(r.Message.Content, &prompt) == nil {
		p.s.Steps = append(p.s.Steps, Step{Chars: len(prompt), Time: at})
		return
	}
	for _, b := range ccBlocks(r.Message.Content) {
		switch b.Type {
		case "text":
			p.s.Steps = append(p.s.Steps, Step{Chars: len(b.Text), Time: at})
		case "tool_result":
			st := ccToolStep(r, b, p.uses[b.ToolUseID], at)
			p.s.Steps = append(p.s.Steps, st)
			p.anchors = append(p.anchors, b.ToolUseID)
			p.resultOf[b.ToolUseID] = r.UUID
			p.charsOf[b.ToolUseID] = st.Chars + len(p.uses[b.ToolUseID].input)
		}
	}
}

// ccToolStep is one tool result: its structured answer, where the record
// has one, is the call's metadata (as the PostToolUse hook passes it).
func ccToolStep(r ccRecord, b ccBlock, use ccToolUse, at time.Time) Step {
	out := ccResultText(b.Content)
	call := &recognize.Call{Runtime: recognize.ClaudeCode, Tool: use.name, Args: use.input, Output: out,
		Cwd: r.Cwd, Error: b.IsError}
	if len(r.ToolUseResult) > 0 && string(r.ToolUseResult) != "null" {
		call.Metadata = r.ToolUseResult
	}
	if use.name == "" {
		call.Tool = "unknown"
	}
	return Step{Tool: call, Anchor: b.ToolUseID, Time: at, Chars: len(out), After: ccAfter(use.name, r.ToolUseResult)}
}

// ccAfter is the file's whole content after a Write or an Edit, from its
// structured answer: Write's content, Edit's originalFile with the
// replacement applied (the first occurrence, or all with replaceAll), as
// Claude Code applies it. nil when the answer does not tell.
func ccAfter(tool string, raw json.RawMessage) *string {
	var a struct {
		Content      *string `json:"content"`
		OriginalFile *string `json:"originalFile"`
		OldString    string  `json:"oldString"`
		NewString    string  `json:"newString"`
		ReplaceAll   bool    `json:"replaceAll"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &a) != nil {
		return nil
	}
	switch tool {
	case "Write":
		return a.Content
	case "Edit":
		if a.OriginalFile == nil || a.OldString == "" || !strings.Contains(*a.OriginalFile, a.OldString) {
			return nil
		}
		n := 1
		if a.ReplaceAll {
			n = -1
		}
		after := strings.Replace(*a.OriginalFile, a.OldString, a.NewString, n)
		return &after
	}
	return nil
}

func ccBlocks(raw json.RawMessage) []ccBlock {
	var bs []ccBlock
	_ = json.Unmarshal(raw, &bs)
	return bs
}

// ccResultText is a tool_result's text: a string, or its text blocks.
func ccResultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var texts []string
	for _, b := range ccBlocks(raw) {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// ccSidecar reports whether p is a file Claude Code keeps beside a
// transcript that is no session (a subagent's .meta.json).
func ccSidecar(p string) bool {
	return strings.HasSuffix(p, ".meta.json") && filepath.Base(filepath.Dir(p)) == "subagents"
}

// ccSeed puts the file a Claude Code Read showed into the virtual workspace
// before the read is recognized, when the session never showed it before
// and the read reached its final newline. Read shows that newline as an
// empty last row, which recognize prints back only for a file that ends
// with one, as every file on a server's disk it can read; the virtual
// workspace knows a file only once a read is taken in, so without this the
// first whole read of nearly every file (they end with a newline) would go
// untracked. A file already known, or made unknown by an edit the replay
// could not apply, is left to the read itself (it may show a change).
func ccSeed(v *vfs, c recognize.Call) {
	if c.Runtime != recognize.ClaudeCode || c.Tool != "Read" || len(c.Metadata) == 0 {
		return
	}
	var r struct {
		Type string `json:"type"`
		File struct {
			FilePath   string  `json:"filePath"`
			Content    *string `json:"content"`
			NumLines   int     `json:"numLines"`
			StartLine  int     `json:"startLine"`
			TotalLines int     `json:"totalLines"`
		} `json:"file"`
	}
	if json.Unmarshal(c.Metadata, &r) != nil || r.Type != "text" || r.File.Content == nil {
		return
	}
	f, content := r.File, *r.File.Content
	p := path.Clean(f.FilePath)
	start := max(f.StartLine, 1)
	if !path.IsAbs(p) || v.files[p] != nil || !strings.HasSuffix(content, "\n") || start+f.NumLines-1 < f.TotalLines {
		return
	}
	if start == 1 {
		v.setWhole(p, strings.TrimSuffix(content, "\n"))
		return
	}
	v.merge(p, start, strings.Split(strings.TrimSuffix(content, "\n"), "\n"))
}
