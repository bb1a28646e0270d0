package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// command is one subcommand. The one table (commands) serves both dispatch
// (run in main.go) and help, so they cannot disagree.
type command struct {
	name     string
	aliases  []string // other names dispatch accepts ("--version")
	summary  string   // one line, for the list
	usage    string   // usage lines
	long     string   // optional: what it prints, what statuses mean
	examples string
	flags    func() *pflag.FlagSet // nil: no flags
	run      func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

// commands returns the table; a new subcommand is one entry here. (A
// function, not a variable: help's entry refers back to the table.)
func commands() []command {
	return []command{
		{
			name:    "serve",
			summary: "speak the Concord protocol (JSON-RPC 2.0) on stdin/stdout",
			usage:   "concord serve [flags]",
			long:    serveLong(),
			examples: `  # what an agent runtime runs, once per session (stdin/stdout are the protocol):
  concord serve
  # one JSON message per line, every message traced to a log file:
  concord serve --framing=newline --rpc-trace --log-file /tmp/concord.log
  # operator policy (initialize's "policy" overrides it field by field):
  concord serve --policy policy.json
  # try it by hand:
  printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"roots":["/tmp"]}}' \
    | concord serve --framing=newline`,
			flags: func() *pflag.FlagSet { fs, _ := serveFlags(); return fs },
			run:   runServe,
		},
		{
			name:    "locate",
			summary: "relocate a line range in a changed file (the locator, standalone)",
			usage: `concord locate --old OLD --new NEW --lines A-B [--json] [thresholds]
  concord locate --old OLD --new NEW --lines A-B --anchored
  concord locate --span-file SPAN [--before-file F] [--after-file F] --new NEW --lines A-B`,
			long: `Where does a line range now live in a changed file? Statuses: unchanged (same
lines, same place), moved (same lines, new place), patched (a local edit: the new
text at the new range), invalid (deleted, drifted, ambiguous or not found:
re-read the file).`,
			examples: `  concord locate --old testdata/locator/example/old.yaml \
                 --new testdata/locator/example/new.yaml --lines 10-14`,
			flags: func() *pflag.FlagSet { fs, _ := locateFlags(); return fs },
			run:   noStdin(runLocate),
		},
		{
			name:    "audit",
			summary: "show how much stale context finished agent sessions worked from",
			usage:   "concord audit [--json] [--html FILE] [--price MODEL] [--codex] PATH...",
			long: `Replays finished sessions through serve's recognition and reconciliation and
reports model calls that carried a stale view, stale views by kind, the worst files,
how long stale text stayed (in calls), the stale tokens sent (characters/4, an
estimate) and what Concord would have sent instead. PATH: OpenHands persistence
directories (events/event-*.json), 'opencode export' JSON files, Claude Code
transcripts (~/.claude/projects), Codex CLI rollouts (rollout-*.jsonl), Gemini CLI
chats (~/.gemini/tmp/*/chats/*.jsonl), OpenAI-format message lists (JSON or
JSONL), or directories holding them (docs/audit.md). --codex adds $CODEX_HOME/sessions.
Nothing is written to the input. Status 1 when some input could not be read.`,
			examples: `  concord audit ~/.openhands/conversations
  concord audit ~/.codex/sessions
  opencode export ses_123 > ses_123.json && concord audit ses_123.json
  concord audit --price anthropic --html audit.html sessions/`,
			flags: func() *pflag.FlagSet { fs, _ := auditFlags(); return fs },
			run:   noStdin(runAudit),
		},
		hookCommand(),
		installCommand(),
		{
			name:     "version",
			aliases:  []string{"--version"},
			summary:  "print the version and the protocol version",
			usage:    "concord version",
			examples: "  concord version",
			flags:    versionFlags,
			run:      noStdin(runVersion),
		},
		{
			name:     "help",
			aliases:  []string{"-h", "--help"},
			summary:  "show help for a command",
			usage:    "concord help [command]",
			examples: "  concord help serve",
			run:      noStdin(runHelp),
		},
	}
}

// serveLong is serve's description: in a build without the change feed,
// where its flags are hidden, how to get them.
func serveLong() string {
	if openFeed != nil {
		return ""
	}
	return "This build has no change feed between hosts: --feed and its flags need a build\nwith -tags feed (make build-feed)."
}

func noStdin(f func(ctx context.Context, args []string, stdout, stderr io.Writer) error) func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
	return func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return f(ctx, args, stdout, stderr)
	}
}

// lookup finds a command by name or alias.
func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
		for _, a := range c.aliases {
			if a == name {
				return c, true
			}
		}
	}
	return command{}, false
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `Concord keeps tool observations in an agent's context coherent with their sources.

Usage:
  concord <command> [flags]

Commands:
`)
	for _, c := range commands() {
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
	if _, ok := lookup(args[0]); !ok {
		return usageError{fmt.Errorf("unknown command %q", args[0])}
	}
	printCommand(stdout, args[0])
	return nil
}

// printCommand prints one command's help: summary, usage, description,
// flags and examples, all from its table entry.
func printCommand(w io.Writer, name string) {
	c, ok := lookup(name)
	if !ok {
		return
	}
	fmt.Fprintf(w, "%s: %s\n\nUsage:\n  %s\n", c.name, c.summary, c.usage)
	if c.long != "" {
		fmt.Fprintf(w, "\n%s\n", c.long)
	}
	if c.flags != nil {
		if u := c.flags().FlagUsages(); strings.TrimSpace(u) != "" {
			fmt.Fprintf(w, "\nFlags:\n%s", u)
		}
	}
	fmt.Fprintf(w, "\nExamples:\n%s\n", c.examples)
}

// parseCommand parses a command's flags, printing its help to stderr on
// -h (pflag.ErrHelp is returned as is) and wrapping any other failure as a
// usage error (exit status 2).
func parseCommand(fs *pflag.FlagSet, name string, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	fs.Usage = func() { printCommand(stderr, name) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	return nil
}
