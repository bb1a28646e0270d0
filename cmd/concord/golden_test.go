package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the expected messages of testdata/rpc/*.jsonl")

// A transcript (testdata/rpc/NAME.jsonl) is one JSON object per line, each
// with one key, run in order against a fresh `concord serve` whose
// workspace root is a new temp dir ($ROOT in any string):
//
//	{"comment": "..."}                 why the case exists
//	{"args": ["--framing=newline"]}    serve flags (first, optional)
//	{"file": {"path": "a.txt", "text": "..."}}  write $ROOT/a.txt (temp file + rename, as editors save)
//	{"bytes": {"path": "b.bin", "base64": "..."}} write raw bytes
//	{"remove": "a.txt"}                delete $ROOT/a.txt
//	{"keyed": {"uri": "res://…", "text": "...", "version": "v2"}}  what the test client answers to readSource
//	{"keyed": {"uri": "res://…", "result": null}}  a readSource result answered as it is (malformed ones)
//	{"send": {...}}                    send a message; a request waits for its answer
//	{"raw": "..."}                     send these bytes as one frame (framing added); one answer expected
//	{"rawbytes": "..."}                send these bytes as they are; one answer expected
//	{"recv": {...}}                    an expected message from the server, in order
//	                                   (the answer to a request and whatever came before it)
//	{"close": true}                    close stdin
//	{"status": 0}                      the expected exit status (after exit or close)
//
// Expected messages are compared after normalising volatile parts: the
// root path becomes $ROOT, sha256 hex digests become sha256:HASH, the
// server version becomes $VERSION, the temp dir holding the root $ROOT/..,
// and a block's "reason" keeps only its category (see shortenReasons). blocksChanged notifications depend on
// timing and are left out (serve_test.go checks them). -update rewrites the
// recv lines from what the server actually said.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("../../testdata/rpc/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts in testdata/rpc (%v)", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".jsonl")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runTranscript(t, file)
		})
	}
}

type step struct {
	raw  json.RawMessage // the line as written
	kind string
	val  json.RawMessage
}

func parseTranscript(t *testing.T, file string) []step {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var steps []step
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil || len(m) != 1 {
			t.Fatalf("%s:%d: want one JSON object with one key (%v)", file, i+1, err)
		}
		for k, v := range m {
			steps = append(steps, step{raw: json.RawMessage(line), kind: k, val: v})
		}
	}
	return steps
}

func runTranscript(t *testing.T, file string) {
	steps := parseTranscript(t, file)
	root := t.TempDir()
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	sub := func(s string) string { return strings.ReplaceAll(s, "$ROOT", root) }
	subJSON := func(v json.RawMessage) []byte {
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			t.Fatalf("bad JSON %s: %v", v, err)
		}
		return mustJSON(t, walkStrings(x, sub))
	}

	var args []string
	for _, s := range steps {
		if s.kind == "args" {
			json.Unmarshal(s.val, &args)
		}
	}
	framing := "content-length"
	for _, a := range args {
		if a == "--framing=newline" {
			framing = "newline"
		}
	}
	cmd := exec.Command(concordBin, append([]string{"serve", "--log-level=debug"}, args...)...)
	stdin, _ := cmd.StdinPipe()
	stdoutPipe, _ := cmd.StdoutPipe()
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	out := bufio.NewReader(stdoutPipe)
	msgs := make(chan json.RawMessage, 100)
	go func() {
		defer close(msgs)
		for {
			frame, err := readTestFrame(out, framing)
			if err != nil {
				return
			}
			msgs <- frame
		}
	}()
	write := func(payload []byte, frame bool) {
		if frame {
			if framing == "newline" {
				payload = append(append([]byte(nil), payload...), '\n')
			} else {
				payload = append([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n", len(payload))), payload...)
			}
		}
		if _, err := stdin.Write(payload); err != nil {
			t.Fatalf("write to server: %v\nstderr:\n%s", err, stderr.String())
		}
	}
	keyed := map[string]any{} // uri -> the result to answer readSource with
	normalize := func(m json.RawMessage) json.RawMessage {
		var x any
		json.Unmarshal(m, &x)
		shortenReasons(x)
		x = walkStrings(x, func(s string) string {
			s = strings.ReplaceAll(s, root, "$ROOT")
			s = strings.ReplaceAll(s, filepath.Dir(root), "$ROOT/..")
			s = hashRE.ReplaceAllString(s, "sha256:HASH")
			return strings.ReplaceAll(s, version, "$VERSION")
		})
		return mustJSON(t, x)
	}
	// next returns the next message that is not a timing-dependent hint,
	// answering readSource requests from the keyed table as they come.
	next := func() json.RawMessage {
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					t.Fatalf("server closed stdout early\nstderr:\n%s", stderr.String())
				}
				var probe struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
					Params struct {
						URI string `json:"uri"`
					} `json:"params"`
				}
				json.Unmarshal(m, &probe)
				switch probe.Method {
				case "blocksChanged":
					continue
				case "readSource":
					ans := map[string]any{"jsonrpc": "2.0", "id": probe.ID}
					if c, ok := keyed[probe.Params.URI]; ok {
						ans["result"] = c
					} else {
						ans["error"] = map[string]any{"code": -32603, "message": "test client: unknown source " + probe.Params.URI}
					}
					write(mustJSON(t, ans), true)
				}
				return normalize(m)
			case <-time.After(20 * time.Second):
				t.Fatalf("no message from the server within 20s\nstderr:\n%s", stderr.String())
			}
		}
	}

	var transcript []json.RawMessage // as observed, for -update
	status := -1
	for i := 0; i < len(steps); {
		s := steps[i]
		j := i + 1
		for j < len(steps) && steps[j].kind == "recv" {
			j++
		}
		wants := steps[i+1 : j]
		var gots []json.RawMessage
		switch s.kind {
		case "comment", "args":
		case "recv":
			t.Fatalf("%s: recv line without a step before it", file)
		case "file":
			var f struct{ Path, Text string }
			json.Unmarshal(s.val, &f)
			atomicWrite(t, filepath.Join(root, f.Path), []byte(f.Text))
		case "bytes":
			var f struct {
				Path   string
				Base64 []byte
			}
			json.Unmarshal(s.val, &f)
			atomicWrite(t, filepath.Join(root, f.Path), f.Base64)
		case "remove":
			var p string
			json.Unmarshal(s.val, &p)
			if err := os.Remove(filepath.Join(root, p)); err != nil {
				t.Fatal(err)
			}
		case "keyed":
			var k struct {
				URI, Text, Version string
				Result             json.RawMessage // answered as it is, when given
			}
			json.Unmarshal(s.val, &k)
			if k.Result != nil {
				keyed[k.URI] = k.Result
			} else {
				keyed[k.URI] = map[string]string{"text": k.Text, "version": k.Version}
			}
		case "send":
			payload := subJSON(s.val)
			write(payload, true)
			var probe struct {
				ID json.RawMessage `json:"id"`
			}
			json.Unmarshal(payload, &probe)
			if len(probe.ID) == 0 {
				break // a notification: no answer
			}
			for {
				m := next()
				gots = append(gots, m)
				var r struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				json.Unmarshal(m, &r)
				if r.Method == "" && string(r.ID) == string(probe.ID) {
					break
				}
			}
		case "raw", "rawbytes":
			var p string
			json.Unmarshal(s.val, &p)
			write([]byte(sub(p)), s.kind == "raw")
			gots = append(gots, next())
		case "close":
			stdin.Close()
		case "status":
			json.Unmarshal(s.val, &status)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("server did not exit within 10s\nstderr:\n%s", stderr.String())
			}
			if c := cmd.ProcessState.ExitCode(); c != status {
				t.Errorf("exit status %d, want %d\nstderr:\n%s", c, status, stderr.String())
			}
		default:
			t.Fatalf("%s: unknown step %q", file, s.kind)
		}
		transcript = append(transcript, s.raw)
		for _, m := range gots {
			transcript = append(transcript, mustJSON(t, map[string]json.RawMessage{"recv": m}))
		}
		if !*update {
			for k := 0; k < max(len(gots), len(wants)); k++ {
				switch {
				case k >= len(wants):
					t.Errorf("%s: after %s\nunexpected message %s", filepath.Base(file), s.raw, gots[k])
				case k >= len(gots):
					t.Errorf("%s: after %s\nmissing message %s", filepath.Base(file), s.raw, wants[k].val)
				case canonical(t, wants[k].val) != string(gots[k]):
					t.Errorf("%s: after %s\n got: %s\nwant: %s", filepath.Base(file), s.raw, gots[k], canonical(t, wants[k].val))
				}
			}
		}
		i = j
	}
	if *update {
		var buf bytes.Buffer
		for _, l := range transcript {
			buf.Write(l)
			buf.WriteByte('\n')
		}
		if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if t.Failed() {
		t.Logf("server stderr:\n%s", stderr.String())
	}
}

var hashRE = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// shortenReasons keeps only the category of every "reason" ("local edit",
// "drift", "deleted", …): the evidence after the colon is the locator's
// wording, pinned by the locator's own golden files, not by the protocol.
func shortenReasons(x any) {
	switch v := x.(type) {
	case []any:
		for _, e := range v {
			shortenReasons(e)
		}
	case map[string]any:
		for k, e := range v {
			if r, ok := e.(string); ok && k == "reason" {
				cat, _, _ := strings.Cut(r, ":")
				v[k] = cat
				continue
			}
			shortenReasons(e)
		}
	}
}

func walkStrings(x any, f func(string) string) any {
	switch v := x.(type) {
	case string:
		return f(v)
	case []any:
		for i := range v {
			v[i] = walkStrings(v[i], f)
		}
	case map[string]any:
		for k := range v {
			v[k] = walkStrings(v[k], f)
		}
	}
	return x
}

// mustJSON marshals compactly with sorted keys and no HTML escaping, the
// canonical form expected messages are compared in.
func mustJSON(t *testing.T, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if raw, ok := v.(json.RawMessage); ok {
		var x any
		if err := json.Unmarshal(raw, &x); err != nil {
			t.Fatalf("bad JSON %s: %v", raw, err)
		}
		v = x
	}
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

func canonical(t *testing.T, m json.RawMessage) string { return string(mustJSON(t, m)) }

// readTestFrame is the test's own reader of the server's output, written
// from docs/protocol.md rather than shared with the server.
func readTestFrame(r *bufio.Reader, framing string) (json.RawMessage, error) {
	if framing == "newline" {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		if !json.Valid(line) {
			return nil, fmt.Errorf("server wrote a line that is not JSON: %q", line)
		}
		return bytes.TrimSpace(line), nil
	}
	header, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(header, "Content-Length:")))
	if err != nil || !strings.HasPrefix(header, "Content-Length: ") || !strings.HasSuffix(header, "\r\n") {
		return nil, fmt.Errorf("server wrote a bad header %q", header)
	}
	if blank, err := r.ReadString('\n'); err != nil || blank != "\r\n" {
		return nil, fmt.Errorf("server header not followed by CRLF: %q", blank)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	if !json.Valid(body) {
		return nil, fmt.Errorf("server wrote a body that is not JSON: %q", body)
	}
	return body, nil
}

// atomicWrite saves like an editor: write a temp file, rename it over.
func atomicWrite(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp~"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
