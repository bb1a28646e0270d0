package hook

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Main is `concord hook RUNTIME` and `concord-hook RUNTIME`: one event on
// stdin, the runtime's answer on stdout, with the session's server (exe is
// the concord that serves it). Whatever happens the process exits 0: a
// hook's failure must never stop the agent (Claude Code reads status 2 as
// "block this tool call"); stderr says why in one line.
func Main(ctx context.Context, args []string, exe, version string, stdin io.Reader, stdout, stderr io.Writer) {
	if len(args) != 1 {
		fmt.Fprintf(stderr, "concord hook: want one runtime (%s), got %d arguments\n", strings.Join(Runtimes(), ", "), len(args))
		return
	}
	rt, ok := Lookup(args[0])
	if !ok {
		fmt.Fprintf(stderr, "concord hook: unknown runtime %q (want %s)\n", args[0], strings.Join(Runtimes(), ", "))
		return
	}
	cfg, err := FromEnv(Config{Exe: exe, Version: version})
	if err != nil {
		fmt.Fprintf(stderr, "concord hook %s: %v (no context added)\n", rt.Name(), err)
		return
	}
	_ = Run(ctx, rt, cfg, stdin, stdout, stderr) // Run said why on stderr and in the log
}
