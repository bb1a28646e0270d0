package fileadapter

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/concord-ctx/concord/runtime"
)

func TestListQueryCanonical(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"", "depth=1", ""},
		{"depth=1", "depth=1", ""},
		{"depth=0&hidden=0", "depth=0", ""},
		{"hidden=1&depth=0", "depth=0&hidden=1", ""},
		{"ignore=node_modules,.git", "depth=1&ignore=.git,node_modules", ""},
		{"ignore=b,a,b,", "depth=1&ignore=a,b", ""},
		{"glob=**/*.ts", "depth=1&glob=**/*.ts", ""},
		{"glob=%2A%2A/%2A.%7Bts,tsx%7D", "depth=1&glob=**/*.{ts%2Ctsx}", ""},
		{"glob=a+b", "depth=1&glob=a%2Bb", ""},
		{"ignore=a%2Cb", "depth=1&ignore=a%2Cb", ""},
		{"depth=-1", "", "depth"},
		{"depth=x", "", "depth"},
		{"hidden=2", "", "hidden"},
		{"x=1", "", "unknown listing parameter"},
		{"depth=1&depth=0", "", "repeated"},
		{"ignore=a/b", "", "base names"},
		{"glob={a,b", "", "unclosed {"},
		{"glob=[", "", "unclosed ["},
		{"glob=%zz", "", "invalid URL escape"},
	}
	for _, tc := range tests {
		sp, err := parseListQuery(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || sp.query() != tc.want {
			t.Errorf("%q: %q %v, want %q", tc.in, sp.query(), err, tc.want)
			continue
		}
		again, err := parseListQuery(sp.query())
		if err != nil || again.query() != sp.query() {
			t.Errorf("%q: canonical form %q does not parse back: %q %v", tc.in, sp.query(), again.query(), err)
		}
	}
}

func TestGlob(t *testing.T) {
	tests := []struct {
		glob string
		yes  []string
		no   []string
	}{
		{"*.ts", []string{"a.ts", ".ts"}, []string{"src/a.ts", "a.tsx"}},
		{"**/*.ts", []string{"a.ts", "src/a.ts", "a/b/c.ts"}, []string{"a.js", "src/a.tsx"}},
		{"src/**", []string{"src/a", "src/a/b"}, []string{"srcx/a", "a/src/b"}},
		{"?.go", []string{"a.go"}, []string{"ab.go", "/.go"}},
		{"*.{ts,tsx}", []string{"a.ts", "a.tsx"}, []string{"a.js"}},
		{"{src,lib}/**/*.{go,md}", []string{"src/x.go", "lib/a/b.md"}, []string{"doc/x.go"}},
		{"[ab]*.txt", []string{"a1.txt", "b.txt"}, []string{"c.txt"}},
		{"[!ab]*.txt", []string{"c.txt"}, []string{"a.txt"}},
		{"a.b", []string{"a.b"}, []string{"axb"}},
		{`\*.txt`, []string{"*.txt"}, []string{"a.txt"}},
	}
	for _, tc := range tests {
		re, err := globRegexp(tc.glob)
		if err != nil {
			t.Fatalf("%q: %v", tc.glob, err)
		}
		for _, s := range tc.yes {
			if !re.MatchString(s) {
				t.Errorf("%q should match %q", tc.glob, s)
			}
		}
		for _, s := range tc.no {
			if re.MatchString(s) {
				t.Errorf("%q should not match %q", tc.glob, s)
			}
		}
	}
}

func TestListingContent(t *testing.T) {
	root := tempRoot(t)
	for _, f := range []string{"b.txt", "a.ts", ".env", "src/x.ts", "src/y.go", "src/deep/z.ts", "node_modules/m/i.js", ".git/HEAD", "src/.hidden/h.ts"} {
		write(t, filepath.Join(root, f), "x\n")
	}
	if err := os.Symlink(filepath.Join(root, "src"), filepath.Join(root, "srclink")); err != nil {
		t.Fatal(err)
	}
	a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeHooks})
	ctx := context.Background()
	tests := []struct{ q, want string }{
		{"depth=1", "a.ts\nb.txt\nnode_modules/\nsrc/\nsrclink"},
		{"depth=1&hidden=1", ".env\n.git/\na.ts\nb.txt\nnode_modules/\nsrc/\nsrclink"},
		{"depth=0&ignore=node_modules", "a.ts\nb.txt\nsrc/\nsrc/deep/\nsrc/deep/z.ts\nsrc/x.ts\nsrc/y.go\nsrclink"},
		{"depth=2&ignore=node_modules", "a.ts\nb.txt\nsrc/\nsrc/deep/\nsrc/x.ts\nsrc/y.go\nsrclink"},
		{"depth=0&ignore=node_modules&glob=**/*.ts", "a.ts\nsrc/deep/z.ts\nsrc/x.ts"},
		{"depth=0&hidden=1&ignore=node_modules,.git&glob=**/*.ts", "a.ts\nsrc/.hidden/h.ts\nsrc/deep/z.ts\nsrc/x.ts"},
	}
	for _, tc := range tests {
		id, err := a.Normalize("file://" + root + "?" + tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		c, err := a.Read(ctx, id)
		if err != nil || c.Text != tc.want || !strings.HasPrefix(c.Version, "sha256:") {
			t.Errorf("%s: %q %v\nwant %q", tc.q, c.Text, err, tc.want)
		}
		if !a.IsListing(id) || a.Display(id) != root {
			t.Errorf("%s: IsListing %v, Display %q", id, a.IsListing(id), a.Display(id))
		}
	}
	// Errors: missing, a file, outside the roots, too large.
	for _, tc := range []struct {
		uri  string
		want error
	}{
		{"file://" + root + "/nope?depth=1", runtime.ErrNotFound},
		{"file://" + root + "/b.txt?depth=1", runtime.ErrUnreadable},
	} {
		id, err := a.Normalize(tc.uri)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Read(ctx, id); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.uri, err, tc.want)
		}
	}
	if _, err := a.Normalize("file:///etc?depth=1"); !errors.Is(err, runtime.ErrOutsideRoots) {
		t.Errorf("outside: %v", err)
	}
	small, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeHooks, MaxBytes: 10})
	id, _ := small.Normalize("file://" + root + "?depth=0")
	if _, err := small.Read(ctx, id); !errors.Is(err, runtime.ErrTooLarge) {
		t.Errorf("too large: %v", err)
	}
	// The stamp moves when an entry appears in a subdirectory, not when a
	// file's content changes.
	id, _ = a.Normalize("file://" + root + "?depth=0&ignore=node_modules")
	if _, err := a.Read(ctx, id); err != nil {
		t.Fatal(err)
	}
	settle := time.Now().Add(3 * time.Second)
	s1, _, _ := stampAt(a, id, settle)
	write(t, filepath.Join(root, "src", "x.ts"), "changed content\n")
	if s2, _, _ := stampAt(a, id, settle); s2 != s1 {
		t.Errorf("stamp moved on a content change: %q -> %q", s1, s2)
	}
	time.Sleep(20 * time.Millisecond)
	write(t, filepath.Join(root, "src", "deep", "new.ts"), "n\n")
	if s3, _, _ := stampAt(a, id, settle); s3 == s1 {
		t.Errorf("stamp did not move when an entry appeared: %q", s3)
	}
}

// stampAt is listStamp without the racy suffix, as if taken at now.
func stampAt(a *Adapter, id string, now time.Time) (string, bool, error) {
	dir, _, _, _ := listID(id)
	st, err := a.listStamp(id, dir)
	st, _, _ = strings.Cut(st, racySuffix)
	return st, false, err
}

func TestNormalizeListing(t *testing.T) {
	root := tempRoot(t)
	write(t, filepath.Join(root, "d", "f.txt"), "x\n")
	if err := os.Symlink(filepath.Join(root, "d"), filepath.Join(root, "dl")); err != nil {
		t.Fatal(err)
	}
	a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeHooks})
	for in, want := range map[string]string{
		"file://" + root + "/d?depth=1":                        pathURI(filepath.Join(root, "d")) + "?depth=1",
		"file://" + root + "/dl/?hidden=0&depth=0":             pathURI(filepath.Join(root, "d")) + "?depth=0",
		"file://" + root + "/d/../d?ignore=.git,node_modules":  pathURI(filepath.Join(root, "d")) + "?depth=1&ignore=.git,node_modules",
		"file://localhost" + root + "/d?glob=**/*.txt&depth=0": pathURI(filepath.Join(root, "d")) + "?depth=0&glob=**/*.txt",
	} {
		got, err := a.Normalize(in)
		if err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", in, got, err, want)
			continue
		}
		if again, err := a.Normalize(got); err != nil || again != got {
			t.Errorf("not idempotent: %q -> %q %v", got, again, err)
		}
	}
	for _, in := range []string{"file://" + root + "/d?depth=1#x", "file://" + root + "/d?bogus=1", "file://h" + root + "/d?depth=1"} {
		if _, err := a.Normalize(in); !errors.Is(err, runtime.ErrInvalidURI) {
			t.Errorf("%s: %v, want ErrInvalidURI", in, err)
		}
	}
}

// TestListingWatch: real fsnotify events for a deep listing, a new
// subdirectory included; and the watch-limit fallback polls it.
func TestListingWatch(t *testing.T) {
	root := tempRoot(t)
	write(t, filepath.Join(root, "a.txt"), "a\n")
	write(t, filepath.Join(root, "sub", "b.txt"), "b\n")
	a, h := newAdapter(t, Config{Roots: []string{root}, Mode: ModeFsnotify})
	id, err := a.Normalize("file://" + root + "?depth=0")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Watch(id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "watches on the root and sub", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.lists[id].watched) == 2
	})
	write(t, filepath.Join(root, "sub", "c.txt"), "c\n")
	waitFor(t, "hint for an entry in a subdirectory", func() bool { return h.count(id) > 0 })
	n := h.count(id)
	if err := os.Mkdir(filepath.Join(root, "new"), 0o755); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a watch on the new subdirectory", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.lists[id].watched[filepath.Join(root, "new")]
	})
	n = h.count(id)
	write(t, filepath.Join(root, "new", "d.txt"), "d\n")
	waitFor(t, "hint for an entry in the new subdirectory", func() bool { return h.count(id) > n })
	// Overflow: events were lost, so the listing is hinted and its watches
	// are rebuilt (a directory made meanwhile gets one).
	if err := os.Mkdir(filepath.Join(root, "missed"), 0o755); err != nil {
		t.Fatal(err)
	}
	n = h.count(id)
	a.onError(fsnotify.ErrEventOverflow)
	waitFor(t, "a rescan hint and a watch on a directory made during the overflow", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return h.count(id) > n && a.lists[id].watched[filepath.Join(root, "missed")]
	})
	// Unwatch drops every watch.
	a.Unwatch(id)
	a.mu.Lock()
	refs := len(a.fsRefs)
	a.mu.Unlock()
	if refs != 0 {
		t.Fatalf("watches left after Unwatch: %d", refs)
	}

	// Watch limit: every Add fails with ENOSPC; the listing is polled.
	b, hb := newAdapter(t, Config{Roots: []string{root}, Mode: ModeFsnotify, PollInterval: 10 * time.Millisecond})
	b.addWatch = func(string) error { return syscall.ENOSPC }
	id2, _ := b.Normalize("file://" + root + "?depth=0")
	if _, err := b.Read(context.Background(), id2); err != nil {
		t.Fatal(err)
	}
	if err := b.Watch(id2); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	polled := b.lists[id2].polled
	b.mu.Unlock()
	if !polled {
		t.Fatal("listing not polled after ENOSPC")
	}
	m := hb.count(id2)
	time.Sleep(20 * time.Millisecond)
	write(t, filepath.Join(root, "sub", "polled.txt"), "p\n")
	waitFor(t, "poll hint", func() bool { return hb.count(id2) > m })
}

func FuzzListingURI(f *testing.F) {
	root, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	a, err := New(Config{Roots: []string{root}, Mode: ModeHooks}, nil)
	if err != nil {
		f.Fatal(err)
	}
	defer a.Close()
	for _, s := range []string{"depth=1", "depth=0&hidden=1&ignore=node_modules,.git&glob=**/*.ts", "glob={a,{b,c}}/[!x]?*", "ignore=%2C", "glob=%", "depth=99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		sp, err := parseListQuery(q)
		if err == nil {
			again, err := parseListQuery(sp.query())
			if err != nil || again.query() != sp.query() {
				t.Fatalf("%q -> %q -> %q, %v: not canonical", q, sp.query(), again.query(), err)
			}
		}
		id, err := a.Normalize("file://" + root + "/d?" + q)
		if err != nil {
			if !errors.Is(err, runtime.ErrOutsideRoots) && !errors.Is(err, runtime.ErrInvalidURI) {
				t.Fatalf("%q: unexpected error class %v", q, err)
			}
			return
		}
		if again, err := a.Normalize(id); err != nil || again != id {
			t.Fatalf("%q -> %q -> %q, %v: not idempotent", q, id, again, err)
		}
		if !a.IsListing(id) {
			t.Fatalf("%q -> %q is not a listing", q, id)
		}
	})
}
