package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestServeBadInput runs the real binary on input it cannot use, in its
// default (Content-Length) framing: each is an error on stderr, and input
// that ends inside a frame ends the process with status 1 (issue 37: it
// printed nothing and exited 0). Input that ends between frames is a clean
// end, status 0.
func TestServeBadInput(t *testing.T) {
	stats := `{"jsonrpc":"2.0","id":1,"method":"stats"}`
	tests := []struct {
		name   string
		in     string
		status int
		stderr []string // substrings, in the log
		stdout string   // substring of the answers ("" for none expected)
	}{
		{"garbage", "garbage\n", 1, []string{"level=ERROR", `malformed header \"garbage\"`, "--framing=newline"}, ""},
		{"a frame cut at the end of input", "Content-Length: 100\r\n\r\n0123456789", 1,
			[]string{"level=ERROR", "input ended 10 bytes into a message body of 100 (Content-Length: 100)"}, ""},
		{"a JSON message without a newline", stats, 1, []string{"level=ERROR", "got a JSON message", "--framing=newline"}, ""},
		{"a JSON line is answered with the hint, then served on", stats + "\n" + fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(stats), stats), 0,
			[]string{"level=WARN", "expected a Content-Length header"}, "server not initialized"},
		{"a complete frame, then the end", fmt.Sprintf("Content-Length: %d\r\n\r\n%s\r\n", len(stats), stats), 0, nil, "server not initialized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(concordBin, "serve")
			cmd.Stdin = strings.NewReader(tt.in)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			status := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				status = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if status != tt.status {
				t.Errorf("status %d, want %d\nstderr: %s", status, tt.status, stderr.String())
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if tt.stderr == nil && stderr.Len() > 0 {
				t.Errorf("stderr not empty:\n%s", stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, stdout.String())
			}
		})
	}
}

// TestServeOversizedSaidAtOnce: a Content-Length far over the limit, with
// stdin left open, is logged as soon as its header is read (it swallowed the
// next message without a word); when the input then ends inside it, the
// process says so and exits 1.
func TestServeOversizedSaidAtOnce(t *testing.T) {
	cmd := exec.Command(concordBin, "serve")
	stdin, _ := cmd.StdinPipe()
	stderr, _ := cmd.StderrPipe()
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	fmt.Fprint(stdin, "Content-Length: 999999999999\r\n\r\n")
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case line := <-lines:
		for _, w := range []string{"level=WARN", "oversized message", "contentLength=999999999999", "limit=16777216", "dropped"} {
			if !strings.Contains(line, w) {
				t.Errorf("first log line lacks %q: %s", w, line)
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing logged 10s after an oversized header, stdin open")
	}
	stats := `{"jsonrpc":"2.0","id":1,"method":"stats"}`
	fmt.Fprintf(stdin, "Content-Length: %d\r\n\r\n%s", len(stats), stats)
	stdin.Close()
	var rest []string
	for line := range lines {
		rest = append(rest, line)
	}
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1", err)
	}
	if got := strings.Join(rest, "\n"); !strings.Contains(got, "level=ERROR") || !strings.Contains(got, "into the body of an oversized message") {
		t.Errorf("the end inside the skipped body is not said:\n%s", got)
	}
}
