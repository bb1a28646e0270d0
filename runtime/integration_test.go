package runtime_test

import (
	"fmt"

	"github.com/concord-ctx/concord/protocol"

	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concord-ctx/concord/fileadapter"
	"github.com/concord-ctx/concord/runtime"
)

// fileEnv is a Manager with the real file adapter over a temp root.
type fileEnv struct {
	t    *testing.T
	root string
	m    *runtime.Manager
	fa   *fileadapter.Adapter
	mu   sync.Mutex
	hits map[string]int // OnChange calls per agent
}

func newFileEnv(t *testing.T, mode string, pc protocol.PolicyConfig) *fileEnv {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &fileEnv{t: t, root: root, hits: map[string]int{}}
	e.m = runtime.New(runtime.Config{Options: protocol.InitializeParams{Policy: &pc, Placement: runtime.PlacementInplace}, OnChange: func(agents []string) {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, a := range agents {
			e.hits[a]++
		}
	}})
	e.fa, err = fileadapter.New(fileadapter.Config{Roots: []string{root}, Mode: mode, MaxBytes: 1 << 16,
		PollInterval: 10 * time.Millisecond}, e.m.Hint)
	if err != nil {
		t.Fatal(err)
	}
	e.m.AddAdapter(e.fa)
	t.Cleanup(func() { e.m.Close() })
	return e
}

func (e *fileEnv) path(n string) string { return filepath.Join(e.root, n) }

func (e *fileEnv) onChange(agent string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hits[agent]
}

func (e *fileEnv) observe(agent, anchor, name string, s, end int, text string) (protocol.ObserveResult, error) {
	return e.m.Observe(context.Background(), protocol.ObserveParams{Agent: agent, Turn: 1, Anchor: anchor,
		Sources: []protocol.Source{{URI: "file://" + e.path(name), Range: &protocol.Range{Start: s, End: end}, Text: text}}})
}

func (e *fileEnv) sync(agent string) protocol.SyncResult {
	e.t.Helper()
	r, err := e.m.Sync(context.Background(), protocol.SyncParams{Agent: agent, Turn: 2})
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

const cfg = "name: demo\nport: 8080\ndebug: false\nlog: info\n"

// TestFileWatchEndToEnd: an out-of-band edit (a real fsnotify event, or a
// poll) reaches OnChange without any call from the client, and the next
// sync carries the patch.
func TestFileWatchEndToEnd(t *testing.T) {
	for _, mode := range []string{fileadapter.ModeFsnotify, fileadapter.ModePoll} {
		t.Run(mode, func(t *testing.T) {
			e := newFileEnv(t, mode, protocol.PolicyConfig{})
			writeFile(t, e.path("config.yaml"), cfg)
			o, err := e.observe("main", "call_1", "config.yaml", 1, 3, "name: demo\nport: 8080\ndebug: false")
			if err != nil || o.Status != protocol.Valid {
				t.Fatalf("observe %+v %v", o, err)
			}
			// An editor's atomic save: write a temp file, rename it over.
			tmp := e.path(".config.yaml.tmp")
			writeFile(t, tmp, strings.Replace(cfg, "8080", "9090", 1))
			if err := os.Rename(tmp, e.path("config.yaml")); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, "OnChange for main", func() bool { return e.onChange("main") > 0 })
			r := e.sync("main")
			if len(r.Blocks) != 1 || r.Blocks[0].Status != protocol.Patched || r.Blocks[0].Sources[0].Text != "name: demo\nport: 9090\ndebug: false" {
				t.Fatalf("sync %+v", r)
			}
		})
	}
}

// TestFileDeleteAndComeBack with real files and the verify pass (hooks mode).
func TestFileDeleteAndComeBack(t *testing.T) {
	e := newFileEnv(t, fileadapter.ModeHooks, protocol.PolicyConfig{})
	writeFile(t, e.path("a/b.txt"), "one\ntwo\nthree\n")
	if _, err := e.observe("main", "c1", "a/b.txt", 2, 3, "two\nthree"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(e.path("a/b.txt")); err != nil {
		t.Fatal(err)
	}
	r := e.sync("main")
	if len(r.Blocks) != 1 || r.Blocks[0].Status != protocol.Invalid || r.Blocks[0].Notice !=
		"[concord] "+e.path("a/b.txt")+" was deleted after this read; the content shown earlier (lines 2-3) is no longer accurate. Re-read "+e.path("a/b.txt")+" lines 2-3 (check whether it still exists) before relying on it." {
		t.Fatalf("after delete %+v", r)
	}
	writeFile(t, e.path("a/b.txt"), "zero\none\ntwo\nthree\n")
	r = e.sync("main")
	if len(r.Blocks) != 1 || r.Blocks[0].Status != protocol.Patched || r.Blocks[0].Reason != "moved: lines 2-3 -> 3-4" {
		t.Fatalf("after return %+v", r)
	}
}

// TestFileWriteHook: the runtime's own write tool reports through
// SourceChanged; the disk is the truth even when the reported text differs.
func TestFileWriteHook(t *testing.T) {
	e := newFileEnv(t, fileadapter.ModeHooks, protocol.PolicyConfig{})
	writeFile(t, e.path("config.yaml"), cfg)
	o, _ := e.observe("main", "call_1", "config.yaml", 1, 3, "name: demo\nport: 8080\ndebug: false")
	o2, _ := e.observe("sub-1", "call_9", "config.yaml", 2, 2, "port: 8080")
	writeFile(t, e.path("config.yaml"), strings.Replace(cfg, "8080", "9090", 1))
	stale := "something else entirely"
	cr, err := e.m.SourceChanged(context.Background(), protocol.SourceChangedParams{URI: "file://" + e.path("config.yaml"), Agent: "sub-1", Text: &stale})
	if err != nil || len(cr.Blocks) != 2 || cr.Blocks[0] != o.Block || cr.Blocks[1] != o2.Block {
		t.Fatalf("sourceChanged %+v %v", cr, err)
	}
	// One agent's write repairs the other agent's read.
	r := e.sync("main")
	if len(r.Blocks) != 1 || r.Blocks[0].Sources[0].Text != "name: demo\nport: 9090\ndebug: false" {
		t.Fatalf("sync %+v", r)
	}
}

func TestFileSourceErrors(t *testing.T) {
	e := newFileEnv(t, fileadapter.ModeHooks, protocol.PolicyConfig{})
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	writeFile(t, filepath.Join(outside, "secret"), "s\n")
	writeFile(t, e.path("bin.dat"), "a\x00b\n")
	writeFile(t, e.path("big.txt"), strings.Repeat("x", 1<<16+1))
	if err := os.Symlink(filepath.Join(outside, "secret"), e.path("link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		uri  string
		want error
	}{
		{"file://" + filepath.Join(outside, "secret"), runtime.ErrOutsideRoots},
		{"file://" + e.path("link"), runtime.ErrOutsideRoots},
		// Over the size cap nothing tells whether an untouched file's read
		// is still true: refused, never a false "changed" (issue 19).
		{"file://" + e.path("big.txt"), runtime.ErrTooLarge},
	}
	for _, tc := range tests {
		_, err := e.m.Observe(context.Background(), protocol.ObserveParams{Agent: "main", Anchor: "c",
			Sources: []protocol.Source{{URI: tc.uri, Range: &protocol.Range{Start: 1, End: 1}, Text: "x"}}})
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.uri, err, tc.want)
		}
	}
	if st := e.m.Stats(); len(st.Blocks) != 0 || e.fa.Watched() != 0 {
		t.Fatalf("refused observations left state: %+v watched=%d", st, e.fa.Watched())
	}
	// A file unavailable by the time the read is registered is tracked as
	// an invalid block whose notice the next sync carries (issue 10 bug 4).
	for i, tc := range []struct{ uri, notice string }{
		{"file://" + e.path("bin.dat"), "(binary)"},
		{"file://" + e.path("missing.txt"), "was deleted"},
		{"file://" + e.root, "could not be re-read"},
	} {
		agent := fmt.Sprint("a", i)
		o, err := e.m.Observe(context.Background(), protocol.ObserveParams{Agent: agent, Anchor: "c",
			Sources: []protocol.Source{{URI: tc.uri, Text: "x"}}})
		if err != nil || o.Status != protocol.Invalid {
			t.Errorf("%s: %+v %v, want an invalid block", tc.uri, o, err)
			continue
		}
		r := e.sync(agent)
		if len(r.Blocks) != 1 || r.Blocks[0].Block != o.Block || !strings.Contains(r.Blocks[0].Notice, tc.notice) {
			t.Errorf("%s: sync %+v, want the notice %q", tc.uri, r, tc.notice)
		}
	}
}

// TestFileBecomesUnreadable: a tracked file that turns binary or grows
// over the size cap did change: its blocks go invalid with a notice
// instead of failing the sync.
func TestFileBecomesUnreadable(t *testing.T) {
	for _, tc := range []struct{ name, content, notice string }{
		{"binary", "a\x00\nb\n", "could not be re-read (binary)"},
		{"too large", "a\n" + strings.Repeat("x", 1<<16+1), "could not be re-read (too large)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newFileEnv(t, fileadapter.ModeHooks, protocol.PolicyConfig{})
			writeFile(t, e.path("f.txt"), "a\nb\n")
			if _, err := e.observe("main", "c1", "f.txt", 1, 1, "a"); err != nil {
				t.Fatal(err)
			}
			writeFile(t, e.path("f.txt"), tc.content)
			r := e.sync("main")
			if len(r.Blocks) != 1 || r.Blocks[0].Status != protocol.Invalid || !strings.Contains(r.Blocks[0].Notice, tc.notice) {
				t.Fatalf("sync %+v", r)
			}
		})
	}
}

// TestWatchesFollowBlocks: watches are taken with the first block on a file
// and dropped with the last (released or superseded).
func TestWatchesFollowBlocks(t *testing.T) {
	e := newFileEnv(t, fileadapter.ModeFsnotify, protocol.PolicyConfig{})
	writeFile(t, e.path("f.txt"), "a\nb\nc\n")
	o1, _ := e.observe("main", "c1", "f.txt", 1, 1, "a")
	o2, _ := e.observe("main", "c2", "f.txt", 1, 3, "a\nb\nc")
	if len(o2.Superseded) != 1 || o2.Superseded[0] != o1.Block || e.fa.Watched() != 1 {
		t.Fatalf("observe %+v watched=%d", o2, e.fa.Watched())
	}
	if _, err := e.m.Release(context.Background(), protocol.ReleaseParams{Blocks: []string{o2.Block}}); err != nil {
		t.Fatal(err)
	}
	if e.fa.Watched() != 0 {
		t.Fatalf("watched %d after the last block was released", e.fa.Watched())
	}
}

// TestImports enforces the layering: the core imports no watcher, no
// transport and no adapter; the keyed adapter touches no file system.
func TestImports(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not in PATH")
	}
	list := func(pkg string, args ...string) map[string]bool {
		out, err := exec.Command("go", append(append([]string{"list"}, args...), pkg)...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		set := map[string]bool{}
		for _, d := range strings.Fields(string(out)) {
			set[d] = true
		}
		return set
	}
	const mod = "github.com/concord-ctx/concord/"
	deps := list(mod+"runtime", "-deps")
	for _, b := range []string{"github.com/fsnotify/fsnotify", "github.com/sourcegraph/jsonrpc2", "github.com/nats-io/nats.go",
		mod + "fileadapter", mod + "rpc", mod + "feed", mod + "feed/natsfeed"} {
		if deps[b] {
			t.Errorf("runtime depends on %s", b)
		}
	}
	deps = list(mod+"runtime/keyed", "-deps")
	direct := list(mod+"runtime/keyed", "-f", "{{join .Imports \" \"}}")
	for _, b := range []string{"github.com/fsnotify/fsnotify", mod + "fileadapter"} {
		if deps[b] {
			t.Errorf("runtime/keyed depends on %s", b)
		}
	}
	for _, b := range []string{"os", "io/fs", "path/filepath", "syscall"} {
		if direct[b] {
			t.Errorf("runtime/keyed imports %s: it must not touch the file system", b)
		}
	}
	// The wire types are pure: the standard library only, so that the
	// core, the client and a benchmark can share them without weight.
	for d := range list(mod+"protocol", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}") {
		if d != mod+"protocol" {
			t.Errorf("protocol depends on %s", d)
		}
	}
}

// BenchmarkSyncUnchangedFiles: the verify pass with real files: 1,000 files,
// 10,000 blocks, one agent; nothing changed, so one stat per file.
func BenchmarkSyncUnchangedFiles(b *testing.B) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	m := runtime.New(runtime.Config{})
	fa, err := fileadapter.New(fileadapter.Config{Roots: []string{root}, Mode: fileadapter.ModeHooks}, m.Hint)
	if err != nil {
		b.Fatal(err)
	}
	m.AddAdapter(fa)
	defer m.Close()
	ctx := context.Background()
	var lines []string
	for i := 0; i < 100; i++ {
		lines = append(lines, strings.Repeat("x", i%60)+" line")
	}
	content := strings.Join(lines, "\n") + "\n"
	for f := 0; f < 1000; f++ {
		p := filepath.Join(root, "d"+string(rune('a'+f%20)), "f"+strings.Repeat("0", 3)+string(rune('a'+f%26))+time.Duration(f).String()+".txt")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		for k := 0; k < 10; k++ {
			s := 1 + k*10
			if _, err := m.Observe(ctx, protocol.ObserveParams{Agent: "main", Turn: 1, Anchor: p + string(rune('0'+k)),
				Sources: []protocol.Source{{URI: "file://" + p, Range: &protocol.Range{Start: s, End: s + 4}, Text: strings.Join(lines[s-1:s+4], "\n")}}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if st := m.Stats(); st.Sources != 1000 || st.Blocks[protocol.Valid] != 10000 {
		b.Fatalf("setup: %+v", st)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r, err := m.Sync(ctx, protocol.SyncParams{Agent: "main", Turn: 2}); err != nil || len(r.Blocks) != 0 {
			b.Fatalf("%v %d", err, len(r.Blocks))
		}
	}
}

// TestEncodingsReadAsTheToolShowedThem: a read of a file with a UTF-8 byte order mark, or of a
// Latin-1 file, is a true read however the tool decoded it (issue 10: a Latin-1 read decoded
// correctly was invalid at once, which loops an agent that obeys the re-read notice). A later
// edit elsewhere in the file leaves the block valid; an edit inside it is still seen.
func TestEncodingsReadAsTheToolShowedThem(t *testing.T) {
	tests := []struct {
		name, file string // file: raw bytes on disk
		shown      string // what the tool showed for lines 1-2
		edit       string // raw bytes after an edit inside lines 1-2
	}{
		{"BOM kept by the tool", "\xef\xbb\xbfname: demo\nport: 8080\nend\n", "\ufeffname: demo\nport: 8080", "\xef\xbb\xbfname: demo\nport: 9090\nend\n"},
		{"BOM dropped by the tool", "\xef\xbb\xbfname: demo\nport: 8080\nend\n", "name: demo\nport: 8080", "\xef\xbb\xbfname: demo\nport: 9090\nend\n"},
		{"Latin-1 decoded as Latin-1", "caf\xe9 au lait\nprice: 4\nend\n", "café au lait\nprice: 4", "caf\xe9 au lait\nprice: 5\nend\n"},
		{"Latin-1 decoded with U+FFFD", "caf\xe9 au lait\nprice: 4\nend\n", "caf\ufffd au lait\nprice: 4", "caf\xe9 au lait\nprice: 5\nend\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newFileEnv(t, fileadapter.ModeHooks, protocol.PolicyConfig{})
			writeFile(t, e.path("f.txt"), tt.file)
			o, err := e.observe("main", "call_1", "f.txt", 1, 2, tt.shown)
			if err != nil || o.Status != protocol.Valid {
				t.Fatalf("observe: %+v %v; want valid", o, err)
			}
			writeFile(t, e.path("f.txt"), strings.Replace(tt.file, "end", "the end", 1))
			if r := e.sync("main"); len(r.Blocks) != 0 {
				t.Fatalf("an edit below the read changed it: %+v", r.Blocks)
			}
			writeFile(t, e.path("f.txt"), tt.edit)
			r := e.sync("main")
			if len(r.Blocks) != 1 || r.Blocks[0].Status != protocol.Patched || strings.ContainsRune(r.Blocks[0].Sources[0].Text, '\ufeff') {
				t.Fatalf("after an edit inside the read: %+v; want it patched, without a byte order mark", r.Blocks)
			}
		})
	}
}

// TestDriftOfAWholeFileRead: a rewrite that no locator can follow is
// suppressed with a re-read notice, except for a read that showed the whole
// file: the re-read would return exactly the current text, so it goes in
// place (up to MaxWholeRefreshBytes), unless the policy chose drift itself.
func TestDriftOfAWholeFileRead(t *testing.T) {
	old := "alpha one\nbeta two\ngamma three\ndelta four"
	rewritten := "completely\ndifferent\ncontent here\nnow\nand longer"
	big := strings.Repeat("a much longer line of brand new text\n", runtime.MaxWholeRefreshBytes/36+1)
	suppress := protocol.PolicyConfig{Global: protocol.Policy{Drift: protocol.Suppress}}
	tests := []struct {
		name       string
		start, end int
		shown      string
		now        string
		policy     protocol.PolicyConfig
		wantStatus protocol.Status
		wantText   string
	}{
		{"the whole file, lines 1 to the last", 1, 4, old, rewritten, protocol.PolicyConfig{}, protocol.Patched, rewritten},
		{"a span inside the file", 2, 3, "beta two\ngamma three", rewritten, protocol.PolicyConfig{}, protocol.Invalid, ""},
		{"lines 1 to the last, too big to refresh", 1, 4, old, big, protocol.PolicyConfig{}, protocol.Invalid, ""},
		{"the policy chose drift: suppress", 1, 4, old, rewritten, suppress, protocol.Invalid, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newFileEnv(t, fileadapter.ModeHooks, tc.policy)
			writeFile(t, e.path("f.txt"), old)
			if _, err := e.observe("main", "call_1", "f.txt", tc.start, tc.end, tc.shown); err != nil {
				t.Fatal(err)
			}
			writeFile(t, e.path("f.txt"), tc.now)
			if _, err := e.m.SourceChanged(context.Background(), protocol.SourceChangedParams{URI: "file://" + e.path("f.txt")}); err != nil {
				t.Fatal(err)
			}
			r := e.sync("main")
			if len(r.Blocks) != 1 || r.Blocks[0].Status != tc.wantStatus {
				t.Fatalf("sync %+v, want status %s", r, tc.wantStatus)
			}
			v := r.Blocks[0]
			if tc.wantText != "" && (len(v.Sources) != 1 || v.Sources[0].Text != tc.wantText || *v.Sources[0].Range != (protocol.Range{Start: 1, End: 5})) {
				t.Fatalf("refreshed view %+v", v)
			}
			if tc.wantText == "" && !strings.Contains(v.Notice, "Re-read") {
				t.Fatalf("notice %q asks for no re-read", v.Notice)
			}
		})
	}
}
