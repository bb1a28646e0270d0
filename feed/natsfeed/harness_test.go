//go:build feed

package natsfeed_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/concord-ctx/concord/feed/natsfeed"
	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/rpc/client"
)

// concordBin is the real binary built with -tags feed by TestMain: the
// instances are `concord serve --feed ...` processes, as on three hosts.
var concordBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "concord-feed-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	concordBin = filepath.Join(dir, "concord")
	args := []string{"build", "-tags", "feed", "-o", concordBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "../../cmd/concord")...)
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building concord -tags feed:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=50")
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const feedName = "ws"

// cluster is an embedded 3-node JetStream cluster.
type cluster struct {
	servers []*server.Server
	urls    []string
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startCluster runs n JetStream servers routed to each other. They do not
// advertise each other to clients, so a client reaches only the servers it
// was given (the disconnection test cuts one instance off through a proxy).
func startCluster(tb testing.TB, n int) *cluster {
	tb.Helper()
	ports := make([]int, n)
	for i := range ports {
		ports[i] = freePort(tb)
	}
	var routes []*url.URL
	for _, p := range ports {
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	c := &cluster{}
	for i := 0; i < n; i++ {
		opts := &server.Options{
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: tb.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "concord-test", Host: "127.0.0.1", Port: ports[i], NoAdvertise: true},
			Routes:  routes,
		}
		s, err := server.NewServer(opts)
		if err != nil {
			tb.Fatal(err)
		}
		go s.Start()
		c.servers = append(c.servers, s)
	}
	for _, s := range c.servers {
		if !s.ReadyForConnections(20 * time.Second) {
			tb.Fatal("nats server not ready")
		}
		c.urls = append(c.urls, s.ClientURL())
	}
	tb.Cleanup(func() {
		for _, s := range c.servers {
			s.Shutdown()
			s.WaitForShutdown()
		}
	})
	// JetStream is usable once the cluster elected a meta leader.
	nc, js := c.connect(tb)
	defer nc.Close()
	waitFor(tb, 30*time.Second, "the JetStream cluster to elect a leader", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := js.AccountInfo(ctx)
		return err == nil
	})
	return c
}

// streamLeader is the server that leads the feed's stream.
func (c *cluster) streamLeader(tb testing.TB) *server.Server {
	tb.Helper()
	nc, js := c.connect(tb)
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, natsfeed.Stream(feedName))
	if err != nil {
		tb.Fatal(err)
	}
	info := st.CachedInfo()
	if info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		tb.Fatalf("stream cluster %+v, want a leader and 2 replicas", info.Cluster)
	}
	for _, s := range c.servers {
		if s.Name() == info.Cluster.Leader {
			return s
		}
	}
	tb.Fatalf("no server named %q", info.Cluster.Leader)
	return nil
}

func (c *cluster) url() string { return strings.Join(c.urls, ",") }

func (c *cluster) connect(tb testing.TB) (*nats.Conn, jetstream.JetStream) {
	tb.Helper()
	nc, err := nats.Connect(c.url(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		tb.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	return nc, js
}

// waitFor polls cond until it holds; tests wait on conditions, not sleeps.
func waitFor(tb testing.TB, limit time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// workspace is one shared directory and a root per host standing for that
// host's mount of it (a symlink here, NFS in production).
type workspace struct {
	shared string
}

func newWorkspace(tb testing.TB) *workspace {
	shared, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return &workspace{shared: shared}
}

func (w *workspace) root(tb testing.TB, host string) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), host)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	root := filepath.Join(dir, "ws")
	if err := os.Symlink(w.shared, root); err != nil {
		tb.Fatal(err)
	}
	return root
}

func (w *workspace) write(tb testing.TB, rel, text string) {
	tb.Helper()
	if err := os.WriteFile(filepath.Join(w.shared, rel), []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// syncBuffer collects an instance's stderr (its logs).
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// instance is one `concord serve --feed` process: one host's Concord.
type instance struct {
	tb    testing.TB
	host  string
	root  string
	c     *client.Client
	logs  *syncBuffer
	mu    sync.Mutex
	notes int           // blocksChanged notifications received
	kick  chan struct{} // a blocksChanged arrived (at most one pending)
}

// startInstance launches concord serve for host with its own root (watch
// hooks: no fsnotify, no polling; only the feed, sourceChanged and the
// verify pass see changes; with --poll-interval in extra, watch poll).
func startInstance(tb testing.TB, w *workspace, natsURL, host string, extra ...string) *instance {
	tb.Helper()
	in := &instance{tb: tb, host: host, logs: &syncBuffer{}, kick: make(chan struct{}, 1)}
	if w != nil {
		in.root = w.root(tb, host)
	}
	ctx := context.Background()
	args := append([]string{"serve", "--log-level", "debug", "--feed", natsURL, "--feed-name", feedName,
		"--feed-host", host, "--feed-replicas", "3"}, extra...)
	c, err := client.Options{Stderr: in.logs}.Start(ctx, concordBin, args...)
	if err != nil {
		tb.Fatal(err)
	}
	in.c = c
	tb.Cleanup(func() {
		c.Close()
		if tb.Failed() {
			tb.Logf("%s logs:\n%s", host, lastLines(in.logs.String(), 40))
		}
	})
	c.HandleBlocksChanged(func(protocol.BlocksChangedParams) {
		in.mu.Lock()
		in.notes++
		in.mu.Unlock()
		select {
		case in.kick <- struct{}{}:
		default:
		}
	})
	c.HandleReadSource(func(context.Context, protocol.ReadSourceParams) (protocol.ReadSourceResult, error) {
		return protocol.ReadSourceResult{}, errors.New("this host's client cannot read it")
	})
	roots := []string{}
	if in.root != "" {
		roots = []string{in.root}
	}
	watch := protocol.WatchHooks
	for _, a := range extra {
		if strings.HasPrefix(a, "--poll-interval") {
			watch = protocol.WatchPoll // a host whose own watcher reports changes
		}
	}
	var res protocol.InitializeResult
	if err := c.Call(ctx, protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersion: protocol.Version,
		Roots: roots, Watch: watch, Placement: protocol.PlacementInplace}, &res); err != nil {
		tb.Fatalf("%s initialize: %v", host, err)
	}
	return in
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (in *instance) notifications() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.notes
}

func (in *instance) fileURI(rel string) string {
	return (&url.URL{Scheme: "file", Path: filepath.Join(in.root, rel)}).String()
}

func (in *instance) observe(agent, anchor, uri, text, version string) string {
	in.tb.Helper()
	var res protocol.ObserveResult
	if err := in.c.Call(context.Background(), protocol.MethodObserve, protocol.ObserveParams{Agent: agent, Anchor: anchor,
		Sources: []protocol.Source{{URI: uri, Text: text, Version: version}}}, &res); err != nil {
		in.tb.Fatalf("%s observe %s: %v", in.host, uri, err)
	}
	if res.Status != protocol.Valid {
		in.tb.Fatalf("%s observe %s: status %s", in.host, uri, res.Status)
	}
	return res.Block
}

func (in *instance) sourceChanged(agent, uri, version string, text *string) {
	in.tb.Helper()
	var res protocol.SourceChangedResult
	if err := in.c.Call(context.Background(), protocol.MethodSourceChanged, protocol.SourceChangedParams{URI: uri, Agent: agent,
		Version: version, Text: text}, &res); err != nil {
		in.tb.Fatalf("%s sourceChanged %s: %v", in.host, uri, err)
	}
}

func (in *instance) sync(agent string) protocol.SyncResult {
	in.tb.Helper()
	var res protocol.SyncResult
	if err := in.c.Call(context.Background(), protocol.MethodSync, protocol.SyncParams{Agent: agent}, &res); err != nil {
		in.tb.Fatalf("%s sync: %v", in.host, err)
	}
	return res
}

// feedState is the feed's state as a sync of an agent that has observed
// nothing reports it.
func (in *instance) feedState() string {
	res := in.sync("probe")
	if res.Feed == nil {
		in.tb.Fatalf("%s: sync without a feed status", in.host)
	}
	return res.Feed.State
}

func (in *instance) waitLive() {
	in.tb.Helper()
	waitFor(in.tb, 30*time.Second, in.host+"'s feed to be live", func() bool { return in.feedState() == protocol.FeedLive })
}

// collect syncs agent until want holds for the views gathered so far (by
// block id, the latest view wins).
func (in *instance) collect(agent string, limit time.Duration, what string, want func(map[string]protocol.BlockView) bool) map[string]protocol.BlockView {
	in.tb.Helper()
	seen := map[string]protocol.BlockView{}
	waitFor(in.tb, limit, in.host+": "+what, func() bool {
		for _, v := range in.sync(agent).Blocks {
			seen[v.Block] = v
		}
		return want(seen)
	})
	return seen
}

// proxy forwards TCP to one NATS server and can cut every connection and
// refuse new ones for a while: a host losing its network.
type proxy struct {
	addr, target string
	mu           sync.Mutex
	l            net.Listener
	conns        []net.Conn
}

func newProxy(tb testing.TB, target string) *proxy {
	p := &proxy{addr: fmt.Sprintf("127.0.0.1:%d", freePort(tb)), target: target}
	p.up(tb)
	tb.Cleanup(p.down)
	return p
}

func (p *proxy) url() string { return "nats://" + p.addr }

func (p *proxy) up(tb testing.TB) {
	l, err := net.Listen("tcp", p.addr)
	if err != nil {
		tb.Fatal(err)
	}
	p.mu.Lock()
	p.l = l
	p.mu.Unlock()
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
}

func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
