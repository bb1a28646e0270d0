package main

import (
	"context"
	"fmt"
	"io"
	goruntime "runtime"

	"github.com/concord-ctx/concord/rpc/protocol"

	"github.com/spf13/pflag"
)

// version is set at build time: go build -ldflags "-X main.version=0.2.0".
var version = "0.1.0-dev"

func versionFlags() *pflag.FlagSet {
	return pflag.NewFlagSet("version", pflag.ContinueOnError)
}

func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := versionFlags()
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	fmt.Fprintf(stdout, "concord %s (protocol %d, %s %s/%s)\n", version, protocol.Version, goruntime.Version(), goruntime.GOOS, goruntime.GOARCH)
	return nil
}
