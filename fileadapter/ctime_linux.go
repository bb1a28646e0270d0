package fileadapter

import (
	"io/fs"
	"syscall"
	"time"
)

// ctime is the inode change time: set by the kernel on every write, chmod
// or utimes, so a rewrite whose mtime was restored still moves it.
func ctime(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec))
	}
	return fi.ModTime()
}
