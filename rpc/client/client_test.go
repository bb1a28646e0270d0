package client_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/rpc"
	"github.com/concord-ctx/concord/rpc/client"
	"github.com/concord-ctx/concord/session"
)

// The test binary doubles as `concord serve` (a TestMain switch), so the
// client drives a real subprocess over real pipes without a build step.
const serveEnv = "CONCORD_CLIENT_TEST_SERVE"

func TestMain(m *testing.M) {
	if framing, ok := os.LookupEnv(serveEnv); ok {
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		code, err := rpc.Serve(context.Background(), os.Stdin, os.Stdout, rpc.Config{
			NewSession: sessions(session.Options{}), Framing: framing, Logger: log, Version: "test",
		})
		if err != nil {
			log.Error("serve", "error", err)
			os.Exit(1)
		}
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func start(t *testing.T, framing string, opts client.Options) *client.Client {
	t.Helper()
	opts.Env = append(os.Environ(), serveEnv+"="+framing)
	opts.Framing = ""
	c, err := opts.Start(context.Background(), os.Args[0], "--framing="+framing)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func initialize(t *testing.T, c *client.Client, roots []string) {
	t.Helper()
	var res protocol.InitializeResult
	err := c.Call(context.Background(), protocol.MethodInitialize, protocol.InitializeParams{
		ProtocolVersion: protocol.Version, Roots: roots, Watch: protocol.WatchHooks,
	}, &res)
	if err != nil || res.ProtocolVersion != protocol.Version {
		t.Fatalf("initialize: %+v %v", res, err)
	}
}

// TestSession: a whole session through the client, in both framings: a
// file read, an edit reported with sourceChanged, the repair in sync, and a
// clean exit status from Close.
func TestSession(t *testing.T) {
	for _, framing := range []string{protocol.FramingContentLength, protocol.FramingNewline} {
		t.Run(framing, func(t *testing.T) {
			root := t.TempDir()
			path := filepath.Join(root, "a.txt")
			if err := os.WriteFile(path, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			hints := make(chan protocol.BlocksChangedParams, 8)
			c := start(t, framing, client.Options{})
			c.HandleBlocksChanged(func(p protocol.BlocksChangedParams) { hints <- p })
			initialize(t, c, []string{root})
			ctx := context.Background()
			uri := "file://" + path
			var o protocol.ObserveResult
			err := c.Call(ctx, protocol.MethodObserve, protocol.ObserveParams{Agent: "main", Anchor: "c1",
				Sources: []protocol.Source{{URI: uri, Range: &protocol.Range{Start: 2, End: 2}, Text: "two"}}}, &o)
			if err != nil || o.Status != protocol.Valid {
				t.Fatalf("observe: %+v %v", o, err)
			}
			if err := os.WriteFile(path, []byte("zero\none\ntwo\nthree\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var ch protocol.SourceChangedResult
			if err := c.Call(ctx, protocol.MethodSourceChanged, protocol.SourceChangedParams{URI: uri}, &ch); err != nil || len(ch.Blocks) != 1 {
				t.Fatalf("sourceChanged: %+v %v", ch, err)
			}
			var s protocol.SyncResult
			if err := c.Call(ctx, protocol.MethodSync, protocol.SyncParams{Agent: "main", Turn: 2}, &s); err != nil {
				t.Fatal(err)
			}
			if len(s.Blocks) != 1 || s.Blocks[0].Status != protocol.Patched || *s.Blocks[0].Sources[0].Range != (protocol.Range{Start: 3, End: 3}) {
				t.Fatalf("sync: %+v", s)
			}
			if c.Pid() <= 0 || c.ExitCode() != -1 {
				t.Errorf("running child: pid %d, exit code %d", c.Pid(), c.ExitCode())
			}
			if err := c.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if c.ExitCode() != 0 {
				t.Errorf("exit code %d after Close, want 0", c.ExitCode())
			}
			if err := c.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if err := c.Call(ctx, protocol.MethodStats, nil, nil); err == nil {
				t.Error("a call after Close succeeded")
			}
		})
	}
}

// TestServerErrorsAreProtocolErrors: a refused request comes back as a
// *protocol.Error carrying the wire code and data.
func TestServerErrorsAreProtocolErrors(t *testing.T) {
	c := start(t, protocol.FramingContentLength, client.Options{})
	initialize(t, c, []string{t.TempDir()})
	err := c.Call(context.Background(), protocol.MethodObserve, protocol.ObserveParams{Agent: "a", Sources: []protocol.Source{{URI: "a.txt"}}}, nil)
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidParams || !strings.Contains(string(pe.Data), "sources[0]") {
		t.Fatalf("err = %v, want invalid params naming sources[0]", err)
	}
	if err := c.Notify(context.Background(), "no/such/notification", nil); err != nil {
		t.Errorf("Notify: %v", err)
	}
}

// TestReadSource: the server's readSource requests reach the handler; a
// client without one answers with an error and the block turns invalid.
func TestReadSource(t *testing.T) {
	c := start(t, protocol.FramingNewline, client.Options{})
	version := "v1"
	c.HandleReadSource(func(ctx context.Context, p protocol.ReadSourceParams) (protocol.ReadSourceResult, error) {
		return protocol.ReadSourceResult{Text: "row 42 v2", Version: "v2"}, nil
	})
	initialize(t, c, []string{})
	ctx := context.Background()
	var o protocol.ObserveResult
	if err := c.Call(ctx, protocol.MethodObserve, protocol.ObserveParams{Agent: "a", Anchor: "k",
		Sources: []protocol.Source{{URI: "res://db/42", Text: "row 42", Version: version}}}, &o); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(ctx, protocol.MethodSourceChanged, protocol.SourceChangedParams{URI: "res://db/42", Version: "v2"}, nil); err != nil {
		t.Fatal(err)
	}
	var s protocol.SyncResult
	if err := c.Call(ctx, protocol.MethodSync, protocol.SyncParams{Agent: "a"}, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Blocks) != 1 || s.Blocks[0].Status == protocol.Valid {
		t.Fatalf("sync after the keyed source changed: %+v", s)
	}
	if len(s.Blocks[0].Sources) > 0 && s.Blocks[0].Sources[0].Text != "row 42 v2" {
		t.Errorf("the repair did not come from the readSource handler: %+v", s.Blocks[0])
	}
}

// TestCancel: a call whose context ends returns the context's error (the
// server is told with $/cancelRequest).
func TestCancel(t *testing.T) {
	c := start(t, protocol.FramingContentLength, client.Options{})
	initialize(t, c, []string{t.TempDir()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Call(ctx, protocol.MethodStats, nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if err := c.Call(context.Background(), protocol.MethodStats, nil, nil); err != nil {
		t.Fatalf("the session after a cancelled call: %v", err)
	}
}

// TestChildDies: when the child exits on its own, calls fail with a note
// naming the exit and the child's last stderr lines, and Close reports the
// status.
func TestChildDies(t *testing.T) {
	var logs strings.Builder
	c := start(t, protocol.FramingContentLength, client.Options{Stderr: &logs, Grace: time.Second})
	initialize(t, c, []string{t.TempDir()})
	if err := c.Notify(context.Background(), protocol.MethodExit, nil); err != nil { // exit without shutdown: status 1
		t.Fatal(err)
	}
	select {
	case <-c.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("child did not exit")
	}
	err := c.Call(context.Background(), protocol.MethodStats, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "concord exited") {
		t.Errorf("call after the child exited: %v, want a note that it exited", err)
	}
	if err := c.Close(); err == nil || c.ExitCode() != 1 {
		t.Errorf("Close: %v, exit code %d; want an error and status 1", err, c.ExitCode())
	}
	if !strings.Contains(c.Stderr(), "session started") {
		t.Errorf("Stderr() = %q, want the child's logs", c.Stderr())
	}
}

func TestStartFails(t *testing.T) {
	if _, err := client.Start(context.Background(), filepath.Join(t.TempDir(), "no-such-binary")); err == nil {
		t.Fatal("Start of a missing binary succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := client.Start(ctx, os.Args[0]); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start with a done context: %v", err)
	}
}

// sessions hands rpc.Serve the sessions package session builds (as
// cmd/concord does: the wiring knows no transport).
func sessions(o session.Options) rpc.NewSessionFunc {
	build := session.New(o)
	return func(ctx context.Context, c rpc.SessionConfig) (rpc.Core, string, error) {
		core, watch, err := build(ctx, session.Config(c))
		if err != nil {
			return nil, "", err
		}
		return core, watch, nil
	}
}
