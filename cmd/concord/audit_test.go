package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const auditStores = "../../testdata/audit/sessions"

// runBin runs the real binary and returns stdout, stderr and the status.
func runBin(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runBinIn(t, "", args...)
}

func runBinIn(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(concordBin, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// TestAuditCommand: the binary on the captured stores, run from the
// repository's root as the README shows, prints the summary the README
// pastes (golden: testdata/audit/golden/cli.txt), and --json is the
// report; a damaged input is named on stderr with status 1.
func TestAuditCommand(t *testing.T) {
	out, stderr, code := runBinIn(t, "../..", "audit", "--price", "anthropic", "testdata/audit/sessions/openhands", "testdata/audit/sessions/opencode")
	if code != 0 || stderr != "" {
		t.Fatalf("status %d, stderr %q", code, stderr)
	}
	golden := filepath.Join(auditStores, "..", "golden", "cli.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if want, err := os.ReadFile(golden); err != nil || string(want) != out {
		t.Errorf("output differs from %s (go test ./cmd/concord -run AuditCommand -update):\n%s", golden, out)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "    " + l // a Markdown code block; blank lines stay blank
		}
	}
	if !strings.Contains(string(readme), strings.Join(lines, "\n")) {
		t.Errorf("README.md does not show this run's output (section \"See how much stale context your agents worked from\"):\n%s", out)
	}
	js, _, code := runBin(t, "audit", "--json", auditStores)
	var rep struct {
		Totals struct {
			Sessions   int `json:"sessions"`
			StaleCalls int `json:"callsWithStaleView"`
		} `json:"totals"`
	}
	if code != 0 || json.Unmarshal([]byte(js), &rep) != nil || rep.Totals.Sessions != 8 || rep.Totals.StaleCalls == 0 {
		t.Errorf("--json: status %d, %+v\n%s", code, rep, js)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"info": {`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = runBin(t, "audit", bad, auditStores+"/opencode")
	if code != 1 || !strings.Contains(stderr, bad) || !strings.Contains(out, "Audited 3 sessions") {
		t.Errorf("a damaged input: status %d, stderr %q, stdout %q", code, stderr, out)
	}
	if _, stderr, code = runBin(t, "audit"); code != 2 || !strings.Contains(stderr, "no PATH") {
		t.Errorf("no PATH: status %d, %q", code, stderr)
	}
}

// chromium finds a headless-capable Chromium (make chromium installs
// Debian's).
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestAuditHTMLInChromium renders the --html page in a real headless
// Chromium and checks what it shows: the totals and an SVG timeline per
// session with its bars.
func TestAuditHTMLInChromium(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "audit.html")
	if _, stderr, code := runBin(t, "audit", "--html", page, "--price", "openai", auditStores); code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`(?i)<script|<link|src=|https?://[^"]*\.(js|css)`).Match(raw) {
		t.Error("the page is not self-contained")
	}
	bin := chromium()
	if bin == "" {
		t.Skip("SKIPPED: no chromium on PATH (make chromium installs Debian's package)")
	}
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--user-data-dir=" + filepath.Join(dir, "profile")}
	cmd := exec.Command(bin, append(args, "--dump-dom", "file://"+page)...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, errb.String())
	}
	d := string(dom)
	if n := strings.Count(d, `<svg class="timeline"`); n != 8 {
		t.Errorf("%d timelines in the rendered page, want one per session (8)", n)
	}
	if !strings.Contains(d, `class="stale"`) || !strings.Contains(d, `class="errata"`) {
		t.Error("the timelines have no stale or errata bars")
	}
	totals := regexp.MustCompile(`(?s)<table id="totals">.*?</table>`).FindString(d)
	for _, want := range []string{"Sessions", "8 (8 with stale context)", "Calls that carried a stale view", "Stale tokens sent", "cache cost under openai"} {
		if !strings.Contains(totals, want) {
			t.Errorf("the rendered totals lack %q:\n%s", want, totals)
		}
	}
	shot := filepath.Join(dir, "audit.png")
	cmd = exec.Command(bin, append(args, "--screenshot="+shot, "--window-size=1200,1600", "file://"+page)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 10000 {
		t.Errorf("screenshot %v, %v: want a rendered page", st, err)
	}
}

// TestAuditProgressOnTerminal: with stderr on a terminal (a pty from
// util-linux script) the bar is drawn there; on a pipe (every other test
// here) stderr stays empty.
func TestAuditProgressOnTerminal(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("SKIPPED: no util-linux script to give the binary a terminal")
	}
	stores, err := filepath.Abs(auditStores)
	if err != nil {
		t.Fatal(err)
	}
	// Only stderr goes to the pty; stdout is dropped.
	line := concordBin + " audit " + stores + " 2>&1 >/dev/null"
	out, err := exec.Command(script, "-qec", line, "/dev/null").Output()
	if err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if !strings.Contains(string(out), "\r[###") || !strings.Contains(string(out), "8/8 sessions") {
		t.Errorf("no progress bar on the terminal: %q", out)
	}
}

// TestAuditNothingToAudit: a path with nothing the audit reads says what it
// looks for and fails, and no report of zeros is printed (issue 37: status 0
// and a zero report for an empty directory, the zero report with status 1
// for a missing one); --html keeps the terminal to the summary.
func TestAuditNothingToAudit(t *testing.T) {
	empty := t.TempDir()
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "notes.txt"), []byte("no session"), 0o644); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "audit.html")
	tests := []struct {
		name      string
		args      []string
		status    int
		stdout    []string // substrings; nil: stdout must be empty
		notStdout []string
		stderr    []string
	}{
		{"empty directory", []string{"audit", empty}, 1, nil, nil, []string{empty + ": no sessions found here", "events/event-*.json", "opencode export", "OpenAI-format"}},
		{"a directory of other files", []string{"audit", other}, 1, nil, nil, []string{other + ": no sessions found here"}},
		{"missing path", []string{"audit", "/nonexistent/sessions"}, 1, nil, nil, []string{"/nonexistent/sessions: stat /nonexistent/sessions: no such file or directory"}},
		{"one empty among real ones is named, the rest audited", []string{"audit", auditStores, empty}, 0, []string{"Audited 8 sessions"}, nil, []string{empty + ": no sessions found here"}},
		{"--html: the summary alone on the terminal", []string{"audit", "--html", page, auditStores}, 0,
			[]string{"Audited 8 sessions", "Each session, call by call: " + page}, []string{"(openhands, ", "(opencode, "}, nil},
		{"--html --sessions lists them too", []string{"audit", "--html", page, "--sessions", auditStores}, 0,
			[]string{"(openhands, ", "(opencode, ", "Audited 8 sessions"}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code := runBin(t, tt.args...)
			if code != tt.status {
				t.Errorf("status %d, want %d\nstdout: %s\nstderr: %s", code, tt.status, out, stderr)
			}
			if tt.stdout == nil && out != "" {
				t.Errorf("stdout not empty:\n%s", out)
			}
			for _, w := range tt.stdout {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.notStdout {
				if strings.Contains(out, w) {
					t.Errorf("stdout has %q:\n%s", w, out)
				}
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if tt.stderr == nil && stderr != "" {
				t.Errorf("stderr not empty:\n%s", stderr)
			}
		})
	}
	if html, err := os.ReadFile(page); err != nil || !bytes.Contains(html, []byte("0f709932-76f4-54b8-8faa-740cf601b85e")) {
		t.Errorf("the page lacks the sessions (%v)", err)
	}
}

// TestAuditCodex: `concord audit --codex` reads $CODEX_HOME/sessions, and
// `concord audit DIR` finds the rollouts in Codex's YYYY/MM/DD layout.
func TestAuditCodex(t *testing.T) {
	home := t.TempDir()
	data, err := os.ReadFile("../../testdata/codex/stale/rollout.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := os.ReadFile("../../testdata/codex/stale/rollout-path.txt")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(home, strings.TrimSpace(string(rel)))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, bytes.ReplaceAll(data, []byte("{WS}"), []byte("/home/dev/proj")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"audit", "--json", "--codex"}, {"audit", "--json", filepath.Join(home, "sessions")}} {
		cmd := exec.Command(concordBin, args...)
		cmd.Env = append(os.Environ(), "CODEX_HOME="+home)
		out, err := cmd.Output()
		var rep struct {
			Totals struct {
				Sessions   int `json:"sessions"`
				StaleViews int `json:"staleViews"`
			} `json:"totals"`
			Sessions []struct {
				Format string `json:"format"`
			} `json:"sessions"`
		}
		if err != nil || json.Unmarshal(out, &rep) != nil || rep.Totals.Sessions != 1 || rep.Totals.StaleViews != 1 ||
			rep.Sessions[0].Format != "codex" {
			t.Errorf("%v: %v, %+v\n%s", args, err, rep, out)
		}
	}
}
