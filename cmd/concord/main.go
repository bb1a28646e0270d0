// Command concord is Concord's one binary: `concord serve` is the JSON-RPC
// plugin agent runtimes launch per session (docs/protocol.md); the other
// subcommands are tools around it. `concord help` lists them.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches a subcommand and maps its error to the exit status:
// 0 ok, 1 failure (or the status the command asked for), 2 usage error.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return 2
	}
	cmd, rest := args[0], args[1:]
	c, ok := lookup(cmd)
	if !ok {
		fmt.Fprintf(stderr, "concord: unknown command %q\n\n", cmd)
		printUsage(stderr)
		return 2
	}
	err := c.run(ctx, rest, stdin, stdout, stderr)
	return exitCode(cmd, err, stderr)
}

// exitStatus is an error that carries the process status to return.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// usageError is a command-line mistake: status 2, with a hint.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func exitCode(cmd string, err error, stderr io.Writer) int {
	var st exitStatus
	var ue usageError
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		return 0
	case errors.As(err, &st):
		return int(st)
	case errors.As(err, &ue):
		hint := fmt.Sprintf("Run 'concord help %s' for usage.", cmd)
		if c, _ := lookup(cmd); c.name == "help" {
			hint = "Run 'concord help' for the list of commands."
		}
		fmt.Fprintf(stderr, "concord %s: %v\n%s\n", cmd, ue.err, hint)
		return 2
	}
	fmt.Fprintf(stderr, "concord %s: %v\n", cmd, err)
	return 1
}
