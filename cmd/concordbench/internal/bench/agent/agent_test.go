package agent

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/tasks"
)

func scriptedTask() tasks.Task {
	return tasks.Task{
		ID: "t", Question: "Which river flows through Alpha?", Answer: "Selva River",
		Evidence: []tasks.Evidence{{File: "A.txt", Line: 2, Pattern: `flows\s+through\s+Alpha`}},
		Probe:    tasks.Probe{Kind: tasks.ProbeSpan, Clozes: []tasks.Cloze{{File: "A.txt", Line: 2, Prefix: "The ", Suffix: " flows through Alpha."}}},
	}
}

// history builds a context from (tool, args, output) triples.
func history(steps ...[3]string) []Message {
	msgs := []Message{{Role: "system", Content: "s"}, {Role: "user", Content: "q"}}
	for i, s := range steps {
		id := "c" + string(rune('a'+i))
		msgs = append(msgs,
			Message{Role: "assistant", ToolCalls: []ToolCall{{ID: id, Name: s[0], Arguments: s[1]}}},
			Message{Role: "tool", ToolCallID: id, Content: s[2]})
	}
	return msgs
}

func TestScriptedRules(t *testing.T) {
	glob := [3]string{"glob", `{"pattern":"*"}`, "A.txt\nB.txt"}
	grep := [3]string{"grep", `{"pattern":"flows\\s+through\\s+Alpha"}`, "A.txt:2:The Lanna River flows through Alpha."}
	readMut := [3]string{"read_file", `{"path":"A.txt"}`, "1: Alpha is a town.\n2: The Lanna River flows through Alpha."}
	readOrig := [3]string{"read_file", `{"path":"A.txt"}`, "1: Alpha is a town.\n2: The Selva River flows through Alpha."}
	cases := []struct {
		name     string
		msgs     []Message
		wantTool string
		wantArg  string // substring of the arguments
	}{
		{"starts with glob", history(), "glob", `"*"`},
		{"greps the evidence pattern", history(glob), "grep", `flows`},
		{"reads the first hit's file", history(glob, grep), "read_file", `"A.txt"`},
		{"answers from the stale read (naive)", history(glob, grep, readMut), "answer", `Lanna River`},
		{"re-reads on an alert", history(glob, grep, readMut, [3]string{"glob", `{"pattern":"B*"}`, "B.txt\n[alert] A.txt is modified"}), "read_file", `"A.txt"`},
		{"answers from the re-read after an alert", history(glob, grep, readMut, [3]string{"glob", `{"pattern":"B*"}`, "B.txt\n[alert] A.txt is modified"}, readOrig), "answer", `Selva River`},
		{"calls diff when blocked", history(glob, grep, readMut, [3]string{"answer", `{"answer":"Lanna River"}`, "[blocked] files changed after you saw them; call diff before answering."}), "diff", `{}`},
		{"answers from a diff's + line", history(glob, grep, readMut, [3]string{"diff", `{}`, "--- A.txt\n+++ A.txt\n@@ line 2 @@\n-The Lanna River flows through Alpha.\n+The Selva River flows through Alpha."}), "answer", `Selva River`},
		{"re-reads the lines a Concord notice names", history(glob, grep, [3]string{"read_file", `{"path":"A.txt"}`, "[concord] /w/A.txt changed since this read; Re-read /w/A.txt lines 1-2 before relying on it."}), "read_file", `"start_line":1`},
		{"re-reads the one line a Concord notice names", history(glob, grep, [3]string{"read_file", `{"path":"A.txt","start_line":2,"end_line":2}`, "[concord] /w/A.txt changed since this read; the content shown earlier (line 2) is no longer accurate. Re-read /w/A.txt line 2 before relying on it."}), "read_file", `"end_line":2,"path":"/w/A.txt","start_line":2`},
		{"answers from a patched read (concord)", history(glob, grep, readOrig), "answer", `Selva River`},
		{"answers unknown without evidence", history(glob, [3]string{"grep", `{"pattern":"flows\\s+through\\s+Alpha"}`, "no matches"}), "answer", Unknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Scripted{}.Session(scriptedTask()).Next(context.Background(), tc.msgs, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Message.ToolCalls) != 1 {
				t.Fatalf("want one tool call, got %+v", rep.Message)
			}
			tc0 := rep.Message.ToolCalls[0]
			if tc0.Name != tc.wantTool || !strings.Contains(tc0.Arguments, tc.wantArg) {
				t.Fatalf("got %s(%s), want %s(...%s...)", tc0.Name, tc0.Arguments, tc.wantTool, tc.wantArg)
			}
		})
	}
}

func TestExtractKinds(t *testing.T) {
	out := func(lines ...string) []Message {
		return []Message{{Role: "tool", Content: strings.Join(lines, "\n")}}
	}
	same := tasks.Probe{Kind: tasks.ProbeSame, Clozes: []tasks.Cloze{
		{Prefix: "Ann is ", Suffix: "."}, {Prefix: "Bo is ", Suffix: "."}}}
	earlier := tasks.Probe{Kind: tasks.ProbeEarlier, Options: []string{"X Corp", "Y Corp"}, Clozes: []tasks.Cloze{
		{Prefix: "X Corp was founded in ", Suffix: "."}, {Prefix: "Y Corp was founded in ", Suffix: "."}}}
	cases := []struct {
		p    tasks.Probe
		msgs []Message
		want string
	}{
		{same, out("1: Ann is Dutch.", "1: Bo is Dutch."), "yes"},
		{same, out("1: Ann is Dutch.", "1: Bo is French."), "no"},
		{same, append(out("1: Ann is Dutch.", "1: Bo is French."), out("1: Bo is Dutch.")...), "yes"}, // the later read wins
		{same, out("1: Ann is Dutch."), Unknown},
		{earlier, out("a.txt:2:X Corp was founded in 1990.", "b.txt:2:Y Corp was founded in 1985."), "Y Corp"},
		{earlier, out("2: X Corp was founded in 1980.", "2: Y Corp was founded in 1985."), "X Corp"},
		{earlier, out("2: X Corp was founded in soon.", "2: Y Corp was founded in 1985."), Unknown},
	}
	for i, tc := range cases {
		if got := Extract(tc.p, tc.msgs); got != tc.want {
			t.Errorf("case %d: Extract = %q, want %q", i, got, tc.want)
		}
	}
}

// fakeOpenAI is a scripted chat-completions server: it replies with the
// next canned response and records each request.
type fakeOpenAI struct {
	mu       sync.Mutex
	replies  []string
	statuses []int
	requests []map[string]any
	authSeen []string
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var req map[string]any
	_ = json.Unmarshal(b, &req)
	f.requests = append(f.requests, req)
	f.authSeen = append(f.authSeen, r.Header.Get("Authorization"))
	i := len(f.requests) - 1
	if i < len(f.statuses) && f.statuses[i] != 0 {
		http.Error(w, `{"error":{"message":"overloaded"}}`, f.statuses[i])
		return
	}
	if len(f.replies) == 0 {
		http.Error(w, "no more replies", http.StatusInternalServerError)
		return
	}
	reply := f.replies[0]
	f.replies = f.replies[1:]
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, reply)
}

func TestOpenAIAgent(t *testing.T) {
	fake := &fakeOpenAI{
		statuses: []int{http.StatusServiceUnavailable}, // the first try fails, the retry succeeds
		replies: []string{
			`{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"A.txt\"}"}}]}}],"usage":{"prompt_tokens":120,"completion_tokens":15,"prompt_tokens_details":{"cached_tokens":64}}}`,
			`{"choices":[{"message":{"role":"assistant","content":"Selva River"}}],"usage":{"prompt_tokens":150,"completion_tokens":4}}`,
		},
	}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	o := &OpenAI{BaseURL: srv.URL + "/v1", Model: "test-model", APIKey: "sk-test", Retries: 2, Backoff: 1}
	msgs := history()
	rep, err := o.Session(scriptedTask()).Next(context.Background(), msgs, Tools(false, true))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Message.ToolCalls) != 1 || rep.Message.ToolCalls[0].Name != "read_file" || rep.Message.ToolCalls[0].ID != "call_9" {
		t.Fatalf("reply %+v", rep.Message)
	}
	if rep.Usage == nil || rep.Usage.PromptTokens != 120 || rep.Usage.CompletionTokens != 15 || rep.Usage.CachedTokens != 64 {
		t.Fatalf("usage %+v", rep.Usage)
	}
	msgs = append(msgs, rep.Message, Message{Role: "tool", ToolCallID: "call_9", Content: "2: The Selva River flows through Alpha."})
	rep, err = o.Next(context.Background(), msgs, Tools(false, true))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Message.Content != "Selva River" || len(rep.Message.ToolCalls) != 0 {
		t.Fatalf("final reply %+v", rep.Message)
	}
	if len(fake.requests) != 3 {
		t.Fatalf("%d requests, want 3 (one retried)", len(fake.requests))
	}
	for _, a := range fake.authSeen {
		if a != "Bearer sk-test" {
			t.Fatalf("Authorization %q", a)
		}
	}
	last := fake.requests[2]
	if last["model"] != "test-model" || last["tool_choice"] != "auto" {
		t.Fatalf("request %v", last)
	}
	if tools := last["tools"].([]any); len(tools) != 5 {
		t.Fatalf("%d tools, want 5 with diff", len(tools))
	}
	ms := last["messages"].([]any)
	asst := ms[2].(map[string]any)
	if asst["role"] != "assistant" || asst["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)["name"] != "read_file" {
		t.Fatalf("assistant message sent as %v", asst)
	}
	tool := ms[3].(map[string]any)
	if tool["role"] != "tool" || tool["tool_call_id"] != "call_9" {
		t.Fatalf("tool message sent as %v", tool)
	}
}

func TestOpenAIErrors(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		body    string
		want    string
		retries int
		calls   int
	}{
		{"bad request is not retried", http.StatusBadRequest, `{"error":{"message":"bad"}}`, "HTTP 400", 3, 1},
		{"server errors are retried then reported", http.StatusBadGateway, `oops`, "HTTP 502", 2, 3},
		{"no choices", http.StatusOK, `{"choices":[]}`, "no choices", 2, 1},
		{"not JSON", http.StatusOK, `<html>`, "decode response", 2, 1},
		{"error object", http.StatusOK, `{"error":{"message":"quota exceeded"}}`, "quota exceeded", 2, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls++
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			o := &OpenAI{BaseURL: srv.URL, Model: "m", Retries: tc.retries, Backoff: 1}
			_, err := o.Next(context.Background(), history(), Tools(false, false))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if calls != tc.calls {
				t.Fatalf("%d calls, want %d", calls, tc.calls)
			}
		})
	}
}

// Strict providers reject "required": null; every schema sends a list.
func TestToolSchemasRequiredIsAList(t *testing.T) {
	for _, set := range [][2]bool{{false, false}, {false, true}, {true, true}} {
		ts := Tools(set[0], set[1])
		b, err := json.Marshal(ts)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), `"required":null`) {
			t.Fatalf("tools %v: %s", set, b)
		}
		for _, s := range ts {
			var back struct {
				Required []string `json:"required"`
			}
			raw, _ := json.Marshal(s.Parameters)
			if err := json.Unmarshal(raw, &back); err != nil || back.Required == nil {
				t.Errorf("%s: required %v (%v)", s.Name, back.Required, err)
			}
		}
	}
}

// TestReadersFollowErrata: under tail placement a stale copy stays in place and errata after the
// newest message speak of it. Both readers take an erratum naming a call as marking that copy
// outdated, its "+N:" lines as the current text, and "current again" as taking the marks back
// (found in the bench's repeated and edits workloads: a change back, and a superseded read whose
// line moved out of the newer read).
func TestReadersFollowErrata(t *testing.T) {
	span := tasks.Probe{Kind: tasks.ProbeSpan, Clozes: []tasks.Cloze{{Prefix: "X Corp employs ", Suffix: " people."}}}
	tool := func(id, content string) Message { return Message{Role: "tool", ToolCallID: id, Content: content} }
	cases := []struct {
		name              string
		msgs              []Message
		latest, firstCopy string
	}{
		{"changed lines in an erratum", []Message{
			tool("call_1", "4: X Corp employs 100 people."),
			tool("call_2", "1: other\n\n[concord] Outdated in /w/x.txt: call_1 (line 4) changed:\n+4: X Corp employs 200 people."),
		}, "200", "200"},
		{"changed, then current again, in one note with another erratum", []Message{
			tool("call_1", "4: X Corp employs 100 people."),
			tool("call_2", "1: other\n\n[concord] Outdated in /w/x.txt: call_1 (line 4) changed:\n+4: X Corp employs 200 people."),
			tool("call_3", "1: more\n\n[concord] The output of call_1 is current again.\n[concord] Outdated in /w/y.txt: call_2 (line 1) is now at line 2."),
		}, "100", "100"},
		{"a copy named outdated without its text is not evidence", []Message{
			tool("call_1", "4: X Corp employs 100 people."),
			tool("call_2", "1: other\n\n[concord] Outdated in /w/x.txt: call_1 (line 4) was read again in call_2."),
		}, Unknown, Unknown},
		{"a grouped line names every call it lists", []Message{
			tool("call_1", "4: X Corp employs 100 people."),
			tool("call_7", "1: other\n\n[concord] Outdated in /w/x.txt: call_0 (lines 1-9), call_1 (line 4) changed by your edit in call_6; call_5 (line 2) is now at line 3."),
		}, Unknown, Unknown},
		{"a move that keeps the text keeps the copy as evidence", []Message{
			tool("call_1", "4: X Corp employs 100 people."),
			tool("call_7", "1: other\n\n[concord] Outdated in /w/x.txt: call_1 (line 4) moved with your edit in call_6, text unchanged."),
		}, "100", "100"},
		{"the newer read a pointer names is not marked by it", []Message{
			tool("call_2", "4: X Corp employs 300 people."),
			tool("call_7", "1: other\n\n[concord] Outdated in /w/x.txt: call_1 (line 4) was read again in call_2."),
		}, "300", "300"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Extract(span, tc.msgs); got != tc.latest {
				t.Errorf("latest-copy reader: %q, want %q", got, tc.latest)
			}
			if got := ExtractFirst(span, tc.msgs); got != tc.firstCopy {
				t.Errorf("first-copy reader: %q, want %q", got, tc.firstCopy)
			}
		})
	}
}
