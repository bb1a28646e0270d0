//go:build linux

package fileadapter

import (
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// dirFlags open a directory as a handle for *at calls only, refusing a
// symlink as the last component.
const dirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// dirWalker opens directories below the roots for one batch of stamps,
// each root opened once.
type dirWalker struct {
	a         *Adapter
	roots     map[string]int // root -> handle (-1: cannot be opened)
	noOpenat2 bool
}

func (a *Adapter) newDirWalker() *dirWalker { return &dirWalker{a: a} }

func (w *dirWalker) isRoot(fd int) bool {
	for _, r := range w.roots {
		if r == fd {
			return true
		}
	}
	return false
}

func (w *dirWalker) close() {
	for _, fd := range w.roots {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
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
		rel, found := strings.CutPrefix(dir, r)
		if !found || (rel != "" && rel[0] != filepath.Separator) {
			continue
		}
		rfd, seen := w.roots[r]
		if !seen {
			var err error
			if rfd, err = unix.Open(r, dirFlags, 0); err != nil {
				rfd = -1
			}
			if w.roots == nil {
				w.roots = map[string]int{}
			}
			w.roots[r] = rfd
		}
		if rfd < 0 {
			return -1, false
		}
		rel = strings.TrimPrefix(rel, string(filepath.Separator))
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
	if !w.isRoot(fd) {
		defer unix.Close(fd)
	}
	var st unix.Stat_t
	if ident && unix.Fstat(fd, &st) == nil {
		dev, ino = st.Dev, st.Ino
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
