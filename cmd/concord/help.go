package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// commands is what help lists; a new subcommand adds a line here and a case
// in run (main.go).
var commands = []struct {
	name, summary, usage, examples string
	flags                          func() *pflag.FlagSet
}{
	{"serve", "speak the Concord protocol (JSON-RPC 2.0) on stdin/stdout",
		"concord serve [flags]",
		`  # what an agent runtime runs, once per session (stdin/stdout are the protocol):
  concord serve
  # one JSON message per line, every message traced to a log file:
  concord serve --framing=newline --rpc-trace --log-file /tmp/concord.log
  # operator policy (initialize's "policy" overrides it field by field):
  concord serve --policy policy.json
  # try it by hand:
  printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"roots":["/tmp"]}}' \
    | concord serve --framing=newline`,
		func() *pflag.FlagSet { fs, _ := serveFlags(); return fs }},
	{"locate", "relocate a line range in a changed file (the locator, standalone)",
		"concord locate [flags]", "  concord help locate shows its flags", nil},
	{"version", "print the version and the protocol version",
		"concord version", "  concord version", versionFlags},
	{"help", "show help for a command",
		"concord help [command]", "  concord help serve", nil},
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `Concord keeps tool observations in an agent's context coherent with their sources.

Usage:
  concord <command> [flags]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Run 'concord help <command>' for a command's flags and examples.
The wire protocol is docs/protocol.md.
`)
}

func runHelp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		printUsage(stdout)
		return nil
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		if c.flags == nil && c.name == "locate" {
			// locate owns its flags: let it print its own help.
			return runLocate(ctx, []string{"--help"}, stdout, stdout)
		}
		printCommand(stdout, c.name)
		return nil
	}
	return usageError{fmt.Errorf("unknown command %q", args[0])}
}

func printCommand(w io.Writer, name string) {
	for _, c := range commands {
		if c.name != name {
			continue
		}
		fmt.Fprintf(w, "%s: %s\n\nUsage:\n  %s\n", c.name, c.summary, c.usage)
		if c.flags != nil {
			if u := c.flags().FlagUsages(); strings.TrimSpace(u) != "" {
				fmt.Fprintf(w, "\nFlags:\n%s", u)
			}
		}
		fmt.Fprintf(w, "\nExamples:\n%s\n", c.examples)
	}
}
