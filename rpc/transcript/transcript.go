// Package transcript runs the protocol transcripts of testdata/rpc against a
// server: in-process over pipes (package rpc's tests, where coverage sees
// the handlers) or the real binary as a subprocess (cmd/concord's tests,
// for stdio and exit codes). It is test support: it reports through
// testing.TB.
//
// A transcript (testdata/rpc/NAME.jsonl) is one JSON object per line, each
// with one key, run in order against a fresh server whose workspace root is
// a new temp dir ($ROOT in any string):
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
// a block's "reason" keeps only its category (see shortenReasons), and
// stats' timings of syncs are left out (dropSyncTimes).
// blocksChanged notifications depend on timing and are left out. With
// update, the recv lines are rewritten from what the server actually said.
package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is one running server under test.
type Server struct {
	In     io.WriteCloser // the server's input; Close ends it
	Out    io.Reader      // the server's output
	Wait   func() int     // waits for the server to end; its exit status
	Stderr func() string  // its logs so far
}

// Launch starts a server with serve's flags (args) for one transcript.
// It registers its own cleanup with t.
type Launch func(t testing.TB, args []string) Server

// Files returns the transcripts in dir (testdata/rpc).
func Files(t testing.TB, dir string) []string {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts in %s (%v)", dir, err)
	}
	return files
}

// Run runs one transcript file against a server from launch. version is
// the server's version string, normalised to $VERSION.
func Run(t *testing.T, file string, launch Launch, version string, update bool) {
	r := &runner{t: t, file: file, version: version, keyed: map[string]any{}, status: -1}
	steps := r.parse()
	r.root = t.TempDir()
	if root, err := filepath.EvalSymlinks(r.root); err == nil {
		r.root = root
	}
	var args []string
	for _, s := range steps {
		if s.kind == "args" {
			if err := json.Unmarshal(s.val, &args); err != nil {
				t.Fatalf("%s: args: %v", file, err)
			}
		}
	}
	r.framing = "content-length"
	for _, a := range args {
		if a == "--framing=newline" {
			r.framing = "newline"
		}
	}
	r.srv = launch(t, args)
	r.msgs = make(chan json.RawMessage, 100)
	go func() {
		defer close(r.msgs)
		out := bufio.NewReader(r.srv.Out)
		for {
			frame, err := ReadFrame(out, r.framing)
			if err != nil {
				return
			}
			r.msgs <- frame
		}
	}()

	var transcript []json.RawMessage // as observed, for update
	for i := 0; i < len(steps); {
		s := steps[i]
		j := i + 1
		for j < len(steps) && steps[j].kind == "recv" {
			j++
		}
		run, ok := handlers[s.kind]
		if !ok {
			t.Fatalf("%s: unknown step %q", file, s.kind)
		}
		gots := run(r, s.val)
		transcript = append(transcript, s.raw)
		for _, m := range gots {
			transcript = append(transcript, MustJSON(t, map[string]json.RawMessage{"recv": m}))
		}
		if !update {
			r.compare(s, gots, steps[i+1:j])
		}
		i = j
	}
	if update {
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
		t.Logf("server stderr:\n%s", r.srv.Stderr())
	}
}

type step struct {
	raw  json.RawMessage // the line as written
	kind string
	val  json.RawMessage
}

// runner is the state of one transcript run.
type runner struct {
	t       *testing.T
	file    string
	version string
	root    string
	framing string
	srv     Server
	msgs    chan json.RawMessage
	keyed   map[string]any // uri -> the result to answer readSource with
	status  int
}

// handlers run one step each and return the messages the server sent in
// answer (compared with the recv lines that follow the step).
var handlers = map[string]func(r *runner, val json.RawMessage) []json.RawMessage{
	"comment":  func(*runner, json.RawMessage) []json.RawMessage { return nil },
	"args":     func(*runner, json.RawMessage) []json.RawMessage { return nil },
	"recv":     (*runner).strayRecv,
	"file":     (*runner).writeFile,
	"bytes":    (*runner).writeBytes,
	"remove":   (*runner).remove,
	"keyed":    (*runner).setKeyed,
	"send":     (*runner).send,
	"raw":      func(r *runner, v json.RawMessage) []json.RawMessage { return r.sendRaw(v, true) },
	"rawbytes": func(r *runner, v json.RawMessage) []json.RawMessage { return r.sendRaw(v, false) },
	"close":    (*runner).closeInput,
	"status":   (*runner).wantStatus,
}

func (r *runner) parse() []step {
	data, err := os.ReadFile(r.file)
	if err != nil {
		r.t.Fatal(err)
	}
	var steps []step
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil || len(m) != 1 {
			r.t.Fatalf("%s:%d: want one JSON object with one key (%v)", r.file, i+1, err)
		}
		for k, v := range m {
			steps = append(steps, step{raw: json.RawMessage(line), kind: k, val: v})
		}
	}
	return steps
}

func (r *runner) strayRecv(json.RawMessage) []json.RawMessage {
	r.t.Fatalf("%s: recv line without a step before it", r.file)
	return nil
}

func (r *runner) writeFile(val json.RawMessage) []json.RawMessage {
	var f struct{ Path, Text string }
	r.decode(val, &f)
	AtomicWrite(r.t, filepath.Join(r.root, f.Path), []byte(f.Text))
	return nil
}

func (r *runner) writeBytes(val json.RawMessage) []json.RawMessage {
	var f struct {
		Path   string
		Base64 []byte
	}
	r.decode(val, &f)
	AtomicWrite(r.t, filepath.Join(r.root, f.Path), f.Base64)
	return nil
}

func (r *runner) remove(val json.RawMessage) []json.RawMessage {
	var p string
	r.decode(val, &p)
	if err := os.Remove(filepath.Join(r.root, p)); err != nil {
		r.t.Fatal(err)
	}
	return nil
}

func (r *runner) setKeyed(val json.RawMessage) []json.RawMessage {
	var k struct {
		URI, Text, Version string
		Result             json.RawMessage // answered as it is, when given
	}
	r.decode(val, &k)
	if k.Result != nil {
		r.keyed[k.URI] = k.Result
	} else {
		r.keyed[k.URI] = map[string]string{"text": k.Text, "version": k.Version}
	}
	return nil
}

// send writes a message; for a request it collects messages up to and
// including the answer with its id.
func (r *runner) send(val json.RawMessage) []json.RawMessage {
	payload := r.subJSON(val)
	r.write(payload, true)
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(payload, &probe)
	if len(probe.ID) == 0 {
		return nil // a notification: no answer
	}
	var gots []json.RawMessage
	for {
		m := r.next()
		gots = append(gots, m)
		var resp struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(m, &resp)
		if resp.Method == "" && string(resp.ID) == string(probe.ID) {
			return gots
		}
	}
}

func (r *runner) sendRaw(val json.RawMessage, frame bool) []json.RawMessage {
	var p string
	r.decode(val, &p)
	r.write([]byte(r.sub(p)), frame)
	return []json.RawMessage{r.next()}
}

func (r *runner) closeInput(json.RawMessage) []json.RawMessage {
	_ = r.srv.In.Close()
	return nil
}

func (r *runner) wantStatus(val json.RawMessage) []json.RawMessage {
	r.decode(val, &r.status)
	done := make(chan int, 1)
	go func() { done <- r.srv.Wait() }()
	select {
	case code := <-done:
		if code != r.status {
			r.t.Errorf("exit status %d, want %d\nstderr:\n%s", code, r.status, r.srv.Stderr())
		}
	case <-time.After(10 * time.Second):
		r.t.Fatalf("server did not exit within 10s\nstderr:\n%s", r.srv.Stderr())
	}
	return nil
}

func (r *runner) compare(s step, gots []json.RawMessage, wants []step) {
	name := filepath.Base(r.file)
	for k := 0; k < max(len(gots), len(wants)); k++ {
		switch {
		case k >= len(wants):
			r.t.Errorf("%s: after %s\nunexpected message %s", name, s.raw, gots[k])
		case k >= len(gots):
			r.t.Errorf("%s: after %s\nmissing message %s", name, s.raw, wants[k].val)
		case canonical(r.t, wants[k].val) != string(gots[k]):
			r.t.Errorf("%s: after %s\n got: %s\nwant: %s", name, s.raw, gots[k], canonical(r.t, wants[k].val))
		}
	}
}

func (r *runner) decode(val json.RawMessage, v any) {
	if err := json.Unmarshal(val, v); err != nil {
		r.t.Fatalf("%s: bad step %s: %v", r.file, val, err)
	}
}

func (r *runner) sub(s string) string { return strings.ReplaceAll(s, "$ROOT", r.root) }

func (r *runner) subJSON(v json.RawMessage) []byte {
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		r.t.Fatalf("bad JSON %s: %v", v, err)
	}
	return MustJSON(r.t, walkStrings(x, r.sub))
}

func (r *runner) write(payload []byte, frame bool) {
	if frame {
		if r.framing == "newline" {
			payload = append(append([]byte(nil), payload...), '\n')
		} else {
			payload = append([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n", len(payload))), payload...)
		}
	}
	if _, err := r.srv.In.Write(payload); err != nil {
		r.t.Fatalf("write to server: %v\nstderr:\n%s", err, r.srv.Stderr())
	}
}

// next returns the next message that is not a timing-dependent hint,
// answering readSource requests from the keyed table as they come.
func (r *runner) next() json.RawMessage {
	for {
		select {
		case m, ok := <-r.msgs:
			if !ok {
				r.t.Fatalf("server closed its output early\nstderr:\n%s", r.srv.Stderr())
			}
			var probe struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					URI string `json:"uri"`
				} `json:"params"`
			}
			_ = json.Unmarshal(m, &probe)
			switch probe.Method {
			case "blocksChanged":
				continue
			case "readSource":
				r.answerReadSource(probe.ID, probe.Params.URI)
			}
			return r.normalize(m)
		case <-time.After(20 * time.Second):
			r.t.Fatalf("no message from the server within 20s\nstderr:\n%s", r.srv.Stderr())
		}
	}
}

func (r *runner) answerReadSource(id json.RawMessage, uri string) {
	ans := map[string]any{"jsonrpc": "2.0", "id": id}
	if c, ok := r.keyed[uri]; ok {
		ans["result"] = c
	} else {
		ans["error"] = map[string]any{"code": -32603, "message": "test client: unknown source " + uri}
	}
	r.write(MustJSON(r.t, ans), true)
}

var hashRE = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

func (r *runner) normalize(m json.RawMessage) json.RawMessage {
	var x any
	_ = json.Unmarshal(m, &x)
	shortenReasons(x)
	dropSyncTimes(x)
	x = walkStrings(x, func(s string) string {
		s = strings.ReplaceAll(s, r.root, "$ROOT")
		s = strings.ReplaceAll(s, filepath.Dir(r.root), "$ROOT/..")
		s = hashRE.ReplaceAllString(s, "sha256:HASH")
		return strings.ReplaceAll(s, r.version, "$VERSION")
	})
	return MustJSON(r.t, x)
}

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

// dropSyncTimes leaves stats' "syncs" and "heapLiveBytes" out: the
// server's timings of its syncs and its heap differ from run to run, and
// the syncs' bytes count the temp root's path (TestStatsTimeSyncs checks
// them against the replies).
func dropSyncTimes(x any) {
	if res, ok := x.(map[string]any)["result"].(map[string]any); ok {
		delete(res, "syncs")
		delete(res, "heapLiveBytes")
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

// MustJSON marshals compactly with sorted keys and no HTML escaping, the
// canonical form expected messages are compared in.
func MustJSON(t testing.TB, v any) []byte {
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

func canonical(t testing.TB, m json.RawMessage) string { return string(MustJSON(t, m)) }

// ReadFrame is the tests' own reader of the server's output, written from
// docs/protocol.md rather than shared with the server.
func ReadFrame(r *bufio.Reader, framing string) (json.RawMessage, error) {
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

// AtomicWrite saves like an editor: write a temp file, rename it over.
func AtomicWrite(t testing.TB, path string, data []byte) {
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

// LockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
