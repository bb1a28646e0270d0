// Package anthropic is a scripted fake of the Anthropic Messages API for
// tests that drive a real agent runtime (Claude Code) offline: a server on
// 127.0.0.1 that answers `POST /v1/messages` (streaming or not) from a list of
// steps, and keeps every request body so a test can judge what the model was
// shown.
//
// A request that offers tools is the agent's turn and takes the next step; a
// request without tools is a side call (a title, a summary) and gets a short
// text. A step is one assistant message: tool_use blocks (several for
// parallel calls) or final text. Its Before callback runs first, so a test
// can change a file between two model calls.
package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// ToolUse is one tool call the fake model makes.
type ToolUse struct {
	ID    string // "" gets a unique id
	Name  string
	Input any // marshalled to JSON as the call's input
}

// Step is one assistant message of the script.
type Step struct {
	// Before runs when the step is taken, before it is answered: req is
	// the request that asked for it. An error is kept (Server.Err).
	Before func(req *Request) error
	Text   string    // a text block ("" with no Tools: "done")
	Tools  []ToolUse // tool_use blocks; stop_reason tool_use when any
	// Subagent: the step answers a subagent's request (Claude Code marks
	// them "cc_is_subagent=true" in the system prompt), not the main
	// agent's. The two run at once, so each takes its own steps in order.
	Subagent bool
	// InputTokens is the usage reported for the request (0: a small
	// figure); a large one makes the runtime compact its context.
	InputTokens int
}

// Call is a step of one tool call.
func Call(name string, input any) Step { return Step{Tools: []ToolUse{{Name: name, Input: input}}} }

// ToolUseID is the id given to the j-th tool call of step when the script
// names none, so a test can find its result.
func ToolUseID(step, j int) string { return fmt.Sprintf("toolu_fake_s%02d_%d", step, j) }

// Say is a final step: text and end_turn.
func Say(text string) Step { return Step{Text: text} }

// Request is one model call as the runtime sent it.
type Request struct {
	Path string          // the URL path and query, e.g. "/v1/messages?beta=true"
	Body json.RawMessage // the raw JSON body
	// Side: the call offered no tools (a title), or asked for a summary of
	// the conversation (a compaction); it was answered with short text (a
	// summary) instead of a step.
	Side bool
	// Compaction: the call asked for the conversation's summary.
	Compaction bool
	// Subagent: a subagent made the call.
	Subagent bool
	// Step is the index of the script step that answered it (-1: none).
	Step int

	parsed body
}

// body is the part of a request the helpers read.
type body struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	System   json.RawMessage   `json:"system"`
	Tools    []json.RawMessage `json:"tools"`
	Messages []Message         `json:"messages"`
}

// Message is one message of a request.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or a list of blocks
}

// Block is one content block of a message.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // tool_result: a string or blocks
	IsError   bool            `json:"is_error,omitempty"`
}

// Blocks is the message's content as blocks (a string is one text block).
func (m Message) Blocks() []Block {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []Block{{Type: "text", Text: s}}
	}
	var bs []Block
	_ = json.Unmarshal(m.Content, &bs)
	return bs
}

// Summary answers a compaction: Claude Code keeps what is inside <summary>.
const Summary = "<analysis>A scripted session.</analysis>\n<summary>The fake model's summary of the session so far.</summary>"

// asksSummary reports whether the request is a compaction: Claude Code
// offers its tools (the prompt cache is kept) but its last message asks for
// a summary and forbids tool calls.
func (r *Request) asksSummary() bool {
	ms := r.parsed.Messages
	if len(ms) == 0 || ms[len(ms)-1].Role != "user" {
		return false
	}
	for _, b := range ms[len(ms)-1].Blocks() {
		if b.Type == "text" && strings.Contains(b.Text, "<summary>") && strings.Contains(b.Text, "Do NOT call any tools") {
			return true
		}
	}
	return false
}

// Model is the model the request named.
func (r *Request) Model() string { return r.parsed.Model }

// Messages are the request's messages.
func (r *Request) Messages() []Message { return r.parsed.Messages }

// Tools are the names of the tools the request offered.
func (r *Request) Tools() []string {
	var names []string
	for _, t := range r.parsed.Tools {
		var n struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(t, &n) == nil {
			names = append(names, n.Name)
		}
	}
	return names
}

// ToolResult is a tool_result block as the model received it.
type ToolResult struct {
	ToolUseID string
	Text      string // its text blocks joined by "\n" (a string content as is)
	Images    int    // its image blocks
	IsError   bool
}

// ToolResults lists the tool_result blocks of every message of the request,
// in order.
func (r *Request) ToolResults() []ToolResult {
	var out []ToolResult
	for _, m := range r.parsed.Messages {
		for _, b := range m.Blocks() {
			if b.Type == "tool_result" {
				out = append(out, toolResult(b))
			}
		}
	}
	return out
}

func toolResult(b Block) ToolResult {
	tr := ToolResult{ToolUseID: b.ToolUseID, IsError: b.IsError}
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		tr.Text = s
		return tr
	}
	var bs []Block
	_ = json.Unmarshal(b.Content, &bs)
	var texts []string
	for _, c := range bs {
		switch c.Type {
		case "text":
			texts = append(texts, c.Text)
		case "image":
			tr.Images++
		}
	}
	tr.Text = strings.Join(texts, "\n")
	return tr
}

// Contains reports whether s occurs anywhere in the request body's text
// (system prompt, messages, tool results), JSON-unescaped.
func (r *Request) Contains(s string) bool {
	return strings.Contains(r.text(), s)
}

// text is every string of the body, one a line.
func (r *Request) text() string {
	var v any
	if json.Unmarshal(r.Body, &v) != nil {
		return string(r.Body)
	}
	var sb strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			sb.WriteString(v)
			sb.WriteByte('\n')
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return sb.String()
}

// Server is a running fake.
type Server struct {
	URL string // http://127.0.0.1:PORT, the runtime's ANTHROPIC_BASE_URL

	ln  net.Listener
	srv *http.Server

	mu       sync.Mutex
	summary  string // a compaction's answer ("": Summary)
	script   []Step
	taken    []bool // by step
	requests []*Request
	errs     []error
	ids      int
}

// SetSummary sets what a compaction is answered with (Summary by default):
// a summary that restates what the session read.
func (s *Server) SetSummary(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.summary = text
}

// Start serves script on a free loopback port until Close.
func Start(script ...Step) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fake anthropic: listen: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), ln: ln, script: script, taken: make([]bool, len(script))}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// SetScript replaces the steps not yet taken by script (for a script that
// needs the server's URL).
func (s *Server) SetScript(script ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := 0
	for kept < len(s.taken) && s.taken[kept] {
		kept++
	}
	s.script = append(s.script[:kept:kept], script...)
	s.taken = append(s.taken[:kept:kept], make([]bool, len(script))...)
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Requests are the model calls received so far, in order (side calls too).
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// Turns are the requests that took a script step, in order.
func (s *Server) Turns() []*Request {
	var out []*Request
	for _, r := range s.Requests() {
		if !r.Side {
			out = append(out, r)
		}
	}
	return out
}

// Remaining is the number of steps not yet taken.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.taken {
		if !t {
			n++
		}
	}
	return n
}

// Err joins what went wrong: a Before callback's error, a request past the
// end of the script, a body that is not JSON.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

// ToolResults lists each tool_result once, by tool_use_id, as it was first
// sent to the model (a later request resends the history unchanged, or
// compacted), in the order first seen.
func (s *Server) ToolResults() []ToolResult {
	seen := map[string]bool{}
	var out []ToolResult
	for _, r := range s.Requests() {
		for _, tr := range r.ToolResults() {
			if !seen[tr.ToolUseID] {
				seen[tr.ToolUseID] = true
				out = append(out, tr)
			}
		}
	}
	return out
}

// ToolResult is the first tool_result sent for the tool call id; false when
// none was.
func (s *Server) ToolResult(id string) (ToolResult, bool) {
	for _, tr := range s.ToolResults() {
		if tr.ToolUseID == id {
			return tr, true
		}
	}
	return ToolResult{}, false
}

// Find lists the indexes (in Requests) of the requests whose text contains sub.
func (s *Server) Find(sub string) []int {
	var out []int
	for i, r := range s.Requests() {
		if r.Contains(sub) {
			out = append(out, i)
		}
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, hr *http.Request) {
	switch {
	case hr.Method == http.MethodPost && hr.URL.Path == "/v1/messages":
		s.messages(w, hr)
	case hr.Method == http.MethodPost && hr.URL.Path == "/v1/messages/count_tokens":
		_, _ = io.Copy(io.Discard, hr.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"input_tokens":100}`)
	default:
		http.NotFound(w, hr)
	}
}

func (s *Server) messages(w http.ResponseWriter, hr *http.Request) {
	raw, err := io.ReadAll(hr.Body)
	if err != nil {
		s.fail(fmt.Errorf("read request: %w", err))
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := &Request{Path: hr.URL.RequestURI(), Body: raw, Step: -1}
	if err := json.Unmarshal(raw, &req.parsed); err != nil {
		s.fail(fmt.Errorf("request body: %w", err))
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.Compaction = req.asksSummary()
	req.Subagent = strings.Contains(string(req.parsed.System), "cc_is_subagent=true")
	req.Side = len(req.parsed.Tools) == 0 || req.Compaction
	step := s.take(req)
	if step.Before != nil {
		if err := step.Before(req); err != nil {
			s.fail(fmt.Errorf("step %d: before: %w", req.Step, err))
		}
	}
	msg := s.message(req, step)
	if req.parsed.Stream {
		writeStream(w, msg)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(msg)
}

// take records req and picks what answers it.
func (s *Server) take(req *Request) Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	if req.Compaction {
		if s.summary != "" {
			return Step{Text: s.summary}
		}
		return Step{Text: Summary}
	}
	if req.Side {
		return Step{Text: "Title"}
	}
	for i, st := range s.script {
		if !s.taken[i] && st.Subagent == req.Subagent {
			s.taken[i] = true
			req.Step = i
			return st
		}
	}
	s.errs = append(s.errs, fmt.Errorf("request %d (subagent %v): past the end of the script (%d steps)", len(s.requests)-1, req.Subagent, len(s.script)))
	return Step{Text: "done"}
}

func (s *Server) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, err)
}

// message is the assistant message answering req with step.
type message struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []map[string]any `json:"content"`
	StopReason   string           `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        usage            `json:"usage"`
}

type usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

func (s *Server) message(req *Request, step Step) message {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	m := message{
		ID: fmt.Sprintf("msg_fake%04d", s.ids), Type: "message", Role: "assistant",
		Model: req.parsed.Model, StopReason: "end_turn",
		Usage: usage{InputTokens: step.InputTokens, OutputTokens: 10},
	}
	if m.Usage.InputTokens == 0 {
		m.Usage.InputTokens = 100
	}
	text := step.Text
	if text == "" && len(step.Tools) == 0 {
		text = "done"
	}
	if text != "" {
		m.Content = append(m.Content, map[string]any{"type": "text", "text": text})
	}
	for j, t := range step.Tools {
		id := t.ID
		if id == "" {
			id = ToolUseID(req.Step, j)
		}
		input := t.Input
		if input == nil {
			input = map[string]any{}
		}
		m.Content = append(m.Content, map[string]any{"type": "tool_use", "id": id, "name": t.Name, "input": input})
		m.StopReason = "tool_use"
	}
	return m
}

// writeStream sends msg as the Messages API's server-sent events: the
// text in one text_delta, a tool's input in one input_json_delta.
func writeStream(w http.ResponseWriter, msg message) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	send := func(event string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	}
	start := msg
	start.Content = []map[string]any{}
	start.StopReason = ""
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": start.ID, "type": "message", "role": "assistant", "model": start.Model, "content": start.Content,
		"stop_reason": nil, "stop_sequence": nil, "usage": usage{InputTokens: msg.Usage.InputTokens, OutputTokens: 1},
	}})
	for i, block := range msg.Content {
		switch block["type"] {
		case "text":
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": block["text"]}})
		case "tool_use":
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{}}})
			input, _ := json.Marshal(block["input"])
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": msg.StopReason, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": msg.Usage.OutputTokens}})
	send("message_stop", map[string]any{"type": "message_stop"})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
