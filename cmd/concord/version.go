package main

import (
	"context"
	"fmt"
	"io"
	goruntime "runtime"
	"runtime/debug"

	"github.com/concord-ctx/concord/protocol"

	"github.com/spf13/pflag"
)

// Set at build time: go build -ldflags "-X main.version=0.2.0 -X main.commit=$(git rev-parse HEAD)
// -X main.date=2026-12-03T10:00:00Z" (make dist does). Without them, a build from a git checkout
// still knows its commit and time from the Go toolchain's VCS stamp.
var (
	version = "0.1.0-dev"
	commit  = ""
	date    = ""
)

// buildStamp returns the commit (12 hex digits, "+dirty" when the tree had changes) and the
// commit date, from -ldflags or else the toolchain's VCS stamp; "unknown" when neither says.
func buildStamp() (rev, when string) {
	rev, when = commit, date
	dirty := false
	if info, ok := debug.ReadBuildInfo(); ok && commit == "" {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				if when == "" {
					when = s.Value
				}
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		rev = "unknown"
	} else if dirty {
		rev += "+dirty"
	}
	if when == "" {
		when = "unknown"
	}
	return rev, when
}

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
	rev, when := buildStamp()
	fmt.Fprintf(stdout, "concord %s (protocol %d, commit %s, built %s, %s %s/%s)\n", version, protocol.Version, rev, when, goruntime.Version(), goruntime.GOOS, goruntime.GOARCH)
	return nil
}
