package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/concord-ctx/concord/protocol"

	"github.com/spf13/pflag"
)

// Set at build time: go build -ldflags "-X main.version=0.2.0 -X main.commit=$(git rev-parse HEAD)
// -X main.date=2026-12-03T10:00:00Z" (make dist does). Without them, the Go toolchain's stamp says
// what it knows (buildStamp): a release's module version (go install ...@v0.2.0), and the commit
// and its time from a git clone (vcs.*) or from the pseudo-version of a module build.
var (
	version = devVersion
	commit  = ""
	date    = ""
)

// devVersion is version when -ldflags did not set it.
const devVersion = "0.1.0-dev"

// stamp is what a binary says of itself: version, commit (12 hex digits, "+dirty" when the tree
// had changes) and the commit's time; "unknown" where nothing says.
type stamp struct{ version, rev, when string }

func buildStamp() stamp {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return stampOf(info, version, commit, date)
}

// pseudoVersion is the tail of a Go pseudo-version (v0.0.0-20261205091215-289b2af2b2a8,
// v1.2.4-0.20261205091215-289b2af2b2a8, with "+dirty" from a changed tree): its time and commit.
var pseudoVersion = regexp.MustCompile(`(?:^v[0-9]+\.[0-9]+\.[0-9]+-|\.)([0-9]{14})-([0-9a-f]{12})(\+dirty)?$`)

// stampOf fills in from info (nil: none) what -ldflags did not set.
func stampOf(info *debug.BuildInfo, ldVersion, ldCommit, ldDate string) stamp {
	s := stamp{version: ldVersion, rev: ldCommit, when: ldDate}
	dirty := false
	if info != nil && ldCommit == "" {
		for _, kv := range info.Settings {
			switch kv.Key {
			case "vcs.revision":
				s.rev = kv.Value
			case "vcs.time":
				if s.when == "" {
					s.when = kv.Value
				}
			case "vcs.modified":
				dirty = kv.Value == "true"
			}
		}
	}
	if info != nil {
		mv := info.Main.Version
		m := pseudoVersion.FindStringSubmatch(mv)
		switch {
		case m != nil && s.rev == "" && ldCommit == "":
			// A module build without vcs settings (go install ...@<commit>).
			s.rev, dirty = m[2], m[3] != ""
			if t, err := time.Parse("20060102150405", m[1]); err == nil && s.when == "" {
				s.when = t.UTC().Format(time.RFC3339)
			}
		case m == nil && ldVersion == devVersion && strings.HasPrefix(mv, "v") && !strings.Contains(mv, "+"):
			s.version = strings.TrimPrefix(mv, "v") // a release: go install ...@v0.2.0
		}
	}
	if len(s.rev) > 12 {
		s.rev = s.rev[:12]
	}
	if s.rev == "" {
		s.rev = "unknown"
	} else if dirty {
		s.rev += "+dirty"
	}
	if s.when == "" {
		s.when = "unknown"
	}
	return s
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
	st := buildStamp()
	fmt.Fprintf(stdout, "concord %s (protocol %d, commit %s, built %s, %s %s/%s)\n", st.version, protocol.Version, st.rev, st.when, goruntime.Version(), goruntime.GOOS, goruntime.GOARCH)
	return nil
}
