package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallCodex: `concord install codex` adds its hooks to
// $CODEX_HOME/hooks.json next to the user's own, running the concord-hook
// beside it; a second run replaces them (never twice), as it replaces an
// older install's `concord hook codex`; --uninstall leaves the user's
// alone.
func TestInstallCodex(t *testing.T) {
	home := t.TempDir()
	file := filepath.Join(home, "hooks.json")
	user := `{"description": "mine", "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}],
	  "Stop": [{"hooks": [{"type": "command", "command": "notify.sh", "timeout": 5}]}],
	  "SessionEnd": [{"hooks": [{"type": "command", "command": "/old/bin/concord hook codex", "timeout": 3}]}]}}`
	if err := os.WriteFile(file, []byte(user), 0o600); err != nil {
		t.Fatal(err)
	}
	type doc struct {
		Description string `json:"description"`
		Hooks       map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
				Timeout int    `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	read := func() (doc, int) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var d doc
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%v\n%s", err, data)
		}
		ours := 0
		for _, gs := range d.Hooks {
			for _, g := range gs {
				for _, h := range g.Hooks {
					if isConcordHook(h.Command) {
						if h.Command != concordBin+"-hook codex" {
							t.Errorf("hook command %q, want the concord-hook beside concord", h.Command)
						}
						ours++
					}
				}
			}
		}
		return d, ours
	}
	for i := 0; i < 2; i++ {
		if out, stderr, code := runBinEnv(t, []string{"CODEX_HOME=" + home, "PATH=/nonexistent"}, "install", "codex"); code != 0 || !strings.Contains(out, file) || !strings.Contains(out, "No codex program found") {
			t.Fatalf("install: status %d, %q, %q", code, out, stderr)
		}
		d, ours := read()
		if ours != len(codexHookEvents) || d.Description != "mine" || len(d.Hooks["Stop"]) != 1 || len(d.Hooks["PostToolUse"]) != 2 ||
			d.Hooks["PostToolUse"][0].Hooks[0].Command != "lint.sh" || d.Hooks["SessionEnd"][0].Hooks[0].Timeout != 3 {
			t.Fatalf("run %d: %d of ours, %+v", i+1, ours, d)
		}
	}
	if _, stderr, code := runBinEnv(t, nil, "install", "codex", "--codex-home", home, "--uninstall"); code != 0 {
		t.Fatalf("uninstall: status %d, %q", code, stderr)
	}
	d, ours := read()
	if ours != 0 || len(d.Hooks) != 2 || d.Hooks["PostToolUse"][0].Matcher != "Bash" {
		t.Fatalf("after uninstall: %d of ours, %+v", ours, d)
	}
	if _, _, code := runBin(t, "install", "gemini"); code != 2 {
		t.Errorf("an unknown runtime: status %d, want 2", code)
	}
	if err := os.WriteFile(file, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runBinEnv(t, []string{"CODEX_HOME=" + home}, "install", "codex"); code == 0 || !strings.Contains(stderr, "hooks.json") {
		t.Errorf("a damaged hooks.json: status %d, %q (want it refused, untouched)", code, stderr)
	}
	if data, _ := os.ReadFile(file); string(data) != "{" {
		t.Errorf("a damaged hooks.json was rewritten: %q", data)
	}
}

func TestIsConcordHook(t *testing.T) {
	for cmd, want := range map[string]bool{
		"/usr/bin/concord hook codex": true, "'/a b/concord' hook codex": true, "/usr/bin/concord-hook codex": true,
		"'/a b/concord-hook' codex": true, "concord-hook codex": true,
		"lint.sh": false, "/usr/bin/my-concord-hook codex": false, "/usr/bin/concord-hook gemini-cli": false, "codex": false,
	} {
		if got := isConcordHook(cmd); got != want {
			t.Errorf("isConcordHook(%q) = %v, want %v", cmd, got, want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"/usr/bin/concord": "/usr/bin/concord", "/a b/concord": "'/a b/concord'", "/it's": `'/it'\''s'`} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}
