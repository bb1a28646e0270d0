//go:build !feed

package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/rpc/client"

	"github.com/spf13/pflag"
)

// TestServeFeedNotBuilt: a build without -tags feed refuses a feed, from
// the flag or from initialize, and says how to get a build with it.
func TestServeFeedNotBuilt(t *testing.T) {
	var stdout, stderr bytes.Buffer
	got := run(context.Background(), []string{"serve", "--feed", "nats://127.0.0.1:4222", "--feed-name", "ws"}, strings.NewReader(""), &stdout, &stderr)
	if got != 1 || !strings.Contains(stderr.String(), "built without the change feed") || !strings.Contains(stderr.String(), "go build -tags feed ./cmd/concord") {
		t.Fatalf("serve --feed: status %d, stderr %q; want 1 and how to build with the feed", got, stderr.String())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Start(ctx, concordBin, "serve")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Call(ctx, protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersion: protocol.Version, Roots: []string{},
		Feed: &protocol.FeedParams{URL: "nats://127.0.0.1:4222", Name: "ws"}}, nil)
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidParams || !strings.Contains(pe.Message, "-tags feed") || !strings.Contains(string(pe.Data), `"feed"`) {
		t.Fatalf("initialize with a feed: %v, want -32602 naming feed and the build tag", err)
	}
	// Without a feed the same binary serves as always, and sync carries no feed state.
	var res protocol.SyncResult
	if err := c.Call(ctx, protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersion: protocol.Version, Roots: []string{}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(ctx, protocol.MethodSync, protocol.SyncParams{Agent: "main"}, &res); err != nil || res.Feed != nil {
		t.Fatalf("sync without a feed: %+v, %v", res, err)
	}
}

// TestHelpServeWithoutFeed: a build without the feed does not list the seven
// --feed* flags it cannot use (issue 37), says how to get them, and still
// takes --feed to refuse it with that hint (TestServeFeedNotBuilt).
func TestHelpServeWithoutFeed(t *testing.T) {
	var out bytes.Buffer
	if got := run(context.Background(), []string{"help", "serve"}, strings.NewReader(""), &out, &out); got != 0 {
		t.Fatalf("help serve: status %d", got)
	}
	if _, flags, _ := strings.Cut(out.String(), "\nFlags:\n"); strings.Contains(flags, "  --feed") {
		t.Errorf("help serve lists --feed flags in a build without the feed:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "-tags feed (make build-feed)") {
		t.Errorf("help serve does not say how to get the feed:\n%s", out.String())
	}
	hidden := 0
	fs, _ := serveFlags()
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			hidden++
		}
	})
	if hidden != 7 {
		t.Errorf("%d hidden flags, want the 7 --feed* flags", hidden)
	}
}
