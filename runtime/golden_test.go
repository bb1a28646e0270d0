package runtime_test

import (
	"github.com/concord-ctx/concord/protocol"

	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/fileadapter"
	"github.com/concord-ctx/concord/locator"
	"github.com/concord-ctx/concord/runtime"
)

var update = flag.Bool("update", false, "rewrite the want.json section of testdata/runtime/*.txtar")

// archive is a txtar-like file: a comment, then "-- name --" sections.
type archive struct {
	comment string
	files   []section
}

type section struct {
	name string
	data string
}

// parseArchive splits a txtar archive; it never fails (text before the
// first marker is the comment).
func parseArchive(s string) archive {
	var a archive
	cur := -1
	var buf strings.Builder
	flush := func() {
		if cur < 0 {
			a.comment = buf.String()
		} else {
			a.files[cur].data = buf.String()
		}
		buf.Reset()
	}
	for len(s) > 0 {
		line := s
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			line, s = s[:i+1], s[i+1:]
		} else {
			s = ""
		}
		t := strings.TrimRight(line, "\r\n")
		if name := markerName(t); name != "" {
			flush()
			a.files = append(a.files, section{name: name})
			cur = len(a.files) - 1
			continue
		}
		buf.WriteString(line)
	}
	flush()
	return a
}

// markerName is the section name of a "-- name --" line, or "".
func markerName(t string) string {
	if len(t) < 7 || !strings.HasPrefix(t, "-- ") || !strings.HasSuffix(t, " --") {
		return ""
	}
	return strings.TrimSpace(t[3 : len(t)-3])
}

func (a archive) format() string {
	var b strings.Builder
	b.WriteString(a.comment)
	for _, f := range a.files {
		fmt.Fprintf(&b, "-- %s --\n", f.name)
		b.WriteString(f.data)
		if f.data != "" && !strings.HasSuffix(f.data, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

func (a archive) get(name string) (string, bool) {
	for _, f := range a.files {
		if f.name == name {
			return f.data, true
		}
	}
	return "", false
}

func (a archive) prefixed(p string) []section {
	var out []section
	for _, f := range a.files {
		if strings.HasPrefix(f.name, p) {
			out = append(out, section{name: strings.TrimPrefix(f.name, p), data: f.data})
		}
	}
	return out
}

// goldenObs is an observation in a scenario: paths relative to the root;
// text defaults to the file's lines at range.
type goldenObs struct {
	Agent   string `json:"agent"`
	Turn    int    `json:"turn"`
	Anchor  string `json:"anchor"`
	Kind    string `json:"kind,omitempty"`
	Sources []struct {
		Path  string          `json:"path"`
		Range *protocol.Range `json:"range,omitempty"`
		Text  *string         `json:"text,omitempty"`
	} `json:"sources"`
	Policy *protocol.Policy `json:"policy,omitempty"`
}

type phaseOut struct {
	Changed map[string][]string            `json:"changed"`
	Sync    map[string]protocol.SyncResult `json:"sync"`
}

type goldenOut struct {
	Observe   []any      `json:"observe"`
	Compacted []any      `json:"compacted,omitempty"`
	Phases    []phaseOut `json:"phases"`
}

var shaRe = regexp.MustCompile(`sha256:([0-9a-f]{12})[0-9a-f]{52}`)

// TestGolden replays each scenario in testdata/runtime: files before, the
// observations, then phases of file changes (after/, delete, again/), each
// reported through the write hook and followed by a sync of every agent.
func TestGolden(t *testing.T) {
	paths, err := filepath.Glob("../testdata/runtime/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			ar := parseArchive(string(raw))
			got := runScenario(t, ar)
			want, _ := ar.get("want.json")
			if *update {
				for i := range ar.files {
					if ar.files[i].name == "want.json" {
						ar.files = append(ar.files[:i], ar.files[i+1:]...)
						break
					}
				}
				ar.files = append(ar.files, section{name: "want.json", data: got})
				if err := os.WriteFile(path, []byte(ar.format()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if strings.TrimSpace(got) != strings.TrimSpace(want) {
				t.Errorf("projection differs (run with -update to accept)\n--- got\n%s\n--- want\n%s", got, want)
			}
		})
	}
}

func runScenario(t *testing.T, ar archive) string {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ar.prefixed("files/") {
		writeFile(t, filepath.Join(root, f.name), f.data)
	}
	var pc protocol.PolicyConfig
	if s, ok := ar.get("policy.json"); ok {
		if err := json.Unmarshal([]byte(s), &pc); err != nil {
			t.Fatalf("policy.json: %v", err)
		}
	}
	placement := runtime.PlacementInplace
	if s, ok := ar.get("placement"); ok {
		placement = strings.TrimSpace(s)
	}
	m := runtime.New(runtime.Config{Options: protocol.InitializeParams{Policy: &pc, Placement: placement}})
	fa, err := fileadapter.New(fileadapter.Config{Roots: []string{root}, Mode: fileadapter.ModeHooks}, m.Hint)
	if err != nil {
		t.Fatal(err)
	}
	m.AddAdapter(fa)
	defer m.Close()
	ctx := context.Background()

	var obs []goldenObs
	s, _ := ar.get("observe.json")
	if err := json.Unmarshal([]byte(s), &obs); err != nil {
		t.Fatalf("observe.json: %v", err)
	}
	var out goldenOut
	agents := map[string]bool{}
	for _, o := range obs {
		ro := protocol.ObserveParams{Agent: o.Agent, Turn: o.Turn, Anchor: o.Anchor, Kind: protocol.Kind(o.Kind), Policy: o.Policy}
		agents[o.Agent] = true
		for _, src := range o.Sources {
			p := filepath.Join(root, src.Path)
			ref := protocol.Source{URI: "file://" + p, Range: src.Range}
			if src.Text != nil {
				ref.Text = *src.Text
			} else {
				b, _ := os.ReadFile(p)
				ref.Text = string(b)
				if src.Range != nil {
					ls := locator.SplitLines(string(b))
					ref.Text = locator.JoinLines(ls[src.Range.Start-1 : src.Range.End])
				}
			}
			ro.Sources = append(ro.Sources, ref)
		}
		r, err := m.Observe(ctx, ro)
		if err != nil {
			out.Observe = append(out.Observe, map[string]string{"error": err.Error()})
			continue
		}
		out.Observe = append(out.Observe, r)
	}
	names := make([]string, 0, len(agents))
	for a := range agents {
		names = append(names, a)
	}
	sort.Strings(names)
	// compact.json: compactions after the observations (each agent synced
	// first, so what they replaced was sent), then a sync that says the
	// prompt was rebuilt, as a binding's.
	if s, ok := ar.get("compact.json"); ok {
		var cs []protocol.CompactedParams
		if err := json.Unmarshal([]byte(s), &cs); err != nil {
			t.Fatalf("compact.json: %v", err)
		}
		for _, a := range names {
			if _, err := m.Sync(ctx, protocol.SyncParams{Agent: a, Turn: 1}); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range cs {
			r, err := m.Compacted(ctx, c)
			if err != nil {
				out.Compacted = append(out.Compacted, map[string]string{"error": err.Error()})
				continue
			}
			out.Compacted = append(out.Compacted, r)
			if _, err := m.Sync(ctx, protocol.SyncParams{Agent: c.Agent, Turn: 2, PrefixRebuilt: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	turn := 10
	for _, phase := range []string{"after/", "again/"} {
		files := ar.prefixed(phase)
		del, hasDel := ar.get(strings.TrimSuffix(phase, "/") + ".delete")
		if len(files) == 0 && !hasDel {
			continue
		}
		po := phaseOut{Changed: map[string][]string{}, Sync: map[string]protocol.SyncResult{}}
		var touched []string
		for _, f := range files {
			writeFile(t, filepath.Join(root, f.name), f.data)
			touched = append(touched, f.name)
		}
		for _, n := range strings.Fields(del) {
			if err := os.Remove(filepath.Join(root, n)); err != nil {
				t.Fatal(err)
			}
			touched = append(touched, n)
		}
		for _, n := range touched {
			cr, err := m.SourceChanged(ctx, protocol.SourceChangedParams{URI: "file://" + filepath.Join(root, n), Agent: "main"})
			if err != nil {
				t.Fatalf("sourceChanged %s: %v", n, err)
			}
			po.Changed[n] = cr.Blocks
		}
		for _, a := range names {
			r, err := m.Sync(ctx, protocol.SyncParams{Agent: a, Turn: turn})
			if err != nil {
				t.Fatalf("sync %s: %v", a, err)
			}
			po.Sync[a] = r
		}
		turn += 10
		out.Phases = append(out.Phases, po)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		t.Fatal(err)
	}
	res := strings.ReplaceAll(buf.String(), root, "$ROOT")
	return shaRe.ReplaceAllString(res, "sha256:$1…")
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func FuzzParseArchive(f *testing.F) {
	f.Add("comment\n-- a --\nx\n-- b --\n")
	f.Add("-- --\n-- x --")
	f.Fuzz(func(t *testing.T, s string) {
		a := parseArchive(s)
		b := parseArchive(a.format())
		if len(a.files) != len(b.files) {
			t.Fatalf("round trip changed the sections: %d -> %d", len(a.files), len(b.files))
		}
		for i := range a.files {
			if a.files[i].name != b.files[i].name {
				t.Fatalf("section %d: %q -> %q", i, a.files[i].name, b.files[i].name)
			}
		}
	})
}
