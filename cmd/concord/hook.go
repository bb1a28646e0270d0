package main

import (
	"context"
	"errors"
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
		long: `Reads one hook event on stdin, reaches the session's server over a unix socket
($XDG_RUNTIME_DIR/concord or <temp>/concord-<uid>), starting 'concord serve --socket'
when the session has none, and prints the runtime's answer: the corrections the model
should read. RUNTIME: ` + strings.Join(hook.Runtimes(), ", ") + `. It always exits 0: on a failure
it prints nothing on stdout, one line on stderr, and logs to concord.log in the
socket directory.
Environment: CONCORD_ROOTS (directories tracked, ':'-separated; default /),
CONCORD_HOOK_IDLE (the server ends after this long without a request; default 1h),
CONCORD_HOOK_TIMEOUT (bounds one hook; default 5s).`,
		examples: `  # what a Claude Code plugin's hooks/hooks.json runs:
  concord hook claude-code
  # by hand:
  echo '{"session_id":"s1","cwd":"/tmp","hook_event_name":"UserPromptSubmit"}' | concord hook claude-code`,
		run: runHook,
	}
}

func runHook(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	// Whatever happens, status 0: a hook's failure must never stop the
	// agent (Claude Code reads status 2 as "block this tool call").
	if len(args) != 1 {
		fmt.Fprintf(stderr, "concord hook: want one runtime (%s), got %d arguments\n", strings.Join(hook.Runtimes(), ", "), len(args))
		return nil
	}
	rt, ok := hook.Lookup(args[0])
	if !ok {
		fmt.Fprintf(stderr, "concord hook: unknown runtime %q (want %s)\n", args[0], strings.Join(hook.Runtimes(), ", "))
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "concord hook %s: %v (no context added)\n", rt.Name(), err)
		return nil
	}
	cfg, err := hook.FromEnv(hook.Config{Exe: exe, Version: version})
	if err != nil {
		fmt.Fprintf(stderr, "concord hook %s: %v (no context added)\n", rt.Name(), err)
		return nil
	}
	if err := hook.Run(ctx, rt, cfg, stdin, stdout, stderr); err != nil && !errors.Is(err, context.Canceled) {
		return nil // Run said why on stderr and in the log
	}
	return nil
}
