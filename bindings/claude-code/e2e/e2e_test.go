// Package e2e drives the real Claude Code (bindings/claude-code's pinned
// version) with the Concord plugin loaded by --plugin-dir, offline, against
// the scripted fake Messages API, and judges every correction the model was
// sent against the files as they were when the request was sent.
//
// It needs `make -C bindings/claude-code deps` (make test runs it first) and
// builds the plugin with `make claude-code-plugin`.
package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/concord-ctx/concord/internal/claudetest"
	"github.com/concord-ctx/concord/internal/fakemodel/anthropic"
)

var (
	claudeBin string // the pinned Claude Code
	pluginDir string // the plugin as make dist lays it out, with a concord built for this test
	marketDir string // the local marketplace make dist lays out
	setupErr  error
)

func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "concord-claude-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	setupErr = setup(tmp)
	code := m.Run()
	// The closing figures (go test -v shows them).
	for _, l := range tally.lines {
		fmt.Fprintln(os.Stderr, l)
	}
	os.RemoveAll(tmp)
	os.Exit(code)
}

func setup(tmp string) error {
	root := claudetest.Root()
	var err error
	if claudeBin, err = claudetest.Bin(root); err != nil {
		return err
	}
	// What make dist ships: the plugin and the local marketplace.
	pluginDir = filepath.Join(tmp, "claude-code")
	marketDir = filepath.Join(tmp, "claude-code-marketplace")
	cmd := exec.Command("make", "-s", "-C", root, "dist-claude-code", "CLAUDE_DIST="+tmp)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("make dist-claude-code: %w", err)
	}
	return nil
}

func needSetup(t *testing.T) {
	t.Helper()
	if setupErr != nil {
		t.Fatalf("the Claude Code end-to-end tests need the pinned Claude Code and the plugin: %v", setupErr)
	}
}

// env is one session's world: its project, a directory outside the
// project, its HOME, its socket directory, the fake model and a proxy in
// front of it that snapshots the files at every request.
type env struct {
	t                  *testing.T
	base, dir, outside string
	home, xdg          string
	fake               *anthropic.Server
	proxy              *http.Server
	url                string
	mu                 sync.Mutex
	snaps              map[[32]byte]files // by request body
	watch              []string           // files snapshotted
	idle               string             // CONCORD_HOOK_IDLE for the hooks
	claudeArgs         []string
	plugin             bool
	cancel             context.CancelFunc // kills claude (a session that ends without SessionEnd)
}

// files is the content of every watched file at one moment (absent: not
// in the map).
type files map[string]string

func newEnv(t *testing.T, plugin bool) *env {
	t.Helper()
	needSetup(t)
	base := t.TempDir()
	e := &env{t: t, base: base, dir: filepath.Join(base, "project"), outside: filepath.Join(base, "outside"),
		home: filepath.Join(base, "home"), xdg: filepath.Join(base, "xdg"), snaps: map[[32]byte]files{}, plugin: plugin}
	for _, d := range []string{e.dir, e.outside, e.home, e.xdg} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	fake, err := anthropic.Start()
	if err != nil {
		t.Fatal(err)
	}
	e.fake = fake
	t.Cleanup(func() { fake.Close() })
	target, _ := url.Parse(fake.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1 // server-sent events as they come
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.url = "http://" + ln.Addr().String()
	e.proxy = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e.snapshot(sha256.Sum256(body))
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = e.proxy.Serve(ln) }()
	t.Cleanup(func() { e.proxy.Close() })
	t.Cleanup(e.killServers)
	return e
}

// p is a project file's path; o a path outside the project.
func (e *env) p(name string) string { return filepath.Join(e.dir, name) }
func (e *env) o(name string) string { return filepath.Join(e.outside, name) }

// write writes a file (creating its directory) and watches it.
func (e *env) write(path, content string) {
	e.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, w := range e.watch {
		if w == path {
			return
		}
	}
	e.watch = append(e.watch, path)
}

// change is a Before that writes a file (or removes it: content nil).
func (e *env) change(path string, content *string) func(*anthropic.Request) error {
	return func(*anthropic.Request) error {
		if content == nil {
			return os.Remove(path)
		}
		return os.WriteFile(path, []byte(*content), 0o644)
	}
}

func (e *env) snapshot(key [32]byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fs := files{}
	for _, p := range e.watch {
		if b, err := os.ReadFile(p); err == nil {
			fs[p] = string(b)
		}
	}
	e.snaps[key] = fs
}

// at is the files as they were when r was sent.
func (e *env) at(r *anthropic.Request) files {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.snaps[sha256.Sum256(r.Body)]
}

// kill ends the running claude -p as a crash would (no SessionEnd).
func (e *env) kill() {
	e.mu.Lock()
	cancel := e.cancel
	e.mu.Unlock()
	cancel()
}

// run runs claude -p through script.
func (e *env) run(script ...anthropic.Step) error {
	e.fake.SetScript(script...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Under mu: the fake model's handler calls it (kill), on its own goroutine.
	e.mu.Lock()
	e.cancel = cancel
	e.mu.Unlock()
	args := append([]string{}, e.claudeArgs...)
	if e.plugin {
		args = append(args, "--plugin-dir", pluginDir)
	}
	env := []string{"XDG_RUNTIME_DIR=" + e.xdg}
	if e.idle != "" {
		env = append(env, "CONCORD_HOOK_IDLE="+e.idle)
	}
	out, err := claudetest.Run{Bin: claudeBin, BaseURL: e.url, Home: e.home, Dir: e.dir, Prompt: "do the scenario",
		Args: args, Env: env}.Start(ctx)
	if err != nil {
		return fmt.Errorf("%w\nstdout: %s", err, out.Stdout)
	}
	if err := e.fake.Err(); err != nil {
		return fmt.Errorf("fake model: %w", err)
	}
	if n := e.fake.Remaining(); n != 0 {
		return fmt.Errorf("%d script steps not taken", n)
	}
	return nil
}

// log is the hooks' and servers' log.
func (e *env) log() string {
	b, _ := os.ReadFile(filepath.Join(e.xdg, "concord", "concord.log"))
	return string(b)
}

// servers are the pids of this session's `concord serve --socket`.
func (e *env) servers() []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	prefix := filepath.Join(e.xdg, "concord") + "/"
	for _, d := range ents {
		var pid int
		if _, err := fmt.Sscan(d.Name(), &pid); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		for i, a := range args {
			if a == "--socket" && i+1 < len(args) && strings.HasPrefix(args[i+1], prefix) {
				pids = append(pids, pid)
			}
		}
	}
	sort.Ints(pids)
	return pids
}

func (e *env) killServers() {
	for _, pid := range e.servers() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// noServerWithin waits until this session has no server left.
func (e *env) noServerWithin(d time.Duration) error {
	deadline := time.Now().Add(d)
	for len(e.servers()) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("concord serve still running %v after the session: %v", d, e.servers())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}
