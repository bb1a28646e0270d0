package frame

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/concord-ctx/concord/protocol"
)

// msg is what the tests decode frames into (jsonrpc2's own type is unexported).
type msg map[string]any

func (m *msg) UnmarshalJSON(b []byte) error {
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	// As jsonrpc2 tells the two apart: by a struct, so field names match
	// in any case, and a message must be a request or a response, not both.
	var probe struct {
		Method *string         `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  any             `json:"error"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	if isReq, isResp := probe.Method != nil, probe.Result != nil || probe.Error != nil; isReq == isResp {
		return fmt.Errorf("unable to determine message type")
	}
	*m = v
	return nil
}

func cl(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }

// TestStreamRead feeds byte streams through the frame reader and checks
// which messages come out and which errors are answered, in order.
func TestStreamRead(t *testing.T) {
	req := `{"jsonrpc":"2.0","id":1,"method":"stats"}`
	tests := []struct {
		name    string
		framing string
		max     int64
		in      string
		methods []string // methods of the messages read, in order
		codes   []int64  // error codes answered, in order
		ids     []string // ids echoed in those answers
	}{
		{"one message", protocol.FramingContentLength, 0, cl(req), []string{"stats"}, nil, nil},
		{"two back to back", protocol.FramingContentLength, 0, cl(req) + cl(`{"jsonrpc":"2.0","method":"exit"}`), []string{"stats", "exit"}, nil, nil},
		{"content-type header and odd case", protocol.FramingContentLength, 0, "content-length: 41\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + req, []string{"stats"}, nil, nil},
		{"bare LF headers", protocol.FramingContentLength, 0, "Content-Length: 41\n\n" + req, []string{"stats"}, nil, nil},
		{"malformed JSON then valid", protocol.FramingContentLength, 0, cl(`{"jsonrpc":"2.0",`) + cl(req), []string{"stats"}, []int64{protocol.CodeParseError}, []string{"null"}},
		{"truncated JSON is answered with its id", protocol.FramingContentLength, 0, cl(`{"jsonrpc":"2.0","id":"q","method":"sync","params":{`) + cl(req), []string{"stats"}, []int64{protocol.CodeParseError}, []string{`"q"`}},
		{"not an object", protocol.FramingContentLength, 0, cl(`[1,2]`) + cl(req), []string{"stats"}, []int64{protocol.CodeInvalidRequest}, []string{"null"}},
		{"wrong jsonrpc version keeps the id", protocol.FramingContentLength, 0, cl(`{"jsonrpc":"1.0","id":7,"method":"stats"}`) + cl(req), []string{"stats"}, []int64{protocol.CodeInvalidRequest}, []string{"7"}},
		{"neither request nor response", protocol.FramingContentLength, 0, cl(`{"jsonrpc":"2.0","id":"a"}`) + cl(req), []string{"stats"}, []int64{protocol.CodeInvalidRequest}, []string{`"a"`}},
		{"jsonrpc as a number is not a batch", protocol.FramingContentLength, 0, cl(`{"jsonrpc":2.0,"id":3,"method":"stats"}`) + cl(req), []string{"stats"}, []int64{protocol.CodeInvalidRequest}, []string{"3"}},
		{"method as a number", protocol.FramingContentLength, 0, cl(`{"jsonrpc":"2.0","id":5,"method":5}`) + cl(req), []string{"stats"}, []int64{protocol.CodeInvalidRequest}, []string{"5"}},
		{"id above int64 is not echoed", protocol.FramingContentLength, 0, cl(`{"jsonrpc":"2.0","id":18446744073709551615,"method":"stats"}`) + cl(req), []string{"stats"}, []int64{protocol.CodeInvalidRequest}, []string{"null"}},
		{"a string is not a message", protocol.FramingContentLength, 0, cl(`"stats"`) + cl(req), []string{"stats"}, []int64{protocol.CodeInvalidRequest}, []string{"null"}},
		{"object id is not echoed", protocol.FramingContentLength, 0, cl(`{"jsonrpc":"2.0","id":{},"method":"x"}`) + cl(req), []string{"stats"}, []int64{protocol.CodeInvalidRequest}, []string{"null"}},
		{"short Content-Length: the truncated request is answered by id, the next frame kept", protocol.FramingContentLength, 0,
			"Content-Length: 60\r\n\r\n" + `{"jsonrpc":"2.0","id":9,"method":"observe","params":{"text":"héllo wörld"}}` + cl(req),
			[]string{"stats"}, []int64{protocol.CodeParseError, protocol.CodeParseError}, []string{"9", "null"}},
		{"a header ending in Content-Length is no stray tail", protocol.FramingContentLength, 0, "X-Original-Content-Length: 3\r\n" + cl(req), []string{"stats"}, nil, nil},
		{"a JSON line in Content-Length framing is answered with a hint at once", protocol.FramingContentLength, 0, req + "\n" + cl(req), []string{"stats"}, []int64{protocol.CodeParseError}, []string{"null"}},
		{"missing Content-Length", protocol.FramingContentLength, 0, "X-Foo: 1\r\n\r\n" + cl(req), []string{"stats"}, []int64{protocol.CodeParseError}, []string{"null"}},
		{"oversized is skipped, its id echoed", protocol.FramingContentLength, 50, cl(`{"jsonrpc":"2.0","id":2,"method":"observe","params":{"text":"`+strings.Repeat("x", 100)+`"}}`) + cl(req), []string{"stats"}, []int64{protocol.CodeInvalidRequest}, []string{"2"}},
		{"oversized: id after the params", protocol.FramingContentLength, 50, cl(`{"jsonrpc":"2.0","method":"observe","params":{"id":9,"t":"`+strings.Repeat("}", 100)+`"},"id":"r-3"}`) + cl(req), []string{"stats"}, []int64{protocol.CodeInvalidRequest}, []string{`"r-3"`}},
		{"oversized notification: id null", protocol.FramingContentLength, 50, cl(`{"jsonrpc":"2.0","method":"observe","params":{"id":9,"text":"`+strings.Repeat("x", 100)+`"}}`) + cl(req), []string{"stats"}, []int64{protocol.CodeInvalidRequest}, []string{"null"}},
		{"oversized with an unusable id: null", protocol.FramingContentLength, 50, cl(`{"jsonrpc":"2.0","id":-1,"method":"observe","params":{"text":"`+strings.Repeat("x", 100)+`"}}`) + cl(req), []string{"stats"}, []int64{protocol.CodeInvalidRequest}, []string{"null"}},
		// Issue 10 bug 6: the error path echoed the raw bytes; the normal
		// path (jsonrpc2) writes U+FFFD for invalid UTF-8.
		{"newline: an id with invalid UTF-8 is echoed as U+FFFD", protocol.FramingNewline, 0, "{\"id\":\"0\xff\"}\n" + req + "\n", []string{"stats"}, []int64{protocol.CodeInvalidRequest}, []string{"\"0\uFFFD\""}},
		{"escaped id echoed in one spelling", protocol.FramingContentLength, 0, cl(`{"jsonrpc":"1.0","id":"\u0061b","method":"stats"}`) + cl(req), []string{"stats"}, []int64{protocol.CodeInvalidRequest}, []string{`"ab"`}},
		{"newline: two lines", protocol.FramingNewline, 0, req + "\n" + req + "\r\n", []string{"stats", "stats"}, nil, nil},
		{"newline: blank lines and no final newline", protocol.FramingNewline, 0, "\n\n" + req, []string{"stats"}, nil, nil},
		{"newline: malformed then valid", protocol.FramingNewline, 0, "{oops\n" + req + "\n", []string{"stats"}, []int64{protocol.CodeParseError}, []string{"null"}},
		{"newline: oversized line skipped", protocol.FramingNewline, 60, strings.Repeat("y", 70000) + "\n" + req + "\n", []string{"stats"}, []int64{protocol.CodeInvalidRequest}, []string{"null"}},
		{"newline: oversized request answered with its id", protocol.FramingNewline, 60, `{"jsonrpc":"2.0","id":12,"method":"observe","params":{"text":"` + strings.Repeat("y", 70000) + "\"}}\n" + req + "\n", []string{"stats"}, []int64{protocol.CodeInvalidRequest}, []string{"12"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			s := New(strings.NewReader(tt.in), &out, nil, tt.framing, tt.max)
			s.AnswerBad = true
			var methods []string
			for {
				var m msg
				err := s.ReadObject(&m)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("ReadObject: %v", err)
				}
				methods = append(methods, fmt.Sprint(m["method"]))
			}
			if fmt.Sprint(methods) != fmt.Sprint(tt.methods) {
				t.Errorf("methods = %v, want %v", methods, tt.methods)
			}
			codes, ids := answers(t, out.Bytes(), tt.framing)
			if fmt.Sprint(codes) != fmt.Sprint(tt.codes) || fmt.Sprint(ids) != fmt.Sprint(tt.ids) {
				t.Errorf("answers: codes %v ids %v, want codes %v ids %v\n%s", codes, ids, tt.codes, tt.ids, out.String())
			}
		})
	}
}

// answers decodes the error replies a stream wrote.
func answers(t *testing.T, out []byte, framing string) (codes []int64, ids []string) {
	t.Helper()
	r := New(bytes.NewReader(out), io.Discard, nil, framing, 0)
	for {
		frame, err := r.readFrame()
		if err == io.EOF {
			return codes, ids
		}
		if err != nil {
			t.Fatalf("reading answers: %v", err)
		}
		var resp struct {
			ID    json.RawMessage `json:"id"`
			Error *protocol.Error `json:"error"`
		}
		if err := json.Unmarshal(frame, &resp); err != nil || resp.Error == nil {
			t.Fatalf("answer %s is not an error response (%v)", frame, err)
		}
		codes = append(codes, resp.Error.Code)
		ids = append(ids, string(resp.ID))
	}
}

// An oversized response (a client's readSource answer) must fail the call
// waiting for it at once: the stream hands jsonrpc2 an error response with
// the same id instead of skipping it.
func TestStreamOversizedResponseFailsTheCall(t *testing.T) {
	for _, framing := range []string{protocol.FramingContentLength, protocol.FramingNewline} {
		body := `{"jsonrpc":"2.0","id":4,"result":{"text":"` + strings.Repeat("z", 200) + `","version":"v2"}}`
		in := cl(body)
		if framing == protocol.FramingNewline {
			in = body + "\n"
		}
		var out bytes.Buffer
		s := New(strings.NewReader(in), &out, nil, framing, 100)
		s.AnswerBad = true
		var m msg
		if err := s.ReadObject(&m); err != nil {
			t.Fatalf("%s: ReadObject: %v", framing, err)
		}
		e, _ := m["error"].(map[string]any)
		if fmt.Sprint(m["id"]) != "4" || e == nil || fmt.Sprint(e["code"]) != fmt.Sprint(protocol.CodeInvalidRequest) {
			t.Errorf("%s: got %v, want an error response with id 4 and code %d", framing, m, protocol.CodeInvalidRequest)
		}
		if out.Len() != 0 {
			t.Errorf("%s: the server answered a response: %q", framing, out.String())
		}
	}
}

func TestStreamTruncatedFrameEndsStream(t *testing.T) {
	for _, in := range []string{"Content-Length: 100\r\n\r\n{\"jsonrpc\"", "Content-Length: 10\r\n"} {
		s := New(strings.NewReader(in), io.Discard, nil, protocol.FramingContentLength, 0)
		var m msg
		if err := s.ReadObject(&m); err != io.ErrUnexpectedEOF {
			t.Errorf("%q: err = %v, want io.ErrUnexpectedEOF", in, err)
		}
	}
}

// TestStreamCutInput: input that ends inside a frame is io.ErrUnexpectedEOF
// for jsonrpc2 and, in Err, a *CutError that says where it ended and what
// to do; input that ends between frames is a clean end (Err nil).
func TestStreamCutInput(t *testing.T) {
	req := `{"jsonrpc":"2.0","id":1,"method":"stats"}`
	tests := []struct {
		name string
		in   string
		want []string // substrings of Err(); none: a clean end
	}{
		{"not a frame at all", "garbage\n", []string{`inside a message's headers`, `malformed header "garbage"`, "--framing=newline"}},
		{"a word without a newline", "garbage", []string{`inside a header line ("garbage")`, "--framing=newline"}},
		{"a JSON line without a newline", req, []string{"inside a header line", "got a JSON message", "--framing=newline"}},
		{"headers without the blank line", "Content-Length: 10\r\n", []string{"inside a message's headers"}},
		{"body cut short", "Content-Length: 100\r\n\r\n0123456789", []string{"10 bytes into a message body of 100 (Content-Length: 100)"}},
		{"oversized body cut short", "Content-Length: 999999999999\r\n\r\n" + cl(req), []string{"bytes into the body of an oversized message (Content-Length: 999999999999, over the limit of 1024 bytes)"}},
		{"a frame after a good one", cl(req) + "Content-Length: 5\r\n\r\n{", []string{"1 bytes into a message body of 5"}},
		{"complete frames", cl(req) + cl(req), nil},
		{"blank lines after the last frame", cl(req) + "\r\n\r\n  ", nil},
		{"nothing", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(strings.NewReader(tt.in), io.Discard, nil, protocol.FramingContentLength, 1<<10)
			var err error
			for err == nil {
				var m msg
				err = s.ReadObject(&m)
			}
			if tt.want == nil {
				if err != io.EOF || s.Err() != nil {
					t.Fatalf("ReadObject: %v, Err: %v; want io.EOF and nil", err, s.Err())
				}
				return
			}
			var ce *CutError
			if err != io.ErrUnexpectedEOF || !errors.As(s.Err(), &ce) || !errors.Is(s.Err(), io.ErrUnexpectedEOF) {
				t.Fatalf("ReadObject: %v, Err: %#v; want io.ErrUnexpectedEOF and a *CutError", err, s.Err())
			}
			for _, w := range tt.want {
				if !strings.Contains(s.Err().Error(), w) {
					t.Errorf("Err() = %q, want it to contain %q", s.Err(), w)
				}
			}
		})
	}
}

// TestStreamOversizedSaidAtOnce: a Content-Length over the cap is reported
// (OnSkip) as soon as its header is read, while the input stays open and
// its body has not come: the bytes it swallows are not swallowed unsaid.
func TestStreamOversizedSaidAtOnce(t *testing.T) {
	pr, pw := io.Pipe()
	s := New(pr, io.Discard, nil, protocol.FramingContentLength, 1<<10)
	said := make(chan [2]int64, 1)
	s.OnSkip = func(n, max int64) { said <- [2]int64{n, max} }
	ended := make(chan error, 1)
	go func() {
		var m msg
		ended <- s.ReadObject(&m)
	}()
	if _, err := io.WriteString(pw, "Content-Length: 999999999999\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-said:
		if got != [2]int64{999999999999, 1 << 10} {
			t.Errorf("OnSkip(%d, %d), want (999999999999, 1024)", got[0], got[1])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnSkip not called 10s after the oversized header, input still open")
	}
	io.WriteString(pw, cl(`{"jsonrpc":"2.0","id":1,"method":"stats"}`))
	pw.Close()
	if err := <-ended; err != io.ErrUnexpectedEOF {
		t.Errorf("ReadObject: %v, want io.ErrUnexpectedEOF", err)
	}
	if !strings.Contains(fmt.Sprint(s.Err()), "oversized") {
		t.Errorf("Err() = %v, want the oversized body named", s.Err())
	}
}

func TestStreamWriteRoundTrip(t *testing.T) {
	for _, framing := range []string{protocol.FramingContentLength, protocol.FramingNewline} {
		var buf bytes.Buffer
		w := New(strings.NewReader(""), &buf, nil, framing, 0)
		want := []msg{{"jsonrpc": "2.0", "method": "a", "params": map[string]any{"text": "line1\nline2\r\n"}}, {"jsonrpc": "2.0", "method": "b"}}
		for _, m := range want {
			if err := w.WriteObject(m); err != nil {
				t.Fatal(err)
			}
		}
		r := New(&buf, io.Discard, nil, framing, 0)
		for i := range want {
			var m msg
			if err := r.ReadObject(&m); err != nil {
				t.Fatalf("%s: read %d: %v", framing, i, err)
			}
			if fmt.Sprint(m) != fmt.Sprint(want[i]) {
				t.Errorf("%s: got %v, want %v", framing, m, want[i])
			}
		}
	}
}

// FuzzStreamRead: any byte stream ends in EOF (or an unexpected EOF) after
// finitely many frames, never a panic; every message read is a JSON object;
// every answer written is a well-formed JSON-RPC error.
func FuzzStreamRead(f *testing.F) {
	req := `{"jsonrpc":"2.0","id":1,"method":"stats"}`
	resp := `{"jsonrpc":"2.0","id":2,"result":{"blocks":[{"text":"a\nb"}]}}`
	addStreamSeeds(f, cl(req), cl("{")+cl(req), cl(resp)+cl(req), "Content-Length: 5\r\n\r\n[1,2]", "Content-Length: -1\r\n\r\n", "\r\n\r\n", req+"\n{\n", "Content-Length: 99999999999999999999\r\n\r\n")
	f.Fuzz(func(t *testing.T, in []byte, newline bool) {
		s, out, framing := fuzzStream(in, newline)
		// Responses to these ids keep their result for a caller (Await).
		var kept []Awaited
		for _, id := range []jsonrpc2.ID{{Num: 1}, {Num: 2}, {Str: "a", IsString: true}} {
			kept = append(kept, s.Await(id))
		}
		readToEnd(t, s, len(in), func(m msg) {
			if m == nil {
				t.Fatalf("nil message without error")
			}
		})
		for _, a := range kept {
			if raw, ok := a.Take(); ok && !json.Valid(raw) {
				t.Fatalf("kept result %q is not JSON", raw)
			}
			a.Done()
		}
		if len(s.awaited) != 0 {
			t.Fatalf("%d ids still awaited after every caller was done", len(s.awaited))
		}
		checkAnswers(t, out, framing)
	})
}

// addStreamSeeds adds each seed under both framings.
func addStreamSeeds(f *testing.F, seeds ...string) {
	for _, seed := range seeds {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
}

// fuzzStream is a stream over in that answers bad frames into out, with
// a 1 KiB message cap, in newline or Content-Length framing.
func fuzzStream(in []byte, newline bool) (s *Stream, out *bytes.Buffer, framing string) {
	framing = protocol.FramingContentLength
	if newline {
		framing = protocol.FramingNewline
	}
	out = new(bytes.Buffer)
	s = New(bytes.NewReader(in), out, nil, framing, 1<<10)
	s.AnswerBad = true
	return s, out, framing
}

// readToEnd reads messages until the input's end, giving each to check;
// any other error, or more messages than n input bytes allow, fails.
func readToEnd(t *testing.T, s *Stream, n int, check func(m msg)) {
	t.Helper()
	for i := 0; ; i++ {
		if i > n+1 {
			t.Fatalf("more messages (%d) than input bytes", i)
		}
		var m msg
		err := s.ReadObject(&m)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			var ce *CutError
			if cutShort := err == io.ErrUnexpectedEOF; cutShort != errors.As(s.Err(), &ce) || !cutShort && s.Err() != nil {
				t.Fatalf("ReadObject ended with %v but Err() is %v", err, s.Err())
			}
			return
		}
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
		check(m)
	}
}

// checkAnswers: every frame a stream wrote in answer to bad input is a
// well-formed JSON-RPC error in valid UTF-8.
func checkAnswers(t *testing.T, out io.Reader, framing string) {
	t.Helper()
	r := New(out, io.Discard, nil, framing, 0)
	for {
		frame, err := r.readFrame()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("answer stream unreadable: %v", err)
		}
		var resp struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *protocol.Error `json:"error"`
		}
		if err := json.Unmarshal(frame, &resp); err != nil || resp.Error == nil || resp.JSONRPC != "2.0" || !utf8.Valid(frame) {
			t.Fatalf("bad answer %q (%v)", frame, err)
		}
	}
}

// FuzzStreamServe is FuzzStreamRead for the server's reading (OnRequest
// set): readers hand each request over and a new one reads on, to the
// input's end; every request is admitted once, only responses reach
// ReadObject, and the answers to bad frames are well-formed.
func FuzzStreamServe(f *testing.F) {
	req := `{"jsonrpc":"2.0","id":1,"method":"stats"}`
	resp := `{"jsonrpc":"2.0","id":4,"result":{}}`
	addStreamSeeds(f, cl(req)+cl(resp)+cl(req), cl("{")+cl(req), "Content-Length: 5\r\n\r\n[1,2]", req+"\n"+resp+"\n{\n", "Content-Length: 99999999999999999999\r\n\r\n")
	f.Fuzz(func(t *testing.T, in []byte, newline bool) {
		s, out, framing := fuzzStream(in, newline)
		// Readers call OnRequest one after another (each starts the next),
		// and the input's end is reported after the last: no lock needed.
		var reqs, resps int
		var ran sync.WaitGroup
		s.OnRequest = func(r *jsonrpc2.Request) func() {
			reqs++
			if r.Notif {
				return nil
			}
			ran.Add(1)
			return func() { ran.Done() }
		}
		readToEnd(t, s, len(in), func(m msg) {
			if _, isReq := m["method"]; isReq {
				t.Fatalf("a request reached ReadObject: %v", m)
			}
			resps++
		})
		ran.Wait() // every request handed over was run
		if reqs+resps > len(in) {
			t.Fatalf("%d requests and %d responses from %d bytes", reqs, resps, len(in))
		}
		checkAnswers(t, out, framing)
	})
}

// TestOnRequestAsJsonrpc2: a request taken from the frame's one decode
// (OnRequest) is the request jsonrpc2 itself makes of the same bytes:
// method, params as sent (absent: nil), id (number, string, escaped
// string) or a notification (no id, null id); responses still reach
// ReadObject.
func TestOnRequestAsJsonrpc2(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"sync","params":{"agent":"main","turn":3}}`,
		`{"jsonrpc":"2.0","id":"a\u0062","method":"obs\u0065rve","params":{"agent":"m","sources":[{"uri":"file:///x","text":"<&>"}]}}`,
		`{"jsonrpc":"2.0","id":9223372036854775807,"method":"stats"}`,
		`{"jsonrpc":"2.0","method":"exit"}`,
		`{"jsonrpc":"2.0","id":null,"method":"x","params":null}`,
		`{"jsonrpc":"2.0","id":0,"method":"x","params":[1, 2],"meta":{"k":1}}`,
	} {
		var want jsonrpc2.Request
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatalf("%s: jsonrpc2: %v", body, err)
		}
		var got []*jsonrpc2.Request
		s := New(strings.NewReader(cl(body)+cl(`{"jsonrpc":"2.0","id":4,"result":{}}`)), io.Discard, nil, protocol.FramingContentLength, 0)
		s.OnRequest = func(r *jsonrpc2.Request) func() { got = append(got, r); return nil }
		var m msg
		if err := s.ReadObject(&m); err != nil || m["result"] == nil {
			t.Fatalf("%s: the response after it: %v %v", body, m, err)
		}
		if len(got) != 1 {
			t.Fatalf("%s: %d requests", body, len(got))
		}
		r := got[0]
		if r.Method != want.Method || r.ID != want.ID || r.Notif != want.Notif || (r.Params == nil) != (want.Params == nil) {
			t.Errorf("%s: got %+v, jsonrpc2 %+v", body, *r, want)
			continue
		}
		if r.Params != nil {
			var a, b any
			json.Unmarshal(*r.Params, &a)
			json.Unmarshal(*want.Params, &b)
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s: params %s, jsonrpc2 %s", body, *r.Params, *want.Params)
			}
		}
	}
}

// TestWriteResultAsJsonrpc2: WriteResult writes the bytes of jsonrpc2's
// Reply for the same id and result (HTML escaping included), and reuses
// its buffer without mixing results.
func TestWriteResultAsJsonrpc2(t *testing.T) {
	for _, tc := range []struct {
		id  jsonrpc2.ID
		res any
	}{
		{jsonrpc2.ID{Num: 7}, map[string]any{"blocks": []string{"a<b", "c&d"}, "n": 1}},
		{jsonrpc2.ID{Str: "q\"1", IsString: true}, protocol.StatsResult{}},
		{jsonrpc2.ID{Num: 8}, nil},
		{jsonrpc2.ID{Num: 9}, "x"},
	} {
		var out bytes.Buffer
		s := New(strings.NewReader(""), &out, nil, protocol.FramingNewline, 0)
		if _, err := s.WriteResult(tc.id, tc.res); err != nil {
			t.Fatal(err)
		}
		resp := &jsonrpc2.Response{ID: tc.id}
		if err := resp.SetResult(tc.res); err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSuffix(out.String(), "\n"); got != string(want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}

// TestWriteResultConcurrent: results written at once from many handlers
// (one kept buffer between them) come out whole, each with its own id and
// result. Run with -race.
func TestWriteResultConcurrent(t *testing.T) {
	var out bytes.Buffer
	s := New(strings.NewReader(""), &out, nil, protocol.FramingNewline, 0)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				n := g*1000 + i
				if _, err := s.WriteResult(jsonrpc2.ID{Num: uint64(n)}, map[string]int{"n": n, "pad": len(strings.Repeat("x", n%97))}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var r struct {
			ID     uint64         `json:"id"`
			Result map[string]int `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || uint64(r.Result["n"]) != r.ID || seen[r.ID] {
			t.Fatalf("frame %q: %v", line, err)
		}
		seen[r.ID] = true
	}
	if len(seen) != 400 {
		t.Fatalf("%d results, want 400", len(seen))
	}
}

// TestWriteResultStreamed: a result that writes its own JSON (a sync's) is
// written from the buffer when small and streamed when larger than
// inlineResult, and either frame is byte for byte the one jsonrpc2's Reply
// makes, in both framings, of the length it reports; a result that fails
// to encode writes nothing.
func TestWriteResultStreamed(t *testing.T) {
	n := 3
	views := []protocol.BlockView{
		{Block: "b1", Anchor: "c<1>", Agent: "main", Turn: 1, Status: protocol.Patched,
			Sources: []protocol.Source{{URI: "file:///a&b", Range: &protocol.Range{Start: 1, End: 2}, Text: "x\n\"y\"\u2028", TotalLines: &n}}},
		{Block: "b2", Status: protocol.Invalid, Notice: "re-read f"},
	}
	big := protocol.BlockView{Block: "b3", Status: protocol.Valid, // past inlineResult: streamed
		Sources: []protocol.Source{{URI: "file:///big", Text: strings.Repeat("line <&> \u00e9\n", inlineResult/10)}}}
	for _, framing := range []string{protocol.FramingContentLength, protocol.FramingNewline} {
		for _, tc := range []struct {
			id  jsonrpc2.ID
			res protocol.SyncResult
		}{
			{jsonrpc2.ID{Num: 7}, protocol.SyncResult{Generation: 3, Full: true, Blocks: views, Flushed: true}},
			{jsonrpc2.ID{Str: "s\"1", IsString: true}, protocol.SyncResult{Blocks: []protocol.BlockView{}}},
			{jsonrpc2.ID{Num: 8}, protocol.SyncResult{Generation: 4, Blocks: append(slices.Clone(views), big)}},
		} {
			var out bytes.Buffer
			s := New(strings.NewReader(""), &out, nil, framing, 0)
			size, err := s.WriteResult(tc.id, tc.res)
			if err != nil {
				t.Fatal(err)
			}
			resp := &jsonrpc2.Response{ID: tc.id}
			if err := resp.SetResult(tc.res); err != nil {
				t.Fatal(err)
			}
			body, err := json.Marshal(resp)
			if err != nil {
				t.Fatal(err)
			}
			want := string(body) + "\n"
			if framing == protocol.FramingContentLength {
				want = fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
			}
			if out.String() != want {
				t.Errorf("%s: got  %q\nwant %q", framing, out.String(), want)
			}
			if size != len(body) {
				t.Errorf("%s: WriteResult said %d bytes, the message has %d", framing, size, len(body))
			}
		}
	}
	var out bytes.Buffer
	s := New(strings.NewReader(""), &out, nil, protocol.FramingContentLength, 0)
	if _, err := s.WriteResult(jsonrpc2.ID{Num: 1}, badJSON{}); err == nil || out.Len() > 0 {
		t.Errorf("a result that fails to encode: err %v, wrote %q", err, out.String())
	}
}

// badJSON fails after writing part of itself.
type badJSON struct{}

func (badJSON) WriteJSON(w io.Writer) error {
	if _, err := io.WriteString(w, `{"blocks":[`); err != nil {
		return err
	}
	return errors.New("cannot encode")
}

// TestAwaitedResultKeptForItsCaller: the result of a response whose id is
// awaited reaches jsonrpc2 as a placeholder and its caller whole, byte for
// byte; a response nobody awaits (or awaits no more), and an error, pass
// as they came.
func TestAwaitedResultKeptForItsCaller(t *testing.T) {
	big := `{"blocks":[` + strings.Repeat(`{"text":"line \"x\"\n"},`, 2000) + `{"text":"é"}]}`
	var in strings.Builder
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"result":` + big + `}`,
		`{"jsonrpc":"2.0","id":2,"result":{"small":true}}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad"}}`,
		`{"jsonrpc":"2.0","id":4,"result":[1,2]}`,
		`{"jsonrpc":"2.0","id":"s","result":null}`,
	} {
		fmt.Fprintf(&in, "Content-Length: %d\r\n\r\n%s", len(body), body)
	}
	s := New(strings.NewReader(in.String()), io.Discard, nil, protocol.FramingContentLength, 0)
	a1 := s.Await(jsonrpc2.ID{Num: 1})
	a3 := s.Await(jsonrpc2.ID{Num: 3})
	a4 := s.Await(jsonrpc2.ID{Num: 4})
	a4.Done() // its caller gave up (a cancelled call)
	aS := s.Await(jsonrpc2.ID{Str: "s", IsString: true})

	for _, tc := range []struct {
		id         jsonrpc2.ID
		kept       *Awaited
		wantResult string // what jsonrpc2 decodes
		wantKept   string // what the caller takes; "" when nothing is kept
	}{
		{jsonrpc2.ID{Num: 1}, &a1, "0", big},
		{jsonrpc2.ID{Num: 2}, nil, `{"small":true}`, ""},
		{jsonrpc2.ID{Num: 3}, &a3, "", ""},
		{jsonrpc2.ID{Num: 4}, &a4, "[1,2]", ""},
		{jsonrpc2.ID{Str: "s", IsString: true}, &aS, "0", "null"},
	} {
		var resp jsonrpc2.Response
		if err := s.ReadObject(&resp); err != nil {
			t.Fatalf("%v: %v", tc.id, err)
		}
		if resp.ID != tc.id {
			t.Fatalf("read %v, want %v", resp.ID, tc.id)
		}
		got := ""
		if resp.Result != nil {
			got = string(*resp.Result)
		}
		if got != tc.wantResult {
			t.Errorf("%v: jsonrpc2 decoded result %.40q, want %.40q", tc.id, got, tc.wantResult)
		}
		if tc.kept == nil {
			continue
		}
		kept, ok := tc.kept.Take()
		if ok != (tc.wantKept != "") || string(kept) != tc.wantKept {
			t.Errorf("%v: kept %.40q (%v), want %.40q", tc.id, kept, ok, tc.wantKept)
		}
	}
	if resp := (jsonrpc2.Response{}); s.ReadObject(&resp) != io.EOF {
		t.Error("more than the five responses read")
	}
	a1.Done()
	a3.Done()
	aS.Done()
	if len(s.awaited) != 0 {
		t.Errorf("%d ids still awaited after every caller was done", len(s.awaited))
	}
}
