// Package fileadapter serves files as Concord sources: canonical file://
// ids inside the workspace roots, SHA-256 versions, and change hints from
// fsnotify (parent directories, so atomic saves by rename are seen) or
// polling. Hints only say "look again"; the manager re-reads and the hash
// decides.
package fileadapter

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/fsnotify/fsnotify"

	"github.com/concord-ctx/concord/runtime"
)

// Watch modes.
const (
	ModeAuto     = "auto"     // fsnotify, polling where watches run out
	ModeFsnotify = "fsnotify" // fsnotify (still polls a directory it cannot watch)
	ModePoll     = "poll"     // stat every PollInterval
	ModeHooks    = "hooks"    // no watching: sourceChanged and the verify pass only
)

// Defaults.
const (
	DefaultMaxBytes     = 8 << 20
	DefaultPollInterval = time.Second
	minPollInterval     = 10 * time.Millisecond
	binarySniff         = 8 << 10
)

// Config configures an Adapter.
type Config struct {
	Roots        []string // absolute directories; only files inside them are sources
	Mode         string   // auto (default), fsnotify, poll, hooks
	PollInterval time.Duration
	Debounce     time.Duration // per path; 0 = hint at once
	MaxBytes     int64         // default 8 MiB
	Logger       *slog.Logger
}

// Adapter serves file:// sources. Safe for concurrent use.
type Adapter struct {
	roots    []string
	mode     string
	poll     time.Duration
	debounce time.Duration
	maxBytes int64
	log      *slog.Logger
	notify   runtime.Notify

	watcher *fsnotify.Watcher
	// addWatch adds a directory to the watcher; a seam so tests can simulate
	// watch-limit exhaustion (ENOSPC), which cannot be provoked safely.
	addWatch func(dir string) error

	watchMu sync.Mutex // orders Watch/Unwatch (held across fsnotify Add/Remove)
	mu      sync.Mutex
	closed  bool
	files   map[string]int // path -> watch refs
	// Listing sources: the directories each one's last read visited (for
	// its stamp) and its watch state.
	listDirs map[string][]string
	lists    map[string]*listWatch
	fsRefs   map[string]int       // directory -> references on its fsnotify watch
	dirs     map[string]*dirWatch // parent dir -> state
	timers   map[string]*time.Timer

	// Trusted stamps (trust.go): every watched file's mark, the global
	// event sequence and overflow epoch, directory watch ids, and the
	// barrier (nil: no stamp is trusted).
	marks   map[string]*fileMark
	evSeq   uint64
	epoch   uint64
	wids    uint64
	barrier *barrier
	// trustMin is how many trusted files a Stamps call needs to run the
	// barrier and use cached stamps (trustBatchMin; tests lower it).
	trustMin int

	now func() time.Time // the clock racily clean stamps are judged by
	// cacheHits counts the stamps Stamps served from the cache (tests).
	cacheHits atomic.Int64
	// rootFDs are the roots' open directory handles, kept across stamp
	// batches (stamp_linux.go).
	rootFDs rootCache

	stop chan struct{}
	wg   sync.WaitGroup
}

type dirWatch struct {
	files  int               // watched files in it
	polled bool              // no fsnotify watch: polled instead
	stamps map[string]string // polled files' last stamps
	fsRef  bool              // holds a reference on the directory's fsnotify watch
	// wid is the id of its fsnotify watch when its files' stamps may be
	// trusted (0: never), dev and ino the directory it was added on.
	wid, dev, ino uint64
}

var (
	_ runtime.Adapter      = (*Adapter)(nil)
	_ runtime.Displayer    = (*Adapter)(nil)
	_ runtime.BatchStamper = (*Adapter)(nil)
)

// New returns a file adapter sending change hints to notify.
func New(cfg Config, notify runtime.Notify) (*Adapter, error) {
	if len(cfg.Roots) == 0 {
		return nil, errors.New("fileadapter: at least one root is required")
	}
	a := &Adapter{
		mode:     cfg.Mode,
		poll:     cfg.PollInterval,
		debounce: cfg.Debounce,
		maxBytes: cfg.MaxBytes,
		log:      cfg.Logger,
		notify:   notify,
		files:    map[string]int{},
		marks:    map[string]*fileMark{},
		trustMin: trustBatchMin,
		now:      time.Now,
		dirs:     map[string]*dirWatch{},
		timers:   map[string]*time.Timer{},
		stop:     make(chan struct{}),
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.notify == nil {
		a.notify = func(string) {}
	}
	if a.maxBytes <= 0 {
		a.maxBytes = DefaultMaxBytes
	}
	if a.poll <= 0 {
		a.poll = DefaultPollInterval
	}
	a.poll = max(a.poll, minPollInterval)
	a.debounce = max(a.debounce, 0)
	for i, r := range cfg.Roots {
		if !filepath.IsAbs(r) {
			return nil, &RootError{i, r, fmt.Errorf("fileadapter: root %q is not absolute", r)}
		}
		rr, err := filepath.EvalSymlinks(filepath.Clean(r))
		if errors.Is(err, fs.ErrNotExist) {
			// lstat's own message names the first missing component, not the root.
			return nil, &RootError{i, r, fmt.Errorf("root %q: %w", r, fs.ErrNotExist)}
		}
		if err != nil {
			return nil, &RootError{i, r, fmt.Errorf("root %q: %w", r, err)}
		}
		if fi, err := os.Stat(rr); err != nil || !fi.IsDir() {
			return nil, &RootError{i, r, notDirError(r)}
		}
		a.roots = append(a.roots, rr)
	}
	switch a.mode {
	case "", ModeAuto, ModeFsnotify:
		w, err := fsnotify.NewWatcher()
		if err != nil {
			if a.mode == ModeFsnotify {
				return nil, fmt.Errorf("fileadapter: fsnotify: %w", err)
			}
			a.log.Warn("fsnotify unavailable; polling", "err", err)
			a.mode = ModePoll
			break
		}
		a.watcher, a.mode = w, ModeFsnotify
		a.addWatch = w.Add
		a.startBarrier()
		a.wg.Add(1)
		go a.runEvents()
	case ModePoll, ModeHooks:
	default:
		return nil, fmt.Errorf("fileadapter: unknown watch mode %q (want auto, fsnotify, poll or hooks)", cfg.Mode)
	}
	if a.mode != ModeHooks {
		a.wg.Add(1)
		go a.runPoll()
	}
	return a, nil
}

// Mode is the effective watch mode: fsnotify, poll or hooks.
func (a *Adapter) Mode() string { return a.mode }

// Roots are the symlink-resolved workspace roots.
func (a *Adapter) Roots() []string { return append([]string(nil), a.roots...) }

// Scheme is "file".
func (a *Adapter) Scheme() string { return "file" }

// Normalize accepts file:///abs URIs (percent-decoded) and plain absolute
// paths and returns the canonical id: file:// + the cleaned, symlink-resolved
// path (the parent resolved for a file that does not exist). Paths outside the
// roots are refused with ErrOutsideRoots.
func (a *Adapter) Normalize(uri string) (string, error) {
	if strings.HasPrefix(uri, "file:") {
		if q := strings.IndexByte(uri, '?'); q >= 0 && q+1 < len(uri) && (strings.IndexByte(uri, '#') < 0 || strings.IndexByte(uri, '#') > q) {
			return a.normalizeListing(uri)
		}
	}
	p, err := uriPath(uri)
	if err != nil {
		return "", err
	}
	if a.plainPath(p) {
		return pathURI(p), nil // below a root with no symlink on the way: its own resolution
	}
	return a.normalizeSlow(uri, p)
}

// normalizeSlow is Normalize by EvalSymlinks (an lstat per component of
// the whole path): every path plainPath cannot vouch for (a symlink on the
// way, a file that does not exist, no fast path on this system).
func (a *Adapter) normalizeSlow(uri, p string) (string, error) {
	rp, err := resolve(p)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", runtime.ErrInvalidURI, uri, err)
	}
	if !a.inside(rp) {
		if rp != p {
			return "", fmt.Errorf("%s resolves to %s: %w", p, rp, runtime.ErrOutsideRoots)
		}
		return "", fmt.Errorf("%s: %w", p, runtime.ErrOutsideRoots)
	}
	return pathURI(rp), nil
}

// encodeHint says how clients build file URIs correctly.
const encodeHint = "build file URIs with Python's pathlib.Path.as_uri() or Node's url.pathToFileURL()"

func uriPath(uri string) (string, error) {
	var p string
	switch {
	case strings.HasPrefix(uri, "file:"):
		u, err := url.Parse(uri)
		if err != nil {
			return "", fmt.Errorf("%w: %v (%s)", runtime.ErrInvalidURI, err, encodeHint)
		}
		if u.Host != "" && u.Host != "localhost" {
			return "", fmt.Errorf("%w: %q: remote host %q", runtime.ErrInvalidURI, uri, u.Host)
		}
		if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.HasSuffix(uri, "#") {
			// A file URI has neither: this is a path with a raw '?' or '#',
			// which would otherwise name a different file without a word.
			return "", fmt.Errorf("%w: %q has a query or fragment: a '?' or '#' in a path must be percent-encoded (%s)", runtime.ErrInvalidURI, uri, encodeHint)
		}
		p = u.Path
	default:
		p = uri
	}
	if p == "" || !filepath.IsAbs(p) {
		return "", fmt.Errorf("%w: %q is not an absolute path or file:/// URI", runtime.ErrInvalidURI, uri)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("%w: %q contains NUL", runtime.ErrInvalidURI, uri)
	}
	return filepath.Clean(p), nil
}

// resolve resolves symlinks in p; for a path that does not exist it resolves
// the nearest existing ancestor and appends the rest.
func resolve(p string) (string, error) {
	rest := ""
	cur := p
	for {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

func (a *Adapter) inside(p string) bool {
	for _, r := range a.roots {
		rel, err := filepath.Rel(r, p)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

func pathURI(p string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String()
}

// Path is the file system path of a canonical id.
func Path(id string) (string, error) {
	rest, ok := strings.CutPrefix(id, "file://")
	if !ok || !strings.HasPrefix(rest, "/") {
		return "", fmt.Errorf("%w: %q", runtime.ErrInvalidURI, id)
	}
	if strings.IndexByte(rest, '%') < 0 && strings.IndexByte(rest, '?') < 0 && strings.IndexByte(rest, '#') < 0 {
		return filepath.FromSlash(rest), nil // the common case, without url.Parse
	}
	u, err := url.Parse(id)
	if err != nil || u.Scheme != "file" {
		return "", fmt.Errorf("%w: %q", runtime.ErrInvalidURI, id)
	}
	return filepath.FromSlash(u.Path), nil
}

// Display is the plain path, for notices.
func (a *Adapter) Display(id string) string {
	if p, err := Path(id); err == nil {
		return p
	}
	return id
}

// notDirError is a root that is not a directory; it is an fs.ErrInvalid.
type notDirError string

func (e notDirError) Error() string        { return fmt.Sprintf("root %q is not a directory", string(e)) }
func (e notDirError) Is(target error) bool { return target == fs.ErrInvalid }

// Read returns the file's content and its SHA-256 version.
func (a *Adapter) Read(ctx context.Context, id string) (runtime.Content, error) {
	if dir, sp, ok, err := listID(id); ok || err != nil {
		if err != nil {
			return runtime.Content{}, err
		}
		return a.readListing(id, dir, sp)
	}
	p, err := Path(id)
	if err != nil {
		return runtime.Content{}, err
	}
	c, n, err := a.readFile(p)
	a.noteRead(p, n, err)
	return c, err
}

// readFile reads the file at p; nlink is its link count as opened.
func (a *Adapter) readFile(p string) (c runtime.Content, nlink uint64, err error) {
	f, fi, err := a.openConfined(p)
	if err != nil {
		return runtime.Content{}, 0, err
	}
	defer f.Close()
	nlink = links(fi)
	if fi.Size() > a.maxBytes {
		return runtime.Content{}, 0, fmt.Errorf("read %s: %d bytes > %d: %w", p, fi.Size(), a.maxBytes, runtime.ErrTooLarge)
	}
	var r io.Reader = io.LimitReader(f, a.maxBytes+1)
	if testHookReader != nil {
		r = testHookReader(r)
	}
	// Sized by the stat (plus one byte to see the end): one allocation, not
	// io.ReadAll's doubling, for the read of every observation and change.
	b := make([]byte, 0, fi.Size()+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return runtime.Content{}, 0, classify(p, err)
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // it grew since the stat
		}
	}
	if int64(len(b)) > a.maxBytes {
		return runtime.Content{}, 0, fmt.Errorf("read %s: more than %d bytes: %w", p, a.maxBytes, runtime.ErrTooLarge)
	}
	if bytes.IndexByte(b[:min(len(b), binarySniff)], 0) >= 0 {
		return runtime.Content{}, 0, fmt.Errorf("read %s: NUL byte in the first 8 KiB: %w", p, runtime.ErrBinary)
	}
	sum := sha256.Sum256(b)
	return runtime.Content{Text: validText(b), Version: "sha256:" + hex.EncodeToString(sum[:])}, nlink, nil
}

// validText is b as text a JSON client can send back: each byte that is not
// valid UTF-8 (a Latin-1 file) becomes U+FFFD, as a tool decoding with
// replacement shows it and as JSON carries it. Compared raw, such a file's
// every observation would be invalid at once, sending the agent into a
// re-read loop. The version stays the hash of the raw bytes.
func validText(b []byte) string {
	if utf8.Valid(b) {
		// b is the caller's own buffer, never written again: the text shares
		// it rather than copying a file's worth of bytes.
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	var sb strings.Builder
	sb.Grow(len(b) + 16)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	return sb.String()
}

func classify(p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("read %s: %w", p, runtime.ErrNotFound)
	default:
		return fmt.Errorf("read %s: %w: %v", p, runtime.ErrUnreadable, err)
	}
}

// Stamp is size, mtime, ctime, inode and mode: cheap, and moved by any write,
// atomic replace or chmod. ctime catches a rewrite whose mtime was put back
// (touch -r, cp -p), which no user can set. A stamp taken while the file is
// "racily clean" (modified within racyWindow of now, so a same-size write in
// the same timestamp tick would leave it unchanged) carries the time it was
// taken, so it never equals a later stamp: each verify re-hashes until the
// file's times are safely in the past, as git re-hashes racily clean index
// entries. The roots are enforced here too: a path that now leads outside
// them has no stamp. Always a stat (no barrier): a watched file's stamp is
// cached with its event mark for a later large Stamps (trust.go).
func (a *Adapter) Stamp(ctx context.Context, id string) (string, error) {
	if dir, _, ok, err := listID(id); ok || err != nil {
		if err != nil {
			return "", err
		}
		return a.listStamp(id, dir)
	}
	p, err := Path(id)
	if err != nil {
		return "", err
	}
	snap := a.snapMark(p)
	var st [1]string
	var ok [1]bool
	w := a.newDirWalker()
	dev, ino := w.stampFiles(filepath.Dir(p), []string{filepath.Base(p)}, a.now(), st[:], ok[:], snap.m != nil)
	w.close()
	if ok[0] {
		if snap.m != nil {
			a.mu.Lock()
			same := snap.store(st[0], dev, ino)
			a.mu.Unlock()
			if !same {
				a.dirReplaced(filepath.Dir(p), snap.wid)
			}
		}
		return st[0], nil
	}
	return a.stampSlow(p)
}

// stampSlow is Stamp by lstatConfined: every case the fast path leaves
// (a symlink on the way, a missing file, a non-regular one, no fast path on
// this system) is judged here.
func (a *Adapter) stampSlow(p string) (string, error) {
	fi, err := a.lstatConfined(p)
	if err != nil {
		return "", err
	}
	return racyMark(stampOf(fi, a.now()))
}

// Stamps is Stamp for many sources at once (runtime.BatchStamper). Every
// stamp is a stat stamp, byte for byte what Stamp gives.
//
// With at least trustBatchMin files the watcher vouches for (trust.go),
// one barrier makes every event that happened before the call counted;
// then such a file whose mark has not moved since its last stat, cached
// with the mark read before that stat, gets that stat's stamp with no
// system call of its own. The safety net is per directory, not per file:
// the directory at the path must still be the inode that was watched (a
// renamed ancestor moves the watch away with the old inode), checked with
// one openat2 and fstat. Fewer such files stat: a barrier costs more than
// their stats.
//
// The stat'ed files of one directory share one walk of its path from the
// root, then cost one fstatat each, where Stamp one by one pays an openat2
// per file. Serial: on a few cores parallel stats of cached inodes only
// add scheduling.
func (a *Adapter) Stamps(ctx context.Context, ids []string) ([]string, []error) {
	b := newStampBatch(ids)
	a.trustBatch(ctx, b)
	snaps := a.snapMarks(b.paths, b.dirOf, b.hits, b.tdirs)
	a.statGroups(ctx, b, snaps != nil)
	if snaps != nil {
		a.cacheStats(b, snaps)
	}
	a.stampRest(ctx, b)
	return b.stamps, b.errs
}

// stampBatch is one Stamps call: its ids grouped by directory, the cached
// stamps a barrier made usable, and the results so far.
type stampBatch struct {
	ids, stamps  []string
	errs         []error
	ok           []bool
	paths, dirOf []string
	groups       map[string]*stampGroup
	dirs         []string // in first-seen order
	// hits are the cached stamps usable once their directory is checked
	// (nil without a barrier); tdirs the directories to check.
	hits   []string
	tdirs  map[string]trustedDir
	dirIDs map[string][2]uint64 // identity of each stat'ed directory
}

// stampGroup is the files of one directory: their indexes in the batch
// and their names.
type stampGroup struct {
	idx   []int
	names []string
}

func newStampBatch(ids []string) *stampBatch {
	n := len(ids)
	b := &stampBatch{ids: ids, stamps: make([]string, n), errs: make([]error, n), ok: make([]bool, n),
		paths: make([]string, n), dirOf: make([]string, n), groups: map[string]*stampGroup{}}
	for i, id := range ids {
		if _, _, isList, _ := listID(id); isList {
			continue
		}
		p, err := Path(id)
		if err != nil {
			continue
		}
		d := filepath.Dir(p)
		b.paths[i], b.dirOf[i] = p, d
		g := b.groups[d]
		if g == nil {
			g = &stampGroup{}
			b.groups[d] = g
			b.dirs = append(b.dirs, d)
		}
		g.idx = append(g.idx, i)
		g.names = append(g.names, filepath.Base(p))
	}
	return b
}

// trustBatch waits on the barrier when enough of b's files are vouched for,
// making their cached stamps usable.
func (a *Adapter) trustBatch(ctx context.Context, b *stampBatch) {
	if a.barrier == nil {
		return
	}
	a.mu.Lock()
	n := a.countTrusted(b.paths, b.dirOf)
	a.mu.Unlock()
	if n < a.trustMin {
		return
	}
	if err := a.barrier.wait(ctx, barrierTimeout); err != nil {
		a.log.Debug("watcher barrier failed; stat stamps for this call", "err", err)
		return
	}
	b.hits, b.tdirs = make([]string, len(b.ids)), map[string]trustedDir{}
}

// statGroups stamps b's files directory by directory: cached stamps where
// the directory is still the watched one, one fstatat per file otherwise.
func (a *Adapter) statGroups(ctx context.Context, b *stampBatch, ident bool) {
	served := 0
	now := a.now()
	w := a.newDirWalker()
	defer w.close()
	for _, d := range b.dirs {
		if ctx.Err() != nil {
			break
		}
		g := b.groups[d]
		if td, checked := b.tdirs[d]; checked {
			var n int
			g, n = a.serveCached(w, b, d, td, g)
			served += n
			if g == nil {
				continue
			}
		}
		st := make([]string, len(g.idx))
		gok := make([]bool, len(g.idx))
		dev, ino := w.stampFiles(d, g.names, now, st, gok, ident)
		if ident {
			if b.dirIDs == nil {
				b.dirIDs = map[string][2]uint64{}
			}
			b.dirIDs[d] = [2]uint64{dev, ino}
		}
		for k, i := range g.idx {
			b.stamps[i], b.ok[i] = st[k], gok[k]
		}
	}
	if served > 0 {
		a.cacheHits.Add(int64(served))
	}
}

// serveCached gives g's files their cached stamps when d is still the
// directory that was watched, and returns the files left to stat (nil when
// none) and how many were served.
func (a *Adapter) serveCached(w *dirWalker, b *stampBatch, d string, td trustedDir, g *stampGroup) (*stampGroup, int) {
	same, found := w.sameDir(d, td.dev, td.ino)
	if !same {
		if found {
			// Another directory at the path: the watch follows the old
			// one. Its files' marks move, so no snapshot here is cached.
			a.dirReplaced(d, td.wid)
		}
		return g, 0
	}
	rest := &stampGroup{}
	served := 0
	for k, i := range g.idx {
		if b.hits[i] != "" {
			b.stamps[i], b.ok[i] = b.hits[i], true
			served++
		} else {
			rest.idx, rest.names = append(rest.idx, i), append(rest.names, g.names[k])
		}
	}
	if len(rest.idx) == 0 {
		return nil, served
	}
	return rest, served
}

// cacheStats keeps the stamps just stat'ed, each with the mark taken before
// its stat; a directory found replaced is polled from now on.
func (a *Adapter) cacheStats(b *stampBatch, snaps []markSnap) {
	var replaced map[string]uint64
	a.mu.Lock()
	for i, s := range snaps {
		if !b.ok[i] || (b.hits != nil && b.hits[i] != "") {
			continue
		}
		id := b.dirIDs[b.dirOf[i]]
		if !s.store(b.stamps[i], id[0], id[1]) {
			if replaced == nil {
				replaced = map[string]uint64{}
			}
			replaced[b.dirOf[i]] = s.wid
		}
	}
	a.mu.Unlock()
	for d, wid := range replaced {
		a.dirReplaced(d, wid) // seen by its stat: polled from now on
	}
}

// stampRest stamps what the groups did not: a listing, a bad id, a file
// whose directory walk failed.
func (a *Adapter) stampRest(ctx context.Context, b *stampBatch) {
	for i, id := range b.ids {
		if b.ok[i] {
			continue
		}
		if err := ctx.Err(); err != nil {
			b.errs[i] = err
			continue
		}
		if b.paths[i] == "" {
			b.stamps[i], b.errs[i] = a.Stamp(ctx, id) // a listing or a bad id
		} else {
			b.stamps[i], b.errs[i] = a.stampSlow(b.paths[i])
		}
	}
}

// racyMark appends the taking time to a racily clean stamp.
func racyMark(st string, racy bool, now time.Time) (string, error) {
	if !racy {
		return st, nil
	}
	return st + racySuffix + strconv.FormatInt(now.UnixNano(), 10), nil
}

// racySuffix marks a racily clean stamp; the taking time follows it.
const racySuffix = "~racy@"

// stampNow is p's stamp, unique to this call while p is racily clean.
func stampNow(p string) (string, error) {
	now := time.Now()
	st, racy, err := statStamp(p, now)
	if err != nil {
		return "", err
	}
	return racyMark(st, racy, now)
}

// racyWindow is how recent a change may be for a stamp to be racily clean:
// file systems keep timestamps in 1 s (ext3, HFS+) or 2 s (FAT) ticks, and
// Linux stamps files from a coarse clock that lags time.Now by a tick.
const racyWindow = 2 * time.Second

// statStamp stats p; racy reports that its mtime or ctime is not older than
// now by racyWindow, so a later same-size write could keep the same stamp.
func statStamp(p string, now time.Time) (stamp string, racy bool, err error) {
	fi, err := os.Stat(p)
	if err != nil {
		return "", false, classify(p, err)
	}
	st, racy, _ := stampOf(fi, now)
	return st, racy, nil
}

// stampOf is the stamp of fi; now is returned for racyMark.
func stampOf(fi fs.FileInfo, now time.Time) (stamp string, racy bool, at time.Time) {
	ct := ctime(fi)
	b := make([]byte, 0, 80)
	b = strconv.AppendInt(b, fi.Size(), 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, fi.ModTime().UnixNano(), 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, ct.UnixNano(), 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, inode(fi), 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(fi.Mode()), 8)
	latest := fi.ModTime()
	if ct.After(latest) {
		latest = ct
	}
	return string(b), !latest.Before(now.Add(-racyWindow)), now
}
