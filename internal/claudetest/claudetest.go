// Package claudetest runs the real Claude Code program (the version pinned
// by bindings/claude-code, installed with `make -C bindings/claude-code
// deps`) headless and offline, against a fake Messages API on 127.0.0.1, in
// a home directory of its own: what the capture of Claude Code's formats and
// the end-to-end tests share.
package claudetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// Version is the Claude Code version bindings/claude-code pins.
const Version = "2.1.328"

// Bin is the installed claude program under the repository root, or an
// error that says how to install it.
func Bin(root string) (string, error) {
	bin := filepath.Join(root, "bindings", "claude-code", "node_modules", ".bin", "claude")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("claude code is not installed (make -C bindings/claude-code deps): %w", err)
	}
	return bin, nil
}

// Root is the repository root: the directory above this package's.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Run is one headless `claude -p` session.
type Run struct {
	Bin     string
	BaseURL string // the fake Messages API
	Home    string // HOME: ~/.claude (settings, transcripts) lives here
	Dir     string // the working directory (the project)
	Prompt  string
	// SessionID fixes the session's id (a UUID); "" lets Claude Code pick.
	SessionID string
	// Settings is the --settings JSON (hooks); nil: none.
	Settings any
	Args     []string // more arguments (--plugin-dir, --resume ...)
	Env      []string // more environment
}

// Output is what a finished run printed.
type Output struct {
	Stdout, Stderr string
}

// Start runs r to its end. The environment is the minimum Claude Code needs
// (PATH, the fake's URL, a key, IS_SANDBOX so a root user may skip
// permissions), so the user's own settings and credentials are never read.
func (r Run) Start(ctx context.Context) (Output, error) {
	args := []string{"-p", r.Prompt, "--dangerously-skip-permissions", "--model", "claude-sonnet-4-5"}
	if r.SessionID != "" {
		args = append(args, "--session-id", r.SessionID)
	}
	if r.Settings != nil {
		b, err := json.Marshal(r.Settings)
		if err != nil {
			return Output{}, fmt.Errorf("claude settings: %w", err)
		}
		f := filepath.Join(r.Home, "concord-test-settings.json")
		if err := os.WriteFile(f, b, 0o600); err != nil {
			return Output{}, fmt.Errorf("claude settings: %w", err)
		}
		args = append(args, "--settings", f)
	}
	args = append(args, r.Args...)
	cmd := exec.CommandContext(ctx, r.Bin, args...)
	cmd.Dir = r.Dir
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + r.Home,
		"ANTHROPIC_BASE_URL=" + r.BaseURL,
		"ANTHROPIC_API_KEY=x",
		"IS_SANDBOX=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}, r.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = nil
	err := cmd.Run()
	out := Output{Stdout: stdout.String(), Stderr: stderr.String()}
	if err != nil {
		return out, fmt.Errorf("claude -p: %w (stderr: %s)", err, strings.TrimSpace(out.Stderr))
	}
	return out, nil
}

// DumpHooks is settings whose hooks, on every event given, write their stdin
// (the hook input JSON) to a new file in dir, named so that a sort by name
// is the order they started in.
func DumpHooks(dir string, events ...string) map[string]any {
	cmd := fmt.Sprintf(`f=%q/$(date +%%s%%N)-$$.json; cat > "$f.tmp" && mv "$f.tmp" "$f"`, dir)
	hooks := map[string]any{}
	for _, ev := range events {
		hooks[ev] = []any{map[string]any{"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": cmd}}}}
	}
	return map[string]any{"hooks": hooks}
}

// Events are the hook events DumpHooks is given by default: every event a
// tool call, a prompt, a subagent or a compaction fires.
var Events = []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
	"PreCompact", "PostCompact", "SubagentStart", "SubagentStop", "Stop", "SessionEnd"}

// Hooks reads the hook inputs DumpHooks wrote to dir, in the order the hooks
// started.
func Hooks(dir string) ([]map[string]any, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("hook inputs: %w", err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var out []map[string]any
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, fmt.Errorf("hook inputs: %w", err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("hook input %s: %w", n, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// Transcripts lists the session transcripts (jsonl) under home's
// ~/.claude/projects, subagents' included, sorted.
func Transcripts(home string) ([]string, error) {
	var out []string
	root := filepath.Join(home, ".claude", "projects")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("transcripts: %w", err)
	}
	sort.Strings(out)
	return out, nil
}
