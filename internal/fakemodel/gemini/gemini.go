// Package gemini is a scripted stand-in for the Gemini API (generativelanguage v1beta) on
// 127.0.0.1, for tests that drive the real Gemini CLI offline: it answers
// POST /v1beta/models/MODEL:streamGenerateContent?alt=sse, :generateContent and :countTokens.
//
// Each request of the agent loop (one that declares tools) is handed to the next scripted step,
// which may act first (change a file between two model calls, as another process would) and
// answers with function calls or text. Side requests (routing, next-speaker checks, titles: no
// tools) are answered by Side and kept apart. Every request is captured, so a test can judge
// exactly what the model was sent.
package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
)

// Request is one model request as Gemini CLI sent it.
type Request struct {
	// Index is the 1-based position among the agent loop's requests (0 for side requests).
	Index  int
	Model  string // MODEL of the URL
	Method string // "streamGenerateContent", "generateContent" or "countTokens"
	Body   GenerateRequest
	Raw    json.RawMessage // the body exactly as received
}

// GenerateRequest is the part of a request body the tests read.
type GenerateRequest struct {
	Contents          []Content       `json:"contents"`
	SystemInstruction *Content        `json:"systemInstruction,omitempty"`
	Tools             []Tool          `json:"tools,omitempty"`
	GenerationConfig  json.RawMessage `json:"generationConfig,omitempty"`
}

// Tool is one entry of a request's tools; FunctionDeclarations name the functions offered.
type Tool struct {
	FunctionDeclarations []struct {
		Name string `json:"name"`
	} `json:"functionDeclarations,omitempty"`
}

// Content is one turn of the conversation.
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// Part is one piece of a turn: text, a function call or a function's response.
type Part struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
}

// FunctionCall is the model asking for a tool.
type FunctionCall struct {
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

// FunctionResponse is a tool's result as sent back to the model.
type FunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// Output is the response's "output" string (Gemini CLI's shape for a tool's text), or its
// "error"; "" when it has neither.
func (f FunctionResponse) Output() string {
	var r struct {
		Output string `json:"output"`
		Error  string `json:"error"`
	}
	if json.Unmarshal(f.Response, &r) != nil {
		return ""
	}
	if r.Output != "" {
		return r.Output
	}
	return r.Error
}

// FunctionResponses lists every functionResponse part the request carries, oldest first.
func (r *Request) FunctionResponses() []FunctionResponse {
	var out []FunctionResponse
	for _, c := range r.Body.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				out = append(out, *p.FunctionResponse)
			}
		}
	}
	return out
}

// ToolResult is the full text the model was sent for the n-th function call the script made
// (1-based, counted over the whole run): the output and every text part that follows that
// functionResponse in the same turn (where a runtime appends notes). "", false when absent.
func (r *Request) ToolResult(n int) (string, bool) {
	seen := 0
	for _, c := range r.Body.Contents {
		for i, p := range c.Parts {
			if p.FunctionResponse == nil {
				continue
			}
			seen++
			if seen != n {
				continue
			}
			var b strings.Builder
			b.WriteString(p.FunctionResponse.Output())
			for _, q := range c.Parts[i+1:] {
				if q.FunctionResponse != nil {
					break
				}
				b.WriteString(q.Text)
			}
			return b.String(), true
		}
	}
	return "", false
}

// Text is every text part of the request's contents joined, for "does the model see X" checks.
func (r *Request) Text() string {
	var b strings.Builder
	for _, c := range r.Body.Contents {
		for _, p := range c.Parts {
			b.WriteString(p.Text)
			if p.FunctionResponse != nil {
				b.Write(p.FunctionResponse.Response)
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Reply is one scripted answer: function calls, or text when Calls is empty.
type Reply struct {
	Calls []FunctionCall
	Text  string
}

// Call is a Reply asking for tools, in order.
func Call(calls ...FunctionCall) Reply { return Reply{Calls: calls} }

// Fn is one function call with its arguments.
func Fn(name string, args map[string]any) FunctionCall { return FunctionCall{Name: name, Args: args} }

// Say is a Reply of text only (the agent loop ends on it).
func Say(text string) Reply { return Reply{Text: text} }

// Step answers one agent-loop request. It may act before answering (change files); it reports
// a failed expectation with Server.Expect.
type Step func(req *Request) Reply

// Server is the fake. The zero value is not usable: call New.
type Server struct {
	// Side answers requests outside the agent loop (nil: a short text, or a JSON object when
	// the request asks for JSON).
	Side func(req *Request) Reply
	// Final answers agent-loop requests past the end of the script (default: Say("done")).
	Final Reply

	steps    []Step
	mu       sync.Mutex
	requests []*Request // the agent loop's, in order
	side     []*Request
	failures []string
	calls    int // function calls answered so far

	srv *http.Server
	ln  net.Listener
}

// New returns a fake that answers the agent loop's requests with steps, in order.
func New(steps ...Step) *Server {
	return &Server{steps: steps, Final: Say("done")}
}

// Start listens on 127.0.0.1 (a free port) and serves until Close. It returns the base URL to
// put in GOOGLE_GEMINI_BASE_URL.
func (s *Server) Start() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("fake gemini: listen: %w", err)
	}
	s.ln = ln
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("fake gemini: serve", "err", err)
		}
	}()
	return "http://" + ln.Addr().String(), nil
}

// Close stops the server and waits for requests in flight.
func (s *Server) Close() error {
	if s.srv == nil {
		return nil
	}
	return s.srv.Shutdown(context.Background())
}

// Requests returns the agent loop's requests so far.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// SideRequests returns the requests outside the agent loop so far.
func (s *Server) SideRequests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.side...)
}

// Expect records a failed expectation when cond is false (steps run on the server's
// goroutines, so they cannot call t.Fatal).
func (s *Server) Expect(cond bool, format string, args ...any) {
	if cond {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, fmt.Sprintf("request %d: ", len(s.requests))+fmt.Sprintf(format, args...))
}

// Failures returns the failed expectations, and any request the fake could not answer.
func (s *Server) Failures() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.failures...)
}

// Dump is every captured request (agent loop first, then side), for a post-mortem file.
func (s *Server) Dump() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	type dumped struct {
		Index  int             `json:"index"`
		Model  string          `json:"model"`
		Method string          `json:"method"`
		Body   json.RawMessage `json:"body"`
	}
	var out struct {
		Failures []string `json:"failures"`
		Requests []dumped `json:"requests"`
		Side     []dumped `json:"side"`
	}
	out.Failures = s.failures
	for _, r := range s.requests {
		out.Requests = append(out.Requests, dumped{r.Index, r.Model, r.Method, r.Raw})
	}
	for _, r := range s.side {
		out.Side = append(out.Side, dumped{r.Index, r.Model, r.Method, r.Raw})
	}
	return json.MarshalIndent(out, "", " ")
}

func (s *Server) fail(w http.ResponseWriter, code int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.mu.Lock()
	s.failures = append(s.failures, msg)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": code, "message": "fake gemini: " + msg, "status": "INVALID_ARGUMENT"}})
	_, _ = w.Write(b)
}

// parsePath splits /v1beta/models/MODEL:METHOD.
func parsePath(p string) (model, method string, ok bool) {
	rest, ok := strings.CutPrefix(p, "/v1beta/models/")
	if !ok {
		return "", "", false
	}
	model, method, ok = strings.Cut(rest, ":")
	return model, method, ok && model != ""
}

func (s *Server) serve(w http.ResponseWriter, hr *http.Request) {
	model, method, ok := parsePath(hr.URL.Path)
	if hr.Method != http.MethodPost || !ok {
		s.fail(w, http.StatusNotFound, "no route %s %s", hr.Method, hr.URL.Path)
		return
	}
	raw, err := io.ReadAll(hr.Body)
	if err != nil {
		s.fail(w, http.StatusBadRequest, "read body: %v", err)
		return
	}
	req := &Request{Model: model, Method: method, Raw: raw}
	if err := json.Unmarshal(raw, &req.Body); err != nil {
		s.fail(w, http.StatusBadRequest, "%s: body: %v", method, err)
		return
	}
	switch method {
	case "countTokens":
		s.mu.Lock()
		s.side = append(s.side, req)
		s.mu.Unlock()
		writeJSON(w, map[string]any{"totalTokens": approxTokens(raw)})
		return
	case "generateContent", "streamGenerateContent":
	default:
		s.fail(w, http.StatusNotFound, "unknown method %q", method)
		return
	}
	reply := s.answer(req)
	resp := s.response(req, reply)
	if method == "generateContent" {
		writeJSON(w, resp)
		return
	}
	// alt=sse: one event with the whole answer, as the API may send it.
	w.Header().Set("Content-Type", "text/event-stream")
	b, _ := json.Marshal(resp)
	_, _ = fmt.Fprintf(w, "data: %s\r\n\r\n", b)
}

// answer runs the step for req (outside the lock: a step may take its time).
func (s *Server) answer(req *Request) Reply {
	loop := len(req.Body.Tools) > 0
	s.mu.Lock()
	if !loop {
		s.side = append(s.side, req)
		s.mu.Unlock()
		if s.Side != nil {
			return s.Side(req)
		}
		if asksJSON(req.Body.GenerationConfig) {
			// Gemini CLI's side calls that want JSON (next speaker, routing): the user speaks next.
			return Say(`{"next_speaker":"user","reasoning":"fake model: the turn is over","complexity_score":1,"complexity_reasoning":"fake"}`)
		}
		return Say("ok")
	}
	s.requests = append(s.requests, req)
	req.Index = len(s.requests)
	var step Step
	if req.Index <= len(s.steps) {
		step = s.steps[req.Index-1]
	}
	s.mu.Unlock()
	if step == nil {
		return s.Final
	}
	return step(req)
}

func asksJSON(cfg json.RawMessage) bool {
	var c struct {
		ResponseMimeType string `json:"responseMimeType"`
	}
	return json.Unmarshal(cfg, &c) == nil && c.ResponseMimeType == "application/json"
}

func (s *Server) response(req *Request, r Reply) map[string]any {
	var parts []map[string]any
	if len(r.Calls) == 0 {
		parts = append(parts, map[string]any{"text": r.Text})
	}
	for _, c := range r.Calls {
		s.mu.Lock()
		s.calls++
		n := s.calls
		s.mu.Unlock()
		args := c.Args
		if args == nil {
			args = map[string]any{}
		}
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", n)
		}
		parts = append(parts, map[string]any{"functionCall": map[string]any{"id": id, "name": c.Name, "args": args}})
	}
	prompt := approxTokens(req.Raw)
	return map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": parts},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": prompt, "candidatesTokenCount": 10, "totalTokenCount": prompt + 10},
		"modelVersion":  req.Model,
	}
}

// approxTokens is a stable token count for the usage figures: a quarter of the bytes.
func approxTokens(raw []byte) int { return len(raw)/4 + 1 }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(v)
	_, _ = w.Write(b)
}
