package frame

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestIDScanner(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		request  string // requestID, "" for none
		response string // responseID, "" for none
	}{
		{"request, id first", `{"jsonrpc":"2.0","id":7,"method":"observe","params":{"id":1}}`, "7", ""},
		{"request, id last", `{"jsonrpc":"2.0","method":"observe","params":{"id":1,"s":"},\"id\":2"},"id":"x-1"}`, `"x-1"`, ""},
		{"whitespace around", " {\n \"id\" : 12 ,\"method\":\"sync\"}\n", "12", ""},
		{"notification", `{"jsonrpc":"2.0","method":"exit","params":{"id":3}}`, "", ""},
		{"nested id only", `{"jsonrpc":"2.0","method":"m","params":[{"id":3}]}`, "", ""},
		{"response", `{"jsonrpc":"2.0","id":4,"result":{"text":"a","id":9}}`, "", "4"},
		{"error response", `{"jsonrpc":"2.0","error":{"code":1,"message":"m"},"id":5}`, "", "5"},
		{"object id", `{"id":{"n":1},"method":"m"}`, "", ""},
		{"negative id", `{"id":-1,"method":"m"}`, "", ""},
		{"escaped quote in string id", `{"id":"a\"b","method":"m"}`, `"a\"b"`, ""},
		{"batch", `[{"id":1,"method":"m"}]`, "", ""},
		{"not JSON", `id: 1, method: m`, "", ""},
		{"truncated", `{"id":1,"method":"m","params":{"t":"xx`, "1", ""},
		{"escaped key", `{"\u0069d":8,"method":"m"}`, "8", ""},
		{"both method and result", `{"id":1,"method":"m","result":1}`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Fed in one byte per Write: chunk boundaries must not matter.
			var s idScanner
			for i := range len(tt.in) {
				s.Write([]byte{tt.in[i]})
			}
			if got := string(s.requestID()); got != tt.request {
				t.Errorf("requestID = %q, want %q", got, tt.request)
			}
			if got := string(s.responseID()); got != tt.response {
				t.Errorf("responseID = %q, want %q", got, tt.response)
			}
		})
	}
}

// FuzzIDScanner: never panics; on a valid JSON object whose top-level "id"
// is short, it finds exactly that id.
func FuzzIDScanner(f *testing.F) {
	for _, seed := range []string{`{"jsonrpc":"2.0","id":7,"method":"observe"}`, `{"method":"m","params":{"id":"x"},"id":"y"}`, `{"id":"\\\"","result":null}`, `[1]`, `{"a":[{"b":"}"}],"id":3}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var s idScanner
		s.Write(in)
		var top map[string]json.RawMessage
		if json.Unmarshal(in, &top) != nil {
			return
		}
		id, ok := top["id"]
		if !ok || len(id) > maxScannedID/2 || bytes.Count(in, []byte(`"id"`)) > 1 && hasDupKey(in) {
			return
		}
		var want, got bytes.Buffer
		json.Compact(&want, id)
		if err := json.Compact(&got, s.id); err != nil || got.String() != want.String() {
			t.Fatalf("id = %q, want %q (input %q)", s.id, id, in)
		}
	})
}

// hasDupKey reports a top-level key given twice (encoding/json keeps the
// last, the scanner too, but escaped spellings differ: skip those inputs).
func hasDupKey(in []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(in))
	if _, err := dec.Token(); err != nil {
		return true
	}
	seen := map[string]bool{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return true
		}
		ks, _ := k.(string)
		if seen[ks] {
			return true
		}
		seen[ks] = true
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return true
		}
	}
	return false
}

// BenchmarkIDScanner: the cost of reading an oversized message's id while
// skipping it (per byte of message).
func BenchmarkIDScanner(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","method":"observe","params":{"agent":"a","sources":[{"uri":"res://k","text":"` + strings.Repeat(`abc \"quoted\" {x} `, 1<<16) + `"}]},"id":42}`)
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		var s idScanner
		s.Write(msg)
		if string(s.requestID()) != "42" {
			b.Fatal("id not found")
		}
	}
}
