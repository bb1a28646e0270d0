//go:build feed

package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/rpc/client"
)

// TestServeFeedSettings: a build with the feed checks initialize's feed
// settings before it connects anywhere, naming the field.
func TestServeFeedSettings(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		feed  *protocol.FeedParams
		field string
	}{
		{"no name", []string{"--feed", "nats://127.0.0.1:1"}, nil, "feed.name"},
		{"bad name from initialize", []string{"--feed", "nats://127.0.0.1:1"}, &protocol.FeedParams{Name: "a.b"}, "feed.name"},
		{"relative root", nil, &protocol.FeedParams{URL: "nats://127.0.0.1:1", Name: "ws", Root: "rel"}, "feed.root"},
		{"control character in host", nil, &protocol.FeedParams{URL: "nats://127.0.0.1:1", Name: "ws", Host: "a\nb"}, "feed.host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := client.Start(ctx, concordBin, append([]string{"serve"}, tt.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			err = c.Call(ctx, protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersion: protocol.Version, Roots: []string{}, Feed: tt.feed}, nil)
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidParams || !strings.Contains(string(pe.Data), `"`+tt.field+`"`) {
				t.Fatalf("initialize: %v, want -32602 naming %s", err, tt.field)
			}
		})
	}
}
