//go:build linux

package fileadapter

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// trustSupported: inotify's ordered queue makes the barrier sound here.
const trustSupported = true

// dirID is a directory's identity and whether its file system reports
// every write to inotify.
type dirID struct {
	dev, ino uint64
	local    bool
	ok       bool
}

// localFS are the file systems whose every write passes through this
// kernel, so inotify sees it. Network and FUSE file systems (nfs, cifs,
// 9p, virtiofs, fuse) change under us unseen; anything unknown is
// distrusted too.
var localFS = map[uint32]bool{
	unix.EXT4_SUPER_MAGIC:      true, // ext2, ext3, ext4
	unix.XFS_SUPER_MAGIC:       true,
	unix.BTRFS_SUPER_MAGIC:     true,
	unix.TMPFS_MAGIC:           true,
	unix.OVERLAYFS_SUPER_MAGIC: true,
	unix.F2FS_SUPER_MAGIC:      true,
	0x2fc12fc1:                 true, // zfs
}

// identify stats dir (one stat, one statfs).
func identify(dir string) dirID {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return dirID{}
	}
	var sf unix.Statfs_t
	if err := unix.Statfs(dir, &sf); err != nil {
		return dirID{}
	}
	return dirID{dev: st.Dev, ino: st.Ino, local: localFS[uint32(sf.Type)], ok: true}
}

// links is fi's hard link count (0 when unknown: never trusted).
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 0
}

// sameDir reports whether dir, reached from its root without following a
// symlink (as open does), is still the inode dev/ino. found is false when
// it could not be reached at all.
func (w *dirWalker) sameDir(dir string, dev, ino uint64) (same, found bool) {
	fd, ok := w.open(dir)
	if !ok {
		return false, false
	}
	if r, isRoot := w.rootOf(fd); isRoot {
		return r.dev == dev && r.ino == ino, true // checked when the batch took it
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, false
	}
	return st.Dev == dev && st.Ino == ino, true
}

// linkCounts fills n with the link counts of dir's files (0: unknown).
func (w *dirWalker) linkCounts(dir string, names []string, n []uint64) {
	fd, ok := w.open(dir)
	if !ok {
		return
	}
	if _, isRoot := w.rootOf(fd); !isRoot {
		defer unix.Close(fd)
	}
	var st unix.Stat_t
	for i, name := range names {
		if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			n[i] = uint64(st.Nlink)
		}
	}
}
