//go:build feed

package natsfeed_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/concord-ctx/concord/protocol"
)

// TestFeedAuthentication: NATS's own credentials reach the server as given
// (a user and password in the URL, an NKey seed file); a wrong password
// leaves the feed behind without blocking the session; no secret reaches
// the logs.
func TestFeedAuthentication(t *testing.T) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile := filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := server.NewServer(&server.Options{ServerName: "auth", Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		Users: []*server.User{{Username: "alice", Password: "s3cret-pw"}}, Nkeys: []*server.NkeyUser{{Nkey: pub}}})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	port := s.Addr().(*net.TCPAddr).Port

	tests := []struct {
		name  string
		url   string
		extra []string
		live  bool
	}{
		{"user and password", "nats://alice:s3cret-pw@127.0.0.1:%d", nil, true},
		{"nkey seed file", "nats://127.0.0.1:%d", []string{"--feed-nkey", seedFile}, true},
		{"wrong password", "nats://alice:wrong-s3cret-pw@127.0.0.1:%d", nil, false},
		{"no credentials", "nats://127.0.0.1:%d", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := startInstance(t, nil, fmt.Sprintf(tt.url, port), "host-"+strings.ReplaceAll(tt.name, " ", "-"),
				append(tt.extra, "--feed-replicas", "1")...)
			if tt.live {
				in.waitLive()
			} else {
				waitFor(t, 10*time.Second, "the refusal to be logged", func() bool {
					return strings.Contains(strings.ToLower(in.logs.String()), "authorization")
				})
				start := time.Now()
				if st := in.feedState(); st != protocol.FeedBehind {
					t.Errorf("feed state %q with refused credentials, want behind", st)
				}
				if d := time.Since(start); d > time.Second {
					t.Errorf("sync with refused credentials took %v", d)
				}
			}
			logs := in.logs.String()
			for _, secret := range []string{"s3cret-pw", string(seed)} {
				if strings.Contains(logs, secret) {
					t.Errorf("a secret reached the logs:\n%s", logs)
				}
			}
		})
	}
}
