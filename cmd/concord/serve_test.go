package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concord-ctx/concord/rpc/client"
	"github.com/concord-ctx/concord/rpc/transcript"

	"github.com/concord-ctx/concord/protocol"
)

// startServe launches the real binary through the Go client.
func startServe(t testing.TB, args ...string) *client.Client {
	t.Helper()
	var stderr transcript.LockedBuffer
	c, err := client.Options{Stderr: &stderr}.Start(context.Background(), concordBin, append([]string{"serve"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	})
	return c
}

func initialize(t testing.TB, c *client.Client, root, watch string) protocol.InitializeResult {
	t.Helper()
	var res protocol.InitializeResult
	roots := []string{}
	if root != "" {
		roots = []string{root}
	}
	err := c.Call(context.Background(), protocol.MethodInitialize, protocol.InitializeParams{
		ProtocolVersion: protocol.Version, ClientInfo: &protocol.Info{Name: "serve_test"}, Roots: roots, Watch: watch}, &res)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return res
}

func tempRoot(t testing.TB) string {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func fileURI(path string) string { return "file://" + path }

// TestWatchedEditNotifiesAndPatches drives a session the way a binding
// does: a file is read, an editor saves a one-token change (temp file +
// rename) behind the agent's back, fsnotify makes the server send
// blocksChanged, and the next sync carries the patched block.
func TestWatchedEditNotifiesAndPatches(t *testing.T) {
	for _, watch := range []string{"auto", "poll"} {
		t.Run(watch, func(t *testing.T) {
			t.Parallel()
			args := []string{}
			if watch == "poll" {
				args = append(args, "--poll-interval=100ms")
			}
			c := startServe(t, args...)
			hints := make(chan protocol.BlocksChangedParams, 16)
			c.HandleBlocksChanged(func(p protocol.BlocksChangedParams) {
				select {
				case hints <- p:
				default:
				}
			})
			root := tempRoot(t)
			path := filepath.Join(root, "config.yaml")
			transcript.AtomicWrite(t, path, []byte("name: demo\nport: 8080\ndebug: false\n"))
			res := initialize(t, c, root, watch)
			if watch == "poll" && res.Capabilities.Watch != "poll" {
				t.Errorf("capabilities.watch = %q, want poll", res.Capabilities.Watch)
			}
			ctx := context.Background()
			var obs protocol.ObserveResult
			if err := c.Call(ctx, protocol.MethodObserve, protocol.ObserveParams{Agent: "main", Turn: 1, Anchor: "call_1",
				Sources: []protocol.Source{{URI: fileURI(path), Range: &protocol.Range{Start: 1, End: 3}, Text: "name: demo\nport: 8080\ndebug: false"}}}, &obs); err != nil {
				t.Fatal(err)
			}
			transcript.AtomicWrite(t, path, []byte("name: demo\nport: 9090\ndebug: false\n"))
			select {
			case h := <-hints:
				if len(h.Agents) != 1 || h.Agents[0] != "main" {
					t.Errorf("blocksChanged agents = %v, want [main]", h.Agents)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("no blocksChanged within 20s of the edit")
			}
			var sync protocol.SyncResult
			if err := c.Call(ctx, protocol.MethodSync, protocol.SyncParams{Agent: "main", Turn: 2}, &sync); err != nil {
				t.Fatal(err)
			}
			if len(sync.Blocks) != 1 || sync.Blocks[0].Status != "patched" || sync.Blocks[0].Sources[0].Text != "name: demo\nport: 9090\ndebug: false" {
				t.Fatalf("sync = %+v, want b1 patched to port 9090", sync)
			}
		})
	}
}

// TestReadSourceAnsweredByClient: a keyed source changed without text; the
// server asks the client (readSource) while the sourceChanged request is
// pending, and the answer repairs the block.
func TestReadSourceAnsweredByClient(t *testing.T) {
	c := startServe(t)
	var asked []string
	var mu sync.Mutex
	c.HandleReadSource(func(ctx context.Context, p protocol.ReadSourceParams) (protocol.ReadSourceResult, error) {
		mu.Lock()
		asked = append(asked, p.URI)
		mu.Unlock()
		if p.URI != "res://db/users/42" {
			return protocol.ReadSourceResult{}, errors.New("no such record")
		}
		return protocol.ReadSourceResult{Text: "id: 42\nname: Ada\nrole: owner", Version: "v8"}, nil
	})
	initialize(t, c, "", "")
	ctx := context.Background()
	if err := c.Call(ctx, protocol.MethodObserve, protocol.ObserveParams{Agent: "main", Turn: 1, Anchor: "call_1",
		Sources: []protocol.Source{{URI: "res://db/users/42", Text: "id: 42\nname: Ada\nrole: admin", Version: "v7"}}}, nil); err != nil {
		t.Fatal(err)
	}
	var ch protocol.SourceChangedResult
	if err := c.Call(ctx, protocol.MethodSourceChanged, protocol.SourceChangedParams{URI: "res://db/users/42", Version: "v8"}, &ch); err != nil {
		t.Fatal(err)
	}
	var sync protocol.SyncResult
	if err := c.Call(ctx, protocol.MethodSync, protocol.SyncParams{Agent: "main", Turn: 2}, &sync); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(asked) != "[res://db/users/42]" {
		t.Errorf("readSource asked for %v", asked)
	}
	if len(sync.Blocks) != 1 || len(sync.Blocks[0].Sources) != 1 || sync.Blocks[0].Sources[0].Text != "id: 42\nname: Ada\nrole: owner" || sync.Blocks[0].Sources[0].Version != "v8" {
		t.Fatalf("sync = %+v, want the block at v8", sync)
	}
}

// TestCancelRequest: a request stuck on the client's own readSource answer
// is cancelled by the client ($/cancelRequest, sent by Client.Call when its
// context ends) and the session goes on.
func TestCancelRequest(t *testing.T) {
	c := startServe(t)
	release := make(chan struct{})
	c.HandleReadSource(func(ctx context.Context, p protocol.ReadSourceParams) (protocol.ReadSourceResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return protocol.ReadSourceResult{}, errors.New("gave up")
	})
	defer close(release)
	initialize(t, c, "", "")
	bg := context.Background()
	if err := c.Call(bg, protocol.MethodObserve, protocol.ObserveParams{Agent: "main", Sources: []protocol.Source{{URI: "res://k", Text: "a", Version: "1"}}}, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() {
		done <- c.Call(ctx, protocol.MethodSourceChanged, protocol.SourceChangedParams{URI: "res://k", Version: "2"}, nil)
	}()
	// Cancel once the server is waiting on readSource; observed through a
	// later request that must wait behind the barrier.
	time.AfterFunc(200*time.Millisecond, cancel)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("call = %v, want context.Canceled", err)
	}
	var st protocol.StatsResult
	if err := c.Call(bg, protocol.MethodStats, nil, &st); err != nil {
		t.Fatalf("stats after cancel: %v", err)
	}
}

// TestPipelinedOrder writes requests back to back without waiting: the
// sync must see the sourceChanged sent before it (docs/protocol.md,
// "Ordering"), and responses are matched by id.
func TestPipelinedOrder(t *testing.T) {
	cmd := exec.Command(concordBin, "serve", "--framing=newline")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr transcript.LockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	reqs := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"roots":[]}}`,
		`{"jsonrpc":"2.0","id":2,"method":"observe","params":{"agent":"main","anchor":"c1","sources":[{"uri":"res://k","text":"alpha\nbeta\ngamma\ndelta","version":"1"}]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"observe","params":{"agent":"sub","anchor":"c2","sources":[{"uri":"res://k","text":"alpha\nbeta\ngamma\ndelta","version":"1"}]}}`,
		`{"jsonrpc":"2.0","id":4,"method":"sourceChanged","params":{"uri":"res://k","text":"alpha\nbeta\ngamma\nepsilon","version":"2"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"sync","params":{"agent":"sub","turn":1}}`,
		`{"jsonrpc":"2.0","id":6,"method":"sync","params":{"agent":"main","turn":1}}`,
	}
	if _, err := io.WriteString(stdin, strings.Join(reqs, "\n")+"\n"); err != nil {
		t.Fatal(err)
	}
	stdin.Close() // the answers to what was read must still come
	got := map[int]json.RawMessage{}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct {
			ID     int             `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("bad line %q", sc.Text())
		}
		if r.Method != "" {
			continue // blocksChanged
		}
		if r.Error != nil {
			t.Fatalf("request %d failed: %s\nstderr:\n%s", r.ID, r.Error, stderr.String())
		}
		got[r.ID] = r.Result
	}
	if len(got) != len(reqs) {
		t.Fatalf("got %d answers, want %d\nstderr:\n%s", len(got), len(reqs), stderr.String())
	}
	for _, id := range []int{5, 6} {
		var s protocol.SyncResult
		json.Unmarshal(got[id], &s)
		if len(s.Blocks) != 1 || s.Blocks[0].Status == "valid" {
			t.Errorf("sync %d = %s: the change sent before it was not applied", id, got[id])
		}
	}
}

// TestStdinCloseExitsPromptly: the parent dies (stdin closes) while files
// are watched: the process exits by itself with status 0.
func TestStdinCloseExitsPromptly(t *testing.T) {
	root := tempRoot(t)
	path := filepath.Join(root, "a.txt")
	transcript.AtomicWrite(t, path, []byte("one\ntwo\n"))
	cmd := exec.Command(concordBin, "serve", "--framing=newline")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"roots":[%q],"watch":"fsnotify"}}`+"\n", root)
	fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":2,"method":"observe","params":{"agent":"main","sources":[{"uri":%q,"text":"one\ntwo"}]}}`+"\n", fileURI(path))
	sc := bufio.NewScanner(stdout)
	for i := 0; i < 2; i++ {
		if !sc.Scan() {
			t.Fatal("no answer")
		}
		if strings.Contains(sc.Text(), `"error"`) {
			t.Fatalf("request failed: %s", sc.Text())
		}
	}
	go io.Copy(io.Discard, stdout)
	start := time.Now()
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v, want status 0", err)
		}
		t.Logf("exited %v after stdin closed", time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("still running 10s after stdin closed")
	}
}

// TestServeTerminal: on a terminal, serve explains itself instead of
// waiting for JSON; /dev/null (a character device, not a terminal) is
// served and ends at once.
func TestServeTerminal(t *testing.T) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	var stdout, stderr transcript.LockedBuffer
	if got := run(context.Background(), []string{"serve"}, devnull, &stdout, &stderr); got != 0 {
		t.Errorf("serve < /dev/null: status %d, want 0 (stderr %s)", got, stderr.String())
	}
	tty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal to test with: %v", err)
	}
	defer tty.Close()
	stderr = transcript.LockedBuffer{}
	if got := run(context.Background(), []string{"serve"}, tty, &stdout, &stderr); got != 2 {
		t.Errorf("serve on a terminal: status %d, want 2", got)
	}
	if !strings.Contains(stderr.String(), "agent runtimes launch it") || !strings.Contains(stderr.String(), "--framing=newline") || stdout.String() != "" {
		t.Errorf("serve on a terminal: stderr %q, stdout %q", stderr.String(), stdout.String())
	}
	// With newline framing a person can type messages: it serves (until the
	// context ends here; Ctrl-D in real life) and says so on stderr only.
	stderr = transcript.LockedBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if got := run(ctx, []string{"serve", "--framing=newline"}, tty, &stdout, &stderr); got != 0 {
		t.Errorf("serve --framing=newline on a terminal: status %d, want 0 (stderr %s)", got, stderr.String())
	}
	if !strings.Contains(stderr.String(), "one JSON-RPC message per line") || stdout.String() != "" {
		t.Errorf("serve --framing=newline on a terminal: stderr %q, stdout %q", stderr.String(), stdout.String())
	}
}

// TestObserveErrorNamesTheFailingSource: the error data names the source
// that failed, also when another source's uri is a prefix of it (a.txt and
// a.txt.bin, a.txt and a.txt?x).
func TestObserveErrorNamesTheFailingSource(t *testing.T) {
	root := tempRoot(t)
	good := filepath.Join(root, "a.txt")
	if err := os.WriteFile(good, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file missing or binary is tracked, not refused (issue 10 bug 4): a
	// link out of the roots is the refusal that names one source of many.
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, good+".out"); err != nil {
		t.Fatal(err)
	}
	ok, bin, bad := protocol.Source{URI: fileURI(good), Text: "one"}, protocol.Source{URI: fileURI(good + ".out"), Text: "x"}, protocol.Source{URI: fileURI(good) + "?x", Text: "one"}
	tests := []struct {
		name    string
		sources []protocol.Source
		code    int64
		want    map[string]string
	}{
		{"outside second, prefix first", []protocol.Source{ok, bin}, protocol.CodeOutsideRoots, map[string]string{"uri": bin.URI}},
		{"outside first", []protocol.Source{bin, ok}, protocol.CodeOutsideRoots, map[string]string{"uri": bin.URI}},
		{"invalid uri second", []protocol.Source{ok, bad}, protocol.CodeInvalidParams, map[string]string{"uri": bad.URI, "field": "sources[1].uri"}},
	}
	c := startServe(t)
	initialize(t, c, root, "hooks")
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Call(context.Background(), protocol.MethodObserve, protocol.ObserveParams{Agent: "main", Turn: 1, Anchor: fmt.Sprintf("call_%d", i), Sources: tc.sources}, nil)
			var we *protocol.Error
			if !errors.As(err, &we) || we.Code != tc.code {
				t.Fatalf("err %v, want code %d", err, tc.code)
			}
			var data map[string]string
			if err := json.Unmarshal(we.Data, &data); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(data) != fmt.Sprint(tc.want) {
				t.Fatalf("data %v, want %v", data, tc.want)
			}
		})
	}
}

// TestStatsTimeSyncs: stats counts the syncs the server answered, the exact
// bytes of their replies, and times each from admission to its result and
// to its reply written (never the other way round); before the first sync
// there is nothing to report.
func TestStatsTimeSyncs(t *testing.T) {
	root := tempRoot(t)
	path := filepath.Join(root, "a.txt")
	transcript.AtomicWrite(t, path, []byte("one\ntwo\nthree\n"))
	c := startServe(t)
	initialize(t, c, root, "auto") // id 1
	ctx := context.Background()
	var st protocol.StatsResult
	if err := c.Call(ctx, protocol.MethodStats, nil, &st); err != nil { // id 2
		t.Fatal(err)
	}
	if st.Syncs != nil {
		t.Fatalf("stats before any sync: syncs %+v, want none", st.Syncs)
	}
	o := protocol.ObserveParams{Agent: "main", Turn: 1, Anchor: "call_1",
		Sources: []protocol.Source{{URI: fileURI(path), Range: &protocol.Range{Start: 1, End: 2}, Text: "one\ntwo"}}}
	if err := c.Call(ctx, protocol.MethodObserve, o, nil); err != nil { // id 3
		t.Fatal(err)
	}
	want := 0
	for id := 4; id <= 6; id++ {
		var raw json.RawMessage // the result as the server wrote it
		if err := c.Call(ctx, protocol.MethodSync, protocol.SyncParams{Agent: "main", Turn: id}, &raw); err != nil {
			t.Fatal(err)
		}
		want += len(fmt.Sprintf(`{"id":%d,"result":%s,"jsonrpc":"2.0"}`, id, raw))
	}
	if err := c.Call(ctx, protocol.MethodStats, nil, &st); err != nil {
		t.Fatal(err)
	}
	s := st.Syncs
	if s == nil {
		t.Fatal("stats after three syncs: no syncs")
	}
	if s.Count != 3 || s.Bytes != int64(want) {
		t.Errorf("count %d, bytes %d; want 3 syncs of %d bytes", s.Count, s.Bytes, want)
	}
	if s.HandledP50Ms <= 0 || s.HandledP50Ms > s.HandledP99Ms || s.HandledP99Ms > s.AnsweredP99Ms || s.HandledP50Ms > s.AnsweredP50Ms {
		t.Errorf("times %+v: want 0 < handled <= answered at each percentile", s)
	}
}
