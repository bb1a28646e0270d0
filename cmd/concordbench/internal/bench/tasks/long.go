package tasks

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// The long workload: coding sessions of 30-60 tool calls on a small Python
// package. The agent lists the files, views them, greps for definitions,
// edits them with its own edit tool (each edit answers with a snippet of
// the edited lines, as OpenHands' str_replace_editor does), views them
// again and runs the tests. The mix follows what 500 real OpenHands
// SWE-bench sessions show: about 31% of tool results are edit snippets and
// 14% file views; the rest are command output (runs), greps and listings.
//
// Outside writes (a user's save, a formatter) change files the agent has
// seen: two of them change a constant the agent viewed and never views
// again (the probe: at the end it must report their current values), others
// insert lines at the top of a viewed file (every later line shifts).

var (
	longModules = []string{"billing", "inventory", "shipping", "accounts", "reports", "scheduler", "notify", "search", "audit", "pricing"}
	longVerbs   = []string{"load", "merge", "split", "score", "rank", "sync", "check", "apply", "build", "flush", "count", "route"}
	longNouns   = []string{"orders", "items", "rules", "events", "batches", "rates", "users", "slots", "tickets", "queues"}
	longAttrs   = []string{"weight", "price", "size", "quantity", "priority", "delay"}
	longConsts  = []string{"TIMEOUT", "RETRIES", "BATCH_SIZE", "MAX_ITEMS", "POOL_SIZE", "RATE_LIMIT"}
)

type longFunc struct{ name, def, doc, log string }

// longFile builds one module: a header with three constants, then
// functions of seven lines each.
func longFile(r *rand.Rand, mod string) (string, []longFunc, []string) {
	var b strings.Builder
	fmt.Fprintf(&b, "\"\"\"The %s module.\"\"\"\nimport logging\n\n", mod)
	up := strings.ToUpper(mod)
	var consts []string
	for _, i := range r.Perm(len(longConsts))[:3] {
		c := fmt.Sprintf("%s_%s = %d", up, longConsts[i], 2+r.IntN(98))
		consts = append(consts, c)
		b.WriteString(c + "\n")
	}
	fmt.Fprintf(&b, "\nlog = logging.getLogger(%q)\n", mod)
	var fns []longFunc
	used := map[string]bool{}
	for len(fns) < 6+r.IntN(3) {
		name := fmt.Sprintf("%s_%s", longVerbs[r.IntN(len(longVerbs))], longNouns[r.IntN(len(longNouns))])
		if used[name] {
			continue
		}
		used[name] = true
		f := longFunc{
			name: name,
			def:  fmt.Sprintf("def %s(items, limit=%d):", name, 10*(1+r.IntN(20))),
			doc:  fmt.Sprintf("    \"\"\"%s the %s of %s.\"\"\"", strings.Title(strings.SplitN(name, "_", 2)[0]), strings.SplitN(name, "_", 2)[1], mod), //nolint:staticcheck // ASCII words
			log:  fmt.Sprintf("    log.debug(\"%s %s %%d\", total)", mod, name),
		}
		fns = append(fns, f)
		fmt.Fprintf(&b, "\n\n%s\n%s\n    total = 0\n    for item in items[:limit]:\n        total += item.%s * %d\n%s\n    return total\n",
			f.def, f.doc, longAttrs[r.IntN(len(longAttrs))], 1+r.IntN(9), f.log)
	}
	return b.String(), fns, consts
}

type longGen struct {
	r      *rand.Rand
	files  []string          // paths
	text   map[string]string // simulated content
	fns    map[string][]longFunc
	consts map[string][]string
	edited map[string]int // edits done per function name
	plan   []Action
	events []Event
	frozen map[string]bool // probe files: never touched again by the plan
}

// Long generates n coding sessions from seed.
func Long(seed uint64, n int) []Task {
	var out []Task
	for i := 0; len(out) < n; i++ {
		t, err := longTask(seed, i)
		if err != nil {
			continue
		}
		out = append(out, t)
	}
	return out
}

func longTask(seed uint64, i int) (Task, error) {
	r := rand.New(rand.NewPCG(seed^0x6c6f6e67, uint64(i)))
	g := &longGen{r: r, text: map[string]string{}, fns: map[string][]longFunc{}, consts: map[string][]string{},
		edited: map[string]int{}, frozen: map[string]bool{}}
	t := Task{ID: fmt.Sprintf("long-%d-%03d", seed, i), Type: "session", Source: "synthetic"}
	for _, mi := range r.Perm(len(longModules))[:5] {
		mod := longModules[mi]
		path := "src/" + mod + ".py"
		text, fns, consts := longFile(r, mod)
		g.files = append(g.files, path)
		g.text[path], g.fns[path], g.consts[path] = text, fns, consts
		t.Paragraphs = append(t.Paragraphs, Paragraph{Title: mod, File: path, Sentences: strings.Split(strings.TrimSuffix(text, "\n"), "\n")})
	}
	calls := 30 + r.IntN(31)
	nEdit, nView := (calls*31+50)/100, (calls*14+50)/100
	nGrep, nList := (calls*15+50)/100, max(1, (calls*5+50)/100)
	nRun := calls - nEdit - nView - nGrep - nList
	// The probe files are viewed early; their constant changes a few
	// calls later, and the plan never shows them again.
	probes := []string{g.files[0], g.files[1]}
	kinds := make([]string, 0, calls)
	for k, c := range map[string]int{"edit": nEdit, "view": nView - len(probes), "grep": nGrep, "glob": nList - 1, "run": nRun} {
		for range c {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	r.Shuffle(len(kinds), func(a, b int) { kinds[a], kinds[b] = kinds[b], kinds[a] })
	g.add(Action{Tool: "glob", Pattern: "**"})
	cur := ""
	var answer []string
	probeAt := map[int]string{max(2, calls/6): probes[0], max(4, calls/3): probes[1]}
	for _, k := range kinds {
		if p, ok := probeAt[len(g.plan)]; ok {
			g.add(Action{Tool: "read_file", Path: p})
			idx := len(g.plan) - 1
			c := g.consts[p][1]
			name := strings.SplitN(c, " = ", 2)[0]
			var v int
			fmt.Sscanf(strings.SplitN(c, " = ", 2)[1], "%d", &v)
			nv := v + 1 + r.IntN(20)
			g.event(Event{After: idx + 2 + r.IntN(3), File: p, Old: c, New: fmt.Sprintf("%s = %d", name, nv), Kind: "value"})
			answer = append(answer, fmt.Sprint(nv))
			t.Probe.Clozes = append(t.Probe.Clozes, Cloze{File: p, Line: 4 + 1, Prefix: name + " = "})
			g.frozen[p] = true
			if cur == p {
				cur = ""
			}
		}
		if cur == "" || g.frozen[cur] || (k == "view" && r.IntN(2) == 0) {
			cur = g.pick()
		}
		switch k {
		case "view":
			g.add(Action{Tool: "read_file", Path: cur})
		case "edit":
			g.edit(cur)
		case "grep":
			fns := g.fns[cur]
			g.add(Action{Tool: "grep", Pattern: "def " + fns[r.IntN(len(fns))].name})
		case "glob":
			g.add(Action{Tool: "glob", Pattern: "src/*.py"})
		case "run":
			mod := strings.TrimSuffix(strings.TrimPrefix(cur, "src/"), ".py")
			g.add(Action{Tool: "run", Command: "python -m pytest tests/test_" + mod + ".py -q"})
		}
	}
	// Formatter-style writes: a line inserted at the top of two files the
	// agent works on, half way through and near the end.
	for _, at := range []int{len(g.plan) / 2, len(g.plan) * 4 / 5} {
		f := g.pick()
		doc := strings.SplitN(g.text[f], "\n", 2)[0] + "\n"
		g.event(Event{After: at, File: f, Old: doc, New: doc + fmt.Sprintf("# formatted by the pre-commit hook (run %d)\n", at), Kind: "shift"})
	}
	t.Plan, t.Events = g.plan, g.events
	t.Probe.Kind = ProbeAll
	t.Answer = strings.Join(answer, "; ")
	t.Question = fmt.Sprintf("Work on the package, then report the current values of %s.", probeNames(t.Probe))
	if len(answer) != 2 {
		return Task{}, fmt.Errorf("%s: %d probes", t.ID, len(answer))
	}
	return t, nil
}

func probeNames(p Probe) string {
	var ns []string
	for _, c := range p.Clozes {
		ns = append(ns, strings.TrimSuffix(c.Prefix, " = "))
	}
	return strings.Join(ns, " and ")
}

func (g *longGen) add(a Action) { g.plan = append(g.plan, a) }

// event records an outside write; the simulated text follows it so later
// edits quote what will be on disk.
func (g *longGen) event(e Event) {
	g.text[e.File] = strings.Replace(g.text[e.File], e.Old, e.New, 1)
	g.events = append(g.events, e)
}

// pick is a file the plan may still touch.
func (g *longGen) pick() string {
	for {
		f := g.files[g.r.IntN(len(g.files))]
		if !g.frozen[f] {
			return f
		}
	}
}

// edit changes one function of f: a new default limit, a guard inserted
// after the docstring (later lines shift down), or the log line deleted
// (later lines shift up). Each function gets each kind at most once.
func (g *longGen) edit(f string) {
	fns := g.fns[f]
	for try := 0; try < 3*len(fns); try++ {
		fi := g.r.IntN(len(fns))
		fn := &fns[fi]
		n := g.edited[f+fn.name]
		var a Action
		switch n {
		case 0:
			nd := strings.Replace(fn.def, "limit=", fmt.Sprintf("limit=%d + ", 1+g.r.IntN(9)), 1)
			a = Action{Tool: "edit", Path: f, Old: fn.def, New: nd}
			fn.def = nd
		case 1:
			a = Action{Tool: "edit", Path: f, Old: fn.doc + "\n", New: fn.doc + "\n    if not items:\n        return 0\n"}
		case 2:
			a = Action{Tool: "edit", Path: f, Old: fn.log + "\n", New: ""}
		default:
			continue
		}
		if strings.Count(g.text[f], a.Old) != 1 {
			continue
		}
		g.text[f] = strings.Replace(g.text[f], a.Old, a.New, 1)
		g.edited[f+fn.name] = n + 1
		g.add(a)
		return
	}
	// Every function of f is fully edited: run its tests instead.
	g.add(Action{Tool: "run", Command: "python -m pytest -q"})
}
