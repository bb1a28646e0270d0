package rpc_test

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/concord-ctx/concord/rpc"
	"github.com/concord-ctx/concord/rpc/transcript"
	"github.com/concord-ctx/concord/session"
)

var update = flag.Bool("update", false, "rewrite the expected messages of testdata/rpc/*.jsonl")

const testVersion = "v0.0.0-test"

// TestTranscripts runs every transcript of testdata/rpc in-process: Serve
// over pipes with a real session (manager, file and keyed adapters), as
// `concord serve` wires it. cmd/concord runs a few against the binary too.
func TestTranscripts(t *testing.T) {
	for _, file := range transcript.Files(t, "../testdata/rpc") {
		name := strings.TrimSuffix(file[strings.LastIndexByte(file, '/')+1:], ".jsonl")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			transcript.Run(t, file, launchInProcess, testVersion, *update)
		})
	}
}

// launchInProcess runs Serve on pipes. serve's flags that transcripts use
// (--framing, --max-message, --max-source) map to the configuration.
func launchInProcess(t testing.TB, args []string) transcript.Server {
	var opts session.Options
	logs := new(transcript.LockedBuffer)
	cfg := rpc.Config{
		Name:    "concord",
		Version: testVersion,
		Logger:  slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Trace:   true,
	}
	for _, a := range args {
		name, value, _ := strings.Cut(a, "=")
		switch name {
		case "--framing":
			cfg.Framing = value
		case "--max-message":
			cfg.MaxMessage = mustInt(t, a, value)
		case "--max-source":
			opts.MaxSource = mustInt(t, a, value)
		default:
			t.Fatalf("in-process transcripts do not know the flag %q", a)
		}
	}
	cfg.NewSession = sessions(opts)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		code, err := rpc.Serve(ctx, inR, outW, cfg)
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
		// As a process exit would: later writes fail, the reader sees EOF.
		inR.CloseWithError(io.ErrClosedPipe)
		outW.Close()
		done <- code
	}()
	var code int
	ended := false
	wait := func() int {
		if !ended {
			code, ended = <-done, true
		}
		return code
	}
	t.Cleanup(func() {
		cancel()
		inW.Close()
		if ended {
			return
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("Serve did not return within 10s of the end of the test")
		}
	})
	return transcript.Server{In: inW, Out: outR, Wait: wait, Stderr: logs.String}
}

func mustInt(t testing.TB, flag, v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", flag, err)
	}
	return n
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
