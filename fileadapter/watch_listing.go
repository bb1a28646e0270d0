package fileadapter

import (
	"errors"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/fsnotify/fsnotify"
)

// listWatch is the watch state of one listing source. fsnotify watches the
// directories its listing reads (the directory itself for depth 1, every
// listed subdirectory too for depth 0): an entry added, removed or renamed
// is an event on its parent. New subdirectories get watches as they appear
// (rewatch); where watches run out the listing is polled by its stamp.
type listWatch struct {
	dir     string
	sp      listSpec
	refs    int
	watched map[string]bool // directories with an fsnotify watch held for it
	polled  bool
	stamp   string // last polled stamp
	busy    bool   // a rewatch is running
	again   bool   // another rewatch was asked for meanwhile
}

// addDir takes a reference on an fsnotify watch of dir. Caller holds
// watchMu, not mu.
func (a *Adapter) addDir(dir string) error {
	a.mu.Lock()
	if a.fsRefs == nil {
		a.fsRefs = map[string]int{}
	}
	n := a.fsRefs[dir]
	a.mu.Unlock()
	if n == 0 {
		if err := a.addWatch(dir); err != nil {
			return err
		}
	}
	a.mu.Lock()
	a.fsRefs[dir]++
	a.mu.Unlock()
	return nil
}

// removeDir drops a reference on dir's watch; the last one removes it.
// Caller holds watchMu, not mu.
func (a *Adapter) removeDir(dir string) {
	a.mu.Lock()
	n := a.fsRefs[dir] - 1
	if n > 0 {
		a.fsRefs[dir] = n
	} else {
		delete(a.fsRefs, dir)
	}
	a.mu.Unlock()
	if n <= 0 && a.watcher != nil {
		_ = a.watcher.Remove(dir) // the directory may be gone already
	}
}

func (a *Adapter) watchListing(id, dir string, sp listSpec) error {
	a.watchMu.Lock()
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		a.watchMu.Unlock()
		return errors.New("fileadapter: closed")
	}
	if a.lists == nil {
		a.lists = map[string]*listWatch{}
	}
	lw := a.lists[id]
	if lw != nil {
		lw.refs++
		a.mu.Unlock()
		a.watchMu.Unlock()
		return nil
	}
	lw = &listWatch{dir: dir, sp: sp, refs: 1, watched: map[string]bool{}, polled: a.mode == ModePoll}
	a.lists[id] = lw
	hooks := a.mode == ModeHooks
	a.mu.Unlock()
	a.watchMu.Unlock()
	if hooks {
		return nil
	}
	a.rewatch(id)
	return nil
}

func (a *Adapter) unwatchListing(id string) {
	a.watchMu.Lock()
	defer a.watchMu.Unlock()
	a.mu.Lock()
	lw := a.lists[id]
	if lw == nil {
		a.mu.Unlock()
		return
	}
	if lw.refs--; lw.refs > 0 {
		a.mu.Unlock()
		return
	}
	delete(a.lists, id)
	delete(a.listDirs, id)
	if t := a.timers[id]; t != nil {
		t.Stop()
		delete(a.timers, id)
	}
	dirs := make([]string, 0, len(lw.watched))
	for d := range lw.watched {
		dirs = append(dirs, d)
	}
	lw.watched = nil
	a.mu.Unlock()
	for _, d := range dirs {
		a.removeDir(d)
	}
}

// requestRewatch runs rewatch for id in the background, coalescing requests
// that arrive while one runs (a burst of mkdirs is one more walk, not one
// per event). It never blocks: it is called from the event loop, which
// fsnotify's Add waits on.
func (a *Adapter) requestRewatch(id string) {
	a.mu.Lock()
	lw := a.lists[id]
	if lw == nil || a.closed || a.mode != ModeFsnotify {
		a.mu.Unlock()
		return
	}
	if lw.busy {
		lw.again = true
		a.mu.Unlock()
		return
	}
	lw.busy = true
	a.wg.Add(1)
	a.mu.Unlock()
	go func() {
		defer a.wg.Done()
		for {
			a.rewatch(id)
			a.mu.Lock()
			if lw.again && !a.closed {
				lw.again = false
				a.mu.Unlock()
				continue
			}
			lw.busy = false
			a.mu.Unlock()
			return
		}
	}()
}

// rewatch makes the listing's watches match the directories it now reads,
// then hints it when a directory was added: entries made in a new
// subdirectory before its watch existed are seen by the re-list. A watch
// that cannot be added (limit, vanished) turns the listing to polling.
func (a *Adapter) rewatch(id string) {
	a.mu.Lock()
	lw := a.lists[id]
	if lw == nil || a.closed {
		a.mu.Unlock()
		return
	}
	dir, sp := lw.dir, lw.sp
	a.mu.Unlock()
	_, dirs, err := a.list(dir, sp, 1<<62)
	if err != nil {
		dirs = nil
	}
	if a.mode != ModeFsnotify {
		a.mu.Lock()
		if a.listDirs == nil {
			a.listDirs = map[string][]string{}
		}
		if a.listDirs[id] == nil && dirs != nil {
			a.listDirs[id] = dirs
		}
		lw.polled = true
		a.mu.Unlock()
		st, _ := a.listStamp(id, dir)
		a.mu.Lock()
		lw.stamp = st
		a.mu.Unlock()
		return
	}
	want := map[string]bool{}
	for _, d := range dirs {
		want[d] = true
	}
	if len(dirs) == 0 {
		// Missing for now: watch the nearest existing parent so its
		// creation is an event (the listing is polled meanwhile).
		want[filepath.Dir(dir)] = true
	}
	a.watchMu.Lock()
	a.mu.Lock()
	if a.lists[id] != lw {
		a.mu.Unlock()
		a.watchMu.Unlock()
		return
	}
	var add, drop []string
	first := len(lw.watched) == 0
	for d := range want {
		if !lw.watched[d] {
			add = append(add, d)
		}
	}
	for d := range lw.watched {
		if !want[d] {
			drop = append(drop, d)
		}
	}
	a.mu.Unlock()
	sort.Strings(add)
	failed := false
	for _, d := range add {
		if err := a.addDir(d); err != nil {
			if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE) {
				a.log.Warn("fsnotify watch limit reached; polling this listing", "dir", dir, "err", err)
			} else {
				a.log.Info("cannot watch directory; polling the listing", "dir", d, "err", err)
			}
			failed = true
			continue
		}
		a.mu.Lock()
		lw.watched[d] = true
		a.mu.Unlock()
	}
	for _, d := range drop {
		a.removeDir(d)
		a.mu.Lock()
		delete(lw.watched, d)
		a.mu.Unlock()
	}
	a.watchMu.Unlock()
	// Polled while some directory has no watch (limit reached) or the
	// listed directory is missing; fsnotify alone again once all are watched.
	polled := failed || len(dirs) == 0
	var st string
	if polled {
		st, _ = a.listStamp(id, dir)
	}
	a.mu.Lock()
	lw.polled = polled
	if polled {
		lw.stamp = st
	}
	a.mu.Unlock()
	if len(add) > 0 && !first {
		a.send([]string{id}) // a new subdirectory: look again (the hash decides)
	}
}

// listEvent hints the listings an event concerns: an entry of a directory
// they read changed, or such a directory itself. A directory created under
// a deep listing gets watches (rewatch, in the background). Caller holds
// a.mu; it returns the ids to send now.
func (a *Adapter) listEvent(p string, ev fsnotify.Event, now []string) []string {
	if len(a.lists) == 0 {
		return now
	}
	parent := filepath.Dir(p)
	for id, lw := range a.lists {
		if !lw.watched[parent] && !lw.watched[p] {
			continue
		}
		now = a.schedule(id, now)
		// Watches follow the directories: a deep listing's subdirectory made
		// or removed, the listed directory itself gone or back, or a listing
		// polled for want of watches.
		deep := lw.sp.depth != 1 && ev.Has(fsnotify.Create|fsnotify.Remove|fsnotify.Rename)
		if deep || p == lw.dir || lw.polled {
			go a.requestRewatch(id)
		}
	}
	return now
}

// pollListings stamps every polled listing and hints those that moved.
func (a *Adapter) pollListings() {
	type entry struct{ id, dir, stamp string }
	var es []entry
	a.mu.Lock()
	for id, lw := range a.lists {
		if lw.polled {
			es = append(es, entry{id, lw.dir, lw.stamp})
		}
	}
	a.mu.Unlock()
	var now []string
	for _, e := range es {
		st, err := a.listStamp(e.id, e.dir)
		if err != nil {
			st = ""
		}
		if st == e.stamp {
			continue
		}
		a.mu.Lock()
		if lw := a.lists[e.id]; lw != nil {
			lw.stamp = st
			now = a.schedule(e.id, now)
		}
		a.mu.Unlock()
	}
	a.send(now)
}
