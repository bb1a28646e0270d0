package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/concord-ctx/concord/internal/fakemodel/anthropic"
)

// note is one Concord note as the model received it: a hook's
// additionalContext, which Claude Code puts in a system-reminder after the
// tool result (or the prompt) it answered.
type note struct {
	req  int // index in the fake's requests
	step int // the script step that request took
	text string
}

var noteRE = regexp.MustCompile(`(?s)<system-reminder>\n(\S+) hook additional context: (.*?)\n</system-reminder>`)

// newContent is what a turn request added: the blocks of its last message
// (tool results, a prompt, attachments), as text.
func newContent(r *anthropic.Request) []string {
	ms := r.Messages()
	if len(ms) == 0 {
		return nil
	}
	var out []string
	for _, b := range ms[len(ms)-1].Blocks() {
		switch b.Type {
		case "text":
			out = append(out, b.Text)
		case "tool_result":
			var s string
			if json.Unmarshal(b.Content, &s) == nil {
				out = append(out, s)
				continue
			}
			var bs []anthropic.Block
			_ = json.Unmarshal(b.Content, &bs)
			for _, c := range bs {
				if c.Type == "text" {
					out = append(out, c.Text)
				}
			}
		}
	}
	return out
}

// notes are the Concord notes of every turn request, each where it first
// reached the model.
func notes(reqs []*anthropic.Request) []note {
	var out []note
	for i, r := range reqs {
		if r.Side {
			continue
		}
		for _, c := range newContent(r) {
			for _, m := range noteRE.FindAllStringSubmatch(c, -1) {
				out = append(out, note{req: i, step: r.Step, text: m[2]})
			}
		}
	}
	return out
}

// runtimeReminders counts, per turn request, Claude Code's own
// system-reminders about a watched file (not a hook's).
func runtimeReminders(reqs []*anthropic.Request, watched []string) (map[int]int, []string) {
	out := map[int]int{}
	var texts []string
	re := regexp.MustCompile(`(?s)<system-reminder>(.*?)</system-reminder>`)
	for i, r := range reqs {
		if r.Side {
			continue
		}
		for _, c := range newContent(r) {
			for _, m := range re.FindAllStringSubmatch(c, -1) {
				if strings.Contains(m[1], "hook additional context") {
					continue
				}
				for _, w := range watched {
					if strings.Contains(m[1], w) {
						out[i]++
						texts = append(texts, fmt.Sprintf("request %d: %s", i, m[1]))
						break
					}
				}
			}
		}
	}
	return out, texts
}

// statement is one line of a note with its changed lines.
type statement struct {
	head string
	more []string // "+N: text", "-N: text", "(inserted after line K)"
}

func statements(text string) []statement {
	var out []statement
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "[concord] ") || len(out) == 0 {
			out = append(out, statement{head: line})
			continue
		}
		out[len(out)-1].more = append(out[len(out)-1].more, line)
	}
	return out
}

var (
	outdatedRE = regexp.MustCompile(`^\[concord\] Outdated in (/.+?): (.*)$`)
	aboutRE    = regexp.MustCompile(`^\[concord\] About the output of (.+?): (.*)$`)
	currentRE  = regexp.MustCompile(`^\[concord\] The output of (.+?) is current again\.$`)
	// A compaction summary's correction (docs/protocol.md, "compacted").
	summaryRE      = regexp.MustCompile(`^\[concord\] The summary in (.+?) is outdated: (/\S+?)(?: lines (\d+)-(\d+))?, which it was built from, changed(?: \(now (?:lines \d+-\d+|\d+ lines?)\))?:$`)
	summaryAgainRE = regexp.MustCompile(`^\[concord\] The summary in (.+?) is current again\.$`)
	callsRE        = `((?:toolu_\w+(?: \(lines? \d+(?:-\d+)?\))?)(?:,? (?:and )?toolu_\w+(?: \(lines? \d+(?:-\d+)?\))?)*)`
	callRE         = regexp.MustCompile(`(toolu_\w+)(?: \(lines? (\d+)(?:-(\d+))?\))?`)
	clauseRE       = regexp.MustCompile(`^` + callsRE + ` (.*)$`)
	movedRE        = regexp.MustCompile(`^is now at lines (\d+)-(\d+)\.?$`)
	unchRE         = regexp.MustCompile(`^moved(?: with your edits? .*?)?, text unchanged\.?$`)
	byEditRE       = regexp.MustCompile(`^changed(?: again)? by your edits? .*?(toolu_\w+)\)?\.?$`)
	changedRE      = regexp.MustCompile(`^changed(?:, now (?:lines (\d+)-(\d+)|(\d+) lines))?(:|\. Re-read (/.+?)(?: lines \d+-\d+)? before relying on it\.)$`)
	againRE        = regexp.MustCompile(`^was read again in (toolu_\w+)\.?$`)
	plusRE         = regexp.MustCompile(`^([+-])(\d+): (.*)$`)
	insertedRE     = regexp.MustCompile(`^\(inserted after line \d+\)$`)
	deletedRE      = regexp.MustCompile(`(/\S+?) was deleted`)
	driftRE        = regexp.MustCompile(`^(/\S+?) changed since that read; the content shown earlier(?: \(lines (\d+)-(\d+)\))? is no longer accurate\.(?: Those lines are now lines (\d+)-(\d+)\.)? Re-read .* before relying on it\.$`)
)

// copyOf is a call's copy in place: the file it read and the lines, from
// the first statement that named it.
type copyOf struct {
	path       string
	start, end int // 0, 0: the whole file
}

// judge checks every statement of the notes against the files: now (at
// the request that carried it) and as the call's copy showed them (at the
// request that first carried the call's result). It returns what is false
// or could not be judged, and how many claims it checked.
type judge struct {
	reqs    []*anthropic.Request
	at      func(*anthropic.Request) files
	firstAt map[string]int    // call id -> request that first carried its result
	edits   map[string]string // edit call id -> the file it edited
	copies  map[string]copyOf
	checked int
	bad     []string
}

func newJudge(reqs []*anthropic.Request, at func(*anthropic.Request) files) *judge {
	j := &judge{reqs: reqs, at: at, firstAt: map[string]int{}, edits: map[string]string{}, copies: map[string]copyOf{}}
	for i, r := range reqs {
		for _, tr := range r.ToolResults() {
			if _, ok := j.firstAt[tr.ToolUseID]; !ok {
				j.firstAt[tr.ToolUseID] = i
			}
		}
		for _, m := range r.Messages() {
			for _, b := range m.Blocks() {
				if b.Type != "tool_use" || (b.Name != "Edit" && b.Name != "Write" && b.Name != "MultiEdit") {
					continue
				}
				var in struct {
					FilePath string `json:"file_path"`
				}
				_ = json.Unmarshal(b.Input, &in)
				j.edits[b.ID] = in.FilePath
			}
		}
	}
	return j
}

func lines(content string, ok bool) []string {
	if !ok || content == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(content, "\n"), "\n")
}

func (j *judge) failf(n note, format string, args ...any) {
	j.bad = append(j.bad, fmt.Sprintf("request %d (step %d): ", n.req, n.step)+fmt.Sprintf(format, args...)+"\n  note: "+strings.ReplaceAll(n.text, "\n", "\n        "))
}

// orig is a call's copy: the lines it showed, from the file when its result
// was first sent.
func (j *judge) orig(call string, c copyOf) ([]string, bool) {
	i, ok := j.firstAt[call]
	if !ok {
		return nil, false
	}
	content, ok := j.at(j.reqs[i])[c.path]
	ls := lines(content, ok)
	if c.start == 0 {
		return ls, ok
	}
	if c.end > len(ls) || c.start < 1 {
		return nil, false
	}
	return ls[c.start-1 : c.end], true
}

func (j *judge) check(n note) {
	now := j.at(j.reqs[n.req])
	for _, st := range statements(n.text) {
		switch {
		case outdatedRE.MatchString(st.head):
			m := outdatedRE.FindStringSubmatch(st.head)
			path := m[1]
			content, exists := now[path]
			cur := lines(content, exists)
			clauses := strings.Split(strings.TrimSuffix(m[2], "."), "; ")
			for k, cl := range clauses {
				if k < len(clauses)-1 || !strings.HasSuffix(cl, ":") {
					cl += "."
				}
				j.clause(n, path, cur, exists, cl, st.more)
			}
		case aboutRE.MatchString(st.head):
			m := aboutRE.FindStringSubmatch(st.head)
			if d := deletedRE.FindStringSubmatch(m[2]); d != nil {
				j.checked++
				if _, ok := now[d[1]]; ok {
					j.failf(n, "says %s was deleted; it exists", d[1])
				}
				continue
			}
			if d := driftRE.FindStringSubmatch(m[2]); d != nil {
				// A warning: the copy no longer holds; the lines it names now
				// exist.
				content, exists := now[d[1]]
				cur := lines(content, exists)
				for _, cm := range callRE.FindAllStringSubmatch(m[1], -1) {
					c, ok := j.copies[cm[1]]
					if !ok {
						c = copyOf{path: d[1]}
						if d[2] != "" {
							c.start, _ = strconv.Atoi(d[2])
							c.end, _ = strconv.Atoi(d[3])
						}
					}
					orig, _ := j.orig(cm[1], c)
					j.checked++
					if c.start != 0 && c.end <= len(cur) && strings.Join(cur[c.start-1:c.end], "\n") == strings.Join(orig, "\n") {
						j.failf(n, "says %s no longer holds; the file still shows it", cm[1])
					}
				}
				if d[4] != "" {
					a, _ := strconv.Atoi(d[4])
					b, _ := strconv.Atoi(d[5])
					j.checked++
					if a < 1 || b > len(cur) {
						j.failf(n, "names lines %d-%d of a file of %d lines", a, b, len(cur))
					}
				}
				continue
			}
			j.failf(n, "a notice this judge does not know: %q", st.head)
		case currentRE.MatchString(st.head):
			for _, cm := range callRE.FindAllStringSubmatch(currentRE.FindStringSubmatch(st.head)[1], -1) {
				c, ok := j.copies[cm[1]]
				if !ok {
					j.failf(n, "%s is current again, but no earlier statement named it", cm[1])
					continue
				}
				orig, _ := j.orig(cm[1], c)
				content, exists := now[c.path]
				cur := lines(content, exists)
				if c.start != 0 {
					if c.end > len(cur) {
						cur = nil
					} else {
						cur = cur[c.start-1 : c.end]
					}
				}
				j.checked++
				if !exists || strings.Join(cur, "\n") != strings.Join(orig, "\n") {
					j.failf(n, "%s is said current again: its copy %q, the file now %q", cm[1], orig, cur)
				}
			}
		case summaryRE.MatchString(st.head):
			j.summary(n, now, summaryRE.FindStringSubmatch(st.head)[2], st.more)
		default:
			j.failf(n, "a statement this judge does not know: %q", st.head)
		}
	}
}

// summary judges a compaction summary's correction: each +N line is the
// file's line N now, each -N line was its line N when the session was
// compacted (the first request asking for a summary) and is not now.
func (j *judge) summary(n note, now files, path string, more []string) {
	at := -1
	for i, r := range j.reqs {
		if r.Compaction {
			at = i
			break
		}
	}
	if at < 0 {
		j.failf(n, "a summary's correction, and no compaction")
		return
	}
	content, exists := now[path]
	cur := lines(content, exists)
	oldContent, had := j.at(j.reqs[at])[path]
	old := lines(oldContent, had)
	for _, l := range more {
		m := plusRE.FindStringSubmatch(l)
		if m == nil {
			j.failf(n, "a summary's line this judge does not know: %q", l)
			continue
		}
		k, _ := strconv.Atoi(m[2])
		j.checked++
		switch {
		case m[1] == "+" && (k > len(cur) || cur[k-1] != m[3]):
			j.failf(n, "says line %d of %s is %q now; it is not", k, path, m[3])
		case m[1] == "-" && (k > len(old) || old[k-1] != m[3]):
			j.failf(n, "says the summary saw %q at line %d of %s; the file had not", m[3], k, path)
		case m[1] == "-" && k <= len(cur) && cur[k-1] == m[3]:
			j.failf(n, "says line %d of %s changed from %q; it still is", k, path, m[3])
		}
	}
}

// clause judges one clause about calls of path.
func (j *judge) clause(n note, path string, cur []string, exists bool, cl string, more []string) {
	m := clauseRE.FindStringSubmatch(cl)
	if m == nil {
		j.failf(n, "a clause this judge does not know: %q", cl)
		return
	}
	var calls []string
	for _, cm := range callRE.FindAllStringSubmatch(m[1], -1) {
		c := copyOf{path: path}
		if cm[2] != "" {
			c.start, _ = strconv.Atoi(cm[2])
			c.end = c.start
			if cm[3] != "" {
				c.end, _ = strconv.Atoi(cm[3])
			}
		}
		if _, seen := j.copies[cm[1]]; !seen {
			j.copies[cm[1]] = c
		}
		calls = append(calls, cm[1])
		if _, ok := j.firstAt[cm[1]]; !ok {
			j.failf(n, "names %s, a call whose result the model never received", cm[1])
		}
	}
	verb := m[2]
	contains := func(hay, needle []string) bool {
		if len(needle) == 0 {
			return true
		}
		for i := 0; i+len(needle) <= len(hay); i++ {
			if strings.Join(hay[i:i+len(needle)], "\n") == strings.Join(needle, "\n") {
				return true
			}
		}
		return false
	}
	switch {
	case movedRE.MatchString(verb):
		mm := movedRE.FindStringSubmatch(verb)
		a, _ := strconv.Atoi(mm[1])
		b, _ := strconv.Atoi(mm[2])
		for _, c := range calls {
			orig, ok := j.orig(c, j.copies[c])
			j.checked++
			if !ok || b > len(cur) || strings.Join(cur[a-1:b], "\n") != strings.Join(orig, "\n") {
				j.failf(n, "%s is said to be at lines %d-%d: its copy %q, the file %q", c, a, b, orig, cur)
			}
		}
	case unchRE.MatchString(verb):
		for _, c := range calls {
			orig, ok := j.orig(c, j.copies[c])
			j.checked++
			if !ok || !contains(cur, orig) {
				j.failf(n, "%s said moved with its text unchanged: its copy %q is not in the file %q", c, orig, cur)
			}
		}
	case byEditRE.MatchString(verb):
		edit := byEditRE.FindStringSubmatch(verb)[1]
		j.checked++
		if j.edits[edit] != path {
			j.failf(n, "names %s as the agent's edit of %s; it edited %q", edit, path, j.edits[edit])
		}
	case againRE.MatchString(verb):
		again := againRE.FindStringSubmatch(verb)[1]
		j.checked++
		if _, ok := j.firstAt[again]; !ok {
			j.failf(n, "says read again in %s, a call the model never saw", again)
		}
	case changedRE.MatchString(verb):
		cm := changedRE.FindStringSubmatch(verb)
		if cm[1] != "" {
			a, _ := strconv.Atoi(cm[1])
			b, _ := strconv.Atoi(cm[2])
			j.checked++
			if a < 1 || b > len(cur) || a > b+1 {
				j.failf(n, "claims lines %d-%d of a file of %d lines", a, b, len(cur))
			}
		}
		if cm[3] != "" {
			k, _ := strconv.Atoi(cm[3])
			j.checked++
			if k != len(cur) {
				j.failf(n, "claims %d lines; the file has %d", k, len(cur))
			}
		}
		if !exists {
			j.failf(n, "claims the current lines of %s, which does not exist", path)
		}
		if cm[4] != ":" {
			return
		}
		for _, l := range more {
			if insertedRE.MatchString(l) {
				continue
			}
			pm := plusRE.FindStringSubmatch(l)
			if pm == nil {
				j.failf(n, "a changed line this judge does not know: %q", l)
				continue
			}
			k, _ := strconv.Atoi(pm[2])
			j.checked++
			if pm[1] == "+" {
				if k < 1 || k > len(cur) || cur[k-1] != pm[3] {
					got := "(none)"
					if k >= 1 && k <= len(cur) {
						got = strconv.Quote(cur[k-1])
					}
					j.failf(n, "+%d: %q, but line %d is %s", k, pm[3], k, got)
				}
				continue
			}
			// A removed line is one of the copy's, at the copy's numbering.
			found := false
			for _, c := range calls {
				cp := j.copies[c]
				whole := copyOf{path: cp.path}
				orig, _ := j.orig(c, whole)
				if k >= 1 && k <= len(orig) && orig[k-1] == pm[3] {
					found = true
				}
			}
			if !found {
				j.failf(n, "-%d: %q is not the line the copy showed there", k, pm[3])
			}
		}
	default:
		j.failf(n, "a clause this judge does not know: %q", cl)
	}
}

// repeated lists statements that reached the model twice.
func repeated(ns []note) []string {
	seen := map[string]int{}
	var out []string
	for _, n := range ns {
		for _, st := range statements(n.text) {
			key := st.head + "\n" + strings.Join(st.more, "\n")
			if prev, ok := seen[key]; ok {
				out = append(out, fmt.Sprintf("requests %d and %d: %q", prev, n.req, key))
				continue
			}
			seen[key] = n.req
		}
	}
	return out
}

var ownNoteRE = regexp.MustCompile(`(?s)Note: (/\S+) changed on disk since you last read it\..*?Here are the relevant changes \(shown with line numbers\):\n(.*)`)

// contradictions lists the changed lines of a note that disagree with
// Claude Code's own reminder about the same file in the same request ("N\t
// text" rows of the file as it is now).
func contradictions(reqs []*anthropic.Request, ns []note) []string {
	var out []string
	re := regexp.MustCompile(`(?s)<system-reminder>(.*?)</system-reminder>`)
	for _, n := range ns {
		own := map[string]map[int]string{}
		for _, c := range newContent(reqs[n.req]) {
			for _, m := range re.FindAllStringSubmatch(c, -1) {
				om := ownNoteRE.FindStringSubmatch(m[1])
				if om == nil {
					continue
				}
				rows := map[int]string{}
				for _, row := range strings.Split(om[2], "\n") {
					num, text, ok := strings.Cut(row, "\t")
					if k, err := strconv.Atoi(strings.TrimSpace(num)); ok && err == nil {
						rows[k] = text
					}
				}
				own[om[1]] = rows
			}
		}
		for _, st := range statements(n.text) {
			m := outdatedRE.FindStringSubmatch(st.head)
			if m == nil || own[m[1]] == nil {
				continue
			}
			for _, l := range st.more {
				pm := plusRE.FindStringSubmatch(l)
				if pm == nil || pm[1] != "+" {
					continue
				}
				k, _ := strconv.Atoi(pm[2])
				if text, ok := own[m[1]][k]; ok && text != pm[3] {
					out = append(out, fmt.Sprintf("request %d: ours %q, Claude Code's line %d %q", n.req, l, k, text))
				}
			}
		}
	}
	return out
}
