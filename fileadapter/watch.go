package fileadapter

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watch starts (or counts another reference to) watching a file. fsnotify
// watches the parent directory, so creation, deletion and editors' atomic
// save by rename are all seen; a directory that cannot be watched (watch
// limit, missing) is polled instead.
func (a *Adapter) Watch(id string) error {
	if dir, sp, ok, err := listID(id); ok || err != nil {
		if err != nil {
			return err
		}
		return a.watchListing(id, dir, sp)
	}
	p, err := Path(id)
	if err != nil {
		return err
	}
	a.watchMu.Lock()
	defer a.watchMu.Unlock()
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return errors.New("fileadapter: closed")
	}
	a.files[p]++
	if a.files[p] > 1 || a.mode == ModeHooks {
		a.mu.Unlock()
		return nil
	}
	a.marks[p] = a.newMark()
	dir := filepath.Dir(p)
	d := a.dirs[dir]
	isNew := d == nil
	if isNew {
		d = &dirWatch{stamps: map[string]string{}, polled: a.mode == ModePoll}
		a.dirs[dir] = d
	}
	d.files++
	// Trusted only where this watch is ours: one shared with a listing
	// may have been added on an older inode of the directory.
	own := a.fsRefs[dir] == 0
	a.mu.Unlock()

	if isNew && a.mode == ModeFsnotify {
		var before dirID
		if own && a.barrier != nil {
			before = identify(dir)
		}
		// Outside a.mu: fsnotify's Add can wait on its reader goroutine,
		// which waits on us to take its events.
		if err := a.addDir(dir); err != nil {
			if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE) {
				a.log.Warn("fsnotify watch limit reached; polling this directory", "dir", dir, "err", err)
			} else {
				a.log.Info("cannot watch directory; polling it", "dir", dir, "err", err)
			}
			a.mu.Lock()
			d.polled = true
			for f := range a.files {
				if filepath.Dir(f) == dir {
					d.stamps[f] = pollStamp(f)
				}
			}
			a.mu.Unlock()
			return nil
		}
		a.mu.Lock()
		d.fsRef = true
		a.mu.Unlock()
		if own {
			a.trustDir(dir, d, before)
		}
	}
	a.mu.Lock()
	polled := d.polled
	a.mu.Unlock()
	if polled {
		st := pollStamp(p)
		a.mu.Lock()
		d.stamps[p] = st
		a.mu.Unlock()
	} else if a.barrier != nil {
		// Until its first read the link count is the one seen now; a read
		// then keeps it current (noteRead).
		fi, err := os.Lstat(p)
		a.mu.Lock()
		if m := a.marks[p]; m != nil && err == nil {
			m.nlink1 = fi.Mode().IsRegular() && links(fi) == 1
		}
		a.mu.Unlock()
	}
	return nil
}

// Unwatch drops one reference; the last one stops watching.
func (a *Adapter) Unwatch(id string) {
	if _, _, ok, _ := listID(id); ok {
		a.unwatchListing(id)
		return
	}
	p, err := Path(id)
	if err != nil {
		return
	}
	a.watchMu.Lock()
	defer a.watchMu.Unlock()
	a.mu.Lock()
	n := a.files[p]
	if n == 0 {
		a.mu.Unlock()
		return
	}
	if n > 1 {
		a.files[p] = n - 1
		a.mu.Unlock()
		return
	}
	delete(a.files, p)
	delete(a.marks, p)
	if t := a.timers[pathURI(p)]; t != nil {
		t.Stop()
		delete(a.timers, pathURI(p))
	}
	dir := filepath.Dir(p)
	remove := false
	if d := a.dirs[dir]; d != nil {
		d.files--
		delete(d.stamps, p)
		if d.files <= 0 {
			delete(a.dirs, dir)
			// A directory polled since it went away still holds its
			// reference: dropped here, so a later watch of it is added anew.
			remove = d.fsRef
		}
	}
	a.mu.Unlock()
	if remove {
		a.removeDir(dir)
	}
}

// Watched is the number of files being watched (for tests and stats).
func (a *Adapter) Watched() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.files)
}

// Polled reports whether the directory of id is polled rather than watched.
func (a *Adapter) Polled(id string) bool {
	p, err := Path(id)
	if err != nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	d := a.dirs[filepath.Dir(p)]
	return d != nil && d.polled
}

func (a *Adapter) runEvents() {
	defer a.wg.Done()
	for {
		select {
		case <-a.stop:
			return
		case ev, ok := <-a.watcher.Events:
			if !ok {
				return
			}
			a.onEvent(ev)
		case err, ok := <-a.watcher.Errors:
			if !ok {
				return
			}
			a.onError(err)
		}
	}
}

func (a *Adapter) onEvent(ev fsnotify.Event) {
	p := filepath.Clean(ev.Name)
	if b := a.barrier; b != nil && filepath.Dir(p) == b.dir {
		if ev.Has(fsnotify.Create) {
			b.saw(p)
		}
		return
	}
	var now []string
	a.mu.Lock()
	now = a.listEvent(p, ev, now)
	if a.files[p] > 0 {
		// Every raw event moves the mark, before any debounce: its
		// cached stamp is no longer served.
		if m := a.marks[p]; m != nil {
			a.bump(m)
		}
		now = a.schedule(pathURI(p), now)
	} else if d := a.dirs[p]; d != nil && ev.Has(fsnotify.Remove|fsnotify.Rename) {
		// The watched directory itself went away and its watch with it:
		// hint its files and poll it, so a re-creation is seen.
		now = a.dirGone(p, d, now)
	}
	a.mu.Unlock()
	a.send(now)
}

// onError handles a watcher error, overflow included: events may have been
// lost, so every watched file is hinted (a rescan; the hash decides).
func (a *Adapter) onError(err error) {
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		a.log.Warn("fsnotify event overflow; rescanning every watched file")
	} else {
		a.log.Warn("fsnotify error; rescanning every watched file", "err", err)
	}
	// Events may be lost: no stamp cached before is served after, and a
	// barrier whose own event was lost is released.
	a.mu.Lock()
	a.epoch++
	a.mu.Unlock()
	if a.barrier != nil {
		a.barrier.releaseAll()
	}
	a.rescan()
}

func (a *Adapter) rescan() {
	var now []string
	a.mu.Lock()
	for f := range a.files {
		now = a.schedule(pathURI(f), now)
	}
	var deep []string
	for id := range a.lists {
		now = a.schedule(id, now)
		deep = append(deep, id)
	}
	a.mu.Unlock()
	a.send(now)
	for _, id := range deep {
		a.requestRewatch(id)
	}
}

// schedule debounces a hint for source id. With no debounce it returns id
// in now for the caller to send once a.mu is released. Caller holds a.mu.
func (a *Adapter) schedule(id string, now []string) []string {
	if a.closed {
		return now
	}
	if a.debounce <= 0 {
		return append(now, id)
	}
	if t := a.timers[id]; t != nil {
		t.Reset(a.debounce)
		return now
	}
	a.timers[id] = time.AfterFunc(a.debounce, func() {
		a.mu.Lock()
		delete(a.timers, id)
		closed := a.closed
		a.mu.Unlock()
		if !closed {
			a.notify(id)
		}
	})
	return now
}

func (a *Adapter) send(ids []string) {
	for _, id := range ids {
		a.notify(id)
	}
}

func (a *Adapter) runPoll() {
	defer a.wg.Done()
	t := time.NewTicker(a.poll)
	defer t.Stop()
	ticks := 0
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
			a.pollOnce()
			if ticks++; ticks%sweepEvery == 0 && a.barrier != nil {
				a.sweepLinks()
			}
		}
	}
}

// pollOnce stats every polled file (outside the lock) and hints the moved ones.
func (a *Adapter) pollOnce() {
	type entry struct{ path, stamp string }
	var es []entry
	a.mu.Lock()
	for _, d := range a.dirs {
		if d.polled {
			for p, st := range d.stamps {
				es = append(es, entry{p, st})
			}
		}
	}
	a.mu.Unlock()
	a.pollListings()
	if len(es) == 0 {
		return
	}
	var moved []entry
	for _, e := range es {
		st := pollStamp(e.path)
		if st != e.stamp {
			moved = append(moved, entry{e.path, st})
		}
	}
	if len(moved) == 0 {
		return
	}
	var now []string
	a.mu.Lock()
	for _, e := range moved {
		if d := a.dirs[filepath.Dir(e.path)]; d != nil && d.polled {
			if _, ok := d.stamps[e.path]; ok {
				d.stamps[e.path] = e.stamp
				now = a.schedule(pathURI(e.path), now)
			}
		}
	}
	a.mu.Unlock()
	a.send(now)
}

// pollStamp is the poller's fingerprint of p ("" when p cannot be stat'ed).
// A racily clean stamp never equals the next one, so the poller keeps
// hinting (the hash decides) until the file's times are safely in the past.
func pollStamp(p string) string {
	st, _ := stampNow(p)
	return st
}

// Close stops watching everything.
func (a *Adapter) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	for p, t := range a.timers {
		t.Stop()
		delete(a.timers, p)
	}
	a.mu.Unlock()
	close(a.stop)
	var err error
	if a.watcher != nil {
		if cerr := a.watcher.Close(); cerr != nil {
			err = fmt.Errorf("fileadapter: close watcher: %w", cerr)
		}
	}
	a.wg.Wait()
	if a.barrier != nil {
		a.barrier.remove()
	}
	a.closeRoots()
	return err
}
