//go:build linux

package fileadapter

import (
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// dirFlags open a directory as a handle for *at calls only, refusing a
// symlink as the last component.
const dirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// dirWalker opens directories below the roots for one batch of stamps.
// Root handles come from the adapter's rootCache, checked once per batch.
type dirWalker struct {
	a         *Adapter
	roots     map[string]*rootHandle // root -> its handle for this batch (nil: cannot be opened)
	noOpenat2 bool
}

func (a *Adapter) newDirWalker() *dirWalker { return &dirWalker{a: a} }

// rootCache keeps one open handle per root across batches: a quiet sync of
// one file is then an lstat of the root's path (still the directory the
// handle holds?) and one fstatat on the handle, where each batch opened,
// fstat'ed and closed the root (issue 23: "one fstatat per file on an open
// directory handle"). mu is held only to take and return handles, never
// across a batch's system calls: a batch counts as a user of the handles
// it took, and a replaced root's handle is closed when its last user
// returns it.
type rootCache struct {
	mu     sync.Mutex
	h      map[string]*rootHandle
	closed bool
}

// rootHandle is one open root directory.
type rootHandle struct {
	fd       int
	dev, ino uint64
	users    int  // batches using it (under rootCache.mu)
	retired  bool // no longer cached: closed by its last user
}

// root is r's handle for this batch: the cached one while r is still the
// directory it holds (same device and inode, not a symlink), else one
// opened now, which replaces it in the cache.
func (w *dirWalker) root(r string) *rootHandle {
	var st unix.Stat_t
	if err := unix.Fstatat(unix.AT_FDCWD, r, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil // gone or swapped for a symlink: the slow path judges it
	}
	c := &w.a.rootFDs
	c.mu.Lock()
	if h := c.h[r]; h != nil && h.dev == st.Dev && h.ino == st.Ino {
		h.users++
		c.mu.Unlock()
		return h
	}
	c.mu.Unlock()
	fd, err := unix.Open(r, dirFlags, 0)
	if err != nil {
		return nil
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil
	}
	h := &rootHandle{fd: fd, dev: st.Dev, ino: st.Ino, users: 1}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		h.retired = true // the adapter is closing: not kept
		return h
	}
	if old := c.h[r]; old != nil {
		old.retired = true
		if old.users == 0 {
			unix.Close(old.fd)
		}
	}
	if c.h == nil {
		c.h = map[string]*rootHandle{}
	}
	c.h[r] = h
	return h
}

// rootOf reports whether fd is one of this batch's root handles, and which.
func (w *dirWalker) rootOf(fd int) (*rootHandle, bool) {
	for _, h := range w.roots {
		if h != nil && h.fd == fd {
			return h, true
		}
	}
	return nil, false
}

// close ends the batch: it returns the root handles it took (a retired one
// is closed by its last user).
func (w *dirWalker) close() {
	if len(w.roots) == 0 {
		return
	}
	c := &w.a.rootFDs
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range w.roots {
		if h == nil {
			continue
		}
		h.users--
		if h.retired && h.users == 0 {
			unix.Close(h.fd)
		}
	}
	w.roots = nil
}

// closeRoots closes the cached root handles no batch is using; those in use
// are closed by their batches (Adapter.Close).
func (a *Adapter) closeRoots() {
	c := &a.rootFDs
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for path, h := range c.h {
		h.retired = true
		if h.users == 0 {
			unix.Close(h.fd)
		}
		delete(c.h, path)
	}
}

// plainPath reports whether p lies below a root and is reached from the
// root's kept handle without any symlink: its directory by openat2
// (RESOLVE_NO_SYMLINKS) and its name by an fstatat that does not follow.
// Then p is its own resolution (the root's own ancestors aside, as for
// stamps), and Normalize skips EvalSymlinks' lstat of every component of
// the whole path. A missing file, a symlink or anything unusual: false.
func (a *Adapter) plainPath(p string) bool {
	w := a.newDirWalker()
	defer w.close()
	fd, ok := w.open(filepath.Dir(p))
	if !ok {
		return false
	}
	if _, isRoot := w.rootOf(fd); !isRoot {
		defer unix.Close(fd)
	}
	var st unix.Stat_t
	return unix.Fstatat(fd, filepath.Base(p), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT != unix.S_IFLNK
}

// open reaches dir from its root without following any symlink: a handle on
// it proves that the path is still a chain of real directories inside the
// root (what lstatConfined checks with one lstat per component). One
// openat2 (RESOLVE_NO_SYMLINKS) where the kernel has it (5.6+), else one
// openat per component. ok false: something is unusual (a symlink, a
// missing directory, no root holds dir); the caller takes the slow path,
// which judges it.
func (w *dirWalker) open(dir string) (fd int, ok bool) {
	for _, r := range w.a.roots {
		rel, found := belowRoot(dir, r)
		if !found {
			continue
		}
		h, seen := w.roots[r]
		if !seen {
			h = w.root(r)
			if w.roots == nil {
				w.roots = map[string]*rootHandle{}
			}
			w.roots[r] = h
		}
		if h == nil {
			return -1, false
		}
		rfd := h.fd
		if rel == "" {
			return rfd, true // the root itself; closed with the walker
		}
		if !w.noOpenat2 {
			fd, err := unix.Openat2(rfd, rel, &unix.OpenHow{Flags: dirFlags,
				Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS})
			if err == nil {
				return fd, true
			}
			if err != unix.ENOSYS && err != unix.EPERM { // EPERM: a seccomp filter
				return -1, false
			}
			w.noOpenat2 = true
		}
		fd, err := unix.Dup(rfd)
		if err != nil {
			return -1, false
		}
		for part := range strings.SplitSeq(rel, string(filepath.Separator)) {
			if part == "" || part == "." {
				continue
			}
			next, err := unix.Openat(fd, part, dirFlags, 0)
			unix.Close(fd)
			if err != nil {
				return -1, false
			}
			fd = next
		}
		return fd, true
	}
	return -1, false
}

// stampFiles stamps the files of one directory, each with one fstatat on a
// handle of the directory (see dirWalker.open). A file whose entry is not a
// regular file, or that cannot be stat'ed, is left with ok[i] false for the
// slow path, so every answer is the one lstatConfined would give. With
// ident it also returns the identity of the directory the stats went
// through (zero: unknown), for the cache to tell the watched one.
func (w *dirWalker) stampFiles(dir string, names []string, now time.Time, stamps []string, ok []bool, ident bool) (dev, ino uint64) {
	fd, good := w.open(dir)
	if !good {
		return 0, 0
	}
	var st unix.Stat_t
	if r, isRoot := w.rootOf(fd); isRoot {
		if ident {
			dev, ino = r.dev, r.ino // the handle is closed, or cached, with the walker
		}
	} else {
		defer unix.Close(fd)
		if ident && unix.Fstat(fd, &st) == nil {
			dev, ino = st.Dev, st.Ino
		}
	}
	for i, name := range names {
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		stamps[i], ok[i] = statStampOf(&st, now), true
	}
	return dev, ino
}

// statStampOf is stampOf for a regular file's raw stat, racy mark included:
// byte for byte what Stamp gives for the same file info.
func statStampOf(st *unix.Stat_t, now time.Time) string {
	mode := fs.FileMode(st.Mode & 0o777)
	if st.Mode&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if st.Mode&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if st.Mode&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	mt := time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
	ct := time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	b := make([]byte, 0, 80)
	b = strconv.AppendInt(b, st.Size, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, mt.UnixNano(), 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, ct.UnixNano(), 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, st.Ino, 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(mode), 8)
	latest := mt
	if ct.After(latest) {
		latest = ct
	}
	s, _ := racyMark(string(b), !latest.Before(now.Add(-racyWindow)), now)
	return s
}
