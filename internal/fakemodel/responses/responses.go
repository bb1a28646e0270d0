// Package responses is a scripted fake of the OpenAI Responses API
// (POST /v1/responses, streamed as server-sent events), for tests that drive
// a real agent runtime (Codex CLI) offline on 127.0.0.1. Each model call is
// answered by the next step of a script; every request body is kept, so a
// test can judge exactly what the model was sent (tool outputs, hook
// context, errata).
//
// The stream carries what Codex's reader (codex-api's process_sse) acts on:
// response.created, response.output_item.added / done per item,
// response.output_text.delta for a message's text, response.completed.
package responses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Item is one output item of a response, as the model would stream it.
type Item struct {
	// Type: "function_call", "custom_tool_call" or "message".
	Type string
	Name string // the tool's name (a call)
	// Args are a function call's arguments (encoded as JSON); Input is a
	// custom (freeform) tool call's raw input, e.g. apply_patch's patch.
	Args  any
	Input string
	Text  string // a message's text
	ID    string // the call id; "" picks one
	// Raw is an item sent as it is (Type "raw"), e.g. a web_search_call the
	// provider ran itself.
	Raw map[string]any
}

// Call is a function call with its arguments.
func Call(name string, args any) Item { return Item{Type: "function_call", Name: name, Args: args} }

// Exec is Codex's exec_command running cmd (workdir "" is the session's cwd).
func Exec(cmd, workdir string) Item {
	a := map[string]any{"cmd": cmd}
	if workdir != "" {
		a["workdir"] = workdir
	}
	return Call("exec_command", a)
}

// Custom is a freeform tool call (apply_patch in recent Codex versions).
func Custom(name, input string) Item { return Item{Type: "custom_tool_call", Name: name, Input: input} }

// Patch is an apply_patch call with patch as its input.
func Patch(patch string) Item { return Custom("apply_patch", patch) }

// RawItem is an item sent verbatim.
func RawItem(item map[string]any) Item { return Item{Type: "raw", Raw: item} }

// Text is an assistant message.
func Text(s string) Item { return Item{Type: "message", Text: s} }

// Step answers one model call.
type Step struct {
	// Before runs before the answer is sent, with the request being
	// answered: a test changes files here, between two model calls. An
	// error answers the call with HTTP 500 and is kept (Server.Err).
	Before func(Request) error
	Items  []Item
	// Reply, when set, makes the items from the request (after Before):
	// a call that needs what an earlier output said (a session id).
	Reply func(Request) ([]Item, error)
}

// Request is one captured model call.
type Request struct {
	N      int // 0-based, in arrival order
	Path   string
	Header http.Header
	Body   json.RawMessage
}

// Input is the request's input items, raw.
func (r Request) Input() []json.RawMessage {
	var b struct {
		Input []json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal(r.Body, &b)
	return b.Input
}

// Output is what the model was shown for the call callID: the text of its
// function_call_output or custom_tool_call_output (content parts joined),
// and whether it was found.
func (r Request) Output(callID string) (string, bool) {
	for _, raw := range r.Input() {
		var it struct {
			Type   string          `json:"type"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
		}
		if json.Unmarshal(raw, &it) != nil || it.CallID != callID ||
			(it.Type != "function_call_output" && it.Type != "custom_tool_call_output") {
			continue
		}
		return OutputText(it.Output), true
	}
	return "", false
}

// OutputText is a tool output's text: a string, or content parts whose
// text is joined (an image part shows as "[image]").
func OutputText(out json.RawMessage) string {
	var s string
	if json.Unmarshal(out, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(out, &parts) == nil {
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
	return string(out)
}

// Server is the fake, listening on 127.0.0.1.
type Server struct {
	URL string // base URL to configure, ending in /v1

	srv    *http.Server
	ln     net.Listener
	mu     sync.Mutex
	script []Step
	next   int
	reqs   []Request
	calls  int // call ids handed out
	errs   []error
	done   chan struct{}
}

// Start listens on a free loopback port and answers with script. Calls past
// the script's end are answered with a short final message, so a runtime
// that asks once more (a summary, a retry) ends its turn; they are kept
// like the others.
func Start(script []Step) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fake responses api: listen: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String() + "/v1", ln: ln, script: script, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/responses", s.responses)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		slog.Debug("fake responses api: unknown path", "method", r.Method, "path", r.URL.Path)
		http.NotFound(w, r)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.fail(fmt.Errorf("serve: %w", err))
		}
	}()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}

// Requests is every model call so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Answered is how many script steps were used.
func (s *Server) Answered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// Err is every failure so far (a Before callback's, a body that could not
// be read), joined.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

func (s *Server) fail(err error) {
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.mu.Unlock()
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	if enc := r.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		s.fail(fmt.Errorf("request body encoded as %q", enc))
		http.Error(w, "unsupported content-encoding", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil || !json.Valid(body) {
		s.fail(fmt.Errorf("request body: not JSON (%v)", err))
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	req := Request{N: len(s.reqs), Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	s.reqs = append(s.reqs, req)
	var step Step
	if s.next < len(s.script) {
		step = s.script[s.next]
		s.next++
	} else {
		step = Step{Items: []Item{Text("Done.")}}
	}
	s.mu.Unlock()

	items := step.Items
	if step.Before != nil {
		err = step.Before(req)
	}
	if err == nil && step.Reply != nil {
		items, err = step.Reply(req)
	}
	if err != nil {
		s.fail(fmt.Errorf("request %d: %w", req.N, err))
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	// Call ids are handed out under the lock: parallel requests never share one.
	s.mu.Lock()
	items = append([]Item(nil), items...)
	for i, it := range items {
		if it.ID == "" && (it.Type == "function_call" || it.Type == "custom_tool_call") {
			s.calls++
			items[i].ID = "call_" + strconv.Itoa(s.calls)
		}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	if err := stream(w, "resp_"+strconv.Itoa(req.N+1), items); err != nil {
		s.fail(fmt.Errorf("request %d: stream: %w", req.N, err))
	}
}

// stream writes one response as server-sent events.
func stream(w http.ResponseWriter, id string, items []Item) error {
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	send := func(ev map[string]any) error {
		data, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], data)
		return err
	}
	if err := send(map[string]any{"type": "response.created", "response": map[string]any{"id": id, "status": "in_progress"}}); err != nil {
		return err
	}
	flush()
	outTokens := 0
	for i, it := range items {
		done, err := wire(it, id, i)
		if err != nil {
			return err
		}
		added := map[string]any{}
		for k, v := range done {
			added[k] = v
		}
		if it.Type == "message" {
			added["content"] = []any{}
			added["status"] = "in_progress"
		}
		if err := send(map[string]any{"type": "response.output_item.added", "output_index": i, "item": added}); err != nil {
			return err
		}
		if it.Type == "message" {
			// The text in a few deltas, as a model streams it.
			for _, d := range chunks(it.Text, 3) {
				if err := send(map[string]any{"type": "response.output_text.delta", "item_id": done["id"],
					"output_index": i, "content_index": 0, "delta": d}); err != nil {
					return err
				}
			}
		}
		if err := send(map[string]any{"type": "response.output_item.done", "output_index": i, "item": done}); err != nil {
			return err
		}
		outTokens += 10
		flush()
	}
	usage := map[string]any{"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": outTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": 100 + outTokens}
	if err := send(map[string]any{"type": "response.completed",
		"response": map[string]any{"id": id, "status": "completed", "usage": usage}}); err != nil {
		return err
	}
	flush()
	return nil
}

// wire is an item as the Responses API sends it.
func wire(it Item, resp string, i int) (map[string]any, error) {
	itemID := resp + "_item_" + strconv.Itoa(i)
	switch it.Type {
	case "function_call":
		args, err := json.Marshal(it.Args)
		if err != nil {
			return nil, fmt.Errorf("%s arguments: %w", it.Name, err)
		}
		if s, ok := it.Args.(string); ok { // already JSON text
			args = []byte(s)
		}
		return map[string]any{"type": "function_call", "id": itemID, "call_id": it.ID, "name": it.Name,
			"arguments": string(args), "status": "completed"}, nil
	case "custom_tool_call":
		return map[string]any{"type": "custom_tool_call", "id": itemID, "call_id": it.ID, "name": it.Name,
			"input": it.Input, "status": "completed"}, nil
	case "raw":
		return it.Raw, nil
	case "message":
		return map[string]any{"type": "message", "id": itemID, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": it.Text, "annotations": []any{}}}}, nil
	}
	return nil, fmt.Errorf("unknown item type %q", it.Type)
}

// chunks splits s into about n pieces on rune boundaries.
func chunks(s string, n int) []string {
	r := []rune(s)
	if len(r) == 0 {
		return []string{""}
	}
	size := max(1, (len(r)+n-1)/n)
	var out []string
	for i := 0; i < len(r); i += size {
		out = append(out, string(r[i:min(len(r), i+size)]))
	}
	return out
}
