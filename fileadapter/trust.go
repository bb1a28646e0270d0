package fileadapter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A quiet sync trusts the watcher (issue 23). Stamps stay stat stamps; a
// watched file's last stat stamp is cached with its mark, a global event
// sequence number read before that stat and moved by every raw event on
// the file (and by its Watch, a replaced directory, a second link). A
// large Stamps call runs one barrier, so every event that happened before
// it is counted; a file the watcher vouches for (its directory has a live
// fsnotify watch on a local file system, and its last read saw one link)
// whose mark, directory watch and overflow epoch are those of its cache
// entry has not changed since that stat, and gets the cached stamp.

// fileMark is a watched file's event state and its cached stat stamp.
// Guarded by Adapter.mu.
type fileMark struct {
	seq    uint64 // global event sequence at its last event (or its Watch)
	nlink1 bool   // its last read (or Watch) saw one link: no other name can write it unseen

	// stamp is its last stat stamp that was not racily clean ("": none),
	// taken when its mark was stampSeq, the overflow epoch stampEpoch and
	// its directory's watch id stampWid.
	stamp                          string
	stampSeq, stampEpoch, stampWid uint64
}

// trustBatchMin is the fewest trusted files for which a Stamps call runs
// the barrier and uses cached stamps; below it the files are stat'ed.
// BenchmarkStampsBatch (8 files a directory, 2 cores, median of 6): 16
// files cost 65 µs stat'ed and 71 µs cached (the barrier alone is about
// 35 µs), 32 files 120 µs and 86 µs, 64 files 217 µs and 142 µs.
const trustBatchMin = 32

// barrierTimeout bounds the wait for the barrier's own event; past it the
// call takes stat stamps.
const barrierTimeout = time.Second

// errBarrierTimeout is a barrier whose event did not come in time.
var errBarrierTimeout = errors.New("fileadapter: barrier event did not arrive")

// barrier makes a stamp see every event that happened before it began:
// it renames a file in a private directory watched by the same inotify
// instance (one fd, one ordered queue) to a name carrying a new sequence
// number and waits until the event loop has handled that name's event,
// hence every event queued before it. A rename is one system call and
// allocates no inode (a create and unlink cost a journal commit each on
// ext4: up to milliseconds on a busy disk).
type barrier struct {
	dir  string
	mu   sync.Mutex
	cur  string        // the barrier file's current name; renames are serial under mu
	next uint64        // last sequence number handed out
	seen uint64        // highest sequence whose event was handled
	ch   chan struct{} // closed (and replaced) when seen advances
}

func newBarrier(dir string) (*barrier, error) {
	b := &barrier{dir: dir, cur: filepath.Join(dir, "b0"), ch: make(chan struct{})}
	f, err := os.OpenFile(b.cur, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("barrier: %w", err)
	}
	f.Close()
	return b, nil
}

// wait runs one barrier: nil once every event queued before it began has
// been handled.
func (b *barrier) wait(ctx context.Context, timeout time.Duration) error {
	b.mu.Lock()
	b.next++
	k := b.next
	name := filepath.Join(b.dir, "b"+strconv.FormatUint(k, 10))
	err := os.Rename(b.cur, name) // its IN_MOVED_TO names k
	if err == nil {
		b.cur = name
	}
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	return b.await(ctx, k, timeout)
}

// await waits until barrier k's event was handled.
func (b *barrier) await(ctx context.Context, k uint64, timeout time.Duration) error {
	var timer *time.Timer
	for {
		b.mu.Lock()
		if b.seen >= k {
			b.mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			return nil
		}
		ch := b.ch
		b.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(timeout)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
			return errBarrierTimeout
		}
	}
}

// remove removes the barrier file and directory.
func (b *barrier) remove() {
	b.mu.Lock()
	os.Remove(b.cur)
	b.mu.Unlock()
	os.Remove(b.dir)
}

// saw handles the event of barrier file name: every waiter with a
// sequence up to its number is released (theirs were taken before it).
func (b *barrier) saw(name string) {
	k, err := strconv.ParseUint(strings.TrimPrefix(filepath.Base(name), "b"), 10, 64)
	if err != nil {
		return
	}
	b.advance(k)
}

// releaseAll releases every waiter: after an overflow or a watcher error
// the barrier's own event may be lost, and the epoch has moved, so no
// stamp cached before is served anyway.
func (b *barrier) releaseAll() {
	b.mu.Lock()
	k := b.next
	b.mu.Unlock()
	b.advance(k)
}

func (b *barrier) advance(k uint64) {
	b.mu.Lock()
	if k > b.seen {
		b.seen = k
		close(b.ch)
		b.ch = make(chan struct{})
	}
	b.mu.Unlock()
}

// startBarrier makes the private barrier directory and watches it; without
// it no stamp is trusted.
func (a *Adapter) startBarrier() {
	if !trustSupported || a.watcher == nil {
		return
	}
	dir, err := os.MkdirTemp("", "concord-barrier-")
	if err != nil {
		a.log.Debug("no watcher barrier; stat stamps only", "err", err)
		return
	}
	var b *barrier
	if dir, err = filepath.EvalSymlinks(dir); err == nil {
		if b, err = newBarrier(dir); err == nil {
			err = a.watcher.Add(dir)
		}
	}
	if err != nil {
		a.log.Debug("no watcher barrier; stat stamps only", "err", err)
		if b != nil {
			b.remove()
		} else {
			os.Remove(dir)
		}
		return
	}
	a.barrier = b
}

// bump moves a watched file's mark. Caller holds a.mu.
func (a *Adapter) bump(m *fileMark) {
	a.evSeq++
	m.seq = a.evSeq
}

// newMark is a fresh mark for a file that starts being watched. Caller
// holds a.mu.
func (a *Adapter) newMark() *fileMark {
	m := &fileMark{}
	a.bump(m)
	return m
}

// trustDir records, after dir's watch was added by this dirWatch, whether
// its stamps may be trusted: the directory is on a local file system whose
// writes inotify always reports, and it was the same inode before and
// after the watch was added (so the watch is on it). before is its
// identity taken before the add.
func (a *Adapter) trustDir(dir string, d *dirWatch, before dirID) {
	if a.barrier == nil || !before.ok || !before.local {
		return
	}
	after := identify(dir)
	if !after.ok || after.dev != before.dev || after.ino != before.ino {
		return
	}
	a.mu.Lock()
	if a.dirs[dir] == d && !d.polled {
		a.wids++
		d.wid, d.dev, d.ino = a.wids, after.dev, after.ino
	}
	a.mu.Unlock()
}

// noteRead records what a read of the watched file p saw: trusted again
// only after a successful read of a file with one link.
func (a *Adapter) noteRead(p string, links uint64, err error) {
	a.mu.Lock()
	if m := a.marks[p]; m != nil {
		one := err == nil && links == 1
		if m.nlink1 && !one {
			// While untrusted it may change with no event here (written
			// through the other link): its cache must not outlive this.
			a.bump(m)
		}
		m.nlink1 = one
	}
	a.mu.Unlock()
}

// trustedDir is a directory with trusted files in a Stamps call: its
// watch id and the inode it was added on.
type trustedDir struct {
	wid, dev, ino uint64
}

// trustedDirOf is p's directory's watch identity when p's stamp may be
// served from its cache. Caller holds a.mu.
func (a *Adapter) trustedDirOf(m *fileMark, dir string) (*dirWatch, bool) {
	if m == nil || !m.nlink1 {
		return nil, false
	}
	d := a.dirs[dir]
	if d == nil || d.polled || d.wid == 0 {
		return nil, false
	}
	return d, true
}

// countTrusted is how many of paths the watcher vouches for. Caller holds
// a.mu.
func (a *Adapter) countTrusted(paths, dirOf []string) int {
	if a.barrier == nil || a.mode != ModeFsnotify {
		return 0
	}
	n := 0
	for i, p := range paths {
		if p == "" {
			continue
		}
		if _, ok := a.trustedDirOf(a.marks[p], dirOf[i]); ok {
			n++
		}
	}
	return n
}

// markSnap is a watched file's mark read before its stat: the stat's stamp
// is cached with it. dev and ino are the watched directory's identity.
type markSnap struct {
	m                         *fileMark
	seq, epoch, wid, dev, ino uint64
}

// snapOf is m's snapshot (m nil: nothing to cache). Caller holds a.mu.
func (a *Adapter) snapOf(m *fileMark, dir string) markSnap {
	d, ok := a.trustedDirOf(m, dir)
	if !ok {
		return markSnap{}
	}
	return markSnap{m, m.seq, a.epoch, d.wid, d.dev, d.ino}
}

// snapMark is snapOf p under a.mu, before p is stat'ed.
func (a *Adapter) snapMark(p string) markSnap {
	if a.barrier == nil {
		return markSnap{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.snapOf(a.marks[p], filepath.Dir(p))
}

// snapMarks takes the snapshots of paths before they are stat'ed (nil
// when there is nothing to cache). With hits non-nil (the barrier ran),
// it also fills hits with each trusted file's cached stamp where its mark,
// the epoch and its directory's watch are those it was cached with, and
// tdirs with the directories to check.
func (a *Adapter) snapMarks(paths, dirOf []string, hits []string, tdirs map[string]trustedDir) []markSnap {
	if a.barrier == nil || a.mode != ModeFsnotify {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var snaps []markSnap
	for i, p := range paths {
		if p == "" {
			continue
		}
		m := a.marks[p]
		d, ok := a.trustedDirOf(m, dirOf[i])
		if !ok {
			continue
		}
		if snaps == nil {
			snaps = make([]markSnap, len(paths))
		}
		snaps[i] = a.snapOf(m, dirOf[i])
		if hits != nil && m.stamp != "" && m.stampSeq == m.seq && m.stampEpoch == a.epoch && m.stampWid == d.wid {
			hits[i] = m.stamp
			tdirs[dirOf[i]] = trustedDir{d.wid, d.dev, d.ino}
		}
	}
	return snaps
}

// store caches stamp, taken after s was read through the directory
// dev/ino, unless it is racily clean (such a stamp is unique to its call,
// and only a stat can tell whether the file is still racily clean) or the
// directory is not the watched one (an ancestor replaced: its files change
// unseen, and it may be swapped back). It reports false for the latter.
// Caller holds a.mu.
func (s markSnap) store(stamp string, dev, ino uint64) bool {
	if s.m == nil {
		return true
	}
	if dev != s.dev || ino != s.ino {
		s.m.stamp = ""
		return dev == 0 // unknown: not a replaced one
	}
	if strings.Contains(stamp, racySuffix) {
		s.m.stamp = ""
		return true
	}
	s.m.stamp, s.m.stampSeq, s.m.stampEpoch, s.m.stampWid = stamp, s.seq, s.epoch, s.wid
	return true
}

// dirReplaced turns dir, found to be another inode than the one watched
// (an ancestor renamed away and made again), to polling, as a removed
// directory is, and hints its files.
func (a *Adapter) dirReplaced(dir string, wid uint64) {
	a.mu.Lock()
	var now []string
	if d := a.dirs[dir]; d != nil && d.wid == wid && !d.polled {
		a.log.Debug("watched directory replaced; polling it", "dir", dir)
		now = a.dirGone(dir, d, now)
	}
	a.mu.Unlock()
	a.send(now)
}

// dirGone turns a watched directory that went away (or was replaced) to
// polling: its files are hinted, their marks move and their stamps are
// stat stamps from now on. Caller holds a.mu; it returns the ids to send.
func (a *Adapter) dirGone(dir string, d *dirWatch, now []string) []string {
	d.polled = true
	d.wid = 0
	for f := range a.files {
		if filepath.Dir(f) == dir {
			d.stamps[f] = ""
			if m := a.marks[f]; m != nil {
				a.bump(m)
			}
			now = a.schedule(pathURI(f), now)
		}
	}
	return now
}

// sweepEvery is how many poll intervals pass between link sweeps.
const sweepEvery = 5

// sweepLinks is the safety net for the one change no event on a watched
// directory shows: a second hard link made from another directory
// (inotify tells only watches on the file itself of the link count, and a
// write through that name only its own directory). Each trusted file's
// link count is checked in the background (one fstatat each, per
// directory handle, off the sync's path); one that is no longer 1 loses
// its trust, its mark moves and it is hinted, so a write made through the
// new name is seen within a sweep.
func (a *Adapter) sweepLinks() {
	a.mu.Lock()
	byDir := map[string][]string{}
	for p, m := range a.marks {
		if !m.nlink1 {
			continue
		}
		dir := filepath.Dir(p)
		if d := a.dirs[dir]; d != nil && !d.polled && d.wid != 0 {
			byDir[dir] = append(byDir[dir], filepath.Base(p))
		}
	}
	a.mu.Unlock()
	if len(byDir) == 0 {
		return
	}
	var linked []string
	w := a.newDirWalker()
	for dir, names := range byDir {
		n := make([]uint64, len(names))
		w.linkCounts(dir, names, n)
		for i, c := range n {
			if c > 1 {
				linked = append(linked, filepath.Join(dir, names[i]))
			}
		}
	}
	w.close()
	if len(linked) == 0 {
		return
	}
	var now []string
	a.mu.Lock()
	for _, p := range linked {
		if m := a.marks[p]; m != nil && m.nlink1 {
			m.nlink1 = false
			a.bump(m)
			now = a.schedule(pathURI(p), now)
		}
	}
	a.mu.Unlock()
	a.send(now)
}
