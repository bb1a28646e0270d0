package responses

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// post sends one request and returns the SSE events' data, in order.
func post(t *testing.T, url, body string) (int, []map[string]any) {
	t.Helper()
	resp, err := http.Post(url+"/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var evs []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if e, ok := strings.CutPrefix(line, "event: "); ok {
			event = e
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(d), &m); err != nil {
				t.Fatalf("data not JSON: %s", d)
			}
			if m["type"] != event {
				t.Fatalf("event %q carries data of type %v", event, m["type"])
			}
			evs = append(evs, m)
		}
	}
	return resp.StatusCode, evs
}

func types(evs []map[string]any) string {
	var s []string
	for _, e := range evs {
		s = append(s, e["type"].(string))
	}
	return strings.Join(s, " ")
}

func TestScript(t *testing.T) {
	ran := 0
	s, err := Start([]Step{
		{Items: []Item{Exec("cat a.txt", "/w"), Patch("*** Begin Patch\n*** End Patch\n")}},
		{Before: func(r Request) error { ran = r.N; return nil }, Items: []Item{Text("héllo wörld")}},
		{Before: func(Request) error { return errors.New("boom") }},
		{Reply: func(r Request) ([]Item, error) {
			return []Item{RawItem(map[string]any{"type": "web_search_call", "id": "ws_1", "status": "completed"}), Text("n=" + strconv.Itoa(r.N))}, nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	tests := []struct {
		body   string
		status int
		types  string
	}{
		{`{"input":[]}`, 200, "response.created response.output_item.added response.output_item.done " +
			"response.output_item.added response.output_item.done response.completed"},
		{`{"input":[{"type":"function_call_output","call_id":"call_1","output":"Output:\nx\n"},` +
			`{"type":"custom_tool_call_output","call_id":"call_2","output":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"data:"}]}]}`,
			200, "response.created response.output_item.added response.output_text.delta response.output_text.delta " +
				"response.output_text.delta response.output_item.done response.completed"},
		{`{}`, 500, ""},
		{`{}`, 200, "response.created response.output_item.added response.output_item.done response.output_item.added " +
			"response.output_text.delta response.output_text.delta response.output_text.delta response.output_item.done response.completed"},
		{`{}`, 200, "response.created response.output_item.added response.output_text.delta response.output_text.delta " +
			"response.output_text.delta response.output_item.done response.completed"}, // past the script: a final message
	}
	var first []map[string]any
	for i, tc := range tests {
		status, evs := post(t, s.URL, tc.body)
		if status != tc.status || types(evs) != tc.types {
			t.Errorf("request %d: %d %q, want %d %q", i, status, types(evs), tc.status, tc.types)
		}
		if i == 0 {
			first = evs
		}
	}
	call := first[2]["item"].(map[string]any)
	if call["type"] != "function_call" || call["name"] != "exec_command" || call["call_id"] != "call_1" ||
		call["arguments"] != `{"cmd":"cat a.txt","workdir":"/w"}` {
		t.Errorf("function call item: %v", call)
	}
	patch := first[4]["item"].(map[string]any)
	if patch["type"] != "custom_tool_call" || patch["input"] != "*** Begin Patch\n*** End Patch\n" || patch["call_id"] != "call_2" {
		t.Errorf("custom call item: %v", patch)
	}
	if ran != 1 {
		t.Errorf("Before ran with request %d, want 1", ran)
	}
	reqs := s.Requests()
	if len(reqs) != 5 || s.Answered() != 4 {
		t.Fatalf("%d requests, %d answered", len(reqs), s.Answered())
	}
	if out, ok := reqs[1].Output("call_1"); !ok || out != "Output:\nx\n" {
		t.Errorf("Output(call_1) = %q, %v", out, ok)
	}
	if out, ok := reqs[1].Output("call_2"); !ok || out != "a[image]" {
		t.Errorf("Output(call_2) = %q, %v", out, ok)
	}
	if _, ok := reqs[1].Output("call_9"); ok {
		t.Error("Output(call_9) found")
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("Err() = %v, want the callback's", err)
	}
}

func TestChunks(t *testing.T) {
	for _, s := range []string{"", "a", "héllo", "0123456789"} {
		if got := strings.Join(chunks(s, 3), ""); got != s {
			t.Errorf("chunks(%q) joined = %q", s, got)
		}
	}
}
