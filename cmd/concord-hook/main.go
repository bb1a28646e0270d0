// Command concord-hook is `concord hook RUNTIME` in an executable of its
// own, the one the runtimes' hook configurations run (the Claude Code
// plugin, the Codex hooks, the Gemini CLI extension): a hook is a process
// per tool call, and this one starts in about half the time of the whole
// concord binary, whose package initialization, size and signal handling
// it does without (BenchmarkHookToolCall in cmd/concord). It carries the
// event to the session's server, `concord serve --socket`, which does all
// the work, and starts that server from the concord beside it (or
// $CONCORD_BIN) when the session has none.
package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/concord-ctx/concord/hook"
)

// Set at build time, as concord's (make dist).
var version = "0.1.0-dev"

func main() {
	hook.Main(context.Background(), os.Args[1:], concordBin(), version, os.Stdin, os.Stdout, os.Stderr)
}

// concordBin is the concord that serves sessions: $CONCORD_BIN, else the
// one installed beside this executable.
func concordBin() string {
	if bin := os.Getenv("CONCORD_BIN"); bin != "" {
		return bin
	}
	exe, err := os.Executable()
	if err != nil {
		return "concord" // PATH's; a failed start is reported like any other
	}
	return filepath.Join(filepath.Dir(exe), "concord")
}
