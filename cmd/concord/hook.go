package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/concord-ctx/concord/hook"
)

// hookCommand is `concord hook RUNTIME`, the command an agent runtime's hooks
// run (one process per event; docs/protocol.md, "Hook transport").
func hookCommand() command {
	return command{
		name:    "hook",
		summary: "handle one agent runtime hook event (JSON on stdin) with the session's server",
		usage:   "concord hook RUNTIME",
		long: `Reads one hook event on stdin, carries it to the session's server over a unix socket
($XDG_RUNTIME_DIR/concord or <temp>/concord-<uid>), starting 'concord serve --socket'
when the session has none, and prints the runtime's answer: the corrections the model
should read. RUNTIME: ` + strings.Join(hook.Runtimes(), ", ") + `. The runtimes' configurations run
concord-hook, the same command in a small executable installed beside concord (a hook
runs on every tool call, and it starts in half the time). It always exits 0: on a
failure it prints nothing on stdout, one line on stderr, and logs to concord.log in the
socket directory.
Environment: CONCORD_ROOTS (directories tracked, ':'-separated; default /),
CONCORD_HOOK_IDLE (the server ends after this long without a request; default 1h),
CONCORD_HOOK_TIMEOUT (bounds one hook; default 5s).`,
		examples: `  # what the Claude Code plugin's hooks/hooks.json runs:
  concord-hook claude-code
  # by hand:
  echo '{"session_id":"s1","cwd":"/tmp","hook_event_name":"UserPromptSubmit"}' | concord hook claude-code`,
		run: runHook,
	}
}

func runHook(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "concord hook: %v (no context added)\n", err)
		return nil
	}
	hook.Main(ctx, args, exe, version, stdin, stdout, stderr)
	return nil
}
