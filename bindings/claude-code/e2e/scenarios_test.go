package e2e

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concord-ctx/concord/internal/fakemodel/anthropic"
)

func read(path string, more ...any) anthropic.ToolUse {
	in := map[string]any{"file_path": path}
	for i := 0; i+1 < len(more); i += 2 {
		in[more[i].(string)] = more[i+1]
	}
	return anthropic.ToolUse{Name: "Read", Input: in}
}

func bash(cmd string) anthropic.ToolUse {
	return anthropic.ToolUse{Name: "Bash", Input: map[string]any{"command": cmd, "description": "run " + cmd}}
}

func step(before func(*anthropic.Request) error, tools ...anthropic.ToolUse) anthropic.Step {
	return anthropic.Step{Before: before, Tools: tools}
}

// noop is a tool call that shows no file: its hook's answer carries the
// corrections of what changed since the last one.
func noop(before func(*anthropic.Request) error) anthropic.Step { return step(before, bash("true")) }

func id(step, j int) string { return anthropic.ToolUseID(step, j) }

func ptr(s string) *string { return &s }

func numbered(n int, f string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, f+"\n", i)
	}
	return b.String()
}

// scenario is one Claude Code session with the plugin. expect maps a script
// step to the calls that the notes of the request taking it correct (no
// other call, and no note in any other request).
type scenario struct {
	name    string
	args    []string
	summary string // a compaction's summary ("": the fake model's default)
	script  func(e *env) []anthropic.Step
	expect  map[int][]string
}

var scenarios = []scenario{
	{
		// A Read window (lines 3-7 of 10) and every kind of outside change,
		// one at a time, each followed by a tool call whose hook says it.
		name: "read window",
		script: func(e *env) []anthropic.Step {
			orig := numbered(10, "line %d of w")
			e.write(e.p("w.txt"), orig)
			word := strings.Replace(orig, "line 5 of w", "line 5 of W", 1)
			return []anthropic.Step{
				step(nil, read(e.p("w.txt"), "offset", 3, "limit", 5)),
				noop(e.change(e.p("w.txt"), ptr(word))),                  // one word
				noop(e.change(e.p("w.txt"), ptr("new 1\nnew 2\n"+word))), // lines inserted above
				noop(e.change(e.p("w.txt"), nil)),                        // deleted
				noop(e.change(e.p("w.txt"), ptr(orig))),                  // back as it was
				noop(e.change(e.p("w.txt"), ptr(numbered(4, "rewritten %d")))),
				anthropic.Say("done"),
			}
		},
		expect: map[int][]string{2: {id(0, 0)}, 3: {id(0, 0)}, 4: {id(0, 0)}, 5: {id(0, 0)}, 6: {id(0, 0)}},
	},
	{
		name: "own edit",
		script: func(e *env) []anthropic.Step {
			e.write(e.p("e.txt"), "first line\nsecond line\nthird line\n")
			return []anthropic.Step{
				step(nil, read(e.p("e.txt"))),
				step(nil, anthropic.ToolUse{Name: "Edit", Input: map[string]any{"file_path": e.p("e.txt"), "old_string": "second line", "new_string": "2nd line"}}),
				anthropic.Say("done"),
			}
		},
		expect: map[int][]string{2: {id(0, 0)}},
	},
	{
		// Grep is not among this version's default tools: --tools asks for it.
		name: "grep hit",
		args: []string{"--tools", "Read,Grep,Bash"},
		script: func(e *env) []anthropic.Step {
			e.write(e.p("g.txt"), "alpha\nneedle one\nbeta\nneedle two\ngamma\n")
			return []anthropic.Step{
				step(nil, anthropic.ToolUse{Name: "Grep", Input: map[string]any{"pattern": "needle", "output_mode": "content", "-n": true, "path": e.p("g.txt")}}),
				noop(e.change(e.p("g.txt"), ptr("alpha\nneedle one\nbeta\nneedle TWO\ngamma\n"))),
				anthropic.Say("done"),
			}
		},
		expect: map[int][]string{2: {id(0, 0)}},
	},
	{
		name: "bash reads",
		script: func(e *env) []anthropic.Step {
			e.write(e.p("b.txt"), numbered(6, "b line %d"))
			e.write(e.p("c.txt"), numbered(6, "c line %d"))
			return []anthropic.Step{
				step(nil, bash("cat -n b.txt")),
				step(nil, bash("sed -n '2,4p' c.txt")),
				noop(func(r *anthropic.Request) error {
					if err := e.change(e.p("b.txt"), ptr(strings.Replace(numbered(6, "b line %d"), "b line 3", "b line three", 1)))(r); err != nil {
						return err
					}
					return e.change(e.p("c.txt"), ptr(strings.Replace(numbered(6, "c line %d"), "c line 3", "c line three", 1)))(r)
				}),
				anthropic.Say("done"),
			}
		},
		expect: map[int][]string{3: {id(0, 0), id(1, 0)}},
	},
	{
		name: "read outside the project",
		script: func(e *env) []anthropic.Step {
			e.write(e.o("o.txt"), "outside one\noutside two\n")
			return []anthropic.Step{
				step(nil, read(e.o("o.txt"))),
				noop(e.change(e.o("o.txt"), ptr("outside one\noutside 2\n"))),
				anthropic.Say("done"),
			}
		},
		expect: map[int][]string{2: {id(0, 0)}},
	},
	{
		// Two reads in one message, then two more in one message after both
		// files changed: the two hooks run at once and each correction
		// reaches the model once.
		name: "parallel tool calls",
		script: func(e *env) []anthropic.Step {
			e.write(e.p("x.txt"), "x one\nx two\n")
			e.write(e.p("y.txt"), "y one\ny two\n")
			e.write(e.p("z.txt"), "z\n")
			return []anthropic.Step{
				step(nil, read(e.p("x.txt")), read(e.p("y.txt"))),
				step(func(r *anthropic.Request) error {
					if err := e.change(e.p("x.txt"), ptr("x one\nX TWO\n"))(r); err != nil {
						return err
					}
					return e.change(e.p("y.txt"), ptr("Y ONE\ny two\n"))(r)
				}, read(e.p("z.txt")), read(e.p("z.txt"), "offset", 1, "limit", 1)),
				anthropic.Say("done"),
			}
		},
		expect: map[int][]string{2: {id(0, 0), id(0, 1)}},
	},
	{
		// The Agent tool runs its subagent in the background. The main agent
		// and the subagent read s.txt; the main agent edits it while the
		// subagent still runs: each is corrected in its own context.
		name: "subagent",
		script: func(e *env) []anthropic.Step {
			e.write(e.p("s.txt"), "sub one\nsub two\nsub three\n")
			sub := func(st anthropic.Step) anthropic.Step { st.Subagent = true; return st }
			carried := func(callID string) func(*anthropic.Request) error {
				return func(*anthropic.Request) error { return e.waitResult(callID) }
			}
			return []anthropic.Step{
				step(nil, read(e.p("s.txt"))), // 0
				step(nil, anthropic.ToolUse{Name: "Agent", Input: map[string]any{"description": "read s", "prompt": "Read s.txt", "subagent_type": "general-purpose"}}), // 1
				sub(step(nil, read(e.p("s.txt"), "offset", 2, "limit", 2))), // 2
				step(carried(id(2, 0)), anthropic.ToolUse{Name: "Edit", Input: map[string]any{"file_path": e.p("s.txt"), "old_string": "sub three", "new_string": "sub 3"}}), // 3
				sub(noop(carried(id(3, 0)))), // 4
				noop(func(*anthropic.Request) error { return e.waitLog("event=SubagentStop") }), // 5
				sub(anthropic.Say("s.txt read")),                                                // 6
				noop(nil),                                                                       // 7
				anthropic.Say("done"),                                                           // 8
			}
		},
		expect: map[int][]string{5: {id(0, 0)}, 6: {id(2, 0)}},
	},
	{
		// A large usage figure makes Claude Code compact: the reads before
		// it leave the prompt (released), a read after it is corrected.
		name: "compaction",
		args: []string{"--autocompact", "100000"},
		script: func(e *env) []anthropic.Step {
			e.write(e.p("k.txt"), "keep one\nkeep two\nkeep three\n")
			return []anthropic.Step{
				step(nil, read(e.p("k.txt"))),
				{Tools: []anthropic.ToolUse{read(e.p("k.txt"), "offset", 2, "limit", 1)}, InputTokens: 190000},
				step(nil, read(e.p("k.txt"), "offset", 3, "limit", 1)),
				noop(e.change(e.p("k.txt"), ptr("keep one\nkeep 2\nkeep 3\n"))),
				anthropic.Say("done"),
			}
		},
		expect: map[int][]string{4: {id(2, 0)}},
	},
	{
		// The compaction's summary restates a line of the reads it
		// replaced: a change to that line corrects the summary (PostCompact
		// gave it to the server); a change to a line it never restated
		// says nothing.
		name:    "compaction summary",
		args:    []string{"--autocompact", "100000"},
		summary: "<analysis>A scripted session.</analysis>\n<summary>cfg.yaml sets retries: 3 for the client.</summary>",
		script: func(e *env) []anthropic.Step {
			e.write(e.p("cfg.yaml"), "name: demo\nretries: 3\ntimeout: 30\n")
			e.write(e.p("other.txt"), "one\ntwo\n")
			return []anthropic.Step{
				step(nil, read(e.p("cfg.yaml"))),
				{Tools: []anthropic.ToolUse{read(e.p("other.txt"))}, InputTokens: 190000},
				noop(e.change(e.p("cfg.yaml"), ptr("name: prod\nretries: 3\ntimeout: 30\n"))),
				noop(e.change(e.p("cfg.yaml"), ptr("name: prod\nretries: 5\ntimeout: 30\n"))),
				anthropic.Say("done"),
			}
		},
		expect: map[int][]string{4: {"summary"}},
	},
}

// waitResult waits until a request carrying the call's result arrived.
func (e *env) waitResult(callID string) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		for _, r := range e.fake.Requests() {
			for _, tr := range r.ToolResults() {
				if tr.ToolUseID == callID {
					return nil
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no request carried %s within a minute", callID)
}

// waitLog waits until the hooks' log has a line with s.
func (e *env) waitLog(s string) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if strings.Contains(e.log(), s) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no %q in the log within a minute", s)
}

// tally is what the scenarios saw, for the closing figures.
var tally struct {
	sync.Mutex
	lines []string
}

func record(format string, args ...any) {
	tally.Lock()
	defer tally.Unlock()
	tally.lines = append(tally.lines, fmt.Sprintf(format, args...))
}

func TestScenarios(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			e := newEnv(t, true)
			e.claudeArgs = sc.args
			if sc.summary != "" {
				e.fake.SetSummary(sc.summary)
			}
			if err := e.run(sc.script(e)...); err != nil {
				t.Fatalf("%v\nlog:\n%s", err, e.log())
			}
			e.verify(sc.expect)
			if err := e.noServerWithin(10 * time.Second); err != nil {
				t.Error(err)
			}
		})
	}
}

// verify judges the notes of a finished session: every claim true, none
// repeated, each where expected and nowhere else; and counts Claude Code's
// own reminders about the same files.
func (e *env) verify(expect map[int][]string) {
	t := e.t
	reqs := e.fake.Requests()
	ns := notes(reqs)
	j := newJudge(reqs, e.at)
	byStep := map[int][]note{}
	for _, n := range ns {
		j.check(n)
		byStep[n.step] = append(byStep[n.step], n)
		t.Logf("request %d (step %d) note:\n%s", n.req, n.step, n.text)
	}
	for _, b := range j.bad {
		t.Error("false or unjudged: " + b)
	}
	for _, c := range contradictions(reqs, ns) {
		t.Error("contradicts Claude Code's own reminder: " + c)
	}
	for _, r := range repeated(ns) {
		t.Error("repeated: " + r)
	}
	for st, got := range byStep {
		want, ok := expect[st]
		if !ok {
			t.Errorf("step %d: a note where none was expected", st)
			continue
		}
		if s := strings.Join(subjects(got), ","); s != strings.Join(sorted(want), ",") {
			t.Errorf("step %d: notes correct %s, want %s", st, s, strings.Join(sorted(want), ","))
		}
	}
	for st := range expect {
		if _, ok := byStep[st]; !ok {
			t.Errorf("step %d: no note (the change was not corrected)", st)
		}
	}
	e.mu.Lock()
	watched := append([]string(nil), e.watch...)
	e.mu.Unlock()
	rem, texts := runtimeReminders(reqs, watched)
	for _, tx := range texts {
		t.Logf("Claude Code's own reminder: %s", tx)
	}
	both := 0
	for i := range rem {
		for _, n := range ns {
			if n.req == i {
				both++
				break
			}
		}
	}
	record("%-26s notes %d, claims checked %d, Claude Code's own file reminders %d, requests with both %d",
		t.Name(), len(ns), j.checked, len(rem), both)
}

// subjects are the calls the notes correct (sorted, once each).
func subjects(ns []note) []string {
	seen := map[string]bool{}
	for _, n := range ns {
		for _, st := range statements(n.text) {
			var part string
			switch {
			case outdatedRE.MatchString(st.head):
				for _, cl := range strings.Split(outdatedRE.FindStringSubmatch(st.head)[2], "; ") {
					if m := clauseRE.FindStringSubmatch(cl); m != nil {
						part += m[1] + " "
					}
				}
			case aboutRE.MatchString(st.head):
				part = aboutRE.FindStringSubmatch(st.head)[1]
			case currentRE.MatchString(st.head):
				part = currentRE.FindStringSubmatch(st.head)[1]
			case summaryRE.MatchString(st.head) || summaryAgainRE.MatchString(st.head):
				seen["summary"] = true // the compaction's summary, not a call
			}
			for _, m := range callRE.FindAllStringSubmatch(part, -1) {
				seen[m[1]] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	return sorted(out)
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
