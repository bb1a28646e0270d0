package anthropic

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// event is one server-sent event as a client reads it.
type event struct {
	name string
	data map[string]any
}

// post sends body to the fake and returns the events (streaming) or the
// one message (not streaming, as an event named "message").
func post(t *testing.T, s *Server, body string) []event {
	t.Helper()
	resp, err := http.Post(s.URL+"/v1/messages?beta=true", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s", resp.Status)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return []event{{"message", m}}
	}
	var evs []event
	sc := bufio.NewScanner(resp.Body)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("event %s: %v", name, err)
			}
			if d["type"] != name {
				t.Errorf("event %s carries type %v", name, d["type"])
			}
			evs = append(evs, event{name, d})
		}
	}
	return evs
}

// assemble rebuilds the assistant message from a stream as a client does:
// text deltas appended, tool input JSON concatenated then parsed.
func assemble(t *testing.T, evs []event) (blocks []map[string]any, stop string) {
	t.Helper()
	partial := map[int]string{}
	for _, e := range evs {
		switch e.name {
		case "content_block_start":
			blocks = append(blocks, e.data["content_block"].(map[string]any))
		case "content_block_delta":
			i := int(e.data["index"].(float64))
			d := e.data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				blocks[i]["text"] = blocks[i]["text"].(string) + d["text"].(string)
			case "input_json_delta":
				partial[i] += d["partial_json"].(string)
			}
		case "content_block_stop":
			i := int(e.data["index"].(float64))
			if p, ok := partial[i]; ok {
				var in any
				if err := json.Unmarshal([]byte(p), &in); err != nil {
					t.Fatalf("block %d input: %v", i, err)
				}
				blocks[i]["input"] = in
			}
		case "message_delta":
			stop = e.data["delta"].(map[string]any)["stop_reason"].(string)
		}
	}
	return blocks, stop
}

const tools = `"tools":[{"name":"Read","input_schema":{"type":"object"}},{"name":"Grep","input_schema":{"type":"object"}}]`

func TestScript(t *testing.T) {
	var seen []string
	s, err := Start(
		Step{Tools: []ToolUse{{Name: "Read", Input: map[string]any{"file_path": "/a"}}, {Name: "Grep", Input: map[string]any{"pattern": "x"}}},
			Before: func(r *Request) error { seen = append(seen, "step0:"+strings.Join(r.Tools(), ",")); return nil }},
		Say("all done"),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// The agent's first turn: two parallel tool calls, streamed.
	evs := post(t, s, `{"model":"m","stream":true,`+tools+`,"messages":[{"role":"user","content":"go"}]}`)
	names := make([]string, len(evs))
	for i, e := range evs {
		names[i] = e.name
	}
	want := []string{"message_start",
		"content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop"}
	if !slices.Equal(names, want) {
		t.Fatalf("events %v, want %v", names, want)
	}
	blocks, stop := assemble(t, evs)
	if stop != "tool_use" || len(blocks) != 2 || blocks[0]["name"] != "Read" || blocks[1]["name"] != "Grep" {
		t.Fatalf("blocks %v stop %q", blocks, stop)
	}
	if blocks[0]["id"] != ToolUseID(0, 0) || blocks[1]["id"] != ToolUseID(0, 1) {
		t.Errorf("ids %v %v", blocks[0]["id"], blocks[1]["id"])
	}
	if in := blocks[0]["input"].(map[string]any); in["file_path"] != "/a" {
		t.Errorf("Read input %v", in)
	}
	if !slices.Equal(seen, []string{"step0:Read,Grep"}) {
		t.Errorf("Before saw %v", seen)
	}

	// A side call (no tools) gets short text and takes no step.
	blocks, stop = assemble(t, post(t, s, `{"model":"m","stream":true,"messages":[{"role":"user","content":"title?"}]}`))
	if stop != "end_turn" || len(blocks) != 1 || blocks[0]["text"] == "" {
		t.Errorf("side call answered %v %q", blocks, stop)
	}
	if s.Remaining() != 1 {
		t.Errorf("remaining %d after a side call, want 1", s.Remaining())
	}

	// The next turn carries both results, one as a string, one as blocks
	// with an image; it is answered by the final step, not streamed.
	second := `{"model":"m",` + tools + `,"messages":[
		{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"` + ToolUseID(0, 0) + `","name":"Read","input":{}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"` + ToolUseID(0, 0) + `","content":"     1\thello"},
			{"type":"tool_result","tool_use_id":"` + ToolUseID(0, 1) + `","is_error":true,"content":[{"type":"text","text":"a"},{"type":"image","source":{}},{"type":"text","text":"b"}]}]}]}`
	evs = post(t, s, second)
	if len(evs) != 1 || evs[0].data["stop_reason"] != "end_turn" {
		t.Fatalf("non-streamed answer %v", evs)
	}
	if c := evs[0].data["content"].([]any); c[0].(map[string]any)["text"] != "all done" {
		t.Errorf("final text %v", c)
	}

	if got := len(s.Requests()); got != 3 {
		t.Errorf("%d requests kept, want 3", got)
	}
	if turns := s.Turns(); len(turns) != 2 || turns[0].Step != 0 || turns[1].Step != 1 {
		t.Errorf("turns %v", turns)
	}
	trs := s.ToolResults()
	wantTR := []ToolResult{
		{ToolUseID: ToolUseID(0, 0), Text: "     1\thello"},
		{ToolUseID: ToolUseID(0, 1), Text: "a\nb", Images: 1, IsError: true},
	}
	if !slices.Equal(trs, wantTR) {
		t.Errorf("tool results %+v, want %+v", trs, wantTR)
	}
	if tr, ok := s.ToolResult(ToolUseID(0, 0)); !ok || tr.Text != "     1\thello" {
		t.Errorf("ToolResult %+v %v", tr, ok)
	}
	if got := s.Find("1\thello"); !slices.Equal(got, []int{2}) {
		t.Errorf("Find = %v, want [2]", got)
	}
	if err := s.Err(); err != nil {
		t.Errorf("Err = %v", err)
	}

	// A turn past the script is answered, and reported.
	post(t, s, `{"model":"m",`+tools+`,"messages":[{"role":"user","content":"more"}]}`)
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "past the end") {
		t.Errorf("Err after the script = %v", err)
	}
}

func TestBeforeError(t *testing.T) {
	boom := errors.New("boom")
	s, err := Start(Step{Text: "x", Before: func(*Request) error { return boom }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	post(t, s, `{"model":"m","stream":true,`+tools+`,"messages":[]}`)
	if !errors.Is(s.Err(), boom) {
		t.Errorf("Err = %v, want boom", s.Err())
	}
}

func TestBadRequests(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, err := http.Post(s.URL+"/v1/messages", "application/json", strings.NewReader("{"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || s.Err() == nil {
		t.Errorf("malformed body: %s, Err %v", resp.Status, s.Err())
	}
	resp, err = http.Get(s.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: %s", resp.Status)
	}
}

// A subagent's requests take the steps marked Subagent, the main agent's
// the others, each in order; a compaction request (tools offered, a summary
// asked for) is answered with a summary and takes no step.
func TestSubagentAndCompaction(t *testing.T) {
	s, err := Start(
		Call("Agent", map[string]any{"prompt": "p"}),
		Step{Subagent: true, Tools: []ToolUse{{Name: "Read", Input: map[string]any{"file_path": "/s"}}}},
		Say("main done"),
		Step{Subagent: true, Text: "sub done"},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sub := `"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.328.063; cc_is_subagent=true;"}],`
	main := `"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.328.092;"}],`
	msgs := `"messages":[{"role":"user","content":"go"}]}`
	name := func(evs []event) string {
		blocks, _ := assemble(t, evs)
		if blocks[0]["type"] == "tool_use" {
			return blocks[0]["name"].(string)
		}
		return blocks[0]["text"].(string)
	}
	if got := name(post(t, s, `{"model":"m","stream":true,`+main+tools+`,`+msgs)); got != "Agent" {
		t.Errorf("main's first turn: %s", got)
	}
	if got := name(post(t, s, `{"model":"m","stream":true,`+main+tools+`,`+msgs)); got != "main done" {
		t.Errorf("main's second turn: %s", got)
	}
	if got := name(post(t, s, `{"model":"m","stream":true,`+sub+tools+`,`+msgs)); got != "Read" {
		t.Errorf("subagent's first turn: %s", got)
	}
	summary := `{"model":"m","stream":true,` + main + tools + `,"messages":[{"role":"user","content":"go"},
		{"role":"user","content":[{"type":"text","text":"Write a <summary>. REMINDER: Do NOT call any tools."}]}]}`
	if got := name(post(t, s, summary)); got != Summary {
		t.Errorf("compaction answered %q", got)
	}
	if got := name(post(t, s, `{"model":"m","stream":true,`+sub+tools+`,`+msgs)); got != "sub done" {
		t.Errorf("subagent's second turn: %s", got)
	}
	rs := s.Requests()
	if !rs[2].Subagent || rs[0].Subagent || !rs[3].Compaction || !rs[3].Side || rs[3].Step != -1 {
		t.Errorf("requests marked wrong: %+v", rs)
	}
	if s.Remaining() != 0 || s.Err() != nil {
		t.Errorf("remaining %d, err %v", s.Remaining(), s.Err())
	}
}
