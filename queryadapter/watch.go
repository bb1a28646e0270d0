package queryadapter

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"

	"github.com/concord-ctx/concord/query"
)

// watcher holds one fsnotify watcher for every query source of a session.
// fsnotify is not recursive: a recursive scope watches every directory
// under it, and a directory created later gets its watch when its Create
// event arrives (the hint that follows makes the query run again, so
// entries made before the watch existed are seen all the same).
type watcher struct {
	a  *Adapter
	fw *fsnotify.Watcher

	mu     sync.Mutex
	ids    map[string]*watched        // query id -> its watch
	dirs   map[string]map[string]bool // watched directory -> ids
	closed bool
	wg     sync.WaitGroup
}

type watched struct {
	refs  int
	scope query.Scope
	dirs  map[string]bool
	gen   uint64 // events seen under the scope
	full  bool   // every directory of the scope has a watch
}

func newWatcher(a *Adapter) (*watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	w := &watcher{a: a, fw: fw, ids: map[string]*watched{}, dirs: map[string]map[string]bool{}}
	w.wg.Add(1)
	go w.loop()
	return w, nil
}

func (w *watcher) watch(id string, sc query.Scope) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errors.New("queryadapter: closed")
	}
	if x := w.ids[id]; x != nil {
		x.refs++
		return nil
	}
	x := &watched{refs: 1, scope: sc, dirs: map[string]bool{}, full: true}
	w.ids[id] = x
	for _, p := range sc.Paths {
		w.addTree(id, x, p)
	}
	return nil
}

// generation is the count of events under id's scope, and whether every
// directory of it is watched (else events cannot stand for a stamp).
func (w *watcher) generation(id string) (uint64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	x := w.ids[id]
	if x == nil {
		return 0, false
	}
	return x.gen, x.full
}

// addTree watches p's directory (p itself when it is a directory, and
// every directory under it for a recursive scope; its parent otherwise, so
// a file operand's creation, deletion or rewrite is an event). Caller
// holds w.mu.
func (w *watcher) addTree(id string, x *watched, p string) {
	if !isDir(p) {
		w.addDir(id, x, filepath.Dir(p))
		return
	}
	if !x.scope.Recursive {
		w.addDir(id, x, p)
		return
	}
	_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if !w.addDir(id, x, q) {
				return filepath.SkipAll
			}
		}
		return nil
	})
}

// addDir adds one directory to id's watch; false when the session's
// watch budget is spent (Stamp still tells, at the next sync).
func (w *watcher) addDir(id string, x *watched, dir string) bool {
	if x.dirs[dir] {
		return true
	}
	if w.dirs[dir] == nil {
		if len(w.dirs) >= w.a.cfg.MaxWatch {
			w.a.cfg.Logger.Info("query watch budget spent; the verify pass alone sees changes", "dir", dir)
			x.full = false
			return false
		}
		if err := w.fw.Add(dir); err != nil {
			w.a.cfg.Logger.Info("cannot watch a query's directory; the verify pass alone sees its changes", "dir", dir, "err", err)
			x.full = false
			return true
		}
		w.dirs[dir] = map[string]bool{}
		w.debug("watched " + dir)
	}
	w.dirs[dir][id] = true
	x.dirs[dir] = true
	return true
}

func (w *watcher) unwatch(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	x := w.ids[id]
	if x == nil {
		return
	}
	if x.refs--; x.refs > 0 {
		return
	}
	delete(w.ids, id)
	for d := range x.dirs {
		delete(w.dirs[d], id)
		if len(w.dirs[d]) == 0 {
			delete(w.dirs, d)
			_ = w.fw.Remove(d) // it may be gone already
		}
	}
}

func (w *watcher) loop() {
	defer w.wg.Done()
	for {
		select {
		case ev, ok := <-w.fw.Events:
			if !ok {
				return
			}
			w.event(ev)
		case err, ok := <-w.fw.Errors:
			if !ok {
				return
			}
			// Events may be lost (an overflow): every query runs again.
			w.a.cfg.Logger.Warn("fsnotify error; hinting every query source", "err", err)
			w.mu.Lock()
			ids := make([]string, 0, len(w.ids))
			for id, x := range w.ids {
				x.gen++
				ids = append(ids, id)
			}
			w.mu.Unlock()
			for _, id := range ids {
				w.a.notify(id)
			}
		}
	}
}

// event hints every query watching the event's directory (or the
// directory itself); a directory created under a recursive scope is
// watched from now on.
func (w *watcher) event(ev fsnotify.Event) {
	p := filepath.Clean(ev.Name)
	w.debug("event " + p)
	w.mu.Lock()
	hit := map[string]bool{}
	for id := range w.dirs[filepath.Dir(p)] {
		hit[id] = true
	}
	for id := range w.dirs[p] {
		hit[id] = true
	}
	for id := range hit {
		if x := w.ids[id]; x != nil {
			x.gen++
		}
	}
	if ev.Has(fsnotify.Create) && isDir(p) {
		for id := range hit {
			if x := w.ids[id]; x != nil && x.scope.Recursive && under(p, x.scope.Paths) {
				w.addTree(id, x, p)
			}
		}
	}
	w.mu.Unlock()
	for id := range hit {
		w.a.notify(id)
	}
}

func (w *watcher) debug(s string) {
	if w.a.cfg.DebugHook != nil {
		w.a.cfg.DebugHook(s)
	}
}

func (w *watcher) close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	err := w.fw.Close()
	w.wg.Wait()
	return err
}

func isDir(p string) bool {
	fi, err := lstat(p)
	return err == nil && fi.IsDir()
}

// under reports whether p is one of roots or inside one.
func under(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r+string(filepath.Separator)) {
			return true
		}
	}
	return false
}
