package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// concordBin is the real binary, built once by TestMain; the end-to-end
// tests drive it as a subprocess, as an agent runtime would.
var concordBin string

func TestMain(m *testing.M) {
	if os.Getenv(echoEnv) == "1" {
		os.Exit(echoServe(os.Stdin, os.Stdout))
	}
	dir, err := os.MkdirTemp("", "concord-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	concordBin = filepath.Join(dir, "concord")
	var flags []string
	if raceEnabled {
		flags = append(flags, "-race")
	}
	if openFeed != nil {
		flags = append(flags, "-tags", "feed") // the binary as this test binary is built
	}
	// concord-hook beside concord, as make build lays them out (what the
	// hook runtimes run; `concord install codex` finds it there).
	for _, b := range []struct{ out, pkg string }{{concordBin, "."}, {concordBin + "-hook", "../concord-hook"}} {
		build := exec.Command("go", append(append([]string{"build", "-o", b.out}, flags...), b.pkg)...)
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building", b.pkg, err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	// A race-enabled binary sleeps a second at exit by default (for late
	// reports); races are reported as they happen, so keep exits quick.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=50")
	}
	code := m.Run()
	closeBenchSessions()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestCommandTable: every command in the table dispatches (--help answers
// with status 0) and help names it, from the same entry.
func TestCommandTable(t *testing.T) {
	var list bytes.Buffer
	printUsage(&list)
	for _, c := range commands() {
		if !strings.Contains(list.String(), "  "+c.name+" ") {
			t.Errorf("help does not list %s", c.name)
		}
		var out bytes.Buffer
		if got := run(context.Background(), []string{"help", c.name}, strings.NewReader(""), &out, &out); got != 0 || !strings.Contains(out.String(), c.usage) {
			t.Errorf("help %s: status %d\n%s", c.name, got, out.String())
		}
		if c.flags != nil {
			_, listed, _ := strings.Cut(out.String(), "\nFlags:\n")
			listed, _, _ = strings.Cut(listed, "\nExamples:")
			c.flags().VisitAll(func(f *pflag.Flag) {
				if shown := regexp.MustCompile(`(?m)^\s+(-\w, )?--` + regexp.QuoteMeta(f.Name) + `\b[^-]`).MatchString(listed); shown == f.Hidden {
					t.Errorf("help %s: --%s shown %v, hidden %v", c.name, f.Name, shown, f.Hidden)
				}
			})
		}
	}
}

// TestRun covers the command line itself, in process.
func TestRun(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		status int
		stdout string // substring expected on stdout
		stderr string // substring expected on stderr
	}{
		{"no args", nil, 2, "", "Usage:"},
		{"unknown command", []string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{"version", []string{"version"}, 0, "concord " + version + " (protocol 1", ""},
		{"version extra arg", []string{"version", "x"}, 2, "", "unexpected argument"},
		{"help", []string{"help"}, 0, "Commands:", ""},
		{"help serve shows flags and examples", []string{"help", "serve"}, 0, "--max-message", ""},
		{"help locate shows its flags", []string{"help", "locate"}, 0, "--min-similarity", ""},
		{"locate --help is the same help, on stdout", []string{"locate", "--help"}, 0, "--span-file", ""},
		{"help --help is help's help", []string{"help", "--help"}, 0, "concord help [command]", ""},
		{"version -h", []string{"version", "-h"}, 0, "concord version", ""},
		{"version names commit and build date", []string{"version"}, 0, ", commit ", ""},
		{"help by alias", []string{"--help", "version"}, 0, "concord version", ""},
		{"help unknown", []string{"help", "nope"}, 2, "", `unknown command "nope"`},
		{"help unknown lists the commands", []string{"help", "nope"}, 2, "", "Run 'concord help' for the list of commands."},
		{"serve bad flag", []string{"serve", "--nope"}, 2, "", "unknown flag: --nope"},
		{"serve bad framing", []string{"serve", "--framing=xml"}, 2, "", "--framing must be"},
		{"serve bad log level", []string{"serve", "--log-level=loud"}, 2, "", "--log-level"},
		{"serve bad size", []string{"serve", "--max-message=lots"}, 2, "", "invalid size"},
		{"serve missing policy file", []string{"serve", "--policy=/nonexistent/p.json"}, 1, "", "--policy"},
		{"serve help, on stdout like help serve", []string{"serve", "--help"}, 0, "Usage:", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			got := run(context.Background(), tt.args, strings.NewReader(""), &stdout, &stderr)
			if got != tt.status {
				t.Errorf("status = %d, want %d\nstdout: %s\nstderr: %s", got, tt.status, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout %q does not contain %q", stdout.String(), tt.stdout)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tt.stderr)
			}
		})
	}
}

func TestPolicyFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"global":{"local":"explode"}}`), 0o644)
	var stdout, stderr bytes.Buffer
	if got := run(context.Background(), []string{"serve", "--policy", bad}, strings.NewReader(""), &stdout, &stderr); got != 1 {
		t.Fatalf("status = %d, want 1 (stderr %s)", got, stderr.String())
	}
	if !strings.Contains(stderr.String(), "policy.global.local") {
		t.Errorf("stderr %q does not name the field", stderr.String())
	}
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"global":{"drift":"annotate"},"byType":{"res":{"maxAgeTurns":3}}}`), 0o644)
	stderr.Reset()
	// Empty input: the server starts and ends cleanly at once.
	if got := run(context.Background(), []string{"serve", "--policy", good}, strings.NewReader(""), &stdout, &stderr); got != 0 {
		t.Fatalf("status = %d, want 0 (stderr %s)", got, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("serve wrote %q to stdout without any request", stdout.String())
	}
}

func TestByteSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1048576": 1 << 20, "16MiB": 16 << 20, "64 KiB": 64 << 10, "2G": 2 << 30, "10B": 10} {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5MiB", "MiB", "12XB"} {
		var b byteSize
		if err := b.Set(in); err == nil {
			t.Errorf("Set(%q) accepted", in)
		}
	}
}

// TestHelpGoesToStdout: every way of asking for help prints the same text on stdout and nothing on
// stderr (issue 15: a subcommand's --help went to stderr while `concord help X` went to stdout).
func TestHelpGoesToStdout(t *testing.T) {
	for _, c := range commands() {
		var viaHelp, viaHelpStderr bytes.Buffer
		if code := run(context.Background(), []string{"help", c.name}, strings.NewReader(""), &viaHelp, &viaHelpStderr); code != 0 {
			t.Fatalf("help %s: status %d", c.name, code)
		}
		for _, flag := range []string{"--help", "-h"} {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), []string{c.name, flag}, strings.NewReader(""), &stdout, &stderr); code != 0 {
				t.Errorf("%s %s: status %d", c.name, flag, code)
			}
			if stdout.String() != viaHelp.String() || stderr.Len() != 0 || viaHelpStderr.Len() != 0 {
				t.Errorf("%s %s: stdout %q, stderr %q; want help %s's text %q on stdout only", c.name, flag, stdout.String(), stderr.String(), c.name, viaHelp.String())
			}
		}
	}
}
