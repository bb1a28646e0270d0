package hook

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/protocol"
)

// scanSeeds are inputs for the scanner's tests and fuzz target: hook
// inputs as the runtimes write them (testdata), and the corners of JSON.
var scanSeeds = []string{
	`{"session_id":"s1","cwd":"/p","hook_event_name":"PostToolUse","tool_input":{"file_path":"/p/a"},"tool_response":{"file":{"content":"a\nb","numLines":2}}}`,
	"{\n  \"cwd\": \"/tmp/p\",\n  \"hook_event_name\": \"AfterTool\",\n  \"session_id\": \"b5c6\",\n  \"tool_response\": {\"llmContent\": \"x\\ny\", \"returnDisplay\": \"\"}\n}",
	`{"session_id":"\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t","hook_event_name":"SessionStart","source":"compact"}`,
	`{"session_id":"lone \ud800 surrogate \udc00 \ud800\u0041","hook_event_name":null}`,
	`{"session_id":"a","session_id":"b"}`,
	`{"a":[1,-2.5e3,true,false,null,{"b":[[]]},"]"],"session_id":"x"}`,
	`{}`, ` { } `, `[]`, `{"session_id":1}`, `{"session_id":"x"`, `{"session_id":"x",}`, `{"a" 1}`,
	`{"session_id":"bad \x01 control"}`, "{\"session_id\":\"invalid \xff utf8\"}", `{"a":{"b":"c"}`, `"str"`, ``,
}

// TestPeek: the hook process reads an event's session, name, cwd and
// source as encoding/json reads them into commonInput.
func TestPeek(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Event
		wantErr string
	}{
		{in: scanSeeds[0], want: Event{Kind: KindToolDone, Name: "PostToolUse", Session: "s1", Agent: MainAgent, Cwd: "/p"}},
		{in: scanSeeds[2], want: Event{Kind: KindSessionStart, Name: "SessionStart", Session: "é😀\"\\/\b\f\n\r\t", Agent: MainAgent, Source: "compact"}},
		{in: scanSeeds[4], want: Event{Session: "b", Agent: MainAgent}},
		{in: `{"hook_event_name":"UserPromptSubmit"}`, wantErr: "no session_id"},
		{in: `{"session_id":1}`, wantErr: "session_id: want a string"},
		{in: `{"session_id":"x"`, wantErr: "invalid JSON"},
		{in: `[]`, wantErr: "not an object"},
	} {
		got, err := Peek(ClaudeCode{}, []byte(tc.in))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Peek(%q): error %v, want one saying %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Peek(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// TestHookRequestEncode: the hand-written request is the JSON that
// encoding/json makes of the same values, on one line.
func TestHookRequestEncode(t *testing.T) {
	event := "{\n  \"session_id\": \"s\",\r\n  \"x\": \"a\\nb\"\n}"
	r := hookRequest{runtime: "claude-code", client: "concord-hook-claude-code", version: "0.2.0 \"dev\"\x01",
		roots: []string{"/", "/home/a b/é"}, event: []byte(event)}
	line := r.encode()
	if i := strings.IndexByte(string(line), '\n'); i != len(line)-1 {
		t.Fatalf("request is not one line: %q", line)
	}
	var got struct {
		JSONRPC string              `json:"jsonrpc"`
		ID      int                 `json:"id"`
		Method  string              `json:"method"`
		Params  protocol.HookParams `json:"params"`
	}
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatalf("%v\n%s", err, line)
	}
	want := protocol.HookParams{Runtime: r.runtime, Initialize: &protocol.InitializeParams{ProtocolVersion: protocol.Version,
		ClientInfo: &protocol.Info{Name: r.client, Version: r.version}, Roots: r.roots, Placement: protocol.PlacementTail}}
	var gotEvent, wantEvent any
	if err := json.Unmarshal(got.Params.Event, &gotEvent); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(event), &wantEvent); err != nil {
		t.Fatal(err)
	}
	got.Params.Event = nil
	if got.JSONRPC != "2.0" || got.ID != 1 || got.Method != protocol.MethodHook || !reflect.DeepEqual(got.Params, want) || !reflect.DeepEqual(gotEvent, wantEvent) {
		t.Errorf("request %s\ndecodes to %+v %+v", line, got, gotEvent)
	}
}

// TestDecodeAnswer: the server's answers as encoding/json writes them.
func TestDecodeAnswer(t *testing.T) {
	out, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": protocol.HookResult{Output: "{\"a\":\"<b>\u2028é\"}\n"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decodeAnswer(out); err != nil || got != "{\"a\":\"<b>\u2028é\"}\n" {
		t.Errorf("decodeAnswer(%s) = %q, %v", out, got, err)
	}
	out, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "error": &protocol.Error{Code: protocol.CodeInvalidParams, Message: "hook: bad \"event\"", Data: json.RawMessage(`{"field":"event"}`)}})
	var pe *protocol.Error
	if _, err := decodeAnswer(out); !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidParams || pe.Message != "hook: bad \"event\"" {
		t.Errorf("decodeAnswer(%s): error %#v", out, err)
	}
	for _, bad := range []string{`{"jsonrpc":"2.0","id":1}`, `{"result":null}`, `{"result":{"output":1}}`, `nope`} {
		if _, err := decodeAnswer([]byte(bad)); err == nil {
			t.Errorf("decodeAnswer(%s): no error", bad)
		}
	}
}

// FuzzScan holds the scanner to encoding/json: an input it walks without
// error is an object whose members, keys and raw values, are
// encoding/json's (the last of duplicate keys winning), with each string
// value unquoted alike; an object encoding/json reads is walked.
func FuzzScan(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := map[string][]byte{}
		err := objectMembers(data, func(key string, raw []byte) bool {
			got[key] = raw
			return true
		})
		var want map[string]json.RawMessage
		jsonErr := json.Unmarshal(data, &want)
		if jsonErr == nil && want != nil && err != nil {
			t.Fatalf("encoding/json reads %q, the scanner does not: %v", data, err)
		}
		if err != nil || jsonErr != nil {
			return // the scanner checks less than encoding/json (numbers' grammar), never more
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d members, encoding/json %d", data, len(got), len(want))
		}
		for k, raw := range want {
			if string(got[k]) != string(raw) {
				t.Fatalf("%q: member %q is %q, encoding/json %q", data, k, got[k], raw)
			}
			var s string
			if string(raw) == "null" || json.Unmarshal(raw, &s) != nil {
				continue
			}
			if u, err := unquote(raw); err != nil || u != s {
				t.Fatalf("unquote(%q) = %q, %v; encoding/json %q", raw, u, err, s)
			}
			q := appendQuoted(nil, s)
			var back string
			if err := json.Unmarshal(q, &back); err != nil || back != s {
				t.Fatalf("appendQuoted(%q) = %s, which decodes to %q, %v", s, q, back, err)
			}
		}
	})
}
