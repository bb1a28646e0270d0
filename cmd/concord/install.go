package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// installCommand is `concord install RUNTIME`: the runtime's hooks set up
// the way its users set up hooks.
func installCommand() command {
	return command{
		name:    "install",
		summary: "set up an agent runtime's hooks to run `concord hook` (codex)",
		usage:   "concord install codex [--codex-home DIR] [--codex BIN] [--uninstall]",
		long: `codex: adds Concord's hooks to $CODEX_HOME/hooks.json (default ~/.codex/hooks.json),
the file Codex reads user hooks from: SessionStart, UserPromptSubmit, PostToolUse,
PreCompact and SessionEnd run concord-hook (installed beside this binary; else
'concord hook codex') with its absolute path.
Other hooks in the file are kept; running it again replaces Concord's own entries;
--uninstall removes them. Codex runs a new or changed hook only once it is trusted:
the install trusts Concord's own hooks as Codex's /hooks screen does, through
'codex app-server' (hooks/list, then config/batchWrite of hooks.state into
config.toml); when no codex program is found (PATH, or --codex), trust them in
codex's /hooks.`,
		examples: `  concord install codex
  concord install codex --codex ./node_modules/.bin/codex`,
		flags: func() *pflag.FlagSet { fs, _ := installFlags(); return fs },
		run:   noStdin(runInstall),
	}
}

type installOptions struct {
	home, codex *string
	uninstall   *bool
}

func installFlags() (*pflag.FlagSet, *installOptions) {
	fs := pflag.NewFlagSet("install", pflag.ContinueOnError)
	return fs, &installOptions{
		home:      fs.String("codex-home", "", "Codex's home directory (default $CODEX_HOME, else ~/.codex)"),
		codex:     fs.String("codex", "", "the codex program that trusts the hooks (default: codex on PATH)"),
		uninstall: fs.Bool("uninstall", false, "remove Concord's hooks instead"),
	}
}

// codexHookEvents are the events Concord's Codex hooks run on, with the
// timeout each gets (seconds). Codex caps SessionEnd hooks at 3 s.
var codexHookEvents = []struct {
	name    string
	timeout int
}{{"SessionStart", 10}, {"UserPromptSubmit", 10}, {"PostToolUse", 10}, {"PreCompact", 10}, {"SessionEnd", 3}}

func runInstall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags, o := installFlags()
	if err := parseCommand(flags, "install", args, stderr); err != nil {
		return err
	}
	if flags.NArg() != 1 || flags.Arg(0) != "codex" {
		return usageError{errors.New("want one runtime: codex")}
	}
	home := *o.home
	if home == "" {
		home = os.Getenv("CODEX_HOME")
	}
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return fmt.Errorf("install codex: %w", err)
		}
		home = filepath.Join(h, ".codex")
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("install codex: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return fmt.Errorf("install codex: %w", err)
	}
	file := filepath.Join(home, "hooks.json")
	old, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("install codex: %w", err)
	}
	command := codexHookCommand(exe)
	data, err := codexHooks(old, command, !*o.uninstall)
	if err != nil {
		return fmt.Errorf("install codex: %s: %w", file, err)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("install codex: %w", err)
	}
	// Through a temporary file and a rename: Codex never reads half a file.
	tmp := file + ".concord-tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("install codex: %w", err)
	}
	if err := os.Rename(tmp, file); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("install codex: %w", err)
	}
	if *o.uninstall {
		fmt.Fprintf(stdout, "Removed Concord's hooks from %s.\n", file)
		return nil
	}
	fmt.Fprintf(stdout, "Concord's hooks are in %s (%s).\n", file, command)
	bin := *o.codex
	if bin == "" {
		if bin, err = exec.LookPath("codex"); err != nil {
			fmt.Fprintf(stdout, "No codex program found: open codex and trust Concord's hooks in /hooks.\n")
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	n, err := trustCodexHooks(ctx, bin, home)
	if err != nil {
		fmt.Fprintf(stderr, "concord install codex: trusting the hooks: %v\n", err)
		fmt.Fprintf(stdout, "Open codex and trust Concord's hooks in /hooks.\n")
		return exitStatus(1)
	}
	fmt.Fprintf(stdout, "Trusted in Codex (%s): %d hooks.\n", filepath.Join(home, "config.toml"), n)
	return nil
}

// trustCodexHooks trusts Concord's hooks the way Codex's /hooks screen
// does: `codex app-server` lists the hooks with each one's current hash
// (hooks/list), and config/batchWrite records the hashes of Concord's in
// hooks.state of $CODEX_HOME/config.toml; a second listing checks that
// every one of them is trusted. It returns how many there are.
func trustCodexHooks(ctx context.Context, bin, home string) (int, error) {
	app, err := startAppServer(ctx, bin, home)
	if err != nil {
		return 0, err
	}
	defer app.close()
	if err := app.call("initialize", map[string]any{"clientInfo": map[string]string{"name": "concord", "version": version}}, nil); err != nil {
		return 0, err
	}
	if _, err := app.stdin.Write([]byte(`{"method":"initialized"}` + "\n")); err != nil {
		return 0, err
	}
	hs, err := app.concordHooks(home)
	if err != nil {
		return 0, err
	}
	if len(hs) != len(codexHookEvents) {
		return 0, fmt.Errorf("codex lists %d of Concord's hooks, want %d", len(hs), len(codexHookEvents))
	}
	state := map[string]any{}
	for _, h := range hs {
		if h.TrustStatus != "trusted" {
			state[h.Key] = map[string]string{"trusted_hash": h.CurrentHash}
		}
	}
	if len(state) > 0 {
		edit := map[string]any{"keyPath": "hooks.state", "mergeStrategy": "upsert", "value": state}
		if err := app.call("config/batchWrite", map[string]any{"edits": []any{edit}}, nil); err != nil {
			return 0, err
		}
	}
	if hs, err = app.concordHooks(home); err != nil {
		return 0, err
	}
	for _, h := range hs {
		if h.TrustStatus != "trusted" {
			return 0, fmt.Errorf("hook %s is %s after trusting it", h.Key, h.TrustStatus)
		}
	}
	return len(hs), nil
}

// appServer is a `codex app-server` child spoken to in JSON lines.
type appServer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	dec    *json.Decoder
	stderr bytes.Buffer
	id     int
}

func startAppServer(ctx context.Context, bin, home string) (*appServer, error) {
	a := &appServer{cmd: exec.CommandContext(ctx, bin, "app-server")}
	a.cmd.Env = append(os.Environ(), "CODEX_HOME="+home)
	a.cmd.Dir = home
	var err error
	if a.stdin, err = a.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := a.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	a.cmd.Stderr = &a.stderr
	if err := a.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s app-server: %w", bin, err)
	}
	a.dec = json.NewDecoder(stdout)
	return a, nil
}

func (a *appServer) close() {
	a.stdin.Close()
	_ = a.cmd.Process.Kill()
	_ = a.cmd.Wait()
}

// call sends one request and decodes its answer into result (nil: none),
// passing over the server's notifications and requests.
func (a *appServer) call(method string, params, result any) error {
	a.id++
	msg, err := json.Marshal(map[string]any{"id": a.id, "method": method, "params": params})
	if err != nil {
		return err
	}
	if _, err := a.stdin.Write(append(msg, '\n')); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	for {
		var reply struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := a.dec.Decode(&reply); err != nil {
			return fmt.Errorf("%s: %w (stderr: %s)", method, err, strings.TrimSpace(a.stderr.String()))
		}
		if reply.ID == nil || *reply.ID != a.id || reply.Method != "" {
			continue // a notification, or a request of the server's
		}
		if reply.Error != nil {
			return fmt.Errorf("%s: %s", method, reply.Error.Message)
		}
		if result == nil {
			return nil
		}
		return json.Unmarshal(reply.Result, result)
	}
}

// codexHook is one hook as hooks/list reports it.
type codexHook struct {
	Key         string `json:"key"`
	Command     string `json:"command"`
	CurrentHash string `json:"currentHash"`
	TrustStatus string `json:"trustStatus"`
}

// concordHooks lists Concord's hooks (isConcordHook).
func (a *appServer) concordHooks(home string) ([]codexHook, error) {
	var list struct {
		Data []struct {
			Hooks []codexHook `json:"hooks"`
		} `json:"data"`
	}
	if err := a.call("hooks/list", map[string]any{"cwds": []string{home}}, &list); err != nil {
		return nil, err
	}
	var hs []codexHook
	seen := map[string]bool{}
	for _, d := range list.Data {
		for _, h := range d.Hooks {
			if isConcordHook(h.Command) && !seen[h.Key] {
				seen[h.Key] = true
				hs = append(hs, h)
			}
		}
	}
	return hs, nil
}

// codexHooks is hooks.json (old, possibly empty) with Concord's entries
// replaced by fresh ones (add) or removed. Concord's entries are the
// handlers whose command isConcordHook; groups left empty are
// dropped, everything else is kept as it was.
func codexHooks(old []byte, command string, add bool) ([]byte, error) {
	doc := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(old)) > 0 {
		if err := json.Unmarshal(old, &doc); err != nil {
			return nil, fmt.Errorf("not a hooks file: %w", err)
		}
	}
	events := map[string][]map[string]any{}
	if raw, ok := doc["hooks"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &events); err != nil {
			return nil, fmt.Errorf("hooks: %w", err)
		}
	}
	for name, groups := range events {
		var kept []map[string]any
		for _, g := range groups {
			hs, _ := g["hooks"].([]any)
			var others []any
			for _, h := range hs {
				m, _ := h.(map[string]any)
				if c, _ := m["command"].(string); isConcordHook(c) {
					continue
				}
				others = append(others, h)
			}
			if len(hs) > 0 && len(others) == 0 {
				continue
			}
			if len(hs) > 0 {
				g["hooks"] = others
			}
			kept = append(kept, g)
		}
		if len(kept) == 0 {
			delete(events, name)
		} else {
			events[name] = kept
		}
	}
	if add {
		for _, ev := range codexHookEvents {
			events[ev.name] = append(events[ev.name], map[string]any{"hooks": []any{
				map[string]any{"type": "command", "command": command, "timeout": ev.timeout}}})
		}
	}
	raw, err := json.Marshal(events)
	if err != nil {
		return nil, err
	}
	doc["hooks"] = raw
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// codexHookCommand is the command Codex runs per event: concord-hook
// beside concord when it is there (it starts in half the time, and a hook
// runs on every tool call), else `concord hook codex`.
func codexHookCommand(exe string) string {
	shim := filepath.Join(filepath.Dir(exe), "concord-hook")
	if fi, err := os.Stat(shim); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		return shellQuote(shim) + " codex"
	}
	return shellQuote(exe) + " hook codex"
}

// isConcordHook tells Concord's own hook commands (either form of
// codexHookCommand, of any install) from the user's.
func isConcordHook(command string) bool {
	if strings.HasSuffix(command, " hook codex") {
		return true
	}
	prog, ok := strings.CutSuffix(command, " codex")
	prog = strings.TrimSuffix(prog, "'")
	return ok && (prog == "concord-hook" || strings.HasSuffix(prog, "/concord-hook"))
}

// shellQuote quotes s for sh when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
