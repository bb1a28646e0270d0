package gemini

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

const withTools = `{"contents":[{"role":"user","parts":[{"text":"go"}]}],"tools":[{"functionDeclarations":[{"name":"read_file"}]}]}`

func TestScript(t *testing.T) {
	ran := 0
	s := New(
		func(r *Request) Reply {
			ran++
			return Call(Fn("read_file", map[string]any{"file_path": "/a"}), Fn("glob", nil))
		},
		func(r *Request) Reply { return Say("second") },
	)
	url, err := s.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := url + "/v1beta/models/gemini-2.5-pro"

	code, body := post(t, base+":streamGenerateContent?alt=sse", withTools)
	if code != 200 || !strings.HasPrefix(body, "data: ") || !strings.HasSuffix(body, "\r\n\r\n") {
		t.Fatalf("stream: %d %q", code, body)
	}
	var chunk struct {
		Candidates []struct{ Content Content } `json:"candidates"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(strings.TrimPrefix(body, "data: "))), &chunk); err != nil {
		t.Fatal(err)
	}
	parts := chunk.Candidates[0].Content.Parts
	if len(parts) != 2 || parts[0].FunctionCall.Name != "read_file" || parts[0].FunctionCall.ID != "call_1" || parts[1].FunctionCall.ID != "call_2" {
		t.Fatalf("function calls: %+v", parts)
	}

	// A side request (no tools) is not a step; JSON side requests get JSON.
	_, body = post(t, base+":generateContent", `{"contents":[],"generationConfig":{"responseMimeType":"application/json"}}`)
	if !strings.Contains(body, `next_speaker`) {
		t.Errorf("side JSON answer: %s", body)
	}
	_, body = post(t, base+":generateContent", `{"contents":[{"role":"user","parts":[{"text":"t"}]},{"role":"user","parts":[{"functionResponse":{"id":"call_1","name":"read_file","response":{"output":"x"}}},{"text":" note"}]}],"tools":[{}]}`)
	if !strings.Contains(body, `"second"`) {
		t.Errorf("second step: %s", body)
	}
	if _, body = post(t, base+":countTokens", `{"contents":[]}`); !strings.Contains(body, "totalTokens") {
		t.Errorf("countTokens: %s", body)
	}
	_, body = post(t, base+":generateContent", withTools)
	if !strings.Contains(body, `"done"`) {
		t.Errorf("past the script: %s", body)
	}
	if code, _ := post(t, url+"/v1/chat", `{}`); code != 404 {
		t.Errorf("unknown route: %d", code)
	}

	reqs := s.Requests()
	if ran != 1 || len(reqs) != 3 || len(s.SideRequests()) != 2 {
		t.Fatalf("ran %d, %d loop requests, %d side", ran, len(reqs), len(s.SideRequests()))
	}
	if got, ok := reqs[1].ToolResult(1); !ok || got != "x note" {
		t.Errorf("ToolResult(1) = %q, %v", got, ok)
	}
	if _, ok := reqs[1].ToolResult(2); ok {
		t.Error("ToolResult(2) found in a request with one response")
	}
	if f := s.Failures(); len(f) != 1 || !strings.Contains(f[0], "no route") {
		t.Errorf("failures: %v", f)
	}
	s.Expect(false, "boom %d", 1)
	if f := s.Failures(); len(f) != 2 || !strings.HasSuffix(f[1], "boom 1") {
		t.Errorf("Expect: %v", f)
	}
}

func TestOutput(t *testing.T) {
	for _, tc := range []struct{ resp, want string }{
		{`{"output":"a"}`, "a"},
		{`{"error":"e"}`, "e"},
		{`{}`, ""},
		{`[]`, ""},
	} {
		if got := (FunctionResponse{Response: json.RawMessage(tc.resp)}).Output(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.resp, got, tc.want)
		}
	}
}
