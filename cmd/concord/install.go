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
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
)

// installCommand is `concord install RUNTIME`: the runtime's hooks set up
// the way its users set up hooks.
func installCommand() command {
	return command{
		name:    "install",
		summary: "set up an agent runtime's hooks to run `concord hook` (codex)",
		usage:   "concord install codex [--codex-home DIR] [--uninstall]",
		long: `codex: adds Concord's hooks to $CODEX_HOME/hooks.json (default ~/.codex/hooks.json),
the file Codex reads user hooks from: SessionStart, UserPromptSubmit, PostToolUse,
PreCompact and SessionEnd run 'concord hook codex' with this binary's absolute path.
Other hooks in the file are kept; running it again replaces Concord's own entries;
--uninstall removes them. Codex runs a new or changed hook only once it is trusted:
open codex and trust them in /hooks (or run 'codex exec --dangerously-bypass-hook-trust'
where the hooks are vetted otherwise).`,
		examples: `  concord install codex
  codex            # then /hooks: trust the five Concord hooks`,
		flags: func() *pflag.FlagSet { fs, _ := installFlags(); return fs },
		run:   noStdin(runInstall),
	}
}

type installOptions struct {
	home      *string
	uninstall *bool
}

func installFlags() (*pflag.FlagSet, *installOptions) {
	fs := pflag.NewFlagSet("install", pflag.ContinueOnError)
	return fs, &installOptions{
		home:      fs.String("codex-home", "", "Codex's home directory (default $CODEX_HOME, else ~/.codex)"),
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
	command := shellQuote(exe) + " hook codex"
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
	fmt.Fprintf(stdout, "Concord's hooks are in %s (%s).\nCodex runs them once trusted: open codex and trust them in /hooks.\n", file, command)
	return nil
}

// codexHooks is hooks.json (old, possibly empty) with Concord's entries
// replaced by fresh ones (add) or removed. Concord's entries are the
// handlers whose command ends in " hook codex"; groups left empty are
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
				if c, _ := m["command"].(string); strings.HasSuffix(c, " hook codex") {
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

// shellQuote quotes s for sh when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
