package main

import (
	"flag"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/rpc/transcript"
)

var update = flag.Bool("update", false, "rewrite the expected messages of testdata/rpc/*.jsonl (rpc's in-process run rewrites them all)")

// subprocessTranscripts are the transcripts that run against the real
// binary as well: the ones whose point is stdio, framing on a real pipe and
// the exit status, the regressions of issue 19 (true corrections, a file
// over the size cap), which must hold in the binary users run, the
// corrections of a compaction summary (issue 36), and
// recognize and its query sources (the binary runs the queries' programs). Every transcript runs in-process in package rpc
// (rpc/transcript_test.go), where coverage sees the handlers.
var subprocessTranscripts = []string{"lifecycle", "exit-without-shutdown", "stdin-close", "newline", "corrections", "too-large", "recognize", "query", "compacted"}

// TestGolden runs those transcripts (docs: internal/transcript) against a
// fresh `concord serve` subprocess each.
func TestGolden(t *testing.T) {
	for _, name := range subprocessTranscripts {
		file := filepath.Join("../../testdata/rpc", name+".jsonl")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			transcript.Run(t, file, launchBinary, version, *update)
		})
	}
}

// launchBinary starts the binary built by TestMain with serve's flags.
func launchBinary(t testing.TB, args []string) transcript.Server {
	cmd := exec.Command(concordBin, append([]string{"serve", "--log-level=debug"}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := new(transcript.LockedBuffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return transcript.Server{
		In:  stdin,
		Out: stdout,
		Wait: func() int {
			_ = cmd.Wait()
			return cmd.ProcessState.ExitCode()
		},
		Stderr: func() string { return strings.TrimSpace(stderr.String()) },
	}
}
