// Package codexrun runs the pinned Codex CLI (bindings/codex) headless
// against a loopback model (internal/fakemodel/responses), with its own
// CODEX_HOME, for the tests that capture Codex's formats and drive it end
// to end.
package codexrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Version is the Codex CLI the tests pin (bindings/codex/package.json).
const Version = "0.169.0"

// Model is a model Codex 0.169.0 knows the metadata of: with it Codex offers
// apply_patch as a freeform tool (an unknown name gets no apply_patch).
const Model = "gpt-5.5"

// ErrNoCodex: the pinned Codex CLI is not installed (make -C bindings/codex deps).
var ErrNoCodex = errors.New("codex CLI not installed: run `make -C bindings/codex deps`")

// Bin is the codex executable: $CONCORD_CODEX, else the pinned one in
// bindings/codex/node_modules.
func Bin() (string, error) {
	if p := os.Getenv("CONCORD_CODEX"); p != "" {
		return p, nil
	}
	_, here, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(here), "..", "..", "bindings", "codex", "node_modules", ".bin", "codex")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w (%s)", ErrNoCodex, p)
	}
	return filepath.Clean(p), nil
}

// Config is a CODEX_HOME's config.toml pointing Codex at baseURL (…/v1) with
// the Responses API wire, plus extra TOML (hooks).
func Config(baseURL, extra string) string {
	return fmt.Sprintf(`model = %q
model_provider = "fake"

[model_providers.fake]
name = "fake"
base_url = %q
wire_api = "responses"
env_key = "CONCORD_FAKE_KEY"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 60000

# Offline: no curated plugin sync from GitHub at startup.
[features]
plugins = false
`, Model, baseURL) + extra
}

// Run is one `codex exec`.
type Run struct {
	Bin    string
	Home   string // CODEX_HOME
	Dir    string // the project (codex -C)
	Prompt string
	Args   []string // more flags
	Env    []string // more environment
}

// Exec runs codex exec and returns its stdout and stderr.
func (r Run) Exec(ctx context.Context) (stdout, stderr string, err error) {
	args := append([]string{"exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
		"--color", "never", "-C", r.Dir}, r.Args...)
	args = append(args, r.Prompt)
	cmd := exec.CommandContext(ctx, r.Bin, args...)
	cmd.Dir = r.Dir
	cmd.Stdin = nil
	cmd.Env = append(filterEnv(os.Environ()), "CODEX_HOME="+r.Home, "CONCORD_FAKE_KEY=fake",
		"NO_COLOR=1", "RUST_LOG=warn")
	cmd.Env = append(cmd.Env, r.Env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if err != nil {
		err = fmt.Errorf("codex exec: %w\nstderr:\n%s", err, tail(errb.String(), 4000))
	}
	return out.String(), errb.String(), err
}

// filterEnv drops what would send Codex elsewhere (a real key, a proxy).
func filterEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "OPENAI_"), strings.HasPrefix(k, "CODEX_"),
			strings.EqualFold(k, "http_proxy"), strings.EqualFold(k, "https_proxy"), strings.EqualFold(k, "all_proxy"):
			continue
		}
		out = append(out, kv)
	}
	return out
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// HookConfig is config.toml [hooks] tables running command on each event
// (a user's hooks: matcher-less groups of command handlers).
func HookConfig(events []string, command func(event string) string) string {
	var b strings.Builder
	for _, ev := range events {
		fmt.Fprintf(&b, "\n[[hooks.%s]]\n[[hooks.%s.hooks]]\ntype = \"command\"\ncommand = %q\n", ev, ev, command(ev))
	}
	return b.String()
}

// WriteWorkspace writes files under dir.
func WriteWorkspace(dir string, files map[string]string) error {
	for rel, text := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}
