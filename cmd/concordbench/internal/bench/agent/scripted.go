package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/tasks"
)

// Scripted is a deterministic reader. It needs no model: every decision is
// a function of the context it is shown (the messages of the call) and of
// the task's evidence plan (which phrases to grep, how to read an answer out
// of an evidence line). At each call it takes the first rule that applies:
//
//  1. The last tool output says the answer is blocked until a diff: call diff.
//  2. A tool output carries "[alert] P is modified", or a Concord notice
//     "Re-read P lines A-B" (or "line A"), and no later read_file of P
//     follows it: read P (lines A-B for a notice, the whole file when the
//     notice says P was deleted).
//  3. A session task (long) runs its plan: the next planned call (ids
//     "p<i>", so the bench knows which plan step ran). A question task:
//     no glob yet: glob "*". Then for each evidence step in order: grep its
//     pattern if not done; read the file of the grep's first hit if that
//     file was never read.
//  4. An evidence line it has read before is no longer visible anywhere
//     (an observation was masked): read its file again, once.
//  5. Answer from the latest visible copy of each evidence line: the last
//     line in the context (later messages first, then later lines) equal to
//     the cloze's prefix + value + suffix, ignoring diff lines marked "-".
//     A copy that a later Concord erratum names as outdated is no evidence
//     (the erratum's own "+N:" lines are), until an erratum says "the output
//     of X is current again" or that only its lines moved. A span probe answers the value; "same" answers yes when both values
//     are equal; "earlier" answers the option with the smaller number;
//     "all" answers every value, joined by "; ". A message that says it
//     holds the true contents of files (Aider's) comes first.
//
// It measures the mechanics of a mode (what reaches the context, steps,
// tokens, cache reuse), not a model's judgement. ExtractFirst is the second
// reader: the same calls, but it answers from the first copy of each
// evidence line it saw unless that copy was itself repaired or marked, or a
// Concord erratum placed after it names its call (placement tail or auto);
// then the erratum's "+N: text" lines are the copy it reads. An erratum
// appended to a message speaks of other calls and does not mark that one.
type Scripted struct{}

// Name implements Agent.
func (Scripted) Name() string { return "scripted" }

// Session implements Agent.
func (Scripted) Session(t tasks.Task) Session { return &scriptedSession{task: t} }

type scriptedSession struct{ task tasks.Task }

// event is one tool call with its output as shown in the context.
type event struct {
	call   ToolCall
	args   map[string]any
	callAt int // index of the assistant message
	outAt  int // index of the tool message (-1: none yet)
	output string
}

func parseContext(msgs []Message) []*event {
	var evs []*event
	byID := map[string]*event{}
	for i, m := range msgs {
		switch m.Role {
		case "assistant":
			for _, tc := range m.ToolCalls {
				e := &event{call: tc, callAt: i, outAt: -1}
				_ = json.Unmarshal([]byte(tc.Arguments), &e.args)
				evs = append(evs, e)
				byID[tc.ID] = e
			}
		case "tool":
			if e, ok := byID[m.ToolCallID]; ok {
				e.outAt, e.output = i, m.Content
			}
		}
	}
	return evs
}

func (e *event) arg(k string) string {
	if v, ok := e.args[k].(string); ok {
		return v
	}
	return ""
}

var (
	alertRe  = regexp.MustCompile(`\[alert\] (\S+) is modified`)
	noticeRe = regexp.MustCompile(`Re-read (\S+?)(?: lines? (\d+)(?:-(\d+))?)?(?: before| \(|,|$)`)
	readLine = regexp.MustCompile(`^\d+: (.*)$`)
	grepLine = regexp.MustCompile(`^([^:\n]+):(\d+):(.*)$`)
)

// samePath: a notice names an absolute path, the reader's calls use
// workspace-relative ones.
func samePath(a, b string) bool {
	a, b = strings.TrimPrefix(a, "file://"), strings.TrimPrefix(b, "file://")
	return a == b || strings.HasSuffix(a, "/"+b) || strings.HasSuffix(b, "/"+a)
}

func (s *scriptedSession) Next(_ context.Context, msgs []Message, _ []ToolSpec) (Reply, error) {
	evs := parseContext(msgs)
	c := &nextCall{id: fmt.Sprintf("call_%d", len(evs)+1), n: len(evs)}
	// Rule 1.
	if blockedUntilDiff(evs) {
		return c.call("diff", map[string]any{})
	}
	// Rule 2.
	if args := staleRead(evs, msgs); args != nil {
		c.reread()
		return c.call("read_file", args)
	}
	// After a compaction the summary holds what was found: answer.
	if Compacted(msgs) {
		return s.finish(evs, msgs, c.call, c.reread)
	}
	// Rule 3, a session: the plan.
	if len(s.task.Plan) > 0 {
		if done := plannedDone(evs); done < len(s.task.Plan) {
			c.id = fmt.Sprintf("p%d", done)
			return c.planned(done, s.task.Plan[done])
		}
		return s.finish(evs, msgs, c.call, c.reread)
	}
	// Rule 3.
	if name, args := s.nextEvidenceCall(evs); name != "" {
		return c.call(name, args)
	}
	return s.finish(evs, msgs, c.call, c.reread)
}

// nextCall builds the reply of one Next: its id says which rule made it
// ("call_<n>", "r<n>" for a re-read, "p<i>" for plan step i).
type nextCall struct {
	id string
	n  int // tool calls in the context
}

// reread gives the call a re-read's id.
func (c *nextCall) reread() { c.id = fmt.Sprintf("r%d", c.n+1) }

func (c *nextCall) call(name string, args map[string]any) (Reply, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return Reply{}, fmt.Errorf("scripted %s: %w", name, err)
	}
	return Reply{Message: Message{Role: "assistant", ToolCalls: []ToolCall{{ID: c.id, Name: name, Arguments: string(b)}}}}, nil
}

// planArgs turns a plan action into its tool's arguments, by tool.
var planArgs = map[string]func(a tasks.Action) map[string]any{
	"read_file": func(a tasks.Action) map[string]any { return map[string]any{"path": a.Path} },
	"edit": func(a tasks.Action) map[string]any {
		return map[string]any{"path": a.Path, "old_str": a.Old, "new_str": a.New}
	},
	"grep": func(a tasks.Action) map[string]any { return map[string]any{"pattern": a.Pattern} },
	"glob": func(a tasks.Action) map[string]any { return map[string]any{"pattern": a.Pattern} },
	"run":  func(a tasks.Action) map[string]any { return map[string]any{"command": a.Command} },
}

// planned calls plan step i.
func (c *nextCall) planned(i int, a tasks.Action) (Reply, error) {
	args, ok := planArgs[a.Tool]
	if !ok {
		return Reply{}, fmt.Errorf("scripted: plan step %d: unknown tool %q", i, a.Tool)
	}
	return c.call(a.Tool, args(a))
}

// plannedDone counts the plan steps already called (ids "p<i>").
func plannedDone(evs []*event) int {
	done := 0
	for _, e := range evs {
		if strings.HasPrefix(e.call.ID, "p") {
			done++
		}
	}
	return done
}

// blockedUntilDiff is rule 1: the last tool output says the answer waits
// for a diff.
func blockedUntilDiff(evs []*event) bool {
	if len(evs) == 0 {
		return false
	}
	last := evs[len(evs)-1]
	return last.outAt >= 0 && strings.Contains(last.output, "[blocked]") && strings.Contains(last.output, "diff")
}

// staleRead is rule 2: the read_file arguments of the first alert or
// Concord notice that no later read of its file answers, or nil.
func staleRead(evs []*event, msgs []Message) map[string]any {
	for i, m := range msgs {
		if m.Role != "tool" {
			continue
		}
		for _, a := range alertRe.FindAllStringSubmatch(m.Content, -1) {
			if !readAfter(evs, a[1], i) {
				return map[string]any{"path": a[1]}
			}
		}
		for _, n := range noticeRe.FindAllStringSubmatch(m.Content, -1) {
			if !readAfter(evs, n[1], i) {
				return noticeRead(n, m.Content)
			}
		}
	}
	return nil
}

// readAfter: a read_file of path was called after message at.
func readAfter(evs []*event, path string, at int) bool {
	for _, e := range evs {
		if e.call.Name == "read_file" && e.callAt > at && samePath(e.arg("path"), path) {
			return true
		}
	}
	return false
}

// noticeRead is the read a notice asks for (n: noticeRe's submatches).
func noticeRead(n []string, content string) map[string]any {
	// A deleted file's old line numbers mean nothing: read it whole.
	if n[2] == "" || strings.Contains(content, "was deleted") {
		return map[string]any{"path": n[1]}
	}
	lo, _ := strconv.Atoi(n[2])
	hi := lo
	if n[3] != "" {
		hi, _ = strconv.Atoi(n[3])
	}
	return map[string]any{"path": n[1], "start_line": lo, "end_line": hi}
}

// nextEvidenceCall is rule 3 for a question: glob once, then for each
// evidence step grep its pattern and read the file of its first hit. An
// empty name: every step is done.
func (s *scriptedSession) nextEvidenceCall(evs []*event) (string, map[string]any) {
	if findCall(evs, "glob", "", "") == nil {
		return "glob", map[string]any{"pattern": "*"}
	}
	for _, ev := range s.task.Evidence {
		g := findCall(evs, "grep", "pattern", ev.Pattern)
		if g == nil {
			return "grep", map[string]any{"pattern": ev.Pattern}
		}
		if g.outAt < 0 {
			continue
		}
		first := strings.SplitN(g.output, "\n", 2)[0]
		m := grepLine.FindStringSubmatch(first)
		if m == nil {
			continue // no hits
		}
		if !wasRead(evs, m[1]) {
			return "read_file", map[string]any{"path": m[1]}
		}
	}
	return "", nil
}

// findCall returns the first call of tool name (with argument key equal
// to val unless key is empty), or nil.
func findCall(evs []*event, name, key, val string) *event {
	for _, e := range evs {
		if e.call.Name == name && (key == "" || e.arg(key) == val) {
			return e
		}
	}
	return nil
}

// wasRead: a read_file of path was ever called.
func wasRead(evs []*event, path string) bool {
	for _, e := range evs {
		if e.call.Name == "read_file" && samePath(e.arg("path"), path) {
			return true
		}
	}
	return false
}

// finish is rules 4 and 5.
func (s *scriptedSession) finish(evs []*event, msgs []Message, call func(string, map[string]any) (Reply, error), reread func()) (Reply, error) {
	for _, c := range s.task.Probe.Clozes {
		if _, ok := latest(c, msgs); ok {
			continue
		}
		var last *event
		for _, e := range evs {
			if e.call.Name == "read_file" && samePath(e.arg("path"), c.File) {
				last = e
			}
		}
		// Read before, gone now, and the last read was not just now.
		if last != nil && last != evs[len(evs)-1] {
			reread()
			return call("read_file", map[string]any{"path": c.File})
		}
	}
	return call("answer", map[string]any{"answer": Extract(s.task.Probe, msgs)})
}

// visibleLines returns a tool output's lines as evidence text: tool
// decoration stripped, diff lines marked "-" dropped.
func visibleLines(out string) []string {
	var vs []string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "-"):
			continue
		case strings.HasPrefix(l, "+"):
			if m := readLine.FindStringSubmatch(l[1:]); m != nil {
				vs = append(vs, m[1]) // an erratum's changed line, "+N: text"
			} else {
				vs = append(vs, l[1:])
			}
		default:
			if m := readLine.FindStringSubmatch(l); m != nil {
				vs = append(vs, m[1])
			} else if m := grepLine.FindStringSubmatch(l); m != nil {
				vs = append(vs, m[3])
			} else {
				vs = append(vs, l)
			}
		}
	}
	return vs
}

// evidenceMessage: tool results, and user messages after the question
// (reminders, resent files) can carry evidence lines.
func evidenceMessage(msgs []Message, i int) bool {
	switch msgs[i].Role {
	case "tool":
		return true
	case "user":
		return i > 1
	}
	return false
}

// Marked: the message says its own content is stale or gone.
func Marked(content string) bool {
	return strings.Contains(content, "[concord]") || strings.Contains(content, Masked)
}

// erratumRe starts a Concord erratum: it names the call it corrects.
var erratumRe = regexp.MustCompile(`^\[concord\] (Outdated in .+?: |About the output of \S+:|The output of \S+ is current again|The summary in \S+ is (outdated:|current again))`)

// own is a message's own content: without the errata a binding appended
// after it (placement tail or auto), which speak of other calls.
func own(content string) string {
	for i := 0; ; {
		j := strings.Index(content[i:], "\n\n[concord] ")
		if j < 0 {
			return content
		}
		if erratumRe.MatchString(content[i+j+2:]) {
			return content[:i+j]
		}
		i += j + 2
	}
}

// corrected: a Concord erratum placed after the message names its tool
// call (placement tail or auto), which marks the copy as a marker in it would.
func corrected(msgs []Message, i int) bool {
	id := msgs[i].ID()
	if id == "" {
		return false
	}
	// The latest erratum naming the call decides: "current again", or a
	// move that keeps the text, takes back the earlier ones.
	marked := false
	for _, m := range msgs[i:] {
		for _, seg := range segments(m.Content)[1:] {
			if named, current := about(seg, id); named {
				marked = !current
			}
		}
	}
	return marked
}

// stillTrue is what of message i's own content (own, corrected) a reader
// still takes: nothing of a tool output; of a compaction summary (a message
// with an anchor), every line but those the latest correction about it
// says changed (its "-N: text" lines), or nothing when that correction
// names no lines (a file deleted, lines removed, a change too large).
func stillTrue(msgs []Message, i int, own string) string {
	id := msgs[i].Anchor
	if id == "" || msgs[i].ToolCallID != "" {
		return ""
	}
	var latest []string
	for _, m := range msgs[i:] {
		var here []string
		for _, seg := range segments(m.Content)[1:] {
			if strings.HasPrefix(seg, "[concord] The summary in "+id+" is ") {
				here = append(here, seg)
			}
		}
		if len(here) > 0 {
			latest = here
		}
	}
	changed := map[string]bool{}
	for _, seg := range latest {
		lines := strings.Split(seg, "\n")
		named := false
		for _, l := range lines[1:] {
			if m := removedRe.FindStringSubmatch(l); m != nil {
				changed[m[1]], named = true, true
			} else if strings.HasPrefix(l, "+") {
				named = true
			}
		}
		if !named {
			return "" // it names no lines: the whole summary is in doubt
		}
	}
	var keep []string
	for _, l := range strings.Split(own, "\n") {
		if m := readLine.FindStringSubmatch(l); m != nil && changed[m[1]] {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

// removedRe is a correction's line giving a line's old text: "-N: text".
var removedRe = regexp.MustCompile(`^-\d+: (.*)$`)

// about reads one erratum: whether it names call id, and whether it says
// the text of id's copy is current (only its lines moved, or it is current
// again). Errata of one source share a line, "[concord] Outdated in PATH:
// c1 (lines 3-5) is now at lines 5-7; c2, c3 (line 9) changed by ...".
func about(seg, id string) (named, current bool) {
	head, _, _ := strings.Cut(seg, "\n")
	switch {
	case strings.HasPrefix(head, "[concord] About the output of "+id+":"):
		return true, false
	case head == "[concord] The output of "+id+" is current again.", head == "[concord] The summary in "+id+" is current again.":
		return true, true
	case strings.HasPrefix(head, "[concord] The summary in "+id+" is outdated:"):
		return true, false
	case !strings.HasPrefix(head, "[concord] Outdated in "):
		return false, false
	}
	current = true
	for _, c := range strings.Split(head, "; ") {
		if !namesItem(c, id) {
			continue
		}
		named = true
		current = current && (strings.Contains(c, " is now at line") || strings.HasSuffix(strings.TrimSuffix(c, "."), ", text unchanged"))
	}
	return named, named && current
}

// namesItem reports whether an erratum clause lists call id among the
// calls it speaks of ("id (lines 3-5)", "id," or "id " right after ": ",
// ", " or the start).
func namesItem(clause, id string) bool {
	for rest := clause; ; {
		i := strings.Index(rest, id)
		if i < 0 {
			return false
		}
		before, after := rest[:i], rest[i+len(id):]
		if (before == "" || strings.HasSuffix(before, ": ") || strings.HasSuffix(before, ", ")) &&
			(strings.HasPrefix(after, " (") || strings.HasPrefix(after, ",") || strings.HasPrefix(after, " ")) &&
			!strings.HasSuffix(before, "in ") {
			return true
		}
		rest = after
	}
}

// Masked is the placeholder of a masked observation (OpenHands).
const Masked = "<MASKED>"

// ResendPrefix heads Aider's files message and ResendAck is the
// assistant's acknowledgement (aider/coders/base_prompts.py).
const (
	ResendPrefix = "I have *added these files to the chat* so you can go ahead and edit them.\n\n*Trust this message as the true contents of these files!*\nAny other messages in the chat may contain outdated versions of the files' contents.\n"
	ResendAck    = "Ok, any changes I propose will be to those files."
)

// authoritative fills a cloze from a message that says it holds the true
// contents (Aider's files message): both readers do as it says.
func authoritative(c tasks.Cloze, msgs []Message) (string, bool) {
	for _, m := range msgs {
		if m.Role != "user" || !strings.Contains(m.Content, "*Trust this message as the true contents") {
			continue
		}
		for _, l := range visibleLines(m.Content) {
			if v, ok := c.Fill(l); ok {
				return v, true
			}
		}
	}
	return "", false
}

// first fills a cloze from the first copy in the context, skipping
// messages that are marked stale.
func first(c tasks.Cloze, msgs []Message) (string, bool) {
	if v, ok := authoritative(c, msgs); ok {
		return v, true
	}
	for i := range msgs {
		if !evidenceMessage(msgs, i) {
			continue
		}
		text := msgs[i].Content
		if o := own(text); Marked(o) || corrected(msgs, i) {
			text = stillTrue(msgs, i, o) + text[len(o):] // the errata appended to it: their "+N:" lines are current
		}
		for _, l := range visibleLines(text) {
			if v, ok := c.Fill(l); ok {
				return v, true
			}
		}
	}
	return "", false
}

// latest fills a cloze from the last visible matching line.
func latest(c tasks.Cloze, msgs []Message) (string, bool) {
	if v, ok := authoritative(c, msgs); ok {
		return v, true
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if !evidenceMessage(msgs, i) {
			continue
		}
		segs := segments(msgs[i].Content)
		if corrected(msgs, i) {
			segs[0] = stillTrue(msgs, i, segs[0]) // an erratum after it says this copy is outdated: only the errata speak
		}
		for k := len(segs) - 1; k >= 0; k-- {
			seg := segs[k]
			if m := currentAgainRe.FindStringSubmatch(seg); m != nil {
				// "The output of X is current again": X's copy in place is
				// the latest word on its lines, as of this erratum.
				seg = own(toolOutput(msgs, m[1]))
			}
			vs := visibleLines(seg)
			for j := len(vs) - 1; j >= 0; j-- {
				if v, ok := c.Fill(vs[j]); ok {
					return v, true
				}
			}
		}
	}
	return "", false
}

// currentAgainRe is the erratum that takes back an earlier one: the copy in place is true again.
var currentAgainRe = regexp.MustCompile(`^\[concord\] The (?:output of|summary in) (\S+) is current again\.`)

// segments splits a message into its own content and the errata a binding appended after it:
// a note after "\n\n", its errata one per line (each starting as erratumRe says).
func segments(content string) []string {
	var segs []string
	start := 0
	for i := 0; ; {
		j := strings.Index(content[i:], "\n[concord] ")
		if j < 0 {
			return append(segs, content[start:])
		}
		at := i + j
		if erratumRe.MatchString(content[at+1:]) {
			segs = append(segs, strings.TrimSuffix(content[start:at], "\n"))
			start = at + 1
		}
		i = at + 1
	}
}

// toolOutput is the content of the tool message answering call id ("" when none).
func toolOutput(msgs []Message, id string) string {
	for _, m := range msgs {
		if (m.Role == "tool" || m.Anchor != "") && m.ID() == id {
			return m.Content
		}
	}
	return ""
}

// Unknown is the answer when the evidence is not in the context.
const Unknown = "unknown"

// Extract applies a probe to the context (rule 5): the latest copies.
func Extract(p tasks.Probe, msgs []Message) string { return extract(p, msgs, latest) }

// ExtractFirst is the first-copy reader's answer.
func ExtractFirst(p tasks.Probe, msgs []Message) string { return extract(p, msgs, first) }

func extract(p tasks.Probe, msgs []Message, pick func(tasks.Cloze, []Message) (string, bool)) string {
	var vals []string
	for _, c := range p.Clozes {
		v, ok := pick(c, msgs)
		if !ok {
			return Unknown
		}
		vals = append(vals, v)
	}
	switch p.Kind {
	case tasks.ProbeSpan:
		if len(vals) == 1 {
			return vals[0]
		}
	case tasks.ProbeSame:
		if len(vals) == 2 {
			if tasks.Normalize(vals[0]) == tasks.Normalize(vals[1]) {
				return "yes"
			}
			return "no"
		}
	case tasks.ProbeAll:
		return strings.Join(vals, "; ")
	case tasks.ProbeEarlier:
		if len(vals) == len(p.Options) && len(vals) > 0 {
			best, bestN := -1, 0
			for i, v := range vals {
				n, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil {
					return Unknown
				}
				if best < 0 || n < bestN {
					best, bestN = i, n
				}
			}
			return p.Options[best]
		}
	}
	return Unknown
}
