// Package geminicli runs the real Gemini CLI (the pinned @google/gemini-cli in
// bindings/gemini/node_modules) non-interactively and offline, for tests: a temp project (a git
// repo), a HOME of its own whose ~/.gemini/settings.json selects API-key auth and turns off
// usage statistics, telemetry and updates, and GOOGLE_GEMINI_BASE_URL pointing every model call
// at a loopback fake (internal/fakemodel/gemini).
//
// Facts of 0.61.0 this relies on (read from its bundle, checked by running it): with
// GOOGLE_GEMINI_BASE_URL alone the auth type is "gateway", which non-interactive mode refuses
// ("Invalid auth method selected."), so settings select "gemini-api-key" and GEMINI_API_KEY is
// set; the base URL is still taken from the env. A folder must be trusted
// (GEMINI_CLI_TRUST_WORKSPACE=true), write and shell tools are offered only with --yolo, and an
// explicit -m model skips the routing classifier's side calls.
package geminicli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Model is the model id the runs ask for: a 2.5 model needs no thought signatures.
const Model = "gemini-2.5-pro"

// ModuleRoot is the directory of Concord's go.mod, found upward from the working directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("module root: %w", err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/concord-ctx/concord\n")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("module root: no concord go.mod above %s", dir)
		}
	}
}

// Script is the pinned gemini.js, or an error saying how to install it.
func Script() (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bindings", "gemini", "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("gemini cli not installed (make -C bindings/gemini deps): %w", err)
	}
	return p, nil
}

// Version is the installed package's version ("" when absent).
func Version() string {
	root, err := ModuleRoot()
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(root, "bindings", "gemini", "node_modules", "@google", "gemini-cli", "package.json"))
	if err != nil {
		return ""
	}
	var p struct {
		Version string `json:"version"`
	}
	_ = json.Unmarshal(b, &p)
	return p.Version
}

// Workspace is one run's project and HOME.
type Workspace struct {
	Root string // holds proj/ and home/
	Proj string // the project, a git repo; the run's working directory
	Home string // HOME
}

// NewWorkspace makes root/proj (with files, committed) and root/home.
func NewWorkspace(root string, files map[string]string) (*Workspace, error) {
	w := &Workspace{Root: root, Proj: filepath.Join(root, "proj"), Home: filepath.Join(root, "home")}
	for _, d := range []string{w.Proj, w.Home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
	}
	for rel, text := range files {
		if _, err := w.Write(rel, text); err != nil {
			return nil, err
		}
	}
	git := func(args ...string) error {
		cmd := exec.Command("git", append([]string{"-c", "user.email=e2e@example.invalid", "-c", "user.name=e2e"}, args...)...)
		cmd.Dir = w.Proj
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "--allow-empty", "-m", "init"}} {
		if err := git(args...); err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
	}
	return w, nil
}

// Write writes a project file (relative path) and returns its absolute path.
func (w *Workspace) Write(rel, text string) (string, error) {
	p := filepath.Join(w.Proj, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", fmt.Errorf("write %s: %w", rel, err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", rel, err)
	}
	return p, nil
}

// Settings is ~/.gemini/settings.json for an offline run, plus more top-level keys (hooks...).
func Settings(more map[string]any) map[string]any {
	s := map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"privacy":  map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{
			"enabled": false,
		},
		"general": map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
	}
	for k, v := range more {
		s[k] = v
	}
	return s
}

// Run is one `gemini -p` invocation.
type Run struct {
	BaseURL  string         // the fake's URL (GOOGLE_GEMINI_BASE_URL)
	Prompt   string         // -p
	Settings map[string]any // user settings (nil: Settings(nil))
	Args     []string       // more arguments (e.g. --resume)
	Env      []string       // more environment, KEY=VALUE
	Timeout  time.Duration  // default 3 minutes
}

// Result is what the run printed and how it ended.
type Result struct {
	Stdout, Stderr string
	Err            error // from the process (nil: exit 0)
	Elapsed        time.Duration
}

// Run runs gemini in the workspace.
func (w *Workspace) Run(ctx context.Context, r Run) (Result, error) {
	script, err := Script()
	if err != nil {
		return Result{}, err
	}
	settings := r.Settings
	if settings == nil {
		settings = Settings(nil)
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return Result{}, fmt.Errorf("gemini settings: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(w.Home, ".gemini"), 0o755); err != nil {
		return Result{}, fmt.Errorf("gemini settings: %w", err)
	}
	if err := os.WriteFile(filepath.Join(w.Home, ".gemini", "settings.json"), b, 0o644); err != nil {
		return Result{}, fmt.Errorf("gemini settings: %w", err)
	}
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := append([]string{script, "--yolo", "-m", Model}, r.Args...)
	args = append(args, "-p", r.Prompt)
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = w.Proj
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + w.Home,
		"XDG_CONFIG_HOME=" + filepath.Join(w.Home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(w.Home, ".cache"),
		"GEMINI_API_KEY=fake-key",
		"GOOGLE_GEMINI_BASE_URL=" + r.BaseURL,
		"GEMINI_CLI_TRUST_WORKSPACE=true",
		"NO_COLOR=1",
		"TERM=dumb",
		"CI=1",
		// Any npm fetch would go to a closed port instead of the registry.
		"npm_config_registry=http://127.0.0.1:9/",
	}, r.Env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err = cmd.Run()
	res := Result{Stdout: out.String(), Stderr: errb.String(), Err: err, Elapsed: time.Since(start)}
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.Canceled) {
		res.Err = fmt.Errorf("gemini timed out after %s: %w", timeout, ctx.Err())
	}
	_ = os.WriteFile(filepath.Join(w.Root, "gemini.stdout"), out.Bytes(), 0o644)
	_ = os.WriteFile(filepath.Join(w.Root, "gemini.stderr"), errb.Bytes(), 0o644)
	return res, nil
}

// Gemini runs `gemini ARGS...` (not a prompt: a subcommand such as `extensions install`) with
// the workspace's HOME, and returns what it printed.
func (w *Workspace) Gemini(ctx context.Context, args ...string) (string, error) {
	script, err := Script()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
	cmd.Dir = w.Proj
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.Home, "NO_COLOR=1", "TERM=dumb", "CI=1",
		"GEMINI_CLI_TRUST_WORKSPACE=true", "npm_config_registry=http://127.0.0.1:9/"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("gemini %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Chats lists the session files Gemini CLI saved for the project
// (~/.gemini/tmp/<project>/chats/session-*.jsonl), sorted.
func (w *Workspace) Chats() ([]string, error) {
	m, err := filepath.Glob(filepath.Join(w.Home, ".gemini", "tmp", "*", "chats", "session-*.json*"))
	if err != nil {
		return nil, fmt.Errorf("chats: %w", err)
	}
	return m, nil
}
