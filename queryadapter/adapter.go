// Package queryadapter serves query sources (package query; docs/protocol.md,
// "Query sources"): results that are a function of many files, such as
// grep -l or find | grep. Read re-runs the recorded pipeline of allowlisted
// read-only programs, without a shell, in the recorded directory, with a
// timeout and an output cap; the version is the hash of its output. Stamp
// is a stat walk of the query's scope, and Watch hints the source on any
// fsnotify event under it.
package queryadapter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/concord-ctx/concord/query"
	"github.com/concord-ctx/concord/runtime"
)

// Defaults.
const (
	DefaultTimeout   = 10 * time.Second
	DefaultMaxBytes  = 256 << 10 // a drifted query is refreshed in place: keep it prompt-sized
	DefaultMaxStamp  = 20000     // entries a stamp walk visits before it gives up ("")
	stderrCap        = 4 << 10
	racyWindow       = 2 * time.Second
	defaultMaxWatchs = 4096
)

// Config configures an Adapter.
type Config struct {
	// Confine resolves an absolute path (symlinks included) and refuses one
	// outside the session's roots (runtime.ErrOutsideRoots). Required: the
	// file adapter's rule, so both refuse the same paths.
	Confine  func(path string) (string, error)
	Timeout  time.Duration // per Read; default 10 s
	MaxBytes int           // output cap; default 256 KiB
	// Watch: false leaves change detection to Stamp (the verify pass), as
	// the file adapter's hooks mode does.
	Watch     bool
	MaxWatch  int // directories watched per session; beyond it Stamp alone tells
	MaxStamp  int
	Logger    *slog.Logger
	LookPath  func(string) (string, error) // default: PATH's absolute entries
	DebugHook func(event string)           // tests: "watched <dir>", "event <path>"
}

// Adapter serves query:// sources. Safe for concurrent use.
type Adapter struct {
	cfg    Config
	notify runtime.Notify
	w      *watcher
	racy   time.Duration // racyWindow; tests take it away to see stable stamps
}

// New returns an adapter; notify receives change hints.
func New(cfg Config, notify runtime.Notify) (*Adapter, error) {
	if cfg.Confine == nil {
		return nil, errors.New("queryadapter: Config.Confine is required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.MaxStamp <= 0 {
		cfg.MaxStamp = DefaultMaxStamp
	}
	if cfg.MaxWatch <= 0 {
		cfg.MaxWatch = defaultMaxWatchs
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.LookPath == nil {
		cfg.LookPath = query.LookPath
	}
	a := &Adapter{cfg: cfg, notify: notify, racy: racyWindow}
	if cfg.Watch {
		w, err := newWatcher(a)
		if err != nil {
			return nil, fmt.Errorf("queryadapter: %w", err)
		}
		a.w = w
	}
	return a, nil
}

// Scheme is "query".
func (a *Adapter) Scheme() string { return query.Scheme }

// checked is a query id parsed, allowlisted and confined.
type checked struct {
	spec  query.Spec
	scope query.Scope
}

func (a *Adapter) check(uri string) (checked, error) {
	s, err := query.Parse(uri)
	if err != nil {
		return checked{}, fmt.Errorf("%w: %v", runtime.ErrInvalidURI, err)
	}
	sc, err := s.Check()
	if err != nil {
		return checked{}, fmt.Errorf("%w: %s: %v", runtime.ErrInvalidURI, uri, err)
	}
	cwd, err := a.cfg.Confine(s.Cwd)
	if err != nil {
		return checked{}, fmt.Errorf("query directory %s: %w", s.Cwd, err)
	}
	s.Cwd = cwd
	for i, p := range sc.Paths {
		rp, err := a.cfg.Confine(p)
		if err != nil {
			return checked{}, fmt.Errorf("query operand %s: %w", p, err)
		}
		sc.Paths[i] = rp
	}
	return checked{spec: s, scope: sc}, nil
}

// Normalize checks a query URI against the allowlist and the roots and
// returns its canonical form (the directory resolved).
func (a *Adapter) Normalize(uri string) (string, error) {
	c, err := a.check(uri)
	if err != nil {
		return "", err
	}
	return c.spec.URI(), nil
}

// Read runs the query. Operands are confined again: a symlink may have
// been pointed elsewhere since the query was registered.
func (a *Adapter) Read(ctx context.Context, id string) (runtime.Content, error) {
	c, err := a.check(id)
	if err != nil {
		return runtime.Content{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	out, err := a.run(ctx, c.spec)
	if err != nil {
		return runtime.Content{}, fmt.Errorf("query %s: %w", id, err)
	}
	if !utf8.Valid(out) {
		return runtime.Content{}, fmt.Errorf("query %s: output is not UTF-8: %w", id, runtime.ErrBinary)
	}
	text := c.spec.Text(string(out))
	sum := sha256.Sum256([]byte(text))
	return runtime.Content{Text: text, Version: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

// run runs the stages one after another, each reading the previous one's
// output, none through a shell. A find's -exec grep and an xargs grep are
// run by the adapter itself (runGrep): find and xargs never start a
// program.
func (a *Adapter) run(ctx context.Context, s query.Spec) ([]byte, error) {
	var in []byte
	for i, st := range s.Stages {
		var out []byte
		var err error
		if find, g, ok := query.FindExec(st); ok && i == 0 {
			if out, err = a.stage(ctx, s.Cwd, i, find, nil); err == nil {
				out, err = a.runGrep(ctx, s.Cwd, g, out)
			}
		} else if g, ok := query.Xargs(st); ok && i > 0 {
			out, err = a.runGrep(ctx, s.Cwd, g, in)
		} else {
			out, err = a.stage(ctx, s.Cwd, i, st, in)
		}
		if err != nil {
			return nil, err
		}
		in = out
	}
	return in, nil
}

// stage runs one program of the pipeline.
func (a *Adapter) stage(ctx context.Context, cwd string, i int, st []string, in []byte) ([]byte, error) {
	bin, err := a.cfg.LookPath(st[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %w", st[0], err, runtime.ErrUnreadable)
	}
	pr, err := runProc(ctx, bin, st, cwd, in, a.cfg.MaxBytes, stderrCap)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %v: %w", st[0], err, runtime.ErrUnreadable)
	case pr.capped:
		return nil, fmt.Errorf("%s: more than %d bytes of output: %w", st[0], a.cfg.MaxBytes, runtime.ErrTooLarge)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: %v: %w", st[0], ctx.Err(), runtime.ErrUnreadable)
	case pr.code != 0 && !acceptExit(st[0], i, pr.code, len(pr.out)):
		return nil, fmt.Errorf("%s exited %d: %s: %w", st[0], pr.code, strings.TrimSpace(string(pr.errOut)), runtime.ErrUnreadable)
	}
	return pr.out, nil
}

// runGrep runs g over the names in (find's -print0 output, or an xargs
// stage's input), as find -exec or xargs would have: the same command
// lines (query.GrepRun.Batches), one after another, their outputs joined.
// Each name must resolve inside the roots (a name with a blank would make
// xargs split it into others, and grep follows a symlink it is given) and
// must not start with "-" (grep would take it for an option). grep's
// status 1 (no match) and 2 (a name it could not read) are answers, as
// they were when find or xargs ran it.
func (a *Adapter) runGrep(ctx context.Context, cwd string, g query.GrepRun, in []byte) ([]byte, error) {
	names, err := g.SplitNames(in)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, runtime.ErrUnreadable)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "-") {
			return nil, fmt.Errorf("file name %q would be a grep option: %w", n, runtime.ErrUnreadable)
		}
		p := n
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		if _, err := a.cfg.Confine(filepath.Clean(p)); err != nil {
			return nil, fmt.Errorf("query operand %s: %w", p, err)
		}
	}
	bin, err := a.cfg.LookPath("grep")
	if err != nil {
		return nil, fmt.Errorf("grep: %v: %w", err, runtime.ErrUnreadable)
	}
	var out []byte
	for _, argv := range g.Batches(names) {
		pr, err := runProc(ctx, bin, argv, cwd, nil, a.cfg.MaxBytes-len(out), stderrCap)
		switch {
		case err != nil:
			return nil, fmt.Errorf("grep: %v: %w", err, runtime.ErrUnreadable)
		case pr.capped:
			return nil, fmt.Errorf("grep: more than %d bytes of output: %w", a.cfg.MaxBytes, runtime.ErrTooLarge)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("grep: %v: %w", ctx.Err(), runtime.ErrUnreadable)
		case pr.code < 0 || pr.code > 2:
			return nil, fmt.Errorf("grep exited %d: %s: %w", pr.code, strings.TrimSpace(string(pr.errOut)), runtime.ErrUnreadable)
		}
		out = append(out, pr.out...)
	}
	return out, nil
}

// acceptExit: grep's 1 is "no lines" (an answer); a search or listing
// that failed on some operands (exit 2 for grep and ls, 1 for find) still
// answers for the others when it printed something, as it did for the
// model. A filter that fails is a failure.
func acceptExit(prog string, stage, code, printed int) bool {
	if (prog == "grep" || prog == "rg") && code == 1 {
		return true
	}
	return stage == 0 && printed > 0
}

// Stamp fingerprints the scope without running the query: every path it
// names and, for a directory, its entries (every depth for a recursive
// query): name, type, size, mtime and ctime. "" (re-run) when the walk is
// too large or something changed within the last two seconds (a change
// in the same clock tick would keep the stamp).
func (a *Adapter) Stamp(ctx context.Context, id string) (string, error) {
	c, err := a.check(id)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	now := time.Now()
	n := 0
	racy := false
	add := func(p string, fi fs.FileInfo) {
		n++
		t := fi.ModTime()
		if ct := ctime(fi); ct.After(t) {
			t = ct
		}
		if !t.Before(now.Add(-a.racy)) {
			racy = true
		}
		fmt.Fprintf(h, "%s\x00%o\x00%d\x00%d\x00%d\n", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), ctime(fi).UnixNano())
	}
	for _, p := range c.scope.Paths {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		fi, err := os.Lstat(p)
		if err != nil {
			fmt.Fprintf(h, "%s\x00missing\n", p)
			continue
		}
		add(p, fi)
		if !fi.IsDir() {
			continue
		}
		if !c.scope.Recursive {
			ents, err := os.ReadDir(p)
			if err != nil {
				continue
			}
			for _, e := range ents {
				if fi, err := e.Info(); err == nil {
					add(filepath.Join(p, e.Name()), fi)
				}
			}
			continue
		}
		_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil || q == p {
				return nil
			}
			if n > a.cfg.MaxStamp {
				return filepath.SkipAll // racy stays as found so far: a big tree is stamped by events
			}
			if fi, err := d.Info(); err == nil {
				add(q, fi)
			}
			return nil
		})
	}
	if racy {
		return "", nil
	}
	if n > a.cfg.MaxStamp {
		// Too large to walk on every sync: while fsnotify watches all of
		// it, the count of events under it stands for the stamp (an event
		// not yet delivered at this sync hints the source when it comes).
		if a.w != nil {
			if gen, full := a.w.generation(id); full {
				return "events:" + strconv.FormatUint(gen, 10), nil
			}
		}
		return "", nil
	}
	return "scope:" + hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// Display names a query in notices by its command line and directory.
func (a *Adapter) Display(id string) string {
	s, err := query.Parse(id)
	if err != nil {
		return id
	}
	return "`" + s.Command() + "` (run in " + s.Cwd + ")"
}

// Watch watches the query's scope (reference-counted per id).
func (a *Adapter) Watch(id string) error {
	if a.w == nil {
		return nil
	}
	c, err := a.check(id)
	if err != nil {
		return err
	}
	return a.w.watch(id, c.scope)
}

// Unwatch drops one reference on id's watch.
func (a *Adapter) Unwatch(id string) {
	if a.w != nil {
		a.w.unwatch(id)
	}
}

// Close stops watching.
func (a *Adapter) Close() error {
	if a.w != nil {
		return a.w.close()
	}
	return nil
}

var (
	_ runtime.Adapter   = (*Adapter)(nil)
	_ runtime.Displayer = (*Adapter)(nil)
)

var lstat = os.Lstat
